// The reliability scenarios of SQLWorker (Tests/RequestSetTests/ReliabilityTests.swift and
// TwoProcessTests.swift): work that must run in a process of its own, so that what it
// measures (descriptors, resident memory, server connections) is its own alone, or so
// that the parent can kill it.
//
//   bump <from> <to> <rounds> <watch> <target>
//       follows the whole table live; `rounds` times adds 1 to "count" of every record whose
//       id is in from..<to, through a query update; then waits until its live set shows
//       record <watch> with count <target> (the other process's work) and prints "saw"
//   transactions <size> <count>
//       commits <count> transactions after the ledger's last one, each inserting <size>
//       records of its batch and a marker, deleting the previous batch's marker and saving
//       the ledger (record 0), printing "committed <b>" after each
//   cycles <n>
//       opens and closes the store n times (a write, a query, a live set's first state
//       each time) and prints the descriptors, resident memory and (PostgreSQL) server
//       connections after the first tenth and at the end
//   soak <commits>
//       a live set follows <commits> commits; prints resident memory along the way
import CLibPQ
import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A store of any kind the scenarios run on: `memory` (the location is ignored), `log` (a
/// file path), `sqlite` (a file path), `postgres` (a URL).
func openAnyStore(
  _ kind: String, _ location: String, _ table: String, log options: LogStoreOptions = .init()
) throws -> any RecordStore<DynamicRecord> {
  switch kind {
  case "memory": return MemoryStore<DynamicRecord>()
  // Options given: `LogStore<DynamicRecord>(path:)` alone opens a log read-only.
  case "log": return try LogStore<DynamicRecord>(path: location, options: options)
  case "sqlite": return try SQLiteStore<DynamicRecord>(path: location, table: table)
  case "postgres": return try PostgresStore<DynamicRecord>(url: location, table: table, connections: 2)
  default: fail("unknown store kind \(kind)", status: 2)
  }
}

/// Runs `body` until it does not throw `.conflict`.
func retryingConflicts(_ body: () throws -> Void) throws {
  while true {
    do {
      try body()
      return
    } catch let error as RequestSetError where error.code == .conflict {
      continue
    }
  }
}

/// An int field of a record, or nil.
func intField(_ record: DynamicRecord?, _ key: String) -> Int? {
  guard case .int(let n)? = record?.fields[key] else { return nil }
  return n
}

// MARK: Measures

/// What this process holds: open descriptors, resident memory, and (for PostgreSQL) the
/// server's connections named with this process's application name.
struct ResourceUse: CustomStringConvertible {
  var descriptors: Int
  var residentKB: Int
  var connections: Int

  var description: String { "fds \(descriptors) rss \(residentKB) connections \(connections)" }

  /// The entries of /proc/self/fd (the directory's own descriptor among them, the same
  /// every time).
  static func descriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
  }

  /// The resident set, from /proc/self/statm's second field (pages).
  static func residentKB() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
  }
}

/// A libpq connection of the scenario's own that counts the server's backends for one
/// application name (`pg_stat_activity`), so the count is this process's alone.
final class ConnectionCounter {
  private let handle: OpaquePointer
  let application: String

  init(url: String, application: String) throws {
    self.application = application
    guard let handle = PQconnectdb(url) else { fail("libpq could not allocate a connection") }
    self.handle = handle
    guard PQstatus(handle) == CONNECTION_OK else {
      fail("the connection counter could not connect: \(String(cString: PQerrorMessage(handle)))")
    }
  }

  deinit { PQfinish(handle) }

  /// The backends whose application name is ours (the counter's own is not: it has none).
  func count() -> Int {
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
    let result: OpaquePointer? = application.withCString { name in
      var values: [UnsafePointer<CChar>?] = [name]
      return PQexecParams(handle, sql, 1, nil, &values, nil, nil, 0)
    }
    guard let result else { return -1 }
    defer { PQclear(result) }
    guard PQresultStatus(result) == PGRES_TUPLES_OK, let value = PQgetvalue(result, 0, 0) else { return -1 }
    return Int(String(cString: value)) ?? -1
  }

