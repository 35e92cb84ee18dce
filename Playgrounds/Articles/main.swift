// The DocC articles' Swift examples, verbatim and in order, pasted one after another as a
// reader would after GettingStarted's record type (DocumentationTests keeps them so, checks
// that no two declare the same name, and runs this twice in one folder). Checks follow
// each example.
// BEGIN ARTICLE: GettingStarted, the record type
import Foundation   // for #Predicate
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
// END ARTICLE

// BEGIN ARTICLE: GettingStarted, a store and filters
let store = MemoryStore<Animal>()
try store.insert(contentsOf: [                          // all or nothing
  Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick", tags: ["small"],
         owner: Owner(name: "Walt", city: "Burbank")),
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [], owner: Owner(name: "Ann", city: "Oslo")),
])
// save inserts a record, or replaces the one with the same id:
try store.save(Animal(id: 3, name: "Rex", species: "Dog", age: 6, weight: 31, nickname: "Rexy", tags: ["farm"]))
try store.delete(id: 1)

let all = RequestSet(store)
let inOslo = all.filter("owner.city", value: "Oslo")            // a string key and a value
let named = all.filter(\.age > 3 && \.nickname != nil)          // typed key paths
let older = all.filter(#Predicate<Animal> { $0.age > 3 })        // a Foundation predicate
let bees = all.filter { $0.name.hasPrefix("B") }                 // a closure
print(inOslo.map(\.name), named.map(\.name), older.map(\.name), bees.map(\.name))
// ["Daisy", "Bella"] ["Rex"] ["Daisy", "Rex"] ["Bella"]
// END ARTICLE
precondition(inOslo.map(\.name) == ["Daisy", "Bella"] && named.map(\.name) == ["Rex"])
precondition(older.map(\.name) == ["Daisy", "Rex"] && bees.map(\.name) == ["Bella"])

// BEGIN ARTICLE: GettingStarted, laziness
let dogs = all.filter("species", value: "Dog")
print(dogs.count)                  // evaluates: 1
try store.insert(Animal(id: 5, name: "Fido", species: "Dog", age: 1, weight: 12, tags: []))
print(dogs.count)                  // still 1
print(dogs.refreshed().count)      // 2
// END ARTICLE
precondition(dogs.count == 1 && dogs.refreshed().count == 2)

// BEGIN ARTICLE: GettingStarted, errors
let userText = "species == 'Dog' AND age > 2"     // say, typed into a search field
let requestOffset = 0                              // say, from a request's query string
let requestLimit = 20
let filter = try RequestFilter<Animal>(format: userText, arguments: [])
let page = try all.filter(filter).offset(requestOffset).limit(requestLimit).validated()
for animal in page { print(animal.name) }          // Rex
// END ARTICLE
precondition(page.map(\.name) == ["Rex"])

// BEGIN ARTICLE: ChoosingAStore, reading the past
let journalFolder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())")
try FileManager.default.createDirectory(at: journalFolder, withIntermediateDirectories: true)
let journal = try LogStore<Animal>(path: journalFolder.appendingPathComponent("journal.rslog").path)
try journal.insert(Animal(id: 1, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: []))   // version 1
try journal.delete(id: 1)                                                                        // version 2
let before = try RequestSet(journal, asOf: 1)         // or asOf: someDate
print(before.filter("species", value: "Cow").count)   // 1 (and 0 in RequestSet(journal))
journal.close()
try FileManager.default.removeItem(at: journalFolder)   // the log and its lock file
// END ARTICLE
precondition(before.count == 1 && !FileManager.default.fileExists(atPath: journalFolder.path))

// BEGIN ARTICLE: RequestSet, the overview
let herd = MemoryStore<Animal>()                  // Animal: see <doc:GettingStarted>
try herd.insert(contentsOf: [
  Animal(id: 1, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: []),
  Animal(id: 2, name: "Bella", species: "Cow", age: 2, weight: 450, tags: []),
  Animal(id: 3, name: "Clara", species: "Cow", age: 9, weight: 550, tags: []),
])

let animals = RequestSet(herd)
let oldCows = animals
  .filter("species", value: "Cow")
  .filter(\.age > 5)
  .sortBy(\.age, order: .descending)
  .limit(3)

for cow in oldCows { print(cow.name) }         // Clara, then Daisy
// END ARTICLE
precondition(oldCows.map(\.name) == ["Clara", "Daisy"])

// BEGIN ARTICLE: SQLEngines, a SQLite store
import Foundation
import RequestSet
import RequestSetSQLite

