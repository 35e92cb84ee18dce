#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import RequestSet
import _RequestSetSQL

// Schema migrations on a SQLite table: every pending migration of the store's `Migrator`
// runs in one write transaction, with the names recorded in `requestset_migrations`, so a
// failure or a crash leaves the table as it was, the migrations pending.

extension SQLiteStore {
  /// Opens the table for `Element` as ``init(path:table:)`` does, and runs the pending
  /// migrations of `migrations` on it in one transaction (unless `migratesOnOpen` is
  /// false).
  ///
  /// The names of the migrations a table has run are kept in the database's
  /// `requestset_migrations` table. A migration whose steps are all a top-level rename,
  /// add or remove runs as `UPDATE … SET body = json_set(…)` statements; any other runs
  /// record by record. Expression indexes (composite ones too) follow renamed keys, and go
  /// with a removed key, by `Migration.indexKey(after:)`. The table's record type becomes `Element`.
  ///
  /// ```swift
  /// var migrator = Migrator()
  /// migrator.register("v2: legs", .add("legs", default: .int(4)))
  /// let store = try SQLiteStore<AnimalV2>(path: "zoo.sqlite", table: "animals", migrations: migrator)
  /// store.appliedMigrations   // ["v2: legs"]
  /// ```
  /// - Parameters:
  ///   - path: The database file.
  ///   - table: The table's name; by default the record type's name.
  ///   - migrations: The app's migrations, in order.
  ///   - migratesOnOpen: Whether to run them now; when false, writes throw
  ///     `.migrationPending` until ``migrate()`` runs them.
  /// - Throws: `RequestSetError` `.migrationFailed` naming the migration, the record and the
  ///   key (nothing changed); `.decodingFailed` when, with nothing pending, the first or
  ///   last record does not decode as `Element` (naming the record and the key); and what
  ///   ``init(path:table:)`` throws. A table that holds another record type opens only
  ///   while migrations are pending (they make it `Element`'s).
  public convenience init(path: String, table: String? = nil, migrations: Migrator, migratesOnOpen: Bool = true) throws {
    try self.init(path: path, table: table, changesKept: 8192, migrations: migrations, migratesOnOpen: migratesOnOpen)
  }

  /// The names of the migrations this table has run, oldest first.
  ///
  /// ```swift
  /// store.appliedMigrations   // ["v2: legs"]
  /// ```
  public var appliedMigrations: [String] { _migrationState.withLock { $0.applied } }

  /// The names of the store's migrations this table has not run, in order: empty once
  /// the store opened with `migratesOnOpen` on.
  ///
  /// ```swift
  /// store.pendingMigrations   // ["v3: kg"]
  /// ```
  public var pendingMigrations: [String] {
    _migrationState.withLock { state in state.migrator.pending(after: state.applied).map(\.name) }
  }

  /// Runs the pending migrations now, in one write transaction, and returns their names.
  ///
  /// ```swift
  /// try store.migrate()   // ["v3: kg"]
  /// ```
  /// - Returns: The names run, in order; empty when none were pending.
  /// - Throws: `RequestSetError` `.migrationFailed` (nothing changed, the migrations stay
  ///   pending), `.closed`, `.locked`.
  /// - Complexity: O(*n*) in the table's rows.
  @discardableResult
  public func migrate() throws -> [String] {
    let migrator = _migrationState.withLock { $0.migrator }
    let outcome = try _writer.withLock { connection -> (names: [String], version: UInt64)? in
      guard let c = connection else { throw _closed() }
      return try Self._runMigrations(c, table: table, quoted: _quotedTable, migrator: migrator)
    }
    guard let outcome else { return [] }
    _migrationState.withLock {
      $0.applied += outcome.names
      $0.hold = nil
    }
    _publish(StoreCommit(version: outcome.version, changes: nil))
    return outcome.names
  }

  /// Throws `.migrationPending` while the table's migrations wait for ``migrate()``, as
  /// every write does (see ``RecordStore/_checkWritable()``): writes through a query ask
  /// before they read.
  ///
  /// ```swift
  /// try store._checkWritable()
  /// ```
  public func _checkWritable() throws { try _checkMigrated() }

