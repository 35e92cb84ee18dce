import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite

/// A seeded clinic graph (people, vets, pets, visits) and the answers to questions about
/// it computed in plain Swift, with dictionaries: the reference the relationship suites
/// compare every store with. Nothing here goes through RequestSet.
///
/// The data holds every awkward case the relation rules name: pets with a nil owner id,
/// pets whose owner id names no person (dangling, which `Pet.owner` allows), pets with
/// no visits, visits with no vet, people with no age, vets with no clinic.
struct ClinicData: Sendable {
  let people: [Person]
  let vets: [Vet]
  let pets: [Pet]
  let visits: [Visit]

  let personByID: [Int: Person]
  let vetByID: [Int: Vet]
  /// Each pet's visits, in id order.
  let visitsByPet: [Int: [Visit]]
  /// How many pets name each person id (dangling ids included).
  let petCountByOwner: [Int: Int]

  static let cities = ["Oslo", "Rome", "Lima", "Kyiv", "Pune", "Baku"]
  static let personNames = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu", "Mo", "Ned"]
  static let vetNames = ["Vera", "Max", "Ola", "Pia", "Rui", "Sam", "Tea", "Uma"]
  static let clinics = ["North", "South", "East"]
  static let species = ["Cat", "Dog", "Bird", "Fish", "Rabbit"]
  static let petNames = ["Rex", "Tom", "Kit", "Bea", "Odd", "Pip", "Zed", "Nyx", "Fox", "Jet"]

  /// - Parameters: sizes of each table; `seed` makes the graph reproducible.
  static func generate(people peopleCount: Int, pets petCount: Int, visits visitCount: Int, vets vetCount: Int, seed: UInt64)
    -> ClinicData
  {
    var rng = SeededRandom(seed: seed)
    var people: [Person] = []
    for id in 1...peopleCount {
      people.append(
        Person(
          id: id, name: personNames.randomElement(using: &rng)!, city: cities.randomElement(using: &rng)!,
          age: Int.random(in: 0..<100, using: &rng) < 15 ? nil : Int.random(in: 18...90, using: &rng)))
    }
    var vets: [Vet] = []
    for id in 1...vetCount {
      vets.append(
        Vet(
          id: id, name: vetNames.randomElement(using: &rng)!,
          clinic: Int.random(in: 0..<4, using: &rng) == 0 ? nil : clinics.randomElement(using: &rng)!))
    }
    var pets: [Pet] = []
    for id in 1...petCount {
      let roll = Int.random(in: 0..<100, using: &rng)
      let ownerID: Int? =
        roll < 10 ? nil : roll < 15 ? peopleCount + Int.random(in: 1...500, using: &rng) : Int.random(in: 1...peopleCount, using: &rng)
      pets.append(
        Pet(
          id: id, name: petNames.randomElement(using: &rng)!, species: species.randomElement(using: &rng)!,
          age: Int.random(in: 0...20, using: &rng), ownerID: ownerID))
    }
    // About a third of the pets are never visited; the rest share the visits unevenly.
    let visited = pets.map(\.id).filter { _ in Int.random(in: 0..<3, using: &rng) != 0 }
    var visits: [Visit] = []
    for id in 1...visitCount {
      // Squaring a uniform number skews the visits towards the first visited pets.
      let u = Double.random(in: 0..<1, using: &rng)
      let petID = visited[min(visited.count - 1, Int(u * u * Double(visited.count)))]
      visits.append(
        Visit(
          id: id, petID: petID,
          vetID: Int.random(in: 0..<5, using: &rng) == 0 ? nil : Int.random(in: 1...vetCount, using: &rng),
          // Quarters: every sum is exact, whatever order a store adds them in.
          cost: Double(Int.random(in: 0...400, using: &rng)) / 4, day: Int.random(in: 1...60, using: &rng)))
    }
    return ClinicData(people: people, vets: vets, pets: pets, visits: visits)
  }

  init(people: [Person], vets: [Vet], pets: [Pet], visits: [Visit]) {
    self.people = people
    self.vets = vets
    self.pets = pets
    self.visits = visits
    personByID = Dictionary(uniqueKeysWithValues: people.map { ($0.id, $0) })
    vetByID = Dictionary(uniqueKeysWithValues: vets.map { ($0.id, $0) })
    visitsByPet = Dictionary(grouping: visits.sorted { $0.id < $1.id }, by: \.petID)
    var counts: [Int: Int] = [:]
    for pet in pets { if let owner = pet.ownerID { counts[owner, default: 0] += 1 } }
    petCountByOwner = counts
  }

  // MARK: Reading relations, as Core Data does

  /// The pet's owner: nil when the id is nil or names no person.
  func owner(_ pet: Pet) -> Person? { pet.ownerID.flatMap { personByID[$0] } }
  func visits(_ pet: Pet) -> [Visit] { visitsByPet[pet.id] ?? [] }
  func vet(_ visit: Visit) -> Vet? { visit.vetID.flatMap { vetByID[$0] } }
  /// The pet's vets through its visits: one per visit that has a vet (a vet seen twice
  /// counts twice).
  func vets(_ pet: Pet) -> [Vet] { visits(pet).compactMap(vet) }

