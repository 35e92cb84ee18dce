import Foundation

/// Decodes `Decodable` values straight from RequestSet's binary record encoding.
///
/// ```swift
/// let micky = try _BinaryDecoder.decode(Animal.self, from: bytes, names: keys.names)
/// ```
///
/// A missing key decodes as absent (`decodeIfPresent` gives nil) and unknown keys are
/// ignored, so a type that gains an optional field or loses a field still reads old
/// records. Damaged bytes throw `DecodingError.dataCorrupted`; nothing traps.
final class _BinaryDecoder {
  let base: UnsafePointer<UInt8>
  let end: Int
  let names: [String?]
  /// Where the keyed containers of the first four nesting levels last found a key: the
  /// start of the object's fields and the position after that key's value. A container
  /// searches from there (see `_BinaryKeyedDecoding`). Kept here, not in the container,
  /// so that a container is a plain struct: one allocation less per object. A hint is
  /// used only by a container of the same object (same fields start), so it always points
  /// at a key of that object. One decoder serves one `decode` call stack, and no access
  /// to these properties spans a call, hence no dynamic exclusivity checks.
  @exclusivity(unchecked) private var hintStarts: (Int, Int, Int, Int) = (-1, -1, -1, -1)
  @exclusivity(unchecked) private var hintCursors: (Int, Int, Int, Int) = (0, 0, 0, 0)

  init(_ bytes: UnsafeRawBufferPointer, names: [String?]) {
    let r = _ByteReader(bytes)
    base = r.base
    end = r.end
    self.names = names
  }

