import RequestSet
import RequestSetPostgres
import RequestSetSQLite

/// Every backend a RequestSet can run on. Suites take `arguments: StoreKind.allCases`, so
/// a new store gets every suite for free.
enum StoreKind: String, CaseIterable, CustomStringConvertible, Sendable {
  /// `MemoryStore`.
  case memory
  /// `RequestSet([...])` over a plain array: read-only.
  case array
  /// `LogStore`, on a fresh file in a temporary directory.
  case log
  /// `MemoryStore` with secondary indexes on most of `Animal`'s keys, so every suite
  /// also runs through the planner's index paths.
  case indexedMemory
  /// `LogStore` with the same indexes.
  case indexedLog
  /// `SQLiteStore`, on a fresh database file in a temporary directory.
  case sqlite
  /// `SQLiteStore` with expression indexes on the same keys.
  case indexedSQLite
  /// `PushdownMemoryStore`: the pushdown seam with a partial capability, so every suite
  /// runs through pushdown plus an in-process remainder.
  case pushdownMemory
  /// `PostgresStore` on the test process's private server (`PostgresServer`), a fresh
  /// table per store. Left out of `allCases`, with the reason printed, when no server
  /// can start outside CI.
  case postgres
  /// `PostgresStore` through PgBouncer in transaction mode (`PgBouncerServer`) in front of
  /// the same server, opened with `pooler: .transaction`. Never in `allCases`: only the
  /// suites that compare answers through a pooler with direct ones take it
  /// (``throughPgBouncer``), so the full run stays as fast.
  case pgbouncer

  /// The kinds every shared suite runs on: the in-process stores, the pushdown seam and
  /// the SQL stores (`.postgres` only when its server runs, or must: `CI=true`).
  static var allCases: [StoreKind] {
    [.memory, .array, .log, .indexedMemory, .indexedLog, .pushdownMemory, .sqlite, .indexedSQLite]
      + (PostgresServer.testsRun ? [.postgres] : [])
  }

  /// Every kind, the SQL stores included (the same list as ``allCases``, kept as the name
  /// the SQL suites use).
  static var withSQL: [StoreKind] { allCases }

  /// `[.pgbouncer]` when PgBouncer is installed and PostgreSQL's tests run, else none: the
  /// kinds the relationship differential, live and async suites add to their arguments.
  static var throughPgBouncer: [StoreKind] { PgBouncerServer.testsRun ? [.pgbouncer] : [] }

  /// ``withSQL`` without the read-only array.
  static var writableWithSQL: [StoreKind] { withSQL.filter { $0 != .array } }

  var description: String { rawValue }

  /// How `explain()` names this backend's records.
  var sourceName: String {
    switch self {
    case .memory, .indexedMemory: return "MemoryStore<Animal>"
    case .array: return "Array<Animal>"
    case .log, .indexedLog: return "LogStore<Animal>"
    case .sqlite, .indexedSQLite: return "SQLiteStore<Animal>"
    case .pushdownMemory: return "PushdownMemoryStore<Animal>"
    case .postgres, .pgbouncer: return "PostgresStore<Animal>"
    }
  }

  /// The stores that hand their commits to live sets through the in-process feed (a
  /// database server's store learns of commits from the server instead).
  static var publishingThroughAFeed: [StoreKind] { writable.filter { $0 != .postgres } }

  /// The stores whose commits reach a live set synchronously, on the writing thread (the
  /// in-process stores); SQLite's reach it through `commits(polling:)`, from a task.
  static var deliveringSynchronously: [StoreKind] {
    publishingThroughAFeed.filter { $0 != .sqlite && $0 != .indexedSQLite }
  }

  /// Whether the kind's store adopts `QueryPushdownStore`: `explain()` then says what the
  /// store ran and what ran in process, and evaluation runs through the store's reader.
  /// Each pushdown kind adds itself here; the shared suites check the exact explain text
  /// of `.pushdownMemory` and the shape ("pushed to …") of the others.
  var pushesDown: Bool { [.pushdownMemory, .sqlite, .indexedSQLite, .postgres, .pgbouncer].contains(self) }

  /// The kinds that report an unknown key or a value of the wrong kind: every one (the
  /// engine checks a pushed query against the SQL stores' summary of keys and kinds).
  static var checkingKeys: [StoreKind] { allCases }

  /// The kinds that are stores (they take writes).
  static var writable: [StoreKind] { allCases.filter { $0 != .array } }

  /// A fresh, empty store of this kind for `Animal`s.
  func makeStore() throws -> any RecordStore<Animal> {
    try makeStore(of: Animal.self)
  }

  /// A fresh, empty store of this kind for any record type.
  func makeStore<R: Record>(of type: R.Type) throws -> any RecordStore<R> {
    switch self {
    case .memory: return MemoryStore<R>()
    case .log: return try LogStore<R>(path: TemporaryLogDirectory.freshPath())
    case .indexedMemory:
      let store = MemoryStore<R>()
      for key in Self.indexedKeys(R.self) { try store.createIndex(key) }
      for keys in Self.compositeKeys(R.self) { try store.createIndex(keys[0], keys[1], keys[2]) }
      return store
    case .indexedLog:
      let store = try LogStore<R>(path: TemporaryLogDirectory.freshPath())
      for key in Self.indexedKeys(R.self) { try store.createIndex(key) }
      for keys in Self.compositeKeys(R.self) { try store.createIndex(keys[0], keys[1], keys[2]) }
      return store
    case .sqlite: return try SQLiteStore<R>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    case .indexedSQLite:
      let store = try SQLiteStore<R>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
      for key in Self.indexedKeys(R.self) { try store.createIndex(key) }
      for keys in Self.compositeKeys(R.self) { try store.createIndex(keys[0], keys[1], keys[2]) }
      return store
    case .pushdownMemory: return PushdownMemoryStore<R>()
    case .postgres:
      return try PostgresStore<R>(url: PostgresServer.url(), table: PostgresServer.freshTable())
    case .pgbouncer:
      return try PostgresStore<R>(
        url: PgBouncerServer.url(), table: PostgresServer.freshTable(),
        options: PostgresConnectionOptions(pooler: .transaction))
    case .array: preconditionFailure("An array-backed RequestSet has no store; use makeSet(_:).")
    }
  }

  /// The keys the indexed kinds index: most of `Animal`'s, scalar, optional, nested and
  /// array-valued alike, and `Oddity`'s awkward types (Decimal, UInt64, Date, NaN, a
  /// renamed key, an enum, an optional nested key).
  static func indexedKeys<R>(_ type: R.Type) -> [String] {
    if R.self == Animal.self { return ["species", "age", "name", "weight", "nickname", "owner.city", "tags"] }
    if R.self == Oddity.self { return ["price", "big", "when", "ratio", "heading", "mood", "spot.city", "link"] }
    if R.self == Moment.self { return ["at", "ended"] }
    return []
  }

  /// The composite indexes the indexed kinds keep beside ``indexedKeys(_:)``, three keys
  /// each, so every shared suite also runs through composite lookups and walks (a query
  /// holding `species` equal, bounding or sorting by `age`).
  static func compositeKeys<R>(_ type: R.Type) -> [[String]] {
    if R.self == Animal.self { return [["species", "age", "name"], ["owner.city", "nickname", "weight"]] }
    return []
  }

  /// A request set over `records` on this kind of backend.
  func makeSet(_ records: [Animal]) throws -> RequestSet<Animal> {
    switch self {
    case .array:
      return RequestSet(records)
    default:
      let store = try makeStore()
      try store.insert(contentsOf: records)
      return RequestSet(store)
    }
  }
}
