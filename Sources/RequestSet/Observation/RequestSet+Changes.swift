extension RequestSet where Element: Record {
  /// The set's result now, and again after every committed write that changes it.
  ///
  /// ```swift
  /// let task = Task {
  ///   for try await snapshot in animals.filter(\.age > 3).sortBy(\.age).limit(10).changes {
  ///     render(snapshot.records)          // first the current result, then each change
  ///   }
  /// }
  /// task.cancel()                          // ends the sequence and releases the store
  /// ```
  ///
  /// A write that leaves the result as it was yields nothing. A set made by a
  /// ``RecordGraph`` follows the stores of its type's related types too: a commit there
  /// (an owner moving to Oslo) runs the query again, relations resolved anew, and yields
  /// a state when the result changed. Each state says what was
  /// inserted, deleted and updated since the state read before it. The set follows the
  /// store's commits: as they happen on the built-in stores, through
  /// ``RecordStore/commits(polling:)`` on others. Where it can, it updates the result
  /// without re-running the query: an insert into a filtered, sorted, limited set is
  /// merged into the result it holds. The first state and every re-run are the set's
  /// ``fetch()``, run again: over a store that runs queries itself (`SQLiteStore`,
  /// `PostgresStore`) the store filters, sorts and limits, and only the result's records
  /// are read.
  ///
  /// A slow consumer gets the latest state, coalesced: the set does its work when it is
  /// read, so a state read after several commits is the newest result the store has
  /// reported, and its differences are from the state read before, not from states nobody
  /// read. A `MemoryStore` and a writable `LogStore` report each commit before the write
  /// returns, so a read sees everything committed before it; the SQL stores and a read-only
  /// `LogStore` report commits from another thread, a moment later, so a read may return a
  /// state a few commits old, and the newer ones follow as states of their own. Either
  /// way every state is one the store committed: its records are the result at its
  /// ``RequestSetSnapshot/version``. Between
  /// reads the set keeps at most 1,024 changes for merging, and past that only a note to
  /// read the store again: a stalled consumer costs a fixed amount of memory, however many
  /// commits land.
  ///
  /// - Throws: From the iterator: ``RequestSetError`` for a bad query or a set over an
  ///   array (`.readOnly`: an array never changes; use the set itself).
  public var changes: RequestSetChanges<Element> { RequestSetChanges(set: self) }

  /// The set's records, read a batch at a time, without building an array of them.
  ///
  /// ```swift
  /// for try await animal in animals.filter("species", value: "Cow").stream(batchSize: 500) {
  ///   try export(animal)
  /// }
  /// ```
  /// The stream reads the set's snapshot (evaluating it first if needed), so it sees one
  /// consistent state however long the walk takes; a store that reads records from disk
  /// decodes one batch at a time, which is how to walk a result larger than memory. It
  /// reads only as the consumer asks, so a slow consumer holds one batch, never a backlog.
  /// A `batchSize` below 1 gives a stream whose first `next()` throws
  /// ``RequestSetError`` `.invalidWindow`.
  /// - Parameter batchSize: Records read at a time, 1 or more.
  public func stream(batchSize: Int = 1_024) -> RequestSetStream<Element> {
    guard batchSize > 0 else {
      let error = RequestSetError.invalidWindow("stream(batchSize: \(batchSize))", batchSize, allowed: "a batch size of 1 or more")
      return RequestSetStream(set: _with { $0.invalidate(error) }, batchSize: 1)
    }
    return RequestSetStream(set: self, batchSize: batchSize)
  }
}

/// The states of a live request set; see ``RequestSet/changes``.
public struct RequestSetChanges<Element: Record>: AsyncSequence, Sendable {
  let set: RequestSet<Element>

  /// A state of the set: what the iterator yields.
  public typealias Snapshot = RequestSetSnapshot<Element>
  // The iterator names the record type only through these: inside it, `Element` is the
  // iterator's own (the snapshot), as `AsyncIteratorProtocol` infers it.
  typealias _Set = RequestSet<Element>
  typealias _Subscription = _LiveSubscription<Element>
  typealias _Live = _LiveResult<Element>

  /// Reads the states; cancelling the task ends the iteration.
  ///
  /// The iterator subscribes to the store on its first ``next()`` and works only when it
  /// is read: between reads it keeps what it was told of commits, up to a fixed bound, and
  /// nothing else.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let set: _Set
    /// The subscription to the store and the state last returned, from the first read on.
    var _following: (subscription: _Subscription, live: _Live)?
    var _wakeups: AsyncStream<Void>.Iterator?
    var _ended = false

