import Foundation
import RequestSet

struct Person: Record { var id: Int; var name: String; var city: String; var age: Int? }
struct Vet: Record { var id: Int; var name: String; var clinic: String? }
struct Pet: Record { var id: Int; var name: String; var species: String; var age: Int; var ownerID: Int? }
struct Visit: Record { var id: Int; var petID: Int; var vetID: Int?; var cost: Double; var day: Int }

extension Pet: RelatedRecord {
  static let owner = ToOne<Pet, Person>("owner", \.ownerID, onDelete: .nullify, allowsDangling: true)
  static let visits = ToMany<Pet, Visit>("visits", inverse: \.petID)
  static let vets = ToManyThrough("vets", through: visits, then: Visit.vet)
  static let relations: [any Relation<Pet>] = [owner, visits, vets]
}

extension Person: RelatedRecord {
  static let pets = ToMany<Person, Pet>("pets", inverse: \.ownerID)
  static let relations: [any Relation<Person>] = [pets]
}

extension Visit: RelatedRecord {
  static let pet = ToOne<Visit, Pet>("pet", \.petID, onDelete: .cascade)   // required: petID is not optional
  static let vet = ToOne<Visit, Vet>("vet", \.vetID, onDelete: .nullify)
  static let relations: [any Relation<Visit>] = [pet, vet]
}

extension Vet: RelatedRecord {
  static let visits = ToMany<Vet, Visit>("visits", inverse: \.vetID)
  static let relations: [any Relation<Vet>] = [visits]
}

let people = MemoryStore<Person>()
let patients = MemoryStore<Pet>()
let visits = MemoryStore<Visit>()
let vets = MemoryStore<Vet>()
let clinic = try RecordGraph(people, patients, visits, vets)   // one store per type

try clinic.insert(contentsOf: [Person(id: 1, name: "Ann", city: "Oslo"), Person(id: 2, name: "Bo", city: "Rome")])
try clinic.insert(contentsOf: [Vet(id: 1, name: "Vera"), Vet(id: 2, name: "Max")])
try clinic.insert(contentsOf: [
  Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1),
  Pet(id: 2, name: "Tom", species: "Cat", age: 5, ownerID: 2),
  Pet(id: 3, name: "Kit", species: "Cat", age: 1, ownerID: nil),
])
try clinic.insert(contentsOf: [
  Visit(id: 1, petID: 1, vetID: 1, cost: 10, day: 1),
  Visit(id: 2, petID: 1, vetID: 2, cost: 30, day: 2),
  Visit(id: 3, petID: 2, vetID: 2, cost: 5, day: 3),
])
let allPets = clinic.records(Pet.self)

do {
  _ = try RecordGraph(people, patients)   // no store of Visit or Vet
} catch let error as RequestSetError where error.code == .invalidRelation {
  print(error.message)
  // The relation Pet.vets points at Vet, but the graph holds no store of Vet. Pass a store
  // of Vet to RecordGraph, or remove the relation.
}

let oslo = allPets.filter("owner.city", value: "Oslo")              // a dotted key
let typedOslo = allPets.filter(Pet.owner.city == "Oslo")              // a typed key, checked by the compiler
let formatOslo = allPets.filter("owner.city == %@", "Oslo")           // a format string
let tripletOslo = allPets.filter(where: ["owner.city", "IN", ["Oslo", "Bergen"]])   // a triplet
let ownerless = allPets.filter("owner == nil")                         // no owner: a nil or dangling key
print(oslo.map(\.name), typedOslo.map(\.name), formatOslo.map(\.name), tripletOslo.map(\.name), ownerless.map(\.name))
// → ["Rex"] ["Rex"] ["Rex"] ["Rex"] ["Kit"]

let pricey = allPets.filter("ANY visits.cost > 20")                         // Rex
let cheap = allPets.filter("ALL visits.cost < 20")                          // Tom, and Kit (no visits)
let notMax = allPets.filter("NONE visits.vet.name == 'Max'")                // Kit
let unseen = allPets.filter("visits.@count == 0")                           // Kit
let spent = allPets.filter("visits.@sum.cost > 20")                         // Rex
let seenByMax = allPets.filter("SUBQUERY(visits, $v, $v.vet.name == 'Max').@count > 0")   // Rex, Tom
let seenByVera = allPets.filter("ANY vets.name == 'Vera'")                  // Rex
let typedPricey = allPets.filter(Pet.visits.any.cost > 20)                  // Rex
let typedBusy = allPets.filter(Pet.visits.count >= 2)                       // Rex
let typedSpent = allPets.filter(Pet.visits.sum(\.cost) > 20)                // Rex
let typedUnseen = allPets.filter(Pet.visits.isEmpty)                        // Kit
let typedSeenByVera = allPets.filter(Pet.vets.any.name == "Vera")           // Rex
let overAge = allPets.filter("SUBQUERY(visits, $v, $v.cost > age * 5).@count > 0")   // Rex
print(pricey.map(\.name), cheap.map(\.name), notMax.map(\.name), unseen.map(\.name), spent.map(\.name))
// → ["Rex"] ["Tom", "Kit"] ["Kit"] ["Kit"] ["Rex"]
print(seenByMax.map(\.name), seenByVera.map(\.name), typedPricey.map(\.name), typedBusy.map(\.name))
// → ["Rex", "Tom"] ["Rex"] ["Rex"] ["Rex"]
print(typedSpent.map(\.name), typedUnseen.map(\.name), typedSeenByVera.map(\.name), overAge.map(\.name))
// → ["Rex"] ["Kit"] ["Rex"] ["Rex"]

