import Foundation

/// One commit of a ``LogStore`` that is still readable: a write (an insert, a save, a
/// delete, a batch) as ``LogStore/history()`` lists it.
///
/// Versions count commits over the whole life of the log: 1 for its first commit, one
/// more for each commit after it, and they survive compaction and reopening, so a version
/// names the same state for as long as the log keeps it. A store's current version is the
/// newest commit's (``StoreSnapshot/version`` of a writer's snapshot).
///
/// ```swift
/// for commit in try store.history() {
///   print(commit.version, commit.time, commit.recordsChanged)   // 7 2026-11-23 22:56:48 +0000 3
/// }
/// ```
public struct LogCommit: Sendable, Hashable, CustomStringConvertible {
  /// The store's version after this commit.
  public var version: UInt64
  /// When the commit was written, by the writer's clock (to the microsecond), never
  /// earlier than the commit before it. `Date.distantPast` for a commit written by a
  /// version of RequestSet that did not record times (see ``hasTime``).
  public var time: Date
  /// How many records the commit inserted, replaced or deleted. The oldest commit of a
  /// compacted log stands for everything before it: its count is the records it holds.
  public var recordsChanged: Int

  /// Whether the log recorded the commit's time; false for commits written by versions of
  /// RequestSet before times were recorded, whose ``time`` is `Date.distantPast`.
  public var hasTime: Bool { time != .distantPast }

  /// `version N at TIME: K records`, as logs and test failures print it.
  public var description: String {
    "version \(version) at \(hasTime ? "\(time)" : "an unknown time"): \(recordsChanged) records"
  }
}

extension LogStore: _PastReading {
  /// The commits still readable in the log, oldest first: each can be read with
  /// ``RequestSet/init(_:asOf:)-(_,UInt64)``.
  ///
  /// The log is append-only, so it holds every commit since it was last compacted; a
  /// compaction keeps what ``LogStoreOptions/keepHistory`` says (by default only the
  /// newest commit, which then stands for everything before it). A read-only store first
  /// picks up what its writer committed since it last looked.
  ///
  /// ```swift
  /// try store.insert(micky)                  // version 1
  /// try store.insert(contentsOf: [rex, daisy])   // version 2
  /// try store.delete(id: 3)                  // version 3
  /// try store.history().map(\.version)       // [1, 2, 3]
  /// try store.history().map(\.recordsChanged)   // [1, 2, 1]
  /// ```
  /// - Returns: The readable commits, oldest first; empty for a log never written to.
  /// - Throws: ``RequestSetError`` `.closed` after ``close()``; `.storeFailed`;
  ///   `.fileChanged` when another program cut the file short.
  /// - Complexity: O(*n*) in the size of the file, which is read once (as opening does).
  public func history() throws -> [LogCommit] {
    try _past().history().map(_logCommit)
  }

  /// A commit as ``history()`` lists it.
  private func _logCommit(_ entry: _CommitEntry) -> LogCommit {
    LogCommit(
      version: entry.version, time: _LogFormat.date(micros: entry.time) ?? .distantPast,
      recordsChanged: entry.recordsChanged)
  }

  /// The newest readable commit made at or before `time`: the state a reader at that
  /// moment saw.
  ///
  /// ```swift
  /// let lastNight = try store.commit(asOf: midnight)
  /// let then = try RequestSet(store, asOf: lastNight.version)   // or RequestSet(store, asOf: midnight)
  /// ```
  /// - Parameter time: Any date; commits whose time is unknown (``LogCommit/hasTime``)
  ///   count as older than every date.
  /// - Returns: The commit.
  /// - Throws: ``RequestSetError`` `.versionUnavailable` when no readable commit is that
  ///   old (the message names the oldest and its time), and whatever ``history()`` throws.
  /// - Complexity: O(*n*) in the size of the file.
  public func commit(asOf time: Date) throws -> LogCommit {
    let commits = try history()
    if let found = commits.last(where: { $0.time <= time }) { return found }
    throw _timeUnavailable(time, oldest: commits.first)
  }

  func _snapshot(asOf version: UInt64) throws -> StoreSnapshot<Element> {
    try _past().snapshot(asOf: version)
  }

