import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite

// Issue 35 ("One road through the engine"): a live set over a SQL store is its fetch,
// re-run. Its first state, and its re-read after another connection's commit, beside the
// same pushed-down `fetch()`, on a SQLite file and a PostgreSQL table of `n` records; and
// the `.async` forms of a point query and a 10,000-record fetch beside the synchronous
// calls, on a MemoryStore and on both SQL stores.
//
//   swift run -c release --package-path Benchmarks Ratios 1000000 issue35
//
// `RATIOS_ISSUE35_ONLY=sqlite` or `=postgres` runs one engine's tables (the MemoryStore's
// async rows run with either); `=memory` runs only the MemoryStore's async rows.
// `RATIOS_ISSUE35_ASYNC_ONLY=1` leaves out the SQL live sets' rows.

/// The live query of the issue's target: an indexed filter, a sort and a window of 20.
/// Prints a table at once (the output may be a file, which `print` buffers).
private func printNow(_ title: String, _ rows: [Row]) {
  printTable(title, rows)
  fflush(nil)
}

private func liveQuery<S: RecordStore>(_ store: S) -> RequestSet<Animal> where S.Element == Animal {
  RequestSet(store).filter("species", value: "Cow").sortBy("age").limit(20)
}

func issue35Tables(_ n: Int) throws {
  let only = ProcessInfo.processInfo.environment["RATIOS_ISSUE35_ONLY"]
  let memory = try MemoryStore(makeAnimals(100_000))
  try printNow(
    "Issue 35: async calls beside the synchronous ones, MemoryStore of 100,000 records",
    asyncRows(memory, label: "MemoryStore", reference: true))
  if only == "memory" { return }
  progress("  issue 35: building \(grouped(n)) records…")
  let animals = makeAnimals(n)
  if only != "postgres" {
    let path = FileManager.default.temporaryDirectory.path + "/requestset-ratios-issue35-\(getpid()).sqlite"
    defer { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) } }
    progress("  issue 35, SQLite: inserting…")
    let store = try SQLiteStore<Animal>(path: path)
    // Another connection on the same file: the live set hears its commits as another
    // process's (SQLiteStore's poller reads them from `requestset_changes`).
    let writer = try SQLiteStore<Animal>(path: path)
    defer {
      writer.close()
      store.close()
    }
    try store.insert(contentsOf: animals)
    try store.createIndex("species")
    // The point query's key: a SQL store reads `id` from the row's JSON like any key.
    try store.createIndex("id")
    if ProcessInfo.processInfo.environment["RATIOS_ISSUE35_ASYNC_ONLY"] == nil {
      try printNow(
        "Issue 35: a live set over SQLiteStore beside its fetch, \(grouped(n)) records",
        liveFetchRows(store, writer: writer))
    }
    try printNow(
      "Issue 35: async calls beside the synchronous ones, SQLiteStore of \(grouped(n)) records",
      asyncRows(store, label: "SQLiteStore"))
  }
  if only == "sqlite" { return }
  do {
    progress("  issue 35, PostgreSQL: starting a server…")
    let server = try PrivatePostgres()
    defer { server.stop() }
    let table = "issue35_live"
    try? PostgresStore<Animal>.dropTable(url: server.url, table: table)
    let store = try PostgresStore<Animal>(url: server.url, table: table)
    let writer = try PostgresStore<Animal>(url: server.url, table: table)
    defer {
      writer.close()
      store.close()
      try? PostgresStore<Animal>.dropTable(url: server.url, table: table)
    }
    progress("  issue 35, PostgreSQL: inserting…")
    try store.insert(contentsOf: animals)
    try store.createIndex("species")
    // The point query's key: a SQL store reads `id` from the row's JSON like any key.
    try store.createIndex("id")
    try PlainLibPQ(url: server.url).exec("VACUUM ANALYZE \(table)")
    try printNow(
      "Issue 35: a live set over PostgresStore beside its fetch, \(grouped(n)) records",
      liveFetchRows(store, writer: writer))
    try printNow(
      "Issue 35: async calls beside the synchronous ones, PostgresStore of \(grouped(n)) records",
      asyncRows(store, label: "PostgresStore"))
  } catch let failure as PostgresFailure {
    print("\nIssue 35, PostgreSQL: not run (\(failure))")
  }
}