let zooFolder = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID())")
try FileManager.default.createDirectory(at: zooFolder, withIntermediateDirectories: true)
let zoo = try SQLiteStore<Animal>(path: zooFolder.appendingPathComponent("zoo.sqlite").path)
try zoo.createIndex("species")
let cows = RequestSet(zoo).filter("species", value: "Cow").sortBy("-age").limit(10)
print(cows.explain())   // the SELECT, its bindings, SQLite's EXPLAIN QUERY PLAN
zoo.close()
try FileManager.default.removeItem(at: zooFolder)   // the database and its -wal and -shm files
// END ARTICLE
precondition(!FileManager.default.fileExists(atPath: zooFolder.path))

// BEGIN ARTICLE: WritingABackend, a store
import RequestSet
import Synchronization

/// Animals (see <doc:GettingStarted>) kept in an array behind a lock.
final class ArchiveStore: RecordStore {
  typealias Element = Animal
  private let state = Mutex<(records: [Animal], version: UInt64)>(([], 0))

  func insert(_ record: Animal) throws { try apply([.insert(record)], ifVersion: nil) }
  func insert(contentsOf records: some Sequence<Animal>) throws { try apply(records.map { .insert($0) }, ifVersion: nil) }
  func save(_ record: Animal) throws { try apply([.save(record)], ifVersion: nil) }
  func delete(id: Int) throws -> Bool {
    guard try fetch(id: id) != nil else { return false }
    try apply([.delete(id: id)], ifVersion: nil)
    return true
  }

  /// All or nothing; `.conflict` when `expectedVersion` is stale.
  func apply(_ changes: [RecordChange<Animal>], ifVersion expectedVersion: UInt64?) throws {
    try state.withLock { state in
      if let expectedVersion, expectedVersion != state.version {
        throw RequestSetError(.conflict, "The archive changed since version \(expectedVersion). Read it again.")
      }
      var records = state.records
      for change in changes {
        let index = records.firstIndex { $0.id == change.id }
        switch change {
        case .insert(let record):
          if index != nil { throw RequestSetError(.duplicateID, "Animal \(record.id) is archived already.") }
          records.append(record)
        case .save(let record):
          if let index { records[index] = record } else { records.append(record) }
        case .delete:
          if let index { records.remove(at: index) }
        }
      }
      state = (records, state.version + 1)
    }
  }

  func snapshot() throws -> StoreSnapshot<Animal> {
    state.withLock { StoreSnapshot(records: $0.records, version: $0.version) }
  }
}

let archived = RequestSet(ArchiveStore()).filter(\.age > 3)
// END ARTICLE
precondition(archived.isEmpty)

// BEGIN ARTICLE: WritingABackend, pushdown
extension ArchiveStore: QueryPushdownStore {
  func queryReader() throws -> any StoreQueryReader<Animal> {
    state.withLock { ArchiveReader(records: $0.records, version: $0.version) }
  }
}

/// One state of the archive, read for one evaluation.
final class ArchiveReader: StoreQueryReader {
  let rows: [(record: Animal, fields: FieldValue)]
  let version: UInt64

  init(records: [Animal], version: UInt64) {
    rows = records.map { ($0, (try? FieldValue(encoding: $0)) ?? .null) }
    self.version = version
  }

  func support(for condition: StoreCondition) -> PushdownSupport {
    guard case .compare = condition.operator, condition.quantifier == nil, !condition.countsElements,
      !condition.caseInsensitive, !condition.diacriticInsensitive, condition.collation == .binary
    else { return .none(reason: "the archive runs plain comparisons only") }
    return .exact
  }

  func support(for sort: StoreSortKey) -> PushdownSupport {
    sort.collation == .binary ? .exact : .none(reason: "the archive sorts binary text only")
  }

  func count(_ query: StoreQuery) throws -> Int { selected(query).count }

  func records(_ query: StoreQuery, _ body: (Animal) throws -> Bool) throws {
    for i in selected(query) where try !body(rows[i].record) { return }
  }

  func explain(_ query: StoreQuery) throws -> StoreExplanation {
    StoreExplanation(statement: "scan \(query)", plan: ["scan \(rows.count) records"])
  }

  /// The keys and kinds of this state's records: the engine checks every query against
  /// them, so a misspelt key throws `.unknownKey` as it does in memory. (A store keeps them
  /// with its records, noting each record it writes, rather than noting all of them here.)
  func fieldKinds() throws -> StoreFieldKinds? {
    var kinds = StoreFieldKinds()
    for row in rows { kinds.note(row.fields, as: Animal.self) }
    return kinds
  }