  func _snapshot(asOf time: Date) throws -> StoreSnapshot<Element> {
    // One look at the log for both: its commits, then the one found, read from the same
    // mapping, which a compaction (here or in the writer's process) leaves as it is.
    let past = try _past()
    let commits = try past.history().map(_logCommit)
    guard let found = commits.last(where: { $0.time <= time }) else { throw _timeUnavailable(time, oldest: commits.first) }
    return try past.snapshot(asOf: found.version)
  }

  private func _timeUnavailable(_ time: Date, oldest: LogCommit?) -> RequestSetError {
    guard let oldest else {
      return RequestSetError(
        .versionUnavailable,
        "The LogStore at \(path) holds no commits yet, so nothing was stored at \(time). Read it as of a time after "
          + "its first write.")
    }
    return RequestSetError(
      .versionUnavailable,
      "No readable commit of the LogStore at \(path) is as old as \(time): the oldest it keeps is \(oldest). "
        + "Compaction drops older commits; keep more with LogStoreOptions.keepHistory, or read as of a later time.")
  }
}

/// What reading a log's past needs, taken from the store under its lock, so the replay
/// itself runs without holding it (writers go on meanwhile; the log only grows past `end`,
/// and a compaction leaves this mapping on the old file).
struct _PastLog<Element: Record>: Sendable {
  let path: String
  let mapping: _Mapping?
  let end: Int
  let header: _LogFormat.Header
  let mode: LogRecoveryMode
  /// The store's current version.
  let version: UInt64
  let writtenKinds: _KindAccumulator
  let openKinds: _OpenKinds
  let probedKinds: [String: _KindSet]

  private func replay(collectHistory: Bool, until target: UInt64?) throws -> _Recovery.Outcome<Element.ID>? {
    guard let mapping, end > _LogFormat.headerSize else { return nil }
    try mapping.check(covers: end)
    return try withExtendedLifetime(mapping) {
      try _Recovery.replay(
        mapping.bytes(0, end), header: header, mode: mode, path: path, idType: Element.ID.self,
        collectHistory: collectHistory, until: target)
    }
  }

  /// The readable commits, oldest first.
  func history() throws -> [_CommitEntry] {
    try replay(collectHistory: true, until: nil)?.history ?? []
  }

  /// The store as it was at commit `version`: the file replayed up to that commit, its
  /// slots pointing at the frames still in the file.
  func snapshot(asOf version: UInt64) throws -> StoreSnapshot<Element> {
    guard let outcome = try replay(collectHistory: false, until: version), self.version > 0 else {
      throw RequestSetError(
        .versionUnavailable,
        "The LogStore at \(path) holds no commits yet, so there is no version \(version) to read. Read it as of a "
          + "version that store.history() lists once it has been written to.")
    }
    let past = outcome.index
    guard past.version == version else {
      let first = outcome.firstVersion ?? self.version
      let gap =
        (first...self.version).contains(version)
        ? " Version \(version) itself is not in the file: recovery skipped that damaged commit." : ""
      throw RequestSetError(
        .versionUnavailable,
        "Version \(version) of the LogStore at \(path) is not readable: the log keeps versions \(first) through "
          + "\(self.version).\(gap) Compaction drops older versions (keep more with LogStoreOptions.keepHistory); "
          + "pick a version from store.history().")
    }
    // The keys a MemoryStore would know by then are those of every record it had held:
    // the past's records, deleted ones included, and (a superset) the store's own.
    var known = writtenKinds
    known.formUnion(try openKinds.value())
    let records = _LogRecords<Element>(
      path: path, mapping: mapping, locations: past.locations, end: past.end, names: past.keys.names,
      ids: past.keys.ids, probedKinds: probedKinds, writtenKinds: known,
      openKinds: _OpenKinds(path: path, mapping: mapping, locations: past.locations, names: past.keys.names))
    return StoreSnapshot(
      storage: .external(records), slotCount: past.locations.count,
      live: past.liveCount == past.locations.count ? nil : past.live, liveCount: past.liveCount, version: version)
  }
}

extension _LogState {
  /// What reading the past needs, after picking up the writer's commits (read-only).
  mutating func past() throws -> _PastLog<Element> {
    try checkUsable()
    _ = try followWriter()
    return _PastLog(
      path: path, mapping: try currentMapping(), end: index.end, header: header, mode: options.recovery,
      version: index.version, writtenKinds: writtenKinds, openKinds: openKinds, probedKinds: probedKinds)
  }
}