  /// Throws `.migrationPending` while the store's migrations wait for ``migrate()``.
  func _checkMigrated() throws {
    guard let hold = _migrationState.withLock({ $0.hold }) else { return }
    throw RequestSetError(
      .migrationPending,
      "The table \(table) in \(path) has not run the migration \(hold.debugDescription) (and maybe later ones), so "
        + "it cannot be written yet. Call migrate() on the store, or open it with migratesOnOpen: true.")
  }

  /// The names a table has run, in order.
  static func _applied(_ c: _SQLiteConnection, table: String) throws -> [String] {
    let statement = try c.prepare("SELECT name FROM requestset_migrations WHERE tbl = ? ORDER BY rowid")
    try statement.bind([.text(table)])
    var names: [String] = []
    while try statement.step(doing: "read requestset_migrations") { names.append(statement.text(0)) }
    return names
  }

  /// Runs the pending migrations in one write transaction: their names and the new
  /// version, or nil when none was pending.
  static func _runMigrations(
    _ c: _SQLiteConnection, table: String, quoted: String, migrator: Migrator
  ) throws -> (names: [String], version: UInt64)? {
    try migrator.validate()
    return try c.writeTransaction { () -> (names: [String], version: UInt64)? in
      let pending = migrator.pending(after: try _applied(c, table: table))
      guard !pending.isEmpty else { return nil }
      var kinds: StoreFieldKinds? = try _storedKinds(c, table: table).map { try StoreFieldKinds(encodedText: $0) }
      for migration in pending {
        if let statements = _statements(for: migration, quoted: quoted) {
          for s in statements {
            if let check = s.conflict {
              let statement = try c.prepare(check)
              if try statement.step(doing: "check \(migration.name)") {
                let id = (try? SQLJSON.decode(statement.text(0))) ?? .string(statement.text(0))
                let held = (try? SQLJSON.decode(statement.text(1))) ?? .string(statement.text(1))
                throw RequestSetError(
                  .migrationFailed,
                  "The migration \(migration.name.debugDescription) failed on the record with id \(id) at its step "
                    + "\(s.step): \(s.conflictReason(held)). Fix the migration (or the record) and open the store "
                    + "again; the store is as it was before the migration.")
              }
            }
            let statement = try c.prepare(s.sql)
            try statement.bind(s.bindings)
            try statement.run(doing: "run the migration \(migration.name)")
          }
          kinds = kinds?.migrated(by: migration)
        } else {
          kinds = nil
          try _migrateRecordByRecord(c, quoted: quoted, migration: migration)
        }
        try _followIndexes(c, table: table, quoted: quoted, migration: migration)
        let record = try c.prepare("INSERT INTO requestset_migrations(tbl, name, applied) VALUES (?, ?, ?)")
        try record.bind([.text(table), .text(migration.name), .text(ISO8601DateFormatter().string(from: Date()))])
        try record.run(doing: "record the migration \(migration.name)")
      }
      // The summary of keys and kinds: carried through the steps where they say exactly
      // what happens to each key, else noted again from every row.
      let summary = try kinds ?? _kindsFromRows(c, table: table, quoted: quoted)
      try _writeKinds(c, table: table, text: summary.encodedText())
      if Element.self != DynamicRecord.self {
        let type = try c.prepare("UPDATE requestset_tables SET type = ? WHERE name = ?")
        try type.bind([.text(String(describing: Element.self)), .text(table)])
        try type.run(doing: "record the table's new record type")
      }
      let bump = try c.prepare("UPDATE requestset_tables SET version = version + 1 WHERE name = ? RETURNING version")
      try bump.bind([.text(table)])
      guard try bump.step(doing: "bump the version") else {
        throw RequestSetError(.schemaMismatch, "The row of \(table) in requestset_tables is gone. Reopen the store.")
      }
      let version = UInt64(bump.int(0))
      _ = try bump.step(doing: "bump the version")
      let log = try c.prepare("INSERT INTO requestset_changes(version, tbl, op, id, origin) VALUES (?, ?, 'many', '', '')")
      try log.bind([.int(Int64(version)), .text(table)])
      try log.run(doing: "record the migration's change")
      return (pending.map(\.name), version)
    }
  }

  /// One statement of a migration run in SQL, with the check that must find no row first.
  struct _MigrationStatement {
    var step: Migration.Step
    var sql: String
    var bindings: [_SQLiteBinding]
    var conflict: String?
    var conflictReason: (FieldValue) -> String = { _ in "" }
  }

