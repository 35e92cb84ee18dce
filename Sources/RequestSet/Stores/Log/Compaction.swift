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
  ///
  /// With `options.keepHistory` (and `keepingHistory`), the records written are those of
  /// the oldest commit kept, and the commits after it follow frame by frame (see
  /// Compaction+History.swift); a salvage after damage keeps none.
  ///
  /// With `migrating`, every record is decoded, changed by the run's migrations and
  /// encoded again, the run's names are recorded in the new file's key table (see
  /// `_MigrationMarker`), index definitions follow renamed keys, and no history is kept
  /// (the records of older commits have the old shape). The rewrite is one new commit.
  /// A migration that throws leaves the log as it was.
  mutating func compact(keepingHistory: Bool = true, migrating run: _MigrationRun? = nil) throws {
    try checkWritable()
    try loadSlots()
    let source = try currentMapping()
    let kept = keepingHistory && run == nil ? try keptHistory(source) : nil
    let base = kept?.base ?? index
    let tmp = path + ".compacting"
    let target = try Self.createCompactionFile(tmp)
    var swapped = false
    defer { if !swapped { _FileIO.remove(tmp) } }

    let newHeader = _LogFormat.Header(salt: UInt64.random(in: .min ... .max), generation: header.generation &+ 1)
    let salt = _LogFormat.saltState(newHeader.salt)
    let buffer = _ByteBuffer(capacity: 1 << 20)
    newHeader.encoded().withUnsafeBytes { buffer.append($0) }
    var flushed = 0
    var sequence: UInt64 = 0

    func flush() throws {
      let code = _FileIO.pwriteAll(target, buffer.bytes, at: flushed)
      if code != 0 {
        throw _FileIO.failure(
          "write the compacted log", tmp, code, "The log itself is unchanged. " + _FileIO.writeHint(code))
      }
      flushed += buffer.count
      buffer.count = 0
    }

    // Every key name, so record bytes copy over unchanged; a migration's records may
    // define more (written just before the first record that uses them).
    let migrated = run.map { _ in _BinaryEncoder(out: _ByteBuffer(capacity: 1 << 12)) }
    var keyTable = index.keys
    if let run {
      for name in run.names { _ = try keyTable.intern(_MigrationMarker.prefix + name) }
    }
    let defs = _ByteBuffer(capacity: 1 << 12)
    func flushKeys() {
      guard defs.count > 0 else { return }
      sequence += 1
      _LogFormat.appendFrame(.keys, sequence: sequence, payload: defs.bytes, saltState: salt, to: buffer)
      defs.count = 0
    }
    func defineKeys(_ range: Range<Int>, of table: _KeyTable) {
      for id in range {
        guard let name = table.name(id) else { continue }
        if defs.count + name.utf8.count + 20 > _LogFormat.maxPayload { flushKeys() }
        defs.appendVarint(UInt64(id))
        defs.appendVarint(UInt64(name.utf8.count))
        defs.append(name)
      }
      flushKeys()
    }
    defineKeys(0..<keyTable.count, of: keyTable)
    var definedKeys = keyTable.count
    migrated?.keys = keyTable
    // Top-level steps edit records' bytes; the rest decode and encode whole records.
    let editor = try run.flatMap { run in try migrated.flatMap { try _LogMigrationEditor(run, encoder: $0, ids: index.keys.ids) } }
    var definitions = index.indexDefinitions
    if let run {
      var seen = Set<String>()
      definitions = definitions.compactMap { d in
        // A text index's keys follow by the same rule as any index's.
        if let textKeys = _TextIndex.keys(of: d) {
          let moved = textKeys.compactMap { run.indexKey(after: $0) }
          guard moved.count == textKeys.count, Set(moved).count == moved.count else { return nil }
          return _TextIndex.definition(moved)
        }
        let keys = d.keys.map { run.indexKey(after: $0) }
        // A key that went takes the index with it; so does a rename that leaves a key
        // twice in one index (the SQL stores drop it alike).
        guard keys.allSatisfy({ $0 != nil }), Set(keys).count == keys.count,
          seen.insert(_CompositeKey.identity(keys.map { $0! })).inserted
        else {
          return nil
        }
        return RequestIndex(keys: keys.map { $0! }, unique: d.unique)
      }
    }
    if !definitions.isEmpty {
      sequence += 1
      let payload = _LogFormat.indexDefinitionsPayload(definitions)
      withExtendedLifetime(payload) {
        _ = _LogFormat.appendFrame(.indexes, sequence: sequence, payload: payload.bytes, saltState: salt, to: buffer)
      }
    }

    var locations: [_RecordLocation] = []
    locations.reserveCapacity(index.liveCount)
    var slotMap = [Int](repeating: -1, count: index.locations.count)
    var liveBytes = 0
    if let source {
      let names = index.keys.names
      for slot in 0..<base.locations.count where base.live[slot] {
        let old = base.locations[slot]
        var payload = source.bytes(old.offset, Int(old.length))
        if let run, let migrated {
          payload = try Self.migrate(
            payload, names: names, run: run, editor: editor, encoder: migrated, path: path, at: old.offset)
          if migrated.keys.count > definedKeys {
            defineKeys(definedKeys..<migrated.keys.count, of: migrated.keys)
            definedKeys = migrated.keys.count
          }
        }
        sequence += 1
        let frameStart = buffer.count
        let at = _LogFormat.appendFrame(.put, sequence: sequence, payload: payload, saltState: salt, to: buffer)
        let frameLength = buffer.count - frameStart
        locations.append(
          _RecordLocation(offset: flushed + at, length: UInt32(payload.count), frameLength: UInt32(frameLength)))
        liveBytes += frameLength
        slotMap[slot] = locations.count - 1
        if buffer.count >= 4 << 20 { try flush() }
      }
    }
    // An empty commit closes the records: with no records after them, the key frames would
    // otherwise look like an interrupted write and be cut off on the next open. It folds
    // the puts before it into one commit, stamped with the version and time they stand for.
    sequence += 1
    let stamp =
      run != nil
      ? _LogFormat.CommitStamp(time: _LogFormat.commitTime(after: index.time), version: index.version + 1)
      : kept?.stamp ?? .init(time: index.time, version: index.version)
    let closing = _LogFormat.commitPayload(count: 0, stamp: stamp)
    withExtendedLifetime(closing) {
      _ = _LogFormat.appendFrame(.commit, sequence: sequence, payload: closing.bytes, saltState: salt, to: buffer)
    }
    if let kept, let source { try appendHistory(kept, from: source, salt: salt, sequence: &sequence, to: buffer, flush: flush) }
    try flush()
    let synced = _FileIO.sync(target)
    if synced != 0 {
      throw _FileIO.failure("fsync the compacted log", tmp, synced, "The log itself is unchanged; compact again later.")
    }
    let replayed = kept == nil ? nil : try replayCompacted(target, size: flushed, header: newHeader, into: &slotMap)
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
    if let run {
      // Indexes whose values the migration keeps are renumbered (under their new key);
      // the others are built again from the rewritten records below.
      indexes.keep(
        indexes.indexes.map { index in
          let keys = index.keys.map { run.keyKeepingValues($0) }
          return keys.allSatisfy { $0 != nil } ? _CompositeKey.identity(keys.map { $0! }) : nil
        }, renumbering: slotMap)
    } else {
      indexes.renumber(slotMap)
    }
    textIndex?.renumber(slotMap)
    index.liveBytes = liveBytes
    index.sequence = sequence
    index.end = flushed
    if let replayed { adoptCompacted(replayed) }
    file = target.renamed(to: path)
    header = newHeader
    saltState = salt
    mapping = nil
    if let migrated {
      // New shapes: the keys, kinds and index entries are those of the rewritten records.
      index.keys = migrated.keys
      index.indexDefinitions = definitions
      index.version = stamp.version
      index.time = stamp.time
      version = stamp.version
      writtenKinds = _KindAccumulator()
      probedKinds = [:]
      toObserve = _SchemaProbe.witnessLimit
      openKinds = _OpenKinds(path: path, mapping: try currentMapping(), locations: index.liveLocations, names: index.keys.names)
      let mapping = try currentMapping()
      let kept = indexes
      indexes = _IndexCatalog()
      for definition in definitions where _TextIndex.keys(of: definition) == nil {
        if let index = kept.index(for: definition._identity) {
          indexes.add(key: definition._identity, unique: definition.unique, restored: index.entries)
        } else {
          try indexes.add(
            key: definition._identity, unique: definition.unique, entries: try entries(for: definition._identity, mapping: mapping),
            typeName: "\(Element.self)", checkingExisting: false)
        }
      }
      textIndex = try definitions.lazy.compactMap(_TextIndex.keys(of:)).first.map {
        try buildTextIndex($0, mapping: mapping)
      }
    }
    // The version is not bumped: the contents are the same, and a write through a query
    // that read before the compaction must not see a conflict.
    do {
      try _FileIO.syncDirectory(_FileIO.directory(of: path))
    } catch let error as RequestSetError {
      failure = error
      try checkUsable()
    }
    writeCheckpoint()
  }
}

