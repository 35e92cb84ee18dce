import CLibPQ
import RequestSet
import Synchronization
import _RequestSetSQL

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A store of records in a PostgreSQL table, for apps that run on several machines
/// against one database: the server runs the filters, sorts, counts and writes itself.
///
/// Each store keeps one table (named by `table:`, by default the record type's name) with
/// the columns `seq` (store order), `id`, `body` (the record's fields as `jsonb`) and
/// `plain`; the table `requestset_tables` says which type each table holds and counts its
/// writes, and `requestset_kinds` keeps the keys and kinds its records have held
/// (`StoreFieldKinds`). Values are always bound parameters, and keys reach SQL only as bound `text[]`
/// paths or quoted through a tested function. The store opens at most `connections:`
/// sessions on the server, for everything it does: writes, single reads, each evaluation's
/// read transaction, sync and async calls alike; a call waits while all are busy rather
/// than open another, and ``close()`` ends them all. The store outlives a server restart:
/// what is in flight fails with `.connectionFailed` and writes nothing, and the next call
/// connects again.
///
/// ```swift
/// let store = try PostgresStore<Animal>(url: "postgresql://app@db.example.com/zoo?sslmode=require")
/// try store.insert(Animal(id: 1, name: "Micky", age: 3))
/// let old = RequestSet(store).filter("age", .greaterThan, 2)   // WHERE … runs on the server
/// ```
///
/// The connection string is a libpq URI or `key=value` string; every libpq setting
/// (`sslmode`, `connect_timeout`, …) passes through. Descriptions, errors and `explain()`
/// show it with the password replaced by `***`.
///
/// No call waits for the server forever: a connection must open within 30 s and a
/// statement finish within 300 s (the server cancels it; a server too frozen to do that is
/// given up on a second later), and idle connections send TCP keepalives. Each is a
/// setting of ``PostgresConnectionOptions``:
///
/// ```swift
/// let store = try PostgresStore<Animal>(url: url, options: PostgresConnectionOptions(statementTimeout: .seconds(5)))
/// ```
///
/// Reads can go to hot standbys of the primary, writes staying on the primary; a read
/// after this store's write sees it (see ``PostgresConnectionOptions/replicas``):
///
/// ```swift
/// let store = try PostgresStore<Animal>(
///   url: "postgresql://app@primary.example.com/zoo",
///   options: PostgresConnectionOptions(replicas: ["postgresql://app@standby1.example.com/zoo"]))
/// ```
public final class PostgresStore<Element: Record>: QueryPushdownStore, CustomStringConvertible {
  let _pool: _PGPool
  /// The hot standbys reads go to, if any (see ``PostgresConnectionOptions/replicas``).
  let _replicas: _PGReplicas?
  /// The store's own threads for its async calls, as many as its connections: libpq's
  /// calls block, so they wait here, never on Swift's cooperative pool.
  ///
  /// ```swift
  /// let n = try await RequestSet(store).filter(\.age > 3).async.fetchCount()
  /// ```
  public let asyncThreads: StoreThreads?
  /// The table's name, as given.
  let _table: String
  /// The table's name as a quoted SQL identifier.
  let _quoted: String
  /// The table's summary of keys and kinds, as last read (see `StoreFieldKinds`).
  let _fieldKinds = SQLFieldKinds()
  /// The store's migrations, the names the table has run, and the first pending one while
  /// writes wait for `migrate()`.
  let _migrationState: Mutex<(migrator: Migrator, applied: [String], hold: String?)>
  /// Which sort keys hold arrays or objects, per table version (see `_PostgresReader`).
  let _collectionKeys = _PGCollectionKeys()
  /// The keys of the table's text index as the write transaction under way read them, for
  /// its inserts to write their rows' words at once (see `_words(_:)`). Set by
  /// `_writeOnce` after it locks the table's metadata row, and read only by the body it
  /// runs next under that lock: every writer of the table takes the lock first, so no
  /// other write sets it in between.
  let _writingTextKeys = Mutex<[String]?>(nil)
  /// Which keys of which tables hold integers and doubles beyond 2^53, per table version
  /// (see `_subqueryProblem`).
  let _bigNumberKeys = _PGBigNumberKeys()
  /// The database as ``location`` names it, read from the first connection.
  let _database: String
  /// How many write attempts were run again after a serialization failure or deadlock
  /// (tests count them).
  let _conflictRetries = Atomic<Int>(0)

  /// The format number `requestset_tables` records for this row layout.
  static var _format: Int { 1 }

