/// The part of one query stage that the engine asks a store to run itself: a filter over
/// string keys, sort keys with their collations, a distinct key and a window.
///
/// A ``RequestSet`` over a ``QueryPushdownStore`` describes its first stage this way. The
/// engine builds the description only from what the store's reader said it runs
/// (``StoreQueryReader/support(for:)-(StoreCondition)``): conditions on string keys (and the
/// string-key twins of typed key-path conditions and translated `Predicate`s); closures,
/// key paths with no field and Swift-only collations stay in process.
///
/// - ``filter`` holds the conditions, joined as the caller joined them.
/// - ``sort`` orders the matches; a store breaks ties by store order (insertion order,
///   which `save` keeps), as the in-memory engine does.
/// - ``distinct`` keeps the first record, in that order, for each value of a key.
/// - ``offset`` and ``limit`` window the result; the engine sets them only when every
///   condition, sort key and distinct key is exact, so the store's window is the answer.
///
/// ```swift
/// // animals.filter("age", .greaterThan, 3).sortBy("name").limit(10) reaches a store as
/// // StoreQuery(filter: .condition(age > 3), sort: [name ASC], distinct: nil, offset: 0, limit: 10)
/// ```
public struct StoreQuery: Sendable, CustomStringConvertible {
  /// The conditions the store runs, or nil for every record.
  public var filter: StoreFilter?
  /// The order of the result, first key first; empty for store order.
  public var sort: [StoreSortKey]
  /// Keep only the first record (in ``sort`` order) for each value of this key.
  public var distinct: String?
  /// Records to skip from the top of the ordered result.
  public var offset: Int
  /// At most this many records after the offset; nil for all.
  public var limit: Int?

  /// A query description; the engine builds these, a test of a store may too.
  ///
  /// ```swift
  /// let query = StoreQuery(filter: .condition(StoreCondition("age", .greaterThan, 3)), limit: 10)
  /// ```
  public init(
    filter: StoreFilter? = nil, sort: [StoreSortKey] = [], distinct: String? = nil, offset: Int = 0,
    limit: Int? = nil
  ) {
    self.filter = filter
    self.sort = sort
    self.distinct = distinct
    self.offset = max(0, offset)
    self.limit = limit.map { max(0, $0) }
  }

  /// `WHERE … ORDER BY … DISTINCT … OFFSET … LIMIT …` in the engine's notation, for
  /// messages and `explain()`.
  public var description: String {
    var parts: [String] = []
    if let filter { parts.append("WHERE " + filter.description) }
    if !sort.isEmpty { parts.append("ORDER BY " + sort.map(\.description).joined(separator: ", ")) }
    if let distinct { parts.append("DISTINCT " + distinct) }
    if offset != 0 { parts.append("OFFSET \(offset)") }
    if let limit { parts.append("LIMIT \(limit)") }
    return parts.isEmpty ? "all records" : parts.joined(separator: " ")
  }
}

