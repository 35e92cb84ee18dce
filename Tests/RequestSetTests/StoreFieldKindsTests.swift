import Foundation
import RequestSetPostgres
import RequestSetSQLite
import Testing
import _RequestSetSQL

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

@testable import RequestSet

/// `StoreFieldKinds`, the summary of keys and kinds a pushdown store keeps, and how the
/// SQL stores keep it: written with the records, read by each reader, shared by every
/// connection to one database, rebuilt for a table that has none, refused when damaged.
@Suite(.ownThreads) struct StoreFieldKindsTests {
  /// A record whose keys are not fixed by its type: another writer can add one.
  struct Bag: Record, Equatable {
    var id: Int
    var extras: [String: Int]
  }

  @Test func noteFlattensNestedKeysEscapesDotsAndProbesOptionalKeys() throws {
    var kinds = StoreFieldKinds()
    #expect(kinds.isEmpty)
    // Rex has no nickname and no owner: the probe still knows both keys.
    kinds.note(try FieldValue(encoding: Animal.zoo[2]), as: Animal.self)
    #expect(kinds.keys.contains("nickname"))
    #expect(kinds.keys.contains("owner"))
    #expect(kinds.holds(.number, at: "age"))
    #expect(!kinds.holds(.string, at: "age"))
    kinds.note(try FieldValue(encoding: Animal.zoo[0]), as: Animal.self)
    #expect(kinds.holds(.string, at: "owner.city"))
    #expect(kinds.holds(.object, at: "owner"))
    #expect(kinds.holds(.array, at: "tags"))

    var dotted = StoreFieldKinds()
    dotted.note(try FieldValue(encoding: Bag(id: 1, extras: ["a.b": 1])), as: Bag.self)
    #expect(dotted.keys == ["extras", #"extras.a\.b"#, "id"])
  }

  @Test func theTextRoundTripsAndDamagedTextIsATypedError() throws {
    var kinds = StoreFieldKinds()
    kinds.note(try FieldValue(encoding: Animal.zoo[0]), as: Animal.self)
    let back = try StoreFieldKinds(encodedText: kinds.encodedText())
    #expect(back == kinds)
    #expect(try StoreFieldKinds(encodedText: StoreFieldKinds().encodedText()) == StoreFieldKinds())
    for damaged in ["", "{", "[]", #"{"kinds":{"a":200},"probed":true}"#, #"{"kinds":{"a":"x"},"probed":true}"#] {
      let error = try #require(throws: RequestSetError.self) { try StoreFieldKinds(encodedText: damaged) }
      #expect(error.code == .schemaMismatch, "\(damaged)")
    }
  }

  @Test func containsAndUnion() throws {
    var small = StoreFieldKinds()
    small.note(try FieldValue(encoding: Bag(id: 1, extras: ["x": 1])), as: Bag.self)
    var large = small
    large.note(try FieldValue(encoding: Bag(id: 2, extras: ["y": 2])), as: Bag.self)
    #expect(large.contains(small))
    #expect(!small.contains(large))
    small.formUnion(large)
    #expect(small == large)
  }

  /// Two stores on one database (two connections, as two processes would have).
  func twoStores(_ kind: StoreKind) throws -> (any RecordStore<Bag>, any RecordStore<Bag>) {
    switch kind {
    case .postgres:
      let table = PostgresServer.freshTable()
      return (
        try PostgresStore<Bag>(url: PostgresServer.url(), table: table),
        try PostgresStore<Bag>(url: PostgresServer.url(), table: table)
      )
    default:
      let path = TemporaryLogDirectory.freshPath("bags.sqlite")
      return (try SQLiteStore<Bag>(path: path), try SQLiteStore<Bag>(path: path))
    }
  }

  static var sqlKinds: [StoreKind] { [.sqlite] + (PostgresServer.testsRun ? [.postgres] : []) }

  @Test(arguments: sqlKinds)
  func aKeyAnotherConnectionWritesIsKnownToEveryReader(kind: StoreKind) throws {
    let (mine, theirs) = try twoStores(kind)
    try mine.insert(Bag(id: 1, extras: ["size": 3]))
    let error = try #require(throws: RequestSetError.self) {
      try RequestSet(mine).filter("extras.color", value: 1).fetch()
    }
    #expect(error.code == .unknownKey)
    #expect(error.message.contains("extras.size"))
    let mismatch = try #require(throws: RequestSetError.self) {
      try RequestSet(mine).filter("extras.size", value: "big").fetch()
    }
    #expect(mismatch.code == .typeMismatch)

    try theirs.insert(Bag(id: 2, extras: ["color": 1]))
    #expect(try RequestSet(mine).filter("extras.color", value: 1).fetch().map(\.id) == [2])
    #expect(RequestSet(mine).filter("extras.color", value: nil).count == 1)
    // Deleting the only record that held a key forgets nothing, as a MemoryStore does.
    try theirs.delete(id: 2)
    #expect(try RequestSet(mine).filter("extras.color", value: 1).fetch().isEmpty)
  }

  @Test func aSQLiteTableWithNoSummaryGetsOneOnOpenAndADamagedOneIsRefused() throws {
    let path = TemporaryLogDirectory.freshPath("old.sqlite")
    do {
      let store = try SQLiteStore<Bag>(path: path)
      try store.insert(contentsOf: [Bag(id: 1, extras: ["size": 3]), Bag(id: 2, extras: ["color": 1])])
      store.close()
    }
    // A table written before summaries were kept.
    try Self.sqlite(path, "DELETE FROM requestset_kinds")
    do {
      let store = try SQLiteStore<Bag>(path: path)
      #expect(try RequestSet(store).filter("extras.color", value: 1).fetch().map(\.id) == [2])
      #expect(throws: RequestSetError.self) { try RequestSet(store).filter("extras.weight", value: 1).fetch() }
      store.close()
    }
    // Another program damages the summary: reads and writes refuse, and nothing is written.
    try Self.sqlite(path, "UPDATE requestset_kinds SET kinds = 'not a summary'")
    let store = try SQLiteStore<Bag>(path: path)
    let read = try #require(throws: RequestSetError.self) {
      try RequestSet(store).filter("extras.color", value: 1).fetch()
    }
    #expect(read.code == .schemaMismatch)
    let write = try #require(throws: RequestSetError.self) { try store.insert(Bag(id: 3, extras: [:])) }
    #expect(write.code == .schemaMismatch)
    #expect(try store.snapshot().count == 2)
  }

  /// Runs `sql` on the database at `path` through its own connection.
  static func sqlite(_ path: String, _ sql: String) throws {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw RequestSetError(.ioFailure, "cannot open \(path)") }
    defer { sqlite3_close(db) }
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
      throw RequestSetError(.ioFailure, String(cString: sqlite3_errmsg(db)))
    }
  }
}
