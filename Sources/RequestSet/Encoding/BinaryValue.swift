import Foundation

/// Reading encoded values without their Swift type: skipping, finding a key, building a
/// ``FieldValue``, and learning which kinds of value each key holds.
///
/// Every function here is total over arbitrary bytes: damaged input throws ``_CodecError``,
/// nesting is capped at ``_Tag/maxDepth``, and no length read from the bytes is trusted
/// before it is checked against what is left.
enum _BinaryValue {
  /// Moves past one value.
  static func skip(_ r: inout _ByteReader, depth: Int = 0) throws(_CodecError) {
    let tag = try r.readByte()
    if tag >= _Tag.smallInt { return }
    switch tag {
    case _Tag.null, _Tag.false, _Tag.true: return
    case _Tag.int, _Tag.uint: _ = try r.readVarint()
    case _Tag.double: _ = try r.readBytes(8)
    case _Tag.string, _Tag.decimal: _ = try r.readBytes(try r.readLength(max: r.remaining))
    case _Tag.array:
      guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
      while try r.peekByte() != _Tag.arrayEnd { try skip(&r, depth: depth + 1) }
      r.position += 1
    case _Tag.object:
      guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
      while try r.readVarint() != 0 { try skip(&r, depth: depth + 1) }
    default:
      throw r.error("unknown value tag 0x\(String(tag, radix: 16))", at: r.position - 1)
    }
  }

  /// Moves `r` past an integer value (a small one, or a varint of at most 10 bytes),
  /// inline, for the scans that skip record ids and integer fields; false, leaving `r`
  /// where it was, for any other value, which ``skip(_:depth:)`` then reads.
  @inline(__always)
  static func skipInteger(_ r: inout _ByteReader) -> Bool {
    guard r.position < r.end else { return false }
    let tag = r.base[r.position]
    if tag >= _Tag.smallInt {
      r.position += 1
      return true
    }
    guard tag == _Tag.int else { return false }
    var p = r.position + 1
    let last = Swift.min(r.end, p + 10)
    while p < last {
      if r.base[p] < 0x80 {
        r.position = p + 1
        return true
      }
      p += 1
    }
    return false
  }

  /// Moves `r` to the value at a path of key ids through nested objects; false when the
  /// path is absent (a missing key, or a value on the way that is not an object).
  static func seek(_ r: inout _ByteReader, path: [Int]) throws(_CodecError) -> Bool {
    for id in path {
      guard try r.readByte() == _Tag.object else { return false }
      let wanted = UInt64(id) + 1
      while true {
        let k = try r.readVarint()
        if k == 0 { return false }
        if k == wanted { break }
        // The values most fields hold, skipped inline: a one-byte value, a short string.
        if r.position < r.end {
          let tag = r.base[r.position]
          if tag >= _Tag.smallInt || tag <= _Tag.true {
            r.position += 1
            continue
          }
          if tag == _Tag.int, skipInteger(&r) { continue }
          if tag == _Tag.string, r.end - r.position >= 2, r.base[r.position + 1] < 0x80,
            Int(r.base[r.position + 1]) <= r.end - r.position - 2
          {
            r.position += 2 + Int(r.base[r.position + 1])
            continue
          }
        }
        try skip(&r, depth: 1)
      }
    }
    return true
  }

  /// The ``FieldValue`` of the value at `r`, as `_FieldEncoder` would have produced it from
  /// the record.
  static func read(_ r: inout _ByteReader, names: [String?], depth: Int = 0) throws(_CodecError) -> FieldValue {
    let start = r.position
    let tag = try r.readByte()
    if tag >= _Tag.smallInt { return .int(Int(tag & 0x7F)) }
    switch tag {
    case _Tag.null: return .null
    case _Tag.false: return .bool(false)
    case _Tag.true: return .bool(true)
    case _Tag.int: return .int(Int(_unzigzag(try r.readVarint())))
    case _Tag.uint:
      let u = try r.readVarint()
      return Int(exactly: u).map(FieldValue.int) ?? .uint(u)
    case _Tag.double: return .double(Double(bitPattern: try r.readLittleEndian(UInt64.self)))
    case _Tag.string: return .string(try readString(&r))
    case _Tag.decimal: return .decimal(try readDecimal(&r))
    case _Tag.array:
      guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
      var items: [FieldValue] = []
      while try r.peekByte() != _Tag.arrayEnd { items.append(try read(&r, names: names, depth: depth + 1)) }
      r.position += 1
      return .array(items)
    case _Tag.object:
      guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
      // Records hold a handful of fields: room for them up front saves regrowing.
      var fields = [String: FieldValue](minimumCapacity: depth == 0 ? 8 : 0)
      while true {
        guard let entry = try r.readKey(names: names) else { break }
        let name = entry.name
        fields[name] = try read(&r, names: names, depth: depth + 1)
      }
      return .object(fields)
    default:
      throw r.error("unknown value tag 0x\(String(tag, radix: 16))", at: start)
    }
  }

