import Foundation   // FileManager and UUID, for the examples that write files
import RequestSet
import RequestSetSQLite

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

let zooFolder = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID())")
try FileManager.default.createDirectory(at: zooFolder, withIntermediateDirectories: true)
let herd = try SQLiteStore<Animal>(path: zooFolder.appendingPathComponent("zoo.sqlite").path)
try herd.insert(contentsOf: try animals.fetch())
try herd.createIndex("species")
let eldestCows = RequestSet(herd).filter("species", value: "Cow").sortBy("-age").limit(10)
print(eldestCows.explain())   // the SELECT, its bindings, SQLite's EXPLAIN QUERY PLAN
// → RequestSet<Animal> over SQLiteStore<Animal>
// → stage 1: pushed to SQLiteStore<Animal>: WHERE species == "Cow" ORDER BY age DESC LIMIT 10
print(eldestCows.map(\.name))   // → ["Daisy", "Bella"]
herd.close()
try FileManager.default.removeItem(at: zooFolder)   // the database and its -wal and -shm files

let zooFile = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID()).sqlite").path
let zoo = try SQLiteStore<Animal>(path: zooFile)         // creates the file and the table "Animal"
try zoo.insert(contentsOf: try animals.fetch())
try zoo.createIndex("species")                           // a SQLite index the query plan uses
print(try zoo.indexes().map(\.keys))                    // → [["species"]]
// SELECT count(*) … runs in SQLite for the count below
let sqlCows = RequestSet(zoo).filter("species", value: "Cow").filter("age", .greaterThan, 2)
print(sqlCows.count)                                     // → 1
print(sqlCows.explain())                                 // the SQL, its bindings, EXPLAIN QUERY PLAN
do {
  // requiringPushdown() refuses to run any part in process: the closure cannot go to SQLite.
  _ = try sqlCows.requiringPushdown().filter { $0.name.count > 3 }.fetch()
} catch let error as RequestSetError where error.code == .notPushedDown {
  print(error.message)                                   // names the closure and the reason
}
print(try sqlCows.fetch().map(\.name))                   // → ["Daisy"]
zoo.close()
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: zooFile + suffix) }

let rawFile = FileManager.default.temporaryDirectory.appendingPathComponent("raw-\(UUID()).sqlite").path
let shelter = try SQLiteStore<Animal>(path: rawFile, table: "animals")
try shelter.insert(contentsOf: try animals.fetch())
let heavy = shelter.records(
  sql: """
    SELECT body FROM animals WHERE json_extract(body, '$.weight') > ?
    ORDER BY json_extract(body, '$.weight') DESC
    """,
  arguments: [20])
print(heavy.map(\.name))                              // → ["Daisy", "Bella", "Rex", "Zed"]
print(heavy.filter(\.species == "Dog").map(\.name))   // → ["Rex", "Zed"]
let tagCounts = shelter.rows(sql: """
  SELECT tag.value AS tag, count(*) AS n FROM animals, json_each(animals.body, '$.tags') AS tag
  GROUP BY tag.value ORDER BY n DESC, tag.value
  """)
for row in tagCounts { print(row["tag"]!, row["n"]!) }
// → "farm" 2
// → "old" 1
// → "small" 1
do {
  _ = try shelter.records(sql: "DELETE FROM animals").fetch()
} catch let error as RequestSetError {
  print(error.code)                                    // → invalidSQL
}
shelter.close()
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: rawFile + suffix) }
