#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension _LogState {
  /// Rewrites the live records into a new file and swaps it in atomically.
  ///
  /// The new file is written next to the log (`<log>.compacting`), forced to disk, renamed
  /// over the log, and the directory is forced to disk, so after a crash at any point the
  /// path holds either the old log or the complete new one. Records keep their store
  /// order; their bytes are copied, not re-encoded. Snapshots taken before keep reading
  /// the old file through their own mapping.
  mutating func compact() throws {
    try checkWritable()
    let source = try currentMapping()
    let tmp = path + ".compacting"
    _FileIO.remove(tmp)
    let target = try _FileIO.open(
      tmp, O_RDWR | O_CREAT | O_TRUNC, hint: "Compaction needs to create a file next to the log; check the directory.")
    var swapped = false
    defer { if !swapped { _FileIO.remove(tmp) } }

    let newHeader = _LogFormat.Header(salt: UInt64.random(in: .min ... .max), generation: header.generation &+ 1)
    let salt = _LogFormat.saltState(newHeader.salt)
    let buffer = _ByteBuffer(capacity: 1 << 20)
    newHeader.encoded().withUnsafeBytes { buffer.append($0) }
    var flushed = 0
    var sequence: UInt64 = 0

    func flush() throws {
      let code = _FileIO.pwriteAll(target.fd, buffer.bytes, at: flushed)
      if code != 0 {
        throw _FileIO.failure(
          "write the compacted log", tmp, code, "The log itself is unchanged; free disk space and compact again.")
      }
      flushed += buffer.count
      buffer.count = 0
    }

    // Every key name, so record bytes copy over unchanged.
    let defs = _ByteBuffer(capacity: 1 << 12)
    func flushKeys() {
      guard defs.count > 0 else { return }
      sequence += 1
      _LogFormat.appendFrame(.keys, sequence: sequence, payload: defs.bytes, saltState: salt, to: buffer)
      defs.count = 0
    }
    for id in 0..<index.keys.count {
      guard let name = index.keys.name(id) else { continue }
      if defs.count + name.utf8.count + 20 > _LogFormat.maxPayload { flushKeys() }
      defs.appendVarint(UInt64(id))
      defs.appendVarint(UInt64(name.utf8.count))
      defs.append(name)
    }
    flushKeys()
    if !index.indexDefinitions.isEmpty {
      sequence += 1
      let payload = _LogFormat.indexDefinitionsPayload(index.indexDefinitions)
      withExtendedLifetime(payload) {
        _ = _LogFormat.appendFrame(.indexes, sequence: sequence, payload: payload.bytes, saltState: salt, to: buffer)
      }
    }

    var locations: [_RecordLocation] = []
    locations.reserveCapacity(index.liveCount)
    var slotMap = [Int](repeating: -1, count: index.locations.count)
    var liveBytes = 0
    if let source {
      for slot in 0..<index.locations.count where index.live[slot] {
        let old = index.locations[slot]
        sequence += 1
        let frameStart = buffer.count
        let at = _LogFormat.appendFrame(
          .put, sequence: sequence, payload: source.bytes(old.offset, Int(old.length)), saltState: salt, to: buffer)
        let frameLength = buffer.count - frameStart
        locations.append(_RecordLocation(offset: flushed + at, length: old.length, frameLength: UInt32(frameLength)))
        liveBytes += frameLength
        slotMap[slot] = locations.count - 1
        if buffer.count >= 4 << 20 { try flush() }
      }
    }
    // An empty commit closes the file: with no records after them, the key frames would
    // otherwise look like an interrupted write and be cut off on the next open.
    sequence += 1
    let zero = _ByteBuffer(capacity: 16)
    zero.appendVarint(0)
    _LogFormat.appendFrame(.commit, sequence: sequence, payload: zero.bytes, saltState: salt, to: buffer)
    try flush()
    let synced = _FileIO.sync(target.fd)
    if synced != 0 {
      throw _FileIO.failure("fsync the compacted log", tmp, synced, "The log itself is unchanged; compact again later.")
    }
    let renamed = _FileIO.rename(tmp, to: path)
    if renamed != 0 {
      throw _FileIO.failure("rename the compacted log over", path, renamed, "The log itself is unchanged.")
    }
    swapped = true

    // From here the new file is the log: switch to it whatever happens next.
    index.locations = locations
    index.live = _Bitset()
    for _ in 0..<locations.count { index.live.append(true) }
    index.liveCount = locations.count
    index.slots = index.slots.mapValues { slotMap[$0] }
    indexes.renumber(slotMap)
    index.liveBytes = liveBytes
    index.sequence = sequence
    index.end = flushed
    file = target
    header = newHeader
    saltState = salt
    mapping = nil
    // The version is not bumped: the contents are the same, and a write through a query
    // that read before the compaction must not see a conflict.
    do {
      try _FileIO.syncDirectory(_FileIO.directory(of: path))
    } catch let error as RequestSetError {
      failure = error
      try checkUsable()
    }
  }
}

/// Creating a log file: written beside the path, forced to disk and renamed into place,
/// so no one ever sees a log without its header.
enum _LogFiles {
  static func create(_ path: String) throws {
    let tmp = path + ".creating"
    _FileIO.remove(tmp)
    let fd = try _FileIO.open(
      tmp, O_WRONLY | O_CREAT | O_TRUNC,
      hint: "Check that the directory exists and is writable, or open an existing log with readOnly: true.")
    var done = false
    defer { if !done { _FileIO.remove(tmp) } }
    let header = _LogFormat.Header(salt: UInt64.random(in: .min ... .max), generation: 1).encoded()
    let code = header.withUnsafeBytes { _FileIO.pwriteAll(fd.fd, $0, at: 0) }
    if code != 0 { throw _FileIO.failure("write the header of", tmp, code, "Check free disk space.") }
    let synced = _FileIO.sync(fd.fd)
    if synced != 0 { throw _FileIO.failure("fsync", tmp, synced, "Check the disk.") }
    let renamed = _FileIO.rename(tmp, to: path)
    if renamed != 0 { throw _FileIO.failure("rename a new log to", path, renamed, "Check the directory.") }
    done = true
    try _FileIO.syncDirectory(_FileIO.directory(of: path))
  }
}
