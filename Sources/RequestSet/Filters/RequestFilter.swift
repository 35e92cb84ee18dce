import Foundation

/// A filter over records of `Element`, as a value you can name, store and combine.
///
/// Build one from typed key paths, string keys, a Foundation `Predicate` or a closure,
/// combine with `&&`, `||` and `!`, and pass it to ``RequestSet/filter(_:mode:)-(RequestFilter<Element>,_)``:
///
/// ```swift
/// let adult: RequestFilter<Animal> = \.age >= 18 && \.nickname != nil
/// let cows = RequestFilter<Animal>("species", value: "Cow")
/// animals.filter(adult || cows)
/// // explain(): filter: (\Animal.age >= 18 AND \Animal.nickname != nil) OR species == "Cow"
/// ```
public struct RequestFilter<Element: Sendable>: Sendable, CustomStringConvertible {
  @usableFromInline var _node: _FilterNode<Element>

  @usableFromInline
  init(_node: _FilterNode<Element>) { self._node = _node }

  /// A filter that matches every record (`TRUEPREDICATE`).
  public static var all: RequestFilter { RequestFilter(_node: .constant(true)) }

  /// A filter that matches no record (`FALSEPREDICATE`).
  public static var none: RequestFilter { RequestFilter(_node: .constant(false)) }

  /// A filter from a Foundation predicate.
  ///
  /// A predicate made of comparisons of stored properties with constants, joined with
  /// `&&`, `||` and `!`, runs as the equivalent field conditions wherever the store's
  /// fields can answer them exactly; any other predicate is evaluated record by record.
  ///
  /// ```swift
  /// let heavy = RequestFilter(#Predicate<Animal> { $0.weight > 100 })
  /// // description: #Predicate<Animal>(weight > 100.0)
  /// ```
  /// - Complexity: O(n) in the size of the predicate's expression tree, once.
  public init(_ predicate: Predicate<Element>) {
    _node = .predicate(_PredicateCondition(predicate))
  }

  /// A filter from a closure.
  ///
  /// ```swift
  /// let even = RequestFilter<Animal> { $0.id % 2 == 0 }
  /// ```
  /// The closure reads each record where the store keeps it (in memory, it is not copied
  /// for the call).
  @inlinable
  public init(_ isIncluded: @escaping @Sendable (Element) -> Bool) {
    _node = .closure(_ClosureCondition(test: isIncluded))
  }

  /// Records that match both filters.
  public static func && (lhs: RequestFilter, rhs: RequestFilter) -> RequestFilter {
    RequestFilter(_node: lhs._node && rhs._node)
  }

  /// Records that match either filter.
  public static func || (lhs: RequestFilter, rhs: RequestFilter) -> RequestFilter {
    RequestFilter(_node: lhs._node || rhs._node)
  }

  /// Records that do not match the filter.
  public static prefix func ! (filter: RequestFilter) -> RequestFilter {
    RequestFilter(_node: !filter._node)
  }

  /// The filter in the text form ``RequestSet/explain()`` prints.
  public var description: String { _node.description }
}

extension RequestFilter where Element: Encodable {
  /// A filter comparing the field at a string key with a value.
  ///
  /// The key is the record's `Codable` key; dots reach into nested values
  /// (`"owner.city"`). The value is encoded the way records are, so dates, UUIDs and
  /// enums compare as they are stored.
  ///
  /// ```swift
  /// RequestFilter<Animal>("name", value: "Micky")
  /// RequestFilter<Animal>("age", .greaterThan, 3)
  /// RequestFilter<Animal>("nickname", value: nil)         // records whose nickname is nil
  /// ```
  /// Unknown keys and values that can never match the field are reported when the set
  /// is evaluated, as ``RequestSetError`` `.unknownKey` or `.typeMismatch`.
  public init(
    _ key: String, _ comparison: RequestComparison = .equal, value: (any Encodable & Sendable)?,
    collation: RequestCollation = .binary
  ) {
    self.init(_node: _FilterNode(key: key, comparison, value, collation: collation))
  }

  /// A filter comparing the field at a string key with a value; see
  /// ``init(_:_:value:collation:)``.
  ///
  /// ```swift
  /// RequestFilter<Animal>("age", .lessThan, 3)
  /// ```
  public init(
    _ key: String, _ comparison: RequestComparison, _ value: (any Encodable & Sendable)?,
    collation: RequestCollation = .binary
  ) {
    self.init(key, comparison, value: value, collation: collation)
  }

  /// All key-value pairs combined with `mode`: `.and` requires every pair to match,
  /// `.or` any one of them.
  ///
  /// ```swift
  /// RequestFilter<Animal>([("name", "Micky"), ("name", "Rex")], mode: .or)
  /// ```
  public init(_ pairs: [(String, (any Encodable & Sendable)?)], mode: RequestFilterMode = .and) {
    let nodes = pairs.map { _FilterNode<Element>(key: $0.0, .equal, $0.1, collation: .binary) }
    switch (nodes.count, mode) {
    case (0, .and): _node = .constant(true)
    case (0, .or): _node = .constant(false)
    case (1, _): _node = nodes[0]
    case (_, .and): _node = .and(nodes)
    case (_, .or): _node = .or(nodes)
    }
  }
}

extension _FilterNode {
  init(key: String, _ comparison: RequestComparison, _ value: (any Encodable & Sendable)?, collation: RequestCollation) {
    do {
      let encoded = try value.map { try _FieldEncoder.encode($0) } ?? .null
      self = .field(_FieldCondition(key: key, comparison: comparison, value: encoded, collation: collation))
    } catch let error as RequestSetError {
      self = .invalid(error)
    } catch {
      self = .invalid(RequestSetError(.encodingFailed, "Could not encode the value for key \"\(key)\".", underlying: error))
    }
  }
}

/// How a new filter joins the filters before it.
///
/// ```swift
/// animals.filter(\.age > 3).filter(\.name == "Rex", mode: .or)   // (age > 3) OR name == "Rex"
/// ```
public enum RequestFilterMode: Sendable, Hashable {
  /// Both the filters before and the new one must match (the default).
  case and
  /// Either the filters before, taken together as if in parentheses, or the new one.
  case or
}
