/// Where a store keeps its records inside a database other stores may share: a SQLite
/// file, a PostgreSQL database. Two stores with the same ``database`` can read each
/// other's table in one statement.
///
/// ```swift
/// let owners = try SQLiteStore<Owner>(path: "zoo.sqlite", table: "owners")
/// owners.location   // StoreLocation(database: "sqlite:/srv/zoo.sqlite", table: "owners")
/// ```
public struct StoreLocation: Sendable, Hashable {
  /// The database, as one string that names it exactly (a canonical file path with the
  /// engine's name in front): two stores share it when the strings are equal.
  public var database: String
  /// The store's table in that database.
  public var table: String

  /// A location.
  ///
  /// ```swift
  /// StoreLocation(database: "sqlite:/srv/zoo.sqlite", table: "owners")
  /// ```
  public init(database: String, table: String) {
    self.database = database
    self.table = table
  }
}

/// A condition through a relation that a store runs in its own statement, as a subquery
/// on a related store in the same database (``StoreFilter/subquery(_:)``).
///
/// The record's ``key`` must hold one of the values of ``column`` in the related store's
/// records that ``query`` selects (with ``count``, of the groups of those records by
/// ``column`` whose number of records satisfies it, or, with ``aggregate`` too, whose
/// collection operator of a key does). Values compare as the engine's `IN` does: numbers
/// by value, strings exactly, nil never.
///
/// The engine hands one only to a store whose reader supports it
/// (``StoreQueryReader/support(for:)-(StoreSubquery)``); any other store gets the ids
/// themselves, read from the related store first (a semi-join).
///
/// ```swift
/// // animals.filter("owner.city == %@", "Paris") over two SQLite stores in one file
/// // reaches the animals' store as
/// // ownerId IN (SELECT id FROM owners WHERE city == "Paris")
/// ```
public struct StoreSubquery: Sendable, CustomStringConvertible {
  /// The record's key: a to-one's foreign key, or `id` for a to-many.
  public var key: String
  /// The related store's table and database.
  public var location: StoreLocation
  /// The related records' key whose values the subquery selects: `id` for a to-one, the
  /// inverse key for a to-many.
  public var column: String
  /// The related store's query: its filter, exactly as that store's reader runs it.
  public var query: StoreQuery
  /// When set, a condition on a number (with an empty key): the subquery groups the
  /// related records by ``column`` and selects the values whose group's size satisfies it.
  public var count: StoreCondition?
  /// With ``count``: true to select the values whose group's size satisfies it, false for
  /// those whose group's size does not (a parent with no children is in no group, so
  /// "count is 0" is written as "not among the values whose count fails `== 0`").
  public var countPasses: Bool
  /// With ``count``: when set, ``count`` tests each group's collection operator of a key
  /// (`@sum` of `cost`) instead of its size, the value the engine's `@sum`, `@avg`, `@min`
  /// or `@max` gives for the group's values of that key in store order (nil skipped; a
  /// value it cannot compute is nil). A store that cannot compute it so declines the
  /// subquery.
  public var aggregate: Aggregate?

  /// A collection operator over one key of a group's records (``StoreSubquery/aggregate``).
  ///
  /// ```swift
  /// StoreSubquery.Aggregate(function: .sum, key: "cost").description   // "@sum.cost"
  /// ```
  public struct Aggregate: Sendable, Hashable, CustomStringConvertible {
    /// The operator: `.sum` is `@sum`, `.average` `@avg`, `.min` `@min`, `.max` `@max`.
    public var function: StoreAggregate
    /// The key of the related records it reduces.
    public var key: String

    /// An aggregate of `key`.
    ///
    /// ```swift
    /// StoreSubquery.Aggregate(function: .max, key: "cost")
    /// ```
    public init(function: StoreAggregate, key: String) {
      self.function = function
      self.key = key
    }

    /// The operator as a key path writes it: `@sum`, `@avg`, `@min` or `@max`.
    public var collectionOperator: String {
      switch function {
      case .sum: return "@sum"
      case .average: return "@avg"
      case .min: return "@min"
      case .max: return "@max"
      }
    }

    /// What the engine's operator gives for `values` (one group's values of ``key``, in
    /// store order, nil for a record without it): nil skipped; `@sum` an integer while the
    /// integers fit, else the doubles added in order; `@avg` 0 for none; `@min`/`@max`
    /// nil for none; nil for values it cannot compute (text summed, kinds mixed).
    ///
    /// ```swift
    /// StoreSubquery.Aggregate(function: .sum, key: "cost").reduce([.int(2), .null, .int(3)])   // .int(5)
    /// ```
    /// - Parameter values: The group's values.
    /// - Returns: The operator's value.
    /// - Complexity: O(*n*).
    public func reduce(_ values: [FieldValue]) -> FieldValue {
      let f: _Function
      switch function {
      case .sum: f = .sumOperator
      case .average: f = .avgOperator
      case .min: f = .minOperator
      case .max: f = .maxOperator
      }
      return (try? _ExpressionValues.apply(f, [.array(values)])) ?? .null
    }

