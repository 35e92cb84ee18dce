import Foundation
import RequestSet
import _RequestSetSQL

// Schema migrations on a PostgreSQL table: every pending migration of the store's
// `Migrator` runs in one transaction, under the table's metadata row lock, with the names
// recorded in `requestset_migrations`, so a failure, a lost connection or a crash leaves
// the table as it was, the migrations pending.

extension PostgresStore {
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

  /// Runs the pending migrations now, in one transaction, and returns their names.
  ///
  /// ```swift
  /// try store.migrate()   // ["v3: kg"]
  /// ```
  /// - Returns: The names run, in order; empty when none were pending.
  /// - Throws: `RequestSetError` `.migrationFailed` (nothing changed, the migrations stay
  ///   pending), `.connectionFailed`.
  /// - Complexity: O(*n*) in the table's rows.
  @discardableResult
  public func migrate() throws -> [String] {
    let migrator = _migrationState.withLock { $0.migrator }
    let names = try _pool.with { c in
      let names = try _runMigrations(c, migrator: migrator)
      _noteCommit(c)
      return names
    }
    _migrationState.withLock {
      $0.applied += names
      $0.hold = nil
    }
    return names
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
      "The table \(_quoted) has not run the migration \(hold.debugDescription) (and maybe later ones), so it cannot "
        + "be written yet. Call migrate() on the store, or open it with migratesOnOpen: true.")
  }

  /// The names the table has run, in order.
  func _applied(_ c: _PGConnection) throws -> [String] {
    let rows = try c.execute(
      "SELECT name FROM requestset_migrations WHERE tbl = $1 ORDER BY position", [_table])
    return (0..<rows.count).compactMap { rows.string($0, 0) }
  }

  /// Runs the migrations `c`'s table has not run, in one transaction; returns their names.
  func _runMigrations(_ c: _PGConnection, migrator: Migrator) throws -> [String] {
    try migrator.validate()
    return try _transaction(c) { () -> [String] in
      let row = try c.execute("SELECT version FROM requestset_tables WHERE name = $1 FOR UPDATE", [_table])
      guard row.count == 1, let current = row.string(0, 0).flatMap(UInt64.init) else {
        throw RequestSetError(
          .schemaMismatch,
          "The table \(_quoted) is no longer listed in requestset_tables. Open the store again.")
      }
      let pending = migrator.pending(after: try _applied(c))
      guard !pending.isEmpty else { return [] }
      var kinds: StoreFieldKinds? = try _storedKinds(c).map { try StoreFieldKinds(encodedText: $0) }
      for migration in pending {
        if let statements = _statements(for: migration) {
          for s in statements {
            if let check = s.conflict {
              let found = try c.execute(check.sql, check.parameters)
              if found.count > 0 {
                let idText = found.string(0, 0) ?? "null"
                let id = (try? SQLJSON.decode(idText)) ?? .string(idText)
                let held = (try? SQLJSON.decode(found.string(0, 1) ?? "null")) ?? .null
                throw RequestSetError(
                  .migrationFailed,
                  "The migration \(migration.name.debugDescription) failed on the record with id \(id) at its step "
                    + "\(s.step): \(s.conflictReason(held)). Fix the migration (or the record) and open the store "
                    + "again; the store is as it was before the migration.")
              }
            }
            try c.execute(s.sql, s.parameters)
          }
          kinds = kinds?.migrated(by: migration)
        } else {
          kinds = nil
          try _migrateRecordByRecord(c, migration: migration)
        }
        try _followIndexes(c, migration: migration)
        try c.execute(
          "INSERT INTO requestset_migrations (tbl, name, applied) VALUES ($1, $2, now())",
          [_table, migration.name])
      }
      try _writeKinds(c, try (kinds ?? _kindsFromRows(c)).encodedText())
      // The rows the migration changed have no words yet (see PostgresStore+TextIndex.swift).
      if let keys = try _textKeys(c) { try _fillTextWords(c, keys: keys) }
      let next = current + 1
      try c.execute("UPDATE requestset_tables SET version = $2 WHERE name = $1", [_table, String(next)])
      if Element.self != DynamicRecord.self {
        try c.execute(
          "UPDATE requestset_tables SET type = $2 WHERE name = $1",
          [_table, String(describing: Element.self)])
      }
      // No list of changes: observers read the table again.
      try c.execute(
        "INSERT INTO requestset_changes (name, version, changes) VALUES ($1, $2, NULL)",
        [_table, String(next)])
      try c.execute("SELECT pg_notify('requestset', $1)", ["\(next) \(_table)"])
      return pending.map(\.name)
    }
  }

  /// One statement of a migration run in SQL, with a query that must find no row first.
  struct _MigrationStatement {
    var step: Migration.Step
    var sql: String
    var parameters: [String?]
    var conflict: (sql: String, parameters: [String?])?
    var conflictReason: (FieldValue) -> String = { _ in "" }
  }

  /// The statements that run `migration` exactly, or nil when a step has none (a dotted
  /// key, a conversion, a closure): it then runs record by record.
  func _statements(for migration: Migration) -> [_MigrationStatement]? {
    var out: [_MigrationStatement] = []
    func single(_ key: String) -> String? {
      let names = FieldValue.fieldNames(inKey: key)
      guard names.count == 1, !names[0].contains("\u{0}") else { return nil }
      return names[0]
    }
    for step in migration.steps {
      switch step.form {
      case .add(let key, let value):
        guard let k = single(key) else { return nil }
        let encoded = SQLJSON.encode(value)
        out.append(
          _MigrationStatement(
            step: step,
            sql: "UPDATE \(_quoted) SET body = body || jsonb_build_object($1::text, $2::jsonb)"
              + "\(encoded.plain ? "" : ", plain = false") "
              + "WHERE NOT (body ? $1) OR jsonb_typeof(body -> $1) = 'null'",
            parameters: [k, encoded.text]))
      case .rename(let from, let to):
        guard let a = single(from), let b = single(to) else { return nil }
        guard a != b else { continue }
        out.append(
          _MigrationStatement(
            step: step,
            sql: "UPDATE \(_quoted) SET body = (body - $1::text) || jsonb_build_object($2::text, body -> $1) "
              + "WHERE body ? $1",
            parameters: [a, b],
            conflict: (
              "SELECT id, (body -> $2)::text FROM \(_quoted) WHERE body ? $1 AND body ? $2 AND jsonb_typeof(body -> $2) <> 'null' "
                + "ORDER BY seq LIMIT 1", [a, b]
            ),
            conflictReason: { "the record holds both \(from) and \(to) (\($0)); remove one first" }))
      case .remove(let key):
        guard let k = single(key) else { return nil }
        out.append(
          _MigrationStatement(
            step: step, sql: "UPDATE \(_quoted) SET body = body - $1::text WHERE body ? $1", parameters: [k]))
      case .convert, .transform:
        return nil
      }
    }
    return out
  }

  /// Runs `migration` on every row through the engine's own steps, 1,000 rows at a time,
  /// each batch written back with one statement.
  func _migrateRecordByRecord(_ c: _PGConnection, migration: Migration) throws {
    let migrator = Migrator([migration])
    var after: Int64 = -1
    while true {
      let rows = try c.execute(
        "SELECT seq, body::text FROM \(_quoted) WHERE seq > $1 ORDER BY seq LIMIT 1000", [String(after)])
      guard rows.count > 0 else { return }
      var seqs: [String] = []
      var records: [DynamicRecord] = []
      for r in 0..<rows.count {
        seqs.append(rows.string(r, 0) ?? "0")
        records.append(try DynamicRecord(SQLJSON.decode(rows.string(r, 1) ?? "{}")))
      }
      after = Int64(seqs.last!) ?? after
      let migrated = try migrator.migrate(records)
      let bodies = migrated.map { SQLJSON.encode($0.value) }
      try c.execute(
        "UPDATE \(_quoted) AS t SET body = v.body::jsonb, plain = v.plain "
          + "FROM unnest($1::bigint[], $2::text[], $3::boolean[]) AS v(seq, body, plain) WHERE t.seq = v.seq",
        [
          _arrayLiteral(seqs), _arrayLiteral(bodies.map(\.text)),
          _arrayLiteral(bodies.map { $0.plain ? "t" : "f" }),
        ])
    }
  }

  /// Moves each index the store made (one key or composite) to the keys
  /// `Migration.indexKey(after:)` gives its keys, and drops the ones a removed key takes
  /// with it: the rule every store follows. An index's keys are read back from the server's
  /// own text of each column (`(body #> '{owner,city}'::text[])`), so an index made by an
  /// older build moves too.
  func _followIndexes(_ c: _PGConnection, migration: Migration) throws {
    for (name, keys, unique) in try _madeIndexes(c) {
      let moved = keys.map { migration.indexKey(after: $0) }
      guard moved != keys.map(Optional.some) else { continue }
      try c.execute("DROP INDEX IF EXISTS \(try SQLJSON.quoteIdentifier(name))")
      let newKeys = moved.compactMap { $0 }
      // A key that went takes the index with it; so does a rename that leaves a key twice.
      guard newKeys.count == keys.count, Set(newKeys).count == newKeys.count else { continue }
      let columnsSQL = try newKeys.map {
        "(body #> \(try _PGSQL.literalPath(FieldValue.fieldNames(inKey: $0))))"
      }
      let newName = try SQLJSON.quoteIdentifier(
        _indexName(newKeys.count == 1 ? "key " + newKeys[0] : "keys " + newKeys.joined(separator: "\u{1F}")))
      try c.execute(
        "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(newName) ON \(_quoted) (\(columnsSQL.joined(separator: ", ")))"
      )
    }
    // The text index by the same rule: its keys move, and every row's words are computed
    // again from the moved keys when the migration's writes are done; a removed key drops it.
    if let textKeys = try _textKeys(c) {
      let moved = textKeys.compactMap { migration.indexKey(after: $0) }
      if moved != textKeys {
        if moved.count == textKeys.count, Set(moved).count == moved.count {
          try c.execute(
            "UPDATE requestset_text_indexes SET keys = $2 WHERE name = $1",
            [_table, SQLJSON.encode(.array(moved.map(FieldValue.string))).text])
          try c.execute("UPDATE \(_quoted) SET words = NULL")
        } else {
          try _dropTextIndex(c)
        }
      }
    }
  }

  /// The indexes the store made on its table (named `rs_…`), oldest first:
  /// each one's name, keys (read from the server's own text of each column) and whether it
  /// is unique. Indexes of another form (a column that is not `body #> path`) are left out.
  func _madeIndexes(_ c: _PGConnection) throws -> [(name: String, keys: [String], unique: Bool)] {
    // One row per index of the table named as the store names them (`rs_…`): its name,
    // whether it is unique, and its columns' paths as a JSON array of arrays (a column of
    // another form reads null).
    let found = try c.execute(
      """
      SELECT c.relname, ix.indisunique::text,
        (SELECT json_agg(replace((regexp_match(pg_get_indexdef(ix.indexrelid, k, true),
                  '^\\(body #> ''(.*)''::text\\[\\]\\)$'))[1], '''''', '''')::text[] ORDER BY k)
           FROM generate_series(1, ix.indnatts::int) AS k)::text
      FROM pg_index ix JOIN pg_class c ON c.oid = ix.indexrelid
      WHERE ix.indrelid = to_regclass($1) AND c.relname LIKE 'rs\\_%'
      ORDER BY c.oid
      """, [_quoted])
    var made: [(name: String, keys: [String], unique: Bool)] = []
    for row in 0..<found.count {
      guard let name = found.string(row, 0), let text = found.string(row, 2),
        case .array(let columns)? = try? SQLJSON.decode(text)
      else { continue }
      let keys = columns.compactMap { column -> String? in
        guard case .array(let names) = column, !names.isEmpty else { return nil }
        let strings = names.compactMap { name -> String? in
          if case .string(let s) = name { return s }
          return nil
        }
        return strings.count == names.count ? strings.joined(separator: ".") : nil
      }
      guard !keys.isEmpty, keys.count == columns.count else { continue }
      made.append((name, keys, found.string(row, 1) == "true"))
    }
    return made
  }

  /// Opening's check that the table's records still decode as `Element`: the first and
  /// the last row are decoded, and a failure names the record and the key.
  func _checkOpenDecoding(_ c: _PGConnection) throws {
    guard Element.self != DynamicRecord.self else { return }
    for order in ["ASC", "DESC"] {
      let row = try c.execute("SELECT id, body::text FROM \(_quoted) ORDER BY seq \(order) LIMIT 1")
      guard row.count == 1 else { return }
      do {
        _ = try SQLJSON.decode(row.string(0, 1) ?? "{}").decode(Element.self)
      } catch {
        let id = row.string(0, 0) ?? "?"
        throw RequestSetError.recordDoesNotDecode(
          error, as: Element.self, id: (try? SQLJSON.decode(id)) ?? .string(id), in: "the table \(_quoted)")
      }
    }
  }
}