  /// Decodes one value of type `T` from `bytes`.
  ///
  /// - Throws: `DecodingError` when the bytes are damaged or do not hold a `T`.
  static func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer, names: [String?]) throws -> T {
    try _BinaryDecoder(bytes, names: names).decode(T.self, at: 0, path: [])
  }

  @inline(__always)
  func reader(at position: Int) -> _ByteReader { _ByteReader(base: base, end: end, position: position) }

  /// Where a keyed container over the fields at `fieldsStart`, `depth` levels down, starts
  /// its next search.
  @inline(__always)
  func cursor(_ fieldsStart: Int, depth: Int) -> Int {
    switch depth {
    case 0: return hintStarts.0 == fieldsStart ? hintCursors.0 : fieldsStart
    case 1: return hintStarts.1 == fieldsStart ? hintCursors.1 : fieldsStart
    case 2: return hintStarts.2 == fieldsStart ? hintCursors.2 : fieldsStart
    case 3: return hintStarts.3 == fieldsStart ? hintCursors.3 : fieldsStart
    default: return fieldsStart
    }
  }

  /// Notes that a keyed container over the fields at `fieldsStart` found a key whose value
  /// ends at `cursor`.
  @inline(__always)
  func setCursor(_ cursor: Int, _ fieldsStart: Int, depth: Int) {
    switch depth {
    case 0: (hintStarts.0, hintCursors.0) = (fieldsStart, cursor)
    case 1: (hintStarts.1, hintCursors.1) = (fieldsStart, cursor)
    case 2: (hintStarts.2, hintCursors.2) = (fieldsStart, cursor)
    case 3: (hintStarts.3, hintCursors.3) = (fieldsStart, cursor)
    default: break
    }
  }

  /// A `DecodingError` for damaged bytes.
  func corrupted(_ error: _CodecError, _ path: [any CodingKey]) -> DecodingError {
    .dataCorrupted(.init(codingPath: path, debugDescription: "Damaged record bytes: \(error)", underlyingError: error))
  }

  /// Runs a read, turning damage into a `DecodingError`.
  @inline(__always)
  func guarded<R>(_ path: @autoclosure () -> [any CodingKey], _ body: () throws(_CodecError) -> R) throws -> R {
    do {
      return try body()
    } catch {
      throw corrupted(error, path())
    }
  }

  /// The position just after the value at `position`.
  func skip(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> Int {
    var r = reader(at: position)
    try guarded(path()) { () throws(_CodecError) in try _BinaryValue.skip(&r) }
    return r.position
  }

  @inline(__always)
  func tag(at position: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> UInt8 {
    guard position < end else {
      throw corrupted(_CodecError(offset: position, reason: "unexpected end of data"), path())
    }
    return base[position]
  }

  func mismatch(_ type: Any.Type, _ tag: UInt8, _ path: [any CodingKey]) -> DecodingError {
    let found = _BinaryValue.kind(ofTag: tag).map(\.description) ?? "an unknown tag 0x\(String(tag, radix: 16))"
    return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected \(type) but found \(found)."))
  }

  // MARK: Scalars

  func decodeInt64(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> Int64 {
    let tag = try tag(at: position, path())
    if tag >= _Tag.smallInt { return Int64(tag & 0x7F) }
    var r = reader(at: position + 1)
    do throws(_CodecError) {
      switch tag {
      case _Tag.int: return _unzigzag(try r.readVarint())
      case _Tag.uint:
        if let v = Int64(exactly: try r.readVarint()) { return v }
      case _Tag.double:
        let d = Double(bitPattern: try r.readLittleEndian(UInt64.self))
        if let v = Int64(exactly: d) { return v }
      default: break
      }
    } catch let e {
      throw corrupted(e, path())
    }
    throw mismatch(Int64.self, tag, path())
  }

  func decodeUInt64(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> UInt64 {
    let tag = try tag(at: position, path())
    if tag == _Tag.uint {
      var r = reader(at: position + 1)
      return try guarded(path()) { () throws(_CodecError) in try r.readVarint() }
    }
    let v = try decodeInt64(at: position, path: path())
    guard let u = UInt64(exactly: v) else {
      throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number \(v) does not fit in UInt64."))
    }
    return u
  }

  /// Inlined so that each integer type gets its own copy: unspecialized, the range check
  /// goes through `FixedWidthInteger`'s witnesses.
  @inline(__always)
  func decodeInteger<T: FixedWidthInteger>(_: T.Type, at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
    if T.self == Int.self && Int.bitWidth == 64 {
      return unsafeBitCast(Int(truncatingIfNeeded: try decodeInt64(at: position, path: path())), to: T.self)
    }
    if T.isSigned {
      let v = try decodeInt64(at: position, path: path())
      if let t = T(exactly: v) { return t }
      throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number \(v) does not fit in \(T.self)."))
    }
    let v = try decodeUInt64(at: position, path: path())
    if let t = T(exactly: v) { return t }
    throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Number \(v) does not fit in \(T.self)."))
  }

  func decodeDouble(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> Double {
    let tag = try tag(at: position, path())
    if tag >= _Tag.smallInt { return Double(tag & 0x7F) }
    var r = reader(at: position + 1)
    do throws(_CodecError) {
      switch tag {
      case _Tag.double: return Double(bitPattern: try r.readLittleEndian(UInt64.self))
      case _Tag.int: return Double(_unzigzag(try r.readVarint()))
      case _Tag.uint: return Double(try r.readVarint())
      case _Tag.decimal: return _Numbers.nearestDouble(try _BinaryValue.readDecimal(&r))
      default: break
      }
    } catch let e {
      throw corrupted(e, path())
    }
    throw mismatch(Double.self, tag, path())
  }

  /// A decimal written as one (or as an integer or a double), or nil for the object a
  /// file written before the decimal tag holds, which `Decimal.init(from:)` reads.
  func decodeDecimal(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> Decimal? {
    let tag = try tag(at: position, path())
    if tag >= _Tag.smallInt { return Decimal(Int(tag & 0x7F)) }
    var r = reader(at: position + 1)
    do throws(_CodecError) {
      switch tag {
      case _Tag.decimal: return try _BinaryValue.readDecimal(&r)
      case _Tag.int: return Decimal(_unzigzag(try r.readVarint()))
      case _Tag.uint: return Decimal(try r.readVarint())
      case _Tag.double:
        let d = Double(bitPattern: try r.readLittleEndian(UInt64.self))
        if let decimal = _Numbers.decimal(d) { return decimal }
      default: return nil
      }
    } catch let e {
      throw corrupted(e, path())
    }
    throw mismatch(Decimal.self, tag, path())
  }

  func decodeBool(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    switch try tag(at: position, path()) {
    case _Tag.true: return true
    case _Tag.false: return false
    case let tag: throw mismatch(Bool.self, tag, path())
    }
  }

  /// An array of `String`, `Int` or `Double`, as `Array.init(from:)` reads it through an
  /// unkeyed container (the same values, the same errors).
  @inline(__always)
  func decodeScalarArray<E>(_: E.Type, at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> [E] {
    let tag = try tag(at: position, path())
    guard tag == _Tag.array else { throw mismatch([Any].self, tag, path()) }
    var items: [E] = []
    var p = position + 1
    while try self.tag(at: p, path()) != _Tag.arrayEnd {
      let index = items.count
      if E.self == String.self {
        items.append(unsafeBitCast(try decodeString(at: p, path: path() + [_IndexKey(index)]), to: E.self))
      } else if E.self == Int.self {
        items.append(unsafeBitCast(try decodeInteger(Int.self, at: p, path: path() + [_IndexKey(index)]), to: E.self))
      } else {
        items.append(unsafeBitCast(try decodeDouble(at: p, path: path() + [_IndexKey(index)]), to: E.self))
      }
      p = try skip(at: p, path: path() + [_IndexKey(index)])
    }
    return items
  }

  func decodeString(at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> String {
    let tag = try tag(at: position, path())
    guard tag == _Tag.string else { throw mismatch(String.self, tag, path()) }
    var r = reader(at: position + 1)
    return try guarded(path()) { () throws(_CodecError) in try _BinaryValue.readString(&r) }
  }

  /// Decodes any `T` at `position`, short-cutting the common scalar types.
  func decode<T: Decodable>(_ type: T.Type, at position: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
    if T.self == String.self { return unsafeBitCast(try decodeString(at: position, path: path()), to: T.self) }
    if T.self == Int.self { return unsafeBitCast(try decodeInteger(Int.self, at: position, path: path()), to: T.self) }
    if T.self == Double.self { return unsafeBitCast(try decodeDouble(at: position, path: path()), to: T.self) }
    if T.self == Bool.self { return unsafeBitCast(try decodeBool(at: position, path: path()), to: T.self) }
    if T.self == Date.self {
      let d = Date(timeIntervalSinceReferenceDate: try decodeDouble(at: position, path: path()))
      return unsafeBitCast(d, to: T.self)
    }
    // Arrays of the common scalars, as Array.init(from:) reads them, without its container.
    if T.self == [String].self { return unsafeBitCast(try decodeScalarArray(String.self, at: position, path: path()), to: T.self) }
    if T.self == [Int].self { return unsafeBitCast(try decodeScalarArray(Int.self, at: position, path: path()), to: T.self) }
    if T.self == [Double].self { return unsafeBitCast(try decodeScalarArray(Double.self, at: position, path: path()), to: T.self) }
    if T.self == UUID.self {
      // What UUID.init(from:) does, without its single value container.
      let text = try decodeString(at: position, path: path())
      guard let uuid = UUID(uuidString: text) else {
        throw DecodingError.dataCorrupted(
          .init(codingPath: path(), debugDescription: "Attempted to decode UUID from invalid UUID string."))
      }
      return unsafeBitCast(uuid, to: T.self)
    }
    if T.self == URL.self, try tag(at: position, path()) == _Tag.string {
      let text = try decodeString(at: position, path: path())
      guard let url = URL(string: text) else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Invalid URL string \"\(text)\"."))
      }
      return url as! T
    }
    if T.self == Decimal.self, let d = try decodeDecimal(at: position, path: path()) { return d as! T }
    if T.self == DynamicRecord.self {
      // What DynamicRecord.init(from:) does, without a decoder and its containers.
      var r = reader(at: position)
      let depth = path().count
      let value = try guarded(path()) { () throws(_CodecError) in try _BinaryValue.read(&r, names: names, depth: depth) }
      guard case .object(var fields) = value else { throw mismatch(DynamicRecord.self, base[position], path()) }
      let id = fields.removeValue(forKey: "id") ?? .null
      return DynamicRecord(_id: id, fields: fields) as! T
    }
    if T.self == FieldValue.self {
      // Read as stored: a decimal stays a decimal, an integer above Int.max a uint.
      var r = reader(at: position)
      let depth = path().count
      let value = try guarded(path()) { () throws(_CodecError) in try _BinaryValue.read(&r, names: names, depth: depth) }
      return value as! T
    }
    let codingPath = path()
    guard codingPath.count < _Tag.maxDepth else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: codingPath, debugDescription: "Values nest deeper than \(_Tag.maxDepth) levels."))
    }
    return try T(from: _BinaryValueDecoder(input: self, position: position, codingPath: codingPath))
  }
}

/// The `Decoder` handed to one value's `init(from:)`.
struct _BinaryValueDecoder: Decoder {
  let input: _BinaryDecoder
  let position: Int
  let codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    let tag = try input.tag(at: position, codingPath)
    guard tag == _Tag.object else { throw input.mismatch([String: Any].self, tag, codingPath) }
    return KeyedDecodingContainer(
      _BinaryKeyedDecoding<Key>(input: input, fieldsStart: position + 1, codingPath: codingPath))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let tag = try input.tag(at: position, codingPath)
    guard tag == _Tag.array else { throw input.mismatch([Any].self, tag, codingPath) }
    return try _BinaryUnkeyedDecoding(input: input, start: position + 1, codingPath: codingPath)
  }

  func singleValueContainer() throws -> any SingleValueDecodingContainer {
    _BinarySingleDecoding(input: input, position: position, codingPath: codingPath)
  }
}

