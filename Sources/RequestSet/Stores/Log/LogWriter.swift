#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import Synchronization

/// What a ``LogStore`` holds; only touched under its lock.
struct _LogState<Element: Record> {
  let path: String
  let options: LogStoreOptions
  var file: _FileDescriptor
  /// The side lock on `<path>.lock` (the log file itself is locked through `file`); nil
  /// for a read-only store, and after `close()`.
  var lock: _WriteLock?
  var header: _LogFormat.Header
  var saltState: UInt32
  var index: _LogIndex<Element.ID>
  /// A mapping that covers at least `index.end` once a snapshot needed it.
  var mapping: _Mapping?
  var version: UInt64 = 0
  /// Kinds of value per key in records written since the store opened.
  var writtenKinds = _KindAccumulator()
  /// Kinds of value per key in the records live when the store opened, learned on the
  /// first string-key query.
  var openKinds: _OpenKinds
  /// Keys learned by decoding a stored record (see `_SchemaProbe`): none until one is.
  var probedKinds: [String: _KindSet]
  /// How many more stored records to show the schema probe.
  var toObserve = _SchemaProbe.witnessLimit
  /// Set by a failure that leaves the file's state unknown: every later call throws it.
  var failure: RequestSetError?
  var report: LogRecoveryReport
  /// Scratch buffers, reused between writes.
  var payloads = _ByteBuffer(capacity: 1 << 12)
  var out = _ByteBuffer(capacity: 1 << 12)
  /// Secondary indexes, kept current by every write (see LogIndexes.swift).
  var indexes = _IndexCatalog()
  /// The full-text index, kept current by every write (see LogIndexes.swift).
  var textIndex: _TextIndex?

  /// The first pending migration of a store opened with `migratesOnOpen` off: writes
  /// throw `.migrationPending` until `migrate()` runs it.
  var migrationHold: String?

  /// Set by `close()`: every call throws `.closed`.
  var closed = false
  /// The log end and generation the checkpoint on disk describes, when the store knows it
  /// does (it read or wrote that checkpoint): a clean close then has nothing to write.
  var checkpointed: (end: Int, generation: UInt64)?

  var isReadOnly: Bool { options.readOnly }

  func checkUsable() throws {
    if closed { throw _closedError("LogStore<\(Element.self)> at \(path)") }
    if let failure {
      throw RequestSetError(
        .storeFailed,
        "The LogStore at \(path) stopped after an earlier failure and refuses further use: \(failure.message) "
          + "Create a new LogStore for the path to reopen the log and see what it holds.",
        underlying: failure)
    }
  }

  func checkWritable() throws {
    try checkUsable()
    if isReadOnly {
      throw RequestSetError(
        .readOnly,
        "The LogStore at \(path) was opened read-only and cannot write. Open it with readOnly: false "
          + "(only one writer may hold a log at a time).")
    }
    if let migrationHold { throw migrationPendingError(migrationHold) }
  }

  /// Releases the write locks and the store's mapping; snapshots keep their own mapping.
  /// Returns false when the store was closed already.
  mutating func close() -> Bool {
    guard !closed else { return false }
    writeCheckpoint()
    closed = true
    mapping = nil
    openKinds = .empty
    indexes = _IndexCatalog()
    textIndex = nil
    if lock != nil {
      // The log file's own lock belongs to this descriptor, which snapshots may keep open.
      _ = flock(file.fd, LOCK_UN)
      lock = nil
    }
    return true
  }

  /// Writes `<path>.checkpoint` for the log as it stands (see Checkpoint.swift), unless
  /// the one there describes it already. Only a writer that has not failed writes one; a
  /// failure to write it costs the next open a replay, nothing more.
  mutating func writeCheckpoint() {
    guard lock != nil, !closed, failure == nil, index.end > _LogFormat.headerSize,
      index.end >= options.checkpointMinimumBytes
    else { return }
    if let done = checkpointed, done.end == index.end, done.generation == header.generation { return }
    // Read through a small buffer, not the mapping, which would make the whole log
    // resident (see `_CRC32C.laneChecksum(count:read:)`).
    guard (try? file.checkCovers(index.end)) != nil, let crc = _Checkpoint.logChecksum(file, end: index.end) else {
      return
    }
    var kinds = openKinds.knownValue()
    kinds?.formUnion(writtenKinds)
    // Frames are numbered from 1 without gaps in a log a writer holds (replay cuts or
    // rewrites any other), so the last number is the count a replay would report.
    let contents = _Checkpoint.Contents(
      end: index.end, sequence: index.sequence, frameCount: Int(index.sequence),
      liveCount: index.liveCount, liveBytes: index.liveBytes, version: index.version, time: index.time,
      names: index.keys.names,
      indexDefinitions: index.indexDefinitions, kinds: kinds, locations: index.locations, live: index.live,
      // The entries, when the catalog is the one the definitions describe (not while an
      // open that salvages compacts before building it), so the next open sorts nothing.
      indexEntries: indexes.descriptions == index.indexDefinitions ? indexes.indexes.map(\.entries) : nil)
    let bytes = _Checkpoint.encode(contents, header: header, logCRC: crc, idType: String(reflecting: Element.ID.self))
    if _Checkpoint.write(bytes, log: path) { checkpointed = (index.end, header.generation) }
  }

