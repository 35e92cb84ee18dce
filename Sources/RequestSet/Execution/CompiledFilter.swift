import Foundation

/// A filter tree compiled against one snapshot: keys resolved to field readers, values
/// checked against the fields' kinds, every node turned into a test of a slot.
enum _Matcher<Element> {
  /// Every candidate matches, or none does.
  case constant(Bool)
  /// One typed condition: the scan calls its test directly (the fast path).
  case typed(@Sendable (UnsafePointer<Element>) -> Bool)
  /// Anything else.
  case general((Int) throws -> Bool)
}

/// Compiles filters and sort keys for one evaluation.
struct _FilterCompiler<Element: Sendable> {
  let cursor: _RecordCursor<Element>
  /// Fetched on first use: a query without string keys never builds a field table.
  private var access: (any _FieldAccess)?

  init(cursor: _RecordCursor<Element>) {
    self.cursor = cursor
  }

  var snapshot: StoreSnapshot<Element> { cursor.snapshot }

  mutating func fields() throws -> any _FieldAccess {
    if let access { return access }
    let a = try snapshot._fields()
    access = a
    return a
  }

  /// The fields, when they are at hand without encoding every record (see
  /// `StoreSnapshot._fieldsAtHand()`).
  mutating func fieldsAtHand() -> (any _FieldAccess)? {
    if let access { return access }
    access = snapshot._fieldsAtHand()
    return access
  }

  /// A reader for a string key's value by slot, after checking the key and value.
  mutating func reader(for key: String, value: FieldValue?) throws -> ((Int) throws -> FieldValue)? {
    let fields = try fields()
    try Self.validate(key, value: value, in: fields)
    return fields.reader(for: key)
  }

  mutating func compile(_ node: _FilterNode<Element>?) throws -> _Matcher<Element> {
    guard let node else { return .constant(true) }
    switch node {
    case .constant(let b): return .constant(b)
    case .typed(let c): return _twin(c) ?? .typed(c.test)
    case .and(let parts) where cursor.base != nil && parts.count > 1:
      // Typed conditions AND-ed in memory stay one typed test: the scan's fast path
      // passes each the record's address, with no per-slot closure in between.
      var tests: [@Sendable (UnsafePointer<Element>) -> Bool] = []
      for part in parts {
        guard case .typed(let c) = part else { return try _general(node) }
        tests.append(c.test)
      }
      if tests.count == 2 {
        let (a, b) = (tests[0], tests[1])
        return .typed { a($0) && b($0) }
      }
      let all = tests
      return .typed { p in
        for t in all where !t(p) { return false }
        return true
      }
    default: return try _general(node)
    }
  }

  /// A reader of the field a typed sort's key path names, for a store whose records would
  /// have to be decoded to be compared: when the key holds values of one kind (and nil),
  /// their order is the property's (see TypedFieldTwin.swift). Nil otherwise.
  mutating func sortTwin(_ t: _TypedSort<Element>) throws -> ((Int) throws -> FieldValue)? {
    guard cursor.base == nil, let key = t.fieldKey, let fields = try? fields(), let kinds = fields.kinds[key],
      !kinds.isUnknown, kinds.nonNull.count <= 1
    else { return nil }
    return fields.reader(for: key) ?? { _ in .null }
  }

  /// A typed condition as a test of the store's fields, for a store whose records would
  /// have to be decoded to be tested; nil in memory, or when the condition has no twin
  /// whose key the store knows with the value's kind.
  private mutating func _twin(_ c: _TypedCondition<Element>) -> _Matcher<Element>? {
    guard cursor.base == nil, let twin = c.field, !twin.idOnly, let fields = try? fields(),
      Self.holdsKinds(of: .field(twin), in: fields)
    else { return nil }
    guard let read = fields.reader(for: twin.key) else { return .constant(twin.matches(.null)) }
    return .general { twin.matches(try read($0)) }
  }

