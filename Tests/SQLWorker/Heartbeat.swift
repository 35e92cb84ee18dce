// The heartbeat scenario of SQLWorker (Tests/RequestSetTests/AsyncTests.swift): many
// concurrent queries against a store while a task ticks, in a process of its own so that
// the cooperative pool is this process's alone (of the default width: one thread a core).
//
//   heartbeat <async|sync> <queries> [setup]
//       sqlite:   fills the table with 20,000 records; each query scans them all
//       postgres: fills it with 50 records and puts a view in the table's place whose
//                 every read first waits 100 ms on the server (pg_sleep)
//       then runs <queries> queries at once as tasks (`async`: `set.async.fetch()`;
//       `sync`: `set.fetch()`, the blocking call) while a task sleeps 10 ms at a time,
//       and prints "heartbeat <longest tick in ms> <correct answers> <queries> <seconds>"
import CLibPQ
import Foundation
import RequestSet
import Synchronization

/// Runs the scenario on `store`, which the caller opened on `kind`'s database.
func heartbeatScenario(_ store: any RecordStore<DynamicRecord>, kind: String, location: String, table: String,
  _ rest: [String]) async throws
{
  guard rest.count == 2, let queries = Int(rest[1]), ["async", "sync"].contains(rest[0]) else {
    fail("heartbeat <async|sync> <queries>", status: 2)
  }
  let useAsync = rest[0] == "async"
  let count = kind == "postgres" ? 50 : 20_000
  try store.insert(contentsOf: (0..<count).map { i in
    DynamicRecord(id: .int(i), fields: ["n": .int(i), "species": .string(i % 4 == 0 ? "Cow" : "Dog")])
  })
  if kind == "postgres" { try sleepingView(url: location, table: table) }
  let expected = (count + 3) / 4  // ids 0, 4, 8, …

  let done = Atomic<Bool>(false)
  let longest = Atomic<Int>(0)
  let heartbeat = Task {
    var last = ContinuousClock.now
    while !done.load(ordering: .acquiring) {
      try? await Task.sleep(for: .milliseconds(10))
      let now = ContinuousClock.now
      let gap = now - last
      let ms = Int(gap.components.seconds * 1_000 + gap.components.attoseconds / 1_000_000_000_000_000)
      if ms > longest.load(ordering: .relaxed) { longest.store(ms, ordering: .relaxed) }
      last = now
    }
  }
  let start = ContinuousClock.now
  let correct = try await withThrowingTaskGroup(of: Bool.self) { group in
    for _ in 0..<queries {
      group.addTask {
        let set = RequestSet(store).filter("species", value: "Cow")
        let records = useAsync ? try await set.async.fetch() : try set.fetch()
        return records.count == expected
      }
    }
    var correct = 0
    for try await ok in group where ok { correct += 1 }
    return correct
  }
  let seconds = (ContinuousClock.now - start).components.seconds
  done.store(true, ordering: .releasing)
  _ = await heartbeat.value
  say("heartbeat \(longest.load(ordering: .relaxed)) \(correct) \(queries) \(seconds)")
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