    /// `@sum.cost`.
    public var description: String { collectionOperator + "." + key }
  }

  /// A subquery; the engine builds these, a test of a store may too.
  ///
  /// ```swift
  /// let owners = StoreLocation(database: "sqlite:/srv/zoo.sqlite", table: "owners")
  /// let s = StoreSubquery(key: "ownerId", location: owners, column: "id", query: StoreQuery())
  /// ```
  public init(
    key: String, location: StoreLocation, column: String, query: StoreQuery, count: StoreCondition? = nil,
    countPasses: Bool = true, aggregate: Aggregate? = nil
  ) {
    self.key = key
    self.location = location
    self.column = column
    self.query = query
    self.count = count
    self.countPasses = countPasses
    self.aggregate = aggregate
  }

  /// `ownerId IN (SELECT id FROM owners WHERE …)`, in the engine's notation.
  public var description: String {
    var text = "\(key) IN (SELECT \(column) FROM \(location.table)"
    if let filter = query.filter { text += " WHERE " + filter.description }
    if let count {
      text +=
        " GROUP BY \(column) HAVING \(countPasses ? "" : "NOT ")\(aggregate?.description ?? "count") "
        + count.description.trimmingLeadingSpace
    }
    return text + ")"
  }
}

extension String {
  fileprivate var trimmingLeadingSpace: String { String(drop { $0 == " " }) }
}

/// A relation's condition kept as a subquery (see RelationResolution.swift): the record's
/// store runs it in its own statement when it shares a database with the related store
/// and its reader supports it; otherwise, and whenever the condition runs in process, it
/// is read as ids (``materialized()``), exactly as a semi-join on stores in two files.
@usableFromInline
struct _RelatedSubquery<Element: Sendable>: Sendable {
  /// What the record's store runs.
  let subquery: StoreSubquery
  /// The `relation` lines of `explain()` when the store runs it.
  let notes: [String]
  /// The one materialization: the semi-join the relation runs on any other store.
  private let _materialized: _Lazy<(node: _FilterNode<Element>, notes: [String])>

  init(
    _ subquery: StoreSubquery, notes: [String],
    materialize: @escaping @Sendable () throws -> (node: _FilterNode<Element>, notes: [String])
  ) {
    self.subquery = subquery
    self.notes = notes
    _materialized = _Lazy {
      do {
        return try materialize()
      } catch let error as RequestSetError {
        return (.invalid(error), [])
      } catch {
        return (.invalid(RequestSetError(.invalidRelation, "\(error)", underlying: error)), [])
      }
    }
  }

  /// The condition over the record's own keys (`ownerId IN {ids}`), its ids read from the
  /// related store once, with the `relation` lines of that read; an error reading them
  /// becomes an invalid node, which throws when evaluated.
  func materialized() -> (node: _FilterNode<Element>, notes: [String]) { _materialized.value }

  /// Whether `other` is this subquery (the same deferred read).
  func isSame(as other: _RelatedSubquery) -> Bool { _materialized === other._materialized }

  var description: String { subquery.description }
}

/// A value computed on first use and kept.
final class _Lazy<Value: Sendable>: Sendable {
  private let make: @Sendable () -> Value
  private let state = _Lock<Value?>(nil)
  init(_ make: @escaping @Sendable () -> Value) { self.make = make }

  /// The value; computed at most once (the lock is held while it is made, so a second
  /// caller waits for the first).
  var value: Value {
    state.withLock { known in
      if let known { return known }
      let made = make()
      known = made
      return made
    }
  }
}

extension _FilterNode {
  /// The relation subqueries in the tree, outermost first. Recurses once per level, which
  /// the tree's depth bounds.
  var relatedSubqueries: [_RelatedSubquery<Element>] {
    switch self {
    case .related(let r): return [r]
    case .and(let j), .or(let j): return j.terms.flatMap(\.relatedSubqueries)
    case .not(let inner): return inner.relatedSubqueries
    default: return []
    }
  }

  /// The tree with each relation subquery replaced by `replace`'s node, or nil when it
  /// holds none.
  func replacingRelated(_ replace: (_RelatedSubquery<Element>) -> _FilterNode) -> _FilterNode? {
    switch self {
    case .related(let r): return replace(r)
    case .and(let j), .or(let j):
      let terms = j.terms
      var changed: [_FilterNode]? = nil
      for i in terms.indices {
        guard let r = terms[i].replacingRelated(replace) else { continue }
        if changed == nil { changed = terms }
        changed![i] = r
      }
      guard let changed else { return nil }
      if case .and = self { return .and(changed) }
      return .or(changed)
    case .not(let inner):
      return inner.replacingRelated(replace).map { .not($0) }
    default:
      return nil
    }
  }
}
