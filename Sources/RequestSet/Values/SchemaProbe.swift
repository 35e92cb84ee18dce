import Foundation

/// Learns the keys of a `Decodable` type, and the kind of value each holds, without a
/// single record.
///
/// Encoding a record cannot tell that `nickname` exists when it is `nil` (synthesized
/// `encode(to:)` leaves absent optionals out), so stores ask the type itself: the probe runs
/// the type's `init(from:)` against a decoder that answers every request with a placeholder
/// and writes down the key it was asked for. A type whose decoding rejects every
/// placeholder (a custom `init(from:)` that validates) is probed up to that point; keys seen
/// in real records are added on top, so the probe only ever adds knowledge.
enum _SchemaProbe {
  static let maxDepth = 8

  static func probe<T: Decodable>(_ type: T.Type) -> [String: _KindSet] {
    let recorder = _ProbeRecorder()
    _ = try? T(from: _ProbeDecoder(recorder: recorder, path: []))
    return recorder.kinds
  }

  /// Whether `keyPath` reads the value `Root`'s Codable conformance stores under `key`.
  ///
  /// The probe decodes a `Root` whose every scalar holds a value of its own, reads the key
  /// path, and checks that the value is the one put under `key`. It catches `CodingKeys`
  /// that rename a property to another property's name, which a key path's name alone
  /// cannot show. False when the type cannot be probed that way.
  static func confirms(_ keyPath: AnyKeyPath, key: String, root: any Decodable.Type) -> Bool {
    func run<T: Decodable>(_ type: T.Type) -> Bool {
      let recorder = _ProbeRecorder()
      recorder.tagging = true
      guard let instance = try? T(from: _ProbeDecoder(recorder: recorder, path: [])),
        let expected = recorder.supplied[key], let read = instance[keyPath: keyPath],
        let encodable = read as? any Encodable, let value = try? _FieldEncoder.encode(encodable)
      else { return false }
      return value == expected
    }
    return run(root)
  }
}

final class _ProbeRecorder {
  var kinds: [String: _KindSet] = [:]
  /// When set, every scalar gets a value of its own and optionals are present, and
  /// `supplied` records what went where (see ``_SchemaProbe/confirms(_:key:root:)``).
  var tagging = false
  var supplied: [String: FieldValue] = [:]
  private var counter = 0

  /// A fresh small number, for a tagged scalar.
  func next() -> Int {
    counter += 1
    return counter
  }

  func record(_ path: [String], _ kind: _FieldKind) {
    guard !path.isEmpty else { return }
    kinds[path.joined(separator: "."), default: _KindSet()].insert(kind)
  }
}

struct _ProbeError: Error {}

struct _ProbeDecoder: Decoder {
  let recorder: _ProbeRecorder
  let path: [String]
  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    guard path.count < _SchemaProbe.maxDepth else { throw _ProbeError() }
    recorder.record(path, .object)
    return KeyedDecodingContainer(_ProbeKeyed<Key>(recorder: recorder, path: path))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    recorder.record(path, .array)
    return _ProbeUnkeyed()
  }

  func singleValueContainer() throws -> any SingleValueDecodingContainer {
    _ProbeSingle(recorder: recorder, path: path)
  }
}

/// A placeholder for `T`, recording what kind of value `T` is made of.
private func _placeholder<T: Decodable>(_ type: T.Type, recorder: _ProbeRecorder, path: [String]) throws -> T {
  func scalar(_ kind: _FieldKind, _ value: Any) -> T {
    recorder.record(path, kind)
    return value as! T
  }
  if recorder.tagging, let tagged = _tagged(type, recorder.next()) {
    recorder.supplied[path.joined(separator: ".")] = tagged.field
    return tagged.value
  }
  switch type {
  case is String.Type: return scalar(.string, "")
  case is Bool.Type: return scalar(.bool, false)
  case is Int.Type: return scalar(.number, 0 as Int)
  case is Double.Type: return scalar(.number, 0 as Double)
  case is Float.Type: return scalar(.number, 0 as Float)
  case is Int8.Type: return scalar(.number, 0 as Int8)
  case is Int16.Type: return scalar(.number, 0 as Int16)
  case is Int32.Type: return scalar(.number, 0 as Int32)
  case is Int64.Type: return scalar(.number, 0 as Int64)
  case is UInt.Type: return scalar(.number, 0 as UInt)
  case is UInt8.Type: return scalar(.number, 0 as UInt8)
  case is UInt16.Type: return scalar(.number, 0 as UInt16)
  case is UInt32.Type: return scalar(.number, 0 as UInt32)
  case is UInt64.Type: return scalar(.number, 0 as UInt64)
  case is UUID.Type: return scalar(.string, UUID())
  case is Date.Type: return scalar(.number, Date(timeIntervalSinceReferenceDate: 0))
  // Encoded as JSONEncoder writes them, not as their own Codable containers (see _FieldEncoder).
  case is Decimal.Type: return scalar(.number, Decimal(0))
  case is URL.Type: return scalar(.string, URL(string: "https://example.com")!)
  default:
    do {
      return try T(from: _ProbeDecoder(recorder: recorder, path: path))
    } catch {
      // A string- or number-backed enum rejects the placeholder raw value; any case will do.
      if let cases = T.self as? any CaseIterable.Type, let first = _firstCase(cases) as? T {
        return first
      }
      throw error
    }
  }
}

