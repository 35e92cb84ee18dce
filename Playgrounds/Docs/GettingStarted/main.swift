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

let store = MemoryStore<Animal>()
try store.insert(contentsOf: [                          // all or nothing
  Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick", tags: ["small"],
         owner: Owner(name: "Walt", city: "Burbank")),
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [], owner: Owner(name: "Ann", city: "Oslo")),
])
let animals = RequestSet(store)

// save inserts a record, or replaces the one with the same id:
try store.save(Animal(id: 3, name: "Rex", species: "Dog", age: 6, weight: 31, nickname: "Rexy", tags: ["farm"]))
try store.delete(id: 1)

let inOslo = animals.filter("owner.city", value: "Oslo")            // a string key and a value
let named = animals.filter(\.age > 3 && \.nickname != nil)          // typed key paths
let older = animals.filter(#Predicate<Animal> { $0.age > 3 })        // a Foundation predicate
let bees = animals.filter { $0.name.hasPrefix("B") }                 // a closure
print(inOslo.map(\.name), named.map(\.name), older.map(\.name), bees.map(\.name))
// → ["Daisy", "Bella"] ["Rex"] ["Daisy", "Rex"] ["Bella"]

let dogs = animals.filter("species", value: "Dog")   // the first read evaluates it; later ones see that
print(dogs.count)                  // → 1
try store.insert(Animal(id: 5, name: "Fido", species: "Dog", age: 1, weight: 12, tags: []))
print(dogs.count)                  // → 1
print(dogs.refreshed().count)      // → 2

let userText = "species == 'Dog' AND age > 2"     // say, typed into a search field
let requestOffset = 0                              // say, from a request's query string
let requestLimit = 20
let filter = try RequestFilter<Animal>(format: userText, arguments: [])
let page = try animals.filter(filter).offset(requestOffset).limit(requestLimit).validated()
for animal in page { print(animal.name) }          // → Rex
