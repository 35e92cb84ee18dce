import Foundation

/// Encodes `Encodable` values straight into RequestSet's binary record encoding: one pass,
/// no intermediate tree.
///
/// ```swift
/// var keys = _KeyTable()
/// let out = _ByteBuffer()
/// try _BinaryEncoder.encode(micky, into: out, keys: &keys)
/// // out: 08 01 81 02 06 05 "Micky" ... 00   (object, key 0 = 1, key 1 = "Micky", ...)
/// ```
///
/// Containers are written as they are used. The rare value whose `encode(to:)` goes back
/// to a container after opening another one (legal in `Codable`, never done by
/// synthesized conformances) cannot be written in one pass; it is detected and encoded
/// again through ``FieldValue``, which gives the same bytes for the same fields.
///
/// The properties opt out of dynamic exclusivity checks (a quarter of the encoding time
/// otherwise): an encoder is used by one call stack at a time, containers reach it only
/// through that stack, and no method holds an access to a property across a call that
/// could touch the same property.
final class _BinaryEncoder {
  let out: _ByteBuffer
  @exclusivity(unchecked) var keys = _KeyTable()
  /// Open containers, innermost last: their ids, negated for arrays.
  @exclusivity(unchecked) private var open: [Int] = []
  @exclusivity(unchecked) private var nextID = 0
  /// Set when the value used containers out of order (see the type's discussion).
  @exclusivity(unchecked) var unsupported = false
  /// Where the current value is in `keys.predicted`.
  @exclusivity(unchecked) var keyPosition = 0
  /// The last record type encoded, and its reflected writer (see `_ReflectedWriter`).
  @exclusivity(unchecked) private var writerType: ObjectIdentifier?
  @exclusivity(unchecked) private var writer: _ReflectedWriter?
  /// The key ids of the reflected writer `keyIDsOwner`'s field names in `keys` (UInt32.max:
  /// not known yet), checked against the name before use, so a rolled-back key table
  /// cannot mislead them.
  @exclusivity(unchecked) var keyIDs: [UInt32] = []
  @exclusivity(unchecked) var keyIDsOwner: AnyObject?
  /// Whether records may be written by reflection once their type is confirmed, and
  /// dynamic records from their storage (see `encodeDynamicRecord`); tests turn it off to
  /// compare with the bytes `Codable` alone writes.
  var allowsReflection = true
  /// A dynamic record's fields in key order, kept from one record to the next.
  @exclusivity(unchecked) var dynamicOrder: [(key: String, position: Dictionary<String, FieldValue>.Index)] = []

  init(out: _ByteBuffer) {
    self.out = out
  }

  /// Appends the encoding of `value` to `out`, defining new field names in `keys`.
  ///
  /// On error `out` and `keys` are left as they were.
  /// - Throws: ``RequestSetError`` `.encodingFailed` when the value's `encode(to:)` throws.
  static func encode<T: Encodable>(_ value: T, into out: _ByteBuffer, keys: inout _KeyTable) throws {
    let encoder = _BinaryEncoder(out: out)
    swap(&encoder.keys, &keys)
    defer { swap(&encoder.keys, &keys) }
    try encoder.encodeRoot(value)
  }

  /// Encodes a record id: `Int` ids directly, others through `Codable`.
  @inline(__always)
  func encodeID<ID: Encodable>(_ id: ID) throws {
    if ID.self == Int.self { return writeInt(Int64(unsafeBitCast(id, to: Int.self))) }
    if ID.self == FieldValue.self {
      // A dynamic record's id: the usual ones without a container.
      switch id as! FieldValue {
      case .int(let i): return writeInt(Int64(i))
      case .string(let s): return writeString(s)
      default: break
      }
    }
    let saved = keyPosition
    try encodeCodable(id)
    keyPosition = saved
  }

