import Foundation

/// Where an expression is evaluated: the record at a slot (or, for a test over values, the
/// value standing for the record), with the variables of the SUBQUERYs around it bound.
///
/// A SUBQUERY binds its variable to each element and changes nothing else: inside it, a
/// bare key and `SELF` still name the evaluated object (the correlated reading GNUstep's
/// NSPredicate tests assert: `SUBQUERY(friends, $f, $f.age > age)` keeps the friends older
/// than the person), and `$f.key` names the element's key.
struct _ExpressionScope {
  var slot: Int
  /// The evaluated object when it is a value (a record with its relations materialized
  /// inside it); nil for the record at `slot`.
  var object: FieldValue? = nil
  /// Innermost last: an inner SUBQUERY's variable shadows an outer one of the same name.
  var bindings: [(name: String, value: FieldValue)] = []

  func value(of name: String) -> FieldValue {
    bindings.last { $0.name == name }?.value ?? .null
  }
}

/// Compiles expression conditions against one snapshot's fields into tests of a slot.
///
/// Keys are checked here, as for field conditions: an unknown key, two keys that can never
/// be compared, or arithmetic on a key that holds no numbers throws, and so does a variable
/// nothing bound. The recursion follows the expression tree, whose height the parser's
/// nesting limit bounds.
struct _ExpressionCompiler<Element> {
  typealias Value = (_ExpressionScope) throws -> FieldValue
  typealias Test = (_ExpressionScope) throws -> Bool

  let fields: any _FieldAccess
  /// Whether the evaluated object is a value (`_ExpressionScope.object`) rather than the
  /// record at a slot: keys then read the value's members, unchecked.
  var readsValues = false
  /// `now()` is read once per evaluation, so every record sees the same instant.
  let now = FieldValue.double(Date().timeIntervalSinceReferenceDate)

  /// The test of a top-level condition.
  func condition(_ c: _ExpressionCondition) throws -> (Int) throws -> Bool {
    let test = try _condition(c, bound: [])
    return { slot in try test(_ExpressionScope(slot: slot)) }
  }

  /// The test of a condition over one value taken as the evaluated object: its keys read
  /// the value's members. A record with its relations materialized inside it is tested
  /// this way (see RelationResolution.swift).
  static func valueTest(_ c: _ExpressionCondition) throws -> @Sendable (FieldValue) throws -> Bool {
    var compiler = _ExpressionCompiler(fields: _NoFields())
    compiler.readsValues = true
    let test = try compiler._condition(c, bound: [])
    let box = _SendableValueTest(test: test)
    return { try box.test(_ExpressionScope(slot: 0, object: $0)) }
  }

  private func _condition(_ c: _ExpressionCondition, bound: Set<String>) throws -> Test {
    if case .compare = c.op, let a = c.lhs.plainKey, let b = c.rhs.plainKey {
      try _checkComparable(a, b)
    }
    let left = try _value(c.lhs, bound: bound)
    if let constant = c.rhs.constantValue {
      let prepared = try _FieldCondition(
        key: "", op: c.op, value: constant, options: c.options, quantifier: c.quantifier)
      return { prepared.matches(try left($0)) }
    }
    let right = try _value(c.rhs, bound: bound)
    if case .compare(let comparison) = c.op, c.options.isEmpty, c.quantifier == nil {
      return { scope in Self._compare(try left(scope), comparison, try right(scope)) }
    }
    let (op, options, quantifier) = (c.op, c.options, c.quantifier)
    return { scope in
      let value = try right(scope)
      let prepared: _FieldCondition
      do {
        prepared = try _FieldCondition(key: "", op: op, value: value, options: options, quantifier: quantifier)
      } catch {
        throw RequestSetError(
          .invalidFormat,
          "The pattern \(value) that \(c.rhs) gave for MATCHES in \(c) is not a valid regular expression. "
            + "Store valid ICU patterns, or compare with LIKE.", underlying: error)
      }
      return prepared.matches(try left(scope))
    }
  }

  /// `lhs <comparison> rhs` with the core's rules (equality exact across Int and Double,
  /// an ordering with nil, NaN or values of different kinds false): the field conditions'
  /// own test, so the two never disagree.
  static func _compare(_ l: FieldValue, _ comparison: RequestComparison, _ r: FieldValue) -> Bool {
    _FieldCondition._compareTest(comparison, r, collation: .binary, options: [])(l)
  }

