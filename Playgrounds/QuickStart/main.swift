import RequestSet

struct Animal: Record {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var nickname: String?
}

let store = MemoryStore<Animal>()
try store.insert(contentsOf: [
  Animal(id: 1, name: "Micky", species: "Mouse", age: 3, nickname: "Mick"),
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2),
])

let animals = RequestSet(store)                  // nothing runs yet
let cows = animals.filter("species", value: "Cow").sortBy(\.age)
print(cows.map(\.name))                          // ["Bella", "Daisy"]

let olderOrRex = animals.filter(\.age > 4).filter("name", value: "Rex", mode: .or)
print(olderOrRex.count)                          // 2: Daisy and Rex

for animal in animals.exclude(\.nickname == nil).limit(1) {
  print(animal.name)                             // Micky
}
print(try animals.filter("name", value: "Rex").get().age)   // 5
