import Foundation

/// Decodes a `Decodable` value from a ``FieldValue`` tree: the inverse of `_FieldEncoder`.
///
/// Used where RequestSet builds records from fields: `firstOrInsert()` from a query's
/// equality conditions, `update("key", value:)` by patching a record's fields; and, with a
/// recorder, where a store learns its type's keys from a real record (see `_SchemaProbe`).
enum _FieldDecoder {
  /// Decodes a `T`; a `recorder` is told every key the type asks for that `value` lacks.
  static func decode<T: Decodable>(_ type: T.Type, from value: FieldValue, recorder: _ProbeRecorder? = nil) throws -> T {
    try T(from: _Decoder(value: value, codingPath: [], recorder: recorder))
  }

  /// Decodes a `T` as a field of a record holding `value` is decoded (see
  /// `FieldValue._decodeField(_:)`).
  static func decodeField<T: Decodable>(_ type: T.Type, from value: FieldValue) throws -> T {
    try _decode(type, value, [], nil)
  }
}

private struct _Decoder: Decoder {
  let value: FieldValue
  var codingPath: [any CodingKey]
  let recorder: _ProbeRecorder?
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    guard case .object(let fields) = value else { throw _mismatch([String: FieldValue].self, value, codingPath) }
    return KeyedDecodingContainer(_Keyed<Key>(fields: fields, codingPath: codingPath, recorder: recorder))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    guard case .array(let items) = value else { throw _mismatch([FieldValue].self, value, codingPath) }
    return _Unkeyed(items: items, codingPath: codingPath, recorder: recorder)
  }

  func singleValueContainer() throws -> any SingleValueDecodingContainer {
    _Single(value: value, codingPath: codingPath, recorder: recorder)
  }
}

private func _mismatch(_ type: Any.Type, _ value: FieldValue, _ path: [any CodingKey]) -> DecodingError {
  .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected \(type), found \(value)"))
}

/// A scalar of type `T` from a field value, or nil when `T` is not a scalar type.
///
/// `path` is built only for an error: most fields decode without one, and building it
/// (an array of existentials) cost an allocation per field.
private func _scalar<T>(
  _ type: T.Type, _ value: FieldValue, _ path: @autoclosure () -> [any CodingKey]
) throws -> T? {
  func int<I: FixedWidthInteger>(_: I.Type) throws -> I {
    switch value {
    case .int(let i): if let v = I(exactly: i) { return v }
    case .uint(let u): if let v = I(exactly: u) { return v }
    case .double(let d): if let v = I(exactly: d) { return v }
    case .decimal(let d): if let v = I(d.description) { return v }  // integral decimals print as integers
    default: break
    }
    throw _mismatch(I.self, value, path())
  }
  switch type {
  case is String.Type:
    guard case .string(let s) = value else { throw _mismatch(String.self, value, path()) }
    return (s as! T)
  case is Bool.Type:
    guard case .bool(let b) = value else { throw _mismatch(Bool.self, value, path()) }
    return (b as! T)
  case is Double.Type:
    switch value {
    case .double(let d): return (d as! T)
    case .int, .uint, .decimal: return (value._doubleValue as! T)
    default: throw _mismatch(Double.self, value, path())
    }
  case is Float.Type:
    switch value {
    case .double(let d): return (Float(d) as! T)
    case .int, .uint, .decimal: return (Float(value._doubleValue) as! T)
    default: throw _mismatch(Float.self, value, path())
    }
  case is Decimal.Type:
    switch value {
    case .decimal(let d): return (d as! T)
    case .int(let i): return (Decimal(i) as! T)
    case .uint(let u): return (Decimal(u) as! T)
    case .double(let d):
      guard let decimal = _Numbers.decimal(d) else { throw _mismatch(Decimal.self, value, path()) }
      return (decimal as! T)
    default: return nil  // written by Decimal's own encode(to:): let it read its object
    }
  case is URL.Type:
    guard case .string(let s) = value else { return nil }
    guard let url = URL(string: s) else {
      throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "Invalid URL string \"\(s)\"."))
    }
    return (url as! T)
  case is Int.Type: return (try int(Int.self) as! T)
  case is Int8.Type: return (try int(Int8.self) as! T)
  case is Int16.Type: return (try int(Int16.self) as! T)
  case is Int32.Type: return (try int(Int32.self) as! T)
  case is Int64.Type: return (try int(Int64.self) as! T)
  case is UInt.Type: return (try int(UInt.self) as! T)
  case is UInt8.Type: return (try int(UInt8.self) as! T)
  case is UInt16.Type: return (try int(UInt16.self) as! T)
  case is UInt32.Type: return (try int(UInt32.self) as! T)
  case is UInt64.Type: return (try int(UInt64.self) as! T)
  case is FieldValue.Type: return (value as! T)
  default: return nil
  }
}