  /// The positions `query` selects: filter, sort (ties in store order), window.
  private func selected(_ query: StoreQuery) -> [Int] {
    func value(_ i: Int, _ key: String) -> FieldValue { rows[i].fields[path: key] ?? .null }
    func test(_ filter: StoreFilter, _ i: Int) -> Bool {
      switch filter {
      case .constant(let b): return b
      case .condition(let c): return c.matches(value(i, c.key))
      case .and(let terms): return terms.allSatisfy { test($0, i) }
      case .or(let terms): return terms.contains { test($0, i) }
      case .not(let inner): return !test(inner, i)
      }
    }
    var picked = rows.indices.filter { i in query.filter.map { test($0, i) } ?? true }
    picked.sort { a, b in
      for key in query.sort {
        let c = key.compare(value(a, key.key), value(b, key.key))
        if c != 0 { return c < 0 }
      }
      return a < b
    }
    let start = min(query.offset, picked.count)
    let end = query.limit.map { min(picked.count, start + min($0, picked.count)) } ?? picked.count
    return Array(picked[start..<end])
  }
}

let adults = RequestSet(ArchiveStore()).filter("age", .greaterThan, 3).sortBy("name").limit(10)
print(adults.explain())
// RequestSet<Animal> over ArchiveStore
// stage 1: pushed to ArchiveStore: WHERE age > 3 ORDER BY name ASC LIMIT 10
//   statement: scan WHERE age > 3 ORDER BY name ASC LIMIT 10
//   plan: scan 0 records
// END ARTICLE
precondition(adults.explain().contains("pushed to ArchiveStore"))
// BEGIN ARTICLE: Migrations, a log through a migration
struct PetV1: Record { var id: Int; var name: String; var weight: Int; var city: String }
struct PetV2: Record {
  struct Address: Codable, Hashable, Sendable { var city: String }
  var id: Int; var name: String; var weightKg: Double; var legs: Int; var address: Address
}

var migrator = Migrator()
migrator.register(
  "2: kg, legs, address",
  .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble),
  .add("legs", default: .int(4)), .move("city", to: "address.city"))

let petFolder = FileManager.default.temporaryDirectory.appendingPathComponent("pets-\(UUID())")
try FileManager.default.createDirectory(at: petFolder, withIntermediateDirectories: true)
let petPath = petFolder.appendingPathComponent("pets.rslog").path
let oldPets = try LogStore<PetV1>(path: petPath)            // version 1 of the app wrote this
try oldPets.insert(PetV1(id: 1, name: "Rex", weight: 30, city: "Oslo"))
oldPets.close()

let pets = try LogStore<PetV2>(path: petPath, options: .init(migrations: migrator))
print(pets.appliedMigrations)                               // ["2: kg, legs, address"]
print(try pets.fetch(id: 1)!.weightKg)                      // 30.0
// END ARTICLE
precondition(pets.appliedMigrations == ["2: kg, legs, address"])
let migratedRex = try pets.fetch(id: 1)!
precondition(migratedRex.address.city == "Oslo")
pets.close()
try FileManager.default.removeItem(at: petFolder)
// BEGIN ARTICLE: Relationships, the record types and their relations
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
// END ARTICLE

// BEGIN ARTICLE: Relationships, a graph
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
// END ARTICLE
precondition(allPets.count == 3 && visits.count == 3)

// BEGIN ARTICLE: Relationships, validation
do {
  _ = try RecordGraph(people, patients)   // no store of Visit or Vet
} catch let error as RequestSetError where error.code == .invalidRelation {
  print(error.message)
  // The relation Pet.vets points at Vet, but the graph holds no store of Vet. Pass a store
  // of Vet to RecordGraph, or remove the relation.
}
// END ARTICLE
do {
  _ = try RecordGraph(people, patients)
  preconditionFailure("a graph without Visit's and Vet's stores was accepted")
} catch let error as RequestSetError {
  precondition(error.code == .invalidRelation && error.message.hasPrefix("The relation Pet.vets points at Vet"))
}
do {
  _ = try RequestSet(patients).filter("owner.city", value: "Oslo").fetch()
  preconditionFailure("a set not made by a graph walked a relation")
} catch let error as RequestSetError {
  precondition(error.code == .unknownKey)
}

