/// A growable byte buffer that encoders and the log writer append to.
///
/// A class so that encoding containers can share it; it owns its allocation and frees it
/// on deinit. Appends are unchecked pointer writes after one capacity test, which keeps
/// the record encoder's inner loop off `Array`'s uniqueness checks.
///
/// The properties opt out of dynamic exclusivity checks, which cost more than the appends
/// themselves: a buffer is owned by one encoder or one locked store state at a time, and
/// no method reads or writes a property while another access to it is in progress.
final class _ByteBuffer {
  @exclusivity(unchecked) private(set) var base: UnsafeMutablePointer<UInt8>
  @exclusivity(unchecked) private(set) var capacity: Int
  /// The number of bytes written; lowering it drops the bytes after it.
  @exclusivity(unchecked) var count = 0

  init(capacity: Int = 256) {
    self.capacity = Swift.max(capacity, 16)
    base = .allocate(capacity: self.capacity)
  }

  deinit { base.deallocate() }

  /// Makes room for `n` more bytes.
  @inline(__always)
  func reserve(_ n: Int) {
    if count + n > capacity { _grow(count + n) }
  }

  private func _grow(_ needed: Int) {
    var newCapacity = capacity * 2
    while newCapacity < needed { newCapacity *= 2 }
    let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
    fresh.update(from: base, count: count)
    base.deallocate()
    base = fresh
    capacity = newCapacity
  }

  @inline(__always)
  func append(_ byte: UInt8) {
    reserve(1)
    base[count] = byte
    count += 1
  }

  @inline(__always)
  func appendVarint(_ value: UInt64) {
    reserve(10)
    var v = value
    var p = base + count
    while v >= 0x80 {
      p.pointee = UInt8(truncatingIfNeeded: v) | 0x80
      p += 1
      v >>= 7
    }
    p.pointee = UInt8(truncatingIfNeeded: v)
    count = p - base + 1
  }

  @inline(__always)
  func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
    let size = MemoryLayout<T>.size
    reserve(size)
    UnsafeMutableRawPointer(base + count).storeBytes(of: value.littleEndian, as: T.self)
    count += size
  }

  func append(_ bytes: UnsafeRawBufferPointer) {
    guard let src = bytes.baseAddress, bytes.count > 0 else { return }
    reserve(bytes.count)
    UnsafeMutableRawPointer(base + count).copyMemory(from: src, byteCount: bytes.count)
    count += bytes.count
  }

  func append(_ string: String) {
    var s = string
    s.withUTF8 { append(UnsafeRawBufferPointer($0)) }
  }

  /// Overwrites four bytes at `offset` (a frame's checksum, once the frame is complete).
  func storeLittleEndian(_ value: UInt32, at offset: Int) {
    precondition(offset + 4 <= count, "storeLittleEndian past the written bytes")
    UnsafeMutableRawPointer(base + offset).storeBytes(of: value.littleEndian, as: UInt32.self)
  }

  /// The written bytes, valid until the next append.
  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

  /// A copy of the written bytes.
  var array: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }
}

/// Why bytes could not be read: the codec's and the log reader's internal error, turned
/// into a ``RequestSetError`` (or a `DecodingError`) with the file and offset at the API edge.
struct _CodecError: Error, CustomStringConvertible {
  /// Offset of the problem, relative to the start of the bytes being read.
  var offset: Int
  var reason: String
  var description: String { "\(reason) at byte \(offset)" }
}

/// A bounds-checked cursor over bytes that may be damaged: every read checks the end and
/// throws ``_CodecError``; nothing traps, loops forever or allocates by a length it read.
struct _ByteReader {
  let base: UnsafePointer<UInt8>
  let end: Int
  var position: Int

  init(_ bytes: UnsafeRawBufferPointer, position: Int = 0) {
    // An empty buffer may have no base address; any non-null pointer does, since every
    // read checks `end` (0) first and nothing is ever read through it.
    base = bytes.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(bitPattern: 1)!
    end = bytes.count
    self.position = position
  }

  init(base: UnsafePointer<UInt8>, end: Int, position: Int) {
    self.base = base
    self.end = end
    self.position = position
  }

  var remaining: Int { end - position }
  var isAtEnd: Bool { position >= end }

  func error(_ reason: String, at offset: Int? = nil) -> _CodecError {
    _CodecError(offset: offset ?? position, reason: reason)
  }

  @inline(__always)
  func peekByte() throws(_CodecError) -> UInt8 {
    guard position < end else { throw error("unexpected end of data") }
    return base[position]
  }

  @inline(__always)
  mutating func readByte() throws(_CodecError) -> UInt8 {
    guard position < end else { throw error("unexpected end of data") }
    defer { position += 1 }
    return base[position]
  }

  /// An unsigned LEB128 varint of at most 10 bytes.
  @inline(__always)
  mutating func readVarint() throws(_CodecError) -> UInt64 {
    // The one-byte case is most values: small ints, key ids, lengths.
    if position < end, base[position] < 0x80 {
      defer { position += 1 }
      return UInt64(base[position])
    }
    return try _readLongVarint()
  }

  private mutating func _readLongVarint() throws(_CodecError) -> UInt64 {
    let start = position
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while true {
      guard position < end else { throw error("unexpected end of data in a varint", at: start) }
      let byte = base[position]
      position += 1
      if shift == 63 && byte > 1 { throw error("varint overflows 64 bits", at: start) }
      result |= UInt64(byte & 0x7F) << shift
      if byte < 0x80 { return result }
      shift += 7
      if shift > 63 { throw error("varint longer than 10 bytes", at: start) }
    }
  }

  /// The next key of an object: its key id and name from the log's key table, or nil at
  /// the object's end (key id + 1 is written, and 0 ends the object).
  @inline(__always)
  mutating func readKey(names: [String?]) throws(_CodecError) -> (id: Int, name: String)? {
    let keyAt = position
    let k = try readVarint()
    if k == 0 { return nil }
    guard k <= UInt64(names.count), let name = names[Int(k - 1)] else {
      throw error("undefined key id \(k - 1)", at: keyAt)
    }
    return (Int(k - 1), name)
  }

  /// A varint that must fit `limit` (a length or a count).
  @inline(__always)
  mutating func readLength(max limit: Int) throws(_CodecError) -> Int {
    let start = position
    let v = try readVarint()
    guard v <= UInt64(limit) else { throw error("length \(v) exceeds the \(limit) bytes available", at: start) }
    return Int(v)
  }

  @inline(__always)
  mutating func readLittleEndian<T: FixedWidthInteger>(_: T.Type) throws(_CodecError) -> T {
    let size = MemoryLayout<T>.size
    guard remaining >= size else { throw error("unexpected end of data") }
    defer { position += size }
    return T(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: T.self))
  }

  /// `n` bytes in place; `n` has been checked against the end.
  @inline(__always)
  mutating func readBytes(_ n: Int) throws(_CodecError) -> UnsafeRawBufferPointer {
    guard n >= 0, remaining >= n else { throw error("unexpected end of data: \(n) bytes needed, \(remaining) left") }
    defer { position += n }
    return UnsafeRawBufferPointer(start: base + position, count: n)
  }
}

@inline(__always)
func _zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v &<< 1) ^ (v >> 63)) }

@inline(__always)
func _unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }
