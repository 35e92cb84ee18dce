import Foundation   // FileManager and UUID, for the examples that write files
import RequestSet

struct Owner: Codable, Sendable, Hashable { var name: String; var city: String }

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
  Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick",
         tags: ["small"], owner: Owner(name: "Walt", city: "Burbank")),
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"],
         owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [],
         owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al", tags: []),
  Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old"],
         owner: Owner(name: "Bo", city: "Bergen")),
])

let animals = RequestSet(store)                  // nothing runs yet
let cows = animals.filter("species", value: "Cow").sortBy(\.age)
print(cows.map(\.name))                          // → ["Bella", "Daisy"]

let olderOrRex = animals.filter(\.age > 4).filter("name", value: "Rex", mode: .or)   // 4 below
print(olderOrRex.count)                          // → 4

for animal in animals.exclude(\.nickname == nil).limit(1) {
  print(animal.name)                             // → Micky
}
print(try animals.filter("name", value: "Rex").get().age)   // → 5

let heavyCows = animals.filter("species", value: "Cow").filter(\.weight > 500)
let bySpecies = animals.sortBy("species", "desc:age").offset(1).limit(3)
let adults = animals.filter(#Predicate<Animal> { $0.age >= 5 })
print(heavyCows.map(\.name), bySpecies.map(\.name), adults.count)
// → ["Daisy"] ["Daisy", "Bella", "Rex"] 4
let young = animals.filter("age > %@ AND name BEGINSWITH[c] %@", 2, "mi")
let farmNorth = animals.filter("ANY tags == 'farm' AND owner.city IN {'Oslo', 'Bergen'}")
let userFilter = try RequestFilter<Animal>(format: "species == 'Dog' AND age >= 5")   // may throw
let page = try animals.filter(userFilter).limit(20).validated()   // reading it cannot trap
let typed = animals.filter([\Animal.age: 1...3, \Animal.weight: lt(100)])
print(young.map(\.name), farmNorth.map(\.name), page.map(\.name), typed.map(\.name))
// → ["Micky"] ["Daisy"] ["Rex", "Zed"] ["Micky"]
try store.createIndex(\.species)             // the planner reads it; explain() shows the plan
print(animals.filter("species", value: "Cow").sortBy("age").limit(5).explain())
// → RequestSet<Animal> over MemoryStore<Animal>
// → stage 1: index lookup on species (~2 of 6 records)
// →   index answers: species == "Cow"
// →   sort: age ASC (top-k heap, k = 5)
// →   window: limit 5

let meanAge = try animals.average(\.age)
let perSpecies = try animals.groupBy("species").aggregate(.count, .max("age")).fetch()
let cowRows = try animals.filter("species", value: "Cow").values("name", "owner.city")
print(meanAge!, perSpecies.count)                               // → 5.666666666666667 4
print(cowRows.map { "\($0["name"]!) in \($0["owner.city"]!)" })
// → ["\"Daisy\" in \"Oslo\"", "\"Bella\" in \"Oslo\""]
let byAge = animals.sortBy(\.age, order: .descending)
let firstPage = try byAge.page(size: 4).fetch()
let secondPage = try byAge.page(after: firstPage.last!, size: 4).fetch()
let cowSet = animals.filter(\.species == "Cow")
print(firstPage.map(\.name), secondPage.map(\.name))
// → ["alice", "Daisy", "Rex", "Zed"] ["Micky", "Bella"]
print(cowSet.subtracting(animals.sortBy(\.age).limit(3)).map(\.name))   // → ["Daisy"]

struct Post: Record { var id: Int; var title: String; var body: String }
let posts = MemoryStore<Post>()
try posts.insert(contentsOf: [
  Post(id: 1, title: "Café culture", body: "The quick brown fox visits a café in Zürich."),
  Post(id: 2, title: "東京の朝", body: "東京タワー at dawn, and a quick coffee."),
  Post(id: 3, title: "Ёлка", body: "A brown bear under the tree."),
])
try posts.createTextIndex("title", "body")
let found = RequestSet(posts)
print(found.filter(matching: "cafe \"brown fox\"").map(\.id))        // → [1]
print(found.filter(matching: "東京 qui*").map(\.id))                  // → [2]
print(found.filter(matching: "brown").sortBy(.relevance).map(\.id))   // → [3, 1]

let files = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID())")
try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
let log = try LogStore<Animal>(path: files.appendingPathComponent("animals.rslog").path)
try log.insert(contentsOf: animals)            // version 1: all of it survives a crash, or none
try log.delete(id: 3)                          // version 2: Rex leaves
print(RequestSet(log).filter("species", value: "Cow").map(\.name))   // → ["Daisy", "Bella"]
print(try RequestSet(log, asOf: 1).count, RequestSet(log).count)    // → 6 5
log.close()                                    // releases the lock; later reads throw .closed
try FileManager.default.removeItem(at: files)  // the log, its lock and checkpoint files

