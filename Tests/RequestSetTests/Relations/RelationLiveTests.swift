import Foundation
import Testing
@testable import RequestSet

/// Live sets, as-of reads, `values` and `explain()` across relations.
@Suite(.ownThreads) struct RelationLiveTests {
  /// A small clinic on stores of `kind`: Ann (Oslo) owns Rex, Bo (Rome) owns Tom, Kit has
  /// no owner; Rex has two visits, Tom one.
  static func clinic(_ kind: StoreKind) throws -> RecordGraph {
    let graph = try RecordGraph([
      try kind.makeStore(of: Person.self), try kind.makeStore(of: Pet.self), try kind.makeStore(of: Visit.self),
      try kind.makeStore(of: Vet.self),
    ])
    try graph.insert(contentsOf: [Person(id: 1, name: "Ann", city: "Oslo"), Person(id: 2, name: "Bo", city: "Rome")])
    try graph.insert(contentsOf: [Vet(id: 1, name: "Vera"), Vet(id: 2, name: "Max")])
    try graph.insert(contentsOf: [
      Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1),
      Pet(id: 2, name: "Tom", species: "Cat", age: 5, ownerID: 2),
      Pet(id: 3, name: "Kit", species: "Cat", age: 1, ownerID: nil),
    ])
    try graph.insert(contentsOf: [
      Visit(id: 1, petID: 1, vetID: 1, cost: 10, day: 1), Visit(id: 2, petID: 1, vetID: 2, cost: 30, day: 2),
      Visit(id: 3, petID: 2, vetID: 2, cost: 5, day: 3),
    ])
    return graph
  }

  @Test(arguments: StoreKind.writable + StoreKind.throughPgBouncer)
  func aLiveSetFilteredThroughARelationFollowsTheRelatedStore(kind: StoreKind) async throws {
    let graph = try Self.clinic(kind)
    let reader = StateReader(graph.records(Pet.self).filter("owner.city", value: "Oslo").sortBy("id"))
    let first = try #require(await reader.next())
    #expect(first.records.map(\.name) == ["Rex"])
    // Bo moves to Oslo: no pet changed, yet Tom now matches.
    try graph.save(Person(id: 2, name: "Bo", city: "Oslo"))
    let moved = try #require(await reader.next())
    #expect(moved.records.map(\.name) == ["Rex", "Tom"])
    #expect(moved.inserted.map { moved.records[$0].name } == ["Tom"])
    // A commit of the set's own store still works as before.
    try graph.insert(Pet(id: 4, name: "Ida", species: "Dog", age: 2, ownerID: 1))
    let added = try #require(await reader.next())
    #expect(added.records.map(\.name) == ["Rex", "Tom", "Ida"])
  }

  @Test(arguments: [StoreKind.memory, .log, .sqlite])
  func aLiveSetSortedByACountFollowsTheRelatedStore(kind: StoreKind) async throws {
    let graph = try Self.clinic(kind)
    let reader = StateReader(graph.records(Pet.self).sortBy(Pet.visits.count, order: .descending).limit(1))
    #expect(try #require(await reader.next()).records.map(\.name) == ["Rex"])
    try graph.insert(contentsOf: [
      Visit(id: 4, petID: 2, vetID: nil, cost: 1, day: 4), Visit(id: 5, petID: 2, vetID: nil, cost: 1, day: 5),
    ])
    var state = try #require(await reader.next())
    // The two visits may arrive as one state or two; the last has Tom on top.
    while state.records.map(\.name) != ["Tom"] { state = try #require(await reader.next()) }
    #expect(state.records.map(\.name) == ["Tom"])
  }

  @Test func aGraphAsOfATimeReadsEveryStoreAsOfThen() throws {
    let graph = try Self.clinic(.log)
    let then = Date()
    // Let the clock pass `then`, so the next commits are stamped after it.
    while Date() <= then.addingTimeInterval(0.01) {}
    try graph.save(Person(id: 2, name: "Bo", city: "Oslo"))
    try graph.delete(Pet.self, id: 1)
    let now = graph.records(Pet.self).filter("owner.city", value: "Oslo").sortBy("id")
    #expect(try now.fetch().map(\.name) == ["Tom"])
    let past = graph.asOf(then)
    #expect(try past.records(Pet.self).filter("owner.city", value: "Oslo").sortBy("id").fetch().map(\.name) == ["Rex"])
    #expect(try past.records(Pet.self).filter("ANY visits.cost > 20").fetch().map(\.name) == ["Rex"])
    #expect(graph.records(Visit.self).count == 1)  // Rex's visits cascaded away
    #expect(past.records(Visit.self).count == 3)
    let write = #expect(throws: RequestSetError.self) { try past.insert(Vet(id: 9, name: "Zed")) }
    #expect(write?.code == .readOnly)
  }

  @Test func aGraphAsOfATimeThrowsForAStoreThatKeepsNoHistory() throws {
    let graph = try Self.clinic(.memory)
    let error = #expect(throws: RequestSetError.self) { try graph.asOf(Date()).records(Pet.self).fetch() }
    #expect(error?.code == .versionUnavailable)
  }

  @Test(arguments: StoreKind.writable)
  func valuesReadKeysThroughRelations(kind: StoreKind) throws {
    let graph = try Self.clinic(kind)
    let rows = try graph.records(Pet.self).sortBy("id").values("name", "owner.city", "visits.@count", "visits.@sum.cost")
    #expect(rows.map { $0["name"] } == [.string("Rex"), .string("Tom"), .string("Kit")])
    #expect(rows.map { $0["owner.city"] } == [.string("Oslo"), .string("Rome"), .null])
    #expect(rows.map { $0["visits.@count"] } == [.int(2), .int(1), .int(0)])
    #expect(rows.map { $0["visits.@sum.cost"]?.doubleValue } == [40, 5, 0])
    // Keys through relations keep the order asked, as plain keys do.
    #expect(rows.allSatisfy { $0.keys == ["name", "owner.city", "visits.@count", "visits.@sum.cost"] })
    let cityFirst = try graph.records(Pet.self).sortBy("id").values("owner.city", "visits.@count", "name")
    #expect(cityFirst.map(\.description) == [
      #"["owner.city": "Oslo", "visits.@count": 2, "name": "Rex"]"#,
      #"["owner.city": "Rome", "visits.@count": 1, "name": "Tom"]"#,
      #"["owner.city": nil, "visits.@count": 0, "name": "Kit"]"#,
    ])
  }

  @Test(arguments: StoreKind.writable)
  func typedKeysReachEveryMemberAndStringKeysTakeCollectionOperators(kind: StoreKind) throws {
    let graph = try Self.clinic(kind)
    let pets = graph.records(Pet.self)
    // `name` is Person's: the relation's own members do not shadow it.
    #expect(Pet.owner.name.key == "owner.name")
    #expect(try pets.sortBy(Pet.owner.name, order: .descending).sortBy("id").fetch().map(\.name) == ["Tom", "Rex", "Kit"])
    #expect(try pets.filter(Pet.owner.name == "Ann").fetch().map(\.name) == ["Rex"])
    // Key, comparison, value with a collection operator in the key.
    #expect(try pets.filter("visits.@count", .greaterThan, 0).sortBy("id").fetch().map(\.name) == ["Rex", "Tom"])
    #expect(try pets.filter("visits.@sum.cost", .greaterThan, 20).fetch().map(\.name) == ["Rex"])
    #expect(try pets.filter("vets.@count", .equal, 2).fetch().map(\.name) == ["Rex"])
    #expect(try pets.filter("owner.pets.@count", .equal, 0).fetch().map(\.name) == ["Kit"])
    #expect(try pets.sortBy("id").values("owner.pets.@count").map { $0["owner.pets.@count"] } == [.int(1), .int(1), .int(0)])
    // `owner == nil` is "no owner": a nil or a dangling key.
    try graph.insert(Pet(id: 4, name: "Odd", species: "Fish", age: 1, ownerID: 555))  // Pet.owner allows dangling keys
    #expect(try pets.filter("owner == nil").sortBy("id").fetch().map(\.name) == ["Kit", "Odd"])
  }

  @Test(arguments: StoreKind.writable)
  func explainSaysHowEachRelationRuns(kind: StoreKind) throws {
    let graph = try Self.clinic(kind)
    let text = graph.records(Pet.self)
      .filter("owner.city", value: "Oslo").filter("ANY visits.cost > 20").filter("visits.@sum.cost > 1")
      .filter("SUBQUERY(visits, $v, $v.cost > 1 AND $v.day > 0).@count > 0")
      .filter("SUBQUERY(visits, $v, $v.cost > age).@count > 0").explain()
    // Stores in one database (PostgreSQL's) run the semi-joins as subqueries in the pets'
    // statement.
    let how = ClinicStores.sharesDatabase(graph) ? "in the statement, as a subquery on" : "semi-join"
    #expect(text.contains("relation Pet.owner (to-one → Person): \(how)"), "\(text)")
    #expect(text.contains("relation Pet.visits (to-many → Visit): \(how)"), "\(text)")
    // There `@sum` is a grouped subquery too; elsewhere one query for each pet's sum.
    let sum =
      ClinicStores.sharesDatabase(graph)
      ? "GROUP BY petID HAVING @sum.cost > 1" : "for visits.@sum.cost of each record"
    #expect(text.contains(sum), "\(text)")
    // A SUBQUERY that reads only the visit is the count of the visits it selects; one that
    // reads the pet's own key is computed on each pet.
    let counted =
      ClinicStores.sharesDatabase(graph)
      ? "id IN (SELECT petID FROM" : "counting"
    #expect(text.contains(counted) && text.contains("cost > 1 AND day > 0"), "\(text)")
    #expect(text.contains("materialized") && text.contains("$v.cost > age"), "\(text)")
  }
}

extension FieldValue {
  /// The number, as a `Double`, for comparing sums across Int and Double.
  fileprivate var doubleValue: Double? {
    switch self {
    case .int(let i): return Double(i)
    case .double(let d): return d
    default: return nil
    }
  }
}
