import RequestSet
import Synchronization
import _RequestSetSQL

extension PostgresStore {
  /// Why PostgreSQL cannot run `s` exactly in a statement on this table in the transaction
  /// on `c`, or nil when it can, with the version of each table it reads as that
  /// transaction sees them. Read in the transaction the statement runs in, so what is
  /// checked is what the statement reads:
  /// - every table it reads is RequestSet's, with a summary of keys and kinds, and holds
  ///   only plain rows (none SQL cannot compare exactly: NaN, Decimal, …);
  /// - no compared key holds U+0000, reads through an array in some record, or has held
  ///   arrays or objects (jsonb compares those otherwise than the engine);
  /// - the two keys of no comparison hold, between them, both an integer and a double
  ///   beyond 2^53 (jsonb compares a double by its shortest decimal, not its value; see
  ///   ``_PGTranslation/inexactNumbers(_:table:)``): one scan per key and table version;
  /// - no related query holds a full-text search (its exactness is the related store's
  ///   reader's to decide, in its own snapshot);
  /// - a key an aggregate reduces (`@sum.cost`) holds only numbers, within 2^53 (see
  ///   `_aggregateProblem`).
  func _subqueryProblem(_ s: StoreSubquery, on c: _PGConnection) throws -> (
    problem: String?, versions: [String: UInt64]
  ) {
    guard s.location.database == _database else {
      return ("the table \(s.location.table) is in another database", [:])
    }
    guard let related = SQLSubqueries.tables(.subquery(s)) else {
      return ("a full-text search on a related table runs on its own store", [:])
    }
    let pairs = SQLSubqueries.comparedKeys(s, in: _table)
    for (_, key) in pairs where FieldValue.fieldNames(inKey: key).contains(where: { $0.utf8.contains(0) }) {
      return ("the key holds U+0000, which PostgreSQL text cannot hold", [:])
    }
    // Each table once: its version, its summary and whether it holds rows that are not plain.
    var versions: [String: UInt64] = [:]
    var summaries: [String: StoreFieldKinds] = [:]
    for table in [_table] + related where summaries[table] == nil {
      let quoted = try SQLJSON.quoteIdentifier(table)
      let row = try c.execute(
        """
        SELECT t.version, (SELECT kinds FROM requestset_kinds WHERE name = t.name), \
        EXISTS (SELECT 1 FROM \(quoted) WHERE NOT plain) FROM requestset_tables t WHERE t.name = $1
        """, [table])
      guard row.count == 1, let version = row.string(0, 0).flatMap(UInt64.init) else {
        return ("the table \(table) is not a RequestSet table", [:])
      }
      guard let text = row.string(0, 1) else {
        return ("the table \(table) keeps no summary of its keys", [:])
      }
      guard row.string(0, 2) == "f" else {
        return ("the table \(table) holds values SQL cannot compare exactly (NaN, Decimal, …)", [:])
      }
      summaries[table] = try SQLFieldKinds().kinds(fromText: text)
      versions[table] = version
    }
    for (table, key) in pairs {
      let kinds = summaries[table]!
      if kinds.holds(.array, at: key) || kinds.holds(.object, at: key) {
        return (
          "the key \(key) of \(table) has held arrays or objects, whose jsonb equality is not the engine's",
          [:]
        )
      }
      let names = FieldValue.fieldNames(inKey: key)
      for end in 1..<max(1, names.count)
      where kinds.holds(.array, at: FieldValue.key(forFieldNames: Array(names[..<end]))) {
        return (
          "the key \(key) of \(table) reads through an array in some record, which SQL paths do not map over",
          [:]
        )
      }
    }
    // The comparisons, each a record's key and the related column (`comparedKeys` pairs them).
    for i in stride(from: 0, to: pairs.count - 1, by: 2) {
      let (a, b) = (pairs[i], pairs[i + 1])
      guard summaries[a.table]!.holds(.number, at: a.key), summaries[b.table]!.holds(.number, at: b.key)
      else {
        continue
      }
      let x = try _bigNumbers(a.table, a.key, version: versions[a.table]!, on: c)
      let y = try _bigNumbers(b.table, b.key, version: versions[b.table]!, on: c)
      if (x.integers || y.integers) && (x.doubles || y.doubles) {
        return (
          "the keys \(a.key) and \(b.key) hold integers and doubles beyond 2^53, which jsonb compares by the "
            + "doubles' shortest decimals, not their values", [:]
        )
      }
    }
    if let aggregate = s.aggregate {
      let table = s.location.table
      if let problem = try _aggregateProblem(aggregate, table, summaries[table]!, version: versions[table]!, on: c) {
        return (problem, [:])
      }
      if let count = s.count, case .none(let reason) = _PGTranslation.support(for: count) {
        return ("the test of \(aggregate) runs in process: \(reason)", [:])
      }
    }
    versions[_table] = nil
    return (nil, versions)
  }

  /// Why PostgreSQL cannot compute `aggregate` over `table`'s rows as the engine does, or
  /// nil: the key has held only numbers (nil aside), read through no array, none beyond
  /// 2^53 in magnitude (converted to `float8` exactly; kept by jsonb as their values), and
  /// for `@sum` no integer beyond 2^31, so a group's integers overflow Int64 in no order
  /// (the engine then adds doubles) short of 2^32 records in one group.
  private func _aggregateProblem(
    _ aggregate: StoreSubquery.Aggregate, _ table: String, _ kinds: StoreFieldKinds, version: UInt64,
    on c: _PGConnection
  ) throws -> String? {
    let key = aggregate.key
    let names = FieldValue.fieldNames(inKey: key)
    if names.contains(where: { $0.utf8.contains(0) }) {
      return "the key holds U+0000, which PostgreSQL text cannot hold"
    }
    for kind in [StoreFieldKinds.Kind.bool, .string, .array, .object] where kinds.holds(kind, at: key) {
      return "the key \(key) of \(table) has held values other than numbers, which \(aggregate.collectionOperator) "
        + "compares or adds otherwise in PostgreSQL"
    }
    for end in 1..<max(1, names.count)
    where kinds.holds(.array, at: FieldValue.key(forFieldNames: Array(names[..<end]))) {
      return "the key \(key) of \(table) reads through an array in some record, which SQL paths do not map over"
    }
    guard kinds.holds(.number, at: key) else { return nil }
    let big = try _bigNumbers(table, key, version: version, on: c)
    if big.integers || big.doubles {
      return "the key \(key) of \(table) holds numbers beyond 2^53, which float8 does not keep exactly"
    }
    if aggregate.function == .sum,
      try _bigNumbers(table, key, version: version, on: c, beyond: 2_147_483_648).integers
    {
      return "the key \(key) of \(table) holds integers beyond 2^31, whose sum may overflow Int64 in the engine"
    }
    return nil
  }

  /// Whether `table`'s rows hold, at `key`, integers and doubles beyond `bound` (2^53) in
  /// magnitude: one scan, remembered for the table's version this transaction sees.
  private func _bigNumbers(
    _ table: String, _ key: String, version: UInt64, on c: _PGConnection, beyond bound: Int = 9_007_199_254_740_992
  ) throws -> _PGBigNumbers {
    if let known = _bigNumberKeys.answer([table, key, String(bound)], version: version) { return known }
    let quoted = try SQLJSON.quoteIdentifier(table)
    var translation = _PGTranslation()
    let x = translation.field(FieldValue.fieldNames(inKey: key))
    let magnitude = "jsonb_typeof(\(x)) = 'number' AND abs((\(x) #>> '{}')::numeric) > \(bound)"
    let point = "position('.' IN \(x) #>> '{}')"
    let row = try c.execute(
      """
      SELECT EXISTS (SELECT 1 FROM \(quoted) WHERE \(magnitude) AND \(point) = 0), \
      EXISTS (SELECT 1 FROM \(quoted) WHERE \(magnitude) AND \(point) > 0)
      """, translation.parameters)
    let found = _PGBigNumbers(integers: row.string(0, 0) != "f", doubles: row.string(0, 1) != "f")
    _bigNumberKeys.remember([table, key, String(bound)], version: version, found)
    return found
  }
}

/// What a table's rows hold at a key a subquery compares (see `_subqueryProblem`).
struct _PGBigNumbers: Sendable, Hashable {
  /// Some row holds an integer beyond 2^53 in magnitude there.
  var integers: Bool
  /// Some row holds a double beyond 2^53 in magnitude there.
  var doubles: Bool
}

/// The answers of ``PostgresStore/_bigNumbers``, per table and key, each for the table
/// version it was found at.
final class _PGBigNumberKeys: Sendable {
  private let state = Mutex<[[String]: (version: UInt64, answer: _PGBigNumbers)]>([:])

  /// The answer for `tableAndKey` at `version`, or nil.
  func answer(_ tableAndKey: [String], version: UInt64) -> _PGBigNumbers? {
    state.withLock { $0[tableAndKey].flatMap { $0.version == version ? $0.answer : nil } }
  }

  /// Keeps an answer found at `version`.
  func remember(_ tableAndKey: [String], version: UInt64, _ answer: _PGBigNumbers) {
    state.withLock { $0[tableAndKey] = (version, answer) }
  }
}