  /// Opens (and creates if needed) the store's table in the database at `url`.
  ///
  /// ```swift
  /// let store = try PostgresStore<Animal>(url: "host=localhost dbname=zoo user=app", table: "animals")
  /// ```
  ///
  /// - Parameters:
  ///   - url: A libpq connection URI (`postgresql://user:password@host:port/db?sslmode=…`)
  ///     or `key=value` string.
  ///   - table: The table's name; by default the record type's name.
  ///   - connections: The most sessions the store opens on the server at once (at least
  ///     1), a hard bound: writes, single reads and each evaluation's read transaction
  ///     share them, and a call waits while all are busy (`.connectionFailed` after 60 s,
  ///     `CancellationError` for a cancelled async call) rather than open another. An
  ///     evaluation between two reads (a set counted and not yet iterated, say) keeps its
  ///     read transaction on one, but lends it to a call that finds all busy: it then
  ///     reads on in a new transaction when its table has not changed meanwhile, and
  ///     throws `.conflict` when it has. A finished async call holds none. A call
  ///     never waits for itself: one that holds a connection in use and needs another
  ///     of this store (an evaluation through a self-relation reads a second set of it)
  ///     opens one beyond the bound when all are busy, closed when it is given back.
  ///     ``commits(polling:)`` (and so a live set) opens one more, its listener.
  ///   - options: Timeouts, TCP keepalives and read replicas (see
  ///     ``PostgresConnectionOptions``): by default a connection must open within 30 s and
  ///     a statement finish within 300 s, so a call on a server that stops answering throws
  ///     `.connectionFailed` instead of hanging, and every call goes to `url`. Throws
  ///     `.invalidOptions` for a duration that is not positive, or a replica that is not a
  ///     hot standby.
  ///   - migrations: The app's schema migrations (see `Migrator`); those the table has not
  ///     run (listed in `requestset_migrations`) run in one transaction as the store opens.
  ///     A migration whose steps are top-level renames, adds and removes runs as `UPDATE`
  ///     statements on the `jsonb` bodies; any other record by record. Indexes on renamed
  ///     keys move with them. A table of another record type opens while migrations are
  ///     pending, and becomes `Element`'s. Throws `.migrationFailed` (nothing changed).
  ///   - migratesOnOpen: When false, pending migrations wait for `migrate()`, and writes
  ///     throw `.migrationPending` until then.
  /// - Throws: `RequestSetError` `.connectionFailed` when the server cannot be reached,
  ///   `.schemaMismatch` when the table exists but is not RequestSet's or holds another
  ///   type (a `PostgresStore<DynamicRecord>` opens any type's table), `.invalidFormat` for a table name PostgreSQL cannot keep (empty, NUL, longer
  ///   than 63 bytes), and for a connection string libpq cannot parse or whose URI user
  ///   info holds an unencoded `@` or `/` (percent-encode them as `%40` and `%2F`). No
  ///   error shows the password. `.decodingFailed` when, with no migration pending, the
  ///   first or last record no longer decodes as `Element` (naming the record and the key).
  public init(
    url: String, table: String? = nil, connections: Int = 4,
    options: PostgresConnectionOptions = PostgresConnectionOptions(), migrations: Migrator = Migrator(),
    migratesOnOpen: Bool = true
  ) throws {
    try options.validate()
    let name = table ?? String(describing: Element.self)
    guard name.utf8.count <= 63 else {
      throw RequestSetError(
        .invalidFormat,
        "The table name \"\(name.prefix(80))…\" is longer than PostgreSQL's 63 bytes. Pass a shorter `table:`."
      )
    }
    _table = name
    _quoted = try SQLJSON.quoteIdentifier(name)
    let pool = _PGPool(_ConnectionString(url), limit: connections, options: options)
    _pool = pool
    _database = try pool.with(Self._database)
    _replicas = try Self._openReplicas(options, connections: connections, primary: pool.connection)
    asyncThreads = StoreThreads(name: "PostgresStore", count: Swift.max(2, connections))
    _migrationState = Mutex((migrations, [], nil))
    try migrations.validate()
    try _pool.with { c in
      try _createSchema(c, migrations: migrations)
      var applied = try _applied(c)
      var hold: String?
      if let next = migrations.pending(after: applied).first {
        if migratesOnOpen {
          applied += try _runMigrations(c, migrator: migrations)
        } else {
          hold = next.name
        }
      }
      if hold == nil { try _checkOpenDecoding(c) }
      _migrationState.withLock { $0 = (migrations, applied, hold) }
      // Reads from a replica wait until it has the table (and what migrations made).
      _noteCommit(c)
    }
  }

