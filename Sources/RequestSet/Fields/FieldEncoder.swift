import Foundation

/// Encodes an `Encodable` value into a ``FieldValue`` tree.
///
/// This is how stores learn the fields that string keys reach, once per write, so that a
/// query never runs `Codable` per record. Dates encode as their reference-date seconds,
/// like `Date.encode(to:)` does. Two types are written as `JSONEncoder` writes them rather
/// than as their own `encode(to:)` would: a `URL` is its `absoluteString` (its
/// `encode(to:)` writes `{relative, base}`) and a `Decimal` is a number (its `encode(to:)`
/// writes its mantissa and exponent as an object, which would compare as an object).
enum _FieldEncoder {
  /// A record's top-level fields in the order its `encode(to:)` wrote them, nested values
  /// finished as trees: what a field table appends without building a dictionary.
  ///
  /// - Throws: `.encodingFailed` when the record's `encode(to:)` throws, or when a value
  ///   nests deeper than ``FieldValue/maxNestingDepth`` (the record is level 1).
  static func encodeRow(_ record: some Encodable) throws -> _EncodedRow {
    let root = try _tree(record, what: "a record")
    // A record that encodes itself as one field value (a `DynamicRecord`).
    if root.kind == .value, case .object(let fields) = root.scalar {
      let row = _EncodedRow(fields: fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
      try _checkNesting(row)
      return row
    }
    guard root.kind == .keyed else { return _EncodedRow(fields: []) }
    let row = _EncodedRow(fields: root.fields.map { ($0.key, $0.child.finished) })
    try _checkNesting(row)
    return row
  }

  /// - Throws: `.encodingFailed` as ``encodeRow(_:)``, the value being level 1.
  static func encode(_ value: some Encodable) throws -> FieldValue {
    // Most filter values are scalars: no encoder needed.
    if let scalar = _scalar(value) {
      if let level = scalar._levelPastNestingLimit(startingAt: 1) {
        throw FieldValue._nestingError(level: level, key: nil)
      }
      return scalar
    }
    let root = try _tree(value, what: "a value")
    let finished = root.finish()
    if let level = finished._levelPastNestingLimit(startingAt: 1) {
      throw FieldValue._nestingError(level: level, key: nil)
    }
    return finished
  }

  /// Refuses a row with a value past ``FieldValue/maxNestingDepth``: every store checks
  /// this before it writes, so what one store accepts, every store accepts and reads back.
  static func _checkNesting(_ row: _EncodedRow) throws {
    for (key, value) in row.fields {
      if let level = value._levelPastNestingLimit(startingAt: 2) {
        throw FieldValue._nestingError(level: level, key: key)
      }
    }
  }

  /// Stops `encode(to:)` recursing past the nesting limit: a value whose coding path is
  /// this long is already too deep (the exact check runs on the finished row), and a
  /// type that nests itself could otherwise recurse until the thread's stack runs out.
  static func _checkDepth(_ codingPath: [any CodingKey]) throws {
    if codingPath.count >= FieldValue.maxNestingDepth {
      throw FieldValue._nestingError(level: codingPath.count + 1, key: codingPath.first?.stringValue)
    }
  }

  /// Runs `value`'s `encode(to:)` into a fresh node, wrapping its failure.
  private static func _tree(_ value: some Encodable, what: String) throws -> _EncodingNode {
    let root = _EncodingNode()
    do {
      try value.encode(to: _Encoder(node: root, codingPath: []))
    } catch let error as RequestSetError where error.code == .encodingFailed {
      throw error  // the nesting limit, from a nested value's encoding
    } catch {
      throw RequestSetError(
        .encodingFailed,
        "Could not encode \(what) of type \(type(of: value)); its encode(to:) threw. "
          + "Check that the value is encodable without a special encoder configuration.",
        underlying: error)
    }
    return root
  }
}

/// A node under construction; containers hand out references to children.
///
/// Children live in stored properties that are mutated in place, and scalar children are
/// stored inline rather than as nodes of their own: encoding a record allocates one
/// node per container, not one per field.
final class _EncodingNode {
  enum Child {
    case value(FieldValue)
    case node(_EncodingNode)

    var finished: FieldValue {
      switch self {
      case .value(let v): return v
      case .node(let n): return n.finish()
      }
    }
  }
  enum Kind { case empty, value, keyed, unkeyed }