// BEGIN ARTICLE: Relationships, to-one keys
let oslo = allPets.filter("owner.city", value: "Oslo")              // a dotted key
let typedOslo = allPets.filter(Pet.owner.city == "Oslo")              // a typed key, checked by the compiler
let formatOslo = allPets.filter("owner.city == %@", "Oslo")           // a format string
let tripletOslo = allPets.filter(where: ["owner.city", "IN", ["Oslo", "Bergen"]])   // a triplet
let ownerless = allPets.filter("owner == nil")                         // no owner: a nil or dangling key
print(oslo.map(\.name), typedOslo.map(\.name), formatOslo.map(\.name), tripletOslo.map(\.name), ownerless.map(\.name))
// ["Rex"] ["Rex"] ["Rex"] ["Rex"] ["Kit"]
// END ARTICLE
precondition([oslo, typedOslo, formatOslo, tripletOslo].allSatisfy { $0.map(\.name) == ["Rex"] })
precondition(ownerless.map(\.name) == ["Kit"])

// BEGIN ARTICLE: Relationships, to-many keys
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
print(seenByMax.map(\.name), seenByVera.map(\.name), typedPricey.map(\.name), typedBusy.map(\.name))
print(typedSpent.map(\.name), typedUnseen.map(\.name), typedSeenByVera.map(\.name), overAge.map(\.name))
// END ARTICLE
precondition(pricey.map(\.name) == ["Rex"] && cheap.map(\.name) == ["Tom", "Kit"] && notMax.map(\.name) == ["Kit"])
precondition(unseen.map(\.name) == ["Kit"] && spent.map(\.name) == ["Rex"] && seenByMax.map(\.name) == ["Rex", "Tom"])
precondition(seenByVera.map(\.name) == ["Rex"] && typedPricey.map(\.name) == ["Rex"] && typedBusy.map(\.name) == ["Rex"])
precondition(typedSpent.map(\.name) == ["Rex"] && typedUnseen.map(\.name) == ["Kit"])
precondition(typedSeenByVera.map(\.name) == ["Rex"] && overAge.map(\.name) == ["Rex"])
precondition(Pet.owner.name.key == "owner.name" && Pet.visits.count.key == "visits.@count")
precondition(allPets.sortBy(Pet.owner.name).map(\.name) == allPets.sortBy("owner.name").map(\.name))
precondition(allPets.filter("owner.name", value: "Ann").map(\.name) == ["Rex"])
do {
  _ = try allPets.filter("visits.cost", value: 5).fetch()
  preconditionFailure("a to-many key was read as one value")
} catch let error as RequestSetError {
  precondition(error.code == .invalidRelation && error.message.contains("ANY visits.cost"))
}

// BEGIN ARTICLE: Relationships, missing related records
let noCity = allPets.filter("owner.city", value: nil)       // Kit
let notOslo = allPets.filter(Pet.owner.city != "Oslo")      // Tom, and Kit (no owner)
print(noCity.map(\.name), notOslo.map(\.name))
// END ARTICLE
precondition(noCity.map(\.name) == ["Kit"] && notOslo.map(\.name) == ["Tom", "Kit"])

// BEGIN ARTICLE: Relationships, sorting
let byCity = allPets.sortBy("owner.city")                                   // Kit (nil), Rex (Oslo), Tom (Rome)
let byOwner = allPets.sortBy("owner.name", order: .descending)              // Tom, Rex, Kit
let byVisits = allPets.sortBy(Pet.visits.count, order: .descending)         // Rex, Tom, Kit
let bySpend = allPets.sortBy(Pet.visits.sum(\.cost), order: .descending)    // Rex, Tom, Kit
print(byCity.map(\.name), byOwner.map(\.name), byVisits.map(\.name), bySpend.map(\.name))
// END ARTICLE
precondition(byCity.map(\.name) == ["Kit", "Rex", "Tom"] && byOwner.map(\.name) == ["Tom", "Rex", "Kit"])
precondition(byVisits.map(\.name) == ["Rex", "Tom", "Kit"] && bySpend.map(\.name) == ["Rex", "Tom", "Kit"])

// BEGIN ARTICLE: Relationships, values
let table = try allPets.sortBy("id").values("name", "owner.city", "visits.@count")
print(table.map { "\($0["name"]!) \($0["owner.city"]!) \($0["visits.@count"]!)" })
// ["\"Rex\" \"Oslo\" 2", "\"Tom\" \"Rome\" 1", "\"Kit\" nil 0"]
// END ARTICLE
precondition(table.map { $0["owner.city"]! } == [.string("Oslo"), .string("Rome"), .null])
precondition(table.map { $0["visits.@count"]! } == [.int(2), .int(1), .int(0)])