  /// Encodes a record: from its stored properties once its type's reflected writer is
  /// trusted, else through its `encode(to:)` (checking the writer against it while the
  /// type's first records are encoded). The bytes are the same either way.
  func encodeRoot<T: Encodable>(_ value: T) throws {
    if T.self == DynamicRecord.self && allowsReflection { return try encodeDynamicRecord(value as! DynamicRecord) }
    guard allowsReflection, let writer = reflectedWriter(T.self), !writer.isRefused else {
      return try encodeCodable(value)
    }
    let start = out.count
    if writer.isTrusted {
      let keyMark = keys.count
      keyPosition = 0
      do {
        try withUnsafePointer(to: value) { try writer.write(UnsafeRawPointer($0), encoder: self) }
      } catch {
        out.count = start
        keys.rollback(to: keyMark)
        throw error
      }
      return
    }
    try encodeCodable(value)
    withUnsafePointer(to: value) { writer.check(UnsafeRawPointer($0), codable: start..<out.count, encoder: self) }
  }

  /// The reflected writer of `type`, remembered for the next record of the same type.
  @inline(__always)
  private func reflectedWriter(_ type: Any.Type) -> _ReflectedWriter? {
    let id = ObjectIdentifier(type)
    if writerType == id { return writer }
    writerType = id
    writer = _ReflectedWriter.of(type)
    return writer
  }

  /// Encodes a value through its `encode(to:)`.
  func encodeCodable<T: Encodable>(_ value: T) throws {
    let start = out.count
    let keyMark = keys.count
    keyPosition = 0
    // A reused encoder (see `BinaryRecordCodec`) starts clean after a value that threw.
    if !open.isEmpty { open.removeAll(keepingCapacity: true) }
    unsupported = false
    do {
      try encodeValue(value)
      close(downTo: 0)
      if !unsupported { return }
    } catch {
      if !unsupported {
        out.count = start
        keys.rollback(to: keyMark)
        if error is RequestSetError { throw error }
        throw RequestSetError(
          .encodingFailed,
          "Could not encode a value of type \(T.self); its encode(to:) threw. "
            + "Check that the value is encodable without a special encoder configuration.",
          underlying: error)
      }
    }
    // The one-pass writer could not follow this value: go through the FieldValue tree.
    out.count = start
    keys.rollback(to: keyMark)
    open.removeAll()
    unsupported = false
    do {
      try write(try _FieldEncoder.encode(value), depth: 0)
    } catch {
      out.count = start
      keys.rollback(to: keyMark)
      throw error
    }
  }

  // MARK: Scalars

  @inline(__always)
  func writeInt(_ v: Int64) {
    if v >= 0 && v < 128 {
      out.append(_Tag.smallInt | UInt8(truncatingIfNeeded: v))
    } else {
      out.append(_Tag.int)
      out.appendVarint(_zigzag(v))
    }
  }

  @inline(__always)
  func writeUInt(_ v: UInt64) {
    if v <= UInt64(Int64.max) {
      writeInt(Int64(v))
    } else {
      out.append(_Tag.uint)
      out.appendVarint(v)
    }
  }

  @inline(__always)
  func writeDouble(_ d: Double) {
    out.append(_Tag.double)
    out.appendLittleEndian(d.bitPattern)
  }

  /// A decimal as its text, which `Decimal(string:)` reads back exactly.
  func writeDecimal(_ d: Decimal) {
    var text = d.description
    text.withUTF8 { utf8 in
      out.append(_Tag.decimal)
      out.appendVarint(UInt64(utf8.count))
      out.append(UnsafeRawBufferPointer(utf8))
    }
  }

  @inline(__always)
  func writeBool(_ b: Bool) { out.append(b ? _Tag.true : _Tag.false) }

  /// An array of scalars: the bytes `Array.encode(to:)` gives through an unkeyed container.
  @inline(__always)
  func writeArray<E>(_ items: [E], _ element: (E) -> Void) {
    out.append(_Tag.array)
    for item in items { element(item) }
    out.append(_Tag.arrayEnd)
  }

  @inline(__always)
  func writeString(_ s: String) {
    var s = s
    s.withUTF8 { utf8 in
      out.append(_Tag.string)
      out.appendVarint(UInt64(utf8.count))
      out.append(UnsafeRawBufferPointer(utf8))
    }
  }

  @inline(__always)
  func writeKey(_ name: String) throws {
    let p = keyPosition
    keyPosition = p + 1
    if p < keys.predicted.count {
      let id = keys.predicted[p]
      if keys.names[Int(id)] == name { return out.appendVarint(UInt64(id) + 1) }
      let fresh = try keys.intern(name)
      keys.predicted[p] = fresh
      return out.appendVarint(UInt64(fresh) + 1)
    }
    let fresh = try keys.intern(name)
    keys.predicted.append(fresh)
    out.appendVarint(UInt64(fresh) + 1)
  }

