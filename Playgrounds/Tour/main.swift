// A guided tour of RequestSet: run it with `swift run Tour` and read along.
//
// Every step prints what it did, and checks what it claims with `expect`, so the tour
// fails loudly if it ever stops telling the truth.

import Foundation
import RequestSet

func section(_ title: String) { print("\n== \(title) ==") }
func expect(_ condition: Bool, _ claim: String, line: Int = #line) {
  guard condition else { fatalError("Tour line \(line): expected \(claim)") }
}

// MARK: 1. A record type
// A record is any Codable, Sendable, Identifiable struct. Its Codable keys are the string
// keys queries use; a nested struct's fields are reached with dots ("owner.city").

struct Owner: Codable, Sendable, Hashable {
  var name: String
  var city: String
}

struct Animal: Record {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var weight: Double
  var nickname: String?
  var tags: [String]
  var owner: Owner?
}

// MARK: 2. A store
section("A store")
let store = MemoryStore<Animal>()
try store.insert(Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick",
                        tags: ["small"], owner: Owner(name: "Walt", city: "Burbank")))
try store.insert(contentsOf: [  // all or nothing
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al", tags: []),
  Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old"], owner: Owner(name: "Bo", city: "Bergen")),
])
print("The store holds \(store.count) animals.")
do {
  try store.insert(Animal(id: 1, name: "Copy", species: "Mouse", age: 1, weight: 1, tags: []))
} catch let error as RequestSetError {
  print("A duplicate id is refused: \(error.message)")
}

// MARK: 3. A request set is a lazy collection
section("A lazy collection")
let animals = RequestSet(store)  // runs nothing yet
print("count: \(animals.count), first: \(animals.first!.name), animals[2]: \(animals[2].name)")
for animal in animals.limit(2) { print("  for-in: \(animal.name)") }
expect(animals.count == 6, "six animals")

// MARK: 4. Filters, in every form the seed libraries used
section("Filters")
let cows = animals.filter("species", value: "Cow")  // key and value
print("Cows: \(cows.map(\.name))")
expect(cows.map(\.name) == ["Daisy", "Bella"], "two cows")

print("No nickname: \(animals.filter("nickname", value: nil).map(\.name))")  // nil matches nil
print("In Oslo: \(animals.filter("owner.city", value: "Oslo").map(\.name))")  // dotted keys

let both = animals.filter([("species", "Dog"), ("age", 5)])  // tuples: AND
let either = animals.filter([("name", "Rex"), ("name", "Daisy")], mode: .or)  // tuples: OR
print("Dogs aged 5: \(both.map(\.name)); Rex or Daisy: \(either.map(\.name))")

let older = animals.filter(\.age > 4)  // typed key paths, checked by the compiler
let adult: RequestFilter<Animal> = \.age >= 5 && \.nickname != nil  // a filter is a value
print("Older than 4: \(older.map(\.name)); adults with a nickname: \(animals.filter(adult).map(\.name))")