    init(set: _Set) { self.set = set }

    /// The next state: at first the current result, then, once a commit changes the
    /// result, the newest result the store has reported, with its differences from the
    /// state this iterator returned before. Nil when the task is cancelled.
    ///
    /// - Throws: ``RequestSetError`` for a bad query, for a set over an array
    ///   (`.readOnly`), or when the store cannot be read.
    public mutating func next() async throws -> Snapshot? {
      if _ended { return nil }
      do {
        guard var following = _following else {
          let store = try set._store()
          // Subscribe before the first read, so no commit falls between them.
          let subscription = _LiveSubscription(store, graph: set._query.graph)
          let live = try _LiveResult(set: set)
          _following = (subscription, live)
          _wakeups = subscription.inbox.wakeups.makeAsyncIterator()
          return live.initial
        }
        while !Task.isCancelled {
          let (pending, finished) = following.subscription.inbox.take()
          if !pending.isEmpty, let state = try following.live.catchUp(pending) {
            _following = following
            return state
          }
          if finished { break }
          // Wait for the next commit; nil when the task is cancelled or the store's feed ends.
          if await _wakeups?.next() == nil && Task.isCancelled { break }
        }
        _end()
        return nil
      } catch {
        _end()
        throw error
      }
    }

    /// Stops following the store: the subscription ends now, not when the iterator goes.
    private mutating func _end() {
      _ended = true
      _following = nil
      _wakeups = nil
    }

    /// The changes the iterator holds for its next read (tests check the bound).
    var _heldChanges: Int { _following?.subscription.inbox.heldChanges ?? 0 }

    /// The newest commit version the iterator has been told of, read or not (tests wait on
    /// it); 0 before the first read.
    var _heardVersion: UInt64 { _following?.subscription.inbox.heardVersion ?? 0 }
  }

  /// Starts following the store, at the first ``AsyncIterator/next()``.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(set: set) }
}

/// What a live request set holds between commits, and how it moves to the next state.
///
/// A live query is the fetch, re-run: its first state and every re-read evaluate the set
/// as ``RequestSet/fetch()`` does (a fresh copy of the set, prepared and run once), so a
/// SQL store runs the filter, sort and window itself and hands over only the result,
/// instead of every row of its table. Only merging a commit's changes into the held result
/// runs in process, over the held records and the changed ones.
struct _LiveResult<Element: Record> {
  let set: RequestSet<Element>
  private(set) var records: [Element]
  private(set) var version: UInt64
  /// Whether the query's shape allows merging commits into the held result.
  private let incremental: Bool
  /// The limit of the single stage, if any.
  private let limit: Int?

  init(set: RequestSet<Element>) throws {
    self.set = set
    (records, version) = try Self._read(set)
    let stages = set._query.stages
    if stages.count == 1, let stage = stages.first, stage.distinct == nil, !stage.reversed,
      stage.window.offset == 0
    {
      incremental = true
      limit = stage.window.limit
    } else {
      incremental = false
      limit = nil
    }
  }

  var initial: RequestSetSnapshot<Element> {
    RequestSetSnapshot(
      records: records, version: version, inserted: Array(records.indices), deleted: [], updated: [],
      isInitial: true)
  }

  /// The state after every commit in `pending`, with its differences from the state
  /// held before, or nil when nothing the observer can see changed.
  ///
  /// Commits that follow the held version without a gap are merged into the held result
  /// when the query allows it (all of them as one batch); otherwise the store is read
  /// again, which also covers anything committed since.
  mutating func catchUp(_ pending: _CommitInbox<Element>.Pending) throws -> RequestSetSnapshot<Element>? {
    // Already seen (a re-read covered it), unless a related store moved.
    guard pending.latest > version || pending.related else { return nil }
    // Two writers may publish in the other order than they committed.
    let commits = pending.commits.filter { $0.version > version }.sorted { $0.version < $1.version }
    var known: [RecordChange<Element>]? = nil
    if !pending.reread, commits.enumerated().allSatisfy({ $1.version == version &+ 1 &+ UInt64($0) }) {
      known = commits.flatMap { $0.changes ?? [] }
    }
    let saved = known.map {
      Set($0.compactMap { if case .save(let r) = $0 { return r.id } else { return nil } })
    }
    if incremental, let changes = known, let merged = try _merge(changes) {
      let old = records
      records = merged
      version = commits.last?.version ?? version
      return RequestSetSnapshot.diff(from: old, to: merged, version: version, changedIDs: saved)
    }
    // Re-read: the store's latest state covers these commits and any published after them.
    let (fresh, freshVersion) = try Self._read(set)
    let old = records
    records = fresh
    let exact = known != nil && freshVersion == commits.last?.version
    version = freshVersion
    return RequestSetSnapshot.diff(from: old, to: fresh, version: version, changedIDs: exact ? saved : nil)
  }

