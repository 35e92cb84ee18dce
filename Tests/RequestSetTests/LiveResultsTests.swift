import Foundation
import Observation
import RequestSet
import Testing

/// `LiveResults` through `withObservationTracking`: one notification per state, none for
/// a commit that leaves the result as it was, the state equal to a fresh fetch after
/// each, and a retarget mid-stream.
@Suite(.ownThreads) struct LiveResultsTests {
  /// Counts change notifications, re-arming after each (as SwiftUI does).
  final class Watcher: Sendable {
    let results: LiveResults<Animal>
    let notified = SharedCounter()

    init(_ results: LiveResults<Animal>) {
      self.results = results
      arm()
    }

    func arm() {
      withObservationTracking {
        _ = results.records
        _ = results.count
        _ = results.version
        _ = results.error
      } onChange: { [self] in
        notified.add()
        arm()
      }
    }
  }

  @Test(arguments: StoreKind.writable)
  func oneNotificationPerChangedResult(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    defer { store.close() }
    try store.insert(contentsOf: Animal.random(count: 30, seed: 8))
    let cows = RequestSet(store).filter("species", value: "Cow").sortBy("age", "id")
    let results = LiveResults(cows, updatingOn: nil)
    #expect(try await eventually { results.isLoaded })
    #expect(results.records == (try cows.refreshed().fetch()))
    let watcher = Watcher(results)
    var expected = 0
    var rng = SeededRandom(seed: 99)
    var nextID = 1_000
    for step in 0..<(TestScale.pick(quick: 12, soak: 40)) {
      // Even steps change the result (a cow comes, goes or ages); odd steps write only
      // dogs, which the result does not hold.
      if step % 2 == 0 {
        let current = try cows.refreshed().fetch()
        switch Int.random(in: 0..<3, using: &rng) {
        case 0 where !current.isEmpty: try store.delete(id: current[0].id)
        case 1 where !current.isEmpty:
          var older = current[current.count / 2]
          older.age += 1 + Int.random(in: 0..<3, using: &rng)
          try store.save(older)
        default:
          nextID += 1
          try store.insert(Animal(id: nextID, name: "Moo", species: "Cow", age: Int.random(in: 0..<9, using: &rng)))
        }
        expected += 1
        let version = try store.snapshot().version
        #expect(try await eventually { results.version >= version }, "step \(step)")
        #expect(try await eventually { watcher.notified.value >= expected })
        #expect(watcher.notified.value == expected, "step \(step): one notification per changed result")
        #expect(results.records == (try cows.refreshed().fetch()))
        #expect(results.count == results.records.count)
      } else {
        nextID += 1
        try store.insert(Animal(id: nextID, name: "Woof", species: "Dog", age: 3))
      }
    }
    // Retarget mid-stream: one new state, the new query's.
    let dogs = RequestSet(store).filter("species", value: "Dog").sortBy(\.id).limit(5)
    let before = watcher.notified.value
    results.query = dogs
    #expect(try await eventually { watcher.notified.value > before })
    #expect(try await eventually { results.records == (try dogs.refreshed().fetch()) })
    #expect(watcher.notified.value == before + 1, "a retarget is one new state")
    // The old query no longer moves it: a new cow is not a notification.
    nextID += 1
    try store.insert(Animal(id: nextID, name: "Moo", species: "Cow", age: 1))
    try store.delete(id: try dogs.refreshed().fetch()[0].id)
    #expect(try await eventually { results.records == (try dogs.refreshed().fetch()) })
    #expect(watcher.notified.value == before + 2)
    results.cancel()
  }

  @Test func anErrorIsKeptAndANewQueryClearsIt() async throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    let results = LiveResults(RequestSet(store).filter("nope", value: 1), updatingOn: nil)
    #expect(try await eventually { results.error != nil })
    #expect((results.error as? RequestSetError)?.code == .unknownKey)
    results.query = RequestSet(store).filter("species", value: "Cow")
    #expect(try await eventually { results.isLoaded && results.error == nil })
    #expect(results.count == 2)
  }

  /// An executor that marks the thread while it runs the actor's jobs.
  final class MarkingExecutor: SerialExecutor {
    let queue = DispatchQueue(label: "LiveResultsTests.MarkingExecutor")
    func enqueue(_ job: consuming ExecutorJob) {
      let job = UnownedJob(job)
      queue.async {
        Thread.current.threadDictionary["LiveResultsTests.onActor"] = true
        job.runSynchronously(on: self.asUnownedSerialExecutor())
        Thread.current.threadDictionary["LiveResultsTests.onActor"] = nil
      }
    }
  }

  /// The actor updates are asked to arrive on.
  actor Chosen {
    let executor = MarkingExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
  }

  @Test func updatesArriveOnTheChosenActor() async throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    let results = LiveResults(RequestSet(store).sortBy(\.id), updatingOn: Chosen())
    let onActor = SharedCounter()
    let elsewhere = SharedCounter()
    let watch: @Sendable () -> Void = {
      withObservationTracking { _ = results.records } onChange: {
        if Thread.current.threadDictionary["LiveResultsTests.onActor"] as? Bool == true {
          onActor.add()
        } else {
          elsewhere.add()
        }
      }
    }
    watch()
    #expect(try await eventually { results.isLoaded })
    watch()
    try store.insert(Animal(id: 50, name: "Moo", species: "Cow", age: 1))
    #expect(try await eventually { results.count == Animal.zoo.count + 1 })
    #expect(try await eventually { onActor.value == 2 })
    #expect(elsewhere.value == 0)
  }
}
