#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import Foundation
import Synchronization

/// A file-backed store: records live in an append-only binary log that survives crashes,
/// and every ``RequestSet`` query runs against it exactly as against ``MemoryStore``.
///
/// Each write appends checksummed frames to the file before it returns; opening replays
/// the log into an index (id → place in the file) and reads records from the file only
/// when a query needs them. String-key filters read single fields straight from the
/// records' bytes without decoding them.
///
/// ```swift
/// let store = try LogStore<Animal>(path: "animals.rslog")   // creates the file when missing
/// try store.insert(micky)
/// try store.insert(contentsOf: [rex, daisy])                 // all or nothing, even on a crash
/// try store.save(Animal(id: 1, name: "Mickey", species: "Mouse", age: 4))
/// try store.delete(id: 3)
///
/// let old = RequestSet(store).filter("age", .greaterThan, 3)
/// old.count                                                  // 1
/// try store.compact()                                        // drops dead records; `old` still works
/// ```
///
/// **Durability.** By default a write returns once the operating system has it, which
/// survives the process being killed; ``LogDurability/fsync`` also survives a power loss.
/// A failed fsync leaves the store failed (every call throws `.storeFailed`); reopen it.
///
/// **Recovery.** An interrupted last write (a *torn tail*) is cut off on open and shown in
/// ``recoveryReport``; damage elsewhere fails the open with `.corruptLog` naming the offset,
/// unless ``LogStoreOptions/recovery`` chooses a salvage mode. Whatever recovery cuts off or
/// leaves out is first kept in `<path>.damaged-<offset>` (see
/// ``LogRecoveryReport/preserved``). A log written with another record type is no damage:
/// it fails with `.schemaMismatch`, in every mode.
///
/// **History.** Every commit since the last compaction stays in the file:
/// ``history()`` lists them, and `RequestSet(store, asOf: version)` reads the store as it
/// was after one of them. ``LogStoreOptions/keepHistory`` chooses how many compaction keeps.
///
/// **Concurrency.** One writer per log: a second store opening the same path for writing,
/// in any process, gets `.locked` at once (the writer locks the log file itself and
/// `<path>.lock`, so deleting the lock file changes nothing). Read-only stores may open
/// alongside it. Within a process the store is safe to share between tasks and threads.
/// ``close()`` releases the lock at once. A program that ignores the lock and cuts the file
/// short makes later reads and writes throw `.fileChanged`.
///
/// **Checkpoint.** A clean ``close()`` (or releasing the store) and every compaction write
/// `<path>.checkpoint` beside a log of at least ``LogStoreOptions/checkpointMinimumBytes``:
/// what replaying the log rebuilds (record locations, field names, index definitions and
/// entries, kinds of value per key), with the log's length and CRC-32C. Opening reads it and checks
/// the log's bytes against it in one pass instead of replaying every frame
/// (``LogRecoveryReport/openedFromCheckpoint``); the id map is then read from the records
/// on the first write or lookup by id. A checkpoint that does not describe exactly the
/// log's bytes (the log grew or was cut, a byte flipped, a compaction since, a damaged
/// checkpoint) is ignored and the log replayed, so deleting it is always safe.
///
/// The file format is specified in `docs/LOG-FORMAT.md`.
public final class LogStore<Element: Record>: RecordStore, _TextIndexedStore {
  /// How the store opens and maintains its file.
  public typealias Options = LogStoreOptions
  /// What opening the store found and did.
  public typealias RecoveryReport = LogRecoveryReport

  let _state: _Lock<_LogState<Element>>
  let _feed = _CommitFeed<Element>()

  /// The store's own threads for its async calls: a write's `fsync` and a read that
  /// decodes records from the file wait on them, never on Swift's cooperative pool.
  /// As many as the machine has cores (at least two); they start on the first async call.
  ///
  /// ```swift
  /// try await log.async.insert(calf)   // appends and syncs on the log's thread
  /// ```
  public let asyncThreads: StoreThreads? = StoreThreads(
    name: "LogStore", count: Swift.max(2, ProcessInfo.processInfo.activeProcessorCount))