  /// Creates the metadata tables and this store's table when missing, and checks an
  /// existing one holds this type, under an advisory lock so two processes opening one
  /// database at once do not race.
  private func _createSchema(_ c: _PGConnection, migrations: Migrator) throws {
    try _transaction(c) {
      try c.execute("SELECT pg_advisory_xact_lock(7256102)")
      try c.execute(
        """
        CREATE TABLE IF NOT EXISTS requestset_tables (
          name text PRIMARY KEY, type text NOT NULL, format integer NOT NULL, version bigint NOT NULL)
        """)
      try c.execute(
        """
        CREATE TABLE IF NOT EXISTS requestset_changes (
          name text NOT NULL, version bigint NOT NULL, changes text, PRIMARY KEY (name, version))
        """)
      try c.execute(SQLFieldKinds.createTable)
      // Each table's full-text index: its keys as a JSON array (see PostgresStore+TextIndex.swift).
      try c.execute(
        "CREATE TABLE IF NOT EXISTS requestset_text_indexes (name text PRIMARY KEY, keys text NOT NULL)")
      try c.execute(
        """
        CREATE TABLE IF NOT EXISTS requestset_migrations (
          tbl text NOT NULL, name text NOT NULL, position bigint GENERATED ALWAYS AS IDENTITY,
          applied timestamptz NOT NULL, PRIMARY KEY (tbl, name))
        """)
      let type = String(describing: Element.self)
      let known: _PGResult
      do {
        known = try c.execute("SELECT type, format FROM requestset_tables WHERE name = $1", [_table])
      } catch let error as RequestSetError where error.code == .schemaMismatch {
        throw RequestSetError(
          .schemaMismatch,
          "The database has a table requestset_tables that is not RequestSet's (\(error.message)). "
            + "Open a database RequestSet made, or drop that table.")
      }
      if known.count == 1 {
        let stored = known.string(0, 0) ?? ""
        // A DynamicRecord reads any type's records, as it reads a LogStore's.
        // …and a table of another type opens while migrations are pending that make it this type's.
        // (a migrator that lists a migration the table ran, or one it has not, vouches for
        // the new type: the table becomes this type's, and opening checks its records decode).
        let applied = try _applied(c)
        let migrating =
          !migrations.migrations.isEmpty
          && (!migrations.pending(after: applied).isEmpty
            || migrations.migrations.contains { applied.contains($0.name) })
        guard stored == type || Element.self == DynamicRecord.self || migrating else {
          throw RequestSetError(
            .schemaMismatch,
            "The table \(_quoted) holds \(stored) records, not \(type). Open it as PostgresStore<\(stored)>, "
              + "or pass another `table:`.")
        }
        if stored != type && Element.self != DynamicRecord.self && migrations.pending(after: applied).isEmpty
        {
          try c.execute("UPDATE requestset_tables SET type = $2 WHERE name = $1", [_table, type])
        }
        guard known.string(0, 1) == String(Self._format) else {
          throw RequestSetError(
            .schemaMismatch,
            "The table \(_quoted) has row format \(known.string(0, 1) ?? "?"); this RequestSet writes format "
              + "\(Self._format). Open it with the RequestSet version that made it.")
        }
        let columns = try c.execute(
          """
          SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
          FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped
          """, [_quoted])
        // `words` holds the full-text index's words (see PostgresStore+TextIndex.swift).
        let layout = "seq bigint, id text, body jsonb, plain boolean"
        guard columns.string(0, 0) == layout || columns.string(0, 0) == layout + ", words tsvector" else {
          throw RequestSetError(
            .schemaMismatch,
            "The table \(_quoted) is listed as holding \(type) records but its columns are "
              + "(\(columns.string(0, 0) ?? "none")). Drop it with PostgresStore.dropTable, or pass another `table:`."
          )
        }
        if try _storedKinds(c) == nil {
          // A table written before summaries were kept: learn its keys from its rows.
          try _writeKinds(c, _kindsFromRows(c).encodedText())
        }
      } else {
        let existing = try c.execute("SELECT to_regclass($1) IS NOT NULL", [_quoted])
        if existing.string(0, 0) == "t" {
          throw RequestSetError(
            .schemaMismatch,
            "The table \(_quoted) exists but is not a RequestSet table (requestset_tables does not list it), "
              + "so it cannot hold \(type) records. Pass another `table:`.")
        }
        try c.execute(
          """
          CREATE TABLE \(_quoted) (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text NOT NULL UNIQUE,
            body jsonb NOT NULL, plain boolean NOT NULL)
          """)
        try c.execute(
          "CREATE INDEX \(try SQLJSON.quoteIdentifier(_indexName("notplain"))) ON \(_quoted) (seq) WHERE NOT plain"
        )
        try c.execute(
          "INSERT INTO requestset_tables (name, type, format, version) VALUES ($1, $2, $3, 0)",
          [_table, type, String(Self._format)])
        try _writeKinds(c, StoreFieldKinds().encodedText())
      }
    }
  }

  /// Writes the table's summary of keys and kinds (see `StoreFieldKinds`).
  func _writeKinds(_ c: _PGConnection, _ text: String) throws {
    try c.execute(
      "INSERT INTO requestset_kinds (name, kinds) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET kinds = EXCLUDED.kinds",
      [_table, text])
  }

  /// The table's summary of keys and kinds as stored, or nil when it has none.
  func _storedKinds(_ c: _PGConnection) throws -> String? {
    let row = try c.execute("SELECT kinds FROM requestset_kinds WHERE name = $1", [_table])
    return row.count == 1 ? row.string(0, 0) : nil
  }

  /// The summary of keys and kinds of the table's rows as they are, read from every row.
  func _kindsFromRows(_ c: _PGConnection) throws -> StoreFieldKinds {
    var kinds = StoreFieldKinds()
    let rows = try c.execute("SELECT body::text FROM \(_quoted) ORDER BY seq")
    for r in 0..<rows.count {
      kinds.note(try SQLJSON.decode(rows.string(r, 0) ?? "{}"), as: Element.self)
    }
    return kinds
  }

