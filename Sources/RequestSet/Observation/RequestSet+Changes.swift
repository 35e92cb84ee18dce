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
  /// A write that leaves the result as it was yields nothing. Each state says what was
  /// inserted, deleted and updated since the one before. The set follows the store's
  /// ``RecordStore/commits(polling:)``: as they happen on the built-in stores, by polling
  /// on others. Where it can, it updates the result without re-running the query: an
  /// insert into a filtered, sorted, limited set is merged into the result it holds.
  /// When the consumer is slower than the writers, states are coalesced, never lost:
  /// the next state read is the store's latest.
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
  /// decodes one batch at a time, which is how to walk a result larger than memory.
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

  /// Iterates over the states; cancelling the task ends the iteration.
  public struct AsyncIterator: AsyncIteratorProtocol {
    var base: AsyncThrowingStream<RequestSetSnapshot<Element>, any Error>.Iterator

    /// The next state, or nil when the task was cancelled.
    public mutating func next() async throws -> RequestSetSnapshot<Element>? {
      try await base.next()
    }
  }

  /// Starts following the store.
  public func makeAsyncIterator() -> AsyncIterator {
    let set = self.set
    let stream = AsyncThrowingStream<RequestSetSnapshot<Element>, any Error> { continuation in
      let task = Task {
        do {
          let store = try set._store()
          // Subscribe before the first read, so no commit falls between them.
          let commits = store.commits(polling: .milliseconds(50))
          var live = try _LiveResult(set: set, snapshot: store.snapshot())
          continuation.yield(live.initial)
          for await commit in commits {
            if Task.isCancelled { break }
            if let next = try live.advance(commit, store: store) { continuation.yield(next) }
          }
          continuation.finish()
        } catch {
          continuation.finish(throwing: error)
        }
      }
      continuation.onTermination = { _ in task.cancel() }
    }
    return AsyncIterator(base: stream.makeAsyncIterator())
  }
}

/// What a live request set holds between commits, and how it moves to the next state.
struct _LiveResult<Element: Record> {
  let set: RequestSet<Element>
  private(set) var records: [Element]
  private(set) var version: UInt64
  /// Whether the query's shape allows merging commits into the held result.
  private let incremental: Bool
  /// The limit of the single stage, if any.
  private let limit: Int?

  init(set: RequestSet<Element>, snapshot: StoreSnapshot<Element>) throws {
    self.set = set
    let slots = try _Executor.slots(set._query, in: snapshot)
    records = try slots.map { try snapshot._record(at: $0) }
    version = snapshot.version
    let stages = set._query.stages
    if stages.count == 1, let stage = stages.first, stage.distinct == nil, !stage.reversed, stage.window.offset == 0 {
      incremental = true
      limit = stage.window.limit
    } else {
      incremental = false
      limit = nil
    }
  }

  var initial: RequestSetSnapshot<Element> {
    RequestSetSnapshot(records: records, version: version, inserted: Array(records.indices), deleted: [], updated: [], isInitial: true)
  }

  /// The next state after `commit`, or nil when the result did not change.
  mutating func advance(_ commit: StoreCommit<Element>, store: any RecordStore<Element>) throws -> RequestSetSnapshot<Element>? {
    guard commit.version > version else { return nil }  // already seen (a re-read covered it)
    if incremental, commit.version == version &+ 1, let changes = commit.changes,
      let merged = try _merge(changes)
    {
      let old = records
      records = merged
      version = commit.version
      let saved = Set(changes.compactMap { if case .save(let r) = $0 { return r.id } else { return nil } })
      return RequestSetSnapshot.diff(from: old, to: merged, version: version, changedIDs: saved)
    }
    // Re-read: the latest snapshot covers this commit and any queued after it.
    let snapshot = try store.snapshot()
    let slots = try _Executor.slots(set._query, in: snapshot)
    let fresh = try slots.map { try snapshot._record(at: $0) }
    let old = records
    let changedIDs: Set<Element.ID>? =
      commit.changes.map { Set($0.compactMap { if case .save(let r) = $0 { return r.id } else { return nil } }) }
    records = fresh
    let known = commit.version == version &+ 1 && snapshot.version == commit.version ? changedIDs : nil
    version = snapshot.version
    return RequestSetSnapshot.diff(from: old, to: fresh, version: version, changedIDs: known)
  }

  /// The result after `changes`, computed from the held result alone, or nil when that
  /// cannot be done exactly (the query must be read again).
  ///
  /// Inserted records come after every stored record in store order, so running the query
  /// over [held result, matching inserts] orders ties exactly as the store would; a
  /// delete of a held record is exact unless the limit had cut the result; a save is exact
  /// only when the record neither was nor becomes part of the result.
  private func _merge(_ changes: [RecordChange<Element>]) throws -> [Element]? {
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
      position = end
      batchIndex = 1
      await Task.yield()
      return batch[0]
    }
  }

  /// Starts reading.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(set: set, batchSize: batchSize) }
}
