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