  /// What `records` add to the table's summary of keys and kinds.
  func _kindsNoting(_ records: some Sequence<Element>) throws -> StoreFieldKinds {
    _fieldKinds.noting(try records.map { try FieldValue(encoding: $0) }, as: Element.self)
  }

  /// A readable description with the connection string's password hidden.
  public var description: String {
    "PostgresStore<\(Element.self)>(table: \(_quoted), url: \(_pool.connection.redacted))"
  }

  // MARK: Transactions

  /// Runs `body` inside BEGIN … COMMIT on `c`, rolling back when it throws.
  func _transaction<T>(_ c: _PGConnection, _ begin: String = "BEGIN", _ body: () throws -> T) throws -> T {
    try c.execute(begin)
    do {
      let result = try body()
      // A cancelled async call writes nothing: checked before COMMIT, the last moment its
      // changes can still be undone (a statement running when it was cancelled may have
      // finished before `PQcancel` reached it).
      if StoreThreads.isCancelled { throw CancellationError() }
      try c.execute("COMMIT")
      return result
    } catch {
      if !c.isBroken { _ = try? c.execute("ROLLBACK") }
      throw error
    }
  }

  /// One write transaction: locks the table's metadata row (serializing writers across
  /// processes), checks `expected`, runs `body`, bumps the version, records the commit's
  /// changes for observers and notifies listeners. Returns the new version, or nil when
  /// `body` said nothing changed (then nothing is committed).
  ///
  /// A transaction PostgreSQL could not serialize (40001) or broke to end a deadlock
  /// (40P01) runs again, up to `options.conflictRetries` times, after a growing wait:
  /// `body` must be safe to run again (it sends what was decided before the write began).
  @discardableResult
  func _write(
    ifVersion expected: UInt64?, changes: () -> [RecordChange<Element>]?, kinds: StoreFieldKinds? = nil,
    _ body: (_PGConnection) throws -> Bool
  ) throws -> UInt64? {
    try _checkMigrated()
    let retries = _pool.options.conflictRetries
    var attempt = 0
    while true {
      do {
        return try _writeOnce(ifVersion: expected, changes: changes, kinds: kinds, body)
      } catch let error as RequestSetError
        where error.code == .conflict && Self._isSerializationFailure(error)
      {
        guard attempt < retries else {
          throw RequestSetError(
            .conflict,
            "PostgreSQL could not serialize the write in \(attempt + 1) attempts (the last: \(error.message)) "
              + "Nothing of it was committed. Retry it later, or raise PostgresConnectionOptions.conflictRetries.",
            underlying: error.underlying)
        }
        attempt += 1
        _conflictRetries.add(1, ordering: .relaxed)
        if StoreThreads.isCancelled { throw CancellationError() }
        // 5 ms, 10 ms, 20 ms, … up to 0.5 s, each between half and all of it, so two
        // writers that met do not meet again at once.
        let wait = Swift.min(500_000, 5_000 << Swift.min(attempt - 1, 10))
        usleep(UInt32(wait / 2 + Int.random(in: 0...(wait / 2))))
      }
    }
  }

  /// Whether `error` is PostgreSQL's serialization failure (40001) or deadlock (40P01),
  /// not a stale `ifVersion`.
  static func _isSerializationFailure(_ error: RequestSetError) -> Bool {
    guard let state = (error.underlying as? _PGDiagnostic)?.state else { return false }
    return state == "40001" || state == "40P01"
  }

  /// One attempt of ``_write(ifVersion:changes:kinds:_:)``.
  private func _writeOnce(
    ifVersion expected: UInt64?, changes: () -> [RecordChange<Element>]?, kinds: StoreFieldKinds?,
    _ body: (_PGConnection) throws -> Bool
  ) throws -> UInt64? {
    try _pool.with { c in
      let version = try _transaction(c, _pool.options.isolation.begin) { () -> UInt64? in
        let row = try c.execute(
          """
          SELECT version, (SELECT keys FROM requestset_text_indexes WHERE name = $1) FROM requestset_tables \
          WHERE name = $1 FOR UPDATE
          """, [_table])
        guard row.count == 1, let current = row.string(0, 0).flatMap(UInt64.init) else {
          throw RequestSetError(
            .schemaMismatch,
            "The table \(_quoted) is no longer listed in requestset_tables. Open the store again.")
        }
        if let expected, expected != current {
          // The caller read an older version, perhaps on a replica that had not replayed
          // another process's commit: its next read waits for that commit (a write
          // through a query reads again and retries).
          _noteCommit(c, ownCommit: false)
          throw RequestSetError(
            .conflict,
            "The store changed (version \(current), expected \(expected)) between reading and writing; "
              + "nothing was written. Read again and retry.")
        }
        let textKeys = try row.string(0, 1).map(Self._textKeys(fromText:))
        _writingTextKeys.withLock { $0 = textKeys }
        defer { _writingTextKeys.withLock { $0 = nil } }
        // Nothing changed (a delete of a missing id): commit the empty transaction as is.
        guard try body(c) else { return nil }
        // Rows the body wrote without their words (a trigger clears them on every change
        // of a body that leaves them as they were).
        if let textKeys { try _fillTextWords(c, keys: textKeys) }
        // Under the metadata row's lock, so no other writer's keys are lost.
        if let kinds, let text = try _fieldKinds.merged(stored: _storedKinds(c), batch: kinds) {
          try _writeKinds(c, text)
        }
        let next = current + 1
        try c.execute("UPDATE requestset_tables SET version = $2 WHERE name = $1", [_table, String(next)])
        try c.execute(
          "INSERT INTO requestset_changes (name, version, changes) VALUES ($1, $2, $3)",
          [_table, String(next), try changes().flatMap(_changeText)])
        if next % 64 == 0 && next > 1024 {
          try c.execute(
            "DELETE FROM requestset_changes WHERE name = $1 AND version <= $2",
            [_table, String(next &- 1024)])
        }
        try c.execute("SELECT pg_notify('requestset', $1)", ["\(next) \(_table)"])
        return next
      }
      if version != nil { _noteCommit(c) }
      return version
    }
  }