  var kind = Kind.empty
  var scalar = FieldValue.null
  /// Keyed children in the order they were first written (a key written twice keeps its
  /// first place and its last value); a short array beats a dictionary at record sizes.
  var fields: [(key: String, child: Child)] = []
  var items: [Child] = []

  func finish() -> FieldValue {
    switch kind {
    case .empty: return .null
    case .value: return scalar
    case .keyed:
      var object: [String: FieldValue] = Dictionary(minimumCapacity: fields.count)
      for (key, child) in fields { object[key] = child.finished }
      return .object(object)
    case .unkeyed: return .array(items.map(\.finished))
    }
  }

  private func index(of key: String) -> Int? {
    fields.firstIndex { $0.key == key }
  }

  func set(_ value: FieldValue) {
    kind = .value
    scalar = value
  }

  func becomeKeyed() {
    if kind != .keyed {
      kind = .keyed
      fields = []
      fields.reserveCapacity(16)
    }
  }

  func becomeUnkeyed() {
    if kind != .unkeyed {
      kind = .unkeyed
      items = []
    }
  }

  func setField(_ key: String, _ value: FieldValue) {
    becomeKeyed()
    if let i = index(of: key) { fields[i].child = .value(value) } else { fields.append((key, .value(value))) }
  }

  func keyedChild(_ key: String) -> _EncodingNode {
    becomeKeyed()
    if let i = index(of: key) {
      if case .node(let existing) = fields[i].child { return existing }
      let child = _EncodingNode()
      fields[i].child = .node(child)
      return child
    }
    let child = _EncodingNode()
    fields.append((key, .node(child)))
    return child
  }

  func append(_ value: FieldValue) {
    becomeUnkeyed()
    items.append(.value(value))
  }

  func appendChild() -> _EncodingNode {
    becomeUnkeyed()
    let child = _EncodingNode()
    items.append(.node(child))
    return child
  }
}

struct _Encoder: Encoder {
  let node: _EncodingNode
  var codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    node.becomeKeyed()
    return KeyedEncodingContainer(_KeyedContainer<Key>(node: node, codingPath: codingPath))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    node.becomeUnkeyed()
    return _UnkeyedContainer(node: node, codingPath: codingPath)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    _SingleContainer(node: node, codingPath: codingPath)
  }
}

/// The scalar a value encodes to, for the types that need no container; nil otherwise.
@inline(__always)
private func _scalar(_ value: some Encodable) -> FieldValue? {
  switch value {
  case let v as String: return .string(v)
  case let v as Int: return .int(v)
  case let v as Double: return .double(v)
  case let v as Bool: return .bool(v)
  case let v as FieldValue: return v
  case let v as Decimal: return .decimal(v)
  case let v as URL: return .string(v.absoluteString)
  default: return nil
  }
}

private func _int<T: BinaryInteger>(_ v: T) -> FieldValue {
  if let i = Int(exactly: v) { return .int(i) }
  return .uint(UInt64(v))
}

struct _KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let node: _EncodingNode
  var codingPath: [any CodingKey]

  private func set(_ v: FieldValue, _ key: Key) { node.setField(key.stringValue, v) }

  mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
  mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
  mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
  mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
  mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
  mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(value), key) }
  mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int(value)), key) }
  mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int(value)), key) }
  mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int(value)), key) }
  mutating func encode(_ value: Int64, forKey key: Key) throws { set(_int(value), key) }
  mutating func encode(_ value: UInt, forKey key: Key) throws { set(_int(value), key) }
  mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int(value)), key) }
  mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int(value)), key) }
  mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int(value)), key) }
  mutating func encode(_ value: UInt64, forKey key: Key) throws { set(_int(value), key) }
  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    if let scalar = _scalar(value) { return set(scalar, key) }
    try _FieldEncoder._checkDepth(codingPath)
    try value.encode(to: _Encoder(node: node.keyedChild(key.stringValue), codingPath: codingPath + [key]))
  }
  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    let child = node.keyedChild(key.stringValue)
    child.becomeKeyed()
    return KeyedEncodingContainer(_KeyedContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
  }
  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let child = node.keyedChild(key.stringValue)
    child.becomeUnkeyed()
    return _UnkeyedContainer(node: child, codingPath: codingPath + [key])
  }
  mutating func superEncoder() -> any Encoder {
    _Encoder(node: node.keyedChild("super"), codingPath: codingPath)
  }
  mutating func superEncoder(forKey key: Key) -> any Encoder {
    _Encoder(node: node.keyedChild(key.stringValue), codingPath: codingPath + [key])
  }
}

