import Foundation

/// The internal description of a filter: a tree the planner compiles against a snapshot.
///
/// It knows nothing of stores. Typed conditions carry their own test (built where the
/// key path was written, so it is specialized for the field's type); string-key conditions
/// carry the key and an encoded value, checked against the store's fields at evaluation.
///
/// A filter built in a loop must not exhaust a thread's stack, neither when it is built,
/// walked nor released, so the tree stays shallow by construction:
/// - `&&` and `||` flatten (`a || b || c` is one OR of three) and append to a shared
///   buffer (see ``_Junction``), so `f = f || x` repeated n times costs O(n) in all;
/// - `!` cancels a double negation;
/// - a combination nesting deeper than ``maxDepth`` levels (ANDs inside ORs inside NOTs…)
///   becomes `.invalid` with a `.tooComplex` error, and its operands are released.
/// Every walk may therefore recurse: no tree is deeper than ``maxDepth``, plus the 64
/// levels a format string may nest.
@usableFromInline
indirect enum _FilterNode<Element: Sendable>: Sendable {
  /// Matches everything (`true`) or nothing (`false`).
  case constant(Bool)
  case and(_Junction<Element>)
  case or(_Junction<Element>)
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
  /// Full-text search: keys match a text query (see TextSearch.swift).
  case search(_TextSearchCondition)
  /// A filter that could not be built (its value failed to encode, or it nests too
  /// deeply); evaluating it throws.
  case invalid(RequestSetError)
  /// `id IN (the ids of another set)`: a set operation's operand with a window of its own,
  /// read when the query is prepared, which makes it an `id IN {…}` field condition.
  case ids(_IDSubquery<Element>)
  /// A condition through a relation kept as a subquery on a related store in the same
  /// database (see `StoreSubquery.swift`): the store runs it in its statement, or it is
  /// read as ids when it runs anywhere else.
  case related(_RelatedSubquery<Element>)

  /// The deepest nesting of ANDs, ORs and NOTs that combining filters may build. Walks of
  /// a tree recurse once per level; at this depth they fit in a 512 KiB thread's stack.
  static var maxDepth: Int { 100 }

  /// An AND of `parts` (not flattened: the parts are taken as they are).
  static func and(_ parts: [_FilterNode]) -> _FilterNode { .and(_Junction(parts)) }

  /// An OR of `parts` (not flattened: the parts are taken as they are).
  static func or(_ parts: [_FilterNode]) -> _FilterNode { .or(_Junction(parts)) }

  /// Levels of AND, OR and NOT from this node down to its deepest condition (0 for a
  /// condition); O(1) for a tree built by the operators below.
  var depth: Int {
    var node = self
    var nots = 0
    while case .not(let inner) = node {
      nots += 1
      node = inner
    }
    switch node {
    case .and(let j), .or(let j): return nots + j.depth
    case .predicate(let p): return nots + (p.translated?.depth ?? 0)
    default: return nots
    }
  }

  /// Joins two filters with AND, flattening nested ANDs; `TRUEPREDICATE` drops out, an
  /// invalid operand makes the whole invalid.
  static func && (lhs: _FilterNode, rhs: _FilterNode) -> _FilterNode {
    switch (lhs, rhs) {
    case (.invalid, _), (.constant(true), _): return rhs._keepingInvalid(lhs)
    case (_, .invalid), (_, .constant(true)): return lhs._keepingInvalid(rhs)
    case (.and(let a), .and(let b)): return _capped(.and(a.appending(contentsOf: b)))
    case (.and(let a), _): return _capped(.and(a.appending(rhs)))
    case (_, .and(let b)): return _capped(.and(_Junction([lhs] + b.terms)))
    default: return _capped(.and(_Junction([lhs, rhs])))
    }
  }

  /// Joins two filters with OR, flattening nested ORs; `FALSEPREDICATE` drops out, an
  /// invalid operand makes the whole invalid.
  static func || (lhs: _FilterNode, rhs: _FilterNode) -> _FilterNode {
    switch (lhs, rhs) {
    case (.invalid, _), (.constant(false), _): return rhs._keepingInvalid(lhs)
    case (_, .invalid), (_, .constant(false)): return lhs._keepingInvalid(rhs)
    case (.or(let a), .or(let b)): return _capped(.or(a.appending(contentsOf: b)))
    case (.or(let a), _): return _capped(.or(a.appending(rhs)))
    case (_, .or(let b)): return _capped(.or(_Junction([lhs] + b.terms)))
    default: return _capped(.or(_Junction([lhs, rhs])))
    }
  }

  /// The negation; `NOT NOT x` is `x`.
  static prefix func ! (node: _FilterNode) -> _FilterNode {
    switch node {
    case .invalid: return node
    case .not(let inner): return inner
    default: return _capped(.not(node))
    }
  }

  /// `other` when it is invalid (the first invalid operand wins), else self.
  private func _keepingInvalid(_ other: _FilterNode) -> _FilterNode {
    if case .invalid = other { return other }
    return self
  }

  /// The node, or `.invalid` when it nests deeper than ``maxDepth``.
  private static func _capped(_ node: _FilterNode) -> _FilterNode {
    let depth = node.depth
    guard depth > maxDepth else { return node }
    return .invalid(
      RequestSetError(
        .tooComplex,
        "The filter nests ANDs, ORs and NOTs \(depth) levels deep; at most \(maxDepth) are allowed. "
          + "Join conditions of one kind in one list (a || b || c, or filter(\\.key, in: values)) "
          + "instead of nesting each new condition inside the last."))
  }

  /// Text for `explain()` and descriptions, fully parenthesized where it matters.
  var description: String { _describe(maxTerms: nil) }

  /// The description with each AND and OR cut to its first few operands, for error
  /// messages, which must stay readable (and cheap) however large the filter.
  var summary: String { _describe(maxTerms: 6) }

  private func _describe(maxTerms: Int?) -> String {
    switch self {
    case .constant(let b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
    case .and(let j): return Self._describe(j, " AND ", maxTerms)
    case .or(let j): return Self._describe(j, " OR ", maxTerms)
    case .not(let inner): return "NOT " + inner._operandDescription(maxTerms)
    case .field(let c): return c.description
    case .typed(let c): return c.description
    case .predicate(let p): return p.description
    case .closure(let c): return c.description
    case .expression(let c): return c.description + " [computed on each record]"
    case .search(let c): return c.description
    case .invalid(let e): return "INVALID(\(e.code))"
    case .ids(let s): return s.description
    case .related(let r): return r.description
    }
  }

  private func _operandDescription(_ maxTerms: Int?) -> String {
    switch self {
    case .and, .or: return "(" + _describe(maxTerms: maxTerms) + ")"
    default: return _describe(maxTerms: maxTerms)
    }
  }

  private static func _describe(_ j: _Junction<Element>, _ separator: String, _ maxTerms: Int?) -> String {
    let terms = j.terms
    guard let maxTerms, terms.count > maxTerms else {
      return terms.map { $0._operandDescription(maxTerms) }.joined(separator: separator)
    }
    return terms.prefix(maxTerms).map { $0._operandDescription(maxTerms) }.joined(separator: separator)
      + separator + "… (\(terms.count - maxTerms) more)"
  }
}

/// The operands of an AND or an OR, in an append-only buffer that every junction built
/// from it shares.
///
/// Each junction sees the first `count` operands of its buffer. Appending to a junction
/// that sees the whole buffer appends in place, so `f = f || x` in a loop costs O(1) per
/// step even though the old `f` is still alive while the new one is built; appending to
/// one that sees a prefix (another junction appended first) copies the prefix. What a
/// junction sees never changes, so junctions are values like arrays.
@usableFromInline
struct _Junction<Element: Sendable>: Sendable {
  private let _buffer: _JunctionBuffer<Element>
  /// How many of the buffer's operands this junction holds.
  let count: Int
  /// 1 + the depth of the deepest operand.
  let depth: Int
  /// Whether some operand waits for a preparation to decide its twin (see
  /// `_FilterNode._hasTypedParts`): a preparation walks only such junctions.
  let hasTypedParts: Bool

  init(_ terms: [_FilterNode<Element>]) {
    _buffer = _JunctionBuffer(terms)
    count = terms.count
    depth = 1 + terms.reduce(0) { Swift.max($0, $1.depth) }
    hasTypedParts = terms.contains { $0._hasTypedParts }
  }

  private init(buffer: _JunctionBuffer<Element>, count: Int, depth: Int, hasTypedParts: Bool) {
    _buffer = buffer
    self.count = count
    self.depth = depth
    self.hasTypedParts = hasTypedParts
  }

  /// The operands, in order.
  /// - Complexity: O(1) when no other junction appended to the buffer, else O(count).
  var terms: [_FilterNode<Element>] {
    _buffer.terms.withLock { $0.count == count ? $0 : Array($0[..<count]) }
  }

  /// This junction with `node` added at the end.
  /// - Complexity: amortized O(1) when this junction sees the whole buffer.
  func appending(_ node: _FilterNode<Element>) -> _Junction {
    appending(contentsOf: CollectionOfOne(node), depth: node.depth + 1, typed: node._hasTypedParts)
  }

  /// This junction with `other`'s operands added at the end.
  func appending(contentsOf other: _Junction) -> _Junction {
    appending(contentsOf: other.terms, depth: other.depth, typed: other.hasTypedParts)
  }

  private func appending<C: Collection>(contentsOf nodes: C, depth added: Int, typed: Bool) -> _Junction
  where C.Element == _FilterNode<Element> {
    let depth = Swift.max(depth, added)
    let hasTypedParts = hasTypedParts || typed
    let inPlace = _buffer.terms.withLock { terms in
      guard terms.count == count else { return false }
      terms.append(contentsOf: nodes)
      return true
    }
    if inPlace {
      return _Junction(buffer: _buffer, count: count + nodes.count, depth: depth, hasTypedParts: hasTypedParts)
    }
    return _Junction(
      buffer: _JunctionBuffer(terms + nodes), count: count + nodes.count, depth: depth, hasTypedParts: hasTypedParts)
  }
}

/// The storage of ``_Junction``s: operands are only ever appended, under the lock.
final class _JunctionBuffer<Element: Sendable>: Sendable {
  let terms: _Lock<[_FilterNode<Element>]>
  init(_ terms: [_FilterNode<Element>]) { self.terms = _Lock(terms) }
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
  var key: String
  let op: _FieldOperator
  let value: FieldValue
  /// How the core's comparisons order strings; format strings use ``options`` instead.
  let collation: RequestCollation
  /// `[c]`, `[d]`.
  let options: _TextOptions
  /// `ANY key …`: the test applies to the field's elements.
  var quantifier: _Quantifier?
  /// `key.@count …`: the test applies to the number of the field's elements.
  var countsElements: Bool
  /// `key.@year …`: the test applies to a part of the date the field holds (see
  /// ``RequestDatePart``). A key written with a date part (`born.@year`) is split when the
  /// condition is built, so ``key`` is always the stored field's.
  var datePart: RequestDatePart?
  /// For a typed condition's twin whose key path names the record's `id` property while
  /// its Codable key is not confirmed to be "id": good for finding the record by id, not
  /// for reading the field.
  var idOnly = false
  /// The prepared test of one value.
  private let _test: _ValueTest

  /// A core comparison: `key <comparison> value` with a collation.
  init(key: String, comparison: RequestComparison, value: FieldValue, collation: RequestCollation) {
    let split = RequestDatePart._split(key)
    self.key = split?.key ?? key
    self.datePart = split?.part
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
    let split = countsElements ? nil : RequestDatePart._split(key)
    self.key = split?.key ?? key
    self.datePart = split?.part
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
    if case .compare(let c) = op, options.isEmpty, quantifier == nil, !countsElements, datePart == nil { return c }
    return nil
  }

  /// The key as written, with its date part: `born.@year`.
  var keyWithDatePart: String { datePart.map { $0.key(key) } ?? key }

  @usableFromInline var description: String {
    if case .compare(let c) = op, options.isEmpty, quantifier == nil, !countsElements {
      let suffix = collation == .binary ? "" : " [\(collation)]"
      return "\(keyWithDatePart) \(c.rawValue) \(value)\(suffix)"
    }
    var text = quantifier.map { $0.rawValue + " " } ?? ""
    text += keyWithDatePart + (countsElements ? ".@count" : "")
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
    // A list a relation resolved to may hold thousands of ids: explain() shows the first.
    if items.count > 32 {
      return "{" + items.prefix(32).map(\.description).joined(separator: ", ") + ", … (\(items.count - 32) more)}"
    }
    return "{" + items.map(\.description).joined(separator: ", ") + "}"
  }

  /// Whether a stored field value satisfies the condition.
  ///
  /// Equality is exact (`nil` equals only `nil`, numbers compare across Int and Double);
  /// an ordering comparison with `nil` on either side, or between different kinds, is
  /// false, as in SQL and NSPredicate.
  @inline(__always)
  func matches(_ field: FieldValue) -> Bool {
    if quantifier == nil && !countsElements && datePart == nil { return _test(field) }
    return _matchesElements(field)
  }

  /// ``matches(_:)`` as one closure: the prepared test itself for a plain condition (no
  /// quantifier, no `@count`), so a scan calls it with nothing in between.
  var valueTest: _ValueTest {
    if quantifier == nil && !countsElements && datePart == nil { return _test }
    return { [self] in _matchesElements($0) }
  }

  private func _matchesElements(_ field: FieldValue) -> Bool {
    var subject = datePart.map { $0._apply(field) } ?? field
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
  /// `TypedFieldTwin.swift`). Nil as built; set when the query is prepared (see
  /// ``resolvingTwin()``), so that it depends on the source's records, not on what the
  /// process read before the filter was written.
  @usableFromInline var field: _FieldCondition?
  /// How to find ``field`` when the query is prepared; nil when the value's type has none.
  @usableFromInline let twin: _DeferredTwin?
  /// For `==` with a `Hashable` value: the key path and value, so that an OR of many
  /// equalities on one key path runs as one set lookup (see `_FilterCompiler`).
  @usableFromInline let equality: _TypedEquality<Element>?
  /// The key path the condition tests, when it tests one: `explain()` says why a store
  /// decodes records for it (see `_ResolvedField.whyNoField`).
  @usableFromInline let keyPath: _KeyPathKey?
  /// The test over a whole array of records, one bit per record (see `_fillWords`), for a
  /// stored property read at its offset: a count of a scan runs it with no call per record.
  @usableFromInline let fill: _WordFill<Element>?

  @inlinable
  init(
    describe: @escaping @Sendable () -> String, twin: _DeferredTwin? = nil, keyPath: AnyKeyPath? = nil,
    assign: (@Sendable (inout Element) -> Void)? = nil, equality: _TypedEquality<Element>? = nil,
    fill: _WordFill<Element>? = nil, test: @escaping @Sendable (UnsafePointer<Element>) -> Bool
  ) {
    self.describe = describe
    self.fill = fill
    self.field = nil
    self.twin = twin
    self.keyPath = keyPath.map(_KeyPathKey.init(keyPath:))
    self.assign = assign
    self.equality = equality
    self.test = test
  }
}

extension _TypedCondition {
  /// The condition with its twin decided now (see ``_DeferredTwin``).
  func resolvingTwin() -> _TypedCondition {
    guard let twin else { return self }
    var resolved = self
    resolved.field = twin.resolve()
    return resolved
  }
}

/// Fills one bit per record of an array of records (`records`, `count`, `out`, `mask`):
/// see `_fillWords`.
@usableFromInline
typealias _WordFill<Element> =
  @Sendable (UnsafePointer<Element>, Int, UnsafeMutablePointer<UInt64>, UnsafePointer<UInt64>?) -> Void

/// `keyPath == value` for a `Hashable` value, in a form that ORs of equalities on the same
/// key path merge into one set lookup.
@usableFromInline
struct _TypedEquality<Element>: Sendable {
  /// The key path, as a dictionary key.
  @usableFromInline let key: _KeyPathKey
  @usableFromInline let value: _SendableHashable
  /// True for `==`, false for `!=`.
  @usableFromInline let isEqual: Bool
  /// Reads the field from a record, as an `AnyHashable` of the key path's value type.
  @usableFromInline let read: @Sendable (UnsafePointer<Element>) -> _SendableHashable

  @inlinable
  init(
    key: _KeyPathKey, value: _SendableHashable, isEqual: Bool,
    read: @escaping @Sendable (UnsafePointer<Element>) -> _SendableHashable
  ) {
    self.key = key
    self.value = value
    self.isEqual = isEqual
    self.read = read
  }

  /// The descriptor of `keyPath == value` (or `!=` when `isEqual` is false), or nil when
  /// `Value` is not `Hashable`.
  @inlinable
  static func make<Value: Sendable>(
    _ keyPath: KeyPath<Element, Value> & Sendable, _ value: Value, isEqual: Bool = true
  ) -> _TypedEquality? {
    guard let hash = _hashing(Value.self) else { return nil }
    return _TypedEquality(key: _KeyPathKey(keyPath: keyPath), value: hash(value), isEqual: isEqual) {
      hash($0.pointee[keyPath: keyPath])
    }
  }
}

/// An `AnyHashable` made from a `Sendable` value.
///
/// `@unchecked Sendable` because `AnyHashable` is not declared `Sendable`; every instance
/// wraps a value whose type is `Sendable` (``_hashing(_:)`` takes only those), so sharing
/// the box shares only that value.
@usableFromInline
struct _SendableHashable: Hashable, @unchecked Sendable {
  let base: AnyHashable
}

/// Wraps values of `type` for hashing when the type is `Hashable`, else nil.
///
/// The wrapper casts to the type's own `Hashable` conformance, never through `Any`, so an
/// optional stays an optional (`Int?.none` is a value here, not a failed cast).
@usableFromInline
func _hashing<V: Sendable>(_ type: V.Type) -> (@Sendable (V) -> _SendableHashable)? {
  guard let hashable = type as? any Hashable.Type else { return nil }
  let box = _HashableType(type: hashable)
  return { value in
    func wrap<H: Hashable>(_: H.Type) -> _SendableHashable {
      // V is H: the cast only names the conformance.
      _SendableHashable(base: AnyHashable(value as! H))
    }
    return wrap(box.type)
  }
}

/// A `Hashable` metatype captured by ``_hashing(_:)``'s closure.
///
/// `@unchecked Sendable` because existential metatypes are not declared `Sendable`, yet a
/// metatype is an immutable runtime record: the closure only reads it to open it.
private struct _HashableType: @unchecked Sendable {
  let type: any Hashable.Type
}

extension _TypedCondition {
  /// A condition whose description is already written.
  init(description: String, test: @escaping @Sendable (UnsafePointer<Element>) -> Bool) {
    self.init(describe: { description }, test: test)
  }
}

/// A Swift closure used as a filter.
///
/// The engine runs ``inPlace``, which hands the closure the record where it lies. A call
/// through `test` from the engine's generic code would first copy the record (a retain and
/// a release per reference-counted field); `inPlace` is built in `init`, which is inlined
/// where the filter is written, so it is specialized for the record type and reads the
/// record through the pointer without copying it.
@usableFromInline
struct _ClosureCondition<Element>: Sendable {
  @usableFromInline let test: @Sendable (Element) -> Bool
  /// `test` of the record at the pointer, borrowing it in place.
  @usableFromInline let inPlace: @Sendable (UnsafePointer<Element>) -> Bool
  var description: String { "{ closure }" }

  @inlinable
  init(test: @escaping @Sendable (Element) -> Bool) {
    self.test = test
    self.inPlace = { test($0.pointee) }
  }
}
