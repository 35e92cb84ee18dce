import RequestSet

struct Animal: Record {                           // <doc:GettingStarted> has a fuller one
  var id: Int
  var name: String
  var species: String
  var age: Int
}

let herd = MemoryStore<Animal>()
try herd.insert(contentsOf: [
  Animal(id: 1, name: "Daisy", species: "Cow", age: 7),
  Animal(id: 2, name: "Bella", species: "Cow", age: 2),
  Animal(id: 3, name: "Clara", species: "Cow", age: 9),
])

let animals = RequestSet(herd)
let oldCows = animals
  .filter("species", value: "Cow")
  .filter(\.age > 5)
  .sortBy(\.age, order: .descending)
  .limit(3)

for cow in oldCows { print(cow.name) }
// → Clara
// → Daisy
