import _RequestSetCRC32C

/// ``_CRC32C/laneChecksum(_:software:)`` of bytes read a window at a time, so that a
/// checksum of a whole log costs a fixed buffer, not the log's size in resident memory.
extension _CRC32C {
  /// The bytes each lane reads per step.
  static let streamingWindow = 1 << 18

  /// The lane checksum of the `count` bytes that `read` yields, the same number
  /// ``laneChecksum(_:software:)`` gives for those bytes in memory.
  ///
  /// Checksumming a mapped file touches every page, and each counts in the process's
  /// resident memory until the mapping goes: a writer closing a 100 MB log grew by 100 MB
  /// just to write its checkpoint. Reading through a small buffer keeps the file in the
  /// page cache, where it is anyway.
  ///
  /// ```swift
  /// let crc = _CRC32C.laneChecksum(count: end) { buffer, offset in
  ///   _FileIO.preadAll(fd, buffer.baseAddress!, buffer.count, at: offset) == 0
  /// }
  /// ```
  /// - Parameters:
  ///   - count: How many bytes, from offset 0.
  ///   - window: The bytes each lane reads per step: a positive multiple of 8.
  ///   - read: Fills the buffer with the bytes at the offset; false when it cannot.
  /// - Returns: The checksum, or nil when a read failed.
  /// - Complexity: O(*n*) in `count`, with three buffers of ``streamingWindow`` bytes.
  static func laneChecksum(
    count: Int, window: Int = streamingWindow, read: (UnsafeMutableRawBufferPointer, Int) -> Bool
  ) -> UInt32? {
    let lane = count / 3 & ~7
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 3 * window, alignment: 8)
    defer { buffer.deallocate() }
    let a = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<window])
    let b = UnsafeMutableRawBufferPointer(rebasing: buffer[window..<(2 * window)])
    let c = UnsafeMutableRawBufferPointer(rebasing: buffer[(2 * window)...])
    var states: (UInt32, UInt32, UInt32) = (initial, initial, initial)
    var offset = 0
    while offset < lane {
      // A multiple of 8 while lanes last, as the three-lane instruction loop needs.
      let n = Swift.min(window, lane - offset)
      let (pa, pb, pc) = (
        UnsafeMutableRawBufferPointer(rebasing: a[0..<n]), UnsafeMutableRawBufferPointer(rebasing: b[0..<n]),
        UnsafeMutableRawBufferPointer(rebasing: c[0..<n])
      )
      guard read(pa, offset), read(pb, lane + offset), read(pc, 2 * lane + offset) else { return nil }
      if usesHardware {
        withUnsafeMutableBytes(of: &states) { s in
          _requestset_crc32c_update3(
            s.baseAddress!.assumingMemoryBound(to: UInt32.self), pa.baseAddress!, pb.baseAddress!,
            pc.baseAddress!, n)
        }
      } else {
        states.0 = softwareUpdate(states.0, UnsafeRawBufferPointer(pa))
        states.1 = softwareUpdate(states.1, UnsafeRawBufferPointer(pb))
        states.2 = softwareUpdate(states.2, UnsafeRawBufferPointer(pc))
      }
      offset += n
    }
    var at = 3 * lane
    while at < count {
      let n = Swift.min(window, count - at)
      let part = UnsafeMutableRawBufferPointer(rebasing: a[0..<n])
      guard read(part, at) else { return nil }
      states.2 = update(states.2, UnsafeRawBufferPointer(part))
      at += n
    }
    func rotl(_ v: UInt32, _ n: UInt32) -> UInt32 { (v << n) | (v >> (32 - n)) }
    return finish(states.0) ^ rotl(finish(states.1), 11) ^ rotl(finish(states.2), 22)
  }
}
