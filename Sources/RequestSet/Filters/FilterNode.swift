import Foundation

/// The internal description of a filter: a tree the planner compiles against a snapshot.
///
/// It knows nothing of stores. Typed conditions carry their own test (built where the
/// key path was written, so it is specialized for the field's type); string-key conditions
/// carry the key and an encoded value, checked against the store's fields at evaluation.
@usableFromInline
indirect enum _FilterNode<Element: Sendable>: Sendable {
  /// Matches everything (`true`) or nothing (`false`).
  case constant(Bool)
  case and([_FilterNode])
  case or([_FilterNode])
  case not(_FilterNode)
  /// A string key compared with a value: `filter("age", value: 3)`.
  case field(_FieldCondition)
  /// A typed key path compared with a value: `\.age > 3`.
  case typed(_TypedCondition<Element>)
  /// A Foundation `Predicate`.
  case predicate(Predicate<Element>)
  /// A Swift closure.
  case closure(_ClosureCondition<Element>)
  /// A filter that could not be built (its value failed to encode); evaluating it throws.
  case invalid(RequestSetError)

  /// Joins two filters with AND, flattening nested ANDs.
  static func && (lhs: _FilterNode, rhs: _FilterNode) -> _FilterNode {
    switch (lhs, rhs) {
    case (.and(let a), .and(let b)): return .and(a + b)
    case (.and(let a), _): return .and(a + [rhs])
    case (_, .and(let b)): return .and([lhs] + b)
    default: return .and([lhs, rhs])
    }
  }

  /// Joins two filters with OR, flattening nested ORs.
  static func || (lhs: _FilterNode, rhs: _FilterNode) -> _FilterNode {
    switch (lhs, rhs) {
    case (.or(let a), .or(let b)): return .or(a + b)
    case (.or(let a), _): return .or(a + [rhs])
    case (_, .or(let b)): return .or([lhs] + b)
    default: return .or([lhs, rhs])
    }
  }

  /// Text for `explain()` and descriptions, fully parenthesized where it matters.
  var description: String {
    switch self {
    case .constant(let b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
    case .and(let parts): return parts.map { $0._operandDescription }.joined(separator: " AND ")
    case .or(let parts): return parts.map { $0._operandDescription }.joined(separator: " OR ")
    case .not(let inner): return "NOT " + inner._operandDescription
    case .field(let c): return c.description
    case .typed(let c): return c.description
    case .predicate: return "#Predicate<\(Element.self)>"
    case .closure(let c): return c.description
    case .invalid(let e): return "INVALID(\(e.code))"
    }
  }

  private var _operandDescription: String {
    switch self {
    case .and, .or: return "(" + description + ")"
    default: return description
    }
  }
}

/// A comparison operator for string-key filters.
///
/// ```swift
/// animals.filter("age", .greaterThan, 3)
/// animals.filter("name", .equal, "micky", collation: .caseInsensitive)
/// ```
public enum RequestComparison: String, Sendable, Hashable, CaseIterable {
  /// `==`; `nil` matches `nil`.
  case equal = "=="
  /// `!=`; a value is not equal to `nil`.
  case notEqual = "!="
  /// `<`
  case lessThan = "<"
  /// `<=`
  case lessThanOrEqual = "<="
  /// `>`
  case greaterThan = ">"
  /// `>=`
  case greaterThanOrEqual = ">="

  /// Applies the comparison to the result of an ordering (-1, 0, 1); `nil` means the
  /// operands cannot be ordered (one is nil, or their kinds differ).
  @inline(__always)
  func _holds(order: Int?) -> Bool {
    guard let order else { return self == .notEqual }
    switch self {
    case .equal: return order == 0
    case .notEqual: return order != 0
    case .lessThan: return order < 0
    case .lessThanOrEqual: return order <= 0
    case .greaterThan: return order > 0
    case .greaterThanOrEqual: return order >= 0
    }
  }
}

/// `key <op> value` over a record's encoded fields.
@usableFromInline
struct _FieldCondition: Sendable, CustomStringConvertible {
  var key: String
  var comparison: RequestComparison
  var value: FieldValue
  var collation: RequestCollation

  @usableFromInline var description: String {
    let suffix = collation == .binary ? "" : " [\(collation)]"
    return "\(key) \(comparison.rawValue) \(value)\(suffix)"
  }

  /// Whether a stored field value satisfies the condition.
  ///
  /// Equality is exact (`nil` equals only `nil`, numbers compare across Int and Double);
  /// an ordering comparison with `nil` on either side, or between different kinds, is
  /// false, as in SQL and NSPredicate.
  @inline(__always)
  func matches(_ field: FieldValue) -> Bool {
    switch comparison {
    case .equal, .notEqual:
      let equal: Bool
      if collation == .binary {
        equal = field == value
      } else if case .string(let a) = field, case .string(let b) = value {
        equal = collation._compare(a, b) == 0
      } else {
        equal = field == value
      }
      return (comparison == .equal) == equal
    default:
      if case .null = field { return false }
      if case .null = value { return false }
      guard field._kind == value._kind else { return false }
      return comparison._holds(order: FieldValue._order(field, value, collation))
    }
  }
}

/// A condition on a typed key path, with its test specialized where it was written.
@usableFromInline
struct _TypedCondition<Element>: Sendable, CustomStringConvertible {
  /// `\Animal.age > 3`
  @usableFromInline let description: String
  /// Tests the record at the pointer; never copies the whole record.
  @usableFromInline let test: @Sendable (UnsafePointer<Element>) -> Bool
  /// For `==` on a writable key path: sets the field to the compared value, so that
  /// `firstOrInsert` can build a record the condition matches.
  @usableFromInline let assign: (@Sendable (inout Element) -> Void)?

  @inlinable
  init(
    description: String, assign: (@Sendable (inout Element) -> Void)? = nil,
    test: @escaping @Sendable (UnsafePointer<Element>) -> Bool
  ) {
    self.description = description
    self.assign = assign
    self.test = test
  }
}

/// A Swift closure used as a filter.
@usableFromInline
struct _ClosureCondition<Element>: Sendable {
  let test: @Sendable (Element) -> Bool
  var description: String { "{ closure }" }
}
