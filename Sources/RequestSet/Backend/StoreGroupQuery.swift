/// A group query a ``QueryPushdownStore`` may run: the records ``query`` selects, grouped by
/// ``keys``, with ``columns`` computed per group (``StoreQueryReader/groups(_:)``).
///
/// The engine hands it over for ``RequestSet/groupBy(_:)-(String...)`` when the set's query is one
/// stage the store runs exactly with no sort, distinct or window, and every key has been
/// checked against the store's ``StoreFieldKinds``. `having` and the rows' order apply to
/// the rows the store returns, in process.
///
/// ```swift
/// // animals.filter("age", .greaterThan, 2).groupBy("species").aggregate(.count, .max("age"))
/// StoreGroupQuery(query: StoreQuery(filter: …), keys: ["species"], columns: [.count, .aggregate(.max, key: "age")])
/// ```
public struct StoreGroupQuery: Sendable, CustomStringConvertible {
  /// One value computed per group.
  public enum Column: Sendable, Hashable, CustomStringConvertible {
    /// The number of records in the group.
    case count
    /// An aggregate of one key's values, as ``StoreQueryReader/aggregate(_:of:_:)``
    /// computes it over the whole selection.
    case aggregate(StoreAggregate, key: String)

    /// The key aggregated; nil for `count`.
    ///
    /// ```swift
    /// StoreGroupQuery.Column.aggregate(.max, key: "age").key   // "age"
    /// ```
    public var key: String? {
      if case .aggregate(_, let key) = self { return key }
      return nil
    }

    /// `count`, or the function and the key, as `max(age)`.
    public var description: String {
      switch self {
      case .count: return "count"
      case .aggregate(let function, let key): return "\(function.rawValue)(\(key))"
      }
    }
  }

  /// The records grouped: a filter only (no sort, distinct or window).
  public var query: StoreQuery
  /// The keys whose values make a group, in order.
  public var keys: [String]
  /// What each row holds after the group's key values, in order.
  public var columns: [Column]

  /// A group query.
  ///
  /// ```swift
  /// StoreGroupQuery(query: StoreQuery(), keys: ["species"], columns: [.count])
  /// ```
  public init(query: StoreQuery, keys: [String], columns: [Column]) {
    self.query = query
    self.keys = keys
    self.columns = columns
  }

  /// The query, the keys and the columns, as `GROUP BY species: count, max(age) WHERE …`.
  public var description: String {
    "GROUP BY \(keys.joined(separator: ", ")): \(columns.map(\.description).joined(separator: ", ")) \(query)"
  }
}
