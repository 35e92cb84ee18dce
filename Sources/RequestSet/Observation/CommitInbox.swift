/// What a live request set has been told since its consumer last read: the commits, while
/// they are few enough to merge into the held result, or else only that the store must be
/// read again. However many commits land while the consumer is busy, it holds at most
/// ``capacity`` changes, and the consumer's next read catches up with all of them at once.
final class _CommitInbox<Element: Record>: Sendable {
  /// The most changes kept for merging; past it the set reads the store again instead.
  static var capacity: Int { 1_024 }

  /// The commits heard of since the last ``take()``.
  struct Pending: Sendable {
    /// The commits, in the order they arrived, while they fit (empty once `reread`).
    var commits: [StoreCommit<Element>] = []
    /// The changes the commits hold.
    var changeCount = 0
    /// Some commit came without its changes, or there were too many to keep: the set must
    /// read the store again.
    var reread = false
    /// The newest version heard of.
    var latest: UInt64 = 0
    /// A store of a related type committed (see ``_CommitInbox/relatedChanged()``): the
    /// set must run its query again, though its own store may not have moved.
    var related = false

    var isEmpty: Bool { commits.isEmpty && !reread }
  }

  /// What is pending, whether the feed has ended, and the newest version ever heard of
  /// (which `take()` does not reset).
  private let state = _Lock<(pending: Pending, finished: Bool, heard: UInt64)>((Pending(), false, 0))
  private let wake: AsyncStream<Void>.Continuation
  /// Yields after commits arrive (one element stands for any number of them) and finishes
  /// with the feed: what the consumer waits on.
  let wakeups: AsyncStream<Void>

  init() {
    (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
  }

  /// Records a commit (or, for nil, that no more will come) and wakes the consumer.
  func receive(_ commit: StoreCommit<Element>?) {
    guard let commit else { return finish() }
    state.withLock { s in
      guard !s.finished else { return }
      s.pending.latest = Swift.max(s.pending.latest, commit.version)
      s.heard = Swift.max(s.heard, commit.version)
      guard !s.pending.reread else { return }
      if let changes = commit.changes, s.pending.changeCount + changes.count <= Self.capacity {
        s.pending.commits.append(commit)
        s.pending.changeCount += changes.count
      } else {
        s.pending.commits = []
        s.pending.changeCount = 0
        s.pending.reread = true
      }
    }
    wake.yield()
  }

  /// Records that a store of a related type committed: a set whose filter or sort walks
  /// a relation reads its store again, and re-resolves its relations, on its next read.
  func relatedChanged() {
    state.withLock { s in
      guard !s.finished else { return }
      s.pending.commits = []
      s.pending.changeCount = 0
      s.pending.reread = true
      s.pending.related = true
    }
    wake.yield()
  }

  /// Ends the inbox: the consumer reads what is pending, then the end.
  func finish() {
    state.withLock { $0.finished = true }
    wake.finish()
  }

  /// Everything heard of since the last call, and whether more can come.
  func take() -> (pending: Pending, finished: Bool) {
    state.withLock { s in
      defer { s.pending = Pending() }
      return (s.pending, s.finished)
    }
  }

  /// The changes held for the consumer now (for tests of the bound).
  var heldChanges: Int { state.withLock { $0.pending.changeCount } }

  /// The newest commit version the inbox has been told of, read or not (for tests that
  /// must wait until a store that reports its commits from another thread has reported
  /// them all, instead of guessing how long that takes).
  var heardVersion: UInt64 { state.withLock { $0.heard } }
}

/// Keeps a live request set's inbox subscribed to its store, for as long as the set's
/// iterator holds it.
///
/// A store that publishes its commits (``_CommitPublishing``) hands them to the inbox
/// directly as each write returns; any other store's ``RecordStore/commits(polling:)``
/// stream is drained into the inbox by a task, so that stream never backs up either.
final class _LiveSubscription<Element: Record>: Sendable {
  let inbox = _CommitInbox<Element>()
  private let end: @Sendable () -> Void
  /// The watches on the stores of related types, for a set made by a graph.
  private let related: [any Sendable]

  init(_ store: any RecordStore<Element>, graph: RecordGraph? = nil) {
    let inbox = self.inbox
    // A set of a graph's type whose relations reach other stores follows them too: a
    // commit there may change which records match or how they sort.
    if let graph, !graph.relations(of: Element.self).isEmpty {
      related = graph.entries.values.filter { $0.type != Element.self }.map { $0.watch { inbox.relatedChanged() } }
    } else {
      related = []
    }
    if let feed = (store as? any _CommitPublishing)?._liveFeed as? _CommitFeed<Element> {
      if let id = feed.add({ inbox.receive($0) }) {
        end = { [weak feed] in feed?.remove(id) }
      } else {
        inbox.finish()  // the store has closed: the set ends after its current state
        end = {}
      }
    } else {
      let commits = store.commits(polling: .milliseconds(50))
      let task = Task {
        for await commit in commits { inbox.receive(commit) }
        inbox.finish()
      }
      end = { task.cancel() }
    }
  }

  deinit { end() }
}

/// Calls `poke` after each commit of a store: how a live set hears of commits to the
/// stores of related types (see `_LiveSubscription`).
final class _CommitWatch<Element: Record>: Sendable {
  private let end: @Sendable () -> Void

  init(_ store: any RecordStore<Element>, poke: @escaping @Sendable () -> Void) {
    if let feed = (store as? any _CommitPublishing)?._liveFeed as? _CommitFeed<Element> {
      if let id = feed.add({ if $0 != nil { poke() } }) {
        end = { [weak feed] in feed?.remove(id) }
      } else {
        end = {}
      }
    } else {
      let commits = store.commits(polling: .milliseconds(50))
      let task = Task {
        for await _ in commits { poke() }
      }
      end = { task.cancel() }
    }
  }

  deinit { end() }
}