import RequestSetSQLite

let zooFile = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID()).db").path
let zoo = try SQLiteStore<Animal>(path: zooFile)         // creates the file and the table "Animal"
try zoo.insert(contentsOf: try animals.fetch())
let sqlCows = RequestSet(zoo).filter("species", value: "Cow").filter("age", .greaterThan, 2)
print(sqlCows.count, try sqlCows.fetch().map(\.name))   // → 1 ["Daisy"]
zoo.close()
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: zooFile + suffix) }

struct Person: Record { var id: Int; var name: String; var city: String }
struct Pet: Record { var id: Int; var name: String; var ownerID: Int? }
extension Pet: RelatedRecord {
  static let owner = ToOne<Pet, Person>("owner", \.ownerID)     // optional: .nullify on delete
  static let relations: [any Relation<Pet>] = [owner]
}
let clinic = try RecordGraph(MemoryStore<Person>(), MemoryStore<Pet>())   // one store per type
try clinic.insert(contentsOf: [Person(id: 1, name: "Ann", city: "Oslo"),
                               Person(id: 2, name: "Bo", city: "Rome")])
try clinic.insert(contentsOf: [Pet(id: 1, name: "Rex", ownerID: 1),
                               Pet(id: 2, name: "Tom", ownerID: 2)])
let clinicPets = clinic.records(Pet.self)
print(clinicPets.filter(Pet.owner.city == "Oslo").map(\.name))     // → ["Rex"]
try clinic.delete(Person.self, id: 1)                               // .nullify: Rex keeps no owner
print(try clinicPets.filter("owner == nil").fetch().map(\.name))   // → ["Rex"]

let watcher = Task {
  for try await snapshot in animals.filter("species", value: "Cow").sortBy(\.age).changes {
    if snapshot.records.contains(where: { $0.name == "Moo" }) {
      print(snapshot.records.map(\.name))          // → ["Moo", "Bella", "Daisy"]
      break
    }
  }
}
try await store.async.insert(Animal(id: 20, name: "Moo", species: "Cow", age: 0, weight: 40,
                                    tags: []))
try await watcher.value
print(try await RequestSet(store).async.fetchCount())   // → 7

let elders = try animals.filter(\.age > 10).update { $0.species = "Elder" }
try store.transaction { tx in                    // all or nothing
  tx.insert(Animal(id: 10, name: "Calf", species: "Cow", age: 0, weight: 40, tags: []))
  tx.delete(id: 3)
}
print(elders, try store.fetch(id: 3) == nil)   // → 1 true
try store.createIndex(\.name, unique: true)
let feed = [Animal(id: 40, name: "Zed", species: "Dog", age: 6, weight: 26, tags: ["old"]),
            Animal(id: 41, name: "Kit", species: "Cat", age: 1, weight: 3, tags: [])]
print(try store.upsert(feed, on: \.name), try store.fetch(id: 6)!.age)
// → 1 inserted, 1 updated 6