  /// Writes the key of a reflected writer's field `index` (see ``keyIDs``).
  @inline(__always)
  func writeFieldKey(_ index: Int, _ name: String) throws {
    let id = keyIDs[index]
    if id != UInt32.max, Int(id) < keys.names.count, keys.names[Int(id)] == name {
      return out.appendVarint(UInt64(id) + 1)
    }
    let fresh = try keys.intern(name)
    keyIDs[index] = fresh
    out.appendVarint(UInt64(fresh) + 1)
  }

  /// Writes a ``FieldValue`` tree (the fallback path, and values built without a type).
  func write(_ value: FieldValue, depth: Int) throws {
    // `depth` containers enclose the value: it is at level depth + 1, the record level 1.
    guard depth < _Tag.maxDepth else { throw FieldValue._nestingError(level: depth + 1, key: nil) }
    switch value {
    case .null: out.append(_Tag.null)
    case .bool(let b): writeBool(b)
    case .int(let i): writeInt(Int64(i))
    case .uint(let u): writeUInt(u)
    case .double(let d): writeDouble(d)
    case .decimal(let d): writeDecimal(d)
    case .string(let s): writeString(s)
    case .array(let a):
      out.append(_Tag.array)
      for v in a { try write(v, depth: depth + 1) }
      out.append(_Tag.arrayEnd)
    case .object(let o):
      out.append(_Tag.object)
      for (k, v) in o.sorted(by: { $0.key < $1.key }) {
        try writeKey(k)
        try write(v, depth: depth + 1)
      }
      out.append(0)
    }
  }

  // MARK: Values and containers

  /// Encodes a nested value, short-cutting the common scalar types.
  func encodeValue<T: Encodable>(_ value: T) throws {
    if T.self == String.self { return writeString(unsafeBitCast(value, to: String.self)) }
    if T.self == Int.self { return writeInt(Int64(unsafeBitCast(value, to: Int.self))) }
    if T.self == Double.self { return writeDouble(unsafeBitCast(value, to: Double.self)) }
    if T.self == Bool.self { return writeBool(unsafeBitCast(value, to: Bool.self)) }
    if T.self == Date.self {
      // What Date.encode(to:) writes.
      return writeDouble(unsafeBitCast(value, to: Date.self).timeIntervalSinceReferenceDate)
    }
    if T.self == UUID.self { return writeString(unsafeBitCast(value, to: UUID.self).uuidString) }
    // Arrays of the common scalars, as Array.encode(to:) writes them through an unkeyed
    // container, without the container.
    if T.self == [String].self { return writeArray(unsafeBitCast(value, to: [String].self), writeString) }
    if T.self == [Int].self { return writeArray(unsafeBitCast(value, to: [Int].self)) { writeInt(Int64($0)) } }
    if T.self == [Double].self { return writeArray(unsafeBitCast(value, to: [Double].self), writeDouble) }
    // As _FieldEncoder writes them (see there): a URL as its absolute string, a Decimal as
    // a number.
    if T.self == URL.self { return writeString((value as! URL).absoluteString) }
    if T.self == Decimal.self { return writeDecimal(value as! Decimal) }
    if T.self == FieldValue.self { return try write(value as! FieldValue, depth: open.count) }
    guard open.count < _Tag.maxDepth else { throw FieldValue._nestingError(level: open.count + 1, key: nil) }
    let depth = open.count
    let start = out.count
    try value.encode(to: _BinaryValueEncoder(encoder: self, depth: depth, start: start))
    close(downTo: depth)
    if out.count == start { out.append(_Tag.null) }  // encoded nothing: nil, like _FieldEncoder
  }

  func open(isArray: Bool) -> Int {
    out.append(isArray ? _Tag.array : _Tag.object)
    nextID += 1
    open.append(isArray ? -nextID : nextID)
    return nextID
  }

  @inline(__always)
  func close(downTo depth: Int) {
    while open.count > depth {
      out.append(open.removeLast() < 0 ? _Tag.arrayEnd : 0)
    }
  }