  private mutating func _general(_ node: _FilterNode<Element>) throws -> _Matcher<Element> {
    let cursor = self.cursor
    switch node {
    case .constant(let b):
      return .constant(b)
    case .typed(let c):
      if let twin = _twin(c) { return twin }
      let test = c.test
      return .general { test(try cursor.pointer($0)) }
    case .closure(let c):
      let test = c.test
      return .general { test(try cursor.pointer($0).pointee) }
    case .predicate(let p):
      // A translated predicate runs as field conditions when the store's fields are at
      // hand and surely agree with the record's properties; otherwise `evaluate` tests
      // each record.
      if let translated = p.translated, let fields = fieldsAtHand(),
        Self.holdsKinds(of: translated, in: fields)
      {
        return try _general(translated)
      }
      let p = p.predicate
      return .general { slot in
        let record = try cursor.pointer(slot)
        do {
          return try p.evaluate(record.pointee)
        } catch {
          throw RequestSetError(
            .predicateFailed,
            "The #Predicate<\(Element.self)> threw while evaluating a record. "
              + "Make the predicate total (no force unwraps or failing conversions).",
            underlying: error)
        }
      }
    case .invalid(let error):
      throw error
    case .field(let c):
      let fields = try fields()
      try Self.validate(c, in: fields)
      if let column = (fields as? _FieldTable)?.column(c.key) {
        // In memory: index the column directly, one closure call per record fewer.
        return .general { c.matches(column[$0]) }
      }
      guard let read = fields.reader(for: c.key) else { return .constant(c.matches(.null)) }
      return .general { c.matches(try read($0)) }
    case .not(let inner):
      switch try _general(inner) {
      case .constant(let b): return .constant(!b)
      case .typed(let t): return .general { !t(try cursor.pointer($0)) }
      case .general(let g): return .general { try !g($0) }
      }
    case .and(let parts), .or(let parts):
      let isAnd: Bool
      if case .and = node { isAnd = true } else { isAnd = false }
      var tests: [(Int) throws -> Bool] = []
      for part in parts {
        switch try _general(part) {
        case .constant(let b):
          if b != isAnd { return .constant(b) }  // false in an AND, true in an OR decides
        case .typed(let t): tests.append { t(try cursor.pointer($0)) }
        case .general(let g): tests.append(g)
        }
      }
      if tests.isEmpty { return .constant(isAnd) }
      if tests.count == 1 { return .general(tests[0]) }
      if isAnd {
        return .general { slot in
          for t in tests where try !t(slot) { return false }
          return true
        }
      }
      return .general { slot in
        for t in tests where try t(slot) { return true }
        return false
      }
    }
  }

  /// Whether the store's fields can stand in for a condition built from a typed one (a
  /// key path's twin, a translated predicate): every key it names is known, with kinds
  /// recorded, and holds the kind of each value it is compared with (or the value is nil).
  ///
  /// A key the type renames with `CodingKeys`, or whose values encode as another kind,
  /// fails the test, and the condition is tested on the records instead.
  static func holdsKinds(of node: _FilterNode<Element>, in fields: any _FieldAccess) -> Bool {
    switch node {
    case .constant: return true
    case .and(let parts), .or(let parts): return parts.allSatisfy { holdsKinds(of: $0, in: fields) }
    case .not(let inner): return holdsKinds(of: inner, in: fields)
    case .field(let c):
      guard c.quantifier == nil, !c.countsElements, let kinds = fields.kinds[c.key], !kinds.isUnknown
      else { return false }
      let values: [FieldValue]
      switch (c.op, c.value) {
      case (.compare, _): values = [c.value]
      case (.in, .array(let items)): values = items
      default: return false
      }
      return values.allSatisfy { $0._kind == .null || kinds.contains($0._kind) }
    default: return false
    }
  }

