import Foundation
import Synchronization
import Testing
@testable import RequestSet

/// A store that counts how often it is asked for a snapshot.
final class CountingStore: RecordStore {
  let inner = MemoryStore<Animal>()
  let snapshots = Atomic<Int>(0)

  func insert(_ record: Animal) throws { try inner.insert(record) }
  func insert(contentsOf records: some Sequence<Animal>) throws { try inner.insert(contentsOf: records) }
  func save(_ record: Animal) throws { try inner.save(record) }
  func delete(id: Int) throws -> Bool { try inner.delete(id: id) }
  func apply(_ changes: [RecordChange<Animal>], ifVersion version: UInt64?) throws {
    try inner.apply(changes, ifVersion: version)
  }
  func fetch(id: Int) throws -> Animal? { try inner.fetch(id: id) }
  func snapshot() throws -> StoreSnapshot<Animal> {
    snapshots.add(1, ordering: .relaxed)
    return try inner.snapshot()
  }
}

@Suite(.ownThreads) struct LazinessTests {
  @Test func buildingAChainRunsNothing() throws {
    let store = CountingStore()
    try store.insert(contentsOf: Animal.zoo)
    let calls = Atomic<Int>(0)
    let set = RequestSet(store)
      .filter { calls.add(1, ordering: .relaxed); return $0.age > 2 }
      .filter("species", value: "Cow", mode: .or)
      .sortBy(\.age)
      .limit(3)
      .offset(1)
    #expect(store.snapshots.load(ordering: .relaxed) == 0)
    // explain() looks at the store's indexes in one snapshot, but runs no filter.
    _ = set.explain()
    #expect(store.snapshots.load(ordering: .relaxed) == 1)
    #expect(calls.load(ordering: .relaxed) == 0)
  }

  @Test(arguments: ["count", "subscript", "iteration", "first", "last", "fetch", "get", "isEmpty"])
  func evaluationHappensAtFirstRead(read: String) throws {
    let store = CountingStore()
    try store.insert(contentsOf: Animal.zoo)
    let set = RequestSet(store).filter(\.id == 3)
    #expect(store.snapshots.load(ordering: .relaxed) == 0)
    switch read {
    case "count": #expect(set.count == 1)
    case "subscript": #expect(set[0].name == "Rex")
    case "iteration": #expect(set.map(\.name) == ["Rex"])
    case "first": #expect(set.first?.name == "Rex")
    case "last": #expect(set.last?.name == "Rex")
    case "fetch": #expect(try set.fetch().map(\.name) == ["Rex"])
    case "get": #expect(try set.get().name == "Rex")
    default: #expect(!set.isEmpty)
    }
    #expect(store.snapshots.load(ordering: .relaxed) == 1)
    // Every later read reuses the same evaluation.
    _ = set.count
    _ = Array(set)
    _ = set.first
    _ = try set.fetch()
    #expect(store.snapshots.load(ordering: .relaxed) == 1)
  }

  @Test func aClosureFilterRunsOncePerRecordPerEvaluation() throws {
    let calls = Atomic<Int>(0)
    let set = RequestSet(Animal.zoo).filter { calls.add(1, ordering: .relaxed); return $0.age > 4 }
    #expect(set.count == 4)
    #expect(calls.load(ordering: .relaxed) == Animal.zoo.count)
    _ = set.count
    #expect(calls.load(ordering: .relaxed) == Animal.zoo.count)
  }
}

/// One plan per evaluation: every read of one set shares the one run of its query.
@Suite(.ownThreads) struct OneRunTests {
  /// Reads in the order a program often makes them: the count first, then the records.
  static func readEverything(_ set: RequestSet<Animal>) throws -> [Int] {
    let n = set.count
    #expect(set.underestimatedCount == n)
    let all = Array(set).map(\.id)
    #expect(all.count == n)
    #expect(set.indices.map { set[$0].id } == all)
    #expect(set.first?.id == all.first)
    #expect(set.last?.id == all.last)
    #expect(try set.fetch().map(\.id) == all)
    #expect(try set.fetchCount() == n)
    #expect(set.isEmpty == (n == 0))
    return all
  }