// BEGIN ARTICLE: Relationships, prefetching
let rows = try allPets.fetch(
  including: Pet.owner, Pet.vets, Pet.visits.sortBy(\.day, order: .descending).limit(1).including(Visit.vet))
for row in rows {
  let latest = row[Pet.visits].first.map { "day \($0.day) with \($0[Visit.vet]?.name ?? "-")" } ?? "-"
  print(row.name, row[Pet.owner]?.city ?? "-", row[Pet.vets].map(\.name), latest)
}
// Rex Oslo ["Vera", "Max"] day 2 with Max
// Tom Rome ["Max"] day 3 with Max
// Kit - [] -
// END ARTICLE
precondition(rows.map(\.name) == ["Rex", "Tom", "Kit"] && rows.map { $0[Pet.owner]?.city } == ["Oslo", "Rome", nil])
precondition(rows[0][Pet.visits].map(\.id) == [2] && rows[0][Pet.vets].map(\.name) == ["Vera", "Max"])
precondition(rows[0].record.name == "Rex" && rows[2][Pet.visits].isEmpty)
let ownersOnly = try allPets.fetch(including: Pet.owner)
precondition(ownersOnly.allSatisfy { $0[Pet.visits].isEmpty })
do {
  _ = try RequestSet(patients).fetch(including: Pet.owner)
  preconditionFailure("a set not made by a graph prefetched")
} catch let error as RequestSetError {
  precondition(error.code == .invalidRelation)
}

// BEGIN ARTICLE: Relationships, writes
do {
  try clinic.insert(Visit(id: 9, petID: 77, vetID: nil, cost: 1, day: 1))
} catch let error as RequestSetError where error.code == .danglingReference {
  print(error.message)   // Visit 9's pet (petID = 77) names no Pet. Insert that Pet first, …
}
try clinic.delete(Vet.self, id: 2)                       // .nullify: visits 2 and 3 keep no vet
print(try clinic.records(Visit.self).filter("vet == nil").fetch().map(\.id))   // [2, 3]
try clinic.delete(Pet.self, id: 1)                       // .cascade: Rex's visits go too
print(try clinic.records(Visit.self).fetch().map(\.id))  // [3]
try clinic.delete(Person.self, id: 2)                    // .nullify: Tom keeps no owner
print(try clinic.records(Pet.self).filter("owner == nil").fetch().map(\.name))   // ["Tom", "Kit"]
// END ARTICLE
let visitsLeft = try clinic.records(Visit.self).fetch().map(\.id)
let petsWithoutOwner = try clinic.records(Pet.self).filter("owner == nil").fetch().map(\.name)
precondition(visitsLeft == [3] && visits.count == 1 && petsWithoutOwner == ["Tom", "Kit"])

// BEGIN ARTICLE: Relationships, the past
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
print(try osloThen.fetch().map(\.name), try osloNow.fetch().map(\.name))   // ["Rex"] []
// END ARTICLE
let osloThenNames = try osloThen.fetch().map(\.name)
precondition(osloThenNames == ["Rex"] && osloNow.isEmpty)
try FileManager.default.removeItem(at: archive)

// BEGIN ARTICLE: Relationships, explain
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
// relation Pet.visits (to-many → Visit): materialized, 1 query on MemoryStore<Visit>; SUBQUERY(visits, $v, $v.cost > 20).@count > 0 computed on each record
// …
print(allPets.filter("ANY vets.name == 'Vera'").explain())
// RequestSet<Pet> over MemoryStore<Pet>
// relation Pet.vets (to-many through visits.vet → Vet): ANY vets.name == "Vera" runs as ANY visits.vet.name == "Vera", over the visits that reach a vet
//   relation Pet.visits (to-many → Visit): semi-join, 1 query on MemoryStore<Visit> for vet.id != nil AND vet.name == "Vera" → id IN {0 ids}
//     relation Visit.vet (to-one → Vet): semi-join, 1 query on MemoryStore<Vet> for vet.id != nil → vetID IN {1 ids}
//     relation Visit.vet (to-one → Vet): semi-join, 1 query on MemoryStore<Vet> for vet.name == "Vera" → vetID IN {1 ids}
// …
print(inOsloSQL.map(\.name))   // ["Rex"]
sqlPets.close()
try FileManager.default.removeItem(at: clinicFolder)
// END ARTICLE
precondition(inOsloSQL.map(\.name) == ["Rex"] && !FileManager.default.fileExists(atPath: clinicFolder.path))
precondition(allPets.filter("ANY vets.name == 'Vera'").explain().contains("\n    relation Visit.vet (to-one → Vet)"))

