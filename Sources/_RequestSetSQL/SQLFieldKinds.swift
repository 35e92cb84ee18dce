import RequestSet
import Synchronization

/// The summary of keys and kinds (`StoreFieldKinds`) a SQL store keeps per table, in
/// the row `requestset_kinds(name, kinds)`: written in the same transaction as the records
/// that add to it, read by each reader inside its read transaction, so the engine checks a
/// query against exactly the records that reader sees.
///
/// One per store: it remembers the last summary text it read or wrote and its parsed
/// value, so a writer notes a batch without parsing, and a summary another process did
/// not change is not parsed again.
///
/// ```swift
/// let kinds = SQLFieldKinds()
/// let batch = try kinds.noting(records.map { try FieldValue(encoding: $0) }, as: Animal.self)
/// // in the write transaction:
/// if let text = try kinds.merged(stored: storedText, batch: batch) { write(text) }
/// ```
public final class SQLFieldKinds: Sendable {
  /// The `CREATE TABLE` statement of the summary table (the same on both engines).
  public static let createTable =
    "CREATE TABLE IF NOT EXISTS requestset_kinds(name TEXT PRIMARY KEY, kinds TEXT NOT NULL)"

  private let last = Mutex<(text: String, kinds: StoreFieldKinds)?>(nil)

  /// A cache that knows no summary yet.
  public init() {}

  /// The summary `text` holds, parsed once per distinct text.
  ///
  /// - Throws: `RequestSetError` `.schemaMismatch` when the text is not a summary.
  public func kinds(fromText text: String) throws -> StoreFieldKinds {
    if let known = last.withLock({ $0 }), known.text == text { return known.kinds }
    let kinds = try StoreFieldKinds(encodedText: text)
    last.withLock { $0 = (text, kinds) }
    return kinds
  }

  /// The last summary read, with `records` noted: what a write adds. Noting starts from
  /// the last summary read so the record type is decoded for its optional keys only once.
  public func noting<Element: Decodable>(_ records: some Sequence<FieldValue>, as type: Element.Type)
    -> StoreFieldKinds
  {
    var kinds = last.withLock { $0?.kinds } ?? StoreFieldKinds()
    for record in records { kinds.note(record, as: Element.self) }
    return kinds
  }

  /// The summary to write in a write transaction: the stored one (`stored`, nil when the
  /// table has no row yet) with `batch` added, or nil when the stored one already holds
  /// all of it.
  public func merged(stored: String?, batch: StoreFieldKinds) throws -> String? {
    var kinds = try stored.map { try self.kinds(fromText: $0) } ?? StoreFieldKinds()
    if stored != nil && kinds.contains(batch) { return nil }
    kinds.formUnion(batch)
    // Not remembered: the transaction may yet roll back, and what is remembered must be
    // a summary some commit wrote (it is where `noting` starts).
    return kinds.encodedText()
  }
}
