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
print("articles: every example ran")
