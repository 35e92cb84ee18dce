import RequestSet

/// An upsert batch as both SQL stores write it: each record's row values, and the changes
/// the returned rows say were made, in batch order.
///
/// The store runs `INSERT … ON CONFLICT (…) DO UPDATE … RETURNING seq, id, <key values as
/// a JSON array>` and notes each returned row; the database returns rows in no promised
/// order, so a row is matched to its record by its key values (no two records of a batch
/// share them: the engine checked).
///
/// ```swift
/// guard var batch = try SQLUpsertBatch(records, fields: fields, keys: ["email"]) else { return nil }
/// // for each returned row:
/// try batch.note(keyValues: keysText, id: idText, inserted: seq > lastSeq)
/// ```
public struct SQLUpsertBatch<Element: Record> {
  /// Each record's `id` column text and JSON body, in batch order.
  public let rows: [(id: String, body: String)]
  /// What each record became, once its row is noted: `.insert`, or `.save` of the new
  /// record with the stored record's id.
  public private(set) var changes: [RecordChange<Element>?]
  /// The `(op, id)` pairs of the change log, in the order rows were noted.
  public private(set) var logged: [(op: String, id: String)] = []
  /// How many noted rows replaced a stored one.
  public private(set) var updated = 0

  private let records: [Element]
  private let fields: [FieldValue]
  private let keys: [String]
  private let positions: [FieldValue: Int]

  /// The batch's rows; nil when a record holds a value SQL cannot compare exactly (the
  /// engine then upserts through `apply`).
  ///
  /// - Parameters:
  ///   - records: The batch.
  ///   - fields: Each record's encoded fields.
  ///   - keys: The keys records match on.
  public init?(_ records: [Element], fields: [FieldValue], keys: [String]) throws {
    var rows: [(id: String, body: String)] = []
    rows.reserveCapacity(records.count)
    var positions: [FieldValue: Int] = [:]
    positions.reserveCapacity(records.count)
    for (record, tree) in zip(records, fields) {
      let body = SQLJSON.encode(tree)
      guard body.plain else { return nil }
      positions[.array(keys.map { tree[path: $0] ?? .null })] = rows.count
      rows.append((SQLJSON.encode(try FieldValue(encoding: record.id)).text, body.text))
    }
    self.rows = rows
    self.records = records
    self.fields = fields
    self.keys = keys
    self.positions = positions
    changes = Array(repeating: nil, count: records.count)
  }

  /// Forgets every noted row: a retried transaction starts over.
  public mutating func reset() {
    changes = Array(repeating: nil, count: records.count)
    logged = []
    updated = 0
  }

  /// Notes one returned row.
  ///
  /// - Parameters:
  ///   - keyValues: The row's values at the keys, as a JSON array (its first `keys.count`
  ///     elements are used).
  ///   - id: The row's `id` column: the stored record's id for a replaced row.
  ///   - inserted: Whether the row is new (its `seq` is past the table's last before).
  /// - Throws: `RequestSetError` `.storeFailed` when the row matches no record.
  public mutating func note(keyValues: String, id: String, inserted: Bool) throws {
    guard case .array(let returned) = try SQLJSON.decode(keyValues),
      let i = positions[.array(Array(returned.prefix(keys.count)))]
    else {
      throw RequestSetError(
        .storeFailed, "An upserted row's key values matched no record of the batch; nothing was written.")
    }
    if inserted {
      changes[i] = .insert(records[i])
      logged.append(("insert", id))
    } else {
      let storedID = try SQLJSON.decode(id).decode(Element.ID.self)
      changes[i] = .save(try records[i]._upsertReplacing(id: storedID, fields: fields[i]))
      logged.append(("save", id))
      updated += 1
    }
  }

  /// The commit's changes, in batch order.
  public var commitChanges: [RecordChange<Element>] { changes.compactMap { $0 } }

  /// The counts, with how many statements wrote them.
  public func result(statements: Int) -> UpsertResult {
    UpsertResult(inserted: commitChanges.count - updated, updated: updated, _statements: statements)
  }
}
