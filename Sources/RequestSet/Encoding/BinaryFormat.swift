/// The value tags of RequestSet's binary record encoding (see `docs/LOG-FORMAT.md`).
///
/// Every value starts with one tag byte. Objects name their fields by key id (interned
/// once per file in a ``_KeyTable``), so a record is self-describing given its file's key
/// table, and a reader needs no Swift type to walk it.
enum _Tag {
  static let null: UInt8 = 0x00
  static let `false`: UInt8 = 0x01
  static let `true`: UInt8 = 0x02
  /// A signed integer: zigzag varint.
  static let int: UInt8 = 0x03
  /// An unsigned integer above `Int64.max`: varint.
  static let uint: UInt8 = 0x04
  /// An IEEE 754 binary64, little-endian.
  static let double: UInt8 = 0x05
  /// A string: varint byte count, then UTF-8.
  static let string: UInt8 = 0x06
  /// An array: values, then ``arrayEnd``.
  static let array: UInt8 = 0x07
  /// An object: (varint key id + 1, value) pairs, then a varint 0.
  static let object: UInt8 = 0x08
  /// A `Decimal`: varint byte count, then its `description` in UTF-8 (`-12.5`, `NaN`).
  /// Files written before this tag existed hold decimals as the object `Decimal`'s own
  /// `encode(to:)` writes; both decode.
  static let decimal: UInt8 = 0x09
  /// Closes an array.
  static let arrayEnd: UInt8 = 0x0F
  /// 0x80 + n: the integer n, 0 ≤ n ≤ 127, in one byte.
  static let smallInt: UInt8 = 0x80

  /// Deepest nesting a reader follows; deeper bytes are damaged (or hostile) input. The
  /// same as every store's limit, ``FieldValue/maxNestingDepth``.
  static let maxDepth = FieldValue.maxNestingDepth
}

/// The field names of one log file, interned: the first record that uses a name defines
/// its id, later records write only the id.
struct _KeyTable: Sendable {
  /// Names by id; nil for an id that a damaged file never defined.
  private(set) var names: [String?] = []
  private(set) var ids: [String: UInt32] = [:]
  /// The key ids in the order the last encoded value wrote them: records of one type write
  /// the same keys in the same order, so the encoder checks the name at its position here
  /// before hashing it.
  var predicted: [UInt32] = []

  /// The most names a file may define, which bounds what damaged bytes can allocate.
  static let maxCount = 1 << 20

  var count: Int { names.count }

  @inline(__always)
  func name(_ id: Int) -> String? { id < names.count ? names[id] : nil }

  /// The id of `name`, defining it when new.
  @inline(__always)
  mutating func intern(_ name: String) throws -> UInt32 {
    if let id = ids[name] { return id }
    guard names.count < Self.maxCount else {
      throw RequestSetError(
        .encodingFailed,
        "A log file holds at most \(Self.maxCount) distinct field names. Records keyed by data "
          + "(dictionaries with many distinct keys) should store those keys as values instead.")
    }
    let id = UInt32(names.count)
    names.append(name)
    ids[name] = id
    return id
  }

  /// Forgets the names defined since the table held `count` names (a failed encode).
  mutating func rollback(to count: Int) {
    guard names.count > count else { return }
    while names.count > count {
      if let name = names.removeLast() { ids[name] = nil }
    }
    predicted.removeAll()
  }

  /// Defines a name read from a file.
  mutating func define(id: Int, name: String) throws(_CodecError) {
    if id < names.count {
      if let existing = names[id] {
        guard existing == name else {
          throw _CodecError(offset: 0, reason: "key id \(id) redefined from \"\(existing)\" to \"\(name)\"")
        }
        return
      }
    } else {
      guard id < Self.maxCount else { throw _CodecError(offset: 0, reason: "key id \(id) out of range") }
      while names.count < id { names.append(nil) }
      names.append(nil)
    }
    if ids[name] != nil { throw _CodecError(offset: 0, reason: "key \"\(name)\" defined twice") }
    names[id] = name
    ids[name] = UInt32(id)
  }
}