/// The live set's first state and its re-read after a commit of `writer` (another
/// connection), each beside the same `fetch()`, timed alternately in one task; and, once,
/// what the live set cost before issue 35: every row read and decoded (`store.snapshot()`),
/// the query run in process.
private func liveFetchRows<S: RecordStore>(_ store: S, writer: S) throws -> [Row] where S.Element == Animal {
  let query = liveQuery(store)
  let runs = 9
  let figures = try waitFor { () async throws -> [Double] in
    // First states, each beside a fetch.
    var fetches: [Double] = []
    var firsts: [Double] = []
    for run in 0...runs {
      let fetch = try timed { try query.refreshed().fetch() }
      let first = try await timedAsync {
        var states = query.changes.makeAsyncIterator()
        return try await states.next()
      }
      guard first.value?.records.map(\.id) == fetch.value.map(\.id) else {
        throw ChildFailure(description: "first state ≠ fetch")
      }
      if run > 0 {  // the first run warms up
        fetches.append(fetch.ms)
        firsts.append(first.ms)
      }
    }
    // Re-reads: the writer saves a record the set holds (a change it cannot merge). Once
    // the store has reported the commit (to a second follower of its commits), plus 100 ms
    // for the live set's own follower, either the set's next state (its re-read) or the
    // same fetch is timed: each is the first read after a commit (on PostgreSQL the first
    // read after another connection's UPDATE costs several times the next one, for a
    // fetch as for a live set: 240 ms beside 50 ms at 200,000 rows).
    var states = query.changes.makeAsyncIterator()
    _ = try await states.next()
    var reported = store.commits(polling: .milliseconds(50)).makeAsyncIterator()
    var refetches: [Double] = []
    var rereads: [Double] = []
    var round = 0
    /// Saves a held record through the writer and waits until the commit is reported.
    func commit() async throws -> (record: Animal, version: UInt64) {
      round += 1
      var held = try query.refreshed().fetch()[0]
      held.name = "moved \(round)"
      try writer.save(held)
      let committed = try version(writer)
      while let commit = await reported.next(), commit.version < committed {}
      try await Task.sleep(for: .milliseconds(100))
      return (held, committed)
    }
    for run in 0...runs {
      // The fetch, first after a commit; then the live set catches up (untimed).
      _ = try await commit()
      let fetch = try timed { try query.refreshed().fetch() }
      _ = try await states.next()
      // The live set's re-read, first after a commit.
      let (held, committed) = try await commit()
      let state = try await timedAsync { try await states.next() }
      guard let records = state.value?.records, state.value?.version == committed,
        records.map(\.id) == (try query.refreshed().fetch()).map(\.id), records[0].name == held.name
      else {
        throw ChildFailure(description: "re-read state ≠ fetch")
      }
      if run > 0 {
        refetches.append(fetch.ms)
        rereads.append(state.ms)
      }
    }
    return [middle(fetches), middle(firsts), middle(refetches), middle(rereads)]
  }
  let before = try timed {
    try RequestSet(PlainStore(store)).filter("species", value: "Cow").sortBy("age").limit(20).fetch()
  }
  let query20 = "`filter(\"species\", value: \"Cow\").sortBy(\"age\").limit(20)`"
  var rows = [
    Row("live set's first state, \(query20)", figures[1], "the same `fetch()`", figures[0], target: "≤ 1.2×"),
    Row(
      "live set's re-read after another connection saves a held record", figures[3],
      "the same `fetch()`, first after such a commit", figures[2], target: "≤ 1.2×"),
  ]
  for i in rows.indices {
    rows[i].plainRatio = true
    rows[i].verdict = mark(rows[i].ratio <= 1.2)
  }
  var old = Row(
    "before issue 35: first state and re-reads read every row (`store.snapshot()`, one run)", before.ms,
    "the same `fetch()`", figures[0], target: "-")
  old.plainRatio = true
  rows.append(old)
  return rows
}

