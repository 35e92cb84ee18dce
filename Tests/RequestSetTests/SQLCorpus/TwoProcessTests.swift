import Foundation
import RequestSetPostgres
import RequestSetSQLite
import Testing

@testable import RequestSet

/// One SQL database that two processes open: a SQLite file, or a table on the test's
/// PostgreSQL server.
struct SharedSQLDatabase: CustomStringConvertible {
  enum Engine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite, postgres
    var description: String { rawValue }
  }

  var engine: Engine
  /// The SQLite file's path or the PostgreSQL URL.
  var location: String
  var table: String

  var description: String { "\(engine) table \(table)" }

  /// The engines the tests run on: PostgreSQL only when its test server runs (or must,
  /// with `CI=true`, where a server that cannot start fails the tests).
  static var engines: [Engine] { PostgresServer.testsRun ? Engine.allCases : [.sqlite] }

  /// A fresh database of `engine`: a new SQLite file, or a new table on the test server.
  static func fresh(_ engine: Engine) throws -> SharedSQLDatabase {
    switch engine {
    case .sqlite:
      return SharedSQLDatabase(
        engine: .sqlite, location: TemporaryLogDirectory.freshPath("shared.sqlite"), table: "TwoProcess")
    case .postgres:
      return SharedSQLDatabase(engine: .postgres, location: try PostgresServer.url(), table: PostgresServer.freshTable())
    }
  }

  /// This process's store on the database.
  func open() throws -> any RecordStore<DynamicRecord> {
    switch engine {
    case .sqlite: return try SQLiteStore<DynamicRecord>(path: location, table: table)
    case .postgres: return try PostgresStore<DynamicRecord>(url: location, table: table, connections: 2)
    }
  }

  /// Starts the child on this database.
  func child(_ scenario: String, _ arguments: String...) throws -> SQLWorkerChild {
    try SQLWorkerChild.start(arguments: [scenario, engine.rawValue, location, table] + arguments)
  }
}