  /// A predicate inside a SUBQUERY, evaluated with its variable bound to an element; a
  /// bare key in it is the evaluated object's, as outside it.
  private func _predicate(_ p: _FieldPredicate, bound: Set<String>) throws -> Test {
    switch p {
    case .constant(let b): return { _ in b }
    case .not(let inner):
      let t = try _predicate(inner, bound: bound)
      return { try !t($0) }
    case .and(let parts):
      let tests = try parts.map { try _predicate($0, bound: bound) }
      return { scope in
        for t in tests where try !t(scope) { return false }
        return true
      }
    case .or(let parts):
      let tests = try parts.map { try _predicate($0, bound: bound) }
      return { scope in
        for t in tests where try t(scope) { return true }
        return false
      }
    case .field(let c):
      let read = try _value(.key(c.key), bound: bound)
      return { scope in c.matches(try read(scope)) }
    case .expression(let c):
      return try _condition(c, bound: bound)
    case .search(let c):
      let reads = try c.keys.map { try _value(.key($0), bound: bound) }
      return { scope in c.matches(try reads.map { try $0(scope) }) }
    }
  }

  private func _value(_ e: _Expression, bound: Set<String>) throws -> Value {
    switch e {
    case .constant(let v):
      return { _ in v }
    case .key(let key):
      if readsValues { return { _ExpressionValues.member($0.object ?? .null, key) } }
      let read = try _reader(for: key)
      return { try read($0.slot) }
    case .evaluatedObject:
      if readsValues { return { $0.object ?? .null } }
      let record = try _record()
      return { try record($0.slot) }
    case .variable(let name):
      guard bound.contains(name) else { throw RequestSetError.unboundVariable(name) }
      return { $0.value(of: name) }
    case .member(let base, let key):
      let b = try _value(base, bound: bound)
      return { _ExpressionValues.member(try b($0), key) }
    case .function(.now, _):
      let now = self.now
      return { _ in now }
    case .function(let f, let args):
      if f != .count, f != .countOperator, f != .mode {
        for a in args { if let key = a.plainKey { try _checkNumeric(key, f) } }
      }
      let values = try args.map { try _value($0, bound: bound) }
      return { scope in
        // A value the function cannot use (text in a sum) has no result: nil.
        (try? _ExpressionValues.apply(f, try values.map { try $0(scope) })) ?? .null
      }
    case .index(let base, let s):
      let b = try _value(base, bound: bound)
      if case .at(let position) = s {
        let at = try _value(position, bound: bound)
        return { scope in _ExpressionValues.index(try b(scope), s, try at(scope)) }
      }
      return { _ExpressionValues.index(try b($0), s, nil) }
    case .list(let items):
      let values = try items.map { try _value($0, bound: bound) }
      return { scope in .array(try values.map { try $0(scope) }) }
    case .subquery(let collection, let variable, let predicate):
      let items = try _value(collection, bound: bound)
      let test = try _predicate(predicate, bound: bound.union([variable]))
      return { scope in
        guard case .array(let elements) = try items(scope) else { return .array([]) }
        var inner = scope
        inner.bindings.append((variable, .null))
        var kept: [FieldValue] = []
        for element in elements {
          inner.bindings[inner.bindings.count - 1].value = element
          if try test(inner) { kept.append(element) }
        }
        return .array(kept)
      }
    }
  }

  /// A reader of a record's key. A key the store does not know may continue a key that
  /// holds arrays (`pets.name` over `pets`): it reads every element's value, as KVC does.
  private func _reader(for key: String) throws -> (Int) throws -> FieldValue {
    if fields.kinds[key] != nil { return fields.reader(for: key) ?? { _ in .null } }
    if RequestDatePart._split(key) != nil { return try fields.readerWithDateParts(for: key) ?? { _ in .null } }
    if let read = arrayPathReader(key) { return read }
    // A key records may still hold (none seen yet, or under a nil-only parent) reads nil,
    // as a condition on it does (see `_FilterCompiler._mayHold`).
    if _FilterCompiler<Never>._mayHold(key, fields) { return { _ in .null } }
    throw RequestSetError.unknownKey(key, type: Element.self, known: fields.knownKeys)
  }