  /// A commit's changes as text for `requestset_changes`, one line each (`I`, `S` or `D`,
  /// a tab, the JSON): nil when they are too large to keep (observers then get the commit
  /// without its changes).
  func _changeText(_ changes: [RecordChange<Element>]) throws -> String? {
    var text = ""
    for change in changes {
      switch change {
      case .insert(let r): text += "I\t" + SQLJSON.encode(try FieldValue(encoding: r)).text
      case .save(let r): text += "S\t" + SQLJSON.encode(try FieldValue(encoding: r)).text
      case .delete(let id): text += "D\t" + SQLJSON.encode(try FieldValue(encoding: id)).text
      }
      text += "\n"
      if text.utf8.count > 1 << 20 { return nil }
    }
    return text
  }

  /// The changes `_changeText` wrote.
  func _changes(fromText text: String) throws -> [RecordChange<Element>] {
    try text.split(separator: "\n").map { line in
      let json = String(line.dropFirst(2))
      switch line.first {
      case "I":
        return .insert(try SQLJSON.decodeRecord(Element.self, text: json, in: "the table \(_quoted)"))
      case "S": return .save(try SQLJSON.decodeRecord(Element.self, text: json, in: "the table \(_quoted)"))
      default: return .delete(id: try SQLJSON.decode(json).decode(Element.ID.self))
      }
    }
  }

  // MARK: Rows

  /// A record's row values: its id and body JSON, and whether the body is plain.
  func _row(_ record: Element) throws -> (id: String, body: String, plain: Bool) {
    let body = SQLJSON.encode(try FieldValue(encoding: record))
    return (try _idText(record.id), body.text, body.plain)
  }

  /// The `id` column's text for an id.
  func _idText(_ id: Element.ID) throws -> String {
    SQLJSON.encode(try FieldValue(encoding: id)).text
  }

  /// A record from its `body` text.
  func _record(_ body: String) throws -> Element {
    try SQLJSON.decodeRecord(Element.self, text: body, in: "the table \(_quoted)")
  }

  /// The error for an insert whose id is taken, worded as every store words it.
  func _duplicate(_ id: Element.ID, inBatch: Bool = false) -> RequestSetError {
    RequestSetError(
      .duplicateID,
      inBatch
        ? "The batch holds id \(id) twice. Give each record its own id; nothing was inserted."
        : "A record with id \(id) is already stored. Use save(_:) to replace it, or give the new record another id."
    )
  }

  /// Checks a batch for an insert of an id the batch itself inserted or saved before (the
  /// stored ids are the unique constraint's to check).
  func _checkBatch(_ changes: [RecordChange<Element>]) throws {
    var present: [Element.ID: Bool] = [:]
    for change in changes {
      switch change {
      case .insert(let r):
        if present[r.id] == true { throw _duplicate(r.id, inBatch: true) }
        present[r.id] = true
      case .save(let r): present[r.id] = true
      case .delete(let id): present[id] = false
      }
    }
  }

  /// Runs `body`, turning the id column's unique violation into `.duplicateID` naming the
  /// stored id (read from PostgreSQL's detail, `Key (id)=(…) already exists.`).
  @discardableResult
  func _mappingDuplicate<T>(_ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as RequestSetError
      where error.code == .uniqueViolation
      && (error.underlying as? _PGDiagnostic)?.constraint?.hasSuffix("_id_key") == true
    {
      let detail = (error.underlying as? _PGDiagnostic)?.detail ?? ""
      if let open = detail.range(of: "Key (id)=("),
        let close = detail.range(of: ") already exists", options: .backwards),
        open.upperBound <= close.lowerBound,
        let id = try? SQLJSON.decode(String(detail[open.upperBound..<close.lowerBound])).decode(
          Element.ID.self)
      {
        throw _duplicate(id)
      }
      throw RequestSetError(
        .duplicateID,
        "A record's id is already stored. Use save(_:) to replace it, or give the new record another id.",
        underlying: error)
    }
  }

