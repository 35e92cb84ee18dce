import Foundation   // FileManager and UUID, for the examples that write files
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

let files = FileManager.default.temporaryDirectory.appendingPathComponent("zoo-\(UUID())")
try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
let log = try LogStore<Animal>(path: files.appendingPathComponent("animals.rslog").path)   // creates the file
try log.insert(contentsOf: animals)                        // one batch: all of it survives a crash, or none
let logged = RequestSet(log).filter("species", value: "Cow")   // every query works as on MemoryStore
print(logged.map(\.name))                                  // → ["Daisy", "Bella"]
try log.compact()                                          // rewrites live records, swaps the file atomically
log.close()                                                // releases the lock; later reads throw .closed
try FileManager.default.removeItem(at: files)              // the log, its lock and checkpoint files

let journalFiles = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())")
try FileManager.default.createDirectory(at: journalFiles, withIntermediateDirectories: true)
let journal = try LogStore<Animal>(
  path: journalFiles.appendingPathComponent("journal.rslog").path, options: .init(keepHistory: .versions(100)))
try journal.insert(contentsOf: animals)                    // version 1
try journal.delete(id: 3)                                  // version 2: Rex leaves
let before = try RequestSet(journal, asOf: 1)              // the store as version 1 left it
print(before.filter("name", value: "Rex").count)           // → 1
print(RequestSet(journal).filter("name", value: "Rex").count)   // → 0
print(try journal.history().map(\.version))                // → [1, 2]
try journal.compact()                                      // keeps the newest 100: version 1 reads
print(try RequestSet(journal, asOf: 1).count)              // → 6
journal.close()
try FileManager.default.removeItem(at: journalFiles)
