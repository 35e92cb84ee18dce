import Foundation

// A Foundation `#Predicate` as field conditions.
//
// `Predicate.evaluate` walks the predicate's expression tree for every record, which is
// about a hundred times slower than a hand-written loop. Most predicates are simple
// comparisons of a record's stored properties with constants, which the store's fields
// answer directly. The translation below turns such an expression tree into the same tree
// of `.field`, `.and`, `.or`, `.not` and `.constant` nodes, once, when the filter is built.
//
// Exactness is the rule: a translation exists only when it agrees with `evaluate` on every
// record, so any part it does not understand makes the whole translation nil:
// - a key path must be rooted directly at the predicate's variable and name a stored
//   property (`$0.age`, not `$0.owner?.city` or `$0.tags.count`); the compiler then checks
//   that the store knows the key with the constant's kind, which catches `CodingKeys` that
//   rename it;
// - a constant must be of a type whose encoded form compares as the Swift value does (the
//   list of `TypedFieldTwin.swift`), and not NaN;
// - the shapes are `==`, `!=`, `<`, `<=`, `>`, `>=` between a key path and a constant
//   (either side), `&&`, `||`, `!`, a `Bool` key path alone (`== true`), a `Bool`
//   constant, and a constant array's `contains(key path)` (`key IN {…}`).
// `starts(with:)` is left out on purpose: `String.starts(with:)` compares Characters, so
// `"a\r\n".starts(with: "a\r")` is false, while BEGINSWITH compares bytes of ASCII text and
// says true.

/// A Foundation predicate, with the field conditions that say the same where there are.
@usableFromInline
struct _PredicateCondition<Element: Sendable>: Sendable {
  let predicate: Predicate<Element>
  /// The same condition as a tree of `.field`, `.and`, `.or`, `.not`, `.constant` nodes
  /// that agrees with `predicate` on EVERY record, or nil when any part cannot be
  /// translated exactly.
  let translated: _FilterNode<Element>?

  /// Translates `predicate` once.
  ///
  /// ```swift
  /// _PredicateCondition(#Predicate<Animal> { 30 < $0.age && $0.species != "Cow" }).translated
  /// // age > 30 AND species != "Cow"
  /// ```
  /// - Complexity: O(n) in the size of the predicate's expression tree.
  init(_ predicate: Predicate<Element>) {
    self.predicate = predicate
    let translator = _PredicateTranslator<Element>(variable: predicate.variable.key)
    self.translated = (predicate.expression as? any _PredicateConditionExpression)?._condition(translator)
  }

  /// The predicate translated again, when the query is prepared: whether a key path
  /// names a Codable key is confirmed on the source's stored records (see
  /// `TypedFieldTwin.swift`), which the process may not have seen when the filter was built.
  func retranslated() -> _PredicateCondition { _PredicateCondition(predicate) }

  /// `#Predicate<Animal>(age > 30)` when translated, else `#Predicate<Animal>`.
  var description: String {
    let name = "#Predicate<\(Element.self)>"
    guard let translated else { return name }
    return name + "(" + translated.description + ")"
  }
}

/// What a translation needs to know about the predicate: its variable and record type.
struct _PredicateTranslator<Element: Sendable> {
  let variable: PredicateExpressions.VariableID

  /// `lhs <comparison> rhs` when one side is a key path on the variable and the other a
  /// constant of a type that may be compared so; the constant may stand on either side.
  func compare(_ lhs: Any, _ comparison: RequestComparison, _ rhs: Any) -> _FilterNode<Element>? {
    guard let l = lhs as? any _PredicateOperandExpression, let r = rhs as? any _PredicateOperandExpression
    else { return nil }
    let ordered = comparison != .equal && comparison != .notEqual
    switch (l._operand(self, ordered: ordered), r._operand(self, ordered: ordered)) {
    case (.key(let key)?, .value(let value)?):
      return .field(_FieldCondition(key: key, comparison: comparison, value: value, collation: .binary))
    case (.value(let value)?, .key(let key)?):
      return .field(
        _FieldCondition(key: key, comparison: comparison._flipped, value: value, collation: .binary))
    default:
      return nil
    }
  }

  /// The condition an operand of `&&`, `||` or `!` stands for.
  func condition(_ expression: Any) -> _FilterNode<Element>? {
    (expression as? any _PredicateConditionExpression)?._condition(self)
  }
}

/// One side of a comparison: a record's field, or a constant's encoded value.
enum _PredicateOperand {
  case key(String)
  case value(FieldValue)
}

/// A predicate expression with a Bool output that may translate to a filter node.
protocol _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>?
}

/// A predicate expression that may translate to a comparison's operand.
protocol _PredicateOperandExpression {
  /// The operand, or nil; `ordered` when it will be compared with `<`, `<=`, `>` or `>=`,
  /// which fewer constant types allow than `==` and `!=`.
  func _operand<E>(_ t: _PredicateTranslator<E>, ordered: Bool) -> _PredicateOperand?
}