  /// A reader for a key the store does not know that continues a key holding arrays
  /// (`members.name` over `members`), or nil.
  func arrayPathReader(_ key: String) -> ((Int) throws -> FieldValue)? {
    let parts = key.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count > 1 else { return nil }
    // Only a prefix as deep as some known key can name an array (see
    // `_prefixesWorthLookingUp`): a key of thousands of names costs one pass.
    let worth = fields._prefixesWorthLookingUp(key).utf8.reduce(1) { $1 == 0x2E ? $0 + 1 : $0 }
    for n in stride(from: Swift.min(parts.count - 1, worth), through: 1, by: -1) {
      let prefix = String(key[key.startIndex..<parts[n - 1].endIndex])
      guard let kinds = fields.kinds[prefix], kinds.contains(.array) else { continue }
      let rest = parts[n...]
      let read = fields.reader(for: prefix) ?? { _ in .null }
      return { _ExpressionValues.member(try read($0), rest) }
    }
    return nil
  }

  /// The whole record as a nested object (`SELF`): its top-level fields, nil ones left out
  /// as the record's encoding leaves them out.
  private func _record() throws -> (Int) throws -> FieldValue {
    let keys = fields.kinds.keys.filter { !$0.contains(".") }.sorted()
    let readers = keys.compactMap { key in fields.reader(for: key).map { (key, $0) } }
    return { slot in
      var object: [String: FieldValue] = [:]
      for (key, read) in readers {
        let v = try read(slot)
        if case .null = v { continue }
        object[key] = v
      }
      return .object(object)
    }
  }

  /// Two keys compared with each other must be able to hold values of one kind.
  private func _checkComparable(_ a: String, _ b: String) throws {
    guard let ka = fields.kinds[a], let kb = fields.kinds[b], !ka.isUnknown, !kb.isUnknown,
      !ka.nonNull.isEmpty, !kb.nonNull.isEmpty
    else { return }
    if ka.nonNull.contains(where: kb.contains) { return }
    let held = { (k: _KindSet) in k.nonNull.map(\.description).joined(separator: " or ") }
    throw RequestSetError(
      .typeMismatch,
      "Keys \"\(a)\" and \"\(b)\" of \(Element.self) hold \(held(ka)) and \(held(kb)) values, so comparing them "
        + "can never match. Compare keys that hold the same kind of value.")
  }

  /// A key an arithmetic operator or a numeric function reads must be able to hold numbers
  /// (or arrays of them, for the statistics).
  private func _checkNumeric(_ key: String, _ f: _Function) throws {
    guard let kinds = fields.kinds[key], !kinds.isUnknown, !kinds.nonNull.isEmpty else { return }
    let text = f == .uppercase || f == .lowercase
    let wanted: [_FieldKind] = text ? [.string] : [.number, .array]
    if wanted.contains(where: kinds.contains) { return }
    let name = f.infix.map { "\"\($0)\"" } ?? (f == .negate ? "\"-\"" : f.rawValue)
    throw RequestSetError.operatorMismatch(
      key: key, holds: kinds, type: Element.self,
      reason: "\(name) computes with \(text ? "text" : "numbers")",
      fix: "Use a key that holds \(text ? "text" : "numbers")")
  }
}

extension RequestSetError {
  /// A read of a filter whose variable has no value.
  static func unboundVariable(_ name: String) -> RequestSetError {
    RequestSetError(
      .unboundVariable,
      "The variable $\(name) has no value. Bind it with .substituting([\"\(name)\": value]) on the filter, "
        + "or pass variables: [\"\(name)\": value] to filter(_:variables:).")
  }
}

/// No fields: the compiler of a test over values (``_ExpressionCompiler/valueTest(_:)``)
/// reads keys from the value, never from a store.
struct _NoFields: _FieldAccess {
  var kinds: [String: _KindSet] { [:] }
  func reader(for key: String) -> ((Int) throws -> FieldValue)? { nil }
  func matcher(for condition: _FieldCondition) -> ((Int) throws -> Bool)? { nil }
}

/// A compiled test over values.
///
/// `@unchecked Sendable` because the compiler's closures are not declared `Sendable`; the
/// ones a value test builds capture only constants, prepared field conditions (which
/// are `Sendable`) and other such closures, and never a store's field readers (`_NoFields`
/// has none), so calling it from any thread shares nothing mutable.
struct _SendableValueTest: @unchecked Sendable {
  let test: (_ExpressionScope) throws -> Bool
}