  /// The set's result now and the store version it was read at: one evaluation of a fresh
  /// copy of the set, the one ``RequestSet/fetch()`` runs (pushed down on a store that runs
  /// queries itself, its relations resolved anew on a set made by a graph).
  static func _read(_ set: RequestSet<Element>) throws -> (records: [Element], version: UInt64) {
    let fresh = set.refreshed()
    let e = try fresh._cache.evaluation(fresh._source, fresh._query)
    var records: [Element] = []
    records.reserveCapacity(e.count)
    for i in 0..<e.count { records.append(try e.element(i)) }
    return (records, e.snapshot.version)
  }

  /// The result after `changes`, computed from the held result alone, or nil when that
  /// cannot be done exactly (the query must be read again).
  ///
  /// Inserted records come after every stored record in store order, so running the query
  /// over [held result, matching inserts] orders ties exactly as the store would; a
  /// delete of a held record is exact unless the limit had cut the result; a save is exact
  /// only when the record neither was nor becomes part of the result.
  private func _merge(_ changes: [RecordChange<Element>]) throws -> [Element]? {
    // Any write changes the statistics every relevance score reads: read again.
    if set._query.sortsByRelevance { return nil }
    let held = Set(records.map(\.id))
    let full = limit.map { records.count >= $0 } ?? false
    var removed = Set<Element.ID>()
    var added: [Element] = []
    for change in changes {
      switch change {
      case .insert(let r):
        added.append(r)
      case .delete(let id):
        if held.contains(id) {
          if full { return nil }
          removed.insert(id)
        }
        added.removeAll { $0.id == id }
      case .save(let r):
        if held.contains(r.id) || added.contains(where: { $0.id == r.id }) { return nil }
        if try _matches(r) { return nil }
      }
    }
    if added.isEmpty && removed.isEmpty { return records }
    let candidates = records.filter { !removed.contains($0.id) } + added
    let small = StoreSnapshot(records: candidates)
    let slots = try _Executor.slots(set._query, in: small)
    return try slots.map { try small._record(at: $0) }
  }

  private func _matches(_ record: Element) throws -> Bool {
    var query = set._query
    query.stages[0].window = _Window()
    query.stages[0].sort = []
    return try _Executor.count(query, in: StoreSnapshot(records: [record])) == 1
  }
}

/// The records of a request set, a batch at a time; see ``RequestSet/stream(batchSize:)``.
public struct RequestSetStream<Element: Record>: AsyncSequence, Sendable {
  let set: RequestSet<Element>
  let batchSize: Int

  /// Reads the next batch when the last one is used up.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let set: RequestSet<Element>
    let batchSize: Int
    var evaluation: _Evaluation<Element>?
    var position = 0
    var batch: [Element] = []
    var batchIndex = 0

    /// The next record, or nil at the end (or when the task is cancelled).
    public mutating func next() async throws -> Element? {
      if batchIndex < batch.count {
        defer { batchIndex += 1 }
        return batch[batchIndex]
      }
      if Task.isCancelled { return nil }
      let e = try evaluation ?? set._cache.evaluation(set._source, set._query)
      evaluation = e
      guard position < e.count else { return nil }
      let end = position + Swift.min(batchSize, e.count - position)  // no overflow at Int.max
      batch = try (position..<end).map { try e.element($0) }
      // A log's mapped pages would stay resident as the walk goes, the whole file by the
      // end; a stream lets them go every 16,384 records, so it holds at most that many
      // records' pages (in store order, a few MB; in a sorted order, up to a page each).
      if (position ^ end) >> 14 != 0 { e.releaseResidentMemory() }
      position = end
      batchIndex = 1
      await Task.yield()
      return batch[0]
    }
  }

  /// Starts reading.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(set: set, batchSize: batchSize) }
}