let heavy = animals.filter(#Predicate<Animal> { $0.weight > 100 })  // Foundation Predicate
let farm = animals.filter { $0.tags.contains("farm") }  // a closure, still a RequestSet
print("Heavy: \(heavy.map(\.name)); farm: \(farm.map(\.name))")
print("Not cows: \(animals.exclude("species", value: "Cow").map(\.name))")

// MARK: 5. Chaining: each filter joins everything before it
section("Chaining")
// (species == Cow AND age > 3) OR name == Rex
let chained = animals.filter("species", value: "Cow").filter(\.age > 3).filter("name", value: "Rex", mode: .or)
print("(Cow AND age > 3) OR Rex: \(chained.map(\.name))")
expect(chained.map(\.name) == ["Daisy", "Rex"], "Daisy and Rex")
// A tuple list combines its own tuples by its mode, then joins the chain with AND.
let thc = animals.filter([("name", "Rex"), ("name", "Daisy")], mode: .or).filter("species", value: "Dog")
print("(Rex OR Daisy) AND Dog: \(thc.map(\.name))")

// MARK: 6. Sorting
section("Sorting")
print("By name: \(animals.sortBy("name").map(\.name))")  // Swift's order: "Zed" < "alice"
print("By name, ignoring case: \(animals.sortBy("name", collation: .caseInsensitive).map(\.name))")
print("By species descending, then name: \(animals.sortBy([("species", .descending), ("name", .ascending)]).map(\.name))")
print("By age, oldest first (ties keep store order): \(animals.sortBy(\.age, order: .descending).map(\.name))")
print("By nickname (nil first): \(animals.sortBy(\.nickname).map { $0.nickname ?? "nil" })")

// MARK: 7. Limits and offsets come after filters and sorts
section("Windows")
let page2 = animals.sortBy(\.id).offset(2).limit(2)
print("Page 2 of 2 per page: \(page2.map(\.id))")
expect(page2.map(\.id) == [3, 4], "ids 3 and 4")
// A filter after a limit applies to what the limit kept.
print("Of the first three, older than 3: \(animals.limit(3).filter(\.age > 3).map(\.name))")

// MARK: 8. One snapshot per evaluation
section("Snapshots")
let dogs = animals.filter("species", value: "Dog")
print("Dogs now: \(dogs.count)")
try store.insert(Animal(id: 7, name: "Fido", species: "Dog", age: 1, weight: 8, tags: []))
print("After inserting Fido, the evaluated set still says \(dogs.count); refreshed: \(dogs.refreshed().count)")
expect(dogs.count == 2 && dogs.refreshed().count == 3, "the snapshot holds")

// MARK: 9. Errors you can catch
section("Errors")
do {
  _ = try animals.filter("nmae", value: "Micky").fetch()
} catch let error as RequestSetError {
  print("\(error.code): \(error.message)")
}
do {
  _ = try animals.filter("species", value: "Cow").get()
} catch let error as RequestSetError {
  print("\(error.code): \(error.message)")
}
let micky = try animals.filter("name", value: "Micky").get()
print("get() found \(micky.name)")

// MARK: 10. Indexes, and explain() to see the plan without running it
// An index serves equality, IN, ranges, prefixes and sorted limits on its key; the planner
// picks it when it reads fewer records than a scan, and explain() says what it chose.
section("Indexes and plans")
print(animals.filter(\.age > 3).exclude("species", value: "Cat").sortBy("name").limit(3).explain())
try store.createIndex(\.species)
try store.createIndex(\.age)
let dogPlan = animals.filter("species", value: "Dog").sortBy(\.age).limit(2).explain()
print(dogPlan)
expect(dogPlan.contains("index"), "the planner reads through an index once there is one")
expect(animals.filter("species", value: "Dog").map(\.name) == animals.filter { $0.species == "Dog" }.map(\.name),
       "an index returns exactly what a scan returns")

// MARK: 11. Aggregates, groups and writes through a query
section("Aggregates and writes")
print("Total cow weight: \(try animals.filter("species", value: "Cow").sum(\.weight))")
print("Per species: \(try animals.groupBy("species").aggregate(.count, .max("age")).having("count", .greaterThan, 1).fetch())")
let renamed = try animals.filter("species", value: "Dog").update { $0.tags.append("good") }
print("Tagged \(renamed) dogs; deleted \(try animals.filter(\.name == "Fido").delete()) Fido")
let bob = try animals.filter("name", value: "Bob").filter(\.species == "Cat")
  .firstOrInsert { Animal(id: 8, name: "", species: "", age: 1, weight: 3, tags: []) }
print("firstOrInsert made \(bob.name) the \(bob.species)")
try store.transaction { tx in
  tx.delete(id: 8)
  tx.save(Animal(id: 9, name: "Kit", species: "Cat", age: 0, weight: 1, tags: []))
}
expect(try store.exists(id: 9) && !store.exists(id: 8), "the transaction applied both changes")

// MARK: 12. Any array works too
section("Arrays")
let fixed = RequestSet([3, 1, 2])
print("RequestSet([3, 1, 2]).sortBy(\\.self): \(Array(fixed.sortBy(\.self)))")

// MARK: 13. Relationships: owners, pets and visits
// Records hold the ids of other records, as rows hold foreign keys. A type declares its
// relations once, as static lets; a RecordGraph holds one store per type, and the sets it
// makes walk the relations with the same keys every filter form uses.
section("Relationships")

struct PetOwner: Record { var id: Int; var name: String; var city: String }
struct Pet: Record { var id: Int; var name: String; var ownerID: Int? }
struct Visit: Record { var id: Int; var petID: Int; var reason: String; var cost: Double; var day: Int }

extension PetOwner: RelatedRecord {
  static let pets = ToMany<PetOwner, Pet>("pets", inverse: \.ownerID)  // the inverse of Pet.owner
  static let relations: [any Relation<PetOwner>] = [pets]
}
extension Pet: RelatedRecord {
  // The delete rule sits on the foreign key, as SQL's ON DELETE does: deleting an owner
  // deletes their pets, and deleting a pet deletes its visits.
  static let owner = ToOne<Pet, PetOwner>("owner", \.ownerID, onDelete: .cascade)
  static let visits = ToMany<Pet, Visit>("visits", inverse: \.petID)
  static let relations: [any Relation<Pet>] = [owner, visits]
}
extension Visit: RelatedRecord {
  static let pet = ToOne<Visit, Pet>("pet", \.petID, onDelete: .cascade)  // required: petID is not optional
  static let relations: [any Relation<Visit>] = [pet]
}

let owners = MemoryStore<PetOwner>(), petStore = MemoryStore<Pet>(), visitStore = MemoryStore<Visit>()
let clinic = try RecordGraph(owners, petStore, visitStore)  // one store per type; kinds may mix
try clinic.insert(contentsOf: [PetOwner(id: 1, name: "Ann", city: "Oslo"), PetOwner(id: 2, name: "Bo", city: "Rome")])
try clinic.insert(contentsOf: [
  Pet(id: 1, name: "Rex", ownerID: 1), Pet(id: 2, name: "Tom", ownerID: 2), Pet(id: 3, name: "Kit", ownerID: nil),
])
try clinic.insert(contentsOf: [
  Visit(id: 1, petID: 1, reason: "vaccine", cost: 40, day: 1), Visit(id: 2, petID: 1, reason: "checkup", cost: 25, day: 9),
  Visit(id: 3, petID: 2, reason: "checkup", cost: 25, day: 4),
])
do {
  try clinic.insert(Visit(id: 4, petID: 99, reason: "?", cost: 0, day: 0))  // the graph checks foreign keys
} catch let error as RequestSetError {
  print("\(error.code): \(error.message)")
}

let clinicPets = clinic.records(Pet.self)
let osloPets = clinicPets.filter(Pet.owner.city == "Oslo")  // typed, through the to-one
let vaccinated = clinicPets.filter("ANY visits.reason == 'vaccine'")  // a format string, through the to-many
let neverSeen = clinicPets.filter(Pet.visits.isEmpty)
let ownerless = clinicPets.filter("owner.city", value: nil)  // no related record: its keys read nil
print("In Oslo: \(osloPets.map(\.name)); vaccinated: \(vaccinated.map(\.name)); never seen: \(neverSeen.map(\.name))")
print("Owner's city is nil: \(ownerless.map(\.name))")
expect(osloPets.map(\.name) == ["Rex"] && vaccinated.map(\.name) == ["Rex"], "Rex lives in Oslo and was vaccinated")
expect(neverSeen.map(\.name) == ["Kit"] && ownerless.map(\.name) == ["Kit"], "Kit has no visits and no owner")
let bySpend = clinicPets.sortBy(Pet.visits.sum(\.cost), order: .descending)
print("By money spent: \(bySpend.map(\.name))")
expect(bySpend.map(\.name) == ["Rex", "Tom", "Kit"], "Rex spent most")
let busyOwners = clinic.records(PetOwner.self).filter("ANY pets.name == 'Tom' OR pets.@count >= 2")
print("Owners of Tom or of two pets: \(busyOwners.map(\.name))")
// explain() says how each relation ran: one query on the related store, whose ids
// become `ownerID IN {…}` here, which any store (SQL ones too) runs itself.
print(osloPets.explain())

// Prefetching: one query per relation, never one per pet.
for row in try clinicPets.fetch(including: Pet.owner, Pet.visits.sortBy(\.day, order: .descending).limit(1)) {
  let last = row[Pet.visits].first.map { "\($0.reason) on day \($0.day)" } ?? "none"
  print("  \(row.name): owner \(row[Pet.owner]?.name ?? "-"), last visit \(last)")
}

// Deleting through the graph applies the delete rules: Ann's pets go, and their visits.
try clinic.delete(PetOwner.self, id: 1)
// clinicPets was read above, so it keeps that snapshot: refreshed() reads the stores again.
print("After deleting Ann: pets \(try clinicPets.refreshed().fetch().map(\.name)), visits \(try clinic.records(Visit.self).fetch().map(\.id))")
expect(petStore.count == 2 && visitStore.count == 1, "Rex and his two visits went with Ann")

print("\nThat's the tour. Next: README.md for the full map of the API.")