/// A keyed container. Synthesized `init(from:)` asks for keys in the order the encoder
/// wrote them, so the search starts where the last one was found: in-order decoding reads
/// each field once, in any order it is a scan.
///
/// A struct of three words (its search cursor is kept by the decoder, see
/// `_BinaryDecoder.cursor(_:depth:)`), so a container costs one allocation: the box
/// `KeyedDecodingContainer` wraps it in.
struct _BinaryKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let input: _BinaryDecoder
  let fieldsStart: Int
  let codingPath: [any CodingKey]

  init(input: _BinaryDecoder, fieldsStart: Int, codingPath: [any CodingKey]) {
    self.input = input
    self.fieldsStart = fieldsStart
    self.codingPath = codingPath
  }

  var allKeys: [Key] {
    var keys: [Key] = []
    var r = input.reader(at: fieldsStart)
    while let k = try? r.readVarint(), k != 0 {
      guard k <= UInt64(input.names.count), let name = input.names[Int(k - 1)] else { break }
      if let key = Key(stringValue: name) { keys.append(key) }
      guard (try? _BinaryValue.skip(&r, depth: codingPath.count + 1)) != nil else { break }
    }
    return keys
  }

  /// The position of `key`'s value, or nil when the record lacks the key.
  private func find(_ key: Key) throws -> Int? {
    let name = key.stringValue
    let names = input.names
    let depth = codingPath.count
    let cursor = input.cursor(fieldsStart, depth: depth)
    var r = input.reader(at: cursor)
    do throws(_CodecError) {
      // From the cursor to the end, then from the start up to the cursor.
      var wrapped = false
      while true {
        let keyAt = r.position
        if wrapped && keyAt >= cursor { return nil }
        let k = try r.readVarint()
        if k == 0 {
          if wrapped || cursor == fieldsStart { return nil }
          wrapped = true
          r.position = fieldsStart
          continue
        }
        guard k <= UInt64(names.count), let fieldName = names[Int(k - 1)] else {
          throw r.error("undefined key id \(k - 1)", at: keyAt)
        }
        let valueAt = r.position
        try _BinaryValue.skip(&r, depth: depth + 1)
        if fieldName == name {
          input.setCursor(r.position, fieldsStart, depth: depth)
          return valueAt
        }
      }
    } catch let e {
      throw input.corrupted(e, codingPath + [key])
    }
  }

  private func require(_ key: Key) throws -> Int {
    guard let p = try find(key) else {
      throw DecodingError.keyNotFound(
        key, .init(codingPath: codingPath, debugDescription: "The record has no value for \"\(key.stringValue)\"."))
    }
    return p
  }

  /// The position of `key`'s value when it is present and not nil.
  private func present(_ key: Key) throws -> Int? {
    guard let p = try find(key), try input.tag(at: p, codingPath + [key]) != _Tag.null else { return nil }
    return p
  }

  func contains(_ key: Key) -> Bool { (try? find(key)).flatMap { $0 } != nil }

  func decodeNil(forKey key: Key) throws -> Bool {
    try input.tag(at: try require(key), codingPath + [key]) == _Tag.null
  }

  func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
    try input.decodeBool(at: try require(key), path: codingPath + [key])
  }
  func decode(_ type: String.Type, forKey key: Key) throws -> String {
    try input.decodeString(at: try require(key), path: codingPath + [key])
  }
  func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
    try input.decodeDouble(at: try require(key), path: codingPath + [key])
  }
  func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
    Float(try input.decodeDouble(at: try require(key), path: codingPath + [key]))
  }
  func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
  func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
  func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
  func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
  func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
  func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
  func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
  func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
  func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
  func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
    try input.decode(T.self, at: try require(key), path: codingPath + [key])
  }

  @inline(__always)
  private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
    try input.decodeInteger(T.self, at: try require(key), path: codingPath + [key])
  }

  func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
    try present(key).map { try input.decodeBool(at: $0, path: codingPath + [key]) }
  }
  func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
    try present(key).map { try input.decodeString(at: $0, path: codingPath + [key]) }
  }
  func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
    try present(key).map { try input.decodeDouble(at: $0, path: codingPath + [key]) }
  }
  func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
    try present(key).map { Float(try input.decodeDouble(at: $0, path: codingPath + [key])) }
  }
  func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optionalInteger(key) }
  func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optionalInteger(key) }
  func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optionalInteger(key) }
  func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optionalInteger(key) }
  func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optionalInteger(key) }
  func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optionalInteger(key) }
  func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optionalInteger(key) }
  func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optionalInteger(key) }
  func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optionalInteger(key) }
  func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optionalInteger(key) }
  func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    try present(key).map { try input.decode(T.self, at: $0, path: codingPath + [key]) }
  }

  @inline(__always)
  private func optionalInteger<T: FixedWidthInteger>(_ key: Key) throws -> T? {
    try present(key).map { try input.decodeInteger(T.self, at: $0, path: codingPath + [key]) }
  }

  func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    try _BinaryValueDecoder(input: input, position: try require(key), codingPath: codingPath + [key])
      .container(keyedBy: type)
  }

  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    try _BinaryValueDecoder(input: input, position: try require(key), codingPath: codingPath + [key])
      .unkeyedContainer()
  }

  func superDecoder() throws -> any Decoder {
    let key = _SuperKey()
    return _BinaryValueDecoder(input: input, position: try _position(named: "super"), codingPath: codingPath + [key])
  }

  func superDecoder(forKey key: Key) throws -> any Decoder {
    _BinaryValueDecoder(input: input, position: try require(key), codingPath: codingPath + [key])
  }

  private func _position(named name: String) throws -> Int {
    guard let key = Key(stringValue: name), let p = try find(key) else {
      throw DecodingError.keyNotFound(
        _SuperKey(), .init(codingPath: codingPath, debugDescription: "The record has no value for \"super\"."))
    }
    return p
  }
}

