/// The fields of records held in memory, as string keys reach them: a reflected field is
/// read straight from the record (see `_FieldModel`); a field that goes through `Codable`
/// is read from a table of encoded fields kept per record for it alone. The table also
/// holds the kinds of value seen under every key, reflected or not.
struct _StoredFields: Sendable {
  /// The field model the table was kept for.
  var plan: _FieldPlan
  /// The encoded fields of the keys read through `Codable`, by slot, and every key's kinds.
  var table: _FieldTable
}

/// Reads a value by slot without throwing, straight from memory: what a scan of records
/// in memory calls per record.
protocol _DirectFieldAccess: _FieldAccess {
  /// The reader of a key's value by slot, or nil when no record can hold the key.
  func directReader(for key: String) -> ((Int) -> FieldValue)?
  /// A test of a plain comparison by slot that reads the Swift value and makes no
  /// ``FieldValue`` per record, where the field's type allows; nil otherwise.
  func directTest(_ c: _FieldCondition) -> ((Int) -> Bool)?
  /// The test of ``directTest(_:)`` over a run of slots at once, one bit per slot (see
  /// `_SlotFill`), for the same conditions; nil otherwise.
  func directFill(_ c: _FieldCondition) -> _SlotFill?
}

/// Fills one bit per slot for `count` slots from slot `start` (a multiple of 64) into `out`,
/// testing only the slots whose bit is set in `mask` when there is one (`out` may be the
/// mask): a count of a scan in memory runs it with no call per record.
typealias _SlotFill = (_ start: Int, _ count: Int, _ out: UnsafeMutablePointer<UInt64>, _ mask: UnsafePointer<UInt64>?) -> Void

/// Sets one bit per record of the `count` records from slot `start` in `out` (64 records a
/// word): the bit of each record `test` accepts. The record of slot `s` starts at
/// `base + s * stride`. With a `mask`, only records whose bit is set in it are tested (an
/// AND's later operands test only what the earlier ones kept, and the first only live
/// records); `out` may be the mask itself.
///
/// Inlined where it is called, so the loop is specialized for the test: key-path
/// operators call it through `_fillWords`, string keys through
/// `_RecordFields.directFill(_:)`.
@inlinable @inline(__always)
func _fillRawWords(
  _ base: UnsafeRawPointer, _ stride: Int, _ start: Int, _ count: Int, _ out: UnsafeMutablePointer<UInt64>,
  _ mask: UnsafePointer<UInt64>?, _ test: (UnsafeRawPointer) -> Bool
) {
  var first = 0
  var k = 0
  let records = base + start &* stride
  while first < count {
    let end = Swift.min(first &+ 64, count)
    var word: UInt64 = 0
    if let mask {
      var m = mask[k] & (end &- first == 64 ? ~0 : (1 &<< UInt64(end &- first)) &- 1)
      while m != 0 {
        let j = m.trailingZeroBitCount
        if test(records + (first &+ j) &* stride) { word |= 1 &<< UInt64(j) }
        m &= m &- 1
      }
    } else {
      var j = first
      while j < end {
        if test(records + j &* stride) { word |= 1 &<< UInt64(j &- first) }
        j &+= 1
      }
    }
    out[k] = word
    first = end
    k &+= 1
  }
}

extension _FieldTable: _DirectFieldAccess {
  func directReader(for key: String) -> ((Int) -> FieldValue)? {
    guard let column = column(key) else { return nil }
    return { column[$0] }
  }

  func directTest(_ c: _FieldCondition) -> ((Int) -> Bool)? { nil }

  func directFill(_ c: _FieldCondition) -> _SlotFill? { nil }
}

/// String-key access to records in memory (a ``MemoryStore``'s or an array's).
struct _RecordFields<Element: Sendable>: _DirectFieldAccess {
  let records: ContiguousArray<Element>
  let stored: _StoredFields

  var kinds: [String: _KindSet] { stored.table.kinds }