extension _LogState {
  /// Creates `<log>.compacting`, locked.
  ///
  /// The lock comes before any byte is written, and stays while the file takes the log's
  /// place, so the log file is locked at every moment (a second writer that opens the path
  /// after the rename finds it locked), and so that anyone who can take the lock knows the
  /// file is abandoned and may remove it (`_StaleFiles`). Such a one may take it, and
  /// remove the file, in the moment between its creation and the lock here: then the path
  /// no longer names the file locked, and another is made.
  static func createCompactionFile(_ tmp: String) throws -> _FileDescriptor {
    var attempts = 0
    while true {
      attempts += 1
      _FileIO.remove(tmp)
      let target = try _FileIO.open(
        tmp, O_RDWR | O_CREAT | O_TRUNC, hint: "Compaction needs to create a file next to the log; check the directory.")
      let locked = _FileIO.lockExclusive(target)
      if locked == 0 && _FileIO.sameFile(target, tmp) { return target }
      if (locked != 0 && locked != EWOULDBLOCK) || attempts == 100 {
        _FileIO.remove(tmp)
        throw _FileIO.failure("lock", tmp, locked == 0 ? EAGAIN : locked, "The log itself is unchanged; compact again.")
      }
      // Someone checking for an abandoned file holds it, and removes it next.
      usleep(1_000)
    }
  }
}

