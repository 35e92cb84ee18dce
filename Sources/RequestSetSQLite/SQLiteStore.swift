import Foundation
import RequestSet
import Synchronization
import _RequestSetSQL

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// A store in a SQLite database file that runs queries itself: filters, sorts and windows
/// become one SQL statement, and the engine runs only what SQLite cannot run exactly.
///
/// The file is an ordinary SQLite database any `sqlite3` shell opens. Each store keeps
/// one table (named by `table:`, by default the record type's name) with the columns
/// `seq` (store order), `id`, `body` (the record as JSON) and `plain`, and a row in
/// `requestset_tables` naming the record type and the store's version, and one in
/// `requestset_kinds` with the keys and kinds its records have held (`StoreFieldKinds`).
///
/// ```swift
/// import RequestSet
/// import RequestSetSQLite
///
/// let store = try SQLiteStore<Animal>(path: "/var/lib/zoo/animals.sqlite")
/// try store.insert(Animal(id: 1, name: "Rex", species: "dog", age: 3))
/// try store.createIndex("species")
/// let dogs = RequestSet(store).filter("species", value: "dog")
/// print(dogs.count)   // SELECT count(*) FROM "Animal" WHERE (json_extract(body, '$."species"') = ? …)
/// ```
///
/// ## Installing
/// On Apple platforms nothing: the SDK's SQLite is used. On Linux install the SQLite
/// headers (`apt install libsqlite3-dev` on Debian and Ubuntu; SQLite 3.38 or later), and
/// depend on the `RequestSetSQLite` product.
///
/// ## Semantics
/// Queries answer as `MemoryStore` answers, always: comparisons that SQL runs exactly
/// (equality, ordering of numbers and binary strings, with the engine's rules for nil and
/// for values of different kinds) run natively; text operators, collations other than
/// binary, LIKE, MATCHES, IN, BETWEEN, `@count` and ANY/ALL/NONE run through `rs_cond`,
/// a SQL function the store registers that calls the engine's own test. Values are always
/// bound parameters.
///
/// ## Concurrency
/// The database is in WAL mode: one writer connection (under a lock) and a small pool of
/// reader connections, each holding one read transaction for one evaluation, so a count
/// and the iteration of one set agree even while other connections write. Other
/// connections and processes may write to the same file; ``commits(polling:)`` reports
/// their commits too.
public final class SQLiteStore<Element: Record>: QueryPushdownStore {
  /// The database file's path.
  public let path: String
  /// The table that holds the records.
  public let table: String

  let _quotedTable: String
  /// The database file as other stores name it (see ``location``).
  let _database: String?
  let _writer: Mutex<_SQLiteConnection?>
  let _pool: _SQLitePool

  /// The store's own threads for its async calls, one per pooled reader connection:
  /// SQLite's calls block, so they wait here, never on Swift's cooperative pool.
  ///
  /// ```swift
  /// let n = try await RequestSet(store).filter(\.age > 3).async.fetchCount()
  /// ```
  public let asyncThreads: StoreThreads? = StoreThreads(name: "SQLiteStore", count: 4)
  let _feed = _SQLiteFeed<Element>()
  /// The versions this store committed lately, so its pollers skip them even when their
  /// rows in `requestset_changes` were pruned before a poll read them.
  let _ownVersions = _SQLiteOwnVersions()
  /// How many versions of `requestset_changes` rows a write keeps.
  let _changesKept: Int64
  /// The table's summary of keys and kinds, as last read (see `StoreFieldKinds`).
  let _kinds = SQLFieldKinds()
  /// Marks this store's rows in `requestset_changes`, so its poller does not report its own
  /// commits twice (they are published as they are made).
  let _origin = UUID().uuidString
  /// The store's migrations, the names the table has run, and the first pending one while
  /// writes wait for `migrate()`.
  let _migrationState: Mutex<(migrator: Migrator, applied: [String], hold: String?)>

  /// Opens the SQLite database at `path` (creating the file when there is none) and the
  /// table for `Element` in it (creating it when there is none).
  ///
  /// ```swift
  /// let store = try SQLiteStore<Animal>(path: "animals.sqlite")             // table "Animal"
  /// let archive = try SQLiteStore<Animal>(path: "animals.sqlite", table: "archive")
  /// ```
  /// - Parameters:
  ///   - path: The database file.
  ///   - table: The table's name; by default the record type's name.
  /// - Throws: `RequestSetError` `.schemaMismatch` when the file is not a SQLite database,
  ///   when the table exists but is not RequestSet's, or holds another record type;
  ///   `.readOnly`, `.locked` or `.ioFailure` when the file cannot be written. Nothing is
  ///   written to the file then. `.decodingFailed` when the table's first or last record no
  ///   longer decodes as `Element` (the message names the record and the key; see
  ///   `init(path:table:migrations:migratesOnOpen:)` to migrate it).
  public convenience init(path: String, table: String? = nil) throws {
    try self.init(path: path, table: table, changesKept: 8192)
  }