  /// Applies one change on `c`, inside a write transaction.
  func _applyChange(_ change: RecordChange<Element>, on c: _PGConnection) throws {
    switch change {
    case .insert(let record):
      let row = try _row(record)
      let words = try _words(record)
      try _mappingDuplicate {
        try c.execute(
          "INSERT INTO \(_quoted) (id, body, plain\(words.column)) VALUES ($1, $2::jsonb, $3\(words.value))",
          [row.id, row.body, row.plain ? "t" : "f"] + words.parameters)
      }
    case .save(let record):
      let row = try _row(record)
      let words = try _words(record)
      try c.execute(
        """
        INSERT INTO \(_quoted) (id, body, plain\(words.column)) VALUES ($1, $2::jsonb, $3\(words.value))
        ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, plain = EXCLUDED.plain\(words.update)
        """, [row.id, row.body, row.plain ? "t" : "f"] + words.parameters)
    case .delete(let id):
      try c.execute("DELETE FROM \(_quoted) WHERE id = $1", [try _idText(id)])
    }
  }

  // MARK: RecordStore

  /// Inserts a record.
  ///
  /// ```swift
  /// try store.insert(Animal(id: 1, name: "Micky", age: 3))
  /// ```
  /// - Throws: `RequestSetError` `.duplicateID` when the id is stored,
  ///   `.connectionFailed` when the server is gone (nothing is written then).
  public func insert(_ record: Element) throws {
    try apply([.insert(record)], ifVersion: nil)
  }

  /// Inserts several records in one transaction, all or none, with multi-row INSERTs of
  /// up to a few thousand rows each (the rows travel as bound arrays).
  ///
  /// ```swift
  /// try store.insert(contentsOf: animals)
  /// ```
  /// - Throws: `RequestSetError` `.duplicateID` when an id is stored or occurs twice;
  ///   nothing is inserted then.
  public func insert(contentsOf records: some Sequence<Element>) throws {
    let records = Array(records)
    guard !records.isEmpty else { return try _pool.checkOpen() }
    var rows: [(id: String, body: String, plain: Bool)] = []
    rows.reserveCapacity(records.count)
    var ids = Set<Element.ID>()
    var fields: [FieldValue] = []
    fields.reserveCapacity(records.count)
    for record in records {
      guard ids.insert(record.id).inserted else { throw _duplicate(record.id, inBatch: true) }
      let encoded = try FieldValue(encoding: record)
      fields.append(encoded)
      let body = SQLJSON.encode(encoded)
      rows.append((try _idText(record.id), body.text, body.plain))
    }
    let kinds = _fieldKinds.noting(fields, as: Element.self)
    try _mappingDuplicate {
      try _write(ifVersion: nil, changes: { records.map { .insert($0) } }, kinds: kinds) { c in
        // With a text index, each row's words go in with it.
        let keys = _writingTextKeys.withLock { $0 }
        var start = 0
        while start < rows.count {
          let end = min(rows.count, start + 2000)
          let batch = rows[start..<end]
          var parameters: [String?] = [
            _arrayLiteral(batch.map(\.id)), _arrayLiteral(batch.map(\.body)),
            "{" + batch.map { $0.plain ? "t" : "f" }.joined(separator: ",") + "}",
          ]
          if let keys {
            let words = fields[start..<end].map { field in
              _PGTextWords.vector(keys.map { field[path: $0] ?? .null })
            }
            parameters.append(_arrayLiteral(words))
          }
          try c.execute(
            keys == nil
              ? """
              INSERT INTO \(_quoted) (id, body, plain)
              SELECT * FROM unnest($1::text[], $2::jsonb[], $3::boolean[])
              """
              : """
              INSERT INTO \(_quoted) (id, body, plain, words)
              SELECT i, b, p, w::tsvector FROM unnest($1::text[], $2::jsonb[], $3::boolean[], $4::text[]) AS v(i, b, p, w)
              """,
            parameters)
          start = end
        }
        return true
      }
    }
  }

  /// Inserts the record, or replaces the stored record with the same id in place (an
  /// upsert: it keeps its `seq`, so its place in store order).
  ///
  /// ```swift
  /// try store.save(Animal(id: 1, name: "Micky", age: 4))
  /// ```
  public func save(_ record: Element) throws {
    try apply([.save(record)], ifVersion: nil)
  }

  /// Deletes the record with this id.
  ///
  /// ```swift
  /// try store.delete(id: 1)
  /// ```
  /// - Returns: Whether a record was deleted (the version moves only then).
  @discardableResult
  public func delete(id: Element.ID) throws -> Bool {
    let idText = try _idText(id)
    let version = try _write(ifVersion: nil, changes: { [.delete(id: id)] }) { c in
      try c.execute("DELETE FROM \(_quoted) WHERE id = $1", [idText]).affected > 0
    }
    return version != nil
  }

