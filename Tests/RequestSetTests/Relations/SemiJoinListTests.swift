import Foundation
import Testing
@testable import RequestSet

/// A relation's semi-join runs as `key IN {ids}` on the record's own store; in memory an
/// `Int` or `Int?` key reads a list of integers in place. These pin that path against
/// plain Swift, nil and mixed lists included.
@Suite(.ownThreads) struct SemiJoinListTests {
  static let pets: [Pet] = (0..<700).map { i in
    Pet(id: i, name: "p\(i)", species: i % 3 == 0 ? "Cat" : "Dog", age: i % 17, ownerID: i % 5 == 0 ? nil : i % 41)
  }

  @Test(arguments: [StoreKind.memory, .indexedMemory, .log, .sqlite])
  func inListsOverIntAndOptionalIntKeysMatchPlainSwift(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Pet.self)
    try store.insert(contentsOf: Self.pets)
    let set = RequestSet(store)
    let lists: [[Int?]] = [[], [3], [1, 2, 3, 4, 5, 6, 7], Array(0..<41), [nil], [nil, 4, 9], Array(stride(from: 0, to: 41, by: 2))]
    for list in lists {
      let values = list.map { $0.map(FieldValue.int) ?? .null }
      let wanted = Self.pets.filter { list.contains($0.ownerID) }
      let condition = _FilterNode<Pet>.field(try _FieldCondition(key: "ownerID", op: .in, value: .array(values)))
      let q = set._with { $0.addFilter(condition, mode: .and) }
      #expect(q.count == wanted.count, "ownerID IN \(list)")
      #expect(try q.fetch().map(\.id) == wanted.map(\.id), "ownerID IN \(list)")
      let negated = set._with { $0.addFilter(!condition, mode: .and) }
      #expect(negated.count == Self.pets.count - wanted.count, "NOT ownerID IN \(list)")
      // The same over `age`, a non-optional Int.
      let ints = list.compactMap { $0 }
      let ageList = _FilterNode<Pet>.field(try _FieldCondition(key: "age", op: .in, value: .array(ints.map(FieldValue.int))))
      let ages = set._with { $0.addFilter(ageList, mode: .and) }
      #expect(ages.count == Self.pets.filter { ints.contains($0.age) }.count, "age IN \(ints)")
    }
    // A list that mixes kinds (3.0 equals 3) takes the general test and still agrees.
    let mixedList = _FilterNode<Pet>.field(
      try _FieldCondition(key: "age", op: .in, value: .array([.double(3), .int(4)])))
    let mixed = set._with { $0.addFilter(mixedList, mode: .and) }
    #expect(mixed.count == Self.pets.filter { $0.age == 3 || $0.age == 4 }.count)
  }
}

@Suite(.ownThreads) struct RelationOutsideAGraphTests {
  @Test func aKeyThroughARelationOnASetNotMadeByAGraphSaysHowToMakeOne() throws {
    let store = MemoryStore<Pet>()
    try store.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1))
    let error = #expect(throws: RequestSetError.self) { try RequestSet(store).filter("owner.city", value: "Oslo").fetch() }
    #expect(error?.code == .unknownKey)
    #expect(error?.message.contains("graph.records(Pet.self)") == true)
    let prefetch = #expect(throws: RequestSetError.self) { try RequestSet(store).fetch(including: Pet.owner) }
    #expect(prefetch?.code == .invalidRelation)
  }
}