  /// - Parameter changesKept: How many versions of `requestset_changes` rows a write
  ///   keeps (older ones are pruned every 256 versions); small in tests of the pollers.
  init(
    path: String, table: String?, changesKept: Int64, migrations: Migrator = Migrator(),
    migratesOnOpen: Bool = true
  ) throws {
    _changesKept = changesKept
    let name = table ?? String(describing: Element.self)
    self.path = path
    self.table = name
    _quotedTable = try SQLJSON.quoteIdentifier(name)
    let connection = try _SQLiteConnection(path: path, create: true)
    // After opening: the file exists, so its links resolve as they will for other stores.
    _database = Self._database(path)
    // The schema is checked (and made) before WAL mode, which rewrites the file's header:
    // a file that is not ours is left exactly as it was.
    try migrations.validate()
    try Self._prepareSchema(connection, table: name, quoted: _quotedTable, migrations: migrations)
    try connection.execute("PRAGMA journal_mode=WAL", doing: "switch to WAL mode")
    var applied = try Self._applied(connection, table: name)
    var hold: String?
    if let next = migrations.pending(after: applied).first {
      if migratesOnOpen {
        applied +=
          try Self._runMigrations(connection, table: name, quoted: _quotedTable, migrator: migrations)?.names
          ?? []
      } else {
        hold = next.name
      }
    }
    if hold == nil { try Self._checkOpenDecoding(connection, table: name, quoted: _quotedTable) }
    _migrationState = Mutex((migrations, applied, hold))
    _writer = Mutex(connection)
    _pool = _SQLitePool(path: path)
  }

  private static func _prepareSchema(
    _ c: _SQLiteConnection, table: String, quoted: String, migrations: Migrator
  ) throws {
    let type = String(describing: Element.self)
    try c.writeTransaction {
      try c.execute(
        """
        CREATE TABLE IF NOT EXISTS requestset_tables(name TEXT PRIMARY KEY, type TEXT NOT NULL,
          format INTEGER NOT NULL, version INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS requestset_changes(version INTEGER NOT NULL, tbl TEXT NOT NULL,
          op TEXT NOT NULL, id TEXT NOT NULL, origin TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS requestset_changes_by_version ON requestset_changes(tbl, version);
        CREATE TABLE IF NOT EXISTS requestset_migrations(tbl TEXT NOT NULL, name TEXT NOT NULL, applied TEXT NOT NULL,
          PRIMARY KEY(tbl, name));
        \(SQLFieldKinds.createTable);
        """, doing: "create RequestSet's metadata tables")
      let exists = try c.prepare("SELECT type FROM sqlite_master WHERE name = ? COLLATE NOCASE")
      try exists.bind([.text(table)])
      let found = try exists.step(doing: "read the schema") ? exists.text(0) : nil
      let meta = try c.prepare("SELECT type FROM requestset_tables WHERE name = ?")
      try meta.bind([.text(table)])
      let owner = try meta.step(doing: "read requestset_tables") ? meta.text(0) : nil
      if let found {
        guard found == "table", let owner else {
          throw RequestSetError(
            .schemaMismatch,
            "The database \(c.path) already has a \(found) named \(table) that is not a RequestSet table (it has no "
              + "row in requestset_tables). Pass another table: name, or open another file; nothing was changed."
          )
        }
        // Another type's table opens as dynamic records, or while migrations are pending
        // that make it this type's.
        // (a migrator that lists a migration the table ran, or one it has not, vouches for
        // the new type: the table becomes this type's, and opening checks its records decode).
        let applied = try _applied(c, table: table)
        let migrating =
          !migrations.migrations.isEmpty
          && (!migrations.pending(after: applied).isEmpty
            || migrations.migrations.contains { applied.contains($0.name) })
        guard owner == type || Element.self == DynamicRecord.self || migrating else {
          throw RequestSetError(
            .schemaMismatch,
            "The table \(table) in \(c.path) holds \(owner) records, not \(type). Pass table: with another name "
              + "for \(type), or open it as SQLiteStore<\(owner)>; nothing was changed.")
        }
        if owner != type && Element.self != DynamicRecord.self && migrations.pending(after: applied).isEmpty {
          let retype = try c.prepare("UPDATE requestset_tables SET type = ? WHERE name = ?")
          try retype.bind([.text(type), .text(table)])
          try retype.run(doing: "record the table's new record type")
        }
        try _rebuildKindsIfMissing(c, table: table, quoted: quoted)
        return
      }
      try c.execute(
        """
        CREATE TABLE \(quoted)(seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, body TEXT NOT NULL,
          plain INTEGER NOT NULL);
        CREATE INDEX \(try SQLJSON.quoteIdentifier(table + "_requestset_not_plain")) ON \(quoted)(seq) WHERE NOT plain;
        """, doing: "create the table \(table)")
      let insert = try c.prepare(
        "INSERT INTO requestset_tables(name, type, format, version) VALUES (?, ?, 1, 0) "
          + "ON CONFLICT(name) DO UPDATE SET type = excluded.type")
      try insert.bind([.text(table), .text(type)])
      try insert.run(doing: "record the table in requestset_tables")
      try _writeKinds(c, table: table, text: StoreFieldKinds().encodedText())
    }
  }

