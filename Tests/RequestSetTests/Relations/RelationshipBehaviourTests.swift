import Foundation
import RequestSet
import Synchronization
import Testing

/// Pinned behaviours of relations: delete rules, foreign-key checks, graph validation,
/// errors on misuse, one query per relation when prefetching, and `explain()`.
@Suite(.ownThreads) struct RelationshipBehaviourTests {
  // MARK: Fixtures

  /// A small clinic graph on `kind`: two people, two vets, three pets (one with no
  /// owner), four visits (one with no vet).
  static func smallClinic(_ kind: StoreKind) throws -> RecordGraph {
    let graph = try ClinicStores.graph(kind)
    try graph.insert(contentsOf: [Person(id: 1, name: "Ann", city: "Oslo", age: 40), Person(id: 2, name: "Bo", city: "Rome")])
    try graph.insert(contentsOf: [Vet(id: 1, name: "Vera", clinic: "North"), Vet(id: 2, name: "Max")])
    try graph.insert(contentsOf: [
      Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1),
      Pet(id: 2, name: "Tom", species: "Cat", age: 5, ownerID: 1),
      Pet(id: 3, name: "Kit", species: "Cat", age: 1, ownerID: nil),
    ])
    try graph.insert(contentsOf: [
      Visit(id: 1, petID: 1, vetID: 1, cost: 10, day: 1), Visit(id: 2, petID: 1, vetID: 2, cost: 30, day: 2),
      Visit(id: 3, petID: 2, vetID: 2, cost: 5, day: 3), Visit(id: 4, petID: 3, vetID: nil, cost: 7, day: 4),
    ])
    return graph
  }

  static func ids<T: Record>(_ graph: RecordGraph, _ type: T.Type) throws -> [T.ID] where T.ID == Int {
    try graph.records(T.self).sortBy("id").fetch().map(\.id)
  }

  // MARK: Delete rules

  @Test(arguments: StoreKind.writable)
  func deletingAPetCascadesToItsVisits(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    #expect(try graph.delete(Pet.self, id: 1))
    #expect(try Self.ids(graph, Pet.self) == [2, 3])
    #expect(try Self.ids(graph, Visit.self) == [3, 4])
    // Through the store itself, not only through the graph's sets.
    #expect(try graph.store(for: Visit.self)!.snapshot().count == 2)
    #expect(try !graph.delete(Pet.self, id: 1))
  }

  @Test(arguments: StoreKind.writable)
  func deletingASetCascadesToEveryPetsVisits(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    #expect(try graph.delete(graph.records(Pet.self).filter("species", value: "Cat")) == 2)
    #expect(try Self.ids(graph, Pet.self) == [1])
    #expect(try Self.ids(graph, Visit.self) == [1, 2])
  }

  @Test(arguments: StoreKind.writable)
  func deletingAPersonNullifiesTheirPetsOwner(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    #expect(try graph.delete(Person.self, id: 1))
    let pets = try graph.records(Pet.self).sortBy("id").fetch()
    #expect(pets.map(\.id) == [1, 2, 3])
    #expect(pets.map(\.ownerID) == [nil, nil, nil])
    // Nothing else about the pets changed, and their visits stay.
    #expect(pets.map(\.name) == ["Rex", "Tom", "Kit"])
    #expect(try Self.ids(graph, Visit.self) == [1, 2, 3, 4])
    #expect(try Self.ids(graph, Person.self) == [2])
  }

  @Test(arguments: StoreKind.writable)
  func deletingAVetNullifiesVisitsVet(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    #expect(try graph.delete(Vet.self, id: 2))
    let visits = try graph.records(Visit.self).sortBy("id").fetch()
    #expect(visits.map(\.vetID) == [1, nil, nil, nil])
    #expect(visits.map(\.petID) == [1, 1, 2, 3])
  }

  @Test(arguments: StoreKind.writable)
  func denyRefusesAndDeletesNothing(kind: StoreKind) throws {
    let graph = try Self.wards(kind)
    let error = #expect(throws: RequestSetError.self) { try graph.delete(Ward.self, id: 1) }
    #expect(error?.code == .deleteDenied)
    #expect(error?.message.contains("Bed.ward") == true, "\(error?.message ?? "")")
    #expect(try Self.ids(graph, Ward.self) == [1, 2])
    #expect(try Self.ids(graph, Bed.self) == [1, 2, 3])
    // A ward no bed points at deletes.
    #expect(try graph.delete(Ward.self, id: 2))
    #expect(try Self.ids(graph, Ward.self) == [1])
  }

  /// A cascade that reaches a `.deny` refuses the whole delete: the cascaded records stay.
  @Test(arguments: StoreKind.writable)
  func denyReachedThroughACascadeDeletesNothing(kind: StoreKind) throws {
    let graph = try Self.wards(kind)
    let error = #expect(throws: RequestSetError.self) { try graph.delete(Hospital.self, id: 1) }
    #expect(error?.code == .deleteDenied)
    #expect(try Self.ids(graph, Hospital.self) == [1])
    #expect(try Self.ids(graph, Ward.self) == [1, 2])
    #expect(try Self.ids(graph, Bed.self) == [1, 2, 3])
    // Once the beds are gone, the cascade goes through.
    #expect(try graph.delete(graph.records(Bed.self)) == 3)
    #expect(try graph.delete(Hospital.self, id: 1))
    #expect(try Self.ids(graph, Ward.self) == [])
  }

  static func wards(_ kind: StoreKind) throws -> RecordGraph {
    let graph = try RecordGraph(
      try kind.makeStore(of: Hospital.self), try kind.makeStore(of: Ward.self), try kind.makeStore(of: Bed.self))
    try graph.insert(Hospital(id: 1))
    try graph.insert(contentsOf: [Ward(id: 1, hospitalID: 1), Ward(id: 2, hospitalID: 1)])
    try graph.insert(contentsOf: [Bed(id: 1, wardID: 1), Bed(id: 2, wardID: 1), Bed(id: 3, wardID: 1)])
    return graph
  }

  // MARK: Nil and empty

  /// No owner (nil or dangling id) reads nil through `owner`; no visits make ANY false,
  /// ALL and NONE true, `@count` and `@sum` 0, `@min` and `@max` nil.
  @Test(arguments: StoreKind.writable)
  func noRelatedRecordReadsNilOrEmpty(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    try graph.insert(Pet(id: 4, name: "Odd", species: "Fish", age: 1, ownerID: 555))
    let pets = graph.records(Pet.self)
    func ids(_ format: String) throws -> [Int] { try pets.filter(format).sortBy("id").fetch().map(\.id) }
    #expect(try ids("owner.city != 'Oslo'") == [3, 4])
    #expect(try ids("owner.city == nil") == [3, 4])
    #expect(try ids("owner.age > 0") == [1, 2])
    #expect(try ids("owner.age <= 100") == [1, 2])
    #expect(try ids("NOT (owner.age > 0)") == [3, 4])
    #expect(try ids("ANY visits.cost > 0") == [1, 2, 3])
    #expect(try ids("ALL visits.cost > 1000") == [4])
    #expect(try ids("NONE visits.cost > 0") == [4])
    #expect(try ids("visits.@count == 0") == [4])
    #expect(try ids("visits.@sum.cost == 0") == [4])
    #expect(try ids("visits.@min.day != 3") == [1, 3, 4])
    #expect(try ids("visits.@max.cost < 1000") == [1, 2, 3])
    #expect(try pets.filter(Pet.visits.isEmpty).fetch().map(\.id) == [4])
    // Sorting: no owner sorts as nil, first ascending and last descending.
    #expect(try pets.sortBy("owner.name").sortBy("id").fetch().map(\.id) == [3, 4, 1, 2])
    #expect(try pets.sortBy("owner.name", order: .descending).sortBy("id").fetch().map(\.id) == [1, 2, 3, 4])
    #expect(try pets.sortBy(Pet.visits.count, order: .descending).sortBy("id").fetch().map(\.id) == [1, 2, 3, 4])
  }

  /// `vets` goes through visits to their vets: a visit with no vet adds none, in
  /// `@count` and in prefetching alike; a vet seen twice counts twice.
  @Test(arguments: StoreKind.writable)
  func vetsThroughVisitsSkipVisitsWithNoVet(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    try graph.insert(Visit(id: 5, petID: 2, vetID: 2, cost: 1, day: 9))
    let pets = graph.records(Pet.self)
    #expect(try pets.filter("vets.@count == 0").sortBy("id").fetch().map(\.id) == [3])
    #expect(try pets.filter("vets.@count == 2").sortBy("id").fetch().map(\.id) == [1, 2])
    #expect(try pets.filter("ANY vets.name == 'Max'").sortBy("id").fetch().map(\.id) == [1, 2])
    #expect(try pets.filter("NONE vets.name == 'Vera'").sortBy("id").fetch().map(\.id) == [2, 3])
    let rows = try pets.sortBy("id").fetch(including: Pet.vets)
    #expect(rows.map { $0[Pet.vets].map(\.record.id).sorted() } == [[1, 2], [2, 2], []])
  }

  // MARK: Foreign keys on writes

  @Test(arguments: StoreKind.writable)
  func aVisitOfNoPetIsRefused(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    let error = #expect(throws: RequestSetError.self) {
      try graph.insert(Visit(id: 9, petID: 77, vetID: nil, cost: 1, day: 1))
    }
    #expect(error?.code == .danglingReference)
    #expect(error?.message.contains("pet") == true && error?.message.contains("77") == true, "\(error?.message ?? "")")
    // A batch with one bad visit writes none of them.
    let batch = #expect(throws: RequestSetError.self) {
      try graph.insert(contentsOf: [
        Visit(id: 10, petID: 1, vetID: 1, cost: 1, day: 1), Visit(id: 11, petID: 78, vetID: 1, cost: 1, day: 1),
      ])
    }
    #expect(batch?.code == .danglingReference)
    // save checks too, and leaves the stored visit as it was.
    let saved = #expect(throws: RequestSetError.self) {
      try graph.save(Visit(id: 1, petID: 79, vetID: 1, cost: 10, day: 1))
    }
    #expect(saved?.code == .danglingReference)
    // A vet id that names no vet is refused as well (Visit.vet does not allow dangling).
    let vet = #expect(throws: RequestSetError.self) {
      try graph.insert(Visit(id: 12, petID: 1, vetID: 99, cost: 1, day: 1))
    }
    #expect(vet?.code == .danglingReference)
    #expect(try Self.ids(graph, Visit.self) == [1, 2, 3, 4])
    #expect(try graph.store(for: Visit.self)!.fetch(id: 1)?.petID == 1)
  }

  @Test(arguments: StoreKind.writable)
  func allowedReferencesWrite(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    // Pet.owner allows dangling: an owner id that names no person is stored.
    try graph.insert(Pet(id: 4, name: "Odd", species: "Fish", age: 1, ownerID: 555))
    // A nil optional key names nothing and is fine.
    try graph.insert(Visit(id: 5, petID: 4, vetID: nil, cost: 1, day: 1))
    try graph.save(Visit(id: 1, petID: 2, vetID: 2, cost: 10, day: 1))
    #expect(try Self.ids(graph, Pet.self) == [1, 2, 3, 4])
    #expect(try graph.store(for: Visit.self)!.fetch(id: 1)?.petID == 2)
    // The dangling owner reads as none.
    #expect(try graph.records(Pet.self).filter("owner.city", value: "Oslo").fetch().map(\.id).sorted() == [1, 2])
    #expect(try graph.records(Pet.self).filter("owner.name == nil").fetch().map(\.id).sorted() == [3, 4])
  }

  @Test(arguments: StoreKind.writable)
  func aBatchMayPointAtItsOwnRecords(kind: StoreKind) throws {
    let graph = try RecordGraph(try kind.makeStore(of: Employee.self))
    // 1's manager is 2, inserted in the same batch, after it.
    try graph.insert(contentsOf: [
      Employee(id: 1, name: "Ann", managerID: 2), Employee(id: 2, name: "Bo", managerID: nil),
      Employee(id: 3, name: "Cy", managerID: 3),
    ])
    #expect(try graph.records(Employee.self).filter("manager.name", value: "Bo").fetch().map(\.id) == [1])
    let error = #expect(throws: RequestSetError.self) {
      try graph.insert(contentsOf: [Employee(id: 4, name: "Di", managerID: 1), Employee(id: 5, name: "Ed", managerID: 6)])
    }
    #expect(error?.code == .danglingReference)
    #expect(graph.records(Employee.self).count == 3)
  }

  // MARK: Graph validation

  @Test func aRelationToATypeNoStoreHoldsIsRefused() throws {
    let error = #expect(throws: RequestSetError.self) {
      try RecordGraph(MemoryStore<Pet>(), MemoryStore<Visit>(), MemoryStore<Vet>())
    }
    #expect(error?.code == .invalidRelation)
    #expect(error?.message.contains("Pet.owner") == true && error?.message.contains("Person") == true, "\(error?.message ?? "")")
  }

  @Test func twoRelationsOfOneNameAreRefused() throws {
    let error = #expect(throws: RequestSetError.self) { try RecordGraph(MemoryStore<Twin>(), MemoryStore<Ward>(), MemoryStore<Hospital>()) }
    #expect(error?.code == .invalidRelation)
    #expect(error?.message.contains("Twin") == true && error?.message.contains("\"ward\"") == true, "\(error?.message ?? "")")
  }

  @Test func nullifyOnARequiredKeyIsRefused() throws {
    let error = #expect(throws: RequestSetError.self) { try RecordGraph(MemoryStore<Sticker>(), MemoryStore<Hospital>()) }
    #expect(error?.code == .invalidRelation)
    #expect(error?.message.contains("Sticker.hospital") == true, "\(error?.message ?? "")")
    #expect(error?.message.contains("nullified") == true, "\(error?.message ?? "")")
  }

  @Test func aCycleOfCascadesIsRefused() throws {
    let error = #expect(throws: RequestSetError.self) { try RecordGraph(MemoryStore<Hen>(), MemoryStore<Egg>()) }
    #expect(error?.code == .invalidRelation)
    let message = error?.message ?? ""
    #expect(message.contains("cycle"), "\(message)")
    #expect(message.contains("Hen.egg") && message.contains("Egg.hen"), "\(message)")
  }

  @Test func theClinicGraphIsValid() throws {
    _ = try RecordGraph(MemoryStore<Person>(), MemoryStore<Pet>(), MemoryStore<Visit>(), MemoryStore<Vet>())
    _ = try Self.wards(.memory)
  }

  // MARK: Misuse

  @Test(arguments: StoreKind.writable)
  func aToManyKeyAsOneValueThrowsOnRead(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    let set = graph.records(Pet.self).filter("visits.cost", value: 5)
    let error = #expect(throws: RequestSetError.self) { try set.fetch() }
    #expect(error?.code == .invalidRelation)
    #expect(error?.message.contains("Pet.visits") == true, "\(error?.message ?? "")")
    #expect(throws: RequestSetError.self) { try graph.records(Pet.self).filter("visits.cost > 5").fetch() }
    #expect(throws: RequestSetError.self) { try graph.records(Pet.self).sortBy("visits").fetch() }
  }

  @Test func prefetchingASetNotFromAGraphThrows() throws {
    let store = MemoryStore<Pet>()
    try store.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: nil))
    let error = #expect(throws: RequestSetError.self) { try RequestSet(store).fetch(including: Pet.owner) }
    #expect(error?.code == .invalidRelation)
    let array = #expect(throws: RequestSetError.self) {
      try RequestSet([Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: nil)]).fetch(including: Pet.visits)
    }
    #expect(array?.code == .invalidRelation)
  }

  // MARK: One query per relation

  @Test(arguments: [10, 1_000])
  func prefetchReadsEachStoreOnce(pets petCount: Int) throws {
    let people = SnapshotCountingStore<Person>(), pets = SnapshotCountingStore<Pet>(), visits = SnapshotCountingStore<Visit>()
    let vets = SnapshotCountingStore<Vet>()
    let graph = try RecordGraph(people, pets, visits, vets)
    let d = ClinicData.generate(people: max(2, petCount / 5), pets: petCount, visits: petCount * 2, vets: 10, seed: 7)
    try d.insert(into: graph)
    for store in [people.reset, pets.reset, visits.reset, vets.reset] { store() }
    let rows = try graph.records(Pet.self).fetch(including: Pet.owner, Pet.visits.including(Visit.vet))
    #expect(rows.count == petCount)
    #expect(rows.reduce(0) { $0 + $1[Pet.visits].count } == petCount * 2)
    let counts = [pets.count, people.count, visits.count, vets.count]
    #expect(counts == [1, 1, 1, 1], "snapshots of pets, people, visits, vets: \(counts)")
  }

  // MARK: explain

  @Test(arguments: StoreKind.writable)
  func explainNamesTheSemiJoin(kind: StoreKind) throws {
    let graph = try Self.smallClinic(kind)
    let text = graph.records(Pet.self).filter("owner.city", value: "Oslo").explain()
    let line = text.split(separator: "\n").first { $0.hasPrefix("relation Pet.owner") }
    #expect(line != nil, "\(text)")
    // Stores in one database (PostgreSQL's) run it as a subquery in the pets' statement.
    let how = ClinicStores.sharesDatabase(graph) ? "in the statement, as a subquery on" : "semi-join"
    #expect(line?.contains(how) == true, "\(text)")
  }
}