struct _SuperKey: CodingKey {
  var stringValue: String { "super" }
  var intValue: Int? { nil }
  init() {}
  init?(stringValue: String) { nil }
  init?(intValue: Int) { nil }
}

struct _BinaryUnkeyedDecoding: UnkeyedDecodingContainer {
  let input: _BinaryDecoder
  let codingPath: [any CodingKey]
  private let start: Int
  private(set) var currentIndex = 0
  private var position: Int

  init(input: _BinaryDecoder, start: Int, codingPath: [any CodingKey]) throws {
    self.input = input
    self.codingPath = codingPath
    self.start = start
    position = start
  }

  /// The number of elements, counted when asked (`Array.init(from:)` never asks): a
  /// walk over the elements, nil when the array is damaged.
  var count: Int? {
    var n = 0
    var p = start
    while (try? input.tag(at: p, codingPath)) != _Tag.arrayEnd {
      guard let next = try? input.skip(at: p, path: codingPath) else { return nil }
      p = next
      n += 1
    }
    return n
  }

  /// At the end when the next byte closes the array; damaged bytes are not the end, so
  /// the next read throws.
  var isAtEnd: Bool { position < input.end && input.base[position] == _Tag.arrayEnd }

  private var path: [any CodingKey] { codingPath + [_IndexKey(currentIndex)] }