/// A value of `T` made from `n`, distinct for each `n` (up to 100 fields), and its field.
private func _tagged<T>(_ type: T.Type, _ n: Int) -> (value: T, field: FieldValue)? {
  let small = n % 100 + 1
  func pair<V>(_ value: V, _ field: FieldValue) -> (value: T, field: FieldValue)? { (value as! T, field) }
  switch type {
  case is String.Type: return pair("\u{1}probe\(n)", .string("\u{1}probe\(n)"))
  case is Bool.Type: return pair(n % 2 == 0, .bool(n % 2 == 0))
  case is Int.Type: return pair(small, .int(small))
  case is Int8.Type: return pair(Int8(small), .int(small))
  case is Int16.Type: return pair(Int16(small), .int(small))
  case is Int32.Type: return pair(Int32(small), .int(small))
  case is Int64.Type: return pair(Int64(small), .int(small))
  case is UInt8.Type: return pair(UInt8(small), .int(small))
  case is UInt16.Type: return pair(UInt16(small), .int(small))
  case is UInt32.Type: return pair(UInt32(small), .int(small))
  case is UInt64.Type: return pair(UInt64(small), .int(small))
  case is UInt.Type: return pair(UInt(small), .int(small))
  case is Decimal.Type: return pair(Decimal(small) + Decimal(string: "0.25")!, .decimal(Decimal(small) + Decimal(string: "0.25")!))
  case is Double.Type: return pair(Double(small) + 0.5, .double(Double(small) + 0.5))
  case is Float.Type: return pair(Float(small) + 0.5, .double(Double(small) + 0.5))
  case is Date.Type:
    return pair(Date(timeIntervalSinceReferenceDate: Double(small) + 0.5), .double(Double(small) + 0.5))
  default: return nil
  }
}

private func _firstCase<C: CaseIterable>(_ type: C.Type) -> Any? { C.allCases.first }

struct _ProbeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let recorder: _ProbeRecorder
  let path: [String]
  var codingPath: [any CodingKey] { [] }
  var allKeys: [Key] { [] }

  func contains(_ key: Key) -> Bool { true }
  func decodeNil(forKey key: Key) throws -> Bool {
    recorder.record(path + [key.stringValue], .null)
    return false
  }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
    try _placeholder(type, recorder: recorder, path: path + [key.stringValue])
  }
  func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    let keyPath = path + [key.stringValue]
    if recorder.tagging { return try _placeholder(type, recorder: recorder, path: keyPath) }
    recorder.record(keyPath, .null)
    _ = try? _placeholder(type, recorder: recorder, path: keyPath)
    return nil
  }
  func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    try _ProbeDecoder(recorder: recorder, path: path + [key.stringValue]).container(keyedBy: type)
  }
  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    try _ProbeDecoder(recorder: recorder, path: path + [key.stringValue]).unkeyedContainer()
  }
  func superDecoder() throws -> any Decoder { _ProbeDecoder(recorder: recorder, path: path + ["super"]) }
  func superDecoder(forKey key: Key) throws -> any Decoder {
    _ProbeDecoder(recorder: recorder, path: path + [key.stringValue])
  }
}

/// Arrays are probed as empty: their element types do not add keys.
struct _ProbeUnkeyed: UnkeyedDecodingContainer {
  var codingPath: [any CodingKey] { [] }
  var count: Int? { 0 }
  var isAtEnd: Bool { true }
  var currentIndex: Int { 0 }
  mutating func decodeNil() throws -> Bool { throw _ProbeError() }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw _ProbeError() }
  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
    -> KeyedDecodingContainer<NestedKey>
  { throw _ProbeError() }
  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw _ProbeError() }
  mutating func superDecoder() throws -> any Decoder { throw _ProbeError() }
}

struct _ProbeSingle: SingleValueDecodingContainer {
  let recorder: _ProbeRecorder
  let path: [String]
  var codingPath: [any CodingKey] { [] }
  func decodeNil() -> Bool {
    recorder.record(path, .null)
    return false
  }
  func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try _placeholder(type, recorder: recorder, path: path)
  }
}