// MARK: Test-only record types

struct Hospital: Record, Equatable {
  var id: Int
}

struct Ward: Record, Equatable {
  var id: Int
  var hospitalID: Int
}

struct Bed: Record, Equatable {
  var id: Int
  var wardID: Int
}

extension Ward: RelatedRecord {
  static let hospital = ToOne<Ward, Hospital>("hospital", \.hospitalID, onDelete: .cascade)
  static let relations: [any Relation<Ward>] = [hospital]
}

extension Bed: RelatedRecord {
  /// Required, `.deny` by default.
  static let ward = ToOne<Bed, Ward>("ward", \.wardID)
  static let relations: [any Relation<Bed>] = [ward]
}

/// Two relations named "ward".
struct Twin: Record, Equatable {
  var id: Int
  var wardID: Int?
  var hospitalID: Int?
}

extension Twin: RelatedRecord {
  static let relations: [any Relation<Twin>] = [
    ToOne<Twin, Ward>("ward", \.wardID), ToOne<Twin, Hospital>("ward", \.hospitalID),
  ]
}

/// A required key declared `.nullify`.
struct Sticker: Record, Equatable {
  var id: Int
  var hospitalID: Int
}

extension Sticker: RelatedRecord {
  static let relations: [any Relation<Sticker>] = [ToOne<Sticker, Hospital>("hospital", \.hospitalID, onDelete: .nullify)]
}

