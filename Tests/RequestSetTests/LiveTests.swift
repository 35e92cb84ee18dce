import Foundation
import Synchronization
import Testing
@testable import RequestSet

/// Reads states from a live set one at a time, with a deadline, from the test's task.
final class StateReader<Element: Record>: @unchecked Sendable {
  // @unchecked: the iterator is only touched by `read(within:)` and `heard(_:within:)`,
  // which the one test task calls sequentially (never concurrently), and by deinit after.
  private var iterator: RequestSetChanges<Element>.AsyncIterator

  init(_ set: RequestSet<Element>) { iterator = set.changes.makeAsyncIterator() }

  /// What a read gave within its limit.
  enum Outcome {
    case state(RequestSetSnapshot<Element>)
    /// The live set ended (its iterator returned nil).
    case ended
    case timedOut
  }

  /// The next state, or nil if none arrives within `seconds` of time the test could run
  /// (see ``runnableSleep(_:)``), or if the live set ends.
  ///
  /// The limit is for a state the test expects: a nil is a failure, never evidence that
  /// nothing more will come (on a loaded machine a state can take minutes to arrive).
  func next(within seconds: Double = eventLimit) async throws -> RequestSetSnapshot<Element>? {
    if case .state(let state) = try await read(within: seconds) { return state }
    return nil
  }

  /// Whether the live set ends (rather than yielding a state) within `seconds` of time the
  /// test could run.
  func ends(within seconds: Double = eventLimit) async throws -> Bool {
    if case .ended = try await read(within: seconds) { return true }
    return false
  }

  /// The next state, the end of the live set, or the limit, whichever comes first.
  func read(within seconds: Double = eventLimit) async throws -> Outcome {
    try await withThrowingTaskGroup(of: Outcome.self) { group in
      let box = UnsafeTransfer(self)
      group.addTask { try await box.value.iterator.next().map(Outcome.state) ?? .ended }
      group.addTask {
        try await runnableSleep(seconds)
        return .timedOut
      }
      let first = try await group.next()!
      group.cancelAll()
      return first
    }
  }

  /// Waits until the live set has been told of the commit with `version` (or a later one):
  /// a store that reports its commits from another thread or process (SQLite, PostgreSQL,
  /// a read-only LogStore) may take a while. Returns false if it was not within `seconds`.
  ///
  /// Call it after the first `next()`, which subscribes.
  func heard(_ version: UInt64, within seconds: Double = eventLimit) async throws -> Bool {
    try await eventually(within: seconds) { iterator._heardVersion >= version }
  }

  /// The changes the live set holds for its next read.
  var heldChanges: Int { iterator._heldChanges }
}

/// A version number shared between tasks.
final class VersionBox: Sendable {
  let value = Atomic<UInt64>(0)
}

/// Hands a value to a child task that the caller awaits before touching it again.
struct UnsafeTransfer<T>: @unchecked Sendable {
  // @unchecked: used only where the sending task waits for the child task to finish
  // with the value before it uses the value itself (StateReader.next).
  let value: T
  init(_ value: T) { self.value = value }
}

