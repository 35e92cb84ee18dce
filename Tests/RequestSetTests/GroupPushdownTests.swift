import Foundation
import Testing

@testable import RequestSet

/// `groupBy … aggregate … having` on every store against the array reference, with seeded
/// random data and queries, and the SQL stores forming the groups themselves where they
/// can do it exactly (`requiringPushdown()` proves it), and declining where they cannot.
@Suite(.ownThreads) struct GroupPushdownTests {
  /// Rows that are the same row for row, key for key in order, value for value, kind for
  /// kind (`1` is not `1.0`).
  func expectIdentical(
    _ rows: [RequestRow], _ reference: [RequestRow], _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let same =
      rows.count == reference.count
      && zip(rows, reference).allSatisfy { a, b in
        a.keys == b.keys && zip(a.values, b.values).allSatisfy { _identical($0, $1) }
      }
    #expect(same, "\(what): \(rows) vs \(reference)", sourceLocation: sourceLocation)
  }

  static let groupKeys: [[String]] = [["species"], ["age"], ["nickname"], ["owner.city"], ["species", "age"], ["weight"]]
  static let aggregateSets: [[RequestAggregate]] = [
    [.count],
    [.count, .sum("age"), .average("age")],
    [.min("age"), .max("age"), .min("name"), .max("nickname")],
    [.sum("weight"), .max("weight")],
  ]

  @Test(arguments: StoreKind.allCases)
  func randomGroupQueriesMatchTheArrayReference(kind: StoreKind) throws {
    let animals = Animal.random(count: 240, seed: 0x6A0B)
    let set = try kind.makeSet(animals)
    let reference = RequestSet(animals)
    var rng = SeededRandom(seed: 0x51D3)
    for round in 0..<24 {
      let keys = Self.groupKeys.randomElement(using: &rng)!
      let aggregates = Self.aggregateSets.randomElement(using: &rng)!
      let threshold = Int.random(in: 0...20, using: &rng)
      let filters: [(RequestSet<Animal>) -> RequestSet<Animal>] = [
        { $0 },
        { $0.filter("age", .greaterThan, threshold) },
        { $0.filter("species", value: "Dog").exclude("nickname", value: nil) },
      ]
      let filter = filters[round % filters.count]
      var query = filter(set).groupBy(keys[0])
      var expected = filter(reference).groupBy(keys[0])
      if keys.count > 1 {
        query = filter(set).groupBy(keys[0], keys[1])
        expected = filter(reference).groupBy(keys[0], keys[1])
      }
      query = query.aggregate(aggregates[0])
      expected = expected.aggregate(aggregates[0])
      for aggregate in aggregates.dropFirst() {
        query = query.aggregate(aggregate)
        expected = expected.aggregate(aggregate)
      }
      if round % 3 == 0 {
        query = query.having(aggregates[0].name, .greaterThan, 1).sortBy(aggregates[0].name, order: .descending)
        expected = expected.having(aggregates[0].name, .greaterThan, 1).sortBy(aggregates[0].name, order: .descending)
      }
      expectIdentical(try query.fetch(), try expected.fetch(), "round \(round): \(keys) \(aggregates) on \(kind)")
    }
  }

  static var sqlKinds: [StoreKind] { StoreKind.allCases.filter { [.sqlite, .indexedSQLite, .postgres].contains($0) } }

  @Test(arguments: sqlKinds)
  func integerAndStringGroupsRunInTheDatabase(kind: StoreKind) throws {
    let animals = Animal.random(count: 120, seed: 7)
    let set = try kind.makeSet(animals).requiringPushdown()
    let reference = RequestSet(animals)
    // No part runs in process: requiringPushdown() would throw.
    expectIdentical(
      try set.filter("age", .greaterThan, 2).groupBy("species", "nickname")
        .aggregate(.count, .sum("age"), .average("age"), .min("name"), .max("age"))
        .having("count", .greaterThan, 1).fetch(),
      try reference.filter("age", .greaterThan, 2).groupBy("species", "nickname")
        .aggregate(.count, .sum("age"), .average("age"), .min("name"), .max("age"))
        .having("count", .greaterThan, 1).fetch(),
      "species, nickname on \(kind)")
    expectIdentical(
      try set.groupBy("owner.city").aggregate(.count, .max("owner.name")).fetch(),
      try reference.groupBy("owner.city").aggregate(.count, .max("owner.name")).fetch(), "owner.city on \(kind)")
  }

  @Test(arguments: sqlKinds)
  func groupsSQLWouldFormDifferentlyStayInProcess(kind: StoreKind) throws {
    let animals = Animal.random(count: 60, seed: 11)
    let set = try kind.makeSet(animals)
    let reference = RequestSet(animals)
    // Doubles: SQL equates 1.0 with 1 and sums them in another order.
    for query in [
      { (s: RequestSet<Animal>) in s.groupBy("weight").aggregate(.count) },
      { (s: RequestSet<Animal>) in s.groupBy("species").aggregate(.sum("weight")) },
    ] {
      let error = try #require(throws: RequestSetError.self) { try query(set.requiringPushdown()).fetch() }
      #expect(error.code == .notPushedDown)
      #expect(error.message.contains("cannot form these groups exactly"), "\(error.message)")
      expectIdentical(try query(set).fetch(), try query(reference).fetch(), "in process on \(kind)")
    }
    // A sorted set is grouped in process, and says so.
    let sorted = try #require(throws: RequestSetError.self) {
      try set.sortBy("age").requiringPushdown().groupBy("species").fetch()
    }
    #expect(sorted.message.contains("sorted"))
  }

  @Test(arguments: StoreKind.allCases)
  func badGroupKeysAndOverflowingSumsThrowAsInMemory(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo)
    let unknown = try #require(throws: RequestSetError.self) { try set.groupBy("specie").aggregate(.count).fetch() }
    #expect(unknown.code == .unknownKey)
    let notNumbers = try #require(throws: RequestSetError.self) {
      try set.groupBy("species").aggregate(.sum("name")).fetch()
    }
    #expect(notNumbers.code == .typeMismatch)
    let collections = try #require(throws: RequestSetError.self) { try set.groupBy("tags").fetch() }
    #expect(collections.code == .typeMismatch)
    guard kind != .array else { return }
    let big = try kind.makeSet([
      Animal(id: 1, name: "A", species: "Cow", age: Int.max), Animal(id: 2, name: "B", species: "Cow", age: 1),
    ])
    let overflow = try #require(throws: RequestSetError.self) {
      try big.groupBy("species").aggregate(.sum("age")).fetch()
    }
    #expect(overflow.code == .overflow)
    // The exact sum leaves Int and comes back: memory's Int128 sum gets it right.
    let back = try kind.makeSet([
      Animal(id: 1, name: "A", species: "Cow", age: Int.max), Animal(id: 2, name: "B", species: "Cow", age: 1),
      Animal(id: 3, name: "C", species: "Cow", age: -2),
    ])
    expectIdentical(
      try back.groupBy("species").aggregate(.sum("age")).fetch(), [["species": .string("Cow"), "sum:age": .int(Int.max - 1)]],
      "sum back in range on \(kind)")
  }
}
