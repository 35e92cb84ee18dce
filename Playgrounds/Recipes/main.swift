// The README's "Reading more, and writing through a query" examples, runnable:
// `swift run Recipes`. The README's quick start comes first, verbatim, as the README says
// every example runs after it; a test keeps both blocks identical to the README's.

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
  Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm"], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
  Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, tags: [], owner: Owner(name: "Ann", city: "Oslo")),
  Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al", tags: []),
  Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old"], owner: Owner(name: "Bo", city: "Bergen")),
])

let animals = RequestSet(store)                  // nothing runs yet
let cows = animals.filter("species", value: "Cow").sortBy(\.age)
print(cows.map(\.name))                          // ["Bella", "Daisy"]

let olderOrRex = animals.filter(\.age > 4).filter("name", value: "Rex", mode: .or)
print(olderOrRex.count)                          // 4: Daisy, Rex, alice and Zed

for animal in animals.exclude(\.nickname == nil).limit(1) {
  print(animal.name)                             // Micky
}
print(try animals.filter("name", value: "Rex").get().age)   // 5

// BEGIN README
let youngest = animals.sortBy(\.age).first(3).map(\.name)   // ["Bella", "Micky", "Rex"]
let oldest = animals.sortBy(\.age).last(3).map(\.name)       // ["Zed", "Daisy", "alice"]
let zToA = animals.sortBy(\.name).reversed().map(\.name)     // ["alice", "Zed", "Rex", "Micky", "Daisy", "Bella"]
let hasRex = animals.filter("name", value: "Rex").exists      // true; stops at the first match
let bySpecies = animals.sortBy(\.age).distinct(\.species).map(\.name)  // youngest of each: ["Bella", "Micky", "Rex", "alice"]

let rows = try animals.values("name", "owner.city")    // [["name": "Micky", "owner.city": "Burbank"], …]
let names = try animals.values(\.name)                 // ["Micky", "Daisy", …]
let ids = try animals.ids()                            // identifiers only
let cowWeight = try animals.filter("species", value: "Cow").sum(\.weight)
let maxAge = try animals.max("age")                    // FieldValue.int(12), printed as 12
let meanAge = try animals.average(\.age)               // Optional(5.666666666666667)
let groups = try animals.groupBy("species").aggregate(.count, .max("age"))
  .having("count", .greaterThan, 1).fetch()            // [["species": "Cow", "count": 2, "max:age": 7], …]

let elders = try animals.filter(\.age > 10).update { $0.species = "Elder" }   // 1 record changed
try animals.filter("species", value: "Calf").update("species", value: "Cow")
try animals.filter("species", value: "Dodo").delete()
let bob = try animals.filter("name", value: "Bob")
  .firstOrInsert { Animal(id: 9, name: "", species: "Cat", age: 0, weight: 4, tags: []) }
let seven = try store.fetchOrInsert(id: 7) { id in Animal(id: id, name: "Seven", species: "Cow", age: 0, weight: 1, tags: []) }
try store.transaction { tx in                          // all or nothing
  tx.insert(Animal(id: 10, name: "Calf", species: "Cow", age: 0, weight: 40, tags: []))
  tx.delete(id: 3)
}
// END README

func show(_ label: String, _ value: Any) { print(label.padding(toLength: 11, withPad: " ", startingAt: 0), value) }
show("youngest", youngest)
show("oldest", oldest)
show("zToA", zToA)
show("hasRex", hasRex)
show("bySpecies", bySpecies)
show("rows", rows.prefix(2))
show("names", names)
show("ids", ids)
show("cowWeight", cowWeight)
show("maxAge", maxAge)
show("meanAge", meanAge as Any)
show("groups", groups)
show("elders", elders)
show("bob", bob.name)
show("seven", seven.name)
show("after", animals.refreshed().map(\.name))
let rexGone = try store.fetch(id: 3) == nil
precondition(elders == 1 && bob.id == 9 && seven.id == 7 && rexGone)
precondition(youngest == ["Bella", "Micky", "Rex"] && oldest == ["Zed", "Daisy", "alice"])
precondition(zToA == ["alice", "Zed", "Rex", "Micky", "Daisy", "Bella"] && bySpecies == ["Bella", "Micky", "Rex", "alice"])
precondition(maxAge == .int(12) && cowWeight == 1050 && hasRex)
