import Foundation
import Testing
@testable import RequestSet

/// The Query seed's typed attributes: `[\Animal.name: "Alice", \Animal.age: 3]`.
@Suite(.ownThreads) struct TypedDictionaryTests {
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

/// A record with enum and `Double` fields, for typed dictionaries.
struct Order: Record, Equatable {
  enum Status: String, Codable, Sendable { case open, paid, refunded }
  enum Priority: Int, Codable, Sendable { case low = 1, high = 2 }
  var id: Int
  var status: Status
  var priority: Priority?
  var amount: Double
  var discount: Double?

  static let all = [
    Order(id: 1, status: .paid, priority: .high, amount: 1.0, discount: 0.5),
    Order(id: 2, status: .open, priority: nil, amount: 2.5, discount: nil),
    Order(id: 3, status: .paid, priority: .low, amount: 3.0, discount: 2),
    Order(id: 4, status: .refunded, priority: .high, amount: 3.5, discount: 3),
    Order(id: 5, status: .paid, priority: nil, amount: 0.5, discount: 1),
  ]
}

extension TypedDictionaryTests {
  func orders(_ kind: StoreKind) throws -> RequestSet<Order> {
    if kind == .array { return RequestSet(Order.all) }
    let store = try kind.makeStore(of: Order.self)
    try store.insert(contentsOf: Order.all)
    return RequestSet(store)
  }

  /// Plain enums (String and Int raw values) are values with no conformance to add.
  @Test(arguments: StoreKind.allCases)
  func enumsMatchByEquality(kind: StoreKind) throws {
    let orders = try orders(kind)
    #expect(try orders.filter([\Order.status: Order.Status.paid]).fetch().map(\.id) == [1, 3, 5])
    #expect(try orders.filter([\Order.priority: Order.Priority.high]).fetch().map(\.id) == [1, 4])
    #expect(
      try orders.filter([\Order.status: Order.Status.paid, \Order.priority: Order.Priority.low]).fetch().map(\.id) == [3])
    #expect(try orders.exclude([\Order.status: Order.Status.paid]).fetch().map(\.id) == [2, 4])
    #expect(
      RequestFilter<Order>([\Order.status: Order.Status.refunded]).description == #"\Order.status == refunded"#)
  }

  /// Integer literals, alone, in ranges and in lt/lte/gt/gte, match `Double` fields by value.
  @Test(arguments: StoreKind.allCases)
  func integerLiteralsMatchDoubleFields(kind: StoreKind) throws {
    let orders = try orders(kind)
    func ids(_ d: [PartialKeyPath<Order> & Sendable: any Sendable]) throws -> [Int] {
      try orders.filter(d).fetch().map(\.id)
    }
    #expect(try ids([\Order.amount: 1...3]) == [1, 2, 3])
    #expect(try ids([\Order.amount: 1..<3]) == [1, 2])
    #expect(try ids([\Order.amount: 3...]) == [3, 4])
    #expect(try ids([\Order.amount: ...1]) == [1, 5])
    #expect(try ids([\Order.amount: ..<1]) == [5])
    #expect(try ids([\Order.amount: lt(1)]) == [5])
    #expect(try ids([\Order.amount: lte(1)]) == [1, 5])
    #expect(try ids([\Order.amount: gt(3)]) == [4])
    #expect(try ids([\Order.amount: gte(3)]) == [3, 4])
    #expect(try ids([\Order.amount: 3]) == [3])
    // Optional Double fields: nil never matches.
    #expect(try ids([\Order.discount: 1...3]) == [3, 4, 5])
    #expect(try ids([\Order.discount: lt(1)]) == [1])
    #expect(try ids([\Order.amount: 1...3, \Order.status: Order.Status.paid]) == [1, 3])
    #expect(RequestFilter<Order>([\Order.amount: 1...3]).description == #"\Order.amount BETWEEN {1, 3}"#)
  }

  @Test func aValueThatCannotMatchIsStillAClearTypeMismatch() throws {
    struct Opaque: Sendable {}
    let wrongEnum = try #require(throws: RequestSetError.self) {
      try RequestSet(Order.all).filter([\Order.priority: Order.Status.paid]).fetch()
    }
    #expect(
      wrongEnum.message
        == #"\Order.priority holds Optional<Priority> values, so it can never match paid, which is a Status. Pass an Optional<Priority>, a range of Optional<Priority>, or lt/lte/gt/gte with an Optional<Priority>."#
    )
    let opaque = try #require(throws: RequestSetError.self) {
      try RequestSet(Order.all).filter([\Order.amount: Opaque()]).fetch()
    }
    #expect(opaque.code == .typeMismatch)
    #expect(opaque.message.hasPrefix(#"\Order.amount holds Double values, so it can never match Opaque(), which is an Opaque."#))
    // Doubles do not match Int fields: only integer literals widen.
    #expect(throws: RequestSetError.self) { try RequestSet(Order.all).filter([\Order.id: 1.0...3.0]).fetch() }
  }
}