/// Creating and opening log files.
enum _LogFiles {
  /// Creates a log file: written beside the path, forced to disk and linked into place,
  /// so no one ever sees a log without its header. A hard link, not a rename, so that a
  /// log another writer created meanwhile is never replaced (the link fails with `EEXIST`,
  /// and that log is used).
  static func create(_ path: String) throws {
    let tmp = path + ".creating"
    _FileIO.remove(tmp)
    let fd = try _FileIO.open(
      tmp, O_WRONLY | O_CREAT | O_TRUNC,
      hint: "Check that the directory exists and is writable, or open an existing log with readOnly: true.")
    defer { _FileIO.remove(tmp) }
    let header = _LogFormat.Header(salt: UInt64.random(in: .min ... .max), generation: 1).encoded()
    let code = header.withUnsafeBytes { _FileIO.pwriteAll(fd, $0, at: 0) }
    if code != 0 { throw _FileIO.failure("write the header of", tmp, code, _FileIO.writeHint(code)) }
    let synced = _FileIO.sync(fd)
    if synced != 0 { throw _FileIO.failure("fsync", tmp, synced, _FileIO.writeHint(synced)) }
    if link(tmp, path) != 0 {
      let code = errno
      switch code {
      case EEXIST:
        return  // another writer created it first: open that one
      case EPERM, EOPNOTSUPP, ENOSYS, EMLINK:
        // A file system without hard links: rename, which replaces, is the best it allows.
        let renamed = _FileIO.rename(tmp, to: path)
        if renamed != 0 { throw _FileIO.failure("rename a new log to", path, renamed, "Check the directory.") }
      default:
        throw _FileIO.failure("link a new log to", path, code, "Check the directory.")
      }
    }
    try _FileIO.syncDirectory(_FileIO.directory(of: path))
  }