let noCity = allPets.filter("owner.city", value: nil)       // Kit
let notOslo = allPets.filter(Pet.owner.city != "Oslo")      // Tom, and Kit (no owner)
print(noCity.map(\.name), notOslo.map(\.name))   // → ["Kit"] ["Tom", "Kit"]

let byCity = allPets.sortBy("owner.city")                                   // Kit (nil), Rex (Oslo), Tom (Rome)
let byOwner = allPets.sortBy("owner.name", order: .descending)              // Tom, Rex, Kit
let byVisits = allPets.sortBy(Pet.visits.count, order: .descending)         // Rex, Tom, Kit
let bySpend = allPets.sortBy(Pet.visits.sum(\.cost), order: .descending)    // Rex, Tom, Kit
print(byCity.map(\.name), byOwner.map(\.name), byVisits.map(\.name), bySpend.map(\.name))
// → ["Kit", "Rex", "Tom"] ["Tom", "Rex", "Kit"] ["Rex", "Tom", "Kit"] ["Rex", "Tom", "Kit"]

let petRows = try allPets.sortBy("id").values("name", "owner.city", "visits.@count")
print(petRows.map { "\($0["name"]!) \($0["owner.city"]!) \($0["visits.@count"]!)" })
// → ["\"Rex\" \"Oslo\" 2", "\"Tom\" \"Rome\" 1", "\"Kit\" nil 0"]

let rows = try allPets.fetch(
  including: Pet.owner, Pet.vets, Pet.visits.sortBy(\.day, order: .descending).limit(1).including(Visit.vet))
for row in rows {
  let latest = row[Pet.visits].first.map { "day \($0.day) with \($0[Visit.vet]?.name ?? "-")" } ?? "-"
  print(row.name, row[Pet.owner]?.city ?? "-", row[Pet.vets].map(\.name), latest)
}
// → Rex Oslo ["Vera", "Max"] day 2 with Max
// → Tom Rome ["Max"] day 3 with Max
// → Kit - [] -

do {
  try clinic.insert(Visit(id: 9, petID: 77, vetID: nil, cost: 1, day: 1))
} catch let error as RequestSetError where error.code == .danglingReference {
  print(error.message)   // Visit 9's pet (petID = 77) names no Pet. Insert that Pet first, …
}
try clinic.delete(Vet.self, id: 2)                       // .nullify: visits 2 and 3 keep no vet
print(try clinic.records(Visit.self).filter("vet == nil").fetch().map(\.id))   // → [2, 3]
try clinic.delete(Pet.self, id: 1)                       // .cascade: Rex's visits go too
print(try clinic.records(Visit.self).fetch().map(\.id))  // → [3]
try clinic.delete(Person.self, id: 2)                    // .nullify: Tom keeps no owner
print(try clinic.records(Pet.self).filter("owner == nil").fetch().map(\.name))   // → ["Tom", "Kit"]

let archive = FileManager.default.temporaryDirectory.appendingPathComponent("clinic-log-\(UUID())")
try FileManager.default.createDirectory(at: archive, withIntermediateDirectories: true)
func logStore<R: Record>(_ type: R.Type) throws -> LogStore<R> {
  try LogStore<R>(path: archive.appendingPathComponent("\(R.self).rslog").path)
}
let logged = try RecordGraph(logStore(Person.self), logStore(Pet.self), logStore(Visit.self), logStore(Vet.self))
try logged.insert(Person(id: 1, name: "Ann", city: "Oslo"))
try logged.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1))
let beforeTheMove = Date()
try logged.save(Person(id: 1, name: "Ann", city: "Rome"))
let osloThen = logged.asOf(beforeTheMove).records(Pet.self).filter("owner.city", value: "Oslo")
let osloNow = logged.records(Pet.self).filter("owner.city", value: "Oslo")
print(try osloThen.fetch().map(\.name), try osloNow.fetch().map(\.name))   // → ["Rex"] []
try FileManager.default.removeItem(at: archive)   // the four logs and their lock files

