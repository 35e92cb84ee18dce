import Foundation
import Testing
@testable import RequestSet

/// The Query seed's typed attributes: `[\Animal.name: "Alice", \Animal.age: 3]`.
@Suite struct TypedDictionaryTests {
  @Test(arguments: StoreKind.allCases)
  func everyEntryMustMatch(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.formatZoo)
    func ids(_ d: [PartialKeyPath<Animal> & Sendable: any RequestValueMatch]) throws -> [Int] {
      try set.filter(d).fetch().map(\.id)
    }
    #expect(try ids([\Animal.name: "Rex", \Animal.age: 5]) == [3])
    #expect(try ids([\Animal.species: "Dog", \Animal.age: 5]) == [3, 6])
    #expect(try ids([\Animal.species: "Dog", \Animal.age: 4]) == [])
    #expect(try ids([\Animal.age: 2...5]) == [1, 3, 4, 6])
    #expect(try ids([\Animal.age: 2..<5]) == [1, 4])
    #expect(try ids([\Animal.age: 9...]) == [5, 7])
    #expect(try ids([\Animal.age: ...2]) == [4, 8])
    #expect(try ids([\Animal.age: ..<2]) == [8])
    #expect(try ids([\Animal.age: lt(3)]) == [4, 8])
    #expect(try ids([\Animal.age: lte(3)]) == [1, 4, 8])
    #expect(try ids([\Animal.age: gt(7), \Animal.weight: gte(380.5)]) == [7])
    #expect(try ids([\Animal.name: gte("M"), \Animal.species: "Dog"]) == [3, 6, 8])
    // An integer literal matches a Double field by value.
    #expect(try ids([\Animal.weight: 600]) == [2])
    #expect(try ids([\Animal.weight: 4.5]) == [5])
    // Optional fields: nil never matches a value or a range.
    #expect(try ids([\Animal.nickname: "Rexy"]) == [3])
    #expect(try ids([\Animal.nickname: gte("M")]) == [1, 3, 7, 8])
    #expect(try ids([\Animal.owner?.city: "Oslo"]) == [2, 4])
    #expect(try ids([:]) == [1, 2, 3, 4, 5, 6, 7, 8])
    #expect(try set.exclude([\Animal.species: "Dog", \Animal.age: 5]).fetch().map(\.id) == [1, 2, 4, 5, 7, 8])
  }

  @Test func theDescriptionIsStableAndReadable() {
    let f = RequestFilter<Animal>([\Animal.species: "Cow", \Animal.age: 1...3, \Animal.weight: gt(100.0)])
    #expect(f.description == #"\Animal.age BETWEEN {1, 3} AND \Animal.species == "Cow" AND \Animal.weight > 100.0"#)
    #expect(RequestFilter<Animal>([\Animal.age: 1..<3]).description == #"\Animal.age >= 1 AND \Animal.age < 3"#)
  }

  @Test func aValueOfTheWrongTypeIsAClearTypeMismatch() throws {
    let set = RequestSet(Animal.zoo).filter([\Animal.age: "three"])
    let error = try #require(throws: RequestSetError.self) { try set.fetch() }
    #expect(error.code == .typeMismatch)
    #expect(
      error.message
        == #"\Animal.age holds Int values, so it can never match "three", which is a String. Pass an Int, a range of Int, or lt/lte/gt/gte with an Int."#
    )
    let range = try #require(throws: RequestSetError.self) {
      try RequestSet(Animal.zoo).filter([\Animal.name: 1...3]).fetch()
    }
    #expect(range.message.hasPrefix(#"\Animal.name holds String values, so it can never match 1...3, which is a ClosedRange<Int>."#))
  }
}