  @Test(arguments: StoreKind.allCases)
  func countThenIterationRunTheQueryOnce(kind: StoreKind) throws {
    let base = try kind.makeSet(Animal.zoo)
    let calls = Atomic<Int>(0)
    let set = base.filter { calls.add(1, ordering: .relaxed); return $0.age > 2 }
    let ids = try Self.readEverything(set)
    #expect(ids == Animal.zoo.filter { $0.age > 2 }.map(\.id))
    #expect(calls.load(ordering: .relaxed) == Animal.zoo.count)
  }

  @Test(arguments: StoreKind.allCases)
  func countOfASortedSetThenIterationRunTheQueryOnce(kind: StoreKind) throws {
    let base = try kind.makeSet(Animal.zoo)
    let calls = Atomic<Int>(0)
    let set = base.filter { calls.add(1, ordering: .relaxed); return $0.age > 1 }.sortBy(\.name).limit(3)
    let ids = try Self.readEverything(set)
    let expected = Animal.zoo.filter { $0.age > 1 }.sorted { $0.name < $1.name }.prefix(3).map(\.id)
    #expect(ids == Array(expected))
    if kind.pushesDown || kind == .indexedMemory || kind == .indexedLog {
      // The store sorts, or the plan walks the index on name: the closure runs on records
      // in order until the window is full, once (a second run would pass the count).
      #expect(calls.load(ordering: .relaxed) <= Animal.zoo.count)
    } else {
      #expect(calls.load(ordering: .relaxed) == Animal.zoo.count)
    }
  }

  @Test(arguments: StoreKind.allCases)
  func arrayOfAnUnreadSetRunsTheQueryOnce(kind: StoreKind) throws {
    let base = try kind.makeSet(Animal.zoo)
    let calls = Atomic<Int>(0)
    let set = base.filter { calls.add(1, ordering: .relaxed); return $0.age > 2 }.reversed()
    let ids = Array(set).map(\.id)
    #expect(ids == Animal.zoo.filter { $0.age > 2 }.map(\.id).reversed())
    #expect(calls.load(ordering: .relaxed) == Animal.zoo.count)
  }

  @Test(arguments: StoreKind.writable)
  func anUnfilteredCountIsTheSnapshotsCount(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect(try store.delete(id: 2))
    let all = RequestSet(store)
    #expect(all.count == 5)
    #expect(all.map(\.id) == [1, 3, 4, 5, 6])
    #expect(all.offset(1).limit(3).count == 3)
    #expect(all.offset(4).limit(3).count == 1)
    #expect(all.offset(Int.max).count == 0)
    #expect(all.sortBy(\.age).limit(2).count == 2)
    #expect(all.sortBy(\.age).limit(2).map(\.id) == [4, 1])
  }

  @Test func aBadSortKeyStillStopsTheCount() throws {
    let set = RequestSet(Animal.zoo).sortBy("nope")
    #expect(throws: RequestSetError.self) { try set.fetchCount() }
  }
}

@Suite(.ownThreads) struct ValueSemanticsTests {
  @Test(arguments: StoreKind.allCases)
  func everyBuilderLeavesTheReceiverAsItWas(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let ids = Animal.zoo.map(\.id)
    let derived: [RequestSet<Animal>] = [
      all.filter(\.age > 4), all.filter("name", value: "Rex"), all.filter([("species", "Cow")], mode: .or),
      all.filter(#Predicate<Animal> { $0.age > 4 }), all.filter { $0.id == 1 }, all.exclude("name", value: "Rex"),
      all.sortBy("name"), all.sortBy(\.age, order: .descending), all.sortBy([("species", .descending)]),
      all.limit(2), all.offset(4),
    ]
    for d in derived { _ = d.count }
    #expect(all.map(\.id) == ids)
    let filtered = all.filter(\.age > 4)
    _ = filtered.sortBy(\.name).limit(1).count
    #expect(filtered.map(\.id) == [2, 3, 5, 6])
  }

  @Test func aCopySharesTheEvaluationOfItsOriginal() throws {
    let store = try MemoryStore(Animal.zoo)
    let a = RequestSet(store)
    #expect(a.count == 6)
    let b = a
    try store.insert(Animal(id: 7, name: "New", species: "Cow", age: 1))
    #expect(b.count == 6)
    #expect(b.refreshed().count == 7)
  }
}
