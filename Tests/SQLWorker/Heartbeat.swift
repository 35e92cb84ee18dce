// The heartbeat scenario of SQLWorker (Tests/RequestSetTests/AsyncTests.swift): many
// concurrent queries against a store while a task ticks, in a process of its own so that
// the cooperative pool is this process's alone (of the default width: one thread a core).
//
//   heartbeat <async|sync|async-count> <queries> [records]
//       sqlite:   fills the table with [records] records (20,000 unless given); each query
//                 scans them all
//       postgres: fills it with 50 records and puts a view in the table's place whose
//                 every read first waits 100 ms on the server (pg_sleep)
//       then runs <queries> queries at once as tasks (`async`: `set.async.fetch()`;
//       `async-count`: `set.async.fetchCount()`; `sync`: `set.fetch()`, the blocking call)
//       while a task sleeps 10 ms at a time, and prints
//       "heartbeat <longest tick in ms> <correct answers> <queries> <seconds>"
//
//   heartbeat-control <threads> <milliseconds>   (kind, location and table are ignored)
//       the control: <threads> plain threads spin on the CPU for <milliseconds> beside the
//       same ticking task, and it prints "control <longest tick in ms> <threads>"
import CLibPQ
import Foundation
import RequestSet
import Synchronization

/// Runs the scenario on `store`, which the caller opened on `kind`'s database.
func heartbeatScenario(_ store: any RecordStore<DynamicRecord>, kind: String, location: String, table: String,
  _ rest: [String]) async throws
{
  guard (2...3).contains(rest.count), let queries = Int(rest[1]), ["async", "sync", "async-count"].contains(rest[0]),
    let records = rest.count == 3 ? Int(rest[2]) : 20_000
  else {
    fail("heartbeat <async|sync|async-count> <queries> [records]", status: 2)
  }
  let mode = rest[0]
  let count = kind == "postgres" ? 50 : records
  try store.insert(contentsOf: (0..<count).map { i in
    DynamicRecord(id: .int(i), fields: ["n": .int(i), "species": .string(i % 4 == 0 ? "Cow" : "Dog")])
  })
  if kind == "postgres" { try sleepingView(url: location, table: table) }
  let expected = (count + 3) / 4  // ids 0, 4, 8, …

  let ticker = Ticker()
  let start = ContinuousClock.now
  let correct = try await withThrowingTaskGroup(of: Bool.self) { group in
    for _ in 0..<queries {
      group.addTask {
        let set = RequestSet(store).filter("species", value: "Cow")
        switch mode {
        case "async": return try await set.async.fetch().count == expected
        case "async-count": return try await set.async.fetchCount() == expected
        default: return try set.fetch().count == expected
        }
      }
    }
    var correct = 0
    for try await ok in group where ok { correct += 1 }
    return correct
  }
  let seconds = (ContinuousClock.now - start).components.seconds
  say("heartbeat \(await ticker.stop()) \(correct) \(queries) \(seconds)")
}

/// The control of the heartbeat scenario: `threads` plain threads (not the cooperative
/// pool's) spin on the CPU for `milliseconds` while the same task ticks.
func heartbeatControl(_ rest: [String]) async {
  guard rest.count == 2, let threads = Int(rest[0]), let milliseconds = Int(rest[1]) else {
    fail("heartbeat-control <threads> <milliseconds>", status: 2)
  }
  let ticker = Ticker()
  let end = ContinuousClock.now + .milliseconds(milliseconds)
  let finished = DispatchGroup()
  for _ in 0..<threads {
    finished.enter()
    Thread {
      var x: UInt64 = 1
      while ContinuousClock.now < end {
        for _ in 0..<10_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
      }
      if x == 42 { say("unlikely") }
      finished.leave()
    }.start()
  }
  await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
    finished.notify(queue: .global()) { c.resume() }
  }
  say("control \(await ticker.stop()) \(threads)")
}

/// A task that sleeps 10 ms at a time and keeps the longest gap between two wake-ups.
private final class Ticker: Sendable {
  private final class State: Sendable {
    let done = Atomic<Bool>(false)
    let longest = Atomic<Int>(0)
  }
  private let state: State
  private let task: Task<Void, Never>

  init() {
    let state = State()
    self.state = state
    task = Task {
      var last = ContinuousClock.now
      while !state.done.load(ordering: .acquiring) {
        try? await Task.sleep(for: .milliseconds(10))
        let now = ContinuousClock.now
        let gap = now - last
        let ms = Int(gap.components.seconds * 1_000 + gap.components.attoseconds / 1_000_000_000_000_000)
        if ms > state.longest.load(ordering: .relaxed) { state.longest.store(ms, ordering: .relaxed) }
        last = now
      }
    }
  }

  /// Stops the ticking and returns the longest gap, in milliseconds.
  func stop() async -> Int {
    state.done.store(true, ordering: .releasing)
    await task.value
    return state.longest.load(ordering: .relaxed)
  }
}

/// Puts a view in the table's place whose every read waits 100 ms on the server first
/// (an uncorrelated subquery: PostgreSQL runs it once per statement).
private func sleepingView(url: String, table: String) throws {
  guard let c = PQconnectdb(url), PQstatus(c) == CONNECTION_OK else { fail("cannot connect to \(url)") }
  defer { PQfinish(c) }
  let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  let data = "\"" + (table + "_data").replacingOccurrences(of: "\"", with: "\"\"") + "\""
  let sql = """
    BEGIN;
    ALTER TABLE \(quoted) RENAME TO \(data);
    CREATE VIEW \(quoted) AS SELECT * FROM \(data) WHERE (SELECT true FROM pg_sleep(0.1));
    COMMIT;
    """
  guard let result = PQexec(c, sql) else { fail("no result from PostgreSQL") }
  defer { PQclear(result) }
  guard PQresultStatus(result) == PGRES_COMMAND_OK else {
    fail("cannot make the sleeping view: \(String(cString: PQresultErrorMessage(result)))")
  }
}
