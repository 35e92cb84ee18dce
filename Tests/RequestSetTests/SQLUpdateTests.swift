import Foundation
import RequestSetPostgres
import RequestSetSQLite
import Testing

@testable import RequestSet

/// `update(matching:set:)` on the SQL stores: one UPDATE statement for top-level keys and
/// plain values, nil (record by record through the engine) otherwise, and all or nothing
/// when an updated record would not decode.
@Suite(.ownThreads) struct SQLUpdateTests {
  static var kinds: [StoreKind] { [.sqlite] + (PostgresServer.testsRun ? [.postgres] : []) }

  func store(_ kind: StoreKind) throws -> any QueryPushdownStore<Animal> {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    return try #require(store as? any QueryPushdownStore<Animal>)
  }

  @Test(arguments: kinds)
  func topLevelKeysAreSetByOneStatement(kind: StoreKind) throws {
    let store = try store(kind)
    let cows = StoreQuery(filter: .condition(try StoreCondition("species", .equal, "Cow")))
    let before = try store.snapshot().version
    #expect(try store.update(matching: cows, set: [("species", .string("Bovine")), ("nickname", .string("Moo"))]) == 2)
    // One write transaction: one version step.
    #expect(try store.snapshot().version == before + 1)
    var expected = Animal.zoo
    for i in expected.indices where expected[i].species == "Cow" {
      expected[i].species = "Bovine"
      expected[i].nickname = "Moo"
    }
    #expect(try RequestSet(store).fetch() == expected)
    // Nothing matched: nothing written.
    #expect(try store.update(matching: cows, set: [("age", .int(1))]) == 0)
    #expect(try store.snapshot().version == before + 1)
  }

  @Test(arguments: kinds)
  func whatOneStatementCannotDoIsLeftToTheEngine(kind: StoreKind) throws {
    let store = try store(kind)
    let all = StoreQuery()
    #expect(try store.update(matching: all, set: [("owner.city", .string("Oslo"))]) == nil)
    #expect(try store.update(matching: all, set: [("id", .int(9))]) == nil)
    #expect(try store.update(matching: all, set: [("weight", .double(.nan))]) == nil)
    #expect(try store.update(matching: StoreQuery(limit: 1), set: [("age", .int(1))]) == nil)
    #expect(try RequestSet(store).fetch() == Animal.zoo)
  }

  @Test(arguments: kinds)
  func anUpdatedRecordThatWouldNotDecodeWritesNothing(kind: StoreKind) throws {
    let store = try store(kind)
    let before = try store.snapshot().version
    let error = try #require(throws: RequestSetError.self) {
      try store.update(matching: StoreQuery(), set: [("age", .null)])
    }
    #expect(error.code == .decodingFailed)
    #expect(error.message.contains("Use update { … } with a closure"))
    #expect(try RequestSet(store).fetch() == Animal.zoo)
    #expect(try store.snapshot().version == before)
    // Through a query, the engine's own message for the same mistake.
    #expect(throws: RequestSetError.self) { try RequestSet(store).update("age", value: nil as Int?) }
  }

  @Test(arguments: kinds)
  func aKeyThatHeldOnlyNilLearnsItsNewKind(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: [Animal(id: 1, name: "A", species: "Cow", age: 1)])
    #expect(try RequestSet(store).update("nickname", value: "Moo") == 1)
    let error = try #require(throws: RequestSetError.self) {
      try RequestSet(store).filter("nickname", value: 3).fetch()
    }
    #expect(error.code == .typeMismatch)
  }
}