  // MARK: Encoding frames

  /// Appends key-definition frames for the names defined since `mark`.
  private func appendKeyFrames(since mark: Int, sequence: inout UInt64) {
    guard index.keys.count > mark else { return }
    let defs = _ByteBuffer(capacity: 256)
    func flush() {
      sequence += 1
      _LogFormat.appendFrame(.keys, sequence: sequence, payload: defs.bytes, saltState: saltState, to: out)
      defs.count = 0
    }
    for id in mark..<index.keys.count {
      let name = index.keys.name(id) ?? ""
      if defs.count + name.utf8.count + 20 > _LogFormat.maxPayload { flush() }
      defs.appendVarint(UInt64(id))
      defs.appendVarint(UInt64(name.utf8.count))
      defs.append(name)
    }
    flush()
  }

  /// Writes `out` at the end of the file and makes it as durable as the options say.
  ///
  /// On a write error the file is cut back to where it ended, so it never keeps half a
  /// write, and the store stays usable; if even that fails, or an fsync fails (after which
  /// the kernel may have dropped the dirty pages, so neither retrying nor trusting the
  /// file is safe), the store enters the failed state.
  mutating func writeOut() throws {
    // Appending to a file someone else cut short would leave a hole: stop instead.
    do {
      try file.checkCovers(index.end)
    } catch let error as RequestSetError where error.code == .fileChanged {
      failure = error
      throw error
    }
    let code = _FileIO.pwriteAll(file, out.bytes, at: index.end)
    if code == 0 { file.noteSize(atLeast: index.end + out.count) }
    if code != 0 {
      let error = _FileIO.failure(
        "append to", path, code, "Nothing was written (the file was cut back to its last complete write). "
          + _FileIO.writeHint(code))
      let cut = _FileIO.truncate(file, to: index.end)
      if cut != 0 {
        failure = _FileIO.failure(
          "cut back a failed write to", path, cut, "The file may end in a partial write, which reopening cuts off.")
        try checkUsable()
      }
      throw error
    }
    if options.durability == .fsync {
      let s = _FileIO.sync(file)
      if s != 0 {
        failure = _FileIO.failure(
          "fsync", path, s, "The write may or may not be on disk; an fsync failure is not retried.")
        try checkUsable()
      }
    }
  }

  /// Drops a scratch buffer that a large write grew past 4 MiB. Smaller ones stay: a
  /// batch of 20,000 typical records fills 2–3 MB, and regrowing the buffers from 4 KiB
  /// at every commit was a tenth of an import's page faults.
  private mutating func shrinkScratch() {
    if payloads.capacity > 1 << 22 { payloads = _ByteBuffer(capacity: 1 << 12) }
    if out.capacity > 1 << 22 { out = _ByteBuffer(capacity: 1 << 12) }
  }

  // MARK: Writes

