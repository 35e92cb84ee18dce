import Foundation
import Testing
@testable import RequestSet

/// Keys through relations built from input: typed errors or answers, never a crash (each
/// long path runs in a child process, where a crash is a failed test, not a failed run).
@Suite(.ownThreads) struct RelationInputTests {
  @Test(arguments: ["memory", "log", "sqlite"])
  func aPathOfTenThousandRelationsIsATypedError(store: String) throws {
    let result = try AdversaryChild.run("relations.hops", store, "10000")
    #expect(result.exitedNormally, "\(result)")
    #expect(
      result.lines.dropLast() == ["key invalidRelation", "sort invalidRelation", "values invalidRelation", "oslo 86"],
      "\(result)")
  }

  @Test(arguments: ["memory", "log"])
  func aPathOfSixteenRelationsRuns(store: String) throws {
    let result = try AdversaryChild.run("relations.hops", store, "16")
    #expect(result.exitedNormally, "\(result)")
    // Every critter with a keeper reaches an Oslo keeper through 16 hops (the graph is
    // connected through keepers); what matters is an answer, and the same on every store.
    #expect(result.lines.count == 5, "\(result)")
    #expect(result.lines.first?.hasPrefix("key ") == true && result.lines.first != "key invalidRelation", "\(result)")
    // The path walks to-manys, so it names many values per critter: a sort refuses it, as
    // a filter without ANY does (`aSortByManyValuesIsRefusedAsAFilterIs`).
    #expect(result.lines[1] == "sort invalidRelation" && result.lines[2] == "values 200", "\(result)")
  }

  @Test func aKeyThatNamesNoFieldOfTheRelatedTypeSaysWhichTypeLacksIt() throws {
    let graph = try RelationLiveTests.clinic(.memory)
    let error = #expect(throws: RequestSetError.self) {
      try graph.records(Pet.self).filter("owner.town", value: "Oslo").fetch()
    }
    #expect(error?.code == .unknownKey)
    #expect(error?.message.contains("for Person") == true, "\(error?.message ?? "")")
  }

  @Test func aToManyWithoutAnAggregateCannotBeSortedOrRead() throws {
    let graph = try RelationLiveTests.clinic(.memory)
    let sort = #expect(throws: RequestSetError.self) { try graph.records(Pet.self).sortBy("visits").fetch() }
    #expect(sort?.code == .invalidRelation)
    let values = #expect(throws: RequestSetError.self) { try graph.records(Pet.self).values("visits") }
    #expect(values?.code == .invalidRelation)
    let typed = #expect(throws: RequestSetError.self) {
      try graph.records(Pet.self).filter(Pet.visits.any.cost > 1).filter("visits.cost > 1").fetch()
    }
    #expect(typed?.code == .invalidRelation)
    #expect(typed?.message.contains("Pet.visits is a to-many relation") == true)
  }

  /// A sort needs one value per record, as a filter without a quantifier does: a key
  /// through a to-many (at any depth) is refused until an operator reduces it.
  @Test(arguments: StoreKind.writable)
  func aSortByManyValuesIsRefusedAsAFilterIs(kind: StoreKind) throws {
    let graph = try RelationLiveTests.clinic(kind)
    for key in ["visits.cost", "owner.pets.name", "vets.name", "visits.vet.name"] {
      let sort = #expect(throws: RequestSetError.self, "\(kind) \(key)") {
        try graph.records(Pet.self).sortBy(key).fetch()
      }
      #expect(sort?.code == .invalidRelation, "\(kind) \(key)")
      #expect(sort?.message.contains("cannot sort") == true, "\(kind) \(key): \(sort?.message ?? "")")
    }
    // Reduced, the same keys sort.
    for key in ["visits.@max.cost", "owner.pets.@count", "vets.@count", "owner.city"] {
      #expect(throws: Never.self, "\(kind) \(key)") { try graph.records(Pet.self).sortBy(key).fetch() }
    }
  }

  @Test func aSetOfATypeTheGraphHoldsNoStoreOfSaysSo() throws {
    let graph = try RecordGraph(MemoryStore<Person>(), MemoryStore<Pet>(), MemoryStore<Visit>(), MemoryStore<Vet>())
    let error = #expect(throws: RequestSetError.self) { try graph.records(Animal.self).fetch() }
    #expect(error?.code == .invalidRelation)
    #expect(error?.message.contains("holds no store of Animal") == true)
  }
}