/// Each awaited state has its own limit, in time the test could run (``eventLimit``): on a
/// loaded machine a test's tasks can wait many minutes for a thread, so a wall-clock limit
/// here is only a backstop against a hang in the tests that read `changes` directly, far
/// past any wait a loaded run has shown.
///
/// More than 20 s (about 25 s on a 2-core machine): every live test runs on each of eight
/// writable stores (the first two also through PgBouncer, whose live sets poll a commit
/// counter), the SQL ones following commits through a poller, and the suite runs
/// its tests one at a time (`.serialized`). The stalled consumer's 2,100 commits (10,000
/// with `REQUESTSET_SOAK=1`) are the longest part.
@Suite(.serialized, .timeLimit(.minutes(60)), .ownThreads(servedFirst: true)) struct LiveTests {
  @Test(arguments: StoreKind.writable + StoreKind.throughPgBouncer)
  func theFirstStateIsTheCurrentResultThenEachChange(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = StateReader(RequestSet(store).filter("species", value: "Cow").sortBy(\.age))
    let first = try #require(try await cows.next())
    #expect(first.isInitial && first.ids == [4, 2] && first.inserted == [0, 1])

    try store.insert(Animal(id: 7, name: "Calf", species: "Cow", age: 1))
    let inserted = try #require(try await cows.next())
    #expect(inserted.ids == [7, 4, 2] && inserted.inserted == [0] && inserted.deleted.isEmpty && !inserted.isInitial)

    // A write that does not touch the result yields nothing: the next state is the
    // one after the write that does.
    try store.insert(Animal(id: 8, name: "Pup", species: "Dog", age: 1))
    try store.save(Animal(id: 2, name: "Daisy", species: "Cow", age: 0))
    let updated = try #require(try await cows.next())
    #expect(updated.ids == [2, 7, 4] && updated.updated == [0] && updated.inserted.isEmpty)

    _ = try store.delete(id: 4)
    let deleted = try #require(try await cows.next())
    #expect(deleted.ids == [2, 7] && deleted.deleted == [2])

    try store.transaction { tx in
      tx.save(Animal(id: 7, name: "Calf", species: "Horse", age: 1))
      tx.insert(Animal(id: 9, name: "Moo", species: "Cow", age: 9))
    }
    let batch = try #require(try await cows.next())
    #expect(batch.ids == [2, 9] && batch.deleted == [1] && batch.inserted == [1])
  }

  /// Random writes against a sorted, limited set: every state the set yields equals a
  /// fresh evaluation, and no change is missed. One seed per store in the quick form,
  /// three with `REQUESTSET_SOAK=1`.
  @Test(arguments: StoreKind.writable + StoreKind.throughPgBouncer, TestScale.pick(quick: [0], soak: [0, 1, 2]))
  func everyStateEqualsAFreshEvaluation(kind: StoreKind, seed: Int) async throws {
    var rng = SeededRandom(seed: UInt64(seed) &+ 77)
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.random(count: 60, seed: UInt64(seed)))
    let query: (RequestSet<Animal>) -> RequestSet<Animal> = [
      { $0.filter("species", value: "Cow").sortBy(\.age).limit(5) },
      { $0.filter(\.age > 10).sortBy("name") },
      { $0.sortBy(\.weight, order: .descending).offset(2).limit(4) },
    ][seed]
    let reader = StateReader(query(RequestSet(store)))
    var seen = try #require(try await reader.next()).records
    var nextID = 1_000
    for step in 0..<150 {
      switch Int.random(in: 0..<4, using: &rng) {
      case 0:
        nextID += 1
        try store.insert(Animal.random(count: 1, seed: UInt64(step)).map { var a = $0; a.id = nextID; return a }[0])
      case 1:
        let ids = try RequestSet(store).ids()
        _ = try store.delete(id: ids.randomElement(using: &rng)!)
      case 2:
        let ids = try RequestSet(store).ids()
        var a = try store.fetch(id: ids.randomElement(using: &rng)!)!
        a.age = Int.random(in: 0...20, using: &rng)
        a.species = Animal.speciesPool.randomElement(using: &rng)!
        try store.save(a)
      default:
        try store.apply((0..<3).map { _ in
          nextID += 1
          return .insert(Animal(id: nextID, name: "b\(nextID)", species: "Cow", age: Int.random(in: 0...20, using: &rng)))
        })
      }
      // Every visible change (a record entering, leaving, moving or changing) yields
      // exactly one state; anything else yields none.
      let expected = try query(RequestSet(store)).fetch()
      if expected != seen {
        let state = try #require(try await reader.next(), "step \(step): no state for a change")
        #expect(state.records == expected, "step \(step)")
        seen = state.records
      }
    }
  }

  @Test func cancellingReleasesTheSubscription() async throws {
    let store = try LogStore<Animal>(path: TemporaryLogDirectory.freshPath())
    try store.insert(contentsOf: Animal.zoo)
    let task = Task {
      var n = 0
      for try await _ in RequestSet(store).changes { n += 1 }
      return n
    }
    #expect(try await eventually { store._feed.isObserved })
    task.cancel()
    _ = try await task.value
    #expect(try await eventually { !store._feed.isObserved })
  }

  /// A read-only LogStore follows its writer by polling the file, through appends and
  /// through the writer's compaction (which swaps in a new file).
  @Test func aReadOnlyLogFollowsItsWriter() async throws {
    let path = TemporaryLogDirectory.freshPath()
    let writer = try LogStore<Animal>(path: path)
    try writer.insert(contentsOf: Animal.zoo)
    let reader = try LogStore<Animal>(path: path, options: .init(readOnly: true))
    let dogs = StateReader(RequestSet(reader).filter("species", value: "Dog").sortBy(\.id))
    #expect(try await dogs.next()?.ids == [3, 6])
    try writer.insert(Animal(id: 7, name: "Pup", species: "Dog", age: 1))
    #expect(try await dogs.next()?.ids == [3, 6, 7])
    _ = try writer.delete(id: 3)
    try writer.compact()
    #expect(try await dogs.next()?.ids == [6, 7])
    try writer.save(Animal(id: 6, name: "Zed", species: "Dog", age: 6))
    let updated = try #require(try await dogs.next())
    #expect(updated.ids == [6, 7] && updated.updated == [0])
    #expect(RequestSet(reader).count == 6)
  }

  @Test func otherStoresArePolled() async throws {
    let store = CountingStore()
    try store.insert(contentsOf: Animal.zoo)
    let reader = StateReader(RequestSet(store).filter("species", value: "Dog"))
    #expect(try await reader.next()?.ids == [3, 6])
    try store.insert(Animal(id: 7, name: "Pup", species: "Dog", age: 1))
    let next = try #require(try await reader.next())
    #expect(next.ids == [3, 6, 7] && next.inserted == [2])
  }

  @Test func anArrayHasNoChangesToFollow() async throws {
    await #expect(throws: RequestSetError.self) {
      for try await _ in RequestSet(Animal.zoo).changes {}
    }
  }

  @Test(arguments: StoreKind.allCases)
  func streamReadsTheResultInBatches(kind: StoreKind) async throws {
    let data = Animal.random(count: 500, seed: 5)
    let set = try kind.makeSet(data).filter(\.age > 5).sortBy(\.name)
    var streamed: [Int] = []
    for try await a in set.stream(batchSize: 64) { streamed.append(a.id) }
    #expect(streamed == set.map(\.id))
  }

  @Test func streamDecodesOneBatchAtATime() async throws {
    let source = CountingRecords(Animal.random(count: 1_000, seed: 3))
    let snapshot = source.snapshot()
    let all = RequestSet(_source: _Source(describe: { "counting" }, snapshot: { snapshot }), _query: _Query())
    var iterator = all.filter("species", value: "Cow").stream(batchSize: 10).makeAsyncIterator()
    _ = try await iterator.next()
    #expect(source.reads.load(ordering: .relaxed) == 10)
    for _ in 0..<10 { _ = try await iterator.next() }
    #expect(source.reads.load(ordering: .relaxed) == 20)
  }

  /// Writers move weight between records (the total never changes) while observers
  /// follow the whole store: every state an observer sees must hold the invariant, and
  /// every observer must reach the final state.
  @Test(arguments: StoreKind.writable)
  func stressWritersAndObservers(kind: StoreKind) async throws {
    let n = 40
    let store = try kind.makeStore()
    try store.insert(contentsOf: (0..<n).map { Animal(id: $0, name: "a\($0)", species: "Cow", age: 0, weight: 100) })
    let total = Double(n) * 100
    // Writers run for 0.4 s in the quick form, 0.8 s with `REQUESTSET_SOAK=1`.
    let deadline = ContinuousClock.now + .milliseconds(TestScale.pick(quick: 400, soak: 800))
    let observers = 4
    let finalVersion = VersionBox()
    try await withThrowingTaskGroup(of: Void.self) { group in
      for w in 0..<3 {
        group.addTask {
          var rng = SeededRandom(seed: UInt64(w))
          while ContinuousClock.now < deadline {
            let a = Int.random(in: 0..<n, using: &rng), b = Int.random(in: 0..<n, using: &rng)
            guard a != b else { continue }
            try RequestSet(store).filter(\.id == a || \.id == b).update { $0.weight += $0.id == a ? -1 : 1 }
            await Task.yield()
          }
        }
      }
      for _ in 0..<observers {
        group.addTask {
          for try await state in RequestSet(store).sortBy(\.id).changes {
            #expect(state.records.count == n)
            #expect(state.records.reduce(0) { $0 + $1.weight } == total)
            let target = finalVersion.value.load(ordering: .acquiring)
            if target != 0 && state.version >= target { return }
          }
        }
      }
      // Once the writers stop, publish the final version and wait for the observers.
      // (A visible change each time: a write that changes nothing yields no state.)
      try await Task.sleep(until: deadline + .milliseconds(50))
      try RequestSet(store).filter(\.id == 0).update { $0.name = "final" }
      finalVersion.value.store(try store.snapshot().version, ordering: .releasing)
      try RequestSet(store).filter(\.id == 0).update { $0.name = "final, again" }
      try await group.waitForAll()
    }
    #expect(try RequestSet(store).sum(\.weight) == total)
  }
}