  /// The log file's path.
  public let path: String

  /// Opens the log at `path`, creating it when missing, and replays it.
  ///
  /// ```swift
  /// let store = try LogStore<Animal>(path: "animals.rslog")
  /// let reader = try LogStore<Animal>(path: "animals.rslog", options: .init(readOnly: true))
  /// ```
  /// - Parameters:
  ///   - path: The log file, a regular file. Beside it the store keeps `<path>.lock` (the
  ///     write lock), `<path>.checkpoint` (see the type's discussion), briefly
  ///     `<path>.compacting`, `<path>.creating` and `<path>.checkpoint.tmp`, and, when
  ///     recovery cuts bytes off, `<path>.damaged-<offset>` with those bytes. A process
  ///     killed while it wrote a temporary file leaves it; the next open removes it once
  ///     it can prove nobody writes it (a read-only open only `<path>.compacting`; see
  ///     `docs/LOG-FORMAT.md`).
  ///   - options: Durability, recovery mode, read-only, automatic compaction.
  /// - Throws: ``RequestSetError`` `.invalidPath` for an empty path, a path holding a NUL
  ///   byte, or one that names a directory, a device, a FIFO or a socket;
  ///   `.invalidOptions` for options out of range; `.locked` when another store holds the
  ///   log for writing; `.corruptLog` when the file is no RequestSet log, or is damaged in a
  ///   way the recovery mode does not accept (the message names the offset);
  ///   `.schemaMismatch` when intact records have an id of another type than
  ///   `Element.ID`; `.ioFailure` when the file cannot be created, opened, read or cut (or
  ///   the side file for cut bytes cannot be written); `.decodingFailed` when the first or the
  ///   last live record does not decode as `Element` (the message names the record's id and
  ///   the key, and says to register a ``Migration``; other records are decoded on demand,
  ///   and ``checkDecoding()`` decodes them all); `.migrationFailed` when a pending migration
  ///   of ``LogStoreOptions/migrations`` cannot run (the log is unchanged);
  ///   `.migrationPending` when a read-only store has migrations pending.
  /// - Complexity: O(*n*) in the size of the file: every frame is read and checked once;
  ///   with a current checkpoint, one checksum pass over the file and O(*s*) for *s* slots.
  public init(path: String, options: Options = .init()) throws {
    self.path = path
    try _FileIO.checkPath(path)
    try options.validate(path: path)
    // Before any open: a FIFO must not be opened (it could block), /dev/null not mapped.
    try _FileIO.checkNotSpecial(path)
    let lock = options.readOnly ? nil : try _WriteLock(logPath: path)
    // A lock file this open made goes again when the open fails (a path that is no log, a
    // log another store holds): a failed open leaves nothing beside the file.
    var opened = false
    defer { if !opened { lock?.removeIfCreated() } }
    let file: _FileDescriptor
    if options.readOnly {
      guard _FileIO.exists(path) else {
        throw RequestSetError(
          .ioFailure,
          "There is no log at \(path), and a read-only store cannot create one. Check the path, or open it "
            + "for writing once to create it.")
      }
      file = try _FileIO.open(path, O_RDONLY | O_NONBLOCK, hint: "Check the path and its permissions.")
      try _FileIO.checkRegular(file)
      // A compaction whose process died before its rename, if no compaction holds it.
      _StaleFiles.removeAbandonedCompaction(of: path)
    } else {
      file = try _LogFiles.openLocked(path)
      // Only now, holding the log file's lock: what writers killed mid-way left behind.
      _StaleFiles.removeAll(besideLockedLog: path)
    }

    var size = try _FileIO.size(file)
    if size == 0 && !options.readOnly {
      // An empty file (made by `touch`, say): start a log in it.
      let header = _LogFormat.Header(salt: UInt64.random(in: .min ... .max), generation: 1).encoded()
      let code = header.withUnsafeBytes { _FileIO.pwriteAll(file, $0, at: 0) }
      if code != 0 { throw _FileIO.failure("write a log header to", path, code, _FileIO.writeHint(code)) }
      size = header.count
    }
    let (mapping, bytes, header) = try _LogFormat.mapHeader(file, size: size, path: path)
    // A checkpoint that describes exactly these bytes spares the replay (see Checkpoint.swift).
    let idType = String(reflecting: Element.ID.self)
    var outcome: _Recovery.Outcome<Element.ID>
    var restoredKinds: _KindAccumulator?
    var restoredIndexes: [_SortedIndex]?
    var checkpointed = false
    if let c = _Checkpoint.load(log: path, header: header, bytes: bytes, idType: idType, mapping: mapping),
      let keys = _Checkpoint.keyTable(c.names)
    {
      var report = LogRecoveryReport(mode: options.recovery, fileSize: size)
      report.frameCount = c.frameCount
      report.recordCount = c.liveCount
      report.openedFromCheckpoint = true
      outcome = .init(index: _LogIndex(checkpoint: c, keys: keys), report: report, cutAt: nil)
      restoredKinds = c.kinds
      restoredIndexes = c.indexEntries
      checkpointed = true
    } else {
      outcome = try _Recovery.replay(
        bytes, header: header, mode: options.recovery, path: path, idType: Element.ID.self)
    }
    // Checking the checkpoint (or replaying) read every byte of the file through the
    // mapping: let those pages go, so an open store holds only what it reads next.
    mapping?.releaseResidentPages()
    let rewrite =
      !options.readOnly && options.recovery == .skipDamagedFrames
      && (!outcome.report.damage.isEmpty || outcome.report.droppedRecords > 0)

    // Nothing is destroyed that a person could still want: before recovery cuts bytes off
    // or rewrites the file without some of them, they go to a side file beside the log.
    if !options.readOnly, rewrite || outcome.cutAt != nil {
      let from = rewrite ? 0 : outcome.cutAt!
      let kept = try _LogFiles.preserve(UnsafeRawBufferPointer(rebasing: bytes[from..<size]), of: path, offset: from)
      outcome.report.preserved = .init(path: kept, offset: from, byteCount: size - from)
    }

    if !options.readOnly, let cut = outcome.cutAt {
      let code = _FileIO.truncate(file, to: cut)
      if code != 0 {
        throw _FileIO.failure("cut the damaged or interrupted end off", path, code, "Check the file's permissions.")
      }
      if options.durability == .fsync {
        let synced = _FileIO.sync(file)
        if synced != 0 { throw _FileIO.failure("fsync", path, synced, "Check the disk.") }
      }
    }

    var index = outcome.index
    // Kept history is not dead space to automatic compaction: only what is written from now on.
    if options.keepHistory != .none { index.liveBytes = index.end - _LogFormat.headerSize }
    let live = index.liveLocations
    var state = _LogState<Element>(
      path: path, options: options, file: file, lock: lock, header: header,
      saltState: _LogFormat.saltState(header.salt), index: index, mapping: mapping,
      openKinds: restoredKinds.map(_OpenKinds.init(learned:))
        ?? _OpenKinds(path: path, mapping: mapping, locations: live, names: index.keys.names),
      probedKinds: [:], report: outcome.report)
    // The version continues the log's: the newest commit's, as ``history()`` lists it.
    state.version = index.version
    if checkpointed { state.checkpointed = (index.end, header.generation) }
    if rewrite {
      // Salvaged: rewrite the log without the damage, so the next open is clean. What was
      // damaged cannot vouch for the history around it, so none is kept.
      try state.compact(keepingHistory: false)
      state.report.rewritten = true
    }
    if let entries = restoredIndexes, !rewrite {
      for (definition, sorted) in zip(index.indexDefinitions, entries) {
        state.indexes.add(key: definition._identity, unique: definition.unique, restored: sorted)
      }
    } else {
      try state.rebuildIndexes()
    }
    if !options.migrations.migrations.isEmpty {
      try options.migrations.validate()
      if let next = state.pendingMigrations.first {
        if options.readOnly {
          throw RequestSetError(
            .migrationPending,
            "The log \(path) has not run the migration \(next.name.debugDescription) (and maybe later ones), and a "
              + "read-only store cannot run it. Open the log for writing once (which runs it), or run "
              + "`requestset migrate \(path) --plan FILE`; nothing was changed.")
        }
        if options.migratesOnOpen {
          _ = try state.migrate()
        } else {
          state.migrationHold = next.name
        }
      }
    }
    try state.showProbe()
    if state.migrationHold == nil { try state.checkOpenDecoding() }
    opened = true
    _state = _Lock(state)
  }