  /// Whether a key no record holds may still be one: every key, in a store that has held
  /// no record (it knows none yet, see `_SchemaProbe`); and `a.b` under a key `a` that has
  /// only held nil or nested values when no key under `a` is known yet (an optional
  /// nested value that is nil in every record). Such a key reads nil.
  static func _mayHold(_ key: String, _ fields: any _FieldAccess) -> Bool {
    if fields.kinds.isEmpty { return true }
    var parent = Substring(key)
    while let dot = parent.lastIndex(of: ".") {
      parent = parent[..<dot]
      guard let kinds = fields.kinds[String(parent)] else { continue }
      guard kinds.nonNull.allSatisfy({ $0 == .object }) else { return false }
      let prefix = parent + "."
      return !fields.kinds.keys.contains { $0.hasPrefix(prefix) }
    }
    return false
  }

  /// Checks that a key exists and that a value can match what it holds.
  static func validate(_ key: String, value: FieldValue?, in fields: any _FieldAccess) throws {
    guard let kinds = fields.kinds[key] else {
      if _mayHold(key, fields) { return }
      throw RequestSetError.unknownKey(key, type: Element.self, known: fields.knownKeys)
    }
    guard let value, value._kind != .null, !kinds.isUnknown, !kinds.nonNull.isEmpty else { return }
    if !kinds.contains(value._kind) {
      throw RequestSetError.typeMismatch(key: key, holds: kinds, value: value, type: Element.self)
    }
  }

  /// Checks a condition's key, and that its value and operator can match what the key holds.
  static func validate(_ c: _FieldCondition, in fields: any _FieldAccess) throws {
    if c.comparison != nil {
      return try validate(c.key, value: c.value, in: fields)
    }
    guard let kinds = fields.kinds[c.key] else {
      if _mayHold(c.key, fields) { return }
      throw RequestSetError.unknownKey(c.key, type: Element.self, known: fields.knownKeys)
    }
    guard !kinds.isUnknown, !kinds.nonNull.isEmpty else { return }
    if c.countsElements {
      guard kinds.contains(.array) || kinds.contains(.object) else {
        throw RequestSetError.operatorMismatch(
          key: c.key, holds: kinds, type: Element.self,
          reason: "\(c.key).@count counts the elements of an array", fix: "Use @count on an array key")
      }
      if case .compare = c.op, c.value._kind != .null, c.value._kind != .number {
        throw RequestSetError(
          .typeMismatch,
          "\(c.key).@count of \(Element.self) is a number, so it can never match \(c.value), which is a "
            + "\(c.value._kind). Compare it with a number.")
      }
      return
    }
    if let quantifier = c.quantifier {
      guard kinds.contains(.array) else {
        throw RequestSetError.operatorMismatch(
          key: c.key, holds: kinds, type: Element.self,
          reason: "\(quantifier.rawValue) tests the elements of an array",
          fix: "Drop \(quantifier.rawValue) to test the value itself")
      }
      return  // The elements' kinds are not recorded; a mismatch just never matches.
    }
    switch c.op {
    case .compare:
      try validate(c.key, value: c.value, in: fields)
    case .between, .in:
      if case .string = c.value, case .in = c.op {
        guard kinds.contains(.string) else {
          throw RequestSetError.operatorMismatch(
            key: c.key, holds: kinds, type: Element.self,
            reason: "IN with a String tests for a substring",
            fix: "Pass a list such as {1, 2} or an array argument")
        }
        return
      }
      guard case .array(let items) = c.value else { return }
      for item in items where item._kind != .null && !kinds.contains(item._kind) {
        throw RequestSetError.typeMismatch(key: c.key, holds: kinds, value: item, type: Element.self)
      }
    case .text(let t):
      if t == .contains && kinds.contains(.array) { return }
      guard kinds.contains(.string) else {
        throw RequestSetError.operatorMismatch(
          key: c.key, holds: kinds, type: Element.self, reason: "\(t.rawValue) tests text",
          fix: "Compare it with ==, <, > or BETWEEN instead")
      }
      if c.value._kind != .string {
        throw RequestSetError.typeMismatch(key: c.key, holds: kinds, value: c.value, type: Element.self)
      }
    }
  }
}