/// The first element of `stream`, or nil if none arrives within `seconds` (a failure: see
/// ``eventLimit``).
func firstElement<T: Sendable>(of stream: AsyncStream<T>, within seconds: Double = eventLimit) async -> T? {
  await withTaskGroup(of: T?.self) { group in
    group.addTask { await stream.first { _ in true } }
    group.addTask {
      try? await runnableSleep(seconds)
      return nil
    }
    let first = await group.next()!
    group.cancelAll()
    return first
  }
}

/// A slow consumer, and the lifetime of what a live set holds.
extension LiveTests {
  /// Nine commits land while the consumer is busy: its next read is the newest state,
  /// with differences from the state it read before, not from the states it never read.
  @Test(arguments: StoreKind.writable)
  func aSlowConsumerReadsTheLatestStateAndItsDifferences(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = RequestSet(store).filter("species", value: "Cow").sortBy(\.age)
    let reader = StateReader(cows)
    let first = try #require(try await reader.next())
    #expect(first.ids == [4, 2])

    try store.insert(Animal(id: 7, name: "Calf", species: "Cow", age: 1))  // enters
    try store.insert(Animal(id: 8, name: "Pup", species: "Dog", age: 1))  // elsewhere
    try store.save(Animal(id: 2, name: "Daisy", species: "Cow", age: 8, weight: 610))  // changes
    _ = try store.delete(id: 4)  // leaves
    try store.insert(Animal(id: 9, name: "Moo", species: "Cow", age: 9))  // enters…
    try store.save(Animal(id: 9, name: "Moo", species: "Horse", age: 9))  // …and leaves unseen
    try store.insert(Animal(id: 10, name: "Old", species: "Cow", age: 20))  // enters
    try store.transaction { tx in
      tx.delete(id: 8)
      tx.insert(Animal(id: 11, name: "Kid", species: "Cow", age: 0))  // enters
    }
    try store.save(Animal(id: 7, name: "Calf", species: "Cow", age: 1))  // rewritten as it was
    // A store that reports its commits from another thread (SQLite, PostgreSQL) may not
    // have reported them all yet: the consumer reads once the set has heard of the last.
    #expect(try await reader.heard(try store.snapshot().version))

    let state = try #require(try await reader.next())
    #expect(state.records == (try cows.refreshed().fetch()))
    #expect(state.ids == [11, 7, 2, 10])
    #expect(state.version == (try store.snapshot().version))
    #expect(state.deleted == [0])  // Bella, first of what the consumer saw
    #expect(state.inserted == [0, 1, 3])  // Kid, Calf, Old
    #expect(state.updated == [2])  // Daisy
    // Nothing else is queued (the states in between were never made): the next state is
    // the next write's, with its differences from this one.
    try store.insert(Animal(id: 12, name: "Elder", species: "Cow", age: 30))
    let next = try #require(try await reader.next())
    #expect(next.ids == [11, 7, 2, 10, 12])
    #expect(next.inserted == [4] && next.deleted.isEmpty && next.updated.isEmpty)
  }