  /// The URL with this counter's application name, which libpq sends the server.
  static func naming(_ url: String, _ application: String) -> String {
    url + (url.contains("?") ? "&" : "?") + "application_name=" + application
  }
}

/// The use now, after waiting (up to two minutes) for descriptors and connections to come
/// down to `target`'s: a closed PostgreSQL connection leaves the server's list when its
/// backend has exited, a moment after the client let go.
func settledUse(_ counter: ConnectionCounter?, target: ResourceUse?) -> ResourceUse {
  func now() -> ResourceUse {
    ResourceUse(
      descriptors: ResourceUse.descriptors(), residentKB: ResourceUse.residentKB(), connections: counter?.count() ?? 0)
  }
  let deadline = ContinuousClock.now + .seconds(120)
  var use = now()
  while ContinuousClock.now < deadline {
    let settled =
      if let target {
        use.descriptors <= target.descriptors && use.connections <= target.connections
      } else {
        use.connections == 0
      }
    if settled { break }
    usleep(50_000)
    use = now()
  }
  return use
}

// MARK: Scenarios

/// `bump`: see the file's head.
func bumpScenario(_ store: any RecordStore<DynamicRecord>, _ rest: [String]) async throws {
  guard rest.count == 5, let from = Int(rest[0]), let to = Int(rest[1]), let rounds = Int(rest[2]),
    let watch = Int(rest[3]), let target = Int(rest[4])
  else { fail("bump <from> <to> <rounds> <watch> <target>", status: 2) }
  let ready = Atomic<Bool>(false)
  let watcher = Task.detached {
    for try await state in RequestSet(store).changes {
      ready.store(true, ordering: .releasing)
      let record = state.records.first { $0.id == .int(watch) }
      if intField(record, "count") == target { return true }
    }
    return false
  }
  while !ready.load(ordering: .acquiring) { usleep(1_000) }
  say("ready")
  let mine = RequestSet(store).filter("id", .greaterThanOrEqual, from).filter("id", .lessThan, to)
  for _ in 0..<rounds {
    try retryingConflicts {
      try mine.update { record in
        record.fields["count"] = .int((intField(record, "count") ?? 0) + 1)
      }
    }
  }
  say("bumped \(rounds)")
  let timeout = Task.detached {
    try await Task.sleep(for: .seconds(120))
    watcher.cancel()
  }
  let seen = try await watcher.value
  timeout.cancel()
  guard seen else { fail("bump: the live set never showed record \(watch) with count \(target)") }
  say("saw \(watch) \(target)")
}

/// `transactions`: see the file's head.
func transactionsScenario(_ store: any RecordStore<DynamicRecord>, _ rest: [String]) throws {
  guard rest.count == 2, let size = Int(rest[0]), let count = Int(rest[1]) else {
    fail("transactions <size> <count>", status: 2)
  }
  let first = (intField(try store.fetch(id: .int(0)), "last") ?? -1) + 1
  for b in first..<(first + count) {
    say("begin \(b)")
    try store.transaction { tx in
      for j in 0..<size {
        tx.insert(DynamicRecord(id: .int(1_000_000 + b * size + j), fields: ["batch": .int(b), "j": .int(j)]))
      }
      tx.insert(DynamicRecord(id: .int(-(b + 1)), fields: ["marker": .int(b)]))
      if b > 0 { tx.delete(id: .int(-b)) }
      tx.save(DynamicRecord(id: .int(0), fields: ["last": .int(b)]))
    }
    say("committed \(b)")
  }
}