import RequestSetSQLite

let clinicFolder = FileManager.default.temporaryDirectory.appendingPathComponent("clinic-\(UUID())")
try FileManager.default.createDirectory(at: clinicFolder, withIntermediateDirectories: true)
let sqlPets = try SQLiteStore<Pet>(path: clinicFolder.appendingPathComponent("pets.sqlite").path)
let mixed = try RecordGraph(people, sqlPets, visits, vets)   // SQLite beside memory
try mixed.insert(contentsOf: [
  Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1), Pet(id: 2, name: "Kit", species: "Cat", age: 1, ownerID: nil),
])
let inOsloSQL = mixed.records(Pet.self).filter(Pet.owner.city == "Oslo")
print(inOsloSQL.explain())
// RequestSet<Pet> over SQLiteStore<Pet>
// relation Pet.owner (to-one → Person): semi-join, 1 query on MemoryStore<Person> for owner.city == "Oslo" → ownerID IN {1 ids}
// stage 1: pushed to SQLiteStore<Pet>: WHERE ownerID IN {1}
// …
print(allPets.filter("visits.@sum.cost > 20").explain())
// RequestSet<Pet> over MemoryStore<Pet>
// relation Pet.visits (to-many → Visit): 1 query on MemoryStore<Visit> for visits.@sum.cost of each record
// …
print(allPets.filter("SUBQUERY(visits, $v, $v.cost > 20).@count > 0").explain())
// RequestSet<Pet> over MemoryStore<Pet>
// relation Pet.visits (to-many → Visit): 1 query on MemoryStore<Visit> counting 1 parents' children that match cost > 20
// …
print(allPets.filter("SUBQUERY(visits, $v, $v.cost > age * 5).@count > 0").explain())
// RequestSet<Pet> over MemoryStore<Pet>
// relation Pet.visits (to-many → Visit): materialized, 1 query on MemoryStore<Visit>; SUBQUERY(visits, $v, $v.cost > age * 5).@count > 0 computed on each record
// …
print(allPets.filter("ANY vets.name == 'Vera'").explain())
// RequestSet<Pet> over MemoryStore<Pet>
// relation Pet.vets (to-many through visits.vet → Vet): ANY vets.name == "Vera" runs as ANY visits.vet.name == "Vera", over the visits that reach a vet
//   relation Pet.visits (to-many → Visit): semi-join, 1 query on MemoryStore<Visit> for vet.id != nil AND vet.name == "Vera" → id IN {0 ids}
//     relation Visit.vet (to-one → Vet): semi-join, 1 query on MemoryStore<Vet> for vet.id != nil → vetID IN {1 ids}
//     relation Visit.vet (to-one → Vet): semi-join, 1 query on MemoryStore<Vet> for vet.name == "Vera" → vetID IN {1 ids}
// …
print(inOsloSQL.map(\.name))   // → ["Rex"]
sqlPets.close()
try FileManager.default.removeItem(at: clinicFolder)

import RequestSetSQLite

let zooFolder = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID())")
try FileManager.default.createDirectory(at: zooFolder, withIntermediateDirectories: true)
let zooFile = zooFolder.appendingPathComponent("zoo.sqlite").path
let oneFile = try RecordGraph(
  SQLiteStore<Person>(path: zooFile, table: "people"), SQLiteStore<Pet>(path: zooFile, table: "pets"),
  SQLiteStore<Visit>(path: zooFile, table: "visits"), SQLiteStore<Vet>(path: zooFile, table: "vets"))
try oneFile.insert(contentsOf: [Person(id: 1, name: "Ann", city: "Oslo", age: 34)])
try oneFile.insert(contentsOf: [
  Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1), Pet(id: 2, name: "Kit", species: "Cat", age: 1, ownerID: nil),
])
let inOsloOneFile = oneFile.records(Pet.self).filter(Pet.owner.city == "Oslo")
print(inOsloOneFile.explain())
// RequestSet<Pet> over SQLiteStore<Pet>
// relation Pet.owner (to-one → Person): in the statement, as a subquery on people: ownerID IN (SELECT id FROM people WHERE city == "Oslo")
// stage 1: pushed to SQLiteStore<Pet>: WHERE ownerID IN (SELECT id FROM people WHERE city == "Oslo")
// …
print(inOsloOneFile.map(\.name))   // → ["Rex"]
print(oneFile.records(Pet.self).filter("visits.@count == 0").map(\.name))   // → ["Rex", "Kit"]
print(oneFile.records(Pet.self).filter("visits.@sum.cost == 0").map(\.name))   // → ["Rex", "Kit"]
try FileManager.default.removeItem(at: zooFolder)
