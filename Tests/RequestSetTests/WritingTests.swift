import Foundation
import Testing
@testable import RequestSet

/// Writes through a query, fetch-or-insert and transactions, on every store, checked
/// against the same edits on an array.
@Suite(.ownThreads) struct WritingTests {
  func all(_ store: any RecordStore<Animal>) throws -> [Animal] { try RequestSet(store).fetch() }

  @Test(arguments: StoreKind.writable)
  func updateChangesEveryMatchAndCountsThem(kind: StoreKind) throws {
    let data = Animal.random(count: 200, seed: 0x0DD)
    let store = try kind.makeStore()
    try store.insert(contentsOf: data)
    let n = try RequestSet(store).filter(\.age > 15).update { $0.species = "Elder" }
    var expected = data
    for i in expected.indices where expected[i].age > 15 { expected[i].species = "Elder" }
    #expect(n == data.filter { $0.age > 15 }.count)
    #expect(try all(store) == expected)
    // The string-key field is current too.
    #expect(RequestSet(store).filter("species", value: "Elder").count == n)
  }

  @Test(arguments: StoreKind.writable)
  func updateByKeyAndValue(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect(try RequestSet(store).filter("species", value: "Cow").update("species", value: "Bovine") == 2)
    #expect(try RequestSet(store).filter(\.id == 1).update([("name", "Mickey"), ("nickname", nil), ("owner.city", "Oslo")]) == 1)
    let micky = try #require(try store.fetch(id: 1))
    #expect(micky == Animal(id: 1, name: "Mickey", species: "Mouse", age: 3, weight: 0.1, tags: ["small"],
                            owner: Owner(name: "Walt", city: "Oslo")))
    // Rex has no owner: a city alone cannot make one.
    let noOwner = try #require(throws: RequestSetError.self) { try RequestSet(store).filter(\.id == 3).update("owner.city", value: "Oslo") }
    #expect(noOwner.code == .decodingFailed)
    #expect(noOwner.message.contains(#"Field "owner.name" has no value. Use update { … } with a closure"#))
    #expect(try RequestSet(store).filter("species", value: "Bovine").ids() == [2, 4])
    // An update that cannot fit the record changes nothing.
    #expect(throws: RequestSetError.self) { try RequestSet(store).update("age", value: "old") }
    #expect(throws: RequestSetError.self) { try RequestSet(store).update("nmae", value: "x") }
    let setsID = try #require(throws: RequestSetError.self) { try RequestSet(store).update("id", value: 7) }
    #expect(setsID.code == .invalidUpdate)
    #expect(try store.fetch(id: 2)?.age == 7)
  }

  @Test(arguments: StoreKind.writable)
  func anUpdateThatThrowsOrChangesAnIdWritesNothing(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    struct Stop: Error {}
    #expect(throws: Stop.self) {
      try RequestSet(store).update { if $0.id == 4 { throw Stop() }; $0.age += 100 }
    }
    let idChange = try #require(throws: RequestSetError.self) { try RequestSet(store).update { $0.id += 10 } }
    #expect(idChange.code == .invalidUpdate)
    #expect(try all(store) == Animal.zoo)
  }

  @Test(arguments: StoreKind.writable)
  func deleteRemovesEveryMatch(kind: StoreKind) throws {
    let data = Animal.random(count: 200, seed: 0xDE1)
    let store = try kind.makeStore()
    try store.insert(contentsOf: data)
    let n = try RequestSet(store).filter("species", value: "Cow").filter(\.age < 10, mode: .or).delete()
    let kept = data.filter { !($0.species == "Cow" || $0.age < 10) }
    #expect(n == data.count - kept.count)
    #expect(try all(store) == kept)
    #expect(try RequestSet(store).filter("species", value: "Dodo").delete() == 0)
  }

  @Test func writingThroughAnArrayIsAnError() throws {
    let error = try #require(throws: RequestSetError.self) { try RequestSet(Animal.zoo).delete() }
    #expect(error.code == .readOnly)
    #expect(
      error.message
        == "This RequestSet reads Array<Animal>, which has no store to write to. Query a store (RequestSet(store)) to update, delete or insert through it."
    )
  }

  @Test(arguments: StoreKind.writable)
  func firstOrInsertFindsOrBuildsFromEqualities(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let animals = RequestSet(store)
    // Found: nothing inserted.
    let rex = try animals.filter("name", value: "Rex").firstOrInsert { Animal(id: 100, name: "", species: "", age: 0) }
    #expect(rex.id == 3)
    #expect(try all(store).count == 6)
    // Not found: string-key and key-path equalities set the new record's fields.
    let bob = try animals.filter("name", value: "Bob").filter(\.species == "Cat").filter("owner.city", value: "Oslo")
      .firstOrInsert { Animal(id: 100, name: "", species: "", age: 4, owner: Owner(name: "Kim", city: "")) }
    #expect(bob == Animal(id: 100, name: "Bob", species: "Cat", age: 4, owner: Owner(name: "Kim", city: "Oslo")))
    #expect(try store.fetch(id: 100) == bob)
    // And found the second time.
    #expect(try animals.filter("name", value: "Bob").filter(\.species == "Cat").firstOrInsert { Animal(id: 101, name: "", species: "", age: 0) }.id == 100)
  }

  @Test(arguments: StoreKind.writable)
  func firstOrInsertRefusesConditionsThatDoNotDetermineValues(kind: StoreKind) throws {
    let store = try kind.makeStore()
    let animals = RequestSet(store)
    let make = { Animal(id: 1, name: "", species: "", age: 0) }
    let inequality = try #require(throws: RequestSetError.self) { try animals.filter(\.age > 3).firstOrInsert(make) }
    #expect(inequality.code == .tooComplex)
    #expect(
      inequality.message
        == #"firstOrInsert cannot tell a new record's fields from \Animal.age > 3: only equality conditions joined with AND (on string keys or writable key paths) determine them."#
    )
    #expect(throws: RequestSetError.self) {
      try animals.filter("name", value: "A").filter("name", value: "B", mode: .or).firstOrInsert(make)
    }
    #expect(throws: RequestSetError.self) { try animals.exclude("name", value: "A").firstOrInsert(make) }
    #expect(throws: RequestSetError.self) { try animals.filter { $0.age == 1 }.firstOrInsert(make) }
    #expect(throws: RequestSetError.self) { try animals.limit(1).filter("name", value: "A").firstOrInsert(make) }
    // Contradicting equalities would build a record the query cannot find.
    let contradiction = try #require(throws: RequestSetError.self) {
      try animals.filter("name", value: "A").filter(\.name == "B").firstOrInsert(make)
    }
    #expect(contradiction.code == .tooComplex)
    #expect(try all(store).isEmpty)
  }

  @Test(arguments: StoreKind.writable)
  func firstOrInsertWithoutATemplateNeedsEveryField(kind: StoreKind) throws {
    struct Tag: Record, Equatable {
      var id: String
      var label: String?
      var uses: Int?
    }
    let tags = RequestSet(try kind.makeStore(of: Tag.self))
    let swift = try tags.filter("id", value: "swift").filter("label", value: "Swift").firstOrInsert()
    #expect(swift == Tag(id: "swift", label: "Swift", uses: nil))
    let animals = RequestSet(try kind.makeStore())
    let missing = try #require(throws: RequestSetError.self) { try animals.filter("name", value: "Bob").firstOrInsert() }
    #expect(missing.code == .decodingFailed)
    #expect(missing.message.contains(#"Field "id" has no value."#))
  }

  @Test(arguments: StoreKind.writable)
  func fetchOrInsertById(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect(try store.fetchOrInsert(id: 3) { _ in Animal(id: 3, name: "X", species: "X", age: 0) }.name == "Rex")
    let made = try store.fetchOrInsert(id: 50) { Animal(id: $0, name: "Fifty", species: "Cow", age: 1) }
    #expect(try store.fetch(id: 50) == made)
    let wrong = try #require(throws: RequestSetError.self) {
      try store.fetchOrInsert(id: 51) { _ in Animal(id: 52, name: "", species: "", age: 0) }
    }
    #expect(wrong.code == .invalidUpdate)
    let bare = try #require(throws: RequestSetError.self) { try store.fetchOrInsert(id: 52) }
    #expect(bare.code == .decodingFailed)
    #expect(try !store.exists(id: 51) && !store.exists(id: 52))
  }

  @Test(arguments: StoreKind.writable)
  func transactionsApplyAllOrNothing(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    try store.transaction { tx in
      tx.insert(Animal(id: 10, name: "Calf", species: "Cow", age: 0))
      tx.save(Animal(id: 2, name: "Daisy", species: "Cow", age: 8))
      tx.delete(id: 3)
    }
    #expect(try all(store).map(\.id) == [1, 2, 4, 5, 6, 10])
    #expect(try store.fetch(id: 2)?.age == 8)
    // A throwing body applies nothing.
    struct Abort: Error {}
    #expect(throws: Abort.self) {
      try store.transaction { tx in
        tx.delete(id: 1)
        throw Abort()
      }
    }
    // A refused change applies nothing either: the delete before it is undone.
    #expect(throws: RequestSetError.self) {
      try store.transaction { tx in
        tx.delete(id: 1)
        tx.insert(Animal(id: 2, name: "Dup", species: "Cow", age: 0))
      }
    }
    // rollback() drops what was queued.
    try store.transaction { tx in
      tx.delete(id: 1)
      tx.rollback()
      tx.save(Animal(id: 11, name: "Late", species: "Cat", age: 1))
    }
    #expect(try all(store).map(\.id) == [1, 2, 4, 5, 6, 10, 11])
    // An id inserted and deleted within one transaction.
    try store.transaction { tx in
      tx.insert(Animal(id: 12, name: "Brief", species: "Cat", age: 1))
      tx.delete(id: 12)
      tx.insert(Animal(id: 12, name: "Again", species: "Cat", age: 1))
    }
    #expect(try store.fetch(id: 12)?.name == "Again")
  }

  @Test(arguments: StoreKind.writable)
  func aStaleVersionIsAConflictAndWritesNothing(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let before = try store.snapshot().version
    try store.save(Animal(id: 1, name: "Moved", species: "Mouse", age: 3))
    let error = try #require(throws: RequestSetError.self) { try store.apply([.delete(id: 2)], ifVersion: before) }
    #expect(error.code == .conflict)
    #expect(try store.exists(id: 2))
    try store.apply([.delete(id: 2)], ifVersion: try store.snapshot().version)
    #expect(try !store.exists(id: 2))
  }

  /// Concurrent updates through queries lose nothing: each increments every record once.
  @Test(arguments: StoreKind.writable)
  func concurrentUpdatesLoseNothing(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: (0..<50).map { Animal(id: $0, name: "a\($0)", species: "Cow", age: 0) })
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask { for _ in 0..<10 { try RequestSet(store).update { $0.age += 1 } } }
      }
      try await group.waitForAll()
    }
    #expect(try RequestSet(store).values(\.age) == Array(repeating: 80, count: 50))
  }
}
