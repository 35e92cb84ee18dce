import _RequestSetCRC32C

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI, ext4,
/// LevelDB and RocksDB: with the CPU's instruction where there is one (SSE 4.2 on x86-64,
/// the CRC extension on arm64), else slicing-by-8 in software. Both give the same result
/// (a test compares them on every length and alignment).
///
/// `checksum("123456789")` is `0xE306_9283`.
enum _CRC32C {
  /// Whether `update` uses the CPU's instruction, decided once per process.
  static let usesHardware: Bool = _requestset_crc32c_hardware_available() != 0
  /// Eight 256-entry tables, one after the other: table k advances a byte k positions
  /// further, so the main loop folds eight bytes per step.
  static let tables: [UInt32] = {
    var t = [UInt32](repeating: 0, count: 8 * 256)
    for i in 0..<256 {
      var c = UInt32(i)
      for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
      t[i] = c
    }
    for i in 0..<256 {
      for k in 1..<8 {
        let prev = t[(k - 1) * 256 + i]
        t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
      }
    }
    return t
  }()

  /// The running state before any byte: `update` from here, then `finish`.
  static let initial: UInt32 = 0xFFFF_FFFF

  /// The checksum of `bytes`.
  static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { finish(update(initial, bytes)) }

  static func checksum(_ bytes: [UInt8]) -> UInt32 {
    bytes.withUnsafeBytes { checksum($0) }
  }

  @inline(__always)
  static func finish(_ state: UInt32) -> UInt32 { ~state }

  /// Folds `bytes` into a running state.
  static func update(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return state }
    if usesHardware { return _requestset_crc32c_update(state, base, bytes.count) }
    return softwareUpdate(state, bytes)
  }

  /// A checksum of large `bytes` in three lanes the CPU runs side by side: the bytes are
  /// cut into three parts (the first two `count / 3` rounded down to a multiple of 8, the
  /// third the rest), each part's CRC-32C is taken, and the three are combined as
  /// `a ^ rotl(b, 11) ^ rotl(c, 22)`. Any change confined to one part changes that part's
  /// CRC and so the result. About three times as fast as ``checksum(_:)`` with the
  /// instruction; what the log checkpoint keeps of the log's bytes.
  static func laneChecksum(_ bytes: UnsafeRawBufferPointer, software: Bool = false) -> UInt32 {
    let lane = bytes.count / 3 & ~7
    var states: (UInt32, UInt32, UInt32) = (initial, initial, initial)
    if lane > 0, let base = bytes.baseAddress {
      if usesHardware && !software {
        withUnsafeMutableBytes(of: &states) { s in
          _requestset_crc32c_update3(
            s.baseAddress!.assumingMemoryBound(to: UInt32.self), base, base + lane, base + 2 * lane, lane)
        }
      } else {
        states.0 = softwareUpdate(states.0, UnsafeRawBufferPointer(rebasing: bytes[0..<lane]))
        states.1 = softwareUpdate(states.1, UnsafeRawBufferPointer(rebasing: bytes[lane..<2 * lane]))
        states.2 = softwareUpdate(states.2, UnsafeRawBufferPointer(rebasing: bytes[2 * lane..<3 * lane]))
      }
    }
    let tail = UnsafeRawBufferPointer(rebasing: bytes[(3 * lane)...])
    states.2 = software ? softwareUpdate(states.2, tail) : update(states.2, tail)
    func rotl(_ v: UInt32, _ n: UInt32) -> UInt32 { (v << n) | (v >> (32 - n)) }
    return finish(states.0) ^ rotl(finish(states.1), 11) ^ rotl(finish(states.2), 22)
  }

  /// Folds `bytes` into a running state with the slicing-by-8 tables: the fallback where
  /// the CPU has no CRC-32C instruction, and the reference the hardware path is tested
  /// against.
  static func softwareUpdate(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard var p = bytes.baseAddress, bytes.count > 0 else { return state }
    var n = bytes.count
    var crc = state
    return tables.withUnsafeBufferPointer { tb in
      let t = tb.baseAddress!
      while n >= 8 {
        let lo = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) ^ crc
        let hi = UInt32(littleEndian: (p + 4).loadUnaligned(as: UInt32.self))
        crc =
          t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
          ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
          ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
          ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
        p += 8
        n -= 8
      }
      while n > 0 {
        crc = (crc >> 8) ^ t[Int((crc ^ UInt32(p.load(as: UInt8.self))) & 0xFF)]
        p += 1
        n -= 1
      }
      return crc
    }
  }

  /// LevelDB's masking: a CRC stored next to the data it covers is rotated and offset, so
  /// that the CRC of bytes that themselves embed CRCs does not degenerate.
  @inline(__always)
  static func mask(_ crc: UInt32) -> UInt32 { ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8 }

  @inline(__always)
  static func unmask(_ masked: UInt32) -> UInt32 {
    let rot = masked &- 0xA282_EAD8
    return (rot >> 17) | (rot << 15)
  }
}
