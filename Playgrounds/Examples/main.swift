// The README's format-string, LogStore, SQLite, index and live-set examples, runnable:
// `swift run Examples`. The README's quick start comes first, verbatim, as the README says
// every example runs after it; DocumentationTests checks that every Swift block of the
// README stands verbatim in a playground.

import Foundation
import RequestSetSQLite
import RequestSet

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

let store = MemoryStore<Animal>()
try store.insert(contentsOf: [
  Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick", tags: ["small"],
         owner: Owner(name: "Walt", city: "Burbank")),
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al", tags: []),
  Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old"], owner: Owner(name: "Bo", city: "Bergen")),
])

let animals = RequestSet(store)                  // nothing runs yet
let cows = animals.filter("species", value: "Cow").sortBy(\.age)
print(cows.map(\.name))                          // ["Bella", "Daisy"]

let olderOrRex = animals.filter(\.age > 4).filter("name", value: "Rex", mode: .or)
print(olderOrRex.count)                          // 4: Daisy, Rex, alice and Zed

for animal in animals.exclude(\.nickname == nil).limit(1) {
  print(animal.name)                             // Micky
}
print(try animals.filter("name", value: "Rex").get().age)   // 5

// BEGIN README: format strings
let userText = "species == 'Dog' AND age >= 5"                                // say, typed by a user
let requestLimit = 20                                                         // say, from a request
let young = animals.filter("age > %@ AND name BEGINSWITH[c] %@", 2, "mi")     // [Micky]
let alices = animals.filter("%K == %@", "name", "Alice", mode: .or)
let farmNorth = animals.filter("ANY tags == 'farm' AND owner.city IN {'Oslo', 'Bergen'}")
let userFilter = try RequestFilter<Animal>(format: userText, arguments: [])   // throws on bad input
let page = try animals.filter(userFilter).limit(requestLimit).validated()     // reading it cannot trap
let triplets = animals.filter(where: ["name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"]])
let typed = animals.filter([\Animal.age: 1...3, \Animal.weight: lt(100)])
let ordered = animals.sortBy("species", "desc:age", "-weight")
// END README

print("format strings:", young.map(\.name), alices.map(\.name), farmNorth.map(\.name), animals.filter(userFilter).map(\.name),
      triplets.map(\.name), typed.map(\.name), ordered.map(\.name))
precondition(young.map(\.name) == ["Micky"] && alices.isEmpty && farmNorth.map(\.name) == ["Daisy"])
precondition(animals.filter(userFilter).map(\.name) == ["Rex", "Zed"] && triplets.map(\.name) == ["Micky"])
precondition(typed.map(\.name) == ["Micky"] && ordered.first?.name == "alice")
precondition(page.map(\.name) == ["Rex", "Zed"])
do {
  _ = try animals.filter(userFilter).limit(-requestLimit).validated()
  preconditionFailure("validated() let a negative limit through")
} catch let error as RequestSetError where error.code == .invalidWindow {
  print("validated:", error.message)
}

// BEGIN README: format expressions
let heavy = animals.filter("weight > age * 10")                              // key against key, arithmetic
let farmFirst = animals.filter("SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0 AND tags[FIRST] == 'farm'")
let older = try RequestFilter<Animal>(format: "age > $min AND species == $kind")
let oldDogs = animals.filter(older.substituting(["min": 4, "kind": "Dog"]))   // variables, bound later
let band = animals.filter("age BETWEEN {$low, $low + 2}", variables: ["low": 2])
// END README

print("format expressions:", heavy.map(\.name), farmFirst.map(\.name), oldDogs.map(\.name), band.map(\.name))
precondition(heavy.map(\.name) == ["Daisy", "Bella"] && farmFirst.map(\.name) == ["Daisy", "Rex"])
precondition(oldDogs.map(\.name) == ["Rex", "Zed"] && band.map(\.name) == ["Micky", "Bella"])

// BEGIN README: indexes
try store.createIndex(\.species)                  // also createIndex("species")
try store.createIndex(\.name, unique: true)       // a second "Rex" now throws .uniqueViolation
let cowsByAge = animals.filter("species", value: "Cow").sortBy("age").limit(5)
print(cowsByAge.explain())
// RequestSet<Animal> over MemoryStore<Animal>
// stage 1: index lookup on species (~2 of 6 records)
//   index answers: species == "Cow"
//   sort: age ASC (top-k heap, k = 5)
//   window: limit 5
let one = animals.filter(\.id == 3).first                      // by id, O(1), no index needed
let eldest = animals.sortBy(\.age, order: .descending).limit(3)  // walks an age index when there is one
// END README
precondition(cowsByAge.map(\.name) == ["Bella", "Daisy"] && one?.name == "Rex")
precondition(eldest.map(\.name) == ["alice", "Daisy", "Rex"])
precondition(cowsByAge.explain().contains("index lookup on species") && store.indexes.count == 2)
do {
  try store.insert(Animal(id: 9, name: "Rex", species: "Dog", age: 1, weight: 20, tags: []))
  preconditionFailure("a unique index lets a duplicate through")
} catch let error as RequestSetError where error.code == .uniqueViolation {
  print("unique:", error.message)
}

