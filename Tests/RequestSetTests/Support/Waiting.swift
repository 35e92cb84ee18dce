import Foundation

/// How long a test waits for something it expects to happen: 120 s of time in which the
/// test could run (see ``runnableSleep(_:)``). A test that waits this long has failed; a
/// passing test never waits it out, so the limit costs nothing.
///
/// Never use a wait to check that something does *not* happen: make the next thing that
/// must happen show it instead (the next state is the next write's, with its differences).
let eventLimit: Double = 120

/// Sleeps until `seconds` have passed in which this task could have run.
///
/// On a loaded machine a test's tasks can wait minutes for a thread: Swift Testing runs
/// suites in parallel on a pool as wide as the machine has cores (two here), and a
/// synchronous test holds its thread until it ends. A plain `Task.sleep(for:)` as a
/// deadline then measures other tests, not the one waiting: it expires while the work it
/// waits for never got a thread. This sleeps in steps of 50 ms, and a step that took
/// longer (the task waited for a thread) counts as 100 ms, so the deadline only moves
/// while the waiting task, and the tasks it waits for, are being scheduled.
func runnableSleep(_ seconds: Double) async throws {
  let step = Duration.milliseconds(50)
  var counted = Duration.zero
  let limit = Duration.seconds(seconds)
  while counted < limit {
    let start = ContinuousClock.now
    try await Task.sleep(for: step)
    counted += min(ContinuousClock.now - start, step * 2)
  }
}

/// Waits until `condition` holds, checking it every few milliseconds; false if it does
/// not within `seconds` of time this task could run (a failure: see ``eventLimit``).
func eventually(within seconds: Double = eventLimit, _ condition: () throws -> Bool) async throws -> Bool {
  let step = Duration.milliseconds(5)
  var counted = Duration.zero
  let limit = Duration.seconds(seconds)
  while try !condition() {
    if counted >= limit { return false }
    let start = ContinuousClock.now
    try await Task.sleep(for: step)
    counted += min(ContinuousClock.now - start, step * 2)
  }
  return true
}