  /// Appends changes and indexes them: batch frames closed by a commit frame that stamps
  /// the commit's time and version, so that replay applies all or none and history can
  /// name it (a single change is a batch of one). On error nothing is in the file or the
  /// index.
  mutating func write(_ changes: [RecordChange<Element>]) throws {
    try checkWritable()
    try loadSlots()
    defer { shrinkScratch() }
    let keyMark = index.keys.count
    payloads.count = 0
    out.count = 0
    let n = changes.count
    // Per change: its id, where its payload ends in `payloads`, and whether it deletes.
    var ids: [Element.ID] = []
    ids.reserveCapacity(n)
    var ends: [Int] = []
    ends.reserveCapacity(n)
    var deletes: [Bool] = []
    deletes.reserveCapacity(n)
    let encoder = _BinaryEncoder(out: payloads)
    swap(&encoder.keys, &index.keys)
    do {
      for i in 0..<n {
        let start = payloads.count
        switch changes[i] {
        case .insert(let r), .save(let r):
          ids.append(r.id)
          deletes.append(false)
          try encoder.encodeID(r.id)
          try encoder.encodeRoot(r)
        case .delete(let id):
          ids.append(id)
          deletes.append(true)
          try encoder.encodeID(id)
        }
        let size = payloads.count - start
        guard size <= _LogFormat.maxPayload else {
          throw RequestSetError(
            .encodingFailed,
            "The record with id \(ids[i]) encodes to \(size) bytes, over the log's \(_LogFormat.maxPayload)-byte limit "
              + "per record. Store large blobs in files and keep their paths in the record.")
        }
        ends.append(payloads.count)
      }
    } catch {
      swap(&encoder.keys, &index.keys)
      index.keys.rollback(to: keyMark)
      throw error
    }
    swap(&encoder.keys, &index.keys)

    // Each written record's index values, read back from its bytes; the unique check.
    var newValues: [[FieldValue]?] = []
    var oldMapping: _Mapping? = nil
    let indexPaths = indexes.indexes.map { $0.keys.map { keyIDs($0) } }
    if !indexes.isEmpty {
      do {
        let names = index.keys.names
        var s = 0
        for i in 0..<n {
          if deletes[i] {
            newValues.append(nil)
          } else {
            var r = _ByteReader(base: payloads.base, end: ends[i], position: s)
            try _BinaryValue.skip(&r)
            newValues.append(try indexPaths.map { p throws(_CodecError) in try Self.indexValue(r, p, names: names) })
          }
          s = ends[i]
        }
        oldMapping = try currentMapping()
        if indexes.hasUnique {
          let m = oldMapping
          try indexes.checkUnique(
            Array(zip(ids, newValues)), typeName: "\(Element.self)", slotOf: { index.slots[$0] },
            storedValue: { slot, u in (try? storedIndexValues(slot: slot, mapping: m, paths: [indexPaths[u]])[0]) ?? .null })
        }
      } catch {
        index.keys.rollback(to: keyMark)
        throw error
      }
    }

    var sequence = index.sequence
    appendKeyFrames(since: keyMark, sequence: &sequence)
    var locations: [_RecordLocation] = []
    locations.reserveCapacity(n)
    var start = 0
    for i in 0..<n {
      let type: _LogFormat.FrameType = deletes[i] ? .batchDelete : .batchPut
      sequence += 1
      let frameStart = out.count
      let at = _LogFormat.appendFrame(
        type, sequence: sequence, payload: UnsafeRawBufferPointer(start: payloads.base + start, count: ends[i] - start),
        saltState: saltState, to: out)
      locations.append(
        _RecordLocation(
          offset: index.end + at, length: UInt32(ends[i] - start), frameLength: UInt32(out.count - frameStart)))
      start = ends[i]
    }
    sequence += 1
    let stamp = _LogFormat.CommitStamp(time: _LogFormat.commitTime(after: index.time), version: index.version &+ 1)
    let commit = _LogFormat.commitPayload(count: n, stamp: stamp)
    withExtendedLifetime(commit) {
      _ = _LogFormat.appendFrame(.commit, sequence: sequence, payload: commit.bytes, saltState: saltState, to: out)
    }
    do {
      try writeOut()
    } catch {
      index.keys.rollback(to: keyMark)
      throw error
    }
    index.sequence = sequence
    index.end += out.count
    index.version = stamp.version
    index.time = stamp.time
    index.reserve(n)
    let names = index.keys.names
    start = 0
    // Values of records written earlier in this batch, whose bytes the old mapping lacks.
    var batchValues: [Element.ID: [FieldValue]] = [:]
    let textPaths = textIndex.map { $0.keys.map { keyIDs($0) } }
    let textMapping = textPaths == nil ? nil : try? currentMapping()
    for i in 0..<n {
      if let textPaths {
        updateTextIndex(
          slot: index.slots[ids[i]], paths: textPaths, mapping: textMapping,
          written: deletes[i] ? nil : _ByteReader(base: payloads.base, end: ends[i], position: start))
      }
      if !indexes.isEmpty {
        let oldSlot = index.slots[ids[i]]
        let old = oldSlot.map {
          batchValues[ids[i]] ?? (try? storedIndexValues(slot: $0, mapping: oldMapping, paths: indexPaths))
        }
        let new = newValues[i]
        let slot = oldSlot ?? index.locations.count
        for u in indexes.indexes.indices {
          indexes.update(u, slot: slot, old: oldSlot == nil ? nil : (old??[u] ?? .null), new: new?[u])
        }
        if n > 1 { batchValues[ids[i]] = new }
      }
      if deletes[i] {
        index.delete(ids[i])
      } else {
        index.put(ids[i], locations[i])
        // Learn the record's keys for string-key queries.
        var reader = _ByteReader(base: payloads.base, end: ends[i], position: start)
        try? _BinaryValue.skip(&reader)
        try? _BinaryValue.collectKinds(&reader, names: names, into: &writtenKinds)
        if toObserve > 0 {
          switch changes[i] {
          case .insert(let r), .save(let r): observe(r)
          case .delete: break
          }
        }
      }
      start = ends[i]
    }
    version &+= 1
  }