struct _IndexKey: CodingKey {
  var stringValue: String { String(intValue!) }
  var intValue: Int?
  init(_ index: Int) { intValue = index }
  init?(stringValue: String) { nil }
  init?(intValue: Int) { self.intValue = intValue }
}

struct _UnkeyedContainer: UnkeyedEncodingContainer {
  let node: _EncodingNode
  var codingPath: [any CodingKey]
  var count: Int { node.kind == .unkeyed ? node.items.count : 0 }

  private func append(_ v: FieldValue) { node.append(v) }

  mutating func encodeNil() throws { append(.null) }
  mutating func encode(_ value: Bool) throws { append(.bool(value)) }
  mutating func encode(_ value: String) throws { append(.string(value)) }
  mutating func encode(_ value: Double) throws { append(.double(value)) }
  mutating func encode(_ value: Float) throws { append(.double(Double(value))) }
  mutating func encode(_ value: Int) throws { append(.int(value)) }
  mutating func encode(_ value: Int8) throws { append(.int(Int(value))) }
  mutating func encode(_ value: Int16) throws { append(.int(Int(value))) }
  mutating func encode(_ value: Int32) throws { append(.int(Int(value))) }
  mutating func encode(_ value: Int64) throws { append(_int(value)) }
  mutating func encode(_ value: UInt) throws { append(_int(value)) }
  mutating func encode(_ value: UInt8) throws { append(.int(Int(value))) }
  mutating func encode(_ value: UInt16) throws { append(.int(Int(value))) }
  mutating func encode(_ value: UInt32) throws { append(.int(Int(value))) }
  mutating func encode(_ value: UInt64) throws { append(_int(value)) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    if let scalar = _scalar(value) { return append(scalar) }
    try _FieldEncoder._checkDepth(codingPath)
    let index = count
    try value.encode(to: _Encoder(node: node.appendChild(), codingPath: codingPath + [_IndexKey(index)]))
  }
  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    let child = node.appendChild()
    child.becomeKeyed()
    return KeyedEncodingContainer(_KeyedContainer<NestedKey>(node: child, codingPath: codingPath))
  }
  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let child = node.appendChild()
    child.becomeUnkeyed()
    return _UnkeyedContainer(node: child, codingPath: codingPath)
  }
  mutating func superEncoder() -> any Encoder { _Encoder(node: node.appendChild(), codingPath: codingPath) }
}

struct _SingleContainer: SingleValueEncodingContainer {
  let node: _EncodingNode
  var codingPath: [any CodingKey]

  private func set(_ v: FieldValue) { node.set(v) }

  mutating func encodeNil() throws { set(.null) }
  mutating func encode(_ value: Bool) throws { set(.bool(value)) }
  mutating func encode(_ value: String) throws { set(.string(value)) }
  mutating func encode(_ value: Double) throws { set(.double(value)) }
  mutating func encode(_ value: Float) throws { set(.double(Double(value))) }
  mutating func encode(_ value: Int) throws { set(.int(value)) }
  mutating func encode(_ value: Int8) throws { set(.int(Int(value))) }
  mutating func encode(_ value: Int16) throws { set(.int(Int(value))) }
  mutating func encode(_ value: Int32) throws { set(.int(Int(value))) }
  mutating func encode(_ value: Int64) throws { set(_int(value)) }
  mutating func encode(_ value: UInt) throws { set(_int(value)) }
  mutating func encode(_ value: UInt8) throws { set(.int(Int(value))) }
  mutating func encode(_ value: UInt16) throws { set(.int(Int(value))) }
  mutating func encode(_ value: UInt32) throws { set(.int(Int(value))) }
  mutating func encode(_ value: UInt64) throws { set(_int(value)) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    if let scalar = _scalar(value) { return set(scalar) }
    try value.encode(to: _Encoder(node: node, codingPath: codingPath))
  }
}
