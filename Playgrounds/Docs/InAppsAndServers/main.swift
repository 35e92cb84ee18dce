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

let watcher = Task {
  for try await snapshot in animals.filter("species", value: "Cow").sortBy(\.age).limit(10).changes {
    print(snapshot.records.map(\.name))  // at once, then after every commit that changes the result
    print(snapshot.inserted, snapshot.deleted, snapshot.updated)
    if snapshot.records.contains(where: { $0.name == "Moo" }) { break }    // stop following
  }
}
try store.insert(Animal(id: 20, name: "Moo", species: "Cow", age: 0, weight: 40, tags: []))
try await watcher.value                  // the loop ends at its break (or when the task is cancelled)
// → ["Moo", "Bella", "Daisy"]
for try await animal in animals.stream(batchSize: 500) { print(animal.name) }   // a batch at a time
try store.delete(id: 20)                 // the store as it was, for the examples below

let asyncCows = try await animals.filter("species", value: "Cow").async.fetch()   // on the store's threads
let asyncCount = try await RequestSet(store).async.fetchCount()   // a new chain: the store now
try await store.async.insert(Animal(id: 21, name: "Calf", species: "Cow", age: 0, weight: 30, tags: []))

// LiveResults is an Observable object: SwiftUI redraws what reads it.
let liveCows = LiveResults(animals.filter("species", value: "Cow").sortBy(\.name), updatingOn: nil)
while liveCows.count != asyncCows.count + 1 { try await Task.sleep(for: .milliseconds(10)) }
print(liveCows.records.map(\.name), asyncCount)   // → ["Bella", "Calf", "Daisy"] 6
liveCows.query = animals.filter(\.age < 3)      // retarget: the new query runs, observers see its state

for try await state in animals.sortBy("species", "name").sectioned(by: "species") {
  print(state.sections.map(\.key), state.insertedSections)   // then section and row changes per commit
  // → ["Cat", "Cow", "Dog", "Mouse"] [0, 1, 2, 3]
  break
}
try store.delete(id: 21)                 // the store as it was