/// Hens and eggs cascade to each other.
struct Hen: Record, Equatable {
  var id: Int
  var eggID: Int?
}

struct Egg: Record, Equatable {
  var id: Int
  var henID: Int?
}

extension Hen: RelatedRecord {
  static let relations: [any Relation<Hen>] = [ToOne<Hen, Egg>("egg", \.eggID, onDelete: .cascade)]
}

extension Egg: RelatedRecord {
  static let relations: [any Relation<Egg>] = [ToOne<Egg, Hen>("hen", \.henID, onDelete: .cascade)]
}

/// A type that points at itself.
struct Employee: Record, Equatable {
  var id: Int
  var name: String
  var managerID: Int?
}

extension Employee: RelatedRecord {
  static let manager = ToOne<Employee, Employee>("manager", \.managerID)
  static let relations: [any Relation<Employee>] = [manager]
}

/// A MemoryStore that counts `snapshot()` calls: every read of the store takes one.
final class SnapshotCountingStore<R: Record>: RecordStore {
  typealias Element = R
  let base = MemoryStore<R>()
  let snapshots = Atomic<Int>(0)

  init() {}

  func insert(_ record: R) throws { try base.insert(record) }
  func insert(contentsOf records: some Sequence<R>) throws { try base.insert(contentsOf: records) }
  func save(_ record: R) throws { try base.save(record) }
  @discardableResult func delete(id: R.ID) throws -> Bool { try base.delete(id: id) }
  func apply(_ changes: [RecordChange<R>], ifVersion expectedVersion: UInt64?) throws {
    try base.apply(changes, ifVersion: expectedVersion)
  }
  func fetch(id: R.ID) throws -> R? { try base.fetch(id: id) }
  /// How many snapshots were taken since the last `reset()`.
  var count: Int { snapshots.load(ordering: .relaxed) }
  func reset() { snapshots.store(0, ordering: .relaxed) }

  func snapshot() throws -> StoreSnapshot<R> {
    snapshots.add(1, ordering: .relaxed)
    return try base.snapshot()
  }
  func commits(polling interval: Duration) -> AsyncStream<StoreCommit<R>> { base.commits(polling: interval) }
  func close() { base.close() }
}