  /// Makes container `id` the innermost open one again, closing the containers nested in
  /// it; a container that was closed already cannot be written in one pass.
  @inline(__always)
  func resume(_ id: Int) throws {
    if let last = open.last, last == id || last == -id { return }
    guard let i = open.lastIndex(where: { $0 == id || $0 == -id }) else {
      unsupported = true
      throw _UnsupportedOrder()
    }
    close(downTo: i + 1)
  }

  /// Whether the container at `depth` is open and of this kind (a second `container(...)`
  /// call by the same value).
  func isOpen(at depth: Int, isArray: Bool) -> Bool {
    open.count > depth && (open[depth] < 0) == isArray
  }

  func id(at depth: Int) -> Int { abs(open[depth]) }

  /// An encoder whose output is thrown away: returned where `Encoder`'s non-throwing API
  /// leaves no other way out after ``unsupported`` was set.
  static func discarding() -> _BinaryEncoder { _BinaryEncoder(out: _ByteBuffer(capacity: 16)) }
}

struct _UnsupportedOrder: Error {}

/// The `Encoder` handed to one value's `encode(to:)`.
struct _BinaryValueEncoder: Encoder {
  let encoder: _BinaryEncoder
  /// How many containers were open when the value started.
  let depth: Int
  /// Where the value's bytes start.
  let start: Int
  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let e = encoder
    if e.out.count == start && !e.unsupported {
      return KeyedEncodingContainer(_BinaryKeyedEncoding<Key>(encoder: e, id: e.open(isArray: false)))
    }
    if e.isOpen(at: depth, isArray: false) {  // asked twice, as class hierarchies do
      return KeyedEncodingContainer(_BinaryKeyedEncoding<Key>(encoder: e, id: e.id(at: depth)))
    }
    e.unsupported = true
    let d = _BinaryEncoder.discarding()
    return KeyedEncodingContainer(_BinaryKeyedEncoding<Key>(encoder: d, id: d.open(isArray: false)))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let e = encoder
    if e.out.count == start && !e.unsupported {
      return _BinaryUnkeyedEncoding(encoder: e, id: e.open(isArray: true))
    }
    if e.isOpen(at: depth, isArray: true) {
      return _BinaryUnkeyedEncoding(encoder: e, id: e.id(at: depth))
    }
    e.unsupported = true
    let d = _BinaryEncoder.discarding()
    return _BinaryUnkeyedEncoding(encoder: d, id: d.open(isArray: true))
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    _BinarySingleEncoding(encoder: encoder, depth: depth, start: start)
  }
}

struct _BinaryKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let encoder: _BinaryEncoder
  let id: Int
  var codingPath: [any CodingKey] { [] }

  @inline(__always)
  private func begin(_ key: Key) throws {
    try encoder.resume(id)
    try encoder.writeKey(key.stringValue)
  }

  mutating func encodeNil(forKey key: Key) throws {
    try begin(key)
    encoder.out.append(_Tag.null)
  }
  mutating func encode(_ value: Bool, forKey key: Key) throws { try begin(key); encoder.writeBool(value) }
  mutating func encode(_ value: String, forKey key: Key) throws { try begin(key); encoder.writeString(value) }
  mutating func encode(_ value: Double, forKey key: Key) throws { try begin(key); encoder.writeDouble(value) }
  mutating func encode(_ value: Float, forKey key: Key) throws {
    try begin(key)
    encoder.writeDouble(Double(value))
  }
  mutating func encode(_ value: Int, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int8, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int16, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int32, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int64, forKey key: Key) throws { try begin(key); encoder.writeInt(value) }
  mutating func encode(_ value: UInt, forKey key: Key) throws { try begin(key); encoder.writeUInt(UInt64(value)) }
  mutating func encode(_ value: UInt8, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt16, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt32, forKey key: Key) throws { try begin(key); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt64, forKey key: Key) throws { try begin(key); encoder.writeUInt(value) }
  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    try begin(key)
    try encoder.encodeValue(value)
  }

  // Absent optionals leave their key out, as synthesized conformances and _FieldEncoder
  // do. Implemented here rather than inherited: the protocol's default goes through
  // unspecialized generic code that costs more than encoding the value.
  mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }
  mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
    if let value { try encode(value, forKey: key) }
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    var e = encoder
    do { try begin(key) } catch {
      e.unsupported = true
      e = _BinaryEncoder.discarding()
    }
    return KeyedEncodingContainer(_BinaryKeyedEncoding<NestedKey>(encoder: e, id: e.open(isArray: false)))
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    var e = encoder
    do { try begin(key) } catch {
      e.unsupported = true
      e = _BinaryEncoder.discarding()
    }
    return _BinaryUnkeyedEncoding(encoder: e, id: e.open(isArray: true))
  }

  // A super encoder writes into a child whose end the one-pass writer cannot know.
  mutating func superEncoder() -> any Encoder { _discardingEncoder() }
  mutating func superEncoder(forKey key: Key) -> any Encoder { _discardingEncoder() }

  private func _discardingEncoder() -> any Encoder {
    encoder.unsupported = true
    return _BinaryValueEncoder(encoder: _BinaryEncoder.discarding(), depth: 0, start: 0)
  }
}

