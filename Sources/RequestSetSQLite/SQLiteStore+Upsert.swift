#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import RequestSet
import _RequestSetSQL

extension SQLiteStore {
  /// The most rows one upsert statement writes: three variables a row, under SQLite's
  /// default limit of 32,766 variables.
  static var _upsertRowsPerStatement: Int { 10_000 }

  /// Inserts each record, or replaces the row whose values at `keys` are the record's
  /// (keeping that row's id), with one `INSERT … ON CONFLICT (…) DO UPDATE` statement per
  /// 10,000 records, in one write transaction; nil when no unique index on exactly `keys`
  /// exists (SQLite then refuses the conflict target), when a record or a stored row has a
  /// value SQL cannot compare exactly, or when a key cannot be spelled as a JSON path.
  ///
  /// The engine calls this for `store.upsert(records, on: …)` without a merge closure,
  /// after checking the batch (`RecordStore.upsert(_:on:merge:)`).
  ///
  /// ```swift
  /// try store.createIndex("email", unique: true)
  /// try store.upsert(people, on: "email")
  /// // INSERT INTO "Person"(id, body, plain) VALUES (?, ?, ?), …
  /// //   ON CONFLICT(json_extract(body, '$."email"')) DO UPDATE SET body = …, plain = …
  /// //   RETURNING seq, id, json_extract(body, '$."email"', '$."email"')
  /// ```
  /// - Parameters:
  ///   - records: The batch.
  ///   - fields: Each record's encoded fields.
  ///   - keys: The keys a record matches on.
  /// - Returns: How many rows were inserted and replaced, or nil.
  /// - Throws: `RequestSetError` `.duplicateID` when an inserted record's id is taken,
  ///   `.uniqueViolation` for another unique index; nothing is written then. `.closed`.
  public func upsert(_ records: [Element], fields: [FieldValue], on keys: [String]) throws -> UpsertResult? {
    var paths: [String] = []
    for key in keys {
      guard let path = _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: key)) else { return nil }
      paths.append(path)
    }
    guard var batch = try SQLUpsertBatch(records, fields: fields, keys: keys) else { return nil }
    let target = paths.map { "json_extract(body, \($0))" }.joined(separator: ", ")
    // json_extract with two or more paths returns a JSON array; one key is named twice.
    let returnedKeys = "json_extract(body, \((paths.count == 1 ? paths + paths : paths).joined(separator: ", ")))"
    let idPath = _SQLiteTranslation.pathLiteral(["id"])!
    let batchKinds = _kinds.noting(fields, as: Element.self)
    let outcome: (version: UInt64, statements: Int)? = try _write { c in
      batch.reset()  // a transaction run again starts over
      let notPlain = try c.cached("SELECT EXISTS(SELECT 1 FROM \(_quotedTable) WHERE NOT plain)")
      if try notPlain.step(doing: "check for rows SQL cannot compare"), notPlain.int(0) != 0 { return nil }
      let newest = try c.cached("SELECT coalesce(max(seq), 0) FROM \(_quotedTable)")
      _ = try newest.step(doing: "read the last row")
      let lastSeq = newest.int(0)
      sqlite3_reset(newest.pointer)
      var statements = 0
      var start = 0
      while start < batch.rows.count {
        let end = min(start + Self._upsertRowsPerStatement, batch.rows.count)
        let values = repeatElement("(?, ?, 1)", count: end - start).joined(separator: ", ")
        let sql =
          "INSERT INTO \(_quotedTable)(id, body, plain) VALUES \(values) ON CONFLICT(\(target)) DO UPDATE SET "
          + "body = CASE WHEN \(_quotedTable).id = excluded.id THEN excluded.body "
          + "ELSE json_set(excluded.body, \(idPath), json(\(_quotedTable).id)) END "
          + "RETURNING seq, id, \(returnedKeys)"
        let statement: _SQLiteStatement
        do {
          statement = try c.prepare(sql)
        } catch let error as RequestSetError where error.message.contains("ON CONFLICT clause does not match") {
          return nil  // no unique index on exactly these keys: the engine reads and applies
        }
        var binding: Int32 = 1
        for row in batch.rows[start..<end] {
          try statement.bind(.text(row.id), at: binding)
          try statement.bind(.text(row.body), at: binding + 1)
          binding += 2
        }
        statements += 1
        do {
          while try statement.step(doing: "upsert records") {
            try batch.note(keyValues: statement.text(2), id: statement.text(1), inserted: statement.int(0) > lastSeq)
          }
        } catch let error as RequestSetError where error.code == .uniqueViolation {
          if error.message.contains("constraint failed: \(table).id") {
            throw RequestSetError(
              .duplicateID,
              "A record of the upsert batch has an id another stored record holds (\(error.message)). Give it "
                + "another id; nothing was written.")
          }
          throw RequestSetError(
            .uniqueViolation,
            "The upsert would repeat a value of another unique index on \(table) (\(error.message)). Change the "
              + "value, or drop that unique index; nothing was written.")
        }
        start = end
      }
      if let text = try _kinds.merged(stored: Self._storedKinds(c, table: table), batch: batchKinds) {
        try Self._writeKinds(c, table: table, text: text)
      }
      let version = try _bump(c)
      try _log(c, version, batch.logged)
      return (version, statements)
    }
    guard let outcome else { return nil }
    _publish(StoreCommit(version: outcome.version, changes: batch.commitChanges))
    return batch.result(statements: outcome.statements)
  }
}