  /// The position of the next element; moves past it.
  private mutating func next() throws -> Int {
    guard !isAtEnd else {
      throw DecodingError.valueNotFound(
        Any.self, .init(codingPath: path, debugDescription: "The array has no element \(currentIndex)."))
    }
    let p = position
    position = try input.skip(at: p, path: self.path)
    currentIndex += 1
    return p
  }

  /// Decodes the next element with `body`, building the coding path only for an error
  /// or a nested value.
  @inline(__always)
  private mutating func element<R>(
    _ body: (_BinaryDecoder, Int, @autoclosure () -> [any CodingKey]) throws -> R
  ) throws -> R {
    let index = currentIndex
    let p = try next()
    return try body(input, p, codingPath + [_IndexKey(index)])
  }

  mutating func decodeNil() throws -> Bool {
    guard !isAtEnd, try input.tag(at: position, path) == _Tag.null else { return false }
    _ = try next()
    return true
  }

  mutating func decode(_ type: Bool.Type) throws -> Bool { try element { try $0.decodeBool(at: $1, path: $2()) } }
  mutating func decode(_ type: String.Type) throws -> String {
    try element { try $0.decodeString(at: $1, path: $2()) }
  }
  mutating func decode(_ type: Double.Type) throws -> Double {
    try element { try $0.decodeDouble(at: $1, path: $2()) }
  }
  mutating func decode(_ type: Float.Type) throws -> Float {
    try element { Float(try $0.decodeDouble(at: $1, path: $2())) }
  }
  mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
  mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
  mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
  mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
  mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
  mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
  mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
  mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
  mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
  mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try element { try $0.decode(T.self, at: $1, path: $2()) }
  }

  private mutating func integer<T: FixedWidthInteger>() throws -> T {
    try element { try $0.decodeInteger(T.self, at: $1, path: $2()) }
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    let p = path
    return try _BinaryValueDecoder(input: input, position: try next(), codingPath: p).container(keyedBy: type)
  }

  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let p = path
    return try _BinaryValueDecoder(input: input, position: try next(), codingPath: p).unkeyedContainer()
  }

  mutating func superDecoder() throws -> any Decoder {
    let p = path
    return _BinaryValueDecoder(input: input, position: try next(), codingPath: p)
  }
}