/// `.async.get()` of one record by id and `.async.fetch()` of 10,000 records beside the
/// synchronous calls, each a loop in one task, sync and async batches alternating; and, for
/// reference, a point query written with a string key (`filter("id", value: k)`), which a
/// store that runs no query itself answers by a scan.
private func asyncRows<S: RecordStore>(_ store: S, label: String, reference: Bool = false) throws -> [Row]
where S.Element == Animal {
  let all = RequestSet(store)
  let count = try all.fetchCount()
  let scans = reference ? 20 : 1
  let figures = try waitFor { () async throws -> [Double] in
    var times = Array(repeating: [Double](), count: 6)
    let reps = 2_000
    for run in 0...7 {
      let batches = [
        try timed { for i in 0..<reps { keep(try all.filter(\.id == i * 37 % count).get()) } }.ms
          / Double(reps),
        try await timedAsync {
          for i in 0..<reps { keep(try await all.filter(\.id == i * 37 % count).async.get()) }
        }
        .ms
          / Double(reps),
        try timed { keep(try all.limit(10_000).fetch()) }.ms,
        try await timedAsync { keep(try await all.limit(10_000).async.fetch()) }.ms,
        try timed {
          for i in 0..<scans where reference { keep(try all.filter("id", value: i * 37 % count).get()) }
        }
        .ms
          / Double(scans),
        try await timedAsync {
          for i in 0..<scans where reference {
            keep(try await all.filter("id", value: i * 37 % count).async.get())
          }
        }.ms / Double(scans),
      ]
      if run > 0 { for (i, ms) in batches.enumerated() { times[i].append(ms) } }
    }
    return times.map(middle)
  }
  var rows = [
    Row(
      "\(label): `filter(\\.id == k).async.get()`", figures[1], "`get()`", figures[0],
      target: "≤ 1.1× + 10 µs"),
    Row(
      "\(label): `limit(10_000).async.fetch()`", figures[3], "`fetch()`", figures[2], target: "≤ 1.1× + 10 µs"
    ),
  ]
  if reference {
    rows.append(
      Row(
        "(reference) \(label): `filter(\"id\", value: k).async.get()`, a scan", figures[5], "`get()`",
        figures[4],
        target: "-"))
  }
  for i in rows.indices {
    rows[i].plainRatio = true
    rows[i].verdict = i < 2 ? mark(rows[i].ours <= 1.1 * rows[i].baseline + 0.010) : "—"
  }
  return rows
}

/// The store's version now, read without decoding a record.
private func version<S: RecordStore>(_ store: S) throws -> UInt64 where S.Element == Animal {
  if let pushdown = store as? any QueryPushdownStore<Animal> { return try pushdown.queryReader().version }
  return try store.snapshot().version
}

/// The median of `times`.
private func middle(_ times: [Double]) -> Double { times.sorted()[times.count / 2] }

/// The wall-clock time, in milliseconds, of one await of `body`, and its result.
private func timedAsync<T>(_ body: () async throws -> T) async rethrows -> (ms: Double, value: T) {
  let start = DispatchTime.now().uptimeNanoseconds
  let value = try await body()
  return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6, value)
}

/// Runs `body` in a task and blocks this (main) thread until it ends: the async
/// measurements time themselves inside the task.
func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
  let done = DispatchSemaphore(value: 0)
  let box = ResultBox<T>()
  Task.detached {
    do {
      box.set(.success(try await body()))
    } catch {
      box.set(.failure(error))
    }
    done.signal()
  }
  done.wait()
  return try box.get()
}

final class ResultBox<T: Sendable>: @unchecked Sendable {
  // @unchecked: `result` is only touched under `lock`.
  private let lock = NSLock()
  private var result: Result<T, any Error>?
  func set(_ value: Result<T, any Error>) { lock.withLock { result = value } }
  func get() throws -> T { try lock.withLock { result }!.get() }
}
