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
    return try fields.readerWithDateParts(for: key)
  }

  /// The matcher for `node`. Inside an async call (see `StoreThreads`) it stops
  /// matching once the call is cancelled: a typed test answers false from then on and a
  /// general one throws `CancellationError`, and the call throws `CancellationError` in
  /// the end, so a stopped scan is never taken for a result (writes check first, see
  /// `_CancelToken.checkBeforeWriting()`).
  mutating func compile(_ node: _FilterNode<Element>?) throws -> _Matcher<Element> {
    let matcher = try _compileMatcher(node)
    guard let token = _CancelToken.current else { return matcher }
    switch matcher {
    case .constant: return matcher
    case .typed(let t):
      // In memory the test reads the record in place, and answering false stops it at
      // once; a store whose records are decoded for the test would still decode every
      // one, so there the scan stops by throwing.
      if cursor.base != nil { return .typed { !token.isCancelled && t($0) } }
      let cursor = self.cursor
      return .general { slot in
        if token.isCancelled { throw CancellationError() }
        return t(try cursor.pointer(slot))
      }
    case .general(let g):
      return .general { slot in
        if token.isCancelled { throw CancellationError() }
        return try g(slot)
      }
    }
  }

  private mutating func _compileMatcher(_ node: _FilterNode<Element>?) throws -> _Matcher<Element> {
    guard let node = node.map(Self._mergingEqualities) else { return .constant(true) }
    switch node {
    case .constant(let b): return .constant(b)
    case .typed(let c): return _twin(c) ?? .typed(c.test)
    // A closure is a test of the record in place too (see `_ClosureCondition`).
    case .closure(let c): return .typed(c.inPlace)
    case .and(let j) where cursor.base != nil && j.count > 1:
      // Typed conditions (and closures) AND-ed in memory stay one typed test: the scan's
      // fast path passes each the record's address, with no per-slot closure in between.
      // Each test is taken into the next closure as a constant, never through an array:
      // a closure read back from an array is called through two reabstraction thunks,
      // three calls per operand per record instead of one.
      var combined: (@Sendable (UnsafePointer<Element>) -> Bool)? = nil
      for part in j.terms {
        let next: @Sendable (UnsafePointer<Element>) -> Bool
        switch part {
        case .typed(let c): next = c.test
        case .closure(let c): next = c.inPlace
        default: return try _general(node, merged: true)
        }
        if let before = combined {
          combined = { before($0) && next($0) }
        } else {
          combined = next
        }
      }
      return .typed(combined!)
    default: return try _general(node, merged: true)
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
    if let test = fields.matcher(for: twin) { return .general(test) }
    guard let read = fields.reader(for: twin.key) else { return .constant(twin.matches(.null)) }
    return .general { twin.matches(try read($0)) }
  }

  /// - Parameter merged: The node's equalities are merged already (see
  ///   ``_mergingEqualities(_:)``).
  /// A condition that is not an AND, an OR or a NOT. Kept out of ``_general(_:merged:)``,
  /// which recurses once per level of a filter tree: in a debug build every local of every
  /// branch takes room in each recursive frame, and a format string nests deep enough that
  /// the leaves' locals would not fit a 512 KiB thread stack.
  @inline(never)
  private mutating func _leaf(_ node: _FilterNode<Element>) throws -> _Matcher<Element> {
    let cursor = self.cursor
    switch node {
    case .constant(let b):
      return .constant(b)
    case .typed(let c):
      if let twin = _twin(c) { return twin }
      let test = c.test
      return .general { test(try cursor.pointer($0)) }
    case .closure(let c):
      // In place: the record is borrowed where it lies, not copied for the call.
      let test = c.inPlace
      return .general { test(try cursor.pointer($0)) }
    case .ids(let s):
      // Prepared queries hold the resolved condition; a filter compiled unprepared reads
      // the operand now.
      return try _leaf(s.resolved())
    case .related(let r):
      // In process, a relation's subquery is read as ids: the one materialization.
      return try _leaf(r.materialized().node)
    case .predicate(let p):
      // A translated predicate runs as field conditions when the store's fields are at
      // hand and surely agree with the record's properties; otherwise `evaluate` tests
      // each record.
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
    case .expression(let c):
      return .general(try _ExpressionCompiler<Element>(fields: try fields()).condition(c))
    case .search(let c):
      return .general(try _searchTest(c))
    case .field(let c):
      let fields = try fields()
      if fields.kinds[c.key] == nil, let read = _ExpressionCompiler<Element>(fields: fields).arrayPathReader(c.key) {
        // `members.name` over an array of structs: every element's value, as KVC reads it.
        return .general { c.matches(try read($0)) }
      }
      try Self.validate(c, in: fields)
      if let direct = fields as? any _DirectFieldAccess, let test = direct.directTest(c) {
        // In memory, a plain comparison on an Int or String field: no FieldValue per record.
        return .general(test)
      }
      if let read = (fields as? any _DirectFieldAccess)?.directReader(for: c.key) {
        // In memory: read the field without a throwing reader in between.
        let test = c.valueTest
        return .general { test(read($0)) }
      }
      guard let read = fields.reader(for: c.key) else { return .constant(c.matches(.null)) }
      return .general { c.matches(try read($0)) }
    case .not, .and, .or:
      return try _general(node, merged: true)
    }
  }

  private mutating func _general(_ node: _FilterNode<Element>, merged: Bool = false) throws -> _Matcher<Element> {
    let cursor = self.cursor
    let node = merged ? node : Self._mergingEqualities(node)
    switch node {
    case .predicate(let p):
      // A translated predicate runs as field conditions when the store's fields are at
      // hand and surely agree with the record's properties; otherwise `evaluate` tests
      // each record.
      if let translated = p.translated, let fields = fieldsAtHand(), Self.holdsKinds(of: translated, in: fields) {
        return try _general(translated)
      }
      return try _leaf(node)
    case .constant, .typed, .closure, .invalid, .expression, .field, .ids, .search, .related:
      return try _leaf(node)
    case .not(let inner):
      switch try _general(inner) {
      case .constant(let b): return .constant(!b)
      case .typed(let t): return .general { !t(try cursor.pointer($0)) }
      case .general(let g): return .general { try !g($0) }
      }
    case .and(let j), .or(let j):
      let isAnd: Bool
      if case .and = node { isAnd = true } else { isAnd = false }
      let parts = j.terms
      if let fused = try _fusedColumns(parts, isAnd: isAnd) { return fused }
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
      if tests.count == 2 {
        // Two operands, the common case, without a loop over an array of closures.
        let (a, b) = (tests[0], tests[1])
        return isAnd ? .general { try a($0) && b($0) } : .general { try a($0) || b($0) }
      }
      // Captured as a constant: a captured `var` is boxed, and every read of it in the
      // per-record loop paid a dynamic exclusivity check (swift_beginAccess).
      let all = tests
      if isAnd {
        return .general { slot in
          for t in all where try !t(slot) { return false }
          return true
        }
      }
      return .general { slot in
        for t in all where try t(slot) { return true }
        return false
      }
    }
  }

  /// An AND or OR whose every operand is a string-key condition on records in memory, as
  /// one test that reads each field directly and calls its prepared
  /// value test directly: the same fused loop a typed AND gets (see ``compile(_:)``),
  /// with no closure per operand in between. Nil when some operand is anything else (it
  /// is then compiled operand by operand); throws what compiling the first operands would.
  ///
  /// Operands keep their order, so the short-circuit is the one the junction describes.
  mutating func _fusedColumns(_ parts: [_FilterNode<Element>], isAnd: Bool) throws -> _Matcher<Element>? {
    guard parts.count > 1, let first = try _columnOperand(parts[0]), let second = try _columnOperand(parts[1])
    else { return nil }
    let (a, ta) = first
    let (b, tb) = second
    // Two and three operands are taken one by one into constants: a closure kept in an
    // array is called through a reabstraction thunk, one more call per operand per record.
    switch (parts.count, isAnd) {
    case (2, true): return .general { ta(a($0)) && tb(b($0)) }
    case (2, false): return .general { ta(a($0)) || tb(b($0)) }
    case (3, _):
      guard let third = try _columnOperand(parts[2]) else { return nil }
      let (c, tc) = third
      return isAnd
        ? .general { ta(a($0)) && tb(b($0)) && tc(c($0)) } : .general { ta(a($0)) || tb(b($0)) || tc(c($0)) }
    default:
      var columns: [(read: (Int) -> FieldValue, test: _ValueTest)] = [first, second]
      columns.reserveCapacity(parts.count)
      for part in parts.dropFirst(2) {
        guard let operand = try _columnOperand(part) else { return nil }
        columns.append(operand)
      }
      let all = columns
      return .general { slot in
        for (read, test) in all where test(read(slot)) != isAnd { return !isAnd }
        return isAnd
      }
    }
  }

  /// A string-key condition's direct reader over records in memory and its prepared
  /// value test, after checking its key and value; nil for any other operand, or a key
  /// that no record holds.
  private mutating func _columnOperand(
    _ part: _FilterNode<Element>
  ) throws -> (read: (Int) -> FieldValue, test: _ValueTest)? {
    guard case .field(let c) = part, let fields = try? fields(), let direct = fields as? any _DirectFieldAccess,
      direct.kinds[c.key] != nil, let read = direct.directReader(for: c.key)
    else { return nil }
    try Self.validate(c, in: fields)
    return (read, c.valueTest)
  }

  /// A full-text condition as a test of a slot: each key's words, tokenized per record
  /// (a text index, when the store has one, answers the condition before this runs).
  private mutating func _searchTest(_ c: _TextSearchCondition) throws -> (Int) throws -> Bool {
    let all = try searchReaders(c)
    return { slot in c.matches(try all.map { try $0(slot) }) }
  }

  /// The node with an OR's equalities on one key (`id == 1 OR id == 2 OR …`) merged into
  /// one `IN`, and an AND's inequalities on one key (`NOT id == 1 AND id != 2 AND …`) into
  /// one `NOT IN`: a set lookup per record instead of a test per value. Other operands
  /// keep their order; the merged one takes its first member's place. Only the node's own
  /// operands are looked at (the walk of the tree merges each level as it reaches it).
  static func _mergingEqualities(_ node: _FilterNode<Element>) -> _FilterNode<Element> {
    let isAnd: Bool
    let parts: [_FilterNode<Element>]
    switch node {
    case .and(let j) where j.count >= _mergeThreshold: (isAnd, parts) = (true, j.terms)
    case .or(let j) where j.count >= _mergeThreshold: (isAnd, parts) = (false, j.terms)
    default: return node
    }
    var slots: [_MergeSlot] = []
    var fields: [String: [(node: _FilterNode<Element>, value: FieldValue)]] = [:]
    var typed: [_KeyPathKey: [(node: _FilterNode<Element>, condition: _TypedCondition<Element>)]] = [:]
    for part in parts {
      // In an OR, `key == v`; in an AND, `key != v` or `NOT key == v`.
      var subject = part
      var positive = true
      if case .not(let inner) = part {
        subject = inner
        positive = false
      }
      switch subject {
      case .field(let c) where c.collation == .binary
        && (c.comparison == .equal && positive == !isAnd || c.comparison == .notEqual && positive && isAnd):
        if fields[c.key] == nil { slots.append(.field(c.key)) }
        fields[c.key, default: []].append((part, c.value))
      case .typed(let t) where t.equality.map({ ($0.isEqual == positive) != isAnd }) ?? false:
        let key = t.equality!.key
        if typed[key] == nil { slots.append(.typed(key)) }
        typed[key, default: []].append((part, t))
      default:
        slots.append(.node(part))
      }
    }
    guard slots.count < parts.count else { return node }
    var merged: [_FilterNode<Element>] = []
    merged.reserveCapacity(slots.count)
    for slot in slots {
      switch slot {
      case .node(let n): merged.append(n)
      case .field(let key):
        let group = fields[key]!
        guard group.count > 1,
          let c = try? _FieldCondition(key: key, op: .in, value: .array(group.map(\.value)))
        else {
          merged += group.map(\.node)
          continue
        }
        merged.append(isAnd ? .not(.field(c)) : .field(c))
      case .typed(let key):
        let group = typed[key]!
        guard group.count > 1 else {
          merged += group.map(\.node)
          continue
        }
        let read = group[0].condition.equality!.read
        let values = Set(group.map { $0.condition.equality!.value })
        let members = group.map(\.condition)
        var inCondition = _TypedCondition<Element>(
          describe: { "(" + members.map(\.description).joined(separator: isAnd ? " AND " : " OR ") + ")" },
          test: { values.contains(read($0)) })
        // The members' twins were decided when the query was prepared.
        inCondition.field = _inTwin(members.map(\.field))
        merged.append(isAnd ? .not(.typed(inCondition)) : .typed(inCondition))
      }
    }
    return merged.count == 1 ? merged[0] : (isAnd ? .and(merged) : .or(merged))
  }

  /// Where an operand, or a merged group, goes in the merged junction.
  private enum _MergeSlot {
    case node(_FilterNode<Element>)
    case field(String)
    case typed(_KeyPathKey)
  }

  /// Operands below this many are tested one by one.
  private static var _mergeThreshold: Int { 8 }

  /// `key IN {…}` for the field twins of merged typed equalities, when every one has a
  /// twin on the same key (`==` or `!=`, it is the values that matter).
  private static func _inTwin(_ twins: [_FieldCondition?]) -> _FieldCondition? {
    guard let first = twins.first ?? nil else { return nil }
    var values: [FieldValue] = []
    for twin in twins {
      guard let twin, twin.key == first.key, twin.idOnly == first.idOnly,
        twin.comparison == .equal || twin.comparison == .notEqual
      else { return nil }
      values.append(twin.value)
    }
    guard var merged = try? _FieldCondition(key: first.key, op: .in, value: .array(values)) else { return nil }
    merged.idOnly = first.idOnly
    return merged
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
    case .and(let j), .or(let j): return j.terms.allSatisfy { holdsKinds(of: $0, in: fields) }
    case .not(let inner): return holdsKinds(of: inner, in: fields)
    case .field(let c):
      guard c.quantifier == nil, !c.countsElements, c.datePart == nil, let kinds = fields.kinds[c.key], !kinds.isUnknown
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
    var parent = fields._prefixesWorthLookingUp(key)
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
      if let (base, part) = RequestDatePart._split(key) {
        // `born.@year`: the date's key must exist and hold numbers, the value be a number.
        try validate(base, value: nil, in: fields)
        try RequestDatePart._validate(base: base, part: part, in: fields)
        if let value { try _numberOnly(key, value) }
        return
      }
      if _mayHold(key, fields) { return }
      throw RequestSetError.unknownKey(key, type: Element.self, known: fields.knownKeys)
    }
    guard let value, value._kind != .null, !kinds.isUnknown, !kinds.nonNull.isEmpty else { return }
    if !kinds.contains(value._kind) {
      throw RequestSetError.typeMismatch(key: key, holds: kinds, value: value, type: Element.self)
    }
  }

  /// Throws `.typeMismatch` unless `value` is nil or a number: what `what` (`tags.@count`,
  /// `born.@year`), always a number, can match.
  private static func _numberOnly(_ what: String, _ value: FieldValue) throws {
    guard value._kind != .null, value._kind != .number else { return }
    throw RequestSetError(
      .typeMismatch,
      "\(what) of \(Element.self) is a number, so it can never match \(value), which is "
        + "\(_withArticle(value._kind.description)). Compare it with a number.")
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
    if let part = c.datePart {
      try RequestDatePart._validate(base: c.key, part: part, in: fields)
      let values: [FieldValue]
      switch (c.op, c.value) {
      case (.between, .array(let items)), (.in, .array(let items)): values = items
      default: values = [c.value]
      }
      for value in values { try _numberOnly(c.keyWithDatePart, value) }
      return
    }
    if c.countsElements {
      guard kinds.contains(.array) || kinds.contains(.object) else {
        throw RequestSetError.operatorMismatch(
          key: c.key, holds: kinds, type: Element.self,
          reason: "\(c.key).@count counts the elements of an array", fix: "Use @count on an array key")
      }
      if case .compare = c.op { try _numberOnly(c.key + ".@count", c.value) }
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