// BEGIN README: LogStore
let files = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID())")
try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
let log = try LogStore<Animal>(path: files.appendingPathComponent("animals.rslog").path)   // creates the file
try log.insert(contentsOf: animals)                        // one batch: all of it survives a crash, or none
let logged = RequestSet(log).filter("species", value: "Cow")   // every query works as on MemoryStore
print(logged.map(\.name))                                  // ["Daisy", "Bella"]
try log.compact()                                          // rewrites live records, swaps the file atomically
log.close()                                                // releases the lock; later reads throw .closed
try FileManager.default.removeItem(at: files)              // the log, its lock and checkpoint files
// END README

// An evaluated set keeps its records after the store closes; the folder is gone.
precondition(logged.map(\.name) == ["Daisy", "Bella"] && log.recoveryReport.isClean)
precondition(!FileManager.default.fileExists(atPath: files.path))

// BEGIN README: reading the past
let journalFiles = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())")
try FileManager.default.createDirectory(at: journalFiles, withIntermediateDirectories: true)
let journal = try LogStore<Animal>(
  path: journalFiles.appendingPathComponent("journal.rslog").path, options: .init(keepHistory: .versions(100)))
try journal.insert(contentsOf: animals)                    // version 1
try journal.delete(id: 3)                                  // version 2: Rex leaves
let before = try RequestSet(journal, asOf: 1)              // the store as version 1 left it
print(before.filter("name", value: "Rex").count)           // 1, and 0 in RequestSet(journal)
print(try journal.history().map(\.version))                // [1, 2], each with its time
try journal.compact()                                      // keeps the newest 100 versions readable
print(try RequestSet(journal, asOf: 1).count)              // 6: version 1 is still readable
journal.close()
try FileManager.default.removeItem(at: journalFiles)
// END README

precondition(before.filter("name", value: "Rex").count == 1 && before.count == 6)
precondition(!FileManager.default.fileExists(atPath: journalFiles.path))

// BEGIN README: migrations
struct PetV1: Record { var id: Int; var name: String; var weight: Int; var city: String }
struct PetV2: Record {
  struct Address: Codable, Hashable, Sendable { var city: String }
  var id: Int; var name: String; var weightKg: Double; var legs: Int; var address: Address
}
let petFiles = FileManager.default.temporaryDirectory.appendingPathComponent("pets-\(UUID())")
try FileManager.default.createDirectory(at: petFiles, withIntermediateDirectories: true)
let petLog = petFiles.appendingPathComponent("pets.rslog").path
let v1 = try LogStore<PetV1>(path: petLog)
try v1.insert(PetV1(id: 1, name: "Rex", weight: 30, city: "Oslo"))
v1.close()

var migrator = Migrator()
migrator.register(
  "2: kg, legs, address",
  .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble),   // Int to Double
  .add("legs", default: .int(4)), .move("city", to: "address.city"))
let v2 = try LogStore<PetV2>(path: petLog, options: .init(migrations: migrator))   // runs it, once
print(v2.appliedMigrations, try v2.fetch(id: 1)!.address.city)   // ["2: kg, legs, address"] Oslo
v2.close()
try FileManager.default.removeItem(at: petFiles)
// END README

// BEGIN README: SQL engines
let zooFile = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID()).sqlite").path
let zoo = try SQLiteStore<Animal>(path: zooFile)         // creates the file and the table "Animal"
try zoo.insert(contentsOf: try animals.fetch())
try zoo.createIndex("species")                           // a SQLite index the query plan uses
let sqlCows = RequestSet(zoo).filter("species", value: "Cow").filter("age", .greaterThan, 2)
print(sqlCows.count)                                     // 1: SELECT count(*) … runs in SQLite
print(sqlCows.explain())                                 // the SQL, its bindings, EXPLAIN QUERY PLAN
do {
  // requiringPushdown() refuses to run any part in process: the closure cannot go to SQLite.
  _ = try sqlCows.requiringPushdown().filter { $0.name.count > 3 }.fetch()
} catch let error as RequestSetError where error.code == .notPushedDown {
  print(error.message)                                   // names the closure and the reason
}
print(try sqlCows.fetch().map(\.name))                   // ["Daisy"]
zoo.close()
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: zooFile + suffix) }
// END README