// BEGIN ARTICLE: MigratingFromTheSeedLibraries, relationships
struct Species: Record { var id: Int; var simpleName: String }
struct Specimen: Record { var id: Int; var name: String; var speciesID: Int }
struct Department: Record { var id: Int; var name: String }
struct Employee: Record { var id: Int; var name: String; var salary: Int; var departmentID: Int? }

extension Specimen: RelatedRecord {
  static let species = ToOne<Specimen, Species>("species", \.speciesID)
  static let relations: [any Relation<Specimen>] = [species]
}
extension Department: RelatedRecord {
  static let employees = ToMany<Department, Employee>("employees", inverse: \.departmentID)
  static let relations: [any Relation<Department>] = [employees]
}
extension Employee: RelatedRecord {
  static let department = ToOne<Employee, Department>("department", \.departmentID, onDelete: .cascade)
  static let relations: [any Relation<Employee>] = [department]
}

let company = try RecordGraph(MemoryStore<Species>(), MemoryStore<Specimen>(), MemoryStore<Department>(), MemoryStore<Employee>())
try company.insert(contentsOf: [Species(id: 1, simpleName: "Cow"), Species(id: 2, simpleName: "Dog")])
try company.insert(contentsOf: [Specimen(id: 1, name: "Daisy", speciesID: 1), Specimen(id: 2, name: "Rex", speciesID: 2)])
try company.insert(contentsOf: [Department(id: 1, name: "Sales"), Department(id: 2, name: "Lab"), Department(id: 3, name: "Attic")])
try company.insert(contentsOf: [
  Employee(id: 1, name: "Ann", salary: 6000, departmentID: 1), Employee(id: 2, name: "Bo", salary: 4000, departmentID: 1),
  Employee(id: 3, name: "Cy", salary: 3000, departmentID: 2), Employee(id: 4, name: "Di", salary: 5500, departmentID: nil),
])
let departments = company.records(Department.self)
let staff = company.records(Employee.self)

let animalTypes = ["Cow", "Sheep"]
let farmAnimals = company.records(Specimen.self).filter(where: ["species.simpleName", "IN", animalTypes])   // Daisy
let wellPaid = departments.filter("ANY employees.salary > 5000")                                 // Sales
let richSubquery = departments.filter("SUBQUERY(employees, $e, $e.salary > 5000).@count > 0")    // Sales
let inSales = staff.filter("department.name", value: "Sales")                                   // Ann, Bo
let placed = try staff.filter("department.id != nil").fetch(including: Employee.department)     // Ann, Bo, Cy
let topTwo = try departments.fetch(including: Department.employees.sortBy(\.salary, order: .descending).limit(2))
let crowded = departments.filter(Department.employees.count > 1).sortBy(Department.employees.count, order: .descending)
let empty = departments.filter(Department.employees.isEmpty)                                   // Attic
print(farmAnimals.map(\.name), wellPaid.map(\.name), richSubquery.map(\.name), inSales.map(\.name))
print(placed.map { "\($0.name) in \($0[Employee.department]?.name ?? "-")" }, topTwo.map { $0[Department.employees].map(\.name) })
print(crowded.map(\.name), empty.map(\.name))   // ["Sales"] ["Attic"]
try company.delete(Department.self, id: 1)      // .cascade: Ann and Bo go too
print(try staff.refreshed().fetch().map(\.name))   // ["Cy", "Di"]
// END ARTICLE
precondition(farmAnimals.map(\.name) == ["Daisy"] && wellPaid.map(\.name) == ["Sales"] && richSubquery.map(\.name) == ["Sales"])
precondition(inSales.map(\.name) == ["Ann", "Bo"] && placed.map(\.name) == ["Ann", "Bo", "Cy"])
precondition(topTwo.map { $0[Department.employees].map(\.name) } == [["Ann", "Bo"], ["Cy"], []])
precondition(crowded.map(\.name) == ["Sales"] && empty.map(\.name) == ["Attic"])
let staffLeft = try staff.refreshed().fetch().map(\.name)
precondition(staffLeft == ["Cy", "Di"])

print("articles: every example ran")