struct _BinaryUnkeyedEncoding: UnkeyedEncodingContainer {
  let encoder: _BinaryEncoder
  let id: Int
  var codingPath: [any CodingKey] { [] }
  private(set) var count = 0

  init(encoder: _BinaryEncoder, id: Int) {
    self.encoder = encoder
    self.id = id
  }

  @inline(__always)
  private mutating func begin() throws {
    try encoder.resume(id)
    count += 1
  }

  mutating func encodeNil() throws { try begin(); encoder.out.append(_Tag.null) }
  mutating func encode(_ value: Bool) throws { try begin(); encoder.writeBool(value) }
  mutating func encode(_ value: String) throws { try begin(); encoder.writeString(value) }
  mutating func encode(_ value: Double) throws { try begin(); encoder.writeDouble(value) }
  mutating func encode(_ value: Float) throws { try begin(); encoder.writeDouble(Double(value)) }
  mutating func encode(_ value: Int) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int8) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int16) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int32) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int64) throws { try begin(); encoder.writeInt(value) }
  mutating func encode(_ value: UInt) throws { try begin(); encoder.writeUInt(UInt64(value)) }
  mutating func encode(_ value: UInt8) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt16) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt32) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt64) throws { try begin(); encoder.writeUInt(value) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    try begin()
    try encoder.encodeValue(value)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    var e = encoder
    do { try begin() } catch {
      e.unsupported = true
      e = _BinaryEncoder.discarding()
    }
    return KeyedEncodingContainer(_BinaryKeyedEncoding<NestedKey>(encoder: e, id: e.open(isArray: false)))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    var e = encoder
    do { try begin() } catch {
      e.unsupported = true
      e = _BinaryEncoder.discarding()
    }
    return _BinaryUnkeyedEncoding(encoder: e, id: e.open(isArray: true))
  }

  mutating func superEncoder() -> any Encoder {
    encoder.unsupported = true
    return _BinaryValueEncoder(encoder: _BinaryEncoder.discarding(), depth: 0, start: 0)
  }
}

struct _BinarySingleEncoding: SingleValueEncodingContainer {
  let encoder: _BinaryEncoder
  let depth: Int
  let start: Int
  var codingPath: [any CodingKey] { [] }

  /// A single value is written once, before anything else of its value.
  @inline(__always)
  private func begin() throws {
    guard encoder.out.count == start else {
      encoder.unsupported = true
      throw _UnsupportedOrder()
    }
  }

  mutating func encodeNil() throws { try begin(); encoder.out.append(_Tag.null) }
  mutating func encode(_ value: Bool) throws { try begin(); encoder.writeBool(value) }
  mutating func encode(_ value: String) throws { try begin(); encoder.writeString(value) }
  mutating func encode(_ value: Double) throws { try begin(); encoder.writeDouble(value) }
  mutating func encode(_ value: Float) throws { try begin(); encoder.writeDouble(Double(value)) }
  mutating func encode(_ value: Int) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int8) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int16) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int32) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: Int64) throws { try begin(); encoder.writeInt(value) }
  mutating func encode(_ value: UInt) throws { try begin(); encoder.writeUInt(UInt64(value)) }
  mutating func encode(_ value: UInt8) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt16) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt32) throws { try begin(); encoder.writeInt(Int64(value)) }
  mutating func encode(_ value: UInt64) throws { try begin(); encoder.writeUInt(value) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    try begin()
    try encoder.encodeValue(value)
  }
}
