import Foundation
import RequestSet
import Testing

@Suite struct RelationSmokeTests {
  @Test(arguments: [StoreKind.memory, .sqlite, .log, .pushdownMemory]) func basics(kind: StoreKind) throws {
    let people = try kind.makeStore(of: Person.self), pets = try kind.makeStore(of: Pet.self)
    let visits = try kind.makeStore(of: Visit.self), vets = try kind.makeStore(of: Vet.self)
    let graph = try RecordGraph([people, pets, visits, vets])
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
    let all = graph.records(Pet.self)
    print(try all.filter("owner.city", value: "Oslo").fetch().map(\.name))
    print(try all.filter(Pet.owner.city == "Rome").fetch().map(\.name))
    print(try all.filter("ANY visits.cost > 20").fetch().map(\.name))
    print(try all.filter("visits.@count == 0").fetch().map(\.name))
    print(try all.filter("visits.@sum.cost > 20").fetch().map(\.name))
    print(try all.filter("SUBQUERY(visits, $v, $v.vet.name == 'Max').@count > 0").fetch().map(\.name))
    print(try all.filter("ANY vets.name == 'Vera'").fetch().map(\.name))
    print(try all.filter(Pet.visits.count >= 1).sortBy(Pet.visits.sum(\.cost), order: .descending).fetch().map(\.name))
    print(try all.sortBy("owner.name", order: .descending).fetch().map(\.name))
    print(try all.filter(where: ["owner.city", "==", "Oslo"]).fetch().map(\.name))
    print(all.filter("owner.city", value: "Oslo").explain())
    let rows = try all.fetch(including: Pet.owner, Pet.visits.sortBy(\.day, order: .descending).limit(1).including(Visit.vet))
    for r in rows { print(r.name, r[Pet.owner]?.name ?? "-", r[Pet.visits].map { "\($0.day) \($0[Visit.vet]?.name ?? "-")" }) }
    #expect(throws: RequestSetError.self) { try all.filter("visits.cost", value: 5).fetch() }
    do { _ = try all.filter("visits.cost", value: 5).fetch() } catch { print(error) }
    do { try graph.insert(Visit(id: 9, petID: 77, vetID: nil, cost: 1, day: 1)) } catch { print(error) }
    try graph.delete(Pet.self, id: 1)
    print(try visits.snapshot().count, try graph.records(Visit.self).fetch().map(\.id))
    try graph.delete(Vet.self, id: 2)
    print(try graph.records(Visit.self).fetch())
  }
}