  /// What opening the store found: frames read, and any torn tail cut or damage skipped.
  ///
  /// ```swift
  /// let report = store.recoveryReport
  /// report.isClean            // true after a clean shutdown
  /// report.tornTail?.offset   // where an interrupted write was cut off
  /// ```
  public var recoveryReport: RecoveryReport { _state.withLock { $0.report } }

  /// The number of records in the store.
  ///
  /// - Complexity: O(1).
  public var count: Int { _state.withLock { $0.index.liveCount } }

  /// The size of the log file in bytes, dead records included.
  ///
  /// - Complexity: O(1).
  public var fileSize: Int { _state.withLock { $0.index.end } }

  /// Throws `.closed`, `.readOnly` or `.migrationPending` when the log cannot take a
  /// write now, as every write does (see ``RecordStore/_checkWritable()``).
  ///
  /// ```swift
  /// try store._checkWritable()
  /// ```
  public func _checkWritable() throws {
    try _state.withLock { try $0.checkWritable() }
  }

  /// Inserts a record.
  ///
  /// ```swift
  /// try store.insert(Animal(id: 1, name: "Micky", species: "Mouse", age: 3))
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` when a record with the same id is
  ///   stored; `.encodingFailed` when the record cannot be encoded; `.ioFailure` when the
  ///   write fails (nothing is written); `.readOnly`; `.storeFailed`; `.fileChanged` when
  ///   another program cut the file short; `.closed` after ``close()``.
  /// - Complexity: O(*r*) for a record of *r* encoded bytes, plus one `write(2)` (and an
  ///   fsync with ``LogDurability/fsync``).
  public func insert(_ record: Element) throws {
    let version = try _state.withLock { state in
      try state.checkWritable()
      try state.loadSlots()
      guard state.index.slots[record.id] == nil else { throw _duplicate(record.id) }
      try state.write([.insert(record)])
      return state.version
    }
    _publish(version, [.insert(record)])
  }

  /// Inserts several records, all or none of them, even across a crash: after a crash
  /// the log holds either the whole batch or none of it.
  ///
  /// ```swift
  /// try store.insert(contentsOf: herd)   // one write, one commit frame
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` when an id is stored already or occurs
  ///   twice in `records`; `.encodingFailed`; `.ioFailure`; `.readOnly`; `.storeFailed`;
  ///   `.fileChanged`; `.closed`.
  ///   Nothing is inserted then.
  /// - Complexity: O(*b*) for *b* encoded bytes, in one `write(2)`.
  public func insert(contentsOf records: some Sequence<Element>) throws {
    let batch = Array(records)
    guard !batch.isEmpty else { return }
    // An id map, not a Set: integer ids of dynamic records hash as integers there.
    var seen = _IDMap<Element.ID>()
    seen.reserveCapacity(batch.count)
    for (i, r) in batch.enumerated() where seen.updateValue(i, forKey: r.id) != nil {
      throw _duplicate(r.id, inBatch: true)
    }
    let changes: [RecordChange<Element>] = batch.map { .insert($0) }
    let version = try _state.withLock { state in
      try state.checkWritable()
      try state.loadSlots()
      if let clash = batch.first(where: { state.index.slots[$0.id] != nil }) { throw _duplicate(clash.id) }
      try state.write(changes)
      return state.version
    }
    _publish(version, changes)
  }

  /// Inserts the record, or replaces the stored record with the same id, which keeps its
  /// place in store order.
  ///
  /// ```swift
  /// var micky = try RequestSet(store).filter("name", value: "Micky").get()
  /// micky.age += 1
  /// try store.save(micky)
  /// ```
  /// - Throws: ``RequestSetError`` `.encodingFailed`, `.ioFailure`, `.readOnly`,
  ///   `.storeFailed`, `.fileChanged`, `.closed`.
  public func save(_ record: Element) throws {
    let version = try _state.withLock { state in
      try state.write([.save(record)])
      state.compactIfDue()
      return state.version
    }
    _publish(version, [.save(record)])
  }

