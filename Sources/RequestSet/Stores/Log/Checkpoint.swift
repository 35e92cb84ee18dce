#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The checkpoint beside a log, `<path>.checkpoint`: what replaying the log would rebuild
/// (each slot's record location, which slots are live, the field names, the index
/// definitions and each index's entries, the kinds of value per key), so that opening a
/// clean log reads this one file instead of every frame and sorts no index.
///
/// ```
/// checkpoint = magic[8] version:u16 flags:u16 reserved:u32
///              salt:u64 generation:u64 end:u64 logCRC:u32 reserved:u32      (the log it describes)
///              sequence:u64 frameCount:u64 liveCount:u64 liveBytes:u64 slotCount:u64
///              idType:string names:(varint count, (varint len+1 | 0 for none, utf8)*)
///              indexes:(varint len, payload of an .indexes frame)
///              kinds:(varint count, u8*) (varint count, (string, u8)*)
///              (offset:u64 length:u32 frameLength:u32){slotCount} liveWords:u64{(slotCount+63)/64}
///              entries{indexCount}                                  (when flags bit 1 is set)
///              crc:u32                                                         (CRC-32C of all before it)
/// entries    = kinds:u8                                   the kinds of value the index was given
///              varint count (varint slot, value){count}   ordered entries, ascending by value, then slot
///              varint count (varint slot){count}          slots whose value has no order, ascending
/// ```
/// Everything is little-endian; a string is a varint byte count and UTF-8; a value is
/// encoded as in a record (docs/LOG-FORMAT.md), and kinds are a `_KindSet`'s bits.
/// Flags bit 0: the kinds per key are known; bit 1: the indexes' entries follow, one
/// `entries` per index definition, in the definitions' order. Version 2 had no bit 1.
///
/// The checkpoint is a cache, never the truth: it is used only when its own checksum holds,
/// it names the log's salt and generation, the log is exactly `end` bytes long, and the
/// three-lane CRC-32C of those bytes (`_CRC32C.laneChecksum`) is `logCRC`. Any other log (grown, cut, compacted, a byte
/// flipped) is replayed as if there were no checkpoint, so deleting it is always safe.
/// Record ids are not stored: the id map is read from the records' bytes the first time a
/// write or an id lookup needs it. Index entries are checked as they are read (every live
/// slot once, in order) and used only when all of them hold; else the indexes are rebuilt
/// from the records, as after a replay.
enum _Checkpoint {
  static let magic: [UInt8] = [0x52, 0x53, 0x43, 0x4B, 0x50, 0x54, 0x0D, 0x0A]  // "RSCKPT\r\n"
  static let version: UInt16 = 3
  /// The most slots a checkpoint may claim: bounds what a damaged count can allocate.
  static let maxSlots = 1 << 40

  /// The checkpoint's path for a log.
  static func path(for log: String) -> String { log + ".checkpoint" }

  /// What a checkpoint restores.
  struct Contents {
    var end: Int
    var sequence: UInt64
    var frameCount: Int
    var liveCount: Int
    var liveBytes: Int
    /// The version of the log's newest commit and its time (microseconds since 1970; 0
    /// when unknown), which a replay reads from the commit stamps.
    var version: UInt64
    var time: UInt64
    var names: [String?]
    var indexDefinitions: [RequestIndex]
    /// The kinds of value per key in the live records (a superset), when the writer knew
    /// them; nil makes the store learn them on the first string-key query, as after a replay.
    var kinds: _KindAccumulator?
    var locations: [_RecordLocation]
    var live: _Bitset
    /// Each index's entries, in the order of ``indexDefinitions``; nil when the writer
    /// did not keep them (the store rebuilds them from the records then).
    var indexEntries: [_SortedIndex]?
  }

  /// The checksum the checkpoint keeps of the log's bytes.
  static func logChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { _CRC32C.laneChecksum(bytes) }

