import RequestSet

/// What the SQL stores read about a relation's subquery (``StoreSubquery``) before they
/// run it in their own statement: the tables it reads and the keys it compares.
///
/// ```swift
/// // pets' "owner.city == 'Oslo'" over stores in one database:
/// SQLSubqueries.tables(.subquery(s))          // ["people"]
/// SQLSubqueries.comparedKeys(s, in: "pets")   // [("pets", "ownerID"), ("people", "id")]
/// ```
public enum SQLSubqueries {
  /// The keys a subquery compares, with the table of each (the record's `key` in `table`,
  /// the column in the related table), nested subqueries' included.
  ///
  /// - Parameters:
  ///   - s: The subquery.
  ///   - table: The table of the records whose `key` it compares.
  /// - Returns: Each compared key with its table, outermost first.
  public static func comparedKeys(_ s: StoreSubquery, in table: String) -> [(table: String, key: String)] {
    var pairs = [(table, s.key), (s.location.table, s.column)]
    func nested(_ filter: StoreFilter) {
      switch filter {
      case .subquery(let inner): pairs += comparedKeys(inner, in: s.location.table)
      case .and(let terms), .or(let terms): terms.forEach(nested)
      case .not(let inner): nested(inner)
      case .constant, .condition, .search: break
      }
    }
    s.query.filter.map(nested)
    return pairs
  }

  /// The tables a filter's subqueries read, nested ones included; nil when one of them
  /// holds a full-text search (which reads the related store's own text index, checked by
  /// that store's reader, not this one).
  ///
  /// - Parameter filter: A filter that may hold subqueries.
  /// - Returns: The tables, outermost first (repeated when read twice), or nil.
  public static func tables(_ filter: StoreFilter) -> [String]? {
    switch filter {
    case .constant, .condition: return []
    case .search: return nil
    case .subquery(let s):
      guard let inner = s.query.filter.map(tables) ?? [] else { return nil }
      return [s.location.table] + inner
    case .and(let terms), .or(let terms):
      var found: [String] = []
      for term in terms {
        guard let more = tables(term) else { return nil }
        found += more
      }
      return found
    case .not(let inner): return tables(inner)
    }
  }
}