  func reader(for key: String) -> ((Int) throws -> FieldValue)? {
    directReader(for: key)
  }

  func directReader(for key: String) -> ((Int) -> FieldValue)? {
    switch stored.plan.route(key) {
    case .reflected(let read, let shape, let offset):
      guard !records.isEmpty else { return { _ in .null } }
      // The records are a `let` that `owner` keeps alive for as long as the reader lives,
      // so their buffer never moves.
      let owner = _RecordsOwner(records)
      let base = records.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) }
      let stride = MemoryLayout<Element>.stride
      if let offset, let direct = shape.slotReader?(base, stride, offset) {
        return { slot in
          defer { withExtendedLifetime(owner) {} }
          return direct(slot)
        }
      }
      return { slot in
        defer { withExtendedLifetime(owner) {} }
        return read(base + slot &* stride)
      }
    case .encoded:
      return stored.table.directReader(for: key)
    }
  }

  /// For a top-level `Int` field compared with an `Int`, or a `String` field tested for
  /// (in)equality with a `String` (binary collation): the test `_FieldCondition` makes for
  /// those cases (see `_FieldCondition._compareTest`), on the value read from memory.
  func directTest(_ c: _FieldCondition) -> ((Int) -> Bool)? {
    if let (ints, nilMatches, optional, offset, owner, base, stride) = _directIntList(c) {
      return { slot in
        defer { withExtendedLifetime(owner) {} }
        let p = base + slot &* stride
        if optional {
          guard let v = p.load(fromByteOffset: offset, as: Int?.self) else { return nilMatches }
          return ints.contains(v)
        }
        return ints.contains(p.load(fromByteOffset: offset, as: Int.self))
      }
    }
    guard let (comparison, typeName, offset, owner, base, stride) = _directField(c) else { return nil }
    func at(_ slot: Int) -> UnsafeRawPointer { base + slot &* stride }
    switch (typeName, c.value, comparison) {
    case ("Int", .int(let v), _):
      let holds: (Int) -> Bool
      switch comparison {
      case .equal: holds = { $0 == v }
      case .notEqual: holds = { $0 != v }
      case .lessThan: holds = { $0 < v }
      case .lessThanOrEqual: holds = { $0 <= v }
      case .greaterThan: holds = { $0 > v }
      case .greaterThanOrEqual: holds = { $0 >= v }
      }
      if comparison == .equal {
        return { slot in
          defer { withExtendedLifetime(owner) {} }
          return at(slot).load(fromByteOffset: offset, as: Int.self) == v
        }
      }
      return { slot in
        defer { withExtendedLifetime(owner) {} }
        return holds(at(slot).load(fromByteOffset: offset, as: Int.self))
      }
    case ("String", .string(let v), .equal):
      return { slot in
        defer { withExtendedLifetime(owner) {} }
        return at(slot).load(fromByteOffset: offset, as: String.self) == v
      }
    case ("String", .string(let v), .notEqual):
      return { slot in
        defer { withExtendedLifetime(owner) {} }
        return at(slot).load(fromByteOffset: offset, as: String.self) != v
      }
    default:
      return nil
    }
  }
}