  /// The statements that run `migration` exactly, or nil when one of its steps has no
  /// exact statement (a dotted key, a conversion, a closure): it then runs record by record.
  static func _statements(for migration: Migration, quoted: String) -> [_MigrationStatement]? {
    var out: [_MigrationStatement] = []
    func path(_ key: String) -> String? {
      let names = FieldValue.fieldNames(inKey: key)
      guard names.count == 1 else { return nil }
      return _SQLiteTranslation.pathLiteral(names)
    }
    for step in migration.steps {
      switch step.form {
      case .add(let key, let value):
        guard let p = path(key) else { return nil }
        let encoded = SQLJSON.encode(value)
        out.append(
          _MigrationStatement(
            step: step,
            sql: "UPDATE \(quoted) SET body = json_set(body, \(p), json(?))\(encoded.plain ? "" : ", plain = 0") "
              + "WHERE json_type(body, \(p)) IS NULL OR json_type(body, \(p)) = 'null'",
            bindings: [.text(encoded.text)]))
      case .rename(let from, let to):
        guard let a = path(from), let b = path(to) else { return nil }
        guard from != to else { continue }
        out.append(
          _MigrationStatement(
            step: step,
            sql: "UPDATE \(quoted) SET body = json_set(json_remove(body, \(a)), \(b), body -> \(a)) "
              + "WHERE json_type(body, \(a)) IS NOT NULL",
            bindings: [],
            conflict: "SELECT id, json(body -> \(b)) FROM \(quoted) WHERE json_type(body, \(a)) IS NOT NULL AND json_type(body, \(b)) "
              + "IS NOT NULL AND json_type(body, \(b)) != 'null' ORDER BY seq LIMIT 1",
            conflictReason: { "the record holds both \(from) and \(to) (\($0)); remove one first" }))
      case .remove(let key):
        guard let p = path(key) else { return nil }
        out.append(
          _MigrationStatement(
            step: step, sql: "UPDATE \(quoted) SET body = json_remove(body, \(p)) WHERE json_type(body, \(p)) IS NOT NULL",
            bindings: []))
      case .convert, .transform:
        return nil
      }
    }
    return out
  }

  /// Runs `migration` on every row through the engine's own steps, 1,000 rows at a time.
  static func _migrateRecordByRecord(_ c: _SQLiteConnection, quoted: String, migration: Migration) throws {
    let migrator = Migrator([migration])
    let read = try c.prepare("SELECT seq, body FROM \(quoted) WHERE seq > ? ORDER BY seq LIMIT 1000")
    let write = try c.prepare("UPDATE \(quoted) SET body = ?, plain = ? WHERE seq = ?")
    var after: Int64 = -1 << 62
    while true {
      sqlite3_reset(read.pointer)
      try read.bind([.int(after)])
      var seqs: [Int64] = []
      var records: [DynamicRecord] = []
      while try read.step(doing: "read records to migrate") {
        seqs.append(read.int(0))
        records.append(try DynamicRecord(SQLJSON.decode(read.text(1))))
      }
      guard let last = seqs.last else { return }
      after = last
      let migrated = try migrator.migrate(records)
      for (seq, record) in zip(seqs, migrated) {
        let body = SQLJSON.encode(record.value)
        sqlite3_reset(write.pointer)
        try write.bind([.text(body.text), .int(body.plain ? 1 : 0), .int(seq)])
        try write.run(doing: "write a migrated record")
      }
    }
  }

