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
@Suite(.serialized) struct TwoProcessTests {
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