precondition(sqlCows.count == 1 && !FileManager.default.fileExists(atPath: zooFile))

// BEGIN README: live request sets
let watcher = Task {
  for try await snapshot in animals.filter("species", value: "Cow").sortBy(\.age).limit(10).changes {
    print(snapshot.records.map(\.name))  // at once, then after every commit that changes the result
    print(snapshot.inserted, snapshot.deleted, snapshot.updated)
    if snapshot.records.contains(where: { $0.name == "Moo" }) { break }    // stop following
  }
}
try store.insert(Animal(id: 20, name: "Moo", species: "Cow", age: 0, weight: 40, tags: []))
try await watcher.value                  // the loop ends at its break (or when the task is cancelled)
for try await animal in animals.stream(batchSize: 500) { print(animal.name) }   // a batch at a time
// END README
precondition(animals.filter("name", value: "Moo").count == 1)
for try await animal in animals.filter("species", value: "Cat").stream(batchSize: 500) { print("stream:", animal.name) }

// BEGIN README: apps and servers
let asyncCows = try await animals.filter("species", value: "Cow").async.fetch()   // on the store's threads
let asyncCount = try await animals.async.fetchCount()
try await store.async.insert(Animal(id: 21, name: "Calf", species: "Cow", age: 0, weight: 30, tags: []))

let liveCows = LiveResults(animals.filter("species", value: "Cow").sortBy(\.name), updatingOn: nil)
while liveCows.count != asyncCows.count + 1 { try await Task.sleep(for: .milliseconds(10)) }
print(liveCows.records.map(\.name), asyncCount)   // an Observable object: SwiftUI redraws what reads it
liveCows.query = animals.filter(\.age < 3)      // retarget: the new query runs, observers see its state

for try await state in animals.sortBy("species", "name").sectioned(by: "species") {
  print(state.sections.map(\.key), state.insertedSections)   // then section and row changes per commit
  break
}
// END README
precondition(asyncCows.allSatisfy { $0.species == "Cow" } && asyncCount >= 6)

// BEGIN README: relationships
struct Person: Record { var id: Int; var name: String; var city: String }
struct Pet: Record { var id: Int; var name: String; var ownerID: Int? }
struct Visit: Record { var id: Int; var petID: Int; var cost: Double }

extension Pet: RelatedRecord {
  static let owner = ToOne<Pet, Person>("owner", \.ownerID)               // optional: .nullify on delete
  static let visits = ToMany<Pet, Visit>("visits", inverse: \.petID)
  static let relations: [any Relation<Pet>] = [owner, visits]
}
extension Visit: RelatedRecord {
  static let pet = ToOne<Visit, Pet>("pet", \.petID, onDelete: .cascade)
  static let relations: [any Relation<Visit>] = [pet]
}

let clinic = try RecordGraph(MemoryStore<Person>(), MemoryStore<Pet>(), MemoryStore<Visit>())   // one store per type
try clinic.insert(contentsOf: [Person(id: 1, name: "Ann", city: "Oslo"), Person(id: 2, name: "Bo", city: "Rome")])
try clinic.insert(contentsOf: [Pet(id: 1, name: "Rex", ownerID: 1), Pet(id: 2, name: "Tom", ownerID: 2)])
try clinic.insert(contentsOf: [Visit(id: 1, petID: 1, cost: 10), Visit(id: 2, petID: 1, cost: 30), Visit(id: 3, petID: 2, cost: 5)])
let clinicPets = clinic.records(Pet.self)
print(clinicPets.filter(Pet.owner.city == "Oslo").map(\.name))                    // ["Rex"]
print(clinicPets.filter("ANY visits.cost > 20 OR owner.city == 'Rome'").map(\.name))   // ["Rex", "Tom"]
print(clinicPets.sortBy(Pet.visits.sum(\.cost), order: .descending).map(\.name))  // ["Rex", "Tom"]
for row in try clinicPets.fetch(including: Pet.owner, Pet.visits) {               // 3 queries, however many pets
  print(row.name, row[Pet.owner]?.city ?? "-", row[Pet.visits].map(\.cost))       // Rex Oslo [10.0, 30.0], …
}
try clinic.delete(Pet.self, id: 1)                                                // .cascade: Rex's visits go too
print(try clinic.records(Visit.self).fetch().map(\.id))                           // [3]
// END README
precondition(clinicPets.filter(Pet.owner.city == "Rome").map(\.name) == ["Tom"])   // Rex is gone
let visitsLeft = try clinic.records(Visit.self).fetch().map(\.id)
precondition(visitsLeft == [3] && clinicPets.refreshed().map(\.name) == ["Tom"])
