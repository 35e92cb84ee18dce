import RequestSet
import _RequestSetSQL

extension PostgresStore {
  /// The most rows one upsert statement writes (they travel as bound arrays).
  static var _upsertRowsPerStatement: Int { 10_000 }

  /// Inserts each record, or replaces the row whose values at `keys` are the record's
  /// (keeping that row's id), with one `INSERT … ON CONFLICT (…) DO UPDATE` statement per
  /// 10,000 records, in one transaction; nil when no unique index on exactly `keys` exists
  /// (PostgreSQL then refuses the conflict target, 42P10), or when a record or a stored row
  /// has a value SQL cannot compare exactly.
  ///
  /// The engine calls this for `store.upsert(records, on: …)` without a merge closure,
  /// after checking the batch (`RecordStore.upsert(_:on:merge:)`).
  ///
  /// ```swift
  /// try store.createIndex("email", unique: true)
  /// try store.upsert(people, on: "email")
  /// // INSERT INTO "Person" (id, body, plain) SELECT … FROM unnest($1::text[], $2::jsonb[])
  /// //   ON CONFLICT ((body #> '{email}'::text[])) DO UPDATE SET body = … RETURNING …
  /// ```
  /// - Parameters:
  ///   - records: The batch.
  ///   - fields: Each record's encoded fields.
  ///   - keys: The keys a record matches on.
  /// - Returns: How many rows were inserted and replaced, or nil.
  /// - Throws: `RequestSetError` `.duplicateID` when an inserted record's id is taken,
  ///   `.uniqueViolation` for another unique index; nothing is written then.
  ///   `.connectionFailed`.
  public func upsert(_ records: [Element], fields: [FieldValue], on keys: [String]) throws -> UpsertResult? {
    let paths = try keys.map { try _PGSQL.literalPath(FieldValue.fieldNames(inKey: $0)) }
    guard var batch = try SQLUpsertBatch(records, fields: fields, keys: keys) else { return nil }
    let target = paths.map { "(body #> \($0))" }.joined(separator: ", ")
    let returnedKeys = "jsonb_build_array(\(paths.map { "body #> \($0)" }.joined(separator: ", ")))::text"
    let kinds = _fieldKinds.noting(fields, as: Element.self)
    var statements = 0
    do {
      let version = try _mappingDuplicate {
        try _write(ifVersion: nil, changes: { batch.commitChanges }, kinds: kinds) { c in
          if try c.execute("SELECT EXISTS (SELECT 1 FROM \(_quoted) WHERE NOT plain)").string(0, 0) == "t" {
            throw _NoUpsertIndex()
          }
          let lastSeq =
            Int64(try c.execute("SELECT coalesce(max(seq), 0) FROM \(_quoted)").string(0, 0) ?? "0") ?? 0
          batch.reset()  // a retried transaction starts over
          statements = 0
          var start = 0
          while start < batch.rows.count {
            let end = min(start + Self._upsertRowsPerStatement, batch.rows.count)
            let chunk = batch.rows[start..<end]
            let result: _PGResult
            do {
              result = try c.execute(
                """
                INSERT INTO \(_quoted) AS t (id, body, plain)
                SELECT id, body, true FROM unnest($1::text[], $2::jsonb[]) AS b(id, body)
                ON CONFLICT (\(target)) DO UPDATE SET body = CASE WHEN t.id = EXCLUDED.id THEN EXCLUDED.body
                  ELSE jsonb_set(EXCLUDED.body, '{id}', t.id::jsonb) END
                RETURNING seq, id, \(returnedKeys)
                """, [_arrayLiteral(chunk.map(\.id)), _arrayLiteral(chunk.map(\.body))])
            } catch let error as RequestSetError where (error.underlying as? _PGDiagnostic)?.state == "42P10"
            {
              throw _NoUpsertIndex()  // no unique index on exactly these keys: the engine reads and applies
            }
            statements += 1
            for row in 0..<result.count {
              guard let seq = result.string(row, 0).flatMap(Int64.init), let id = result.string(row, 1),
                let keyValues = result.string(row, 2)
              else {
                throw RequestSetError(
                  .storeFailed, "An upserted row came back without its seq, id or key values.")
              }
              try batch.note(keyValues: keyValues, id: id, inserted: seq > lastSeq)
            }
            start = end
          }
          return true
        }
      }
      guard version != nil else { return nil }
    } catch is _NoUpsertIndex {
      return nil
    } catch let error as RequestSetError where error.code == .uniqueViolation {
      throw RequestSetError(
        .uniqueViolation,
        "The upsert would repeat a value of another unique index on \(_quoted) (\(error.message)). Change the "
          + "value, or drop that unique index; nothing was written.", underlying: error.underlying)
    }
    return batch.result(statements: statements)
  }
}

/// No unique index matches an upsert's keys (or a row SQL cannot compare is stored): the
/// engine upserts through `apply` instead.
private struct _NoUpsertIndex: Error {}
