import Foundation

extension FieldValue: Codable {
  /// Encodes the value as the Swift value it stands for: `.int(3)` as the integer 3,
  /// `.array` as an unkeyed container, `.object` as a keyed container (keys in sorted
  /// order), `.null` as nil.
  ///
  /// RequestSet's own encoders (a store's fields, ``BinaryRecordCodec``, a ``LogStore``'s
  /// records) write a `FieldValue` exactly as the value it came from, so a record built of
  /// field values reads back as the typed record that wrote them.
  ///
  /// ```swift
  /// let json = try JSONEncoder().encode(FieldValue.object(["age": .int(3)]))   // {"age":3}
  /// ```
  /// - Parameter encoder: The encoder to write to.
  /// - Throws: What the encoder throws (a `JSONEncoder` refuses a NaN or infinite double).
  public func encode(to encoder: any Encoder) throws {
    switch self {
    case .null:
      var c = encoder.singleValueContainer()
      try c.encodeNil()
    case .bool(let b):
      var c = encoder.singleValueContainer()
      try c.encode(b)
    case .int(let i):
      var c = encoder.singleValueContainer()
      try c.encode(i)
    case .uint(let u):
      var c = encoder.singleValueContainer()
      try c.encode(u)
    case .double(let d):
      var c = encoder.singleValueContainer()
      try c.encode(d)
    case .decimal(let d):
      var c = encoder.singleValueContainer()
      try c.encode(d)
    case .string(let s):
      var c = encoder.singleValueContainer()
      try c.encode(s)
    case .array(let items):
      var c = encoder.unkeyedContainer()
      for item in items { try c.encode(item) }
    case .object(let fields):
      var c = encoder.container(keyedBy: _NameKey.self)
      for (name, value) in fields.sorted(by: { $0.key < $1.key }) { try c.encode(value, forKey: _NameKey(name)) }
    }
  }

  /// Decodes whatever value the decoder holds: nil, a Boolean, an integer, a double, a
  /// string, an array or an object, tried in that order.
  ///
  /// RequestSet's own decoders read the value exactly as it was stored (a decimal stays a
  /// `.decimal`, an integer above `Int.max` a `.uint`); another decoder gives what its
  /// format can tell apart (`JSONDecoder` reads `2.5` as `.double(2.5)`).
  ///
  /// ```swift
  /// let value = try JSONDecoder().decode(FieldValue.self, from: Data(#"{"tags":["a"]}"#.utf8))
  /// // .object(["tags": .array([.string("a")])])
  /// ```
  /// - Parameter decoder: The decoder to read from.
  /// - Throws: `DecodingError.dataCorrupted` when the value is none of those kinds.
  public init(from decoder: any Decoder) throws {
    if let single = try? decoder.singleValueContainer() {
      if single.decodeNil() {
        self = .null
        return
      }
      if let b = try? single.decode(Bool.self) {
        self = .bool(b)
        return
      }
      if let i = try? single.decode(Int.self) {
        self = .int(i)
        return
      }
      if let u = try? single.decode(UInt64.self) {
        self = .uint(u)
        return
      }
      if let d = try? single.decode(Double.self) {
        self = .double(d)
        return
      }
      if let s = try? single.decode(String.self) {
        self = .string(s)
        return
      }
    }
    if var items = try? decoder.unkeyedContainer() {
      var values: [FieldValue] = []
      while !items.isAtEnd { values.append(try items.decode(FieldValue.self)) }
      self = .array(values)
      return
    }
    if let keyed = try? decoder.container(keyedBy: _NameKey.self) {
      var fields: [String: FieldValue] = [:]
      for key in keyed.allKeys { fields[key.stringValue] = try keyed.decode(FieldValue.self, forKey: key) }
      self = .object(fields)
      return
    }
    throw DecodingError.dataCorrupted(
      .init(codingPath: decoder.codingPath, debugDescription: "The value is no nil, Boolean, number, string, array or object."))
  }
}

/// A coding key that is any field name.
struct _NameKey: CodingKey {
  let stringValue: String
  var intValue: Int? { nil }
  init(_ name: String) { stringValue = name }
  init?(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { stringValue = String(intValue) }
}