private func _decode<T: Decodable>(
  _ type: T.Type, _ value: FieldValue, _ path: @autoclosure () -> [any CodingKey], _ recorder: _ProbeRecorder?
) throws -> T {
  if let scalar = try _scalar(type, value, path()) { return scalar }
  return try T(from: _Decoder(value: value, codingPath: path(), recorder: recorder))
}

private struct _Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let fields: [String: FieldValue]
  var codingPath: [any CodingKey]
  let recorder: _ProbeRecorder?
  /// In sorted order, not the dictionary's: a dictionary whose values fail to decode
  /// under two keys reports the same key every time (two equal dictionaries may list
  /// their keys in different orders, and a record read twice then named either key).
  var allKeys: [Key] { fields.keys.sorted().compactMap { Key(stringValue: $0) } }

  func contains(_ key: Key) -> Bool {
    if fields[key.stringValue] != nil { return true }
    recorder?.record(codingPath + [key], .null)
    return false
  }

  private func field(_ key: Key) throws -> FieldValue {
    guard let v = fields[key.stringValue] else {
      throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value for \(key.stringValue)"))
    }
    return v
  }

  func decodeNil(forKey key: Key) throws -> Bool {
    if case .null = fields[key.stringValue] ?? .null {
      recorder?.record(codingPath + [key], .null)
      return true
    }
    return false
  }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
    try _decode(type, try field(key), codingPath + [key], recorder)
  }
  func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    guard let value = fields[key.stringValue], value != .null else {
      recorder?.recordAbsent(codingPath + [key], T.self)
      return nil
    }
    return try _decode(type, value, codingPath + [key], recorder)
  }
  func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    try _Decoder(value: try field(key), codingPath: codingPath + [key], recorder: recorder).container(keyedBy: type)
  }
  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    try _Decoder(value: try field(key), codingPath: codingPath + [key], recorder: recorder).unkeyedContainer()
  }
  func superDecoder() throws -> any Decoder {
    _Decoder(value: fields["super"] ?? .null, codingPath: codingPath, recorder: recorder)
  }
  func superDecoder(forKey key: Key) throws -> any Decoder {
    _Decoder(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key], recorder: recorder)
  }
}

private struct _Unkeyed: UnkeyedDecodingContainer {
  let items: [FieldValue]
  var codingPath: [any CodingKey]
  let recorder: _ProbeRecorder?
  var currentIndex = 0
  var count: Int? { items.count }
  var isAtEnd: Bool { currentIndex >= items.count }

  private mutating func next() throws -> FieldValue {
    guard !isAtEnd else {
      throw DecodingError.valueNotFound(
        FieldValue.self, .init(codingPath: codingPath, debugDescription: "The array has no more elements"))
    }
    defer { currentIndex += 1 }
    return items[currentIndex]
  }

  mutating func decodeNil() throws -> Bool {
    guard !isAtEnd, case .null = items[currentIndex] else { return false }
    currentIndex += 1
    return true
  }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
    let index = currentIndex
    return try _decode(type, try next(), codingPath + [_IndexKey(index)], recorder)
  }
  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    let path = codingPath + [_IndexKey(currentIndex)]
    return try _Decoder(value: try next(), codingPath: path, recorder: recorder).container(keyedBy: type)
  }
  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let path = codingPath + [_IndexKey(currentIndex)]
    return try _Decoder(value: try next(), codingPath: path, recorder: recorder).unkeyedContainer()
  }
  mutating func superDecoder() throws -> any Decoder {
    let path = codingPath + [_IndexKey(currentIndex)]
    return _Decoder(value: try next(), codingPath: path, recorder: recorder)
  }
}

private struct _Single: SingleValueDecodingContainer {
  let value: FieldValue
  var codingPath: [any CodingKey]
  let recorder: _ProbeRecorder?

  func decodeNil() -> Bool {
    if case .null = value { return true }
    return false
  }
  func decode<T: Decodable>(_ type: T.Type) throws -> T { try _decode(type, value, codingPath, recorder) }
}

extension FieldValue {
  /// This value with `newValue` at a dotted key (see `_DottedKey`), creating nested
  /// objects on the way.
  func _setting(_ newValue: FieldValue, at key: Substring) -> FieldValue {
    _setting(newValue, at: _DottedKey.split(String(key))[...])
  }

  private func _setting(_ newValue: FieldValue, at path: ArraySlice<String>) -> FieldValue {
    guard let head = path.first else { return newValue }
    var fields: [String: FieldValue]
    if case .object(let existing) = self { fields = existing } else { fields = [:] }
    fields[head] = (fields[head] ?? .null)._setting(newValue, at: path.dropFirst())
    return .object(fields)
  }
}