  /// Deletes the record with this id.
  ///
  /// ```swift
  /// try store.delete(id: 3)   // true
  /// try store.delete(id: 3)   // false: nothing to delete, nothing written
  /// ```
  /// - Returns: Whether a record was deleted.
  /// - Throws: ``RequestSetError`` `.ioFailure`, `.readOnly`, `.storeFailed`, `.fileChanged`,
  ///   `.closed`.
  @discardableResult
  public func delete(id: Element.ID) throws -> Bool {
    let (deleted, version) = try _state.withLock { state in
      let deleted = try state.delete(id: id)
      if deleted { state.compactIfDue() }
      return (deleted, state.version)
    }
    if deleted { _publish(version, [.delete(id: id)]) }
    return deleted
  }

  /// Applies changes atomically, in order: all of them or none, even across a crash (they
  /// are written as one batch with one commit frame).
  ///
  /// ```swift
  /// try store.apply([.insert(calf), .save(daisy), .delete(id: 3)], ifVersion: nil)
  /// ```
  /// - Parameters:
  ///   - changes: The inserts, saves and deletes to apply, in order.
  ///   - expectedVersion: When not nil, nothing is applied and `.conflict` is thrown
  ///     unless the store's version is still this one.
  /// - Throws: ``RequestSetError`` `.duplicateID` for an insert whose id is taken,
  ///   `.conflict`, `.encodingFailed`, `.ioFailure`, `.readOnly`, `.storeFailed`,
  ///   `.fileChanged`, `.closed`; nothing
  ///   is applied then.
  public func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    let version: UInt64? = try _state.withLock { state in
      try state.checkWritable()
      if let expectedVersion, expectedVersion != state.version {
        throw _conflict(expected: expectedVersion, found: state.version)
      }
      try state.loadSlots()
      try _validate(changes) { state.index.slots[$0] != nil }
      guard !changes.isEmpty else { return nil }
      try state.write(changes)
      state.compactIfDue()
      return state.version
    }
    if let version { _publish(version, changes) }
  }

  /// The record with this id, read from the file, or nil.
  ///
  /// ```swift
  /// let rex = try store.fetch(id: 3)
  /// ```
  /// - Throws: ``RequestSetError`` `.decodingFailed` when the stored record does not decode;
  ///   `.fileChanged` when another program cut the file short; `.closed` after ``close()``.
  /// - Complexity: O(1) to find it, plus decoding one record.
  public func fetch(id: Element.ID) throws -> Element? {
    try _state.withLock { try $0.fetch(id: id) }
  }

  /// Rewrites the log with only its live records and swaps the new file in atomically.
  ///
  /// Request sets evaluated before keep their results. The store also compacts by itself
  /// once dead space passes ``LogStoreOptions/autoCompactDeadRatio``.
  ///
  /// ```swift
  /// try store.compact()
  /// store.fileSize   // header + live records
  /// ```
  /// - Throws: ``RequestSetError`` `.ioFailure` when the new file cannot be written (the
  ///   log is unchanged); `.storeFailed` when the directory cannot be synced after the swap;
  ///   `.readOnly`; `.closed`.
  /// - Complexity: O(*n*) in the live records' bytes.
  public func compact() throws {
    try _state.withLock { try $0.compact() }
  }

  /// Closes the store: releases the write lock (another store may open the log for
  /// writing at once) and the store's mapping of the file, and ends every
  /// ``commits(polling:)`` stream, so live request sets end too.
  ///
  /// Request sets evaluated before keep their records: each snapshot holds its own mapping
  /// of the file, unmapped when the last of them goes. Reads and writes afterwards,
  /// including evaluating a request set that was not evaluated yet, throw `.closed`;
  /// ``count``, ``fileSize`` and ``recoveryReport`` keep their last values. Closing twice
  /// does nothing. The file descriptor itself is closed when the store is released.
  /// A writer that has not failed first writes the log's checkpoint, `<path>.checkpoint`
  /// (see ``LogStoreOptions/checkpointMinimumBytes``), unless the one there is current.
  ///
  /// ```swift
  /// let old = try RequestSet(store).fetch()
  /// store.close()
  /// try store.insert(calf)                  // throws .closed
  /// try RequestSet(store).fetch()           // throws .closed
  /// old.count                               // still readable
  /// let next = try LogStore<Animal>(path: "animals.rslog")   // the lock is free
  /// ```
  public func close() {
    if _state.withLock({ $0.close() }) { _feed.finish() }
  }

  deinit {
    // Release the write locks now: the log's descriptor outlives the store in the mappings
    // of snapshots, and a child process forked meanwhile holds a copy of it until its exec;
    // either would keep the lock on the log file, refusing the next writer.
    _ = _state.withLock { $0.close() }
  }

  /// The store's current contents, for a query to evaluate.
  ///
  /// A read-only store first picks up what its writer committed since the last look
  /// (see ``commits(polling:)``).
  /// - Throws: ``RequestSetError`` `.closed` after ``close()``; `.storeFailed` after a failure
  ///   that stopped the store.
  /// - Complexity: O(1) (a new mapping of the file when it has grown past the last one);
  ///   for a read-only store whose writer has committed since, O(*n*) to replay the file.
  public func snapshot() throws -> StoreSnapshot<Element> {
    try _state.withLock { state in
      try state.checkUsable()
      _ = try state.followWriter()
      let records = try state.records()
      let index = state.index
      var snapshot = StoreSnapshot(
        storage: .external(records), slotCount: index.locations.count,
        live: index.liveCount == index.locations.count ? nil : index.live, liveCount: index.liveCount,
        version: state.version, copiesOut: false)  // records decode fresh on every read
      snapshot._indexes = _IndexAccess(catalog: state.indexes)
      snapshot._indexes?.text = state.textIndex
      snapshot._indexes?.slotForID = { [weak self] id, version in self?._slot(for: id, at: version) ?? .unknown }
      return snapshot
    }
  }

  /// The slot of the record with this id value, when the store is still at `version`.
  private func _slot(for id: FieldValue, at version: UInt64) -> _IDLookup {
    guard let id = _decodeID(id, as: Element.ID.self) else { return .unknown }
    return _state.withLock { state in
      guard state.version == version, (try? state.loadSlots()) != nil else { return .unknown }
      return state.index.slots[id].map { .found($0) } ?? .absent
    }
  }

  // MARK: Indexes

  /// Creates a secondary index on a key, which queries then use for equality, `IN`,
  /// ranges, prefixes and sorts on it (see ``RequestSet/explain()``).
  ///
  /// The definition is written to the log, so the index comes back whenever the store
  /// opens. Its entries are not in the log: an open rebuilds them from the records, or
  /// reads them from a checkpoint that describes exactly the log's bytes (see the type's
  /// discussion), so a damaged file can never leave an index that disagrees with the
  /// records.
  ///
  /// ```swift
  /// try store.createIndex("species")
  /// try store.createIndex("name", unique: true)   // a duplicate name now throws on write
  /// ```
  /// Creating an index that exists with the same `unique` setting does nothing.
  /// - Parameters:
  ///   - key: A Codable key, or a dotted path into a nested value (`"owner.city"`).
  ///   - unique: Whether a write that would give two records the same non-nil value
  ///     throws `.uniqueViolation` (nil values are exempt, as in SQL; every NaN is one
  ///     value, as `groupBy` groups it).
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.uniqueViolation` when `unique` and two records share a value; `.invalidIndex`
  ///   when an index on the key exists with the other `unique` setting; `.readOnly`;
  ///   `.ioFailure` when the definition cannot be written.
  /// - Complexity: O(*n* log *n*), reading one field of every record from the file.
  public func createIndex(_ key: String, unique: Bool = false) throws {
    let key = try _CompositeKey.validated([key], typeName: "\(Element.self)")
    try _state.withLock { try $0.createIndex(key, unique: unique) }
  }

  /// Creates a composite index on several keys, and writes its definition to the log:
  /// its entries are ordered by the first key's value, then the second's, and so on. A
  /// query that holds the first keys equal reads one run of it: a range on the next key
  /// (`species == "cat" AND age > 3`), or a sort on the next key with a limit, which walks
  /// the run in order and stops once the window is full (see ``RequestSet/explain()``).
  ///
  /// ```swift
  /// try store.createIndex("species", "age")
  /// let youngest = RequestSet(store).filter("species", value: "cat").sortBy("age").limit(10)
  /// ```
  /// Creating an index that exists with the same `unique` setting does nothing; an index
  /// on the same keys in another order is another index. A log with a composite index
  /// opened by a build before composite indexes sees an index on a key no record holds,
  /// which no query uses.
  /// - Parameters:
  ///   - first: The key the entries are ordered by first: a Codable key, or a dotted path.
  ///   - second: The key that orders entries with the same `first` value.
  ///   - more: Further keys, each ordering the entries the keys before it tie.
  ///   - unique: Whether a write that would give two records the same values of every key
  ///     throws `.uniqueViolation` (a record with nil for any key is exempt, as in SQL).
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.invalidIndex` for a key named twice or an index that exists with the other
  ///   `unique` setting; `.uniqueViolation` when `unique` and two records share values;
  ///   `.readOnly`; `.ioFailure` when the definition cannot be written.
  /// - Complexity: O(*n* log *n*), reading the keys of every record from the file.
  public func createIndex(_ first: String, _ second: String, _ more: String..., unique: Bool = false) throws {
    try createIndex(on: [first, second] + more, unique: unique)
  }

  /// Creates an index on the keys a list names: one key, or a composite index on several
  /// (see ``createIndex(_:_:_:unique:)-(String,String,_,_)``), for keys known only at run time.
  ///
  /// ```swift
  /// try store.createIndex(on: ["species", "age"])
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex` for an empty list, and whatever the
  ///   one-key and composite forms throw.
  public func createIndex(on keys: [String], unique: Bool = false) throws {
    let key = try _CompositeKey.validated(keys, typeName: "\(Element.self)")
    try _state.withLock { try $0.createIndex(key, unique: unique) }
  }

  /// Creates a composite index on the fields key paths name (see
  /// ``createIndex(_:_:_:unique:)-(String,String,_,_)``).
  ///
  /// ```swift
  /// try store.createIndex(\.species, \.age)
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex` when a key path is not a chain of stored
  ///   properties, and whatever the string-key form throws.
  public func createIndex<First, Second, each More>(
    _ first: KeyPath<Element, First>, _ second: KeyPath<Element, Second>,
    _ more: repeat KeyPath<Element, each More>, unique: Bool = false
  ) throws {
    let keys = try _indexKeys(first, second, repeat each more)
    let key = try _CompositeKey.validated(keys, typeName: "\(Element.self)")
    try _state.withLock { try $0.createIndex(key, unique: unique) }
  }

  /// Creates a secondary index on the field a key path names.
  ///
  /// ```swift
  /// try store.createIndex(\.species)
  /// try store.createIndex(\.name, unique: true)
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex` when the key path is not a chain of
  ///   stored properties (index its Codable key with the string form then), and whatever
  ///   the string-key form throws.
  public func createIndex<Value>(_ keyPath: KeyPath<Element, Value>, unique: Bool = false) throws {
    try createIndex(try _indexKey(keyPath), unique: unique)
  }

  /// Drops the index on a key, and its definition from the log.
  ///
  /// ```swift
  /// try store.dropIndex("species")   // true
  /// ```
  /// - Returns: Whether there was one.
  /// - Throws: ``RequestSetError`` `.readOnly`; `.ioFailure`.
  @discardableResult
  public func dropIndex(_ key: String) throws -> Bool {
    try _state.withLock { try $0.dropIndex(key) }
  }

  /// Drops the composite index on these keys, in this order, and its definition from the log.
  ///
  /// ```swift
  /// try store.dropIndex("species", "age")   // true
  /// ```
  /// - Returns: Whether there was one.
  /// - Throws: ``RequestSetError`` `.readOnly`; `.ioFailure`.
  @discardableResult
  public func dropIndex(_ first: String, _ second: String, _ more: String...) throws -> Bool {
    try dropIndex(on: [first, second] + more)
  }

  /// Drops the index on the keys a list names, in this order, and its definition from the log.
  ///
  /// ```swift
  /// try store.dropIndex(on: ["species", "age"])   // true
  /// ```
  /// - Returns: Whether there was one.
  /// - Throws: ``RequestSetError`` `.readOnly`; `.ioFailure`.
  @discardableResult
  public func dropIndex(on keys: [String]) throws -> Bool {
    guard !keys.isEmpty else { return false }
    let key = _CompositeKey.identity(keys)
    return try _state.withLock { try $0.dropIndex(key) }
  }

  /// The store's secondary indexes, in the order they were created.
  ///
  /// ```swift
  /// store.indexes.map(\.key)   // ["species", "name"]
  /// ```
  public var indexes: [RequestIndex] { _state.withLock { $0.indexes.descriptions } }

  /// Every commit from now on, with its changes: as it happens for a writable store; for
  /// a read-only store, by polling the file every `interval` for the writer's commits
  /// (reported without their changes, so live request sets read the store again).
  ///
  /// ```swift
  /// let reader = try LogStore<Animal>(path: "animals.rslog", options: .init(readOnly: true))
  /// for try await snapshot in RequestSet(reader).changes { … }   // follows the writer
  /// ```
  ///
  /// The stream ends when the store is closed.
  public func commits(polling interval: Duration = .milliseconds(50)) -> AsyncStream<StoreCommit<Element>> {
    guard _state.withLock({ $0.isReadOnly }) else { return _feed.subscribe() }
    return AsyncStream { continuation in
      // The version as the stream is made, not when its task first runs: a snapshot taken
      // in between would move it past a commit this stream then never reports.
      let start = _state.withLock { $0.version }
      let task = Task { [self] in
        var last = start
        while !Task.isCancelled && !_state.withLock({ $0.closed }) {
          try? await Task.sleep(for: interval)
          guard let version = try? snapshot().version, version != last else { continue }
          last = version
          continuation.yield(StoreCommit(version: version, changes: nil))
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  /// What reading the store's past needs, taken under the lock; the reading itself runs
  /// without it (see LogStore+History.swift).
  func _past() throws -> _PastLog<Element> {
    try _state.withLock { try $0.past() }
  }

  private func _publish(_ version: UInt64, _ changes: [RecordChange<Element>]) {
    if _feed.isObserved { _feed.publish(StoreCommit(version: version, changes: changes)) }
  }
}

extension LogStore: _CommitPublishing {
  /// The feed live request sets hear commits from; nil for a read-only store, which polls.
  var _liveFeed: AnyObject? { _state.withLock { $0.isReadOnly } ? nil : _feed }
}