/// Two stores in two processes on one database: concurrent updates through a query lose
/// nothing, each process's `changes` sees the other's commits, and a process killed in the
/// middle of a write leaves every transaction whole or absent.
///
/// More than 20 s: every test starts child processes that write thousands of rows to a
/// real database, and the kill test does it eight times per engine.
@Suite(.serialized, .ownThreads(servedFirst: true)) struct TwoProcessTests {
  static let rounds = 60

  @Test(arguments: SharedSQLDatabase.engines)
  func concurrentUpdatesThroughAQueryLoseNothing(engine: SharedSQLDatabase.Engine) throws {
    let db = try SharedSQLDatabase.fresh(engine)
    let store = try db.open()
    defer { store.close() }
    try store.insert(DynamicRecord(id: .int(0), fields: ["count": .int(0)]))
    try store.insert(
      contentsOf: (1...10).map {
        DynamicRecord(id: .int($0), fields: ["slot": .int($0 - 1), "fromParent": .int(-1), "fromChild": .int(-1)])
      })

    let child = try db.child("race", "fromChild", String(Self.rounds))
    // This process does the same work at the same time, under its own field name.
    for i in 0..<Self.rounds {
      try Self.retryingConflicts {
        try RequestSet(store).filter("id", value: 0).update { record in
          guard case .int(let count) = record.fields["count"] ?? .null else { return }
          record.fields["count"] = .int(count + 1)
        }
      }
      try Self.retryingConflicts { _ = try RequestSet(store).filter("slot", value: i % 10).update("fromParent", value: i) }
    }
    #expect(child.wait(timeout: .seconds(300)) == 0, "\(child)")
    #expect(child.output.last == "done", "\(child)")

    let counter = try RequestSet(store).filter("id", value: 0).fetch()
    #expect(counter.first?.fields["count"] == .int(2 * Self.rounds), "closure updates lost on \(db)")
    // Each slot's last key/value update from each process, neither overwriting the other's.
    for slot in 0..<10 {
      let last = (0..<Self.rounds).last { $0 % 10 == slot }.map { FieldValue.int($0) }
      let record = try #require(try RequestSet(store).filter("slot", value: slot).fetch().first)
      #expect(record.fields["fromParent"] == last, "slot \(slot) on \(db): \(record)")
      #expect(record.fields["fromChild"] == last, "slot \(slot) on \(db): \(record)")
    }
  }

  @Test(arguments: SharedSQLDatabase.engines)
  func eachProcessSeesTheOthersCommitsLive(engine: SharedSQLDatabase.Engine) async throws {
    let db = try SharedSQLDatabase.fresh(engine)
    let store = try db.open()
    defer { store.close() }
    try store.insert(DynamicRecord(id: .int(1), fields: ["batch": .int(-1)]))

    // This process watches; the child commits.
    let watched = RequestSet(store).filter("batch", value: 0)
    let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
    let seen = Task {
      var first = true
      for try await state in watched.changes {
        if first {
          first = false
          readyContinuation.yield()  // the stream holds the state before the child's commit
        }
        if !state.records.isEmpty { return state.records.map(\.id) }
      }
      return []
    }
    for await _ in ready { break }
    let writer = try db.child("batches", "3", "1")
    #expect(writer.wait(timeout: .seconds(eventLimit)) == 0, "\(writer)")
    // A limit for a failure to end on, not a guess at how soon the commit is seen.
    let timeout = Task {
      try await runnableSleep(eventLimit)
      seen.cancel()
    }
    let ids = try await seen.value
    timeout.cancel()
    #expect(ids == [.int(1_000), .int(1_001), .int(1_002)], "the child's commit was not seen on \(db)")

    // The child watches; this process commits.
    let watcher = try db.child("watch", "2000", String(Int(eventLimit)))
    try watcher.waitForLine("ready", timeout: .seconds(eventLimit))
    try store.insert(DynamicRecord(id: .int(2_000), fields: ["batch": .int(9)]))
    #expect(watcher.wait(timeout: .seconds(eventLimit + 60)) == 0, "\(watcher)")
    #expect(watcher.output.contains("seen 2000"), "this process's commit was not seen by the child on \(db): \(watcher)")
  }

  @Test(arguments: SharedSQLDatabase.engines)
  func aProcessKilledMidTransactionLeavesEachTransactionWholeOrAbsent(engine: SharedSQLDatabase.Engine) throws {
    let db = try SharedSQLDatabase.fresh(engine)
    let size = 2_000
    let setup = try db.open()
    try setup.insert(DynamicRecord(id: .int(1), fields: ["batch": .int(-1)]))
    setup.close()

    // The child commits batch after batch, one `apply` each; the kill lands while it is
    // writing one (it goes straight on to the next), so that one must vanish whole.
    let child = try db.child("batches", String(size), "1000")
    try child.waitForLine("committed 2", timeout: .seconds(120))
    usleep(UInt32.random(in: 0...20_000))
    child.kill()
    #expect(child.wait(timeout: .seconds(eventLimit)) == nil, "the child was not killed: \(child)")
    let committed = child.output.filter { $0.hasPrefix("committed ") }.count

    let store = try db.open()
    defer { store.close() }
    let groups = try RequestSet(store).groupBy("batch").aggregate(.count).fetch()
    var batches: [Int: Int] = [:]
    for row in groups {
      guard case .int(let batch) = row["batch"] ?? .null, case .int(let n) = row["count"] ?? .null else { continue }
      batches[batch] = n
    }
    #expect(batches[-1] == 1, "the record from before was lost on \(db): \(groups)")
    batches[-1] = nil
    // Every batch the child said it committed is there, and every batch there is whole.
    #expect(batches.count >= committed, "committed batches lost on \(db): \(batches), printed \(committed)")
    #expect(batches.values.allSatisfy { $0 == size }, "a half-written batch on \(db): \(batches)")
    #expect(Set(batches.keys) == Set(0..<batches.count), "batches out of order on \(db): \(batches)")
    // And the database takes writes again (no lock or transaction left open by the child).
    try store.insert(DynamicRecord(id: .int(99), fields: ["batch": .int(-2)]))
    #expect(try RequestSet(store).filter("batch", value: -2).fetchCount() == 1)
  }

  /// Both processes add 1 to a counter of every record their query selects, `rounds`
  /// times each, at the same time, on overlapping ranges (the child 0..<15, this process
  /// 5..<20), while each follows the whole table live: no increment is lost, and each
  /// process's live set reaches the other's last increment of the records only the other
  /// touches.
  @Test(arguments: SharedSQLDatabase.engines)
  func overlappingQueryUpdatesLoseNothingAndEachLiveSetSeesTheOthers(engine: SharedSQLDatabase.Engine) async throws {
    let rounds = 100
    let db = try SharedSQLDatabase.fresh(engine)
    let store = try db.open()
    defer { store.close() }
    try store.insert(contentsOf: (0..<20).map { DynamicRecord(id: .int($0), fields: ["count": .int(0)]) })

    // This process watches record 0, which only the child's range holds.
    let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
    let watcher = Task.detached {
      for try await state in RequestSet(store).changes {
        readyContinuation.yield()
        if state.records.first(where: { $0.id == .int(0) })?.fields["count"] == .int(rounds) { return true }
      }
      return false
    }
    for await _ in ready { break }
    // The child watches record 19, which only this process's range holds.
    let child = try db.child("bump", "0", "15", String(rounds), "19", String(rounds))
    try await onOwnThread { try child.waitForLine("ready", timeout: .seconds(120)) }
    try await onOwnThread {
      let mine = RequestSet(store).filter("id", .greaterThanOrEqual, 5).filter("id", .lessThan, 20)
      for _ in 0..<rounds {
        try Self.retryingConflicts {
          try mine.update { record in
            guard case .int(let count)? = record.fields["count"] else { return }
            record.fields["count"] = .int(count + 1)
          }
        }
      }
    }
    let timeout = Task.detached {
      try await Task.sleep(for: .seconds(120))
      watcher.cancel()
    }
    let sawChild = try await watcher.value
    timeout.cancel()
    #expect(sawChild, "this process's live set never showed the child's last increment on \(db)")
    let status = await onOwnThread { child.wait(timeout: .seconds(300)) }
    #expect(status == 0, "\(child)")
    #expect(child.output.contains("saw 19 \(rounds)"), "the child's live set never showed this process's last increment: \(child)")

    let counts = try RequestSet(store).fetch().reduce(into: [FieldValue: FieldValue]()) { $0[$1.id] = $1.fields["count"] }
    for id in 0..<20 {
      let expected = (id < 15 ? rounds : 0) + (id >= 5 ? rounds : 0)
      #expect(counts[.int(id)] == .int(expected), "record \(id) on \(db): increments lost")
    }
  }

  /// A child commits transaction after transaction (`store.transaction`: inserts, a
  /// delete, a save) and is killed with SIGKILL at a random point, eight times over on one
  /// database: after each kill every transaction the child finished is there whole, and
  /// the one it was in is there whole or not at all.
  @Test(arguments: SharedSQLDatabase.engines)
  func repeatedKillsMidTransactionLeaveEachTransactionWholeOrAbsent(engine: SharedSQLDatabase.Engine) throws {
    let db = try SharedSQLDatabase.fresh(engine)
    let size = 300
    let setup = try db.open()
    try setup.insert(DynamicRecord(id: .int(0), fields: ["last": .int(-1)]))
    setup.close()

    var last = -1
    var interrupted = 0
    for round in 0..<8 {
      let child = try db.child("transactions", String(size), "100000")
      let target = last + 1 + Int.random(in: 0...2)
      try child.waitForLine("committed \(target)", timeout: .seconds(120))
      usleep(UInt32.random(in: 0...30_000))  // where the kill lands, not a wait for anything
      child.kill()
      #expect(child.wait(timeout: .seconds(30)) == nil, "the child was not killed: \(child)")
      let printed = child.output.compactMap { $0.hasPrefix("committed ") ? Int($0.dropFirst(10)) : nil }.max() ?? -1
      let begun = child.output.compactMap { $0.hasPrefix("begin ") ? Int($0.dropFirst(6)) : nil }.max() ?? -1

      let store = try db.open()
      defer { store.close() }
      var batches: [Int: Int] = [:]
      var markers: [Int] = []
      var ledger: Int?
      for record in try RequestSet(store).fetch() {
        if case .int(let b)? = record.fields["batch"] { batches[b, default: 0] += 1 }
        if case .int(let m)? = record.fields["marker"] { markers.append(m) }
        if record.id == .int(0), case .int(let l)? = record.fields["last"] { ledger = l }
      }
      let now = try #require(ledger, "round \(round) on \(db): the ledger record is gone")
      // The child printed `committed` after each commit, so the ledger is at least there,
      // and at most one further (committed, killed before it could print).
      #expect(now == printed || now == printed + 1, "round \(round) on \(db): ledger \(now), printed \(printed)")
      #expect(Set(batches.keys) == Set(0..<(now + 1)), "round \(round) on \(db): batches \(batches.keys.sorted()), ledger \(now)")
      #expect(batches.values.allSatisfy { $0 == size }, "round \(round) on \(db): a half-written batch: \(batches)")
      #expect(markers == [now], "round \(round) on \(db): markers \(markers), ledger \(now)")
      if begun > now { interrupted += 1 }
      last = now
    }
    print("\(db): 8 kills, \(interrupted) inside a transaction, \(last + 1) transactions whole")
    // Batches are back to back, so nearly every kill lands inside one (a kill between
    // `committed` and the next `begin` is a matter of microseconds).
    #expect(interrupted > 0, "no kill landed inside a transaction on \(db)")
  }

  static func retryingConflicts(_ body: () throws -> Void) throws {
    while true {
      do {
        return try body()
      } catch let error as RequestSetError where error.code == .conflict {
        continue
      }
    }
  }
}