  /// A string's bytes after its tag; invalid UTF-8 is repaired, never trusted.
  @inline(__always)
  static func readString(_ r: inout _ByteReader) throws(_CodecError) -> String {
    let n = try r.readLength(max: r.remaining)
    return String(decoding: try r.readBytes(n), as: UTF8.self)
  }

  /// A decimal's text after its tag; text that is no decimal is damage.
  static func readDecimal(_ r: inout _ByteReader) throws(_CodecError) -> Decimal {
    let start = r.position
    let text = try readString(&r)
    if text == "NaN" { return .nan }
    guard let d = Decimal(string: text) else {
      throw r.error("invalid decimal \"\(text.prefix(40))\"", at: start)
    }
    return d
  }

  /// The kind of the value whose tag is `tag`, or nil for a byte that is no value tag.
  @inline(__always)
  static func kind(ofTag tag: UInt8) -> _FieldKind? {
    if tag >= _Tag.smallInt { return .number }
    switch tag {
    case _Tag.null: return .null
    case _Tag.false, _Tag.true: return .bool
    case _Tag.int, _Tag.uint, _Tag.double, _Tag.decimal: return .number
    case _Tag.string: return .string
    case _Tag.array: return .array
    case _Tag.object: return .object
    default: return nil
    }
  }

  /// Adds the keys of the record at `r` (top-level and dotted, as `_FieldTable` flattens
  /// them) and their kinds to `kinds`.
  static func collectKinds(_ r: inout _ByteReader, names: [String?], into kinds: inout _KindAccumulator) throws(_CodecError) {
    guard try r.readByte() == _Tag.object else { return }
    while true {
      guard let entry = try r.readKey(names: names) else { return }
      let id = entry.id, name = entry.name
      let tag = try r.peekByte()
      guard let kind = kind(ofTag: tag) else { throw r.error("unknown value tag 0x\(String(tag, radix: 16))") }
      kinds.insert(id: id, kind)
      if kind == .object {
        try _collectNested(&r, prefix: _DottedKey.escape(name), names: names, into: &kinds, depth: 1)
      } else {
        try skip(&r, depth: 1)
      }
    }
  }

  private static func _collectNested(
    _ r: inout _ByteReader, prefix: String, names: [String?], into kinds: inout _KindAccumulator, depth: Int
  ) throws(_CodecError) {
    guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
    r.position += 1  // the object tag, peeked by the caller
    while true {
      guard let entry = try r.readKey(names: names) else { return }
      let name = entry.name
      let tag = try r.peekByte()
      guard let kind = kind(ofTag: tag) else { throw r.error("unknown value tag 0x\(String(tag, radix: 16))") }
      let key = _DottedKey.join(prefix, name)
      kinds.nested[key, default: _KindSet()].insert(kind)
      if kind == .object {
        try _collectNested(&r, prefix: key, names: names, into: &kinds, depth: depth + 1)
      } else {
        try skip(&r, depth: depth + 1)
      }
    }
  }
}

/// The kinds of value seen per key, kept by key id for top-level keys so that recording a
/// written record costs no hashing.
struct _KindAccumulator: Sendable {
  var top: [UInt8] = []
  var nested: [String: _KindSet] = [:]

  @inline(__always)
  mutating func insert(id: Int, _ kind: _FieldKind) {
    if id >= top.count { top.append(contentsOf: repeatElement(0, count: id - top.count + 1)) }
    top[id] |= 1 << UInt8(kind.rawValue)
  }

  mutating func formUnion(_ other: _KindAccumulator) {
    for (id, bits) in other.top.enumerated() where bits != 0 {
      if id >= top.count { top.append(contentsOf: repeatElement(0, count: id - top.count + 1)) }
      top[id] |= bits
    }
    for (k, v) in other.nested { nested[k, default: _KindSet()].formUnion(v) }
  }

  /// The kinds by dotted key, merged into `base` (what the type probe said).
  func materialize(names: [String?], base: [String: _KindSet]) -> [String: _KindSet] {
    var kinds = base
    for (id, bits) in top.enumerated() where bits != 0 {
      guard id < names.count, let name = names[id] else { continue }
      kinds[_DottedKey.escape(name), default: _KindSet()].formUnion(_KindSet(bits: bits))
    }
    for (k, v) in nested { kinds[k, default: _KindSet()].formUnion(v) }
    return kinds
  }
}