  /// Writes the table's summary of keys and kinds (see `StoreFieldKinds`).
  static func _writeKinds(_ c: _SQLiteConnection, table: String, text: String) throws {
    let statement = try c.cached(
      "INSERT INTO requestset_kinds(name, kinds) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET kinds = excluded.kinds"
    )
    try statement.bind([.text(table), .text(text)])
    try statement.run(doing: "record the keys and kinds of \(table)")
  }

  /// The table's summary of keys and kinds as stored, or nil when it has none.
  static func _storedKinds(_ c: _SQLiteConnection, table: String) throws -> String? {
    let statement = try c.cached("SELECT kinds FROM requestset_kinds WHERE name = ?")
    try statement.bind([.text(table)])
    let text = try statement.step(doing: "read the keys and kinds of \(table)") ? statement.text(0) : nil
    sqlite3_reset(statement.pointer)
    return text
  }

  /// Makes the summary of a table written before summaries were kept, from its rows.
  private static func _rebuildKindsIfMissing(_ c: _SQLiteConnection, table: String, quoted: String) throws {
    guard try _storedKinds(c, table: table) == nil else { return }
    try _writeKinds(c, table: table, text: _kindsFromRows(c, table: table, quoted: quoted).encodedText())
  }

  /// The summary of keys and kinds of the table's rows as they are, read from every row.
  static func _kindsFromRows(_ c: _SQLiteConnection, table: String, quoted: String) throws -> StoreFieldKinds
  {
    var kinds = StoreFieldKinds()
    let rows = try c.prepare("SELECT body FROM \(quoted) ORDER BY seq")
    while try rows.step(doing: "read \(table) to learn its keys") {
      kinds.note(try SQLJSON.decode(rows.text(0)), as: Element.self)
    }
    return kinds
  }

  // MARK: Writing

  /// Appends a record.
  ///
  /// ```swift
  /// try store.insert(Animal(id: 1, name: "Rex", species: "dog", age: 3))
  /// ```
  /// - Parameter record: The record; its id must not be stored yet.
  /// - Throws: `RequestSetError` `.duplicateID` when the id is stored; `.closed`,
  ///   `.locked`, `.ioFailure`.
  public func insert(_ record: Element) throws {
    try apply([.insert(record)], ifVersion: nil)
  }

  /// Appends records in one transaction with one prepared statement.
  ///
  /// ```swift
  /// try store.insert(contentsOf: herd)
  /// ```
  /// - Parameter records: The records, in the order they take in the store.
  /// - Throws: `RequestSetError` `.duplicateID` when an id is stored or repeats; nothing
  ///   is inserted then.
  public func insert(contentsOf records: some Sequence<Element>) throws {
    try apply(records.map { .insert($0) }, ifVersion: nil)
  }

  /// Stores a record, replacing the one with its id in place (it keeps its position).
  ///
  /// ```swift
  /// rex.age = 4
  /// try store.save(rex)
  /// ```
  /// - Parameter record: The record.
  /// - Throws: `RequestSetError` `.closed`, `.locked`, `.uniqueViolation`.
  public func save(_ record: Element) throws {
    try apply([.save(record)], ifVersion: nil)
  }

  /// Deletes the record with `id`.
  ///
  /// ```swift
  /// try store.delete(id: 1)   // true
  /// ```
  /// - Parameter id: The id.
  /// - Returns: Whether a record was deleted.
  /// - Throws: `RequestSetError` `.closed`, `.locked`.
  @discardableResult
  public func delete(id: Element.ID) throws -> Bool {
    let key = try _idText(id)
    let outcome: (Bool, UInt64)? = try _write { c in
      let statement = try c.cached("DELETE FROM \(_quotedTable) WHERE id = ?")
      try statement.bind([.text(key)])
      try statement.run(doing: "delete a record")
      guard sqlite3_changes(c.handle) > 0 else { return nil }
      let version = try _bump(c)
      try _log(c, version, [("delete", key)])
      return (true, version)
    }
    guard let (_, version) = outcome else { return false }
    _publish(StoreCommit(version: version, changes: [.delete(id: id)]))
    return true
  }