  /// The same through the merge path: inserts only, into a sorted, limited set.
  @Test(arguments: StoreKind.writable)
  func insertsWhileTheConsumerIsBusyAreMergedIntoOneState(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let youngest = RequestSet(store).sortBy(\.age).limit(3)
    let reader = StateReader(youngest)
    #expect(try await reader.next()?.ids == [4, 1, 3])
    for id in 20..<28 { try store.insert(Animal(id: id, name: "n\(id)", species: "Cow", age: id % 2 == 0 ? 1 : 30)) }
    // A store that reports its commits from another thread (SQLite, PostgreSQL) may not
    // have reported all eight yet, and a read then returns the newest state it has reported
    // (after 20, 21 and 22: [20, 22, 4]). The consumer reads once the set has heard of all.
    #expect(try await reader.heard(try store.snapshot().version))
    let state = try #require(try await reader.next())
    #expect(state.ids == [20, 22, 24])
    #expect(state.records == (try youngest.refreshed().fetch()))
    #expect(state.inserted == [0, 1, 2] && state.deleted == [0, 1, 2] && state.updated.isEmpty)
    // Nothing else is queued: the next state is the next write's, with its differences
    // from this one.
    try store.insert(Animal(id: 30, name: "n30", species: "Cow", age: 0))
    let next = try #require(try await reader.next())
    #expect(next.ids == [30, 20, 22] && next.inserted == [0] && next.deleted == [2] && next.updated.isEmpty)
  }