/// A constant array whose elements may be compared for equality with a record's fields.
protocol _PredicateConstantList {
  /// The elements, encoded, or nil when their type is not one whose fields agree.
  var _encodedElements: [FieldValue]? { get }
}

extension Array: _PredicateConstantList {
  var _encodedElements: [FieldValue]? {
    guard _isTwinType(Element.self, ordered: false) else { return nil }
    var encoded: [FieldValue] = []
    encoded.reserveCapacity(count)
    for element in self {
      guard let value = _twinValue(element, ordered: false) else { return nil }
      encoded.append(value)
    }
    return encoded
  }
}

extension RequestComparison {
  /// The comparison with its operands swapped: `3 < age` is `age > 3`.
  var _flipped: RequestComparison {
    switch self {
    case .equal, .notEqual: return self
    case .lessThan: return .greaterThan
    case .lessThanOrEqual: return .greaterThanOrEqual
    case .greaterThan: return .lessThan
    case .greaterThanOrEqual: return .lessThanOrEqual
    }
  }
}

// MARK: - Conditions

extension PredicateExpressions.Equal: _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? { t.compare(lhs, .equal, rhs) }
}

extension PredicateExpressions.NotEqual: _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? { t.compare(lhs, .notEqual, rhs) }
}

extension PredicateExpressions.Comparison: _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    let comparison: RequestComparison
    switch op {
    case .lessThan: comparison = .lessThan
    case .lessThanOrEqual: comparison = .lessThanOrEqual
    case .greaterThan: comparison = .greaterThan
    case .greaterThanOrEqual: comparison = .greaterThanOrEqual
    @unknown default: return nil
    }
    return t.compare(lhs, comparison, rhs)
  }
}

extension PredicateExpressions.Conjunction: _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    guard let l = t.condition(lhs), let r = t.condition(rhs) else { return nil }
    return l && r
  }
}

extension PredicateExpressions.Disjunction: _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    guard let l = t.condition(lhs), let r = t.condition(rhs) else { return nil }
    return l || r
  }
}

extension PredicateExpressions.Negation: _PredicateConditionExpression {
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    t.condition(wrapped).map { .not($0) }
  }
}

extension PredicateExpressions.KeyPath: _PredicateConditionExpression {
  /// A `Bool` key path used alone: `$0.isTame` is `isTame == true`.
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    guard Output.self == Bool.self, case .key(let key)? = _operand(t, ordered: false) else { return nil }
    return .field(_FieldCondition(key: key, comparison: .equal, value: .bool(true), collation: .binary))
  }
}

extension PredicateExpressions.Value: _PredicateConditionExpression {
  /// `true` or `false` written as the condition, or captured.
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    guard Output.self == Bool.self else { return nil }
    return (value as? Bool).map { .constant($0) }
  }
}

extension PredicateExpressions.SequenceContains: _PredicateConditionExpression {
  /// A constant array's `contains(key path)`: `key IN {…}`.
  func _condition<E>(_ t: _PredicateTranslator<E>) -> _FilterNode<E>? {
    guard let list = sequence as? any _PredicateConstantListExpression, let items = list._encodedElements,
      let operand = element as? any _PredicateOperandExpression,
      case .key(let key)? = operand._operand(t, ordered: false),
      let condition = try? _FieldCondition(key: key, op: .in, value: .array(items))
    else { return nil }
    return .field(condition)
  }
}

// MARK: - Operands

extension PredicateExpressions.KeyPath: _PredicateOperandExpression {
  /// A stored property of the predicate's own variable (`$0.age`), as the field it resolves
  /// to (see `_ResolvedField`); nested key paths, which
  /// the macro writes as a key path on a key path, are not translated. (Foundation traps
  /// on a key path of more than one component, such as `\.owner?.city` or `\.nickname!`,
  /// when the expression is built, so none reaches here.)
  func _operand<E>(_ t: _PredicateTranslator<E>, ordered: Bool) -> _PredicateOperand? {
    guard let variable = root as? PredicateExpressions.Variable<E>, variable.key == t.variable,
      let key = _ResolvedField.named(by: keyPath as AnyKeyPath, root: E.self)?.key
    else { return nil }
    return .key(key)
  }
}

extension PredicateExpressions.Value: _PredicateOperandExpression {
  func _operand<E>(_ t: _PredicateTranslator<E>, ordered: Bool) -> _PredicateOperand? {
    _twinValue(value, ordered: ordered).map { .value($0) }
  }
}

extension PredicateExpressions.NilLiteral: _PredicateOperandExpression {
  /// `nil`, for `== nil` and `!= nil` on an optional of a type whose fields agree.
  func _operand<E>(_ t: _PredicateTranslator<E>, ordered: Bool) -> _PredicateOperand? {
    _isTwinType(Wrapped?.self, ordered: ordered) ? .value(.null) : nil
  }
}

/// A constant array in a predicate.
protocol _PredicateConstantListExpression {
  var _encodedElements: [FieldValue]? { get }
}

extension PredicateExpressions.Value: _PredicateConstantListExpression {
  var _encodedElements: [FieldValue]? { (value as? any _PredicateConstantList)?._encodedElements }
}