struct _BinarySingleDecoding: SingleValueDecodingContainer {
  let input: _BinaryDecoder
  let position: Int
  let codingPath: [any CodingKey]

  func decodeNil() -> Bool { (try? input.tag(at: position, codingPath)) == _Tag.null }
  func decode(_ type: Bool.Type) throws -> Bool { try input.decodeBool(at: position, path: codingPath) }
  func decode(_ type: String.Type) throws -> String { try input.decodeString(at: position, path: codingPath) }
  func decode(_ type: Double.Type) throws -> Double { try input.decodeDouble(at: position, path: codingPath) }
  func decode(_ type: Float.Type) throws -> Float { Float(try input.decodeDouble(at: position, path: codingPath)) }
  func decode(_ type: Int.Type) throws -> Int { try input.decodeInteger(Int.self, at: position, path: codingPath) }
  func decode(_ type: Int8.Type) throws -> Int8 { try input.decodeInteger(Int8.self, at: position, path: codingPath) }
  func decode(_ type: Int16.Type) throws -> Int16 { try input.decodeInteger(Int16.self, at: position, path: codingPath) }
  func decode(_ type: Int32.Type) throws -> Int32 { try input.decodeInteger(Int32.self, at: position, path: codingPath) }
  func decode(_ type: Int64.Type) throws -> Int64 { try input.decodeInteger(Int64.self, at: position, path: codingPath) }
  func decode(_ type: UInt.Type) throws -> UInt { try input.decodeInteger(UInt.self, at: position, path: codingPath) }
  func decode(_ type: UInt8.Type) throws -> UInt8 { try input.decodeInteger(UInt8.self, at: position, path: codingPath) }
  func decode(_ type: UInt16.Type) throws -> UInt16 {
    try input.decodeInteger(UInt16.self, at: position, path: codingPath)
  }
  func decode(_ type: UInt32.Type) throws -> UInt32 {
    try input.decodeInteger(UInt32.self, at: position, path: codingPath)
  }
  func decode(_ type: UInt64.Type) throws -> UInt64 {
    try input.decodeInteger(UInt64.self, at: position, path: codingPath)
  }
  func decode<T: Decodable>(_ type: T.Type) throws -> T { try input.decode(T.self, at: position, path: codingPath) }
}
