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

let userText = "species == 'Dog' AND age >= 5"                                // say, typed by a user
let requestLimit = 20                                                         // say, from a request
let young = animals.filter("age > %@ AND name BEGINSWITH[c] %@", 2, "mi")
let alices = animals.filter("%K == %@", "name", "Alice", mode: .or)
let farmNorth = animals.filter("ANY tags == 'farm' AND owner.city IN {'Oslo', 'Bergen'}")
let userFilter = try RequestFilter<Animal>(format: userText, arguments: [])   // throws on bad input
let page = try animals.filter(userFilter).limit(requestLimit).validated()     // reading it cannot trap
let triplets = animals.filter(where: ["name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"]])
let typed = animals.filter([\Animal.age: 1...3, \Animal.weight: lt(100)])
let ordered = animals.sortBy("species", "desc:age", "-weight")
print(young.map(\.name), alices.map(\.name), farmNorth.map(\.name))   // → ["Micky"] [] ["Daisy"]
print(page.map(\.name), triplets.map(\.name), typed.map(\.name))     // → ["Rex", "Zed"] ["Micky"] ["Micky"]
print(ordered.map(\.name))   // → ["alice", "Daisy", "Bella", "Rex", "Zed", "Micky"]

let heavy = animals.filter("weight > age * 10")                              // key against key, arithmetic
let farmFirst = animals.filter("SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0 AND tags[FIRST] == 'farm'")
let older = try RequestFilter<Animal>(format: "age > $min AND species == $kind")
let oldDogs = animals.filter(older.substituting(["min": 4, "kind": "Dog"]))   // variables, bound later
let band = animals.filter("age BETWEEN {$low, $low + 2}", variables: ["low": 2])
print(heavy.map(\.name), farmFirst.map(\.name))   // → ["Daisy", "Bella"] ["Daisy", "Rex"]
print(oldDogs.map(\.name), band.map(\.name))      // → ["Rex", "Zed"] ["Micky", "Bella"]

struct Sale: Record { var id: Int; var amount: Int; var at: Date }
let sales = RequestSet([
  Sale(id: 1, amount: 5, at: Date(timeIntervalSince1970: 1_700_000_000)),   // Tue 2023-11-14
  Sale(id: 2, amount: 7, at: Date(timeIntervalSince1970: 1_701_500_000)),   // Sat 2023-12-02
  Sale(id: 3, amount: 2, at: Date(timeIntervalSince1970: 1_704_000_000)),   // Sun 2023-12-31
  Sale(id: 4, amount: 4, at: Date(timeIntervalSince1970: 1_704_100_000)),   // Mon 2024-01-01
])
let perMonth = try sales.groupBy("at.@month").aggregate(.sum("amount")).fetch()
print(sales.filter(\.at, .year, 2023).count, sales.filter("at.@weekday IN {1, 7}").map(\.id))
// → 3 [2, 3]
print(perMonth.map { "\($0["at.@month"]!): \($0["sum:amount"]!)" })   // → ["1: 4", "11: 5", "12: 9"]

try store.createIndex(\.species)                  // also createIndex("species")
try store.createIndex(\.name, unique: true)       // a second "Rex" now throws .uniqueViolation
let cowsByAge = animals.filter("species", value: "Cow").sortBy("age").limit(5)
print(cowsByAge.explain())
// → RequestSet<Animal> over MemoryStore<Animal>
// → stage 1: index lookup on species (~2 of 6 records)
// →   index answers: species == "Cow"
// →   sort: age ASC (top-k heap, k = 5)
// →   window: limit 5
let one = animals.filter(\.id == 3).first                      // by id, O(1), no index needed
let eldest = animals.sortBy(\.age, order: .descending).limit(3)  // walks an age index when there is one
print(one?.name ?? "-", eldest.map(\.name))                    // → Rex ["alice", "Daisy", "Rex"]

try store.createIndex(\.species, \.age)              // also createIndex("species", "age")
let youngestCow = animals.filter(\.species == "Cow").sortBy(\.age).limit(1)
print(youngestCow.map(\.name))                        // → ["Bella"]
print(youngestCow.explain().contains("within equal species of a composite index"))   // → true

try store.createTextIndex("name", "species", "tags")
let farm = animals.filter(matching: "far*")                  // the keys of the text index
print(farm.map(\.name), animals.filter(matching: "COW", in: "species").count)
// → ["Daisy", "Rex"] 2
print(animals.filter("name MATCHES[fts] 'álice' OR age > 10").map(\.id))   // → [5]
print(animals.filter(.matching("\"micky\" dog", in: ["name", "species"])).count)   // → 0

print(animals.filter(matching: "cow").sortBy(.relevance).map(\.id))              // → [4, 2]
print(animals.filter(matching: "farm").sortBy(.relevance).sortBy("age").map(\.id)) // → [3, 2]

let youngest = animals.sortBy(\.age).first(3).map(\.name)
let oldest = animals.sortBy(\.age).last(3).map(\.name)
let zToA = animals.sortBy(\.name).reversed().map(\.name)
let hasRex = animals.filter("name", value: "Rex").exists      // true; stops at the first match
let bySpecies = animals.sortBy(\.age).distinct(\.species).map(\.name)  // youngest of each
print(youngest)                                  // → ["Bella", "Micky", "Rex"]
print(oldest)                                    // → ["Zed", "Daisy", "alice"]
print(zToA)                                      // → ["alice", "Zed", "Rex", "Micky", "Daisy", "Bella"]
print(hasRex, bySpecies)                         // → true ["Bella", "Micky", "Rex", "alice"]

let rows = try animals.values("name", "owner.city")
print(rows.map { "\($0["name"]!) \($0["owner.city"]!)" }[0])   // → "Micky" "Burbank"
let names = try animals.values(\.name)                 // ["Micky", "Daisy", …]
let ids = try animals.ids()                            // identifiers only
let cowWeight = try animals.filter("species", value: "Cow").sum(\.weight)
let maxAge = try animals.max("age")                    // FieldValue.int(12), printed as 12
let meanAge = try animals.average(\.age)
print(names.count, ids, cowWeight, maxAge, meanAge!)   // → 6 [1, 2, 3, 4, 5, 6] 1050.0 12 5.666666666666667
let groups = try animals.groupBy("species").aggregate(.count, .max("age"))
  .having("count", .greaterThan, 1).fetch()            // the species with more than one animal
print(groups.map { "\($0["species"]!) \($0["count"]!) \($0["max:age"]!)" })   // → ["\"Cow\" 2 7", "\"Dog\" 2 5"]

let elders = try animals.filter(\.age > 10).update { $0.species = "Elder" }
print(elders)                                          // → 1
try animals.filter("species", value: "Calf").update("species", value: "Cow")
try animals.filter("species", value: "Dodo").delete()
let bob = try animals.filter("name", value: "Bob")
  .firstOrInsert { Animal(id: 9, name: "", species: "Cat", age: 0, weight: 4, tags: []) }
let seven = try store.fetchOrInsert(id: 7) { id in
  Animal(id: id, name: "Seven", species: "Cow", age: 0, weight: 1, tags: [])
}
try store.transaction { tx in                          // all or nothing
  tx.insert(Animal(id: 10, name: "Calf", species: "Cow", age: 0, weight: 40, tags: []))
  tx.delete(id: 3)
}
print(bob.name, seven.name, animals.refreshed().count)   // → Bob Seven 8
