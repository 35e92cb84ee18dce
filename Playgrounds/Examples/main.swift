// The README's format-string, LogStore and live-set examples, runnable:
// `swift run Examples`. DocumentationTests checks that every Swift block of the README
// stands verbatim in a playground.

import Foundation
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

let zoo = [
  Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick", tags: ["small"],
         owner: Owner(name: "Walt", city: "Burbank")),
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al", tags: []),
  Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old"], owner: Owner(name: "Bo", city: "Bergen")),
]
let store = try MemoryStore(zoo)
let animals = RequestSet(store)
let userText = "species == 'Dog' AND age >= 5"
let requestLimit = 20

// BEGIN README: format strings
let young = animals.filter("age > %@ AND name BEGINSWITH[c] %@", 2, "mi")     // [Micky]
let alices = animals.filter("%K == %@", "name", "Alice", mode: .or)
let farmNorth = animals.filter("ANY tags == 'farm' AND owner.city IN {'Oslo', 'Bergen'}")
let userFilter = try RequestFilter<Animal>(format: userText, arguments: [])   // throws on bad input
let page = try animals.filter(userFilter).limit(requestLimit).validated()     // reading it cannot trap
let triplets = animals.filter(where: ["name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"]])
let typed = animals.filter([\Animal.age: 1...3, \Animal.weight: lt(100.0)])
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

// BEGIN README: indexes
try store.createIndex(\.species)                  // also createIndex("species")
try store.createIndex(\.name, unique: true)       // a second "Rex" now throws .uniqueViolation
let cows = animals.filter("species", value: "Cow").sortBy("age").limit(5)
print(cows.explain())
// stage 1: index lookup on species (~2 of 6 records)
//   index answers: species == "Cow"
//   sort: age ASC (top-k heap, k = 5)
//   window: limit 5
let one = animals.filter(\.id == 3).first                      // by id, O(1), no index needed
let oldest = animals.sortBy(\.age, order: .descending).limit(3)  // walks an age index when there is one
// END README
precondition(cows.map(\.name) == ["Bella", "Daisy"] && one?.name == "Rex" && oldest.map(\.name) == ["alice", "Daisy", "Rex"])
precondition(cows.explain().contains("index lookup on species") && store.indexes.count == 2)
do {
  try store.insert(Animal(id: 9, name: "Rex", species: "Dog", age: 1, weight: 20, tags: []))
  preconditionFailure("a unique index lets a duplicate through")
} catch let error as RequestSetError where error.code == .uniqueViolation {
  print("unique:", error.message)
}

// The log lives in a scratch directory.
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("requestset-examples-\(getpid())")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
_ = FileManager.default.changeCurrentDirectoryPath(scratch.path)
defer { try? FileManager.default.removeItem(at: scratch) }
let herd = zoo

// BEGIN README: LogStore
let log = try LogStore<Animal>(path: "animals.rslog")     // creates the file when missing
try log.insert(contentsOf: herd)                           // one batch: all of it survives a crash, or none
let logged = RequestSet(log).filter("species", value: "Cow")   // every query works as on MemoryStore
try log.compact()                                          // rewrites live records, swaps the file atomically
// END README

precondition(logged.map(\.name) == ["Daisy", "Bella"] && log.recoveryReport.isClean)
print("LogStore:", logged.map(\.name), "file:", log.fileSize, "bytes")

@Sendable func render(_ records: [Animal]) { print("live:", records.map(\.name)) }
@Sendable func export(_ animal: Animal) throws { print("stream:", animal.name) }
let live = Task {
// BEGIN README: live request sets
for try await snapshot in animals.filter("species", value: "Cow").sortBy(\.age).limit(10).changes {
  render(snapshot.records)      // at once, then after every commit that changes the result
  print(snapshot.inserted, snapshot.deleted, snapshot.updated)
}
for try await animal in animals.stream(batchSize: 500) { try export(animal) }   // a batch at a time
// END README
}
try await Task.sleep(for: .milliseconds(100))
try store.insert(Animal(id: 7, name: "Calf", species: "Cow", age: 0, weight: 40, tags: []))
try await Task.sleep(for: .milliseconds(100))
live.cancel()
try await live.value
for try await animal in animals.filter("species", value: "Cat").stream(batchSize: 500) { try export(animal) }