  /// Inserts the graph through `graph`, people and vets first, in batches.
  func insert(into graph: RecordGraph) throws {
    try graph.insert(contentsOf: people)
    try graph.insert(contentsOf: vets)
    try graph.insert(contentsOf: pets)
    try graph.insert(contentsOf: visits)
  }
}

/// The engine's comparison rules, on optional values: `==` nil matches only nil, `!=`
/// holds for nil, an ordering with nil is false.
enum Cmp: CaseIterable, Sendable {
  case eq, ne, lt, le, gt, ge

  var symbol: String {
    switch self {
    case .eq: return "=="
    case .ne: return "!="
    case .lt: return "<"
    case .le: return "<="
    case .gt: return ">"
    case .ge: return ">="
    }
  }

  var comparison: RequestComparison {
    switch self {
    case .eq: return .equal
    case .ne: return .notEqual
    case .lt: return .lessThan
    case .le: return .lessThanOrEqual
    case .gt: return .greaterThan
    case .ge: return .greaterThanOrEqual
    }
  }

  func holds<T: Comparable>(_ a: T?, _ b: T) -> Bool {
    switch self {
    case .eq: return a == b
    case .ne: return a != b
    default:
      guard let a else { return false }
      switch self {
      case .lt: return a < b
      case .le: return a <= b
      case .gt: return a > b
      default: return a >= b
      }
    }
  }

  static let equality: [Cmp] = [.eq, .ne]
}

/// A value to sort by in the reference: nil first, then numbers, then strings.
enum SortValue: Comparable {
  case null
  case number(Double)
  case text(String)

  init(_ value: Int?) { self = value.map { .number(Double($0)) } ?? .null }
  init(_ value: Double?) { self = value.map { .number($0) } ?? .null }
  init(_ value: String?) { self = value.map { .text($0) } ?? .null }
}

/// The store kinds' stores for the clinic types, with indexes on the keys relations
/// join on for the indexed kinds (`StoreKind.makeStore(of:)` indexes only `Animal`s).
enum ClinicStores {
  static func make<R: Record>(_ kind: StoreKind, _ type: R.Type, indexes: [String]) throws -> any RecordStore<R> {
    switch kind {
    case .indexedMemory:
      let store = MemoryStore<R>()
      for key in indexes { try store.createIndex(key) }
      return store
    case .indexedLog:
      let store = try LogStore<R>(path: TemporaryLogDirectory.freshPath())
      for key in indexes { try store.createIndex(key) }
      return store
    case .indexedSQLite:
      let store = try SQLiteStore<R>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
      for key in indexes { try store.createIndex(key) }
      return store
    default:
      return try kind.makeStore(of: R.self)
    }
  }

  /// A graph whose four types are SQLite stores in one database file, a table each (with
  /// `indexed`, the same indexes as `.indexedSQLite`): relation conditions run as
  /// subqueries inside one statement. `tables` prefixes the table names.
  static func sharedFileGraph(indexed: Bool, tables: String = "clinic") throws -> RecordGraph {
    let path = TemporaryLogDirectory.freshPath("shared.sqlite")
    func store<R: Record>(_ type: R.Type, _ table: String, _ indexes: [String]) throws -> SQLiteStore<R> {
      let store = try SQLiteStore<R>(path: path, table: tables + "_" + table)
      if indexed { for key in indexes { try store.createIndex(key) } }
      return store
    }
    return try RecordGraph(
      store(Person.self, "people", ["city", "age"]), store(Pet.self, "pets", ["ownerID", "species"]),
      store(Visit.self, "visits", ["petID", "vetID", "cost"]), store(Vet.self, "vets", ["name"]))
  }

  /// A graph whose four types are PostgreSQL stores in the test server's database, a table
  /// each (with `indexed`, indexes on the keys relations join on): relation conditions run
  /// as subqueries inside one statement.
  static func sharedDatabaseGraph(indexed: Bool) throws -> RecordGraph {
    let url = try PostgresServer.url()
    let prefix = PostgresServer.freshTable("clinic") + "_"
    func store<R: Record>(_ type: R.Type, _ table: String, _ indexes: [String]) throws -> PostgresStore<R> {
      let store = try PostgresStore<R>(url: url, table: prefix + table)
      if indexed { for key in indexes { try store.createIndex(key) } }
      return store
    }
    return try RecordGraph(
      store(Person.self, "people", ["city", "age"]), store(Pet.self, "pets", ["ownerID", "species"]),
      store(Visit.self, "visits", ["petID", "vetID", "cost"]), store(Vet.self, "vets", ["name"]))
  }

  /// Whether the graph's pets and people are in one database (`QueryPushdownStore.location`),
  /// where a relation condition runs as a subquery in the pets' statement.
  static func sharesDatabase(_ graph: RecordGraph) -> Bool {
    func location<R: Record>(_ type: R.Type) -> StoreLocation? {
      (graph.store(for: type) as? any QueryPushdownStore)?.location
    }
    guard let pets = location(Pet.self) else { return false }
    return pets.database == location(Person.self)?.database
  }

  /// A graph with every type on stores of `kind`.
  static func graph(_ kind: StoreKind) throws -> RecordGraph {
    try RecordGraph(
      make(kind, Person.self, indexes: ["city", "age"]),
      make(kind, Pet.self, indexes: ["ownerID", "species"]),
      make(kind, Visit.self, indexes: ["petID", "vetID", "cost"]),
      make(kind, Vet.self, indexes: ["name"]))
  }
}