  /// ``logChecksum(_:)`` of bytes at the start of `mapping`, read a window at a time, each
  /// window's pages let go once read (the same checksum, without the whole log resident).
  static func logChecksum(_ bytes: UnsafeRawBufferPointer, releasing mapping: _Mapping?) -> UInt32 {
    guard let mapping, let base = bytes.baseAddress, base == mapping.base, bytes.count <= mapping.length else {
      return logChecksum(bytes)
    }
    return _CRC32C.laneChecksum(count: bytes.count) { buffer, offset in
      buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + buffer.count)]))
      mapping.releaseResidentPages(offset: offset, count: buffer.count)
      return true
    } ?? logChecksum(bytes)
  }

  /// The checksum the checkpoint keeps of the first `end` bytes of an open log, read
  /// with `pread` a window at a time; nil when they cannot be read.
  static func logChecksum(_ file: _FileDescriptor, end: Int) -> UInt32? {
    _CRC32C.laneChecksum(count: end) { buffer, offset in
      _FileIO.preadAll(file.fd, buffer.baseAddress!, buffer.count, at: offset) == 0
    }
  }

  // MARK: Writing

  /// The checkpoint's bytes for a log whose first `end` bytes have CRC-32C `logCRC`.
  static func encode(
    _ c: Contents, header: _LogFormat.Header, logCRC: UInt32, idType: String
  ) -> _ByteBuffer {
    let out = _ByteBuffer(capacity: 128 + c.locations.count * 16 + c.names.count * 16)
    magic.withUnsafeBytes { out.append($0) }
    out.appendLittleEndian(version)
    out.appendLittleEndian(UInt16(c.kinds == nil ? 0 : 1) | UInt16(c.indexEntries == nil ? 0 : 2))
    out.appendLittleEndian(UInt32(0))
    out.appendLittleEndian(header.salt)
    out.appendLittleEndian(header.generation)
    out.appendLittleEndian(UInt64(c.end))
    out.appendLittleEndian(logCRC)
    out.appendLittleEndian(UInt32(0))
    out.appendLittleEndian(c.sequence)
    out.appendLittleEndian(UInt64(c.frameCount))
    out.appendLittleEndian(UInt64(c.liveCount))
    out.appendLittleEndian(UInt64(c.liveBytes))
    out.appendLittleEndian(UInt64(c.locations.count))
    out.appendLittleEndian(c.version)
    out.appendLittleEndian(c.time)
    appendString(idType, to: out)
    out.appendVarint(UInt64(c.names.count))
    for name in c.names {
      if let name {
        out.appendVarint(UInt64(name.utf8.count) + 1)
        out.append(name)
      } else {
        out.appendVarint(0)
      }
    }
    let definitions = _LogFormat.indexDefinitionsPayload(c.indexDefinitions)
    out.appendVarint(UInt64(definitions.count))
    out.append(definitions.bytes)
    let kinds = c.kinds ?? _KindAccumulator()
    out.appendVarint(UInt64(kinds.top.count))
    kinds.top.withUnsafeBytes { out.append($0) }
    out.appendVarint(UInt64(kinds.nested.count))
    for (key, set) in kinds.nested.sorted(by: { $0.key < $1.key }) {
      appendString(key, to: out)
      out.append(set.bits)
    }
    out.reserve(c.locations.count * 16)
    for l in c.locations {
      out.appendLittleEndian(UInt64(l.offset))
      out.appendLittleEndian(l.length)
      out.appendLittleEndian(l.frameLength)
    }
    for word in c.live.words { out.appendLittleEndian(word) }
    if let indexes = c.indexEntries {
      let values = _BinaryEncoder(out: out)
      for entries in indexes {
        out.append(entries.kinds.bits)
        out.appendVarint(UInt64(entries.count - entries.unordered.count))
        entries.forEachOrdered { e in
          out.appendVarint(UInt64(e.slot))
          // Only ordered values (no arrays or objects), which write without keys or nesting.
          try? values.write(e.value, depth: 0)
        }
        out.appendVarint(UInt64(entries.unordered.count))
        for slot in entries.unordered { out.appendVarint(UInt64(slot)) }
      }
    }
    out.appendLittleEndian(_CRC32C.checksum(out.bytes))
    return out
  }

  private static func appendString(_ s: String, to out: _ByteBuffer) {
    out.appendVarint(UInt64(s.utf8.count))
    out.append(s)
  }

  /// Writes the checkpoint beside `log`: to a temporary file, then renamed over the old
  /// one, so a reader finds the old checkpoint, the new one or none, never half of one.
  /// Not forced to disk: a checkpoint that a crash leaves damaged is ignored on open.
  /// Failure is not an error of the store's (the log is complete without it): it returns
  /// false and leaves no checkpoint.
  @discardableResult
  static func write(_ bytes: _ByteBuffer, log: String) -> Bool {
    let target = path(for: log)
    let tmp = target + ".tmp"
    guard let file = try? _FileIO.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, hint: "") else {
      _FileIO.remove(target)
      return false
    }
    if _FileIO.pwriteAll(file, bytes.bytes, at: 0) != 0 || _FileIO.rename(tmp, to: target) != 0 {
      _FileIO.remove(tmp)
      _FileIO.remove(target)
      return false
    }
    return true
  }

  // MARK: Reading

  /// The checkpoint of the log whose `bytes` are mapped, or nil when there is none that
  /// describes exactly these bytes (missing, damaged, stale, of another generation or
  /// record id type): the caller then replays the log.
  /// - Parameter mapping: The mapping `bytes` lie in, from its start: the log's pages are
  ///   then let go as the checksum reads them, so checking does not make the whole log
  ///   resident.
  static func load(
    log: String, header: _LogFormat.Header, bytes: UnsafeRawBufferPointer, idType: String,
    mapping: _Mapping? = nil
  )
    -> Contents?
  {
    guard let file = try? _FileIO.open(path(for: log), O_RDONLY | O_NONBLOCK, hint: ""),
      (try? _FileIO.checkRegular(file)) != nil, let size = try? _FileIO.size(file), size >= 64 + 4,
      size <= 64 + 4 + maxSlots
    else { return nil }
    // Read straight into the array's storage: zeroing megabytes first would cost a part
    // of the open the read itself does not.
    var code: Int32 = 0
    let buffer = [UInt8](unsafeUninitializedCapacity: size) { out, count in
      code = _FileIO.preadAll(file.fd, out.baseAddress!, size, at: 0)
      count = code == 0 ? size : 0
    }
    guard code == 0 else { return nil }
    return buffer.withUnsafeBytes { checkpoint -> Contents? in
      let body = UnsafeRawBufferPointer(rebasing: checkpoint[..<(size - 4)])
      let stored = UnsafeRawBufferPointer(rebasing: checkpoint[(size - 4)...]).loadUnaligned(as: UInt32.self)
      guard UInt32(littleEndian: stored) == _CRC32C.checksum(body) else { return nil }
      do throws(_CodecError) {
        return try parse(body, header: header, log: bytes, idType: idType, mapping: mapping)
      } catch {
        return nil
      }
    }
  }

  /// Reads a checkpoint whose checksum holds; nil when it describes another log.
  private static func parse(
    _ body: UnsafeRawBufferPointer, header: _LogFormat.Header, log: UnsafeRawBufferPointer, idType: String,
    mapping: _Mapping?
  ) throws(_CodecError) -> Contents? {
    var r = _ByteReader(body)
    guard magic.elementsEqual(try r.readBytes(8)), try r.readLittleEndian(UInt16.self) == version else {
      return nil
    }
    let flags = try r.readLittleEndian(UInt16.self)
    _ = try r.readLittleEndian(UInt32.self)
    let salt = try r.readLittleEndian(UInt64.self)
    let generation = try r.readLittleEndian(UInt64.self)
    let end = try r.readLittleEndian(UInt64.self)
    let logCRC = try r.readLittleEndian(UInt32.self)
    _ = try r.readLittleEndian(UInt32.self)
    // The log it describes, and only that one: same file identity, same length, same bytes.
    guard salt == header.salt, generation == header.generation, end == UInt64(log.count),
      logChecksum(log, releasing: mapping) == logCRC
    else { return nil }
    let sequence = try r.readLittleEndian(UInt64.self)
    let frameCount = try r.readLittleEndian(UInt64.self)
    let liveCount = try r.readLittleEndian(UInt64.self)
    let liveBytes = try r.readLittleEndian(UInt64.self)
    let slotCount = try r.readLittleEndian(UInt64.self)
    let commitVersion = try r.readLittleEndian(UInt64.self)
    let commitTime = try r.readLittleEndian(UInt64.self)
    guard try readString(&r) == idType, slotCount <= UInt64(r.remaining / 16), liveCount <= slotCount,
      frameCount <= end, liveBytes <= end
    else { return nil }
    var names: [String?] = []
    let nameCount = try r.readLength(max: Swift.min(_KeyTable.maxCount, r.remaining))
    names.reserveCapacity(nameCount)
    for _ in 0..<nameCount {
      let n = try r.readLength(max: r.remaining + 1)
      names.append(n == 0 ? nil : String(decoding: try r.readBytes(n - 1), as: UTF8.self))
    }
    let definitionsLength = try r.readLength(max: r.remaining)
    let definitions = try _LogFormat.parseIndexDefinitions(try r.readBytes(definitionsLength))
    var kinds = _KindAccumulator()
    let topCount = try r.readLength(max: r.remaining)
    kinds.top = Array(try r.readBytes(topCount))
    let nestedCount = try r.readLength(max: r.remaining)
    for _ in 0..<nestedCount {
      let key = try readString(&r)
      kinds.nested[key] = _KindSet(bits: try r.readByte())
    }
    let slots = Int(slotCount)
    let words = (slots + 63) / 64
    let hasEntries = flags & 2 != 0
    guard hasEntries ? r.remaining >= slots * 16 + words * 8 : r.remaining == slots * 16 + words * 8 else {
      throw r.error("the slot tables have the wrong size")
    }
    // The tables' size was checked above: read them with one bounds check, not three per slot.
    let table = try r.readBytes(slots * 16)
    let firstRecord = UInt64(_LogFormat.headerSize)
    let endOffset = UInt64(end)
    var outside = false
    let locations = [_RecordLocation](unsafeUninitializedCapacity: slots) { out, initialized in
      initialized = 0
      for i in 0..<slots {
        let at = i &* 16
        let offset = UInt64(littleEndian: table.loadUnaligned(fromByteOffset: at, as: UInt64.self))
        let length = UInt32(littleEndian: table.loadUnaligned(fromByteOffset: at &+ 8, as: UInt32.self))
        let frameLength = UInt32(littleEndian: table.loadUnaligned(fromByteOffset: at &+ 12, as: UInt32.self))
        // Every location must lie inside the log: a record read never leaves the mapping.
        guard offset >= firstRecord, offset <= endOffset, UInt64(length) <= endOffset - offset,
          frameLength > length, Int(frameLength - length) <= _LogFormat.maxFrameHeader
        else {
          outside = true
          return
        }
        (out.baseAddress! + i).initialize(to: _RecordLocation(offset: Int(offset), length: length, frameLength: frameLength))
        initialized = i + 1
      }
    }
    if outside { throw r.error("a record location lies outside the log") }
    let wordBytes = try r.readBytes(words * 8)
    let bits = (0..<words).map { UInt64(littleEndian: wordBytes.loadUnaligned(fromByteOffset: $0 &* 8, as: UInt64.self)) }
    guard let live = _Bitset(words: bits, count: slots) else { throw r.error("bits set past the last slot") }
    guard live.popCount == Int(liveCount) else {
      throw r.error("the live count disagrees with the live slots")
    }
    let indexEntries = hasEntries ? try readIndexEntries(&r, arities: definitions.map(\.keys.count), live: live) : nil
    guard r.isAtEnd else { throw r.error("bytes past the checkpoint's last table") }
    let ids = Dictionary(uniqueKeysWithValues: names.enumerated().compactMap { i, n in n.map { ($0, i) } })
    guard ids.count == names.compactMap({ $0 }).count else { throw r.error("a field name is defined twice") }
    return Contents(
      end: Int(end), sequence: sequence, frameCount: Int(frameCount), liveCount: Int(liveCount),
      liveBytes: Int(liveBytes), version: commitVersion, time: commitTime, names: names,
      indexDefinitions: definitions,
      kinds: flags & 1 != 0 ? kinds : nil,
      locations: locations,
      live: live,
      indexEntries: indexEntries)
  }

  /// Reads `count` indexes' entries, checking that each holds every live slot once, in
  /// order: an index restored from them is the one the writer held, or none is (nil, and
  /// the store rebuilds its indexes from the records). Entries that do not hold are read
  /// to their end all the same; only bytes that do not parse make the checkpoint unusable.
  private static func readIndexEntries(_ r: inout _ByteReader, arities: [Int], live: _Bitset) throws(_CodecError)
    -> [_SortedIndex]?
  {
    var indexes: [_SortedIndex] = []
    indexes.reserveCapacity(arities.count)
    var valid = true
    let liveCount = live.popCount
    for arity in arities {
      var index = _SortedIndex(arity: arity)
      var kinds = _KindSet()
      kinds.bits = try r.readByte()
      index.formKinds(kinds)
      var seen = _Bitset(words: [UInt64](repeating: 0, count: live.words.count), count: live.capacity)!
      func take(_ slot: Int) -> Bool {
        guard slot < live.capacity, live[slot], !seen[slot] else { return false }
        seen[slot] = true
        return true
      }
      let ordered = try r.readLength(max: r.remaining)
      for _ in 0..<ordered {
        let slot = try r.readLength(max: live.capacity)
        let value = try _BinaryValue.read(&r, names: [])
        if valid { valid = take(slot) && index.appendInOrder(_IndexEntry(value: value, slot: slot)) }
      }
      let unordered = try r.readLength(max: r.remaining)
      for _ in 0..<unordered {
        let slot = try r.readLength(max: live.capacity)
        if valid { valid = take(slot) && index.appendUnordered(slot) }
      }
      valid = valid && index.count == liveCount
      indexes.append(index)
    }
    return valid ? indexes : nil
  }

  /// The field names as a key table; nil when they cannot form one.
  static func keyTable(_ names: [String?]) -> _KeyTable? {
    var keys = _KeyTable()
    for (id, name) in names.enumerated() {
      guard let name else { continue }
      do throws(_CodecError) { try keys.define(id: id, name: name) } catch { return nil }
    }
    return keys
  }

  private static func readString(_ r: inout _ByteReader) throws(_CodecError) -> String {
    let n = try r.readLength(max: r.remaining)
    return String(decoding: try r.readBytes(n), as: UTF8.self)
  }
}