extension _RecordFields {
  /// What a direct test or fill of `c` reads: its comparison, and the field's type name
  /// and offset in a record stored as a reflected top-level property, with the records'
  /// owner, base address and stride; nil when `c` is not a plain comparison in binary
  /// collation of such a field.
  fileprivate func _directField(
    _ c: _FieldCondition
  ) -> (RequestComparison, String, Int, _RecordsOwner, UnsafeRawPointer, Int)? {
    guard let comparison = c.comparison, c.collation == .binary, !records.isEmpty,
      case .reflected(_, let shape, let offset?) = stored.plan.route(c.key)
    else { return nil }
    let base = records.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) }
    return (comparison, shape.typeName, offset, _RecordsOwner(records), base, MemoryLayout<Element>.stride)
  }

  /// For `key IN {…}` over a top-level `Int` or `Int?` field with a list of integers (and
  /// nil): the list as a `Set<Int>`, whether nil is in it, whether the field is optional,
  /// and where to read it; what a relation's semi-join (`ownerID IN {ids}`) runs on.
  fileprivate func _directIntList(
    _ c: _FieldCondition
  ) -> (Set<Int>, Bool, Bool, Int, _RecordsOwner, UnsafeRawPointer, Int)? {
    guard case .in = c.op, c.options.isEmpty, c.quantifier == nil, !c.countsElements, c.datePart == nil, c.collation == .binary,
      case .array(let items) = c.value, !records.isEmpty,
      case .reflected(_, let shape, let offset?) = stored.plan.route(c.key),
      shape.typeName == "Int" || shape.typeName == "Int?"
    else { return nil }
    var ints = Set<Int>(minimumCapacity: items.count)
    var nilMatches = false
    for item in items {
      switch item {
      case .int(let v): ints.insert(v)
      case .null: nilMatches = true
      default: return nil  // 3.0 equals 3: leave mixed lists to the general test
      }
    }
    let base = records.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) }
    return (ints, nilMatches, shape.typeName == "Int?", offset, _RecordsOwner(records), base, MemoryLayout<Element>.stride)
  }

  /// ``directTest(_:)``'s conditions as a fill: a top-level `Int` field compared with an
  /// `Int`, or a `String` field tested for (in)equality with a `String` (binary
  /// collation), read in place. The fill is for the moment of one count: the caller keeps
  /// the records alive (the snapshot holds them) while it runs.
  func directFill(_ c: _FieldCondition) -> _SlotFill? {
    if let (ints, nilMatches, optional, offset, owner, base, stride) = _directIntList(c) {
      return { start, count, out, mask in
        withExtendedLifetime(owner) {
          if optional {
            _fillRawWords(base, stride, start, count, out, mask) {
              guard let v = $0.load(fromByteOffset: offset, as: Int?.self) else { return nilMatches }
              return ints.contains(v)
            }
          } else {
            _fillRawWords(base, stride, start, count, out, mask) { ints.contains($0.load(fromByteOffset: offset, as: Int.self)) }
          }
        }
      }
    }
    guard let (comparison, typeName, offset, owner, base, stride) = _directField(c) else { return nil }
    switch (typeName, c.value, comparison) {
    case ("Int", .int(let v), _):
      func int(_ p: UnsafeRawPointer) -> Int { p.load(fromByteOffset: offset, as: Int.self) }
      return { start, count, out, mask in
        withExtendedLifetime(owner) {
          switch comparison {
          case .equal: _fillRawWords(base, stride, start, count, out, mask) { int($0) == v }
          case .notEqual: _fillRawWords(base, stride, start, count, out, mask) { int($0) != v }
          case .lessThan: _fillRawWords(base, stride, start, count, out, mask) { int($0) < v }
          case .lessThanOrEqual: _fillRawWords(base, stride, start, count, out, mask) { int($0) <= v }
          case .greaterThan: _fillRawWords(base, stride, start, count, out, mask) { int($0) > v }
          case .greaterThanOrEqual: _fillRawWords(base, stride, start, count, out, mask) { int($0) >= v }
          }
        }
      }
    case ("String", .string(let v), .equal), ("String", .string(let v), .notEqual):
      // Compared where it lies (bound, not loaded): no retain and release per record.
      func string(_ p: UnsafeRawPointer) -> UnsafePointer<String> {
        (p + offset).assumingMemoryBound(to: String.self)
      }
      let equal = comparison == .equal
      return { start, count, out, mask in
        withExtendedLifetime(owner) {
          if equal {
            _fillRawWords(base, stride, start, count, out, mask) { string($0).pointee == v }
          } else {
            _fillRawWords(base, stride, start, count, out, mask) { string($0).pointee != v }
          }
        }
      }
    default:
      return nil
    }
  }
}

/// Keeps an array of records alive for the readers that point into its storage.
fileprivate final class _RecordsOwner: Sendable {
  private let records: any Sendable
  init(_ records: any Sendable) { self.records = records }
}

extension _StoredFields {
  /// The fields of a fixed array of records: checks the type's field model against the
  /// first records while it still checks, keeps encoded fields only for what the model
  /// reads through `Codable`, and learns the kinds of value under each key.
  ///
  /// - Throws: ``RequestSetError`` `.encodingFailed` when a record that must be encoded
  ///   cannot be.
  static func build<Element: Encodable & Sendable>(
    _ records: ContiguousArray<Element>, storeKinds: [String: _KindSet] = [:]
  ) throws -> _StoredFields {
    let model = _FieldModel.of(Element.self)
    var plan = model.plan
    var i = 0
    while plan.checking && plan.shape != nil && i < records.count {
      let row = try _FieldEncoder.encodeRow(records[i])
      plan = records.withUnsafeBufferPointer { model.check(UnsafeRawPointer($0.baseAddress! + i), row: row) }
      i += 1
    }
    var table = _FieldTable(probedKinds: storeKinds)
    if plan.encodesEverything || !plan.encodedOnly.isEmpty {
      for r in records { table.append(plan.kept(try _FieldEncoder.encodeRow(r))) }
    } else {
      table.appendEmptyRows(records.count)
    }
    if let first = records.first, let decodable = Element.self as? any Decodable.Type {
      table.addProbed(_SchemaProbe.learn(decodable, from: try _FieldEncoder.encode(first)))
    }
    var kinds = _SeenKinds(plan)
    records.withUnsafeBufferPointer { buffer in
      for r in buffer.indices where !kinds.isComplete {
        kinds.observe(UnsafeRawPointer(buffer.baseAddress! + r), plan, into: &table)
      }
    }
    return _StoredFields(plan: plan, table: table)
  }
}

/// Which reflected keys have been seen holding a value, so that a store notes each key's
/// kind once and then stops looking.
struct _SeenKinds: Sendable {
  private(set) var keys: [String]
  private var seen: [Bool]
  private var unseen: Int

  init(_ plan: _FieldPlan) {
    keys = plan.reflectedKeys
    seen = Array(repeating: false, count: keys.count)
    unseen = keys.count
  }

  /// Every reflected key has been seen: nothing more to note.
  var isComplete: Bool { unseen == 0 }

  /// Notes in `table` the kind of each reflected key `record` holds that no earlier
  /// record held.
  mutating func observe(_ record: UnsafeRawPointer, _ plan: _FieldPlan, into table: inout _FieldTable) {
    guard unseen > 0 else { return }
    plan.forEachKind(record) { i, kind in
      guard !seen[i] else { return }
      seen[i] = true
      unseen -= 1
      table.noteKind(keys[i], kind)
    }
  }
}

/// A fixed array's fields, built on the first query that needs them, then shared by
/// every query on the array.
final class _LazyFields: Sendable {
  private let build: @Sendable () throws -> _StoredFields
  private let state = _Lock<_StoredFields?>(nil)

  /// - Parameter storeKinds: Keys and kinds known beyond these records (a pushdown
  ///   store's, see ``StoreFieldKinds``).
  init<Element: Encodable & Sendable>(_ records: ContiguousArray<Element>, storeKinds: [String: _KindSet] = [:]) {
    build = { try _StoredFields.build(records, storeKinds: storeKinds) }
  }

  /// The fields if a query has built them already, else nil.
  var built: _StoredFields? { state.withLock { $0 } }

  func fields() throws -> _StoredFields {
    if let built { return built }
    let made = try build()
    return state.withLock { current in
      if let current { return current }
      current = made
      return made
    }
  }
}
