import Foundation
import Synchronization
import Testing

/// Threads of the test process's own for the long synchronous suites, so that they do
/// not hold the few threads Swift's concurrency runs every other test on.
///
/// Swift Testing runs every test as a task. On this machine's two cores the global
/// executor has about two threads, and a synchronous test body (a differential suite
/// reading 10,000 records per query for a minute) holds one of them from start to end.
/// The async tests (live sets, cancellation, the async API) then resume only between
/// such bodies, so a serialized suite of async tests was stretched over the whole run and
/// finished last, long after the CPU work was done. A suite marked ``offThePool`` runs
/// its tests here instead: the operating system shares the cores between these threads
/// and the executor's, so the async tests keep moving.
///
/// A lane starts a thread when a job arrives and none is idle, up to ``cap`` (8: enough
/// that a test blocked on a child process or on work it queued itself leaves others
/// running, few enough that the long suites do not crowd out the rest); idle threads wait
/// for the next job. Tasks a test starts inherit the preference and run here too.
///
/// ```swift
/// @Suite(.offThePool) struct LongDifferentialTests { … }
/// ```
final class TestLanes: TaskExecutor {
  static let shared = TestLanes(cap: 8)

  /// The most threads at once.
  let cap: Int

  private struct State {
    var jobs: [UnownedJob] = []
    var head = 0
    var live = 0
    var idle = 0
  }
  private let state = Mutex(State())
  private let wakeups = DispatchSemaphore(value: 0)

  init(cap: Int) { self.cap = cap }

  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    enum Action { case wake, start, none }
    let action = state.withLock { s -> Action in
      s.jobs.append(unowned)
      if s.idle > 0 {
        s.idle -= 1
        return .wake
      }
      if s.live < cap {
        s.live += 1
        return .start
      }
      return .none
    }
    switch action {
    case .wake: wakeups.signal()
    case .start:
      let thread = Thread { [self] in
        Thread.current.name = "test lane"  // set from the thread itself, or Linux keeps the parent's
        work()
      }
      thread.stackSize = 8 << 20
      thread.start()
    case .none: break
    }
  }

  private func work() {
    while true {
      let job = state.withLock { s -> UnownedJob? in
        guard s.head < s.jobs.count else {
          s.idle += 1
          return nil
        }
        let job = s.jobs[s.head]
        s.head += 1
        if s.head > 1_024 && s.head * 2 > s.jobs.count {
          s.jobs.removeFirst(s.head)
          s.head = 0
        }
        return job
      }
      if let job {
        job.runSynchronously(on: asUnownedTaskExecutor())
      } else {
        wakeups.wait()
      }
    }
  }
}

/// Runs a suite's tests on ``TestLanes`` (see there for why).
struct OffThePoolTrait: SuiteTrait, TestTrait, TestScoping {
  /// Each test (and each case of a parameterized one) runs in the lane's scope: Swift
  /// Testing starts a test's task outside its suite's scope.
  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
    // Around each test function's run (each case of a parameterized one), not around the
    // suite: Swift Testing starts the tests' tasks outside their suite's scope.
    test.isSuite ? nil : self
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    try await withTaskExecutorPreference(TestLanes.shared) { try await function() }
  }
}

extension Trait where Self == OffThePoolTrait {
  /// Runs the suite's tests on threads of their own (``TestLanes``), not on the few that
  /// Swift's concurrency shares between all tests.
  static var offThePool: Self { OffThePoolTrait() }
}
