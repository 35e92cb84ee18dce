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
  /// A Foundation `Predicate`, with its translation to field conditions where it has one.
  case predicate(_PredicateCondition<Element>)
  /// A Swift closure.
  case closure(_ClosureCondition<Element>)
  /// A format-string comparison computed on each record: two keys, arithmetic, functions,
  /// SELF, SUBQUERY, or a variable not bound yet.
  case expression(_ExpressionCondition)
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
    case .predicate(let p): return p.description
    case .closure(let c): return c.description
    case .expression(let c): return c.description + " [computed on each record]"
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
///
/// The core builds plain comparisons (`filter("age", .greaterThan, 3)`); format strings and
/// triplet queries add BETWEEN, IN, the text operators with `[c]`/`[d]`, `ANY`/`ALL`/`NONE`
/// over array fields and `key.@count`. The per-value test is prepared once, here.
@usableFromInline
struct _FieldCondition: Sendable, CustomStringConvertible {
  /// The key, without a `.@count` suffix.
  let key: String
  let op: _FieldOperator
  let value: FieldValue
  /// How the core's comparisons order strings; format strings use ``options`` instead.
  let collation: RequestCollation
  /// `[c]`, `[d]`.
  let options: _TextOptions
  /// `ANY key …`: the test applies to the field's elements.
  let quantifier: _Quantifier?
  /// `key.@count …`: the test applies to the number of the field's elements.
  let countsElements: Bool
  /// For a typed condition's twin whose key path names the record's `id` property while
  /// its Codable key is not confirmed to be "id": good for finding the record by id, not
  /// for reading the field.
  var idOnly = false
  /// The prepared test of one value.
  private let _test: _ValueTest

  /// A core comparison: `key <comparison> value` with a collation.
  init(key: String, comparison: RequestComparison, value: FieldValue, collation: RequestCollation) {
    self.key = key
    self.op = .compare(comparison)
    self.value = value
    self.collation = collation
    self.options = []
    self.quantifier = nil
    self.countsElements = false
    self._test = Self._compareTest(comparison, value, collation: collation, options: [])
  }

  /// Any condition of the format-string grammar.
  ///
  /// - Throws: the regular-expression error for an invalid `MATCHES` pattern.
  init(
    key: String, op: _FieldOperator, value: FieldValue, options: _TextOptions = [],
    quantifier: _Quantifier? = nil, countsElements: Bool = false
  ) throws {
    self.key = key
    self.op = op
    self.value = value
    self.collation = .binary
    self.options = options
    self.quantifier = quantifier
    self.countsElements = countsElements
    self._test = try Self._makeTest(op, value, collation: .binary, options: options)
  }

  /// The core comparison, or nil for the operators only format strings have (including
  /// a comparison with `[c]`/`[d]`, which no collation describes).
  var comparison: RequestComparison? {
    if case .compare(let c) = op, options.isEmpty, quantifier == nil, !countsElements { return c }
    return nil
  }

  @usableFromInline var description: String {
    if case .compare(let c) = op, options.isEmpty, quantifier == nil, !countsElements {
      let suffix = collation == .binary ? "" : " [\(collation)]"
      return "\(key) \(c.rawValue) \(value)\(suffix)"
    }
    var text = quantifier.map { $0.rawValue + " " } ?? ""
    text += key + (countsElements ? ".@count" : "")
    switch op {
    case .compare(let c): text += " " + c.rawValue + options.suffix + " " + value.description
    case .between: text += " BETWEEN" + options.suffix + " " + Self._listDescription(value)
    case .in: text += " IN" + options.suffix + " " + Self._listDescription(value)
    case .text(let t): text += " " + t.rawValue + options.suffix + " " + value.description
    }
    return text
  }

  /// `{1, 2}` for a list operand, as the format grammar writes it.
  private static func _listDescription(_ value: FieldValue) -> String {
    guard case .array(let items) = value else { return value.description }
    return "{" + items.map(\.description).joined(separator: ", ") + "}"
  }

  /// Whether a stored field value satisfies the condition.
  ///
  /// Equality is exact (`nil` equals only `nil`, numbers compare across Int and Double);
  /// an ordering comparison with `nil` on either side, or between different kinds, is
  /// false, as in SQL and NSPredicate.
  @inline(__always)
  func matches(_ field: FieldValue) -> Bool {
    if quantifier == nil && !countsElements { return _test(field) }
    return _matchesElements(field)
  }

  private func _matchesElements(_ field: FieldValue) -> Bool {
    var subject = field
    if countsElements {
      switch field {
      case .array(let a): subject = .int(a.count)
      case .object(let o): subject = .int(o.count)
      // An absent collection has no elements.
      case .null: subject = .int(0)
      default: subject = .null
      }
    }
    guard let quantifier else { return _test(subject) }
    let elements: [FieldValue]
    switch subject {
    case .array(let a): elements = a
    case .null: elements = []
    default: elements = [subject]
    }
    switch quantifier {
    case .any: return elements.contains(where: _test)
    case .all: return elements.allSatisfy(_test)
    case .noElement: return !elements.contains(where: _test)
    }
  }
}

/// A condition on a typed key path, with its test specialized where it was written.
@usableFromInline
struct _TypedCondition<Element>: Sendable, CustomStringConvertible {
  /// `\Animal.age > 3`, written on demand: describing a key path costs more than an
  /// indexed lookup.
  @usableFromInline let describe: @Sendable () -> String
  @usableFromInline var description: String { describe() }
  /// Tests the record at the pointer; never copies the whole record.
  @usableFromInline let test: @Sendable (UnsafePointer<Element>) -> Bool
  /// For `==` on a writable key path: sets the field to the compared value, so that
  /// `firstOrInsert` can build a record the condition matches.
  @usableFromInline let assign: (@Sendable (inout Element) -> Void)?
  /// The same condition over the store's encoded fields, when the two surely agree: a
  /// store that would otherwise decode every record reads one field instead (see
  /// `TypedFieldTwin.swift`).
  @usableFromInline let field: _FieldCondition?

  @inlinable
  init(
    describe: @escaping @Sendable () -> String, field: _FieldCondition? = nil,
    assign: (@Sendable (inout Element) -> Void)? = nil,
    test: @escaping @Sendable (UnsafePointer<Element>) -> Bool
  ) {
    self.describe = describe
    self.field = field
    self.assign = assign
    self.test = test
  }
}

extension _TypedCondition {
  /// A condition whose description is already written.
  init(description: String, test: @escaping @Sendable (UnsafePointer<Element>) -> Bool) {
    self.init(describe: { description }, test: test)
  }
}

/// A Swift closure used as a filter.
@usableFromInline
struct _ClosureCondition<Element>: Sendable {
  let test: @Sendable (Element) -> Bool
  var description: String { "{ closure }" }
}