  /// Moves each index the store made (one key or composite) to the keys
  /// `Migration.indexKey(after:)` gives its keys, and drops the ones a removed key takes
  /// with it: the rule every store follows. An index's keys are read back from its SQL
  /// (`json_extract(body, '$."owner"."city"')`), so an index made by an older build moves too.
  static func _followIndexes(_ c: _SQLiteConnection, table: String, quoted: String, migration: Migration) throws {
    for (name, keys, unique) in try _madeIndexes(c, table: table) {
      let moved = keys.map { migration.indexKey(after: $0) }
      guard moved != keys.map(Optional.some) else { continue }
      try c.execute("DROP INDEX \(try SQLJSON.quoteIdentifier(name))", doing: "drop the index on \(keys.joined(separator: ", "))")
      let newKeys = moved.compactMap { $0 }
      // A key that went takes the index with it; so does a rename that leaves a key twice.
      guard newKeys.count == keys.count, Set(newKeys).count == newKeys.count else { continue }
      guard let paths = try? newKeys.map({ try _indexName($0, table: table).path }),
        let newName = try? _indexName(newKeys.count == 1 ? newKeys[0] : newKeys.joined(separator: "\u{1F}"), table: table).name
      else { continue }
      try c.execute(
        "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(newName) ON \(quoted)"
          + "(\(paths.map { "json_extract(body, \($0))" }.joined(separator: ", ")))",
        doing: "move the index on \(keys.joined(separator: ", ")) to \(newKeys.joined(separator: ", "))")
    }
    // The text index by the same rule: remade on the moved keys (its words are read again,
    // from the migrated rows), or dropped when a key goes.
    if let text = try _SQLiteTextTable.find(c, table: table) {
      let moved = text.keys.compactMap { migration.indexKey(after: $0) }
      if moved != text.keys {
        try _dropTextTable(c, table: table)
        if moved.count == text.keys.count, Set(moved).count == moved.count {
          try _createTextTable(c, table: table, quotedTable: quoted, keys: moved)
        }
      }
    }
  }

  /// The indexes the store made on `table` (named `<table>_requestset_…`), in the order they
  /// were made: each one's name, keys (read from its SQL) and whether it is unique.
  static func _madeIndexes(_ c: _SQLiteConnection, table: String) throws -> [(name: String, keys: [String], unique: Bool)] {
    let prefix = "\(table)_requestset_"
    let list = try c.prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY rowid")
    try list.bind([.text(table)])
    var found: [(name: String, keys: [String], unique: Bool)] = []
    while try list.step(doing: "list the indexes of \(table)") {
      let (name, sql) = (list.text(0), list.text(1))
      let keys = _indexedKeys(sql)
      guard name.hasPrefix(prefix), !keys.isEmpty else { continue }
      found.append((name, keys, sql.uppercased().hasPrefix("CREATE UNIQUE")))
    }
    return found
  }

  /// The keys of an index the store made, read from its SQL: each `json_extract(body, '…')`
  /// path literal, in order, as a dotted key; empty when the SQL has another form.
  static func _indexedKeys(_ sql: String) -> [String] {
    var keys: [String] = []
    var rest = Substring(sql)
    let opening = "json_extract(body, '"
    while let range = rest.range(of: opening) {
      rest = rest[range.upperBound...]
      // The literal runs to the next lone quote; a doubled quote is one quote.
      var literal = ""
      var closed = false
      while let ch = rest.first {
        rest = rest.dropFirst()
        if ch == "'" {
          if rest.first == "'" {
            literal.append("'")
            rest = rest.dropFirst()
          } else {
            closed = true
            break
          }
        } else {
          literal.append(ch)
        }
      }
      // `$."owner"."city"`: names hold no `"` (those keys have no path, see `SQLJSON.jsonPath`).
      guard closed, literal.hasPrefix("$") else { return [] }
      var names: [String] = []
      var path = literal.dropFirst()
      while !path.isEmpty {
        guard path.hasPrefix(".\""), let end = path.dropFirst(2).firstIndex(of: "\"") else { return [] }
        names.append(String(path[path.index(path.startIndex, offsetBy: 2)..<end]))
        path = path[path.index(after: end)...]
      }
      guard !names.isEmpty else { return [] }
      keys.append(names.joined(separator: "."))
    }
    return keys
  }

  /// Opening's check that the table's records still decode as `Element`: the first and
  /// the last row are decoded, and a failure names the record and the key.
  static func _checkOpenDecoding(_ c: _SQLiteConnection, table: String, quoted: String) throws {
    guard Element.self != DynamicRecord.self else { return }
    for order in ["ASC", "DESC"] {
      let row = try c.prepare("SELECT id, body FROM \(quoted) ORDER BY seq \(order) LIMIT 1")
      guard try row.step(doing: "read a record of \(table)") else { return }
      let body = try SQLJSON.decode(row.text(1))
      do {
        _ = try body.decode(Element.self)
      } catch {
        throw RequestSetError.recordDoesNotDecode(
          error, as: Element.self, id: (try? SQLJSON.decode(row.text(0))) ?? .string(row.text(0)),
          in: "the table \(table) of \(c.path)")
      }
    }
  }
}