/// The filter of a ``StoreQuery``: conditions on string keys joined with AND, OR and NOT.
///
/// ```swift
/// let adults: StoreFilter = .and([
///   .condition(StoreCondition("age", .greaterThanOrEqual, 18)),
///   .not(.condition(StoreCondition("name", .equal, nil))),
/// ])
/// ```
public indirect enum StoreFilter: Sendable, CustomStringConvertible {
  /// Matches every record (`true`) or none (`false`).
  case constant(Bool)
  /// One condition on one key.
  case condition(StoreCondition)
  /// Every operand matches.
  case and([StoreFilter])
  /// Some operand matches.
  case or([StoreFilter])
  /// The operand does not match. The engine puts only exact filters under a NOT.
  case not(StoreFilter)
  /// A full-text condition: the words of some keys hold every term of a query. The engine
  /// hands one only to a store whose reader supports it
  /// (``StoreQueryReader/support(for:)-(StoreTextSearch)``).
  case search(StoreTextSearch)
  /// A condition through a relation, as a subquery on a related store in the same
  /// database. The engine hands one only to a store whose reader supports it
  /// (``StoreQueryReader/support(for:)-(StoreSubquery)``).
  case subquery(StoreSubquery)

  /// Whether the filter holds a ``subquery(_:)``.
  ///
  /// ```swift
  /// StoreFilter.constant(true).holdsSubquery   // false
  /// ```
  public var holdsSubquery: Bool {
    contains {
      if case .subquery = $0 { return true }
      return false
    }
  }

  /// Whether `predicate` holds for the filter or any filter inside it (the terms of an AND
  /// or an OR, the operand of a NOT; not the filter of a subquery, which is another
  /// store's).
  ///
  /// ```swift
  /// filter.contains { if case .search = $0 { true } else { false } }
  /// ```
  /// - Parameter predicate: A test of one filter.
  /// - Returns: Whether some part of the filter passes it.
  public func contains(where predicate: (StoreFilter) -> Bool) -> Bool {
    if predicate(self) { return true }
    switch self {
    case .constant, .condition, .search, .subquery: return false
    case .and(let terms), .or(let terms): return terms.contains { $0.contains(where: predicate) }
    case .not(let inner): return inner.contains(where: predicate)
    }
  }

  /// The filter in the format-string notation, parenthesized where it matters.
  public var description: String {
    switch self {
    case .constant(let b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
    case .condition(let c): return c.description
    case .and(let terms): return terms.map(\._operand).joined(separator: " AND ")
    case .or(let terms): return terms.map(\._operand).joined(separator: " OR ")
    case .not(let inner): return "NOT " + inner._operand
    case .search(let s): return s.description
    case .subquery(let s): return s.description
    }
  }

  private var _operand: String {
    switch self {
    case .and, .or: return "(" + description + ")"
    default: return description
    }
  }

  /// Every condition in the filter, depth first (not those of a subquery's own query).
  ///
  /// ```swift
  /// for condition in filter.conditions { print(condition.key) }
  /// ```
  public var conditions: [StoreCondition] {
    switch self {
    case .constant, .search, .subquery: return []
    case .condition(let c): return [c]
    case .and(let terms), .or(let terms): return terms.flatMap(\.conditions)
    case .not(let inner): return inner.conditions
    }
  }
}

/// One sort key of a ``StoreQuery``: a string key, a direction and a collation.
///
/// Ascending order puts nil (and absent keys) first; descending puts them last. Values of
/// different kinds order nil < Bool < number < String < array < object; strings compare by
/// their collation (``RequestCollation/binary``: Unicode scalar order of the NFC text, as
/// Swift's `<` on `String`); NaN sorts after every other number.
///
/// ```swift
/// StoreSortKey("name", order: .descending)
/// ```
public struct StoreSortKey: Sendable, Hashable, CustomStringConvertible {
  /// The string key, dotted for nested fields (`owner.city`), with its date part if it has
  /// one (`born.@month`).
  public var key: String
  /// The key split into field names (`["owner", "city"]`), escapes resolved: what a store
  /// turns into a JSON path. For a key with a date part, the names of the date's field.
  public var fieldNames: [String] {
    FieldValue.fieldNames(inKey: RequestDatePart.split(key)?.key ?? key)
  }
  /// The date part the key orders by (`born.@month` orders by the month of `born`; see
  /// ``RequestDatePart``), or nil. A store that does not compute date parts answers
  /// `.none` for such a key.
  ///
  /// ```swift
  /// StoreSortKey("born.@month").datePart   // .month
  /// ```
  public var datePart: RequestDatePart? { RequestDatePart.split(key)?.part }
  /// The direction.
  public var order: RequestSortOrder
  /// How strings compare.
  public var collation: RequestCollation
  /// When set, the key is a value read through a relation from a store in the same
  /// database (``key`` is then the key as written, `owner.name` or `visits.@count`, for
  /// messages): the store orders by ``StoreRelatedValue`` as a subquery in its own
  /// statement. The engine hands such a key only to a reader that supports it
  /// (``StoreQueryReader/support(forRelatedSort:)``).
  ///
  /// ```swift
  /// StoreSortKey("age").related   // nil: a key of the record itself
  /// ```
  public var related: StoreRelatedValue?

  /// A sort key.
  ///
  /// ```swift
  /// StoreSortKey("age")
  /// ```
  /// - Parameters:
  ///   - key: The string key, dotted for nested fields.
  ///   - order: The direction.
  ///   - collation: How strings compare.
  ///   - related: The value through a relation the key orders by, or nil for the
  ///     record's own key.
  public init(
    _ key: String, order: RequestSortOrder = .ascending, collation: RequestCollation = .binary,
    related: StoreRelatedValue? = nil
  ) {
    self.key = key
    self.order = order
    self.collation = collation
    self.related = related
  }

  /// `name ASC`, with the collation when it is not binary.
  public var description: String {
    "\(key) \(order == .ascending ? "ASC" : "DESC")" + (collation == .binary ? "" : " [\(collation)]")
  }

  /// -1, 0 or 1 as `a` sorts before, with or after `b` under this key: the in-memory
  /// engine's order, for a store that sorts in its own code or checks its engine.
  ///
  /// ```swift
  /// StoreSortKey("age").compare(.int(3), .null)   // 1: nil sorts first ascending
  /// ```
  public func compare(_ a: FieldValue, _ b: FieldValue) -> Int {
    let c = FieldValue._order(a, b, collation)
    return order == .ascending ? c : -c
  }
}

/// A value read through a relation from another store in the same database, that a
/// ``StoreSortKey`` orders by (``StoreSortKey/related``): the related records are those
/// whose ``column`` equals the record's ``key`` (as the engine's `IN` compares: numbers by
/// value, strings exactly, nil never), and the value is what ``reading`` reads of them.
///
/// A record with no related record orders by ``fallback``: nil for a to-one's value, 0
/// for a count, and what the collection operator gives for no value (0 for `@sum` and
/// `@avg`, nil for `@min` and `@max`), exactly as the engine orders it in process.
///
/// ```swift
/// // animals.sortBy("owner.name") over two SQLite stores in one file reaches the animals'
/// // store as StoreSortKey("owner.name", related: value) with
/// let owners = StoreLocation(database: "sqlite:/srv/zoo.sqlite", table: "owners")
/// let value = StoreRelatedValue(key: "ownerId", location: owners, column: "id", reading: .value("name"))
/// value.description   // "(SELECT name FROM owners WHERE id == ownerId)"
/// ```
public struct StoreRelatedValue: Sendable, Hashable, CustomStringConvertible {
  /// The record's key: a to-one's foreign key, or `id` for a to-many.
  public var key: String
  /// The related store's table and database.
  public var location: StoreLocation
  /// The related records' key that must equal the record's ``key``: `id` for a to-one,
  /// the inverse key for a to-many.
  public var column: String
  /// What is read of the related records.
  public var reading: Reading

  /// What a ``StoreRelatedValue`` reads of the related records.
  ///
  /// ```swift
  /// StoreRelatedValue.Reading.aggregate(StoreSubquery.Aggregate(function: .sum, key: "cost")).description
  /// // "@sum.cost"
  /// ```
  public enum Reading: Sendable, Hashable, CustomStringConvertible {
    /// A key of the one related record (a to-one's target); nil when there is none.
    case value(String)
    /// How many related records there are (a to-many's `@count`).
    case count
    /// A collection operator over a key of the related records, in store order (a
    /// to-many's `@sum.cost`), as ``StoreSubquery/Aggregate/reduce(_:)`` computes it.
    case aggregate(StoreSubquery.Aggregate)

    /// `name`, `@count` or `@sum.cost`.
    public var description: String {
      switch self {
      case .value(let key): return key
      case .count: return "@count"
      case .aggregate(let a): return a.description
      }
    }
  }

  /// A related value; the engine builds these, a test of a store may too.
  ///
  /// ```swift
  /// let visits = StoreLocation(database: "sqlite:/srv/zoo.sqlite", table: "visits")
  /// StoreRelatedValue(key: "id", location: visits, column: "animalId", reading: .count)
  /// ```
  /// - Parameters:
  ///   - key: The record's key.
  ///   - location: The related store's table and database.
  ///   - column: The related records' key that equals the record's.
  ///   - reading: What is read of them.
  public init(key: String, location: StoreLocation, column: String, reading: Reading) {
    self.key = key
    self.location = location
    self.column = column
    self.reading = reading
  }

  /// The value of a record with no related record: nil for a value, 0 for a count, the
  /// operator's value for no values for an aggregate.
  ///
  /// ```swift
  /// StoreRelatedValue(key: "id", location: visits, column: "animalId", reading: .count).fallback   // .int(0)
  /// ```
  public var fallback: FieldValue {
    switch reading {
    case .value: return .null
    case .count: return .int(0)
    case .aggregate(let a): return a.reduce([])
    }
  }

  /// `(SELECT name FROM owners WHERE id == ownerId)`, in the engine's notation.
  public var description: String {
    let what: String
    switch reading {
    case .value(let key): what = key
    case .count: what = "count(*)"
    case .aggregate(let a): what = a.description
    }
    return "(SELECT \(what) FROM \(location.table) WHERE \(column) == \(key))"
  }
}

/// One condition of a ``StoreFilter``: a string key, an operator and a value, with the
/// in-memory engine's test attached (``matches(_:)``), so a store can run exactly that
/// test in its own code (SQLite calls it from a registered SQL function) and check its
/// translation against it.
///
/// The rules the in-memory engine follows, which an exact translation must follow too:
/// - `==` and `!=` compare any kinds: nil equals only nil (an absent key reads as nil), so
///   `!=` is true between nil and a value; numbers compare by value across Int, UInt64,
///   Double and Decimal, exactly (no rounding through Double); NaN equals nothing.
/// - `<`, `<=`, `>`, `>=`, BETWEEN: false when either side is nil, NaN, or the two are of
///   different kinds (a String is never greater than a number).
/// - Strings compare by ``collation`` (binary: Unicode scalar order of NFC text, and `==`
///   is canonical equivalence); the text operators fold case and diacritics as
///   ``caseInsensitive`` and ``diacriticInsensitive`` say, as Foundation does.
/// - ``quantifier`` tests the elements of an array field (ANY is false and ALL true for an
///   empty or absent array); ``countsElements`` tests the number of elements (0 when absent).
///
/// ```swift
/// let c = StoreCondition("age", .greaterThan, 3)
/// c.matches(.int(4))     // true
/// c.matches(.null)       // false
/// ```
public struct StoreCondition: Sendable, CustomStringConvertible {
  let _condition: _FieldCondition

  init(_ condition: _FieldCondition) { _condition = condition }

  /// The condition `key comparison value`, as `filter(_:_:_:)` builds it.
  ///
  /// - Throws: ``RequestSetError`` `.encodingFailed` when `value` does not encode.
  ///
  /// ```swift
  /// let c = try StoreCondition("name", .equal, "Micky")
  /// ```
  public init(
    _ key: String, _ comparison: RequestComparison, _ value: (any Encodable & Sendable)?,
    collation: RequestCollation = .binary
  ) throws {
    let encoded = try value.map { try FieldValue(encoding: $0) } ?? .null
    _condition = _FieldCondition(key: key, comparison: comparison, value: encoded, collation: collation)
  }

  /// What a condition tests.
  public enum Operator: Sendable, Hashable, CustomStringConvertible {
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`.
    case compare(RequestComparison)
    /// `BETWEEN {lower, upper}`, inclusive; ``StoreCondition/value`` is a two-element array.
    case between
    /// `IN {…}`: the field equals one of the array's elements; with a String value, the
    /// field is a substring of it.
    case `in`
    /// `CONTAINS`: a substring; on an array field, membership of the value.
    case contains
    /// `BEGINSWITH`.
    case beginsWith
    /// `ENDSWITH`.
    case endsWith
    /// `LIKE`: `*` any run of characters, `?` one character, `\*` and `\?` themselves.
    case like
    /// `MATCHES`: an ICU regular expression matching the whole string.
    case matches

    /// The operator as the format grammar writes it.
    public var description: String {
      switch self {
      case .compare(let c): return c.rawValue
      case .between: return "BETWEEN"
      case .in: return "IN"
      case .contains: return "CONTAINS"
      case .beginsWith: return "BEGINSWITH"
      case .endsWith: return "ENDSWITH"
      case .like: return "LIKE"
      case .matches: return "MATCHES"
      }
    }
  }

  /// `ANY`, `ALL` or `NONE` over an array field's elements.
  public enum Quantifier: String, Sendable, Hashable {
    /// Some element matches.
    case any = "ANY"
    /// Every element matches (true for none).
    case all = "ALL"
    /// No element matches (true for none).
    case none = "NONE"
  }

  /// The string key, dotted for nested fields, without a `.@count` suffix or a date part.
  public var key: String { _condition.key }
  /// The key split into field names, escapes resolved: what a store turns into a JSON path.
  public var fieldNames: [String] { FieldValue.fieldNames(inKey: _condition.key) }
  /// The operator.
  public var `operator`: Operator {
    switch _condition.op {
    case .compare(let c): return .compare(c)
    case .between: return .between
    case .in: return .in
    case .text(.contains): return .contains
    case .text(.beginsWith): return .beginsWith
    case .text(.endsWith): return .endsWith
    case .text(.like): return .like
    case .text(.matches): return .matches
    }
  }
  /// The value compared with (a two-element array for BETWEEN, a list for IN).
  public var value: FieldValue { _condition.value }
  /// How a core comparison orders strings.
  public var collation: RequestCollation { _condition.collation }
  /// `[c]`: text operators and comparisons ignore case.
  public var caseInsensitive: Bool { _condition.options.contains(.caseInsensitive) }
  /// `[d]`: text operators and comparisons ignore diacritics.
  public var diacriticInsensitive: Bool { _condition.options.contains(.diacriticInsensitive) }
  /// `ANY`, `ALL`, `NONE`, or nil for a test of the field itself.
  public var quantifier: Quantifier? {
    switch _condition.quantifier {
    case nil: return nil
    case .any?: return .any
    case .all?: return .all
    case .noElement?: return Quantifier.none
    }
  }
  /// `key.@count`: the test applies to the number of the field's elements.
  public var countsElements: Bool { _condition.countsElements }
  /// `key.@year` and the other date parts: the test applies to that part of the date the
  /// field holds (seconds since 2001, UTC; see ``RequestDatePart``), and ``key`` names the
  /// date's own field. A store that does not compute date parts answers `.none` (or tests
  /// the condition with ``matches(_:)``, which applies the part itself).
  ///
  /// ```swift
  /// let c = try StoreCondition("born.@year", .equal, 1990)
  /// (c.key, c.datePart)   // ("born", .year)
  /// ```
  public var datePart: RequestDatePart? { _condition.datePart }

  /// Whether the field value (nil for an absent key) satisfies the condition, exactly as
  /// the in-memory engine decides.
  ///
  /// ```swift
  /// try StoreCondition("name", .notEqual, "Rex").matches(.null)   // true
  /// ```
  public func matches(_ field: FieldValue) -> Bool { _condition.matches(field) }

  /// The condition in the format-string notation.
  public var description: String { _condition.description }
}