  /// Inserts land while the consumer reads: every state it reads is one the store
  /// committed (its records are the query's result at the state's version), in order, and
  /// the last is the final one. A store that reports its commits from another thread may
  /// hand a read a state older than its newest commit, never one it did not hold.
  @Test(arguments: StoreKind.writable)
  func everyStateReadDuringABurstIsACommittedState(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let youngest = RequestSet(store).sortBy(\.age).limit(3)
    let reader = StateReader(youngest)
    let first = try #require(try await reader.next())
    // Each insert is younger than every record before it, so each changes the result.
    let writer = Task {
      var committed: [UInt64: [Animal]] = [:]
      for id in 20..<60 {
        try store.insert(Animal(id: id, name: "n\(id)", species: "Cow", age: -id))
        committed[try store.snapshot().version] = try youngest.refreshed().fetch()
        await Task.yield()
      }
      return committed
    }
    var states = [first]
    while states.last?.ids != [59, 58, 57] {
      states.append(try #require(try await reader.next(), "after \(states.count) states"))
    }
    var committed = try await writer.value
    committed[first.version] = first.records
    for (previous, state) in zip(states, states.dropFirst()) {
      #expect(state.version > previous.version)
      #expect(committed[state.version] == state.records, "version \(state.version): \(state.ids)")
    }
  }

  /// Thousands of commits to a consumer that reads nothing (2,100, twice the bound;
  /// 10,000 with `REQUESTSET_SOAK=1`): the set holds a bounded number of changes, and one
  /// read then returns the final state.
  @Test(arguments: StoreKind.writable)
  func aStalledConsumerHoldsABoundedBacklog(kind: StoreKind) async throws {
    let commits = TestScale.pick(quick: 2_100, soak: 10_000)
    #expect(commits > 2 * _CommitInbox<Animal>.capacity)
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let set = RequestSet(store).filter(\.age >= 100).sortBy(\.id)
    var iterator = set.changes.makeAsyncIterator()
    #expect(try await iterator.next()?.ids == [])
    var most = 0
    for i in 0..<commits {
      try store.insert(Animal(id: 100 + i, name: "n\(i)", species: "Cow", age: 100 + i % 7))
      if i % 500 == 0 { most = max(most, iterator._heldChanges) }
    }
    // A store the engine reads through commits(polling:) (SQLite, a server) hands its
    // commits over from a task: wait until it has handed over the last, checking the bound
    // all along. (Whether a check catches changes held is up to that task's timing: past
    // the bound the set keeps none, only a note to read again.)
    if !StoreKind.deliveringSynchronously.contains(kind) {
      let final = try store.snapshot().version
      #expect(
        try await eventually {
          most = max(most, iterator._heldChanges)
          return iterator._heardVersion >= final
        })
    } else {
      #expect(most > 0)
    }
    most = max(most, iterator._heldChanges)
    #expect(most <= _CommitInbox<Animal>.capacity)
    let state = try #require(try await iterator.next())
    #expect(state.ids == Array(100..<(100 + commits)))
    #expect(state.inserted == Array(0..<commits))
    // Commits handed over from a task may still be arriving.
    if StoreKind.deliveringSynchronously.contains(kind) { #expect(iterator._heldChanges == 0) }
  }

  /// A read-only LogStore's follower reads the writer's newest state after a burst.
  @Test func aSlowFollowerOfAReadOnlyLogReadsTheLatestState() async throws {
    let path = TemporaryLogDirectory.freshPath()
    let writer = try LogStore<Animal>(path: path)
    try writer.insert(contentsOf: Animal.zoo)
    let follower = try LogStore<Animal>(path: path, options: .init(readOnly: true))
    let dogs = StateReader(RequestSet(follower).filter("species", value: "Dog").sortBy(\.id))
    #expect(try await dogs.next()?.ids == [3, 6])
    for id in 20..<28 { try writer.insert(Animal(id: id, name: "d\(id)", species: "Dog", age: 1)) }
    _ = try writer.delete(id: 3)
    try writer.save(Animal(id: 6, name: "Zed", species: "Dog", age: 6))
    // The consumer reads once the follower's polling has reported the writes. (The
    // follower's snapshot picks them up; its polling then reports that version.)
    #expect(try await dogs.heard(try follower.snapshot().version))
    let state = try #require(try await dogs.next())
    #expect(state.ids == [6] + Array(20..<28))
    #expect(state.deleted == [0] && state.inserted == Array(1...8) && state.updated == [0])
  }

  /// Every observer of a busy store reaches the final state; cancelling them all leaves
  /// the store unobserved.
  @Test(arguments: StoreKind.writable)
  func manyObserversEachReachTheFinalState(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let feed = ObservedFeed.of(store)
    let target = 200
    let observers = (0..<20).map { _ in
      Task {
        for try await state in RequestSet(store).filter(\.age >= 100).sortBy(\.id).changes where state.records.count == target {
          return state.ids
        }
        return []
      }
    }
    _ = try await eventually { feed?.isObserved != false }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for w in 0..<4 {
        group.addTask {
          for i in stride(from: w, to: target, by: 4) {
            try store.insert(Animal(id: 100 + i, name: "n\(i)", species: "Cow", age: 100))
          }
        }
      }
      try await group.waitForAll()
    }
    for observer in observers { #expect(try await observer.value == Array(100..<(100 + target))) }
    if StoreKind.publishingThroughAFeed.contains(kind) { #expect(feed?.isObserved == false) }
  }

  /// An iterator that is dropped mid-way unsubscribes at once, without being cancelled.
  @Test(arguments: StoreKind.publishingThroughAFeed)
  func aDroppedIteratorUnsubscribesAtOnce(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    let feed = try #require(ObservedFeed.of(store))
    do {
      var iterator = RequestSet(store).changes.makeAsyncIterator()
      #expect(!feed.isObserved)  // nothing happens before the first read
      _ = try await iterator.next()
      #expect(feed.isObserved)
    }
    // A store the engine reads through commits(polling:) (SQLite) unsubscribes when the
    // draining task sees its cancellation, which may be a moment after the drop.
    if kind == .sqlite || kind == .indexedSQLite {
      #expect(try await eventually { !feed.isObserved })
    } else {
      #expect(!feed.isObserved)
    }
  }

  /// A store whose feed ends (as a closing store's does) ends its live sets, after the
  /// last state they were told of.
  @Test(arguments: StoreKind.publishingThroughAFeed)
  func aFinishedFeedEndsTheLiveSet(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let feed = try #require(ObservedFeed.of(store))
    let reader = StateReader(RequestSet(store).sortBy(\.id))
    #expect(try await reader.next()?.records.count == 6)
    let plain = store.commits(polling: .zero)
    try store.insert(Animal(id: 7, name: "Calf", species: "Cow", age: 1))
    feed.finish()
    #expect(try await reader.next()?.records.count == 7)
    #expect(try await reader.next() == nil)
    #expect(!feed.isObserved)
    var commits: [UInt64] = []
    for await commit in plain { commits.append(commit.version) }
    #expect(commits == [try store.snapshot().version])
  }

  /// The default `commits(polling:)` reports a commit made right after it was called,
  /// before its polling task first ran.
  @Test func polledCommitsStartFromTheCallNotTheFirstPoll() async throws {
    let store = CountingStore()
    try store.insert(contentsOf: Animal.zoo)
    let commits = store.commits(polling: .milliseconds(10))
    try store.insert(Animal(id: 7, name: "Calf", species: "Cow", age: 1))
    let commit = await firstElement(of: commits)
    #expect(commit?.version == (try store.snapshot().version))
    #expect(commit?.changes == nil)
  }

  /// `stream(batchSize:)` with a batch size below 1 throws `.invalidWindow` from the first
  /// `next()` instead of stopping the program (in a child process, so a regression fails
  /// only this test).
  @Test func aStreamWithABatchSizeBelowOneThrowsInsteadOfTrapping() throws {
    for size in ["0", "-3"] {
      let result = try AdversaryChild.run("streamBatchSize", size)
      #expect(result.exitStatus == 0, "\(result)")
      #expect(result.lines.first?.hasPrefix("error: RequestSetError.invalidWindow: stream(batchSize: \(size))") == true)
    }
    #expect(try AdversaryChild.run("streamBatchSize", "2").lines == ["streamed 1, 2, 3, 4, 5, 6", "done"])
  }
}

/// A store as one written outside the package would be (WritingABackend's example): an
/// array behind a lock, with versioned snapshots and the default, polling `commits`.
private final class VersionedArrayStore: RecordStore {
  typealias Element = Animal
  private let state = Mutex<(records: [Animal], version: UInt64)>(([], 0))

  func insert(_ record: Animal) throws { try apply([.insert(record)], ifVersion: nil) }
  func insert(contentsOf records: some Sequence<Animal>) throws { try apply(records.map { .insert($0) }, ifVersion: nil) }
  func save(_ record: Animal) throws { try apply([.save(record)], ifVersion: nil) }
  func delete(id: Int) throws -> Bool {
    guard try fetch(id: id) != nil else { return false }
    try apply([.delete(id: id)], ifVersion: nil)
    return true
  }
  func apply(_ changes: [RecordChange<Animal>], ifVersion expectedVersion: UInt64?) throws {
    try state.withLock { state in
      if let expectedVersion, expectedVersion != state.version { throw RequestSetError(.conflict, "Stale.") }
      var records = state.records
      for change in changes {
        let index = records.firstIndex { $0.id == change.id }
        switch change {
        case .insert(let record):
          if index != nil { throw RequestSetError(.duplicateID, "Taken.") }
          records.append(record)
        case .save(let record):
          if let index { records[index] = record } else { records.append(record) }
        case .delete:
          if let index { records.remove(at: index) }
        }
      }
      state = (records, state.version + 1)
    }
  }
  func snapshot() throws -> StoreSnapshot<Animal> {
    state.withLock { StoreSnapshot(records: $0.records, version: $0.version) }
  }
}

extension LiveTests {
  /// An outside store gives its snapshots its write counter; live sets over it then see
  /// its commits by polling, and writes through a query check the version.
  @Test func anOutsideStoreIsFollowedThroughItsSnapshotVersions() async throws {
    let store = VersionedArrayStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect(try store.snapshot().version == 1)
    let dogs = StateReader(RequestSet(store).filter("species", value: "Dog").sortBy(\.id))
    #expect(try await dogs.next()?.ids == [3, 6])
    try store.insert(Animal(id: 7, name: "Pup", species: "Dog", age: 1))
    let inserted = try #require(try await dogs.next())
    #expect(inserted.ids == [3, 6, 7] && inserted.inserted == [2])
    #expect(try RequestSet(store).filter("species", value: "Dog").update { $0.age += 1 } == 3)
    let updated = try #require(try await dogs.next())
    #expect(updated.updated == [0, 1, 2] && updated.records.map(\.age) == [6, 6, 2])
  }
}