  /// Applies `changes` in one write transaction, in order, when the store's version is
  /// still `expectedVersion` (checked inside the transaction); nothing is written when one
  /// fails.
  ///
  /// ```swift
  /// let snapshot = try store.snapshot()
  /// try store.apply([.save(rex), .delete(id: 2)], ifVersion: snapshot.version)
  /// ```
  /// - Parameters:
  ///   - changes: Inserts, saves and deletes.
  ///   - expectedVersion: The version the changes were computed from, or nil to write
  ///     unconditionally.
  /// - Throws: `RequestSetError` `.conflict` when another write came first,
  ///   `.duplicateID`, `.uniqueViolation`, `.closed`, `.locked`.
  public func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    // Encode outside the lock: it is the expensive part, and it can fail.
    var rows: [(op: String, id: String, body: String, plain: Bool)] = []
    rows.reserveCapacity(changes.count)
    var written: [FieldValue] = []
    written.reserveCapacity(changes.count)
    for change in changes {
      switch change {
      case .insert(let r), .save(let r):
        let fields = try FieldValue(encoding: r)
        written.append(fields)
        let body = SQLJSON.encode(fields)
        let op = { if case .insert = change { return "insert" } else { return "save" } }()
        rows.append((op, try _idText(r.id), body.text, body.plain))
      case .delete(let id):
        rows.append(("delete", try _idText(id), "", true))
      }
    }
    if changes.isEmpty {
      return try _writer.withLock { c in guard c != nil else { throw _closed() } }
    }
    let kinds = _kinds.noting(written, as: Element.self)
    let version: UInt64 = try _write { c in
      if let expectedVersion {
        let current = try _version(c)
        if current != expectedVersion {
          throw RequestSetError(
            .conflict,
            "The store changed (version \(current), expected \(expectedVersion)) between reading and writing; "
              + "nothing was written. Read again and retry.")
        }
      }
      let insert = try c.cached("INSERT INTO \(_quotedTable)(id, body, plain) VALUES (?, ?, ?)")
      var touched: Set<String> = []
      for (i, row) in rows.enumerated() {
        let statement: _SQLiteStatement
        switch row.op {
        case "insert":
          statement = insert
          sqlite3_reset(insert.pointer)
        case "save":
          statement = try c.cached(
            "INSERT INTO \(_quotedTable)(id, body, plain) VALUES (?, ?, ?) "
              + "ON CONFLICT(id) DO UPDATE SET body = excluded.body, plain = excluded.plain")
        default:
          statement = try c.cached("DELETE FROM \(_quotedTable) WHERE id = ?")
        }
        try statement.bind(.text(row.id), at: 1)
        if row.op != "delete" {
          try statement.bind(.text(row.body), at: 2)
          try statement.bind(.int(row.plain ? 1 : 0), at: 3)
        }
        do {
          try statement.run(doing: "write a record")
        } catch let error as RequestSetError where error.code == .uniqueViolation {
          sqlite3_reset(statement.pointer)
          if row.op == "insert",
            try error.message.contains("constraint failed: \(table).id") || _isStored(c, row.id)
          {
            let id = changes[i].id
            throw RequestSetError(
              .duplicateID,
              touched.contains(row.id)
                ? "The batch holds id \(id) twice. Give each record its own id; nothing was inserted."
                : "A record with id \(id) is already stored. Use save(_:) to replace it, or give the new record "
                  + "another id.")
          }
          throw RequestSetError(
            .uniqueViolation,
            "Writing the record with id \(changes[i].id) would repeat a value of a unique index on \(table) "
              + "(\(error.message)). Change the value, or drop the unique index; nothing was written.")
        }
        touched.insert(row.id)
      }
      if let text = try _kinds.merged(stored: Self._storedKinds(c, table: table), batch: kinds) {
        try Self._writeKinds(c, table: table, text: text)
      }
      let version = try _bump(c)
      try _log(c, version, rows.map { ($0.op, $0.id) })
      return version
    }
    _publish(StoreCommit(version: version, changes: changes))
  }

  /// Runs `body` in a write transaction on the writer connection and returns its result.
  func _write<T: Sendable>(_ body: (_SQLiteConnection) throws -> T) throws -> T {
    try _checkMigrated()
    return try _writer.withLock { connection in
      guard let c = connection else { throw _closed() }
      return try c.writeTransaction { try body(c) }
    }
  }

  /// Bumps the store's version inside the current write transaction and returns it.
  func _bump(_ c: _SQLiteConnection) throws -> UInt64 {
    let statement = try c.cached(
      "UPDATE requestset_tables SET version = version + 1 WHERE name = ? RETURNING version")
    try statement.bind([.text(table)])
    guard try statement.step(doing: "bump the version") else {
      throw RequestSetError(
        .schemaMismatch,
        "The row of \(table) in requestset_tables is gone; another program changed the database. Reopen the store."
      )
    }
    let version = UInt64(statement.int(0))
    _ = try statement.step(doing: "bump the version")
    return version
  }

  /// The biggest batch whose ids the change table keeps; a bigger one is logged as one
  /// `many` row, and observers in other processes get it without changes (they reload).
  static var _loggedChangesLimit: Int { 10_000 }

  /// Records the changes of `version` for other connections' observers, and prunes old ones.
  func _log(_ c: _SQLiteConnection, _ version: UInt64, _ changes: [(op: String, id: String)]) throws {
    let statement = try c.cached(
      "INSERT INTO requestset_changes(version, tbl, op, id, origin) VALUES (?, ?, ?, ?, ?)")
    let logged = changes.count <= Self._loggedChangesLimit ? changes : [("many", "")]
    for change in logged {
      sqlite3_reset(statement.pointer)
      try statement.bind([
        .int(Int64(version)), .text(table), .text(change.op), .text(change.id), .text(_origin),
      ])
      try statement.run(doing: "record a change")
    }
    if version % 256 == 0 {
      let prune = try c.cached("DELETE FROM requestset_changes WHERE tbl = ? AND version <= ?")
      try prune.bind([.text(table), .int(Int64(version) - _changesKept)])
      try prune.run(doing: "prune old changes")
    }
  }

  /// Whether a row with this id text is stored (in the current transaction's view).
  func _isStored(_ c: _SQLiteConnection, _ id: String) throws -> Bool {
    let statement = try c.cached("SELECT 1 FROM \(_quotedTable) WHERE id = ?")
    try statement.bind([.text(id)])
    defer { sqlite3_reset(statement.pointer) }
    return try statement.step(doing: "look up an id")
  }

  func _version(_ c: _SQLiteConnection) throws -> UInt64 {
    let statement = try c.cached("SELECT version FROM requestset_tables WHERE name = ?")
    try statement.bind([.text(table)])
    guard try statement.step(doing: "read the version") else {
      throw RequestSetError(
        .schemaMismatch,
        "The row of \(table) in requestset_tables is gone; another program changed the database. Reopen the store."
      )
    }
    let version = UInt64(statement.int(0))
    sqlite3_reset(statement.pointer)
    return version
  }

  func _idText(_ id: Element.ID) throws -> String {
    SQLJSON.encode(try FieldValue(encoding: id)).text
  }

  func _closed() -> RequestSetError {
    RequestSetError(
      .closed,
      "The SQLiteStore<\(Element.self)> on \(path) was closed and reads and writes nothing any more. Request sets "
        + "evaluated before close() keep their records; open a new store to go on.")
  }

  // MARK: Reading

  /// The record with `id`, or nil.
  ///
  /// ```swift
  /// let rex = try store.fetch(id: 1)
  /// ```
  /// - Parameter id: The id.
  /// - Returns: The record, or nil when none has that id.
  /// - Throws: `RequestSetError` `.closed`, `.decodingFailed`.
  public func fetch(id: Element.ID) throws -> Element? {
    let key = try _idText(id)
    let body: String? = try _writer.withLock { connection in
      guard let c = connection else { throw _closed() }
      let statement = try c.cached("SELECT body FROM \(_quotedTable) WHERE id = ?")
      try statement.bind([.text(key)])
      return try statement.step(doing: "fetch a record") ? statement.text(0) : nil
    }
    return try body.map { try _decodeRecord($0) }
  }

  /// Every record in store order, with the store's version, read in one transaction.
  ///
  /// ```swift
  /// let all = try store.snapshot()   // all.count, all.version
  /// ```
  /// - Returns: The snapshot.
  /// - Throws: `RequestSetError` `.closed`, `.decodingFailed`.
  public func snapshot() throws -> StoreSnapshot<Element> {
    let reader = try _openReader()
    var records: [Element] = []
    try reader.records(StoreQuery()) {
      records.append($0)
      return true
    }
    return StoreSnapshot(records: records, version: reader.version)
  }

  /// A reader holding one read transaction for one evaluation.
  ///
  /// ```swift
  /// let reader = try store.queryReader()
  /// let n = try reader.count(StoreQuery())
  /// ```
  /// - Returns: The reader; its transaction ends when it is released.
  /// - Throws: `RequestSetError` `.closed`, `.locked`.
  public func queryReader() throws -> any StoreQueryReader<Element> {
    try _openReader()
  }

  /// The database file and the store's table in it. Stores of a `RecordGraph` in one
  /// file (`SQLiteStore(path: same, table: "owners")`) answer a condition through a
  /// relation in one statement, as a subquery on the related table; stores in two files
  /// read the related ids first. Nil for an in-memory database, which no other connection
  /// sees.
  ///
  /// ```swift
  /// let owners = try SQLiteStore<Owner>(path: "zoo.sqlite", table: "owners")
  /// owners.location?.table   // "owners"
  /// ```
  public var location: StoreLocation? { _database.map { StoreLocation(database: $0, table: table) } }

  /// `sqlite:` and the file's canonical path (symbolic links resolved), so two spellings
  /// of one file name one database; nil for `:memory:` and URI file names.
  static func _database(_ path: String) -> String? {
    guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return nil }
    return "sqlite:" + URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
  }

  func _openReader() throws -> _SQLiteReader<Element> {
    if _writer.withLock({ $0 == nil }) { throw _closed() }
    return try _SQLiteReader(store: self)
  }

  func _decodeRecord(_ text: String) throws -> Element {
    try SQLJSON.decodeRecord(Element.self, text: text, in: "the table \(table) of \(path)")
  }

  // MARK: Indexes

  /// Creates an index on `key`'s JSON value: a SQLite expression index that queries on the
  /// key use (see `explain()`).
  ///
  /// ```swift
  /// try store.createIndex("owner.city")
  /// // CREATE INDEX "Animal_requestset_…" ON "Animal"(json_extract(body, '$."owner"."city"'))
  /// ```
  /// - Parameters:
  ///   - key: A string key, dotted for nested fields.
  ///   - unique: Whether two records may not share a (non-nil) value.
  /// - Throws: `RequestSetError` `.uniqueViolation` when `unique` and stored records
  ///   repeat a value; `.invalidIndex` when the key holds a quote, a backslash or U+0000,
  ///   which SQLite's JSON paths cannot spell; `.closed`.
  public func createIndex(_ key: String, unique: Bool = false) throws {
    let (name, path) = try _index(key)
    do {
      try _write { c in
        try c.execute(
          "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(name) ON \(_quotedTable)(json_extract(body, \(path)))",
          doing: "create an index on \(key)")
      }
    } catch let error as RequestSetError where error.code == .uniqueViolation {
      throw RequestSetError(
        .uniqueViolation,
        "Stored records repeat a value of \(key), so a unique index cannot be built. Make the values unique, or "
          + "create the index without unique:; nothing was changed.")
    }
  }

  /// Creates a composite expression index on several keys' JSON values, in order: queries
  /// that hold the first keys equal and bound or sort by the next use it (see `explain()`,
  /// which shows SQLite's plan).
  ///
  /// ```swift
  /// try store.createIndex("species", "age")
  /// // CREATE INDEX "Animal_requestset_…" ON "Animal"(json_extract(body, '$."species"'),
  /// //                                              json_extract(body, '$."age"'))
  /// ```
  /// - Parameters:
  ///   - first: The key the index orders by first: a string key, dotted for nested fields.
  ///   - second: The key that orders rows with the same `first` value.
  ///   - more: Further keys.
  ///   - unique: Whether two records may not share the values of every key (a row with
  ///     nil for any key is exempt, as in SQL).
  /// - Throws: `RequestSetError` `.uniqueViolation` when `unique` and stored records
  ///   repeat the values; `.invalidIndex` for a key named twice, or one holding a quote, a
  ///   backslash or U+0000; `.closed`.
  public func createIndex(_ first: String, _ second: String, _ more: String..., unique: Bool = false) throws {
    try createIndex(on: [first, second] + more, unique: unique)
  }

  /// Creates an index on the keys a list names: one key, or a composite index on several
  /// (see ``createIndex(_:_:_:unique:)``), for keys known only at run time.
  ///
  /// ```swift
  /// try store.createIndex(on: ["species", "age"])
  /// ```
  /// - Throws: `RequestSetError` `.invalidIndex` for an empty list, and whatever the
  ///   one-key and composite forms throw.
  public func createIndex(on keys: [String], unique: Bool = false) throws {
    if keys.count == 1 { return try createIndex(keys[0], unique: unique) }
    let (name, paths) = try _compositeIndex(keys)
    let columns = paths.map { "json_extract(body, \($0))" }.joined(separator: ", ")
    do {
      try _write { c in
        try c.execute(
          "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(name) ON \(_quotedTable)(\(columns))",
          doing: "create an index on \(keys.joined(separator: ", "))")
      }
    } catch let error as RequestSetError where error.code == .uniqueViolation {
      throw RequestSetError(
        .uniqueViolation,
        "Stored records repeat the values of \(keys.joined(separator: ", ")), so a unique index cannot be built. Make "
          + "them unique, or create the index without unique:; nothing was changed.")
    }
  }

  /// Drops the composite index on these keys, in this order; nothing happens when there is none.
  ///
  /// ```swift
  /// try store.dropIndex("species", "age")
  /// ```
  /// - Throws: `RequestSetError` `.invalidIndex` for keys no index can have; `.closed`.
  public func dropIndex(_ first: String, _ second: String, _ more: String...) throws {
    let keys = [first, second] + more
    let (name, _) = try _compositeIndex(keys)
    try _write { c in
      try c.execute(
        "DROP INDEX IF EXISTS \(name)", doing: "drop the index on \(keys.joined(separator: ", "))")
    }
  }

  /// The name of the composite index on `keys` and the JSON path literal of each key.
  private func _compositeIndex(_ keys: [String]) throws -> (name: String, paths: [String]) {
    try RequestIndex(keys: keys, unique: false).checkKeys(for: Element.self)
    let paths = try keys.map { try Self._indexName($0, table: table).path }
    // Named by the keys joined with U+001F, as in-process stores name it.
    return (try Self._indexName(keys.joined(separator: "\u{1F}"), table: table).name, paths)
  }

  /// Drops the index on `key`; nothing happens when there is none.
  ///
  /// ```swift
  /// try store.dropIndex("owner.city")
  /// ```
  /// - Parameter key: The key the index was created on.
  /// - Throws: `RequestSetError` `.invalidIndex` for a key no index can have; `.closed`.
  public func dropIndex(_ key: String) throws {
    let (name, _) = try _index(key)
    try _write { c in try c.execute("DROP INDEX IF EXISTS \(name)", doing: "drop the index on \(key)") }
  }

  /// The indexes ``createIndex(_:unique:)`` and its composite forms made on the store's
  /// table (by this build or an older one), in the order they were made, read from the
  /// database file. The text index is ``textIndexKeys()``.
  ///
  /// ```swift
  /// try store.createIndex("species", "age")
  /// try store.indexes().map(\.keys)   // [["species", "age"]]
  /// ```
  /// - Throws: `RequestSetError` `.closed`.
  public func indexes() throws -> [RequestIndex] {
    if _writer.withLock({ $0 == nil }) { throw _closed() }
    let c = try _pool.take()
    defer { _pool.give(c) }
    return try Self._madeIndexes(c, table: table).map { RequestIndex(keys: $0.keys, unique: $0.unique) }
  }

  private func _index(_ key: String) throws -> (name: String, path: String) {
    try Self._indexName(key, table: table)
  }

  /// The name of the expression index on `key`, and the JSON path literal it indexes.
  static func _indexName(_ key: String, table: String) throws -> (name: String, path: String) {
    guard let path = _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: key)) else {
      throw RequestSetError(
        .invalidIndex,
        "The key \(key.debugDescription.prefix(200)) holds a quote or U+0000, which SQLite's JSON "
          + "paths cannot spell, so it cannot be indexed. Rename the field; queries on it still work.")
    }
    // A hash keeps the name short and free of the key's characters; FNV-1a, 64 bits.
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return (try SQLJSON.quoteIdentifier("\(table)_requestset_\(String(hash, radix: 16))"), path)
  }

  // MARK: Writes through a query

  /// Deletes every record `query` matches in one transaction (one DELETE statement) and
  /// returns how many; nil when the query is not exact on this store.
  ///
  /// ```swift
  /// try store.delete(matching: StoreQuery(filter: .condition(try StoreCondition("age", .greaterThan, 12))))
  /// ```
  /// - Parameter query: The records to delete; a window makes it return nil.
  /// - Returns: How many records were deleted, or nil.
  /// - Throws: `RequestSetError` `.closed`, `.locked`.
  public func delete(matching query: StoreQuery) throws -> Int? {
    guard query.offset == 0, query.limit == nil, query.sort.isEmpty, query.distinct == nil else { return nil }
    let outcome: (UInt64, [String])? = try _write { c in
      let notPlain = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(_quotedTable) WHERE NOT plain)")
      if try notPlain.step(doing: "check for rows SQL cannot compare"), notPlain.int(0) != 0 { return nil }
      func statement(_ verb: String) -> _SQLiteConnection.Build {
        { opaque in
          var clause = _SQLiteTranslation.whereClause(query.filter, nonPlain: false, opaque: opaque)
          clause.sql = "\(verb) FROM \(self._quotedTable)\(clause.sql)"
          return clause
        }
      }
      let (select, selected) = try c.prepare(statement("SELECT id"))
      try select.bind(selected.bindings)
      var ids: [String] = []
      while try select.step(doing: "find the records to delete") { ids.append(select.text(0)) }
      guard !ids.isEmpty else { return (0, []) }
      let (delete, deleted) = try c.prepare(statement("DELETE"))
      try delete.bind(deleted.bindings)
      try delete.run(doing: "delete records")
      let version = try _bump(c)
      try _log(c, version, ids.map { ("delete", $0) })
      return (version, ids)
    }
    guard let (version, ids) = outcome else { return nil }
    guard !ids.isEmpty else { return 0 }
    let changes = try ids.map {
      RecordChange<Element>.delete(id: try SQLJSON.decode($0).decode(Element.ID.self))
    }
    _publish(StoreCommit(version: version, changes: changes))
    return ids.count
  }

  /// Sets `assignments` on every record `query` matches with one `UPDATE … json_set`, in
  /// one transaction, and returns how many records changed; nil (the engine then writes
  /// record by record) when the query is not exact here, an assignment is to `id` or to a
  /// nested key, or a value has no exact JSON twin.
  ///
  /// The engine checks each assignment's key and value against the table's keys and kinds
  /// first; every updated record is decoded as `Element` before the commit, so a value the
  /// record cannot hold (nil for a field that is not optional) rolls the whole update back.
  ///
  /// ```swift
  /// try animals.filter("species", value: "Cow").update("species", value: "Bovine")   // one UPDATE
  /// ```
  /// - Returns: How many records changed, or nil.
  /// - Throws: `RequestSetError` `.decodingFailed` (nothing written), `.closed`, `.locked`.
  public func update(matching query: StoreQuery, set assignments: [(key: String, value: FieldValue)]) throws
    -> Int?
  {
    guard query.offset == 0, query.limit == nil, query.sort.isEmpty, query.distinct == nil,
      !assignments.isEmpty
    else { return nil }
    var setters: [String] = []
    var values: [_SQLiteBinding] = []
    for (key, value) in assignments {
      let names = FieldValue.fieldNames(inKey: key)
      let encoded = SQLJSON.encode(value)
      guard names.count == 1, names[0] != "id", encoded.plain,
        let path = _SQLiteTranslation.pathLiteral(names)
      else {
        return nil
      }
      setters.append("\(path), json(?)")
      values.append(.text(encoded.text))
    }
    let outcome: (UInt64, [Element])? = try _write { c in
      let notPlain = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(_quotedTable) WHERE NOT plain)")
      if try notPlain.step(doing: "check for rows SQL cannot compare"), notPlain.int(0) != 0 { return nil }
      let (update, clause) = try c.prepare { opaque in
        var clause = _SQLiteTranslation.whereClause(query.filter, nonPlain: false, opaque: opaque)
        clause.sql =
          "UPDATE \(self._quotedTable) SET body = json_set(body, \(setters.joined(separator: ", ")))\(clause.sql) "
          + "RETURNING id, body"
        return clause
      }
      try update.bind(values + clause.bindings)
      var changed: [(id: String, record: Element)] = []
      var bodies: [FieldValue] = []
      while try update.step(doing: "update records") {
        let body = try SQLJSON.decode(update.text(1))
        changed.append((update.text(0), try _decodeUpdated(body)))
        bodies.append(body)
      }
      guard !changed.isEmpty else { return (0, []) }
      // A key that held only nil may hold a value now.
      if let text = try _kinds.merged(
        stored: Self._storedKinds(c, table: table), batch: _kinds.noting(bodies, as: Element.self))
      {
        try Self._writeKinds(c, table: table, text: text)
      }
      let version = try _bump(c)
      try _log(c, version, changed.map { ("save", $0.id) })
      return (version, changed.map(\.record))
    }
    guard let (version, records) = outcome else { return nil }
    guard !records.isEmpty else { return 0 }
    _publish(StoreCommit(version: version, changes: records.map { .save($0) }))
    return records.count
  }

  /// A record an update wrote, decoded as the engine decodes an updated record.
  private func _decodeUpdated(_ fields: FieldValue) throws -> Element {
    do {
      return try fields.decode(Element.self)
    } catch {
      throw RequestSetError(
        .decodingFailed,
        "update cannot make \(Element.self) from \(fields) (\(error)). Use update { … } with a closure to supply "
          + "the other fields; nothing was written.",
        underlying: error)
    }
  }

  // MARK: Closing

  /// Closes the store's connections; later reads and writes throw `.closed`, and commit
  /// streams end. Readers already open finish their evaluation.
  ///
  /// ```swift
  /// store.close()
  /// ```
  public func close() {
    let wasOpen = _writer.withLock { connection in
      defer { connection = nil }
      return connection != nil
    }
    guard wasOpen else { return }
    _pool.close()
    _feed.finish()
  }

  deinit {
    _feed.finish()
  }
}

/// Idle reader connections, reused by later readers.
final class _SQLitePool: Sendable {
  let path: String
  private let idle = Mutex<(connections: [_SQLiteConnection], closed: Bool)>(([], false))

  init(path: String) { self.path = path }

  func take() throws -> _SQLiteConnection {
    let reused = idle.withLock { state -> _SQLiteConnection? in state.connections.popLast() }
    return try reused ?? _SQLiteConnection(path: path, create: false)
  }

  func give(_ connection: _SQLiteConnection) {
    idle.withLock { state in
      if !state.closed && state.connections.count < 4 { state.connections.append(connection) }
    }
  }

  func close() {
    idle.withLock { state in
      state.connections = []
      state.closed = true
    }
  }
}
