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
}

final class _ProbeRecorder {
  var kinds: [String: _KindSet] = [:]

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