/// `cycles`: see the file's head.
func cyclesScenario(kind: String, location: String, table: String, _ rest: [String]) async throws {
  guard rest.count == 1, let n = Int(rest[0]), n >= 10 else { fail("cycles <n ≥ 10>", status: 2) }
  let application = "rs_cycles_\(getpid())"
  let counter = kind == "postgres" ? try ConnectionCounter(url: location, application: application) : nil
  let url = kind == "postgres" ? ConnectionCounter.naming(location, application) : location
  // A log compacted once it holds 16 KB, not 1 MB: each open then replays a few hundred
  // frames, not up to 10,000, and the cycles swap the log's file now and then too.
  let options = LogStoreOptions(autoCompactMinimumBytes: 16 << 10)
  func cycle(_ i: Int) async throws {
    let store = try openAnyStore(kind, url, table, log: options)
    try store.save(DynamicRecord(id: .int(i % 10), fields: ["n": .int(i)]))
    let matching = RequestSet(store).filter("n", value: i)
    guard try matching.fetchCount() == 1, intField(try store.fetch(id: .int(i % 10)), "n") == i else {
      fail("cycle \(i): the record just saved was not read back")
    }
    var live = matching.changes.makeAsyncIterator()
    guard try await live.next()?.records.count == 1 else { fail("cycle \(i): the live set's first state is wrong") }
    store.close()
  }
  say("start " + settledUse(counter, target: nil).description)
  let warmUp = n / 10
  for i in 0..<warmUp { try await cycle(i) }
  // After the first tenth: what the process keeps for good (the runtime's caches, the
  // allocator's arenas, SQLite's and libpq's one-time state) is in place.
  let before = settledUse(counter, target: nil)
  say("before " + before.description)
  for i in warmUp..<n { try await cycle(i) }
  let after = settledUse(counter, target: before)
  say("after " + after.description)
}

/// `soak`: see the file's head.
func soakScenario(_ store: any RecordStore<DynamicRecord>, _ rest: [String]) async throws {
  guard rest.count == 1, let commits = Int(rest[0]), commits >= 10 else { fail("soak <commits ≥ 10>", status: 2) }
  let ids = 100
  try store.insert(contentsOf: (0..<ids).map { DynamicRecord(id: .int($0), fields: ["k": .int($0 % 2), "n": .int($0)]) })
  let watched = RequestSet(store).filter("k", value: 0)
  let states = Atomic<Int>(0)
  let consumer = Task.detached { () throws -> [DynamicRecord] in
    for try await state in watched.changes {
      let seen = states.add(1, ordering: .relaxed).newValue
      // Now and then a slow read, so commits pile up: a few are merged, a thousand or more
      // (past the inbox's 1,024 changes) leave only a note to read the store again.
      if seen % 64 == 0 { usleep(2_000) }
      if seen % 256 == 0 { usleep(50_000) }
      if state.records.contains(where: { $0.id == .int(-1) }) { return state.records }
    }
    return []
  }
  let start = ResourceUse.residentKB()
  var base = 0
  var peak = 0
  for i in 0..<commits {
    let id = i % ids
    let record = DynamicRecord(id: .int(id), fields: ["k": .int((i / 7) % 2), "n": .int(ids + i)])
    if i % 3 == 0 {
      try store.apply([.delete(id: .int(id)), .insert(record)], ifVersion: nil)
    } else {
      try store.save(record)
    }
    if (i + 1) % (commits / 10) == 0 {
      let resident = ResourceUse.residentKB()
      if base == 0 { base = resident }
      peak = max(peak, resident)
      say("at \(i + 1) rss \(resident)")
    }
  }
  // The last commit: a record the consumer waits for.
  try store.insert(DynamicRecord(id: .int(-1), fields: ["k": .int(0), "n": .int(-1)]))
  let timeout = Task.detached {
    try await Task.sleep(for: .seconds(300))
    consumer.cancel()
  }
  let last = try await consumer.value
  timeout.cancel()
  let end = ResourceUse.residentKB()
  let fresh = try watched.fetch()
  guard !last.isEmpty, last.map(\.id) == fresh.map(\.id), last.map(\.fields) == fresh.map(\.fields) else {
    fail("soak: the live set's last state (\(last.count) records) is not the store's (\(fresh.count))")
  }
  say("states \(states.load(ordering: .relaxed)) of \(commits + 1) commits")
  say("rss start \(start) base \(base) peak \(peak) end \(end)")
}