  /// Learns the type's keys from the first record stored, and keeps the first few as
  /// witnesses for key paths (see `_SchemaProbe`).
  mutating func observe(_ record: Element) {
    guard let value = try? _FieldEncoder.encode(record) else { return }
    if toObserve == _SchemaProbe.witnessLimit {
      for (key, set) in _SchemaProbe.learn(Element.self, from: value) { probedKinds[key, default: _KindSet()].formUnion(set) }
    }
    toObserve -= 1
    if _SchemaProbe.wantsWitness(Element.self) { _SchemaProbe.witness(record, fields: value) }
  }

  /// Appends a delete frame; false (and nothing written) when the id is not stored.
  mutating func delete(id: Element.ID) throws -> Bool {
    try checkWritable()
    try loadSlots()
    guard index.slots[id] != nil else { return false }
    try write([.delete(id: id)])
    return true
  }

  /// The record with this id, read from the file.
  mutating func fetch(id: Element.ID) throws -> Element? {
    try checkUsable()
    try loadSlots()
    guard let slot = index.slots[id] else { return nil }
    return try records().record(at: slot)
  }

  /// The records as a snapshot sees them now.
  mutating func records() throws -> _LogRecords<Element> {
    try showProbe()
    return _LogRecords<Element>(
      path: path, mapping: try currentMapping(), locations: index.locations, end: index.end,
      names: index.keys.names, ids: index.keys.ids, probedKinds: probedKinds,
      writtenKinds: writtenKinds, openKinds: openKinds)
  }

  /// Shows the schema probe the first few stored records when no write has shown it any
  /// yet (a store opened on existing records). The store does it on open, so that key-path
  /// filters built after the open already know their field twins (see TypedFieldTwin.swift)
  /// and the first query reads one field per record instead of decoding every record.
  mutating func showProbe() throws {
    guard toObserve == _SchemaProbe.witnessLimit && index.liveCount > 0 else { return }
    let opened = _LogRecords<Element>(
      path: path, mapping: try currentMapping(), locations: index.locations, end: index.end,
      names: index.keys.names, ids: index.keys.ids, probedKinds: probedKinds,
      writtenKinds: writtenKinds, openKinds: openKinds)
    var shown = 0
    for slot in index.locations.indices where index.live[slot] {
      if shown == _SchemaProbe.witnessLimit { break }
      guard let record = try? opened.record(at: slot) else { continue }
      observe(record)
      shown += 1
    }
    toObserve = 0
  }

  /// The dead fraction of the file: replaced and deleted records, delete frames, key frames.
  var deadRatio: Double {
    let body = index.end - _LogFormat.headerSize
    guard body > 0 else { return 0 }
    return Double(body - index.liveBytes) / Double(index.end)
  }

  /// Compacts when the options' dead-space threshold is passed. A failure that leaves
  /// the old file in place is not the caller's write's failure, so it is not thrown; one
  /// that leaves the store failed shows on the next call.
  mutating func compactIfDue() {
    guard let ratio = options.autoCompactDeadRatio, !isReadOnly, failure == nil,
      index.end >= options.autoCompactMinimumBytes, deadRatio > ratio
    else { return }
    try? compact()
  }

  /// Reads the id map when the index was restored from a checkpoint (see
  /// `_LogIndex.slotsPending`): before anything that looks a record up by id.
  mutating func loadSlots() throws {
    guard index.slotsPending else { return }
    try index.loadSlots(from: try currentMapping(), path: path)
  }

  /// A mapping of the file that covers every indexed byte.
  mutating func currentMapping() throws -> _Mapping? {
    guard index.end > _LogFormat.headerSize else { return mapping }
    if let m = mapping, m.length >= index.end { return m }
    // Map ahead of the end, so appends do not remap on every snapshot.
    let page = 1 << 16
    let wanted = Swift.max(index.end, Swift.min((mapping?.length ?? 0) * 2, index.end + (256 << 20)))
    let m = try _Mapping(file, length: (wanted + page - 1) / page * page)
    mapping = m
    return m
  }
}
