import Foundation

extension RequestSet where Element: Record {
  /// Every record of a store as it was at a past commit, in the store order of that
  /// moment: a read-only set that answers every query as a ``MemoryStore`` holding those
  /// records would have.
  ///
  /// A ``LogStore`` is append-only, so each commit since its last compaction is still in
  /// the file; ``LogStore/history()`` lists them with their versions and times. The set
  /// reads the records from the frames where that commit left them, without copying or
  /// decoding any. Filters, sorts, windows, aggregates, groups and projections all work;
  /// secondary indexes do not apply to the past (every query scans), and writes through
  /// the set (`update`, `delete`, `firstOrInsert`) throw `.readOnly`.
  ///
  /// ```swift
  /// try log.insert(contentsOf: zoo)                       // version 1
  /// try log.delete(id: 3)                                 // version 2
  /// let before = try RequestSet(log, asOf: 1)
  /// before.filter("name", value: "Rex").count             // 1: Rex was there
  /// RequestSet(log).filter("name", value: "Rex").count    // 0
  /// ```
  /// - Parameters:
  ///   - store: A ``LogStore``. Other stores keep no history: the initializer throws.
  ///   - version: A commit's version, as ``LogStore/history()`` lists it (the newest is
  ///     the store's current version).
  /// - Throws: ``RequestSetError`` `.versionUnavailable` when the log keeps no such
  ///   version (older than what compaction kept, newer than the store, or a store that
  ///   keeps no history); the message names the readable range. `.closed` after the store
  ///   was closed.
  /// - Complexity: O(*p*) here, for the *p* bytes of the log up to that commit, which are
  ///   read once (as opening the store reads the file); the set holds an index of the
  ///   records of that moment (not the records) for as long as it lives.
  public init<Store: RecordStore>(_ store: Store, asOf version: UInt64) throws where Store.Element == Element {
    guard let past = store as? any _PastReading<Element> else { throw Self._noHistory(store) }
    self.init(store, past: try past._snapshot(asOf: version))
  }

  /// A read-only set over `snapshot`, the store as it was at `snapshot.version`.
  private init<Store: RecordStore>(_ store: Store, past snapshot: StoreSnapshot<Element>) {
    let version = snapshot.version
    self.init(
      _source: _Source(
        describe: { "\(type(of: store)) as of version \(version)" }, snapshot: { snapshot }, pastVersion: version,
        threads: store.asyncThreads),
      _query: _Query())
  }

  /// Every record of a store as it was at a moment: at the newest commit made at or
  /// before `time` (see ``LogStore/commit(asOf:)``).
  ///
  /// ```swift
  /// let yesterday = Date().addingTimeInterval(-86_400)
  /// let then = try RequestSet(log, asOf: yesterday)
  /// then.count                                            // the records a reader saw then
  /// ```
  /// - Parameters:
  ///   - store: A ``LogStore``. Other stores keep no history: the initializer throws.
  ///   - time: Any date.
  /// - Throws: ``RequestSetError`` `.versionUnavailable` when the log keeps no commit
  ///   that old (or the store keeps no history); `.closed` after the store was closed.
  ///   Never for a time at or after the log's oldest kept commit, even while the log is
  ///   compacted meanwhile (by this process or another): the commit is found and read in
  ///   one look at the file.
  /// - Complexity: O(*n*) in the size of the log, to list its commits, plus what
  ///   ``init(_:asOf:)-(_,UInt64)`` costs.
  public init<Store: RecordStore>(_ store: Store, asOf time: Date) throws where Store.Element == Element {
    guard let past = store as? any _PastReading<Element> else { throw Self._noHistory(store) }
    self.init(store, past: try past._snapshot(asOf: time))
  }

  private static func _noHistory(_ store: some RecordStore) -> RequestSetError {
    RequestSetError(
      .versionUnavailable,
      "\(type(of: store)) keeps no history: it holds only its current records, so it cannot be read as of a past "
        + "version or time. Keep the records in a LogStore, whose append-only file keeps its past commits (see "
        + "LogStoreOptions.keepHistory), or fetch() the records you need to keep.")
  }
}