  /// Applies changes in one transaction, in order: all of them or none.
  ///
  /// `expectedVersion` is checked inside the transaction, after locking the table's
  /// metadata row (`SELECT version … FOR UPDATE`), so no other writer can slip between.
  ///
  /// ```swift
  /// try store.apply([.insert(rex), .delete(id: 3)], ifVersion: snapshot.version)
  /// ```
  /// - Throws: `RequestSetError` `.duplicateID`, `.conflict` for a stale version,
  ///   `.connectionFailed`; nothing is applied then.
  public func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    guard !changes.isEmpty else { return try _pool.checkOpen() }
    let kinds = try _kindsNoting(
      changes.compactMap { change -> Element? in
        switch change {
        case .insert(let r), .save(let r): return r
        case .delete: return nil
        }
      })
    try _write(ifVersion: expectedVersion, changes: { changes }, kinds: kinds) { c in
      try _checkBatch(changes)  // after the version check, as every store orders them
      for change in changes { try _applyChange(change, on: c) }
      return true
    }
  }

  /// The record with this id, or nil: one indexed lookup.
  ///
  /// ```swift
  /// let micky = try store.fetch(id: 1)
  /// ```
  public func fetch(id: Element.ID) throws -> Element? {
    let idText = try _idText(id)
    let result = try _read { try $0.execute("SELECT body FROM \(_quoted) WHERE id = $1", [idText]) }
    guard result.count == 1, let body = result.string(0, 0) else { return nil }
    return try _record(body)
  }

  /// Every record in store order, and the version, read in one REPEATABLE READ
  /// transaction: what the in-process engine evaluates when it runs a query itself.
  ///
  /// ```swift
  /// let all = try store.snapshot()
  /// ```
  public func snapshot() throws -> StoreSnapshot<Element> {
    let (version, bodies) = try _read { c in
      try _transaction(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { () -> (UInt64, _PGResult) in
        let version = try _version(c)
        return (version, try c.execute("SELECT body FROM \(_quoted) ORDER BY seq"))
      }
    }
    var records: [Element] = []
    records.reserveCapacity(bodies.count)
    for row in 0..<bodies.count {
      records.append(try _record(bodies.string(row, 0) ?? "null"))
    }
    return StoreSnapshot(records: records, version: version)
  }

  /// The table's write counter, read on `c`.
  func _version(_ c: _PGConnection) throws -> UInt64 {
    let row = try c.execute("SELECT version FROM requestset_tables WHERE name = $1", [_table])
    guard row.count == 1, let version = row.string(0, 0).flatMap(UInt64.init) else {
      throw RequestSetError(
        .schemaMismatch,
        "The table \(_quoted) is no longer listed in requestset_tables. Open the store again.")
    }
    return version
  }

  /// Ends every session the store opened: idle connections and the read transactions of
  /// evaluations in progress at once, a call under way as soon as it returns, and a
  /// ``commits(polling:)`` listener within its polling interval. Later reads and writes
  /// throw `.closed`, and so does the next read of a set evaluated partly before (counted,
  /// say); sets evaluated whole keep their records. Closing twice does nothing.
  ///
  /// ```swift
  /// store.close()
  /// try RequestSet(store).fetch()   // throws .closed: "The PostgresStore at postgresql://… is closed. Open a new store."
  /// ```
  public func close() {
    _pool.close()
    _replicas?.close()
  }

  /// Drops a store's table and its metadata, if they exist: for tests and tools. The
  /// connection keeps `options`' timeouts (see ``PostgresConnectionOptions``).
  ///
  /// ```swift
  /// try PostgresStore<Animal>.dropTable(url: url, table: "animals")
  /// ```
  /// - Throws: `RequestSetError` `.connectionFailed` when the server cannot be reached.
  public static func dropTable(
    url: String, table: String, options: PostgresConnectionOptions = PostgresConnectionOptions()
  ) throws {
    try options.validate()
    let connection = try _PGConnection(_ConnectionString(url), options: options)
    let quoted = try SQLJSON.quoteIdentifier(table)
    try connection.execute("DROP TABLE IF EXISTS \(quoted)")
    let metadata = try connection.execute("SELECT to_regclass('requestset_tables') IS NOT NULL")
    if metadata.string(0, 0) == "t" {
      try connection.execute("DELETE FROM requestset_tables WHERE name = $1", [table])
      try connection.execute("DELETE FROM requestset_changes WHERE name = $1", [table])
      if try connection.execute("SELECT to_regclass('requestset_kinds') IS NOT NULL").string(0, 0) == "t" {
        try connection.execute("DELETE FROM requestset_kinds WHERE name = $1", [table])
      }
      if try connection.execute("SELECT to_regclass('requestset_text_indexes') IS NOT NULL").string(0, 0)
        == "t"
      {
        try connection.execute("DELETE FROM requestset_text_indexes WHERE name = $1", [table])
      }
    }
  }

  // MARK: Indexes

  /// A short, stable index name for this table and `what` (PostgreSQL cuts names at 63
  /// bytes, so the table's name is hashed in).
  func _indexName(_ what: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in (_table + "\u{1}" + what).utf8 {
      hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return "rs_" + String(hash, radix: 16)
  }

  /// Creates an expression index on `body #> '{…}'` for `key`, which the store's queries
  /// on that key use (the statement's expression is written the same way).
  ///
  /// ```swift
  /// try store.createIndex("owner.city")   // CREATE INDEX … ON "Animal" ((body #> '{owner,city}'))
  /// ```
  /// - Parameters:
  ///   - key: A string key, dotted for nested fields.
  ///   - unique: Whether two records may not share a (non-nil) value.
  /// - Throws: `RequestSetError` `.uniqueViolation` when `unique` and stored records
  ///   share a value; `.invalidFormat` for a key holding U+0000.
  public func createIndex(_ key: String, unique: Bool = false) throws {
    let path = try _PGSQL.literalPath(FieldValue.fieldNames(inKey: key))
    let name = try SQLJSON.quoteIdentifier(_indexName("key " + key))
    try _pool.with { c in
      try c.execute(
        "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(name) ON \(_quoted) ((body #> \(path)))")
    }
  }

  /// Creates a composite expression index on several keys' values, in order: queries that
  /// hold the first keys equal and bound or sort by the next use it (see `explain()`, which
  /// shows PostgreSQL's plan).
  ///
  /// ```swift
  /// try store.createIndex("species", "age")
  /// // CREATE INDEX … ON "Animal" ((body #> '{species}'), (body #> '{age}'))
  /// ```
  /// - Parameters:
  ///   - first: The key the index orders by first: a string key, dotted for nested fields.
  ///   - second: The key that orders rows with the same `first` value.
  ///   - more: Further keys.
  ///   - unique: Whether two records may not share the values of every key (a row with
  ///     nil for any key is exempt, as in SQL).
  /// - Throws: `RequestSetError` `.uniqueViolation` when `unique` and stored records
  ///   share the values; `.invalidIndex` for a key named twice; `.invalidFormat` for a key
  ///   holding U+0000.
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
    try RequestIndex(keys: keys, unique: unique).checkKeys(for: Element.self)
    if keys.count == 1 { return try createIndex(keys[0], unique: unique) }
    let columns = try keys.map { "(body #> \(try _PGSQL.literalPath(FieldValue.fieldNames(inKey: $0))))" }
    let name = try SQLJSON.quoteIdentifier(_indexName("keys " + keys.joined(separator: "\u{1F}")))
    try _pool.with { c in
      try c.execute(
        "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(name) ON \(_quoted) (\(columns.joined(separator: ", ")))"
      )
    }
  }

  /// Drops the composite index on these keys, in this order, if there is one.
  ///
  /// ```swift
  /// try store.dropIndex("species", "age")
  /// ```
  public func dropIndex(_ first: String, _ second: String, _ more: String...) throws {
    let keys = [first, second] + more
    let name = try SQLJSON.quoteIdentifier(_indexName("keys " + keys.joined(separator: "\u{1F}")))
    try _pool.with { c in try c.execute("DROP INDEX IF EXISTS \(name)") }
  }

  /// The indexes ``createIndex(_:unique:)`` and its composite forms made on the store's
  /// table (by this build or an older one), oldest first, read from the server's catalog.
  ///
  /// ```swift
  /// try store.createIndex("species", "age")
  /// try store.indexes().map(\.keys)   // [["species", "age"]]
  /// ```
  /// - Throws: `RequestSetError` `.closed`, `.connectionFailed`.
  public func indexes() throws -> [RequestIndex] {
    try _pool.with { c in try _madeIndexes(c).map { RequestIndex(keys: $0.keys, unique: $0.unique) } }
  }

  /// Drops the index on `key`, if there is one.
  ///
  /// ```swift
  /// try store.dropIndex("owner.city")
  /// ```
  public func dropIndex(_ key: String) throws {
    let name = try SQLJSON.quoteIdentifier(_indexName("key " + key))
    try _pool.with { c in try c.execute("DROP INDEX IF EXISTS \(name)") }
  }
}

/// A PostgreSQL array literal of text elements: `{"a","b\"c"}`.
func _arrayLiteral(_ elements: some Sequence<String>) -> String {
  _arrayLiteral(elements.lazy.map { Optional($0) })
}

/// A PostgreSQL array literal of text elements, nil as `NULL`: `{"a",NULL}`.
func _arrayLiteral(_ elements: some Sequence<String?>) -> String {
  var text = "{"
  var first = true
  for element in elements {
    if !first { text += "," }
    first = false
    guard let element else {
      text += "NULL"
      continue
    }
    text += "\""
    for scalar in element.unicodeScalars {
      if scalar == "\"" || scalar == "\\" { text.unicodeScalars.append("\\") }
      text.unicodeScalars.append(scalar)
    }
    text += "\""
  }
  return text + "}"
}
