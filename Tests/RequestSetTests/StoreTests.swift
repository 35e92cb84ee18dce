import Foundation
import Testing
@testable import RequestSet

@Suite(.ownThreads) struct StoreTests {
  func ids(_ store: any RecordStore<Animal>) throws -> [Int] { try RequestSet(store).fetch().map(\.id) }

  @Test(arguments: StoreKind.writable)
  func aDuplicateIdThrowsAndChangesNothing(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(Animal.zoo[0])
    let error = try #require(throws: RequestSetError.self) { try store.insert(Animal.zoo[0]) }
    #expect(error.code == .duplicateID)
    #expect(
      error.message
        == "A record with id 1 is already stored. Use save(_:) to replace it, or give the new record another id.")
    #expect(try ids(store) == [1])
  }

  @Test(arguments: StoreKind.writable)
  func aBatchIsAllOrNothing(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(Animal.zoo[2])
    // The batch clashes with a stored id at its end: nothing of it is inserted.
    #expect(throws: RequestSetError.self) { try store.insert(contentsOf: [Animal.zoo[0], Animal.zoo[1], Animal.zoo[2]]) }
    #expect(try ids(store) == [3])
    // A batch that holds one id twice is refused whole too.
    let twice = try #require(throws: RequestSetError.self) {
      try store.insert(contentsOf: [Animal.zoo[0], Animal.zoo[0]])
    }
    #expect(twice.message == "The batch holds id 1 twice. Give each record its own id; nothing was inserted.")
    #expect(try ids(store) == [3])
    try store.insert(contentsOf: [Animal.zoo[0], Animal.zoo[1]])
    #expect(try ids(store) == [3, 1, 2])
  }

  @Test(arguments: StoreKind.writable)
  func saveInsertsOrReplacesInPlace(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    var rex = Animal.zoo[2]
    rex.name = "Rexford"
    rex.nickname = nil
    rex.owner = Owner(name: "Kim", city: "Tromsø")
    try store.save(rex)
    try store.save(Animal(id: 9, name: "New", species: "Cow", age: 1))
    #expect(try ids(store) == [1, 2, 3, 4, 5, 6, 9])
    let all = RequestSet(store)
    #expect(try all.filter("name", value: "Rexford").get().id == 3)
    #expect(try all.filter("name", value: "Rex").fetch().isEmpty)
    // The replaced record's fields, including ones it gained and lost, are current.
    #expect(try all.filter("owner.city", value: "Tromsø").get().id == 3)
    #expect(try all.filter("nickname", value: nil).fetch().map(\.id) == [2, 3, 4, 6, 9])
  }

  @Test(arguments: StoreKind.writable)
  func deleteRemovesAndReportsWhetherItDid(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect(try store.delete(id: 3))
    #expect(try !store.delete(id: 3))
    #expect(try ids(store) == [1, 2, 4, 5, 6])
    #expect(RequestSet(store).filter("species", value: "Dog").map(\.id) == [6])
    // The id is free again; a re-inserted record goes to the end of store order.
    try store.insert(Animal.zoo[2])
    #expect(try ids(store) == [1, 2, 4, 5, 6, 3])
  }

  @Test(arguments: StoreKind.writable)
  func manyDeletesKeepQueriesRight(kind: StoreKind) throws {
    let store = try kind.makeStore()
    let records = Animal.random(count: 5_000, seed: 7)
    try store.insert(contentsOf: records)
    var rng = SeededRandom(seed: 99)
    var alive = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
    for id in records.map(\.id).shuffled(using: &rng).prefix(4_000) {
      #expect(try store.delete(id: id))
      alive[id] = nil
    }
    let expected = records.filter { alive[$0.id] != nil }
    #expect(try ids(store) == expected.map(\.id))
    #expect(
      try RequestSet(store).filter("species", value: "Cow").sortBy("age").fetch().map(\.id)
        == expected.filter { $0.species == "Cow" }.enumerated().sorted {
          $0.element.age != $1.element.age ? $0.element.age < $1.element.age : $0.offset < $1.offset
        }.map(\.element.id))
  }
}

@Suite(.ownThreads) struct SnapshotTests {
  @Test(arguments: StoreKind.writable)
  func theFirstEvaluationFixesTheResult(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = RequestSet(store).filter("species", value: "Cow")
    #expect(cows.count == 2)
    try store.insert(Animal(id: 7, name: "Moo", species: "Cow", age: 1))
    try store.save(Animal(id: 2, name: "Daisy", species: "Horse", age: 7))
    _ = try store.delete(id: 4)
    // Count, indices, subscripts and iteration still agree on the first snapshot.
    #expect(cows.count == 2)
    #expect(cows.indices == 0..<2)
    #expect(cows[0].id == 2 && cows[0].species == "Cow")
    #expect(cows.map(\.id) == [2, 4])
    #expect(try cows.fetch().map(\.id) == [2, 4])
    // A new chain or an explicit refresh sees the new data.
    #expect(cows.refreshed().map(\.id) == [7])
    #expect(RequestSet(store).filter("species", value: "Cow").map(\.id) == [7])
  }

  @Test(arguments: StoreKind.writable)
  func aCountFixesTheSnapshotForLaterReads(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let all = RequestSet(store).filter(\.age > 0)
    #expect(all.count == 6)  // evaluated by counting only
    try store.insert(Animal(id: 7, name: "Late", species: "Cow", age: 1))
    #expect(all.map(\.id) == [1, 2, 3, 4, 5, 6])
  }

  @Test func countingDoesNotMaterializeRecords() throws {
    let source = CountingRecords(Animal.random(count: 1_000, seed: 3))
    let snapshot = source.snapshot()
    let all = RequestSet(_source: _Source(describe: { "counting" }, snapshot: { snapshot }), _query: _Query())
    // A string-key filter reads fields only: no record is read at all.
    #expect(all.filter("species", value: "Cow").count > 0)
    #expect(source.reads.load(ordering: .relaxed) == 0)
    // So does a typed condition on a stored property: it runs on its field twin. The first
    // typed query of a process that never stored an Animal reads the source's first
    // records (at most `witnessLimit`), which decide the twin: before, it tested every
    // record, decoded, when this test ran alone (it passed after other suites had
    // stored Animals).
    #expect(all.filter(\.age > 10).count > 0)
    #expect(source.reads.load(ordering: .relaxed) <= _SchemaProbe.witnessLimit)
    source.reads.store(0, ordering: .relaxed)
    #expect(all.filter(\.age > 10 && \Animal.owner?.city == "Oslo").count > 0)
    #expect(source.reads.load(ordering: .relaxed) == 0)
    // A closure must see records: it reads each once, and keeps none of them.
    #expect(all.filter { $0.age > 10 }.count > 0)
    #expect(source.reads.load(ordering: .relaxed) == 1_000)
    // Reading the result reads exactly the records it holds.
    let young = all.filter("age", .lessThan, 2)
    let n = young.count
    source.reads.store(0, ordering: .relaxed)
    _ = Array(young)
    #expect(source.reads.load(ordering: .relaxed) == n)
  }
}
