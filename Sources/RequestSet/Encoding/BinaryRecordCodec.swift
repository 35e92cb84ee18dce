/// RequestSet's binary record encoding, the one ``LogStore`` writes, for tools and
/// benchmarks.
///
/// Values are tagged, so encoded bytes read back without their Swift type (as a
/// ``FieldValue``); field names are interned once per codec (once per file in a log),
/// and records refer to them by number. A type that gains an optional property, or loses
/// one, still decodes old records. Damaged bytes throw; they never trap.
///
/// ```swift
/// var codec = BinaryRecordCodec()
/// let bytes = try codec.encode(micky)                    // 25 bytes; the JSON is 62
/// let back = try codec.decode(Animal.self, from: bytes)
/// try codec.fieldValue(from: bytes)                      // .object(["id": .int(1), "name": .string("Micky"), ...])
/// codec.fieldNames                                       // ["id", "name", "species", "age"]
/// ```
///
/// The byte layout is specified in `docs/LOG-FORMAT.md`.
public struct BinaryRecordCodec: Sendable {
  var _keys = _KeyTable()
  /// The encoder and its buffer, reused from one `encode` to the next.
  private var _scratch = _CodecScratch()

  /// A codec that knows no field names yet.
  public init() {}

  /// The field names this codec has interned, in the order of their numbers.
  public var fieldNames: [String] { _keys.names.map { $0 ?? "" } }

  /// Encodes a value, interning any new field names.
  ///
  /// - Throws: ``RequestSetError`` `.encodingFailed` when the value's `encode(to:)` throws.
  /// - Complexity: O(*n*) in the encoded size.
  public mutating func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
    if !isKnownUniquelyReferenced(&_scratch) { _scratch = _CodecScratch() }
    let encoder = _scratch.encoder
    encoder.out.count = 0
    swap(&encoder.keys, &_keys)
    defer { swap(&encoder.keys, &_keys) }
    try encoder.encodeRoot(value)
    return encoder.out.array
  }

  /// Decodes a value from bytes this codec encoded.
  ///
  /// - Throws: `DecodingError` when the bytes are damaged or do not hold a `T`.
  public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    try bytes.withUnsafeBytes { try _BinaryDecoder.decode(T.self, from: $0, names: _keys.names) }
  }

  /// Reads encoded bytes without a Swift type: the same ``FieldValue`` that
  /// ``FieldValue/init(encoding:)`` gives for the value that was encoded.
  ///
  /// - Throws: ``RequestSetError`` `.corruptLog` when the bytes are damaged.
  public func fieldValue(from bytes: [UInt8]) throws -> FieldValue {
    try bytes.withUnsafeBytes { buffer in
      var r = _ByteReader(buffer)
      do throws(_CodecError) {
        return try _BinaryValue.read(&r, names: _keys.names)
      } catch {
        throw RequestSetError(
          .corruptLog, "The bytes are not a valid encoded value: \(error). Pass bytes this codec encoded.",
          underlying: error)
      }
    }
  }
}

/// A ``BinaryRecordCodec``'s encoder and output buffer, kept from one `encode` to the next
/// so that encoding a record allocates only the bytes it returns.
///
/// `@unchecked Sendable`: a codec touches its scratch only in its `mutating` `encode`, and
/// only after `isKnownUniquelyReferenced` proved that no other codec value shares it (a
/// copy of the codec makes its own on its next `encode`). A value being mutated is
/// accessed by one thread at a time, so one scratch is never used by two threads at once.
final class _CodecScratch: @unchecked Sendable {
  let encoder = _BinaryEncoder(out: _ByteBuffer(capacity: 256))
}