  /// Copies bytes that recovery is about to cut or leave out to `<path>.damaged-<offset>`,
  /// forced to disk, and returns the side file's path. A side file of that name that holds
  /// the same bytes is reused; when it holds other bytes, the name gets the bytes'
  /// checksum (`<path>.damaged-<offset>-<crc>`), then a random suffix.
  static func preserve(_ bytes: UnsafeRawBufferPointer, of path: String, offset: Int) throws -> String {
    let base = "\(path).damaged-\(offset)"
    let crc = String(_CRC32C.checksum(bytes), radix: 16)
    var candidates = [base, "\(base)-\(crc)"]
    for _ in 0..<8 { candidates.append("\(base)-\(crc)-\(String(UInt32.random(in: .min ... .max), radix: 16))") }
    for name in candidates {
      var fd: Int32
      repeat { fd = name.withCString { Glibc_or_Darwin_openExclusive($0) } } while fd < 0 && errno == EINTR
      if fd < 0 {
        let code = errno
        if code == EEXIST {
          if sameContents(name, bytes) { return name }
          continue
        }
        throw _FileIO.failure(
          "create", name, code,
          "Recovery keeps the bytes it cuts in this side file, and cut nothing; make the directory writable, or "
            + "open the log with readOnly: true.")
      }
      let file = _FileDescriptor(fd: fd, path: name)
      var code = _FileIO.pwriteAll(file, bytes, at: 0)
      if code == 0 { code = _FileIO.sync(file) }
      if code != 0 {
        _FileIO.remove(name)
        throw _FileIO.failure(
          "write", name, code, "Recovery keeps the bytes it cuts in this side file, and cut nothing. " + _FileIO.writeHint(code))
      }
      try _FileIO.syncDirectory(_FileIO.directory(of: path))
      return name
    }
    throw RequestSetError(
      .ioFailure,
      "Recovery could not name a side file for the bytes it cuts (\(base) and its variants exist), and cut nothing. "
        + "Move the side files away and open the log again.")
  }

  private static func sameContents(_ name: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let file = try? _FileIO.open(name, O_RDONLY | O_NONBLOCK, hint: ""), (try? _FileIO.size(file)) == bytes.count
    else { return false }
    var buffer = [UInt8](repeating: 0, count: bytes.count)
    let code = buffer.withUnsafeMutableBytes { _FileIO.preadAll(file.fd, $0.baseAddress!, bytes.count, at: 0) }
    return code == 0 && buffer.elementsEqual(bytes)
  }

  /// Opens the log for writing and takes the exclusive `flock` on the log file itself (the
  /// side lock `<path>.lock` is taken before). Because the lock is on the file, deleting
  /// `<path>.lock` lets no second writer in: it still finds the log locked.
  ///
  /// A compaction renames a new file over the path, so the file opened may stop being the
  /// log between the open and the lock; the path is then opened again.
  static func openLocked(_ path: String) throws -> _FileDescriptor {
    for _ in 0..<16 {
      if !_FileIO.exists(path) { try create(path) }
      let file = try _FileIO.open(
        path, O_RDWR | O_NONBLOCK, hint: "Check the path and its permissions, or open with readOnly: true.")
      try _FileIO.checkRegular(file)
      let code = _FileIO.lockExclusive(file)
      if code == EWOULDBLOCK {
        throw RequestSetError(
          .locked,
          "The log \(path) is locked for writing by another LogStore (in this or another process), which holds "
            + "a lock on the log file itself. Close that store first, or open this one with readOnly: true.")
      }
      if code != 0 { throw _FileIO.failure("lock", path, code, "Check that the file system supports flock.") }
      if _FileIO.sameFile(file, path) { return file }
    }
    throw RequestSetError(
      .fileChanged,
      "The log \(path) was replaced 16 times while this store tried to open it: another program keeps renaming "
        + "files over it. Stop that program and open the store again.")
  }
}

@inline(__always)
private func Glibc_or_Darwin_openExclusive(_ path: UnsafePointer<CChar>) -> Int32 {
  open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
}
