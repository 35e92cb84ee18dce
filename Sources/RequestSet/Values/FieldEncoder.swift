import Foundation

/// Encodes an `Encodable` value into a ``FieldValue`` tree.
///
/// This is how stores learn the fields that string keys reach, once per write, so that a
/// query never runs `Codable` per record. Dates encode as their reference-date seconds,
/// like `Date.encode(to:)` does; nothing here uses a strategy of JSON's.
enum _FieldEncoder {
  static func encode(_ value: some Encodable) throws -> FieldValue {
    // Fast paths for the scalars that most filter values are.
    switch value {
    case let v as String: return .string(v)
    case let v as Int: return .int(v)
    case let v as Double: return .double(v)
    case let v as Bool: return .bool(v)
    case let v as FieldValue: return v
    default: break
    }
    let root = _EncodingNode()
    do {
      try value.encode(to: _Encoder(node: root, codingPath: []))
    } catch {
      throw RequestSetError(
        .encodingFailed,
        "Could not encode a value of type \(type(of: value)); its encode(to:) threw. "
          + "Check that the value is encodable without a special encoder configuration.",
        underlying: error)
    }
    return root.finish()
  }
}

/// A node under construction; containers hand out references to children.
final class _EncodingNode {
  enum State {
    case empty
    case value(FieldValue)
    case keyed([String: _EncodingNode])
    case unkeyed([_EncodingNode])
  }
  var state: State = .empty

  func finish() -> FieldValue {
    switch state {
    case .empty: return .null
    case .value(let v): return v
    case .keyed(let children): return .object(children.mapValues { $0.finish() })
    case .unkeyed(let children): return .array(children.map { $0.finish() })
    }
  }

  func keyedChild(_ key: String) -> _EncodingNode {
    var children: [String: _EncodingNode]
    if case .keyed(let existing) = state { children = existing } else { children = [:] }
    if let child = children[key] { return child }
    let child = _EncodingNode()
    children[key] = child
    state = .keyed(children)
    return child
  }

  func appendChild() -> _EncodingNode {
    var children: [_EncodingNode]
    if case .unkeyed(let existing) = state { children = existing } else { children = [] }
    let child = _EncodingNode()
    children.append(child)
    state = .unkeyed(children)
    return child
  }
}

struct _Encoder: Encoder {
  let node: _EncodingNode
  var codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    if case .keyed = node.state {} else { node.state = .keyed([:]) }
    return KeyedEncodingContainer(_KeyedContainer<Key>(node: node, codingPath: codingPath))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    if case .unkeyed = node.state {} else { node.state = .unkeyed([]) }
    return _UnkeyedContainer(node: node, codingPath: codingPath)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    _SingleContainer(node: node, codingPath: codingPath)
  }
}

/// Encodes `value` into `node`, short-cutting the scalar types.
private func _encodeValue(_ value: some Encodable, into node: _EncodingNode, path: [any CodingKey]) throws {
  switch value {
  case let v as String: node.state = .value(.string(v))
  case let v as Int: node.state = .value(.int(v))
  case let v as Double: node.state = .value(.double(v))
  case let v as Bool: node.state = .value(.bool(v))
  case let v as FieldValue: node.state = .value(v)
  default: try value.encode(to: _Encoder(node: node, codingPath: path))
  }
}

private func _int<T: BinaryInteger>(_ v: T) -> FieldValue {
  if let i = Int(exactly: v) { return .int(i) }
  return .double(Double(v))
}

struct _KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let node: _EncodingNode
  var codingPath: [any CodingKey]

  private func set(_ v: FieldValue, _ key: Key) { node.keyedChild(key.stringValue).state = .value(v) }

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
    try _encodeValue(value, into: node.keyedChild(key.stringValue), path: codingPath + [key])
  }
  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    let child = node.keyedChild(key.stringValue)
    child.state = .keyed([:])
    return KeyedEncodingContainer(_KeyedContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
  }
  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let child = node.keyedChild(key.stringValue)
    child.state = .unkeyed([])
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
  var count: Int {
    if case .unkeyed(let c) = node.state { return c.count }
    return 0
  }

  private func append(_ v: FieldValue) { node.appendChild().state = .value(v) }

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
    let index = count
    try _encodeValue(value, into: node.appendChild(), path: codingPath + [_IndexKey(index)])
  }
  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    let child = node.appendChild()
    child.state = .keyed([:])
    return KeyedEncodingContainer(_KeyedContainer<NestedKey>(node: child, codingPath: codingPath))
  }
  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let child = node.appendChild()
    child.state = .unkeyed([])
    return _UnkeyedContainer(node: child, codingPath: codingPath)
  }
  mutating func superEncoder() -> any Encoder { _Encoder(node: node.appendChild(), codingPath: codingPath) }
}

struct _SingleContainer: SingleValueEncodingContainer {
  let node: _EncodingNode
  var codingPath: [any CodingKey]

  private func set(_ v: FieldValue) { node.state = .value(v) }

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
  mutating func encode<T: Encodable>(_ value: T) throws { try _encodeValue(value, into: node, path: codingPath) }
}
