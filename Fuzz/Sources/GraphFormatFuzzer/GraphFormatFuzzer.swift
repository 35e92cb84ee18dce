import FuzzDriver
import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// A graph of three record types that point at each other by id: people own pets, visits
// belong to a pet and (optionally) to a person as the vet. Every kind of relation is here:
// to-one (`owner`, `pet`, `vet`), to-many (`pets`, `visits`, `treated`) and to-many
// through another (`vets`, `petsTreated`), so relation keys, repeated hops
// (`owner.pets.visits.vet.city`), aggregates over relations and SUBQUERY over them are all
// reachable from a format string.

struct Person: Record {
  var id: Int
  var name: String
  var city: String
  var age: Int?
  var tags: [String]
}

struct Pet: Record {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var ownerID: Int?
}

struct Visit: Record {
  var id: Int
  var petID: Int
  var vetID: Int?
  var cost: Double
  var day: Int
}

extension Person: RelatedRecord {
  static let pets = ToMany<Person, Pet>("pets", inverse: \.ownerID)
  static let treated = ToMany<Person, Visit>("treated", inverse: \.vetID)
  static let petsTreated = ToManyThrough("petsTreated", through: treated, then: Visit.pet)
  static let relations: [any Relation<Person>] = [pets, treated, petsTreated]
}

extension Pet: RelatedRecord {
  static let owner = ToOne<Pet, Person>("owner", \.ownerID, onDelete: .nullify, allowsDangling: true)
  static let visits = ToMany<Pet, Visit>("visits", inverse: \.petID)
  static let vets = ToManyThrough("vets", through: visits, then: Visit.vet)
  static let relations: [any Relation<Pet>] = [owner, visits, vets]
}

extension Visit: RelatedRecord {
  static let pet = ToOne<Visit, Pet>("pet", \.petID, onDelete: .cascade)
  static let vet = ToOne<Visit, Person>("vet", \.vetID, onDelete: .nullify)
  static let relations: [any Relation<Visit>] = [pet, vet]
}

/// The graph every input runs on: built once, read only (the fuzzer never writes).
let graph: RecordGraph = {
  do {
    return try makeGraph()
  } catch {
    fatalError("the fuzzer's graph does not validate: \(error)")
  }
}()

func makeGraph() throws -> RecordGraph {
  let people = try MemoryStore<Person>([
    Person(id: 1, name: "Ada", city: "Oslo", age: 36, tags: ["vet", "a"]),
    Person(id: 2, name: "Bo", city: "Bergen", age: nil, tags: []),
    Person(id: 3, name: "Cy*", city: "", age: 41, tags: ["b"]),
  ])
  let pets = try MemoryStore<Pet>([
    Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1),
    Pet(id: 2, name: "Tom", species: "Cat", age: 7, ownerID: 1),
    Pet(id: 3, name: "é", species: "Dog", age: 0, ownerID: nil),
    Pet(id: 4, name: "Lost", species: "Cow", age: 12, ownerID: 99),  // a dangling owner
  ])
  let visits = try MemoryStore<Visit>([
    Visit(id: 1, petID: 1, vetID: 3, cost: 40, day: 1),
    Visit(id: 2, petID: 1, vetID: nil, cost: -2.5, day: 2),
    Visit(id: 3, petID: 2, vetID: 1, cost: 1e9, day: 2),
    Visit(id: 4, petID: 4, vetID: 3, cost: 0, day: 30),
  ])
  return try RecordGraph(people, pets, visits)
}

/// How long one input may run before the fuzzer calls it a blowup (libFuzzer's
/// `-timeout` is the outer limit; this one names the input in the report). Seconds.
let inputBudget: Double = 5

/// Evaluates the input as a format string over each type of the graph (with arguments for
/// its substitutions), and as a string key to sort by and to read. Any trap, hang, blowup
/// of memory or sanitizer report is a finding; thrown errors are the expected answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  let started = monotonicSeconds()
  let arguments: [(any Sendable)?] = ["owner.city", 3, 2.5, "Os*", ["Rex", "Tom"], nil, true, "visits"]
  _ = try? graph.records(Pet.self).filter(text, arguments).fetch()
  _ = try? graph.records(Person.self).filter(text, arguments).fetchCount()
  _ = try? graph.records(Visit.self).filter(text, arguments).fetch()
  _ = try? graph.records(Pet.self).sortBy(text).fetch()
  _ = try? graph.records(Person.self).values(text)
  _ = graph.records(Pet.self).filter(text, arguments).explain()
  let elapsed = monotonicSeconds() - started
  if elapsed > inputBudget {
    fatalError("one input ran \(elapsed) s, over the budget of \(inputBudget) s: \(text.debugDescription)")
  }
  return 0
}

func monotonicSeconds() -> Double {
  var t = timespec()
  clock_gettime(CLOCK_MONOTONIC, &t)
  return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// SwiftPM links an executable target's entry point under this name; it hands the
/// command line to libFuzzer.
@_cdecl("GraphFormatFuzzer_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
  runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
}
