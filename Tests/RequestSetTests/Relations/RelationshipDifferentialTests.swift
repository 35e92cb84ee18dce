import Foundation
import RequestSet
import RequestSetSQLite
import Testing

/// Seeded random queries through relations (to-one, to-many, many-to-many through,
/// SUBQUERY, nested paths), in every filter form, with sorts, windows, counts and
/// prefetching, against answers computed in plain Swift over dictionaries, on every
/// writable store, on SQLite stores sharing one file, on PostgreSQL stores in one database
/// and on a graph that mixes store kinds.
@Suite(.ownThreads) struct RelationshipDifferentialTests {
  /// 1,000 people, 5,000 pets, 10,000 visits, 50 vets: past the 1,000 related ids a
  /// relation's query binds (`_RelationColumns.fewIDs`) for the visits' pets, under it for
  /// the owners. (10,000 pets before: the answers test the same paths at half the CPU,
  /// which was the most of any suite in `swift test` and in CI.)
  static let data = ClinicData.generate(people: 1_000, pets: 5_000, visits: 10_000, vets: 50, seed: 0xC1_1C)
  /// Each query reads 5,000 pets and, per relation condition, another store; conditions
  /// computed on each record (`SUBQUERY`) materialize every visit, about 0.3 s each in a
  /// debug build. `REQUESTSET_SOAK=1` runs twice the
  /// quick form's queries per store, from the same generators: at the earlier 200 / 60 / 16
  /// this suite alone took about 13 minutes of CI's CPU, the most of any suite, and it now
  /// runs on ten store configurations.
  static let filterQueries = TestScale.pick(quick: 30, soak: 60)
  static let sortQueries = TestScale.pick(quick: 12, soak: 24)
  static let prefetchQueries = TestScale.pick(quick: 4, soak: 8)

  @Test(arguments: StoreKind.writable)
  func oneKindForEveryType(kind: StoreKind) throws {
    let graph = try ClinicStores.graph(kind)
    try Self.data.insert(into: graph)
    try Self.check(graph, "\(kind)")
  }

  /// Every type a SQLite store in one database file: relation conditions run as
  /// subqueries inside the pets' statement (see SameFileGraphTests), and must answer as
  /// the semi-joins of every other graph do.
  @Test(arguments: [false, true])
  func sqliteStoresInOneFile(indexed: Bool) throws {
    let graph = try ClinicStores.sharedFileGraph(indexed: indexed)
    try Self.data.insert(into: graph)
    try Self.check(graph, indexed ? "one file, indexed" : "one file")
  }

  /// Every type a PostgreSQL store in one database, indexed on the keys relations join on:
  /// relation conditions run as subqueries inside the pets' statement (see
  /// SameDatabaseGraphTests). `oneKindForEveryType(.postgres)` is the same graph without
  /// indexes (its stores share the test server's database too).
  @Test(.enabled(if: PostgresServer.testsRun))
  func postgresStoresInOneDatabase() throws {
    let graph = try ClinicStores.sharedDatabaseGraph(indexed: true)
    try Self.data.insert(into: graph)
    try Self.check(graph, "one database, indexed")
  }

  /// A tenth of the clinic, through PgBouncer in transaction mode (`pooler: .transaction`)
  /// and directly on the same server, with a third of the queries: the same answers both
  /// ways, the reference's. (`oneKindForEveryType(.postgres)` runs the whole clinic
  /// directly; the pooler changes where each transaction runs, not what a query sends,
  /// so a tenth keeps the added CPU small.)
  @Test(
    .enabled(if: PgBouncerServer.testsRun, "pgbouncer is not installed (.ci/run installs it: apt-get install pgbouncer)"),
    arguments: StoreKind.throughPgBouncer + (PgBouncerServer.testsRun ? [.postgres] : []))
  func throughPgBouncerAsDirectly(kind: StoreKind) throws {
    let graph = try ClinicStores.graph(kind)
    try Self.smallData.insert(into: graph)
    try Self.check(graph, "\(kind), small", data: Self.smallData, filters: 10, sorts: 4, prefetches: 2)
  }

  /// The clinic ``throughPgBouncerAsDirectly(kind:)`` reads.
  static let smallData = ClinicData.generate(people: 200, pets: 1_000, visits: 2_000, vets: 10, seed: 0xC1_1C)

  /// Pets in a LogStore, people in a MemoryStore, visits in SQLite, vets in an indexed
  /// MemoryStore: each relation runs as a query on another kind of store.
  @Test func mixedGraph() throws {
    let vets = MemoryStore<Vet>()
    try vets.createIndex("name")
    let graph = try RecordGraph(
      MemoryStore<Person>(), try LogStore<Pet>(path: TemporaryLogDirectory.freshPath()),
      try SQLiteStore<Visit>(path: TemporaryLogDirectory.freshPath("store.sqlite")), vets)
    try Self.data.insert(into: graph)
    try Self.check(graph, "mixed")
  }

  /// The generator must select a real spread of pets, or the comparison proves little.
  @Test func generatedQueriesAreNotTrivial() {
    var rng = SeededRandom(seed: 0xF11)
    var empty = 0, everything = 0, between = 0
    for _ in 0..<Self.filterQueries {
      let query = PetQuery.random(using: &rng, Self.data)
      let n = Self.data.pets.filter(query.holds).count
      if n == 0 { empty += 1 } else if n == Self.data.pets.count { everything += 1 } else { between += 1 }
    }
    #expect(between > Self.filterQueries * 2 / 3, "empty \(empty), everything \(everything), between \(between)")
  }

  /// The queries `check` runs hold every collection operator through a to-many, which a
  /// graph in one file answers in its statement (see SameFileGraphTests): the one-file
  /// runs compare those statements with the reference.
  @Test func generatedQueriesHoldEveryAggregateTheStatementRuns() {
    var rng = SeededRandom(seed: 0xF11)
    var formats: [String] = []
    for _ in 0..<Self.filterQueries { formats.append(PetQuery.random(using: &rng, Self.data).format) }
    for op in ["@count", "@sum.", "@avg.", "@min.", "@max."] {
      #expect(formats.contains { $0.contains("visits." + op) }, "\(op) in \(formats)")
    }
  }

  @Test func referenceDataHasTheAwkwardCases() {
    let d = Self.data
    #expect(d.pets.contains { $0.ownerID == nil })
    #expect(d.pets.contains { $0.ownerID != nil && d.owner($0) == nil })
    #expect(d.pets.contains { d.visits($0).isEmpty })
    #expect(d.visits.contains { $0.vetID == nil })
    #expect(d.people.contains { $0.age == nil })
    #expect(d.vets.contains { $0.clinic == nil })
    // Pets whose visits include one with no vet and one with a vet: where `vets` and
    // `visits.vet` differ.
    #expect(d.pets.contains { p in d.visits(p).contains { $0.vetID == nil } && !d.vets(p).isEmpty })
  }

  // MARK: The checks

  /// The filter queries a check asks of a graph holding `d`, from one seeded generator.
  static func filterCases(_ d: ClinicData, count: Int) -> [PetQuery] {
    var rng = SeededRandom(seed: 0xF11)
    return (0..<count).map { _ in PetQuery.random(using: &rng, d) }
  }

  /// The reference answer of each of ``filterCases(_:count:)``, in plain Swift.
  static func filterAnswers(_ d: ClinicData, count: Int) -> [[Int]] {
    filterCases(d, count: count).map { query in d.pets.filter(query.holds).map(\.id) }
  }

  /// The answers for the full clinic, computed once and shared by every graph that holds
  /// it, as the queries are the same on each.
  static let defaultFilterAnswers = filterAnswers(data, count: filterQueries)

  /// A sort query: the key, an optional filter and a window.
  struct SortCase {
    var sort: PetSort
    var filter: PetQuery?
    var offset: Int
    var limit: Int
  }

  /// The sort queries a check asks of a graph holding `d`, from one seeded generator.
  static func sortCases(_ d: ClinicData, count: Int) -> [SortCase] {
    var rng = SeededRandom(seed: 0x5027)
    return (0..<count).map { _ in
      let sort = PetSort.random(using: &rng)
      let filter: PetQuery? = Bool.random(using: &rng) ? PetQuery.random(using: &rng, d, depth: 1) : nil
      return SortCase(
        sort: sort, filter: filter, offset: Int.random(in: 0...40, using: &rng), limit: Int.random(in: 1...120, using: &rng))
    }
  }

  /// The reference answer of each of ``sortCases(_:count:)``: the pets the filter keeps,
  /// ordered by the key's value (computed once per pet) then by id, windowed.
  static func sortAnswers(_ d: ClinicData, count: Int) -> [[Int]] {
    sortCases(d, count: count).map { c in
      var kept = d.pets
      if let filter = c.filter { kept = kept.filter(filter.holds) }
      let keyed = kept.map { (value: c.sort.value($0, d), id: $0.id) }.sorted { a, b in
        if a.value != b.value { return c.sort.descending ? a.value > b.value : a.value < b.value }
        return a.id < b.id
      }
      return Array(keyed.dropFirst(c.offset).prefix(c.limit)).map(\.id)
    }
  }

  /// ``sortAnswers(_:count:)`` for the full clinic, computed once.
  static let defaultSortAnswers = sortAnswers(data, count: sortQueries)

  /// Runs the seeded filter, sort and prefetch queries on `graph`, which holds `custom`
  /// (the full clinic, ``data``, when nil), against answers computed over it.
  static func check(
    _ graph: RecordGraph, _ label: String, data custom: ClinicData? = nil, filters filterQueries: Int = filterQueries,
    sorts sortQueries: Int = sortQueries, prefetches prefetchQueries: Int = prefetchQueries
  ) throws {
    let d = custom ?? data
    let standard = custom == nil && filterQueries == Self.filterQueries && sortQueries == Self.sortQueries
    let filterAnswers = standard ? defaultFilterAnswers : filterAnswers(d, count: filterQueries)
    let sortAnswers = standard ? defaultSortAnswers : sortAnswers(d, count: sortQueries)
    let pets = graph.records(Pet.self)
    for (i, query) in filterCases(d, count: filterQueries).enumerated() {
      let form = PetQuery.Form.allCases[i % PetQuery.Form.allCases.count]
      let (set, used) = query.apply(to: pets, preferring: form)
      let expected = filterAnswers[i]
      let what = "filter \(i) on \(label) [\(used)]: \(query.format)"
      do {
        let fetched = try set.sortBy("id").fetch().map(\.id)
        if fetched != expected { Issue.record("\(what): \(difference(fetched, expected))") }
        if i % 3 == 0 { #expect(set.count == expected.count, "count of \(what)") }
      } catch {
        Issue.record("\(what): \(error)")
      }
    }

    for (i, c) in sortCases(d, count: sortQueries).enumerated() {
      let (sort, filter, offset, limit) = (c.sort, c.filter, c.offset, c.limit)
      let typed = i % 2 == 0
      var set = pets
      if let filter { set = filter.apply(to: set, preferring: .format).0 }
      set = sort.apply(to: set, typed: typed).sortBy("id").offset(offset).limit(limit)
      let want = sortAnswers[i]
      let got: [Int]
      do { got = try set.fetch().map(\.id) } catch {
        Issue.record("sort \(i) on \(label): \(sort.key): \(error)")
        continue
      }
      #expect(
        got == want,
        "sort \(i) on \(label): \(sort.key) \(sort.descending ? "desc" : "asc") typed \(typed) offset \(offset) limit \(limit) filter \(filter?.format ?? "-")"
      )
    }

    var prefetchRNG = SeededRandom(seed: 0x9F37)
    for i in 0..<prefetchQueries {
      let filter = PetQuery.random(using: &prefetchRNG, d, depth: 1)
      let perPet = i % 3 == 2 ? nil : Int.random(in: 1...3, using: &prefetchRNG)
      var visits = Pet.visits.sortBy(\.day, order: .descending).sortBy(\.id)
      if let perPet { visits = visits.limit(perPet) }
      let set = filter.apply(to: pets, preferring: .format).0.sortBy("id").limit(400)
      let rows: [Related<Pet>]
      do { rows = try set.fetch(including: Pet.owner, visits.including(Visit.vet), Pet.vets) } catch {
        Issue.record("prefetch \(i) on \(label): \(error)")
        continue
      }
      let expected = Array(d.pets.filter(filter.holds).prefix(400))
      #expect(rows.map(\.record.id) == expected.map(\.id), "prefetch \(i) on \(label): \(filter.format)")
      for (row, pet) in zip(rows, expected) where row.record.id == pet.id {
        #expect(row.record == pet)
        #expect(row[Pet.owner]?.record == d.owner(pet), "prefetch \(i) on \(label): owner of pet \(pet.id)")
        var want = d.visits(pet).sorted { ($0.day, -$0.id) > ($1.day, -$1.id) }
        if let perPet { want = Array(want.prefix(perPet)) }
        let got = row[Pet.visits]
        #expect(got.map(\.record) == want, "prefetch \(i) on \(label): visits of pet \(pet.id)")
        #expect(got.map { $0[Visit.vet]?.record } == want.map(d.vet), "prefetch \(i) on \(label): vets of pet \(pet.id)")
        #expect(
          row[Pet.vets].map(\.record.id).sorted() == d.vets(pet).map(\.id).sorted(),
          "prefetch \(i) on \(label): Pet.vets of pet \(pet.id)")
      }
    }
  }
}

/// What a fetch got wrong, short enough to read.
func difference(_ got: [Int], _ want: [Int]) -> String {
  let g = Set(got), w = Set(want)
  let extra = g.subtracting(w).sorted(), missing = w.subtracting(g).sorted()
  return "got \(got.count), want \(want.count); extra \(extra.prefix(5))\(extra.count > 5 ? "…" : ""), "
    + "missing \(missing.prefix(5))\(missing.count > 5 ? "…" : "")"
    + (extra.isEmpty && missing.isEmpty ? " (same ids, other order)" : "")
}

// MARK: Generated conditions

/// One condition on pets, in each form that can say it, with its reference answer.
struct PetCondition {
  /// The format-string text.
  var format: String
  /// The condition's elements in a triplet query (`key, op, value`, or `any, key, op, value`).
  var triplet: [Any]?
  var typed: RequestFilter<Pet>?
  /// `filter(key, comparison, value)`.
  var key: (String, RequestComparison, any Encodable & Sendable)?
  var holds: (Pet) -> Bool
}

/// A tree of conditions, rendered in one of the filter forms.
indirect enum PetQuery {
  case atom(PetCondition)
  case and([PetQuery])
  case or([PetQuery])
  case not(PetQuery)

  enum Form: CaseIterable { case format, typed, triplet, key }

  var holds: (Pet) -> Bool {
    switch self {
    case .atom(let c): return c.holds
    case .and(let qs):
      let tests = qs.map(\.holds)
      return { p in tests.allSatisfy { $0(p) } }
    case .or(let qs):
      let tests = qs.map(\.holds)
      return { p in tests.contains { $0(p) } }
    case .not(let q):
      let test = q.holds
      return { !test($0) }
    }
  }

  var format: String {
    switch self {
    case .atom(let c): return c.format
    case .and(let qs): return "(" + qs.map(\.format).joined(separator: " AND ") + ")"
    case .or(let qs): return "(" + qs.map(\.format).joined(separator: " OR ") + ")"
    case .not(let q): return "NOT (" + q.format + ")"
    }
  }

  var typed: RequestFilter<Pet>? {
    switch self {
    case .atom(let c): return c.typed
    case .and(let qs):
      let parts = qs.map(\.typed)
      guard parts.allSatisfy({ $0 != nil }) else { return nil }
      return parts.dropFirst().reduce(parts[0]!) { $0 && $1! }
    case .or(let qs):
      let parts = qs.map(\.typed)
      guard parts.allSatisfy({ $0 != nil }) else { return nil }
      return parts.dropFirst().reduce(parts[0]!) { $0 || $1! }
    case .not(let q): return q.typed.map { !$0 }
    }
  }

  /// The triplet query's elements, with groups as nested arrays.
  var triplet: [Any]? {
    switch self {
    case .atom(let c): return c.triplet
    case .not(let q):
      guard let inner = q.triplet else { return nil }
      if case .atom = q { return ["not"] + inner }
      return ["not", inner]
    case .and(let qs), .or(let qs):
      let word: String
      if case .and = self { word = "and" } else { word = "or" }
      var out: [Any] = []
      for (i, q) in qs.enumerated() {
        var body = q
        var connector = i == 0 ? nil : word
        if case .not(let inner) = q {
          body = inner
          connector = i == 0 ? "not" : word + " not"
        }
        guard let elements = body.triplet else { return nil }
        if let connector { out.append(connector) }
        if case .atom = body { out += elements } else { out.append(elements) }
      }
      return out
    }
  }

  /// The query on `set` in `form`, or as a format string when it cannot be said so.
  func apply(to set: RequestSet<Pet>, preferring form: Form) -> (RequestSet<Pet>, Form) {
    switch form {
    case .typed:
      if let typed { return (set.filter(typed), .typed) }
    case .triplet:
      if let triplet { return (set.filter(where: triplet), .triplet) }
    case .key:
      var keys: [PetCondition] = []
      switch self {
      case .atom(let c): keys = [c]
      case .and(let qs): keys = qs.compactMap { if case .atom(let c) = $0 { return c } else { return nil } }
        if keys.count != qs.count { keys = [] }
      default: break
      }
      if !keys.isEmpty, keys.allSatisfy({ $0.key != nil }) {
        return (keys.reduce(set) { s, c in s.filter(c.key!.0, c.key!.1, c.key!.2) }, .key)
      }
    case .format:
      break
    }
    return (set.filter(format), .format)
  }

  static func random(using rng: inout SeededRandom, _ d: ClinicData, depth: Int = 2) -> PetQuery {
    let roll = Int.random(in: 0..<10, using: &rng)
    if depth == 0 || roll < 4 { return .atom(PetCondition.random(using: &rng, d)) }
    if roll == 4 { return .not(.atom(PetCondition.random(using: &rng, d))) }
    let n = Int.random(in: 2...3, using: &rng)
    let parts = (0..<n).map { _ -> PetQuery in
      let child = random(using: &rng, d, depth: depth - 1)
      if case .not = child { return child }
      return Int.random(in: 0..<5, using: &rng) == 0 ? .not(child) : child
    }
    return roll < 8 ? .and(parts) : .or(parts)
  }
}

extension PetCondition {
  static func random(using rng: inout SeededRandom, _ d: ClinicData) -> PetCondition {
    func pick<T>(_ items: [T]) -> T { items.randomElement(using: &rng)! }
    func cost() -> Double {
      // A quarter (which costs can equal) or between two quarters.
      Double(Int.random(in: 0...400, using: &rng)) / 4 + (Bool.random(using: &rng) ? 0.125 : 0)
    }
    var category = Int.random(in: 0..<24, using: &rng)
    // Conditions computed on each record (SUBQUERY) are the slow ones: keep a third of them.
    // `@sum`, `@avg`, `@min` and `@max` (13–16) read two columns, or run in the statement
    // of a graph in one file: every one is kept.
    if [19, 20].contains(category), Int.random(in: 0..<3, using: &rng) != 0 {
      category = pick(Array(0...12) + [17, 18, 21, 22, 23])
    }
    switch category {
    case 0:
      let s = pick(ClinicData.species), c = pick(Cmp.equality)
      return PetCondition(
        format: "species \(c.symbol) '\(s)'", triplet: ["species", c.symbol, s], typed: typedCompare(\Pet.species, c, s),
        key: ("species", c.comparison, s), holds: { c.holds($0.species, s) })
    case 1:
      let n = Int.random(in: 0...20, using: &rng), c = pick(Cmp.allCases)
      return PetCondition(
        format: "age \(c.symbol) \(n)", triplet: ["age", c.symbol, n], typed: typedCompare(\Pet.age, c, n),
        key: ("age", c.comparison, n), holds: { c.holds($0.age, n) })
    case 2:
      let city = pick(ClinicData.cities), c = pick(Cmp.equality)
      return PetCondition(
        format: "owner.city \(c.symbol) '\(city)'", triplet: ["owner.city", c.symbol, city],
        typed: relatedCompare(Pet.owner.city, c, city), key: ("owner.city", c.comparison, city),
        holds: { c.holds(d.owner($0)?.city, city) })
    case 3:
      let n = Int.random(in: 18...90, using: &rng), c = pick(Cmp.allCases)
      return PetCondition(
        format: "owner.age \(c.symbol) \(n)", triplet: ["owner.age", c.symbol, n],
        typed: optionalCompare(Pet.owner.age, c, n), key: ("owner.age", c.comparison, n),
        holds: { c.holds(d.owner($0)?.age, n) })
    case 4:
      let name = pick(ClinicData.personNames)
      if Bool.random(using: &rng) {
        return PetCondition(
          format: "owner.name == '\(name)'", triplet: ["owner.name", "==", name], typed: relatedCompare(Pet.owner[dynamicMember: \Person.name], .eq, name),
          key: ("owner.name", .equal, name), holds: { d.owner($0)?.name == name })
      }
      let prefix = String(name.prefix(1))
      return PetCondition(
        format: "owner.name BEGINSWITH '\(prefix)'", triplet: ["owner.name", "beginswith", prefix],
        holds: { d.owner($0)?.name.hasPrefix(prefix) ?? false })
    case 5:
      let cities = Array(ClinicData.cities.shuffled(using: &rng).prefix(2))
      return PetCondition(
        format: "owner.city IN {'\(cities[0])', '\(cities[1])'}", triplet: ["owner.city", "in", cities],
        holds: { d.owner($0).map { cities.contains($0.city) } ?? false })
    case 6, 7:
      let q = pick(RelQuantifier.allCases), c = pick(Cmp.allCases)
      if category == 6 {
        let x = cost()
        return PetCondition(
          format: "\(q.word) visits.cost \(c.symbol) \(x)", triplet: [q.word.lowercased(), "visits.cost", c.symbol, x],
          typed: relatedCompare(q.elements(Pet.visits).cost, c, x),
          holds: { p in q.holds(d.visits(p)) { c.holds($0.cost, x) } })
      }
      let day = Int.random(in: 1...60, using: &rng)
      return PetCondition(
        format: "\(q.word) visits.day \(c.symbol) \(day)", triplet: [q.word.lowercased(), "visits.day", c.symbol, day],
        typed: relatedCompare(q.elements(Pet.visits).day, c, day),
        holds: { p in q.holds(d.visits(p)) { c.holds($0.day, day) } })
    case 8:
      let q = pick(RelQuantifier.allCases), isNil = Bool.random(using: &rng)
      return PetCondition(
        format: "\(q.word) visits.vetID \(isNil ? "==" : "!=") nil",
        triplet: [q.word.lowercased(), "visits.vetID", isNil ? "==" : "!=", "nil"],
        holds: { p in q.holds(d.visits(p)) { ($0.vetID == nil) == isNil } })
    case 9:
      let q = pick(RelQuantifier.allCases), c = pick(Cmp.equality), name = pick(ClinicData.vetNames)
      return PetCondition(
        format: "\(q.word) visits.vet.name \(c.symbol) '\(name)'",
        triplet: [q.word.lowercased(), "visits.vet.name", c.symbol, name],
        holds: { p in q.holds(d.visits(p)) { c.holds(d.vet($0)?.name, name) } })
    case 10:
      let q = pick(RelQuantifier.allCases)
      let clinic: String? = Bool.random(using: &rng) ? nil : pick(ClinicData.clinics)
      let text = clinic.map { "'\($0)'" } ?? "nil"
      return PetCondition(
        format: "\(q.word) visits.vet.clinic == \(text)",
        holds: { p in q.holds(d.visits(p)) { d.vet($0)?.clinic == clinic } })
    case 11:
      let k = Int.random(in: 0...6, using: &rng), c = pick(Cmp.allCases)
      return PetCondition(
        format: "visits.@count \(c.symbol) \(k)", triplet: ["visits.@count", c.symbol, k],
        typed: relatedCompare(Pet.visits.count, c, k),
        holds: { c.holds(d.visits($0).count, k) })
    case 12:
      if Bool.random(using: &rng) {
        return PetCondition(
          format: "visits.@count == 0", triplet: ["visits.@count", "==", 0], typed: Pet.visits.isEmpty,
          holds: { d.visits($0).isEmpty })
      }
      return PetCondition(
        format: "visits.@count > 0", triplet: ["visits.@count", ">", 0], typed: Pet.visits.exists,
        holds: { !d.visits($0).isEmpty })
    case 13:
      let x = Double(Int.random(in: 0...1_200, using: &rng)) / 4, c = pick(Cmp.allCases)
      return PetCondition(
        format: "visits.@sum.cost \(c.symbol) \(x)", triplet: ["visits.@sum.cost", c.symbol, x],
        typed: relatedCompare(Pet.visits.sum(\.cost), c, x),
        holds: { c.holds(d.visits($0).reduce(0) { $0 + $1.cost }, x) })
    case 14:
      // Never a possible average: no tie to round either way. A pet with no visits
      // averages 0, as KVC's @avg of an empty collection does (documented).
      let x = Double(Int.random(in: 0...100, using: &rng)) + 0.3, c = pick(Cmp.allCases)
      return PetCondition(
        format: "visits.@avg.cost \(c.symbol) \(x)", triplet: ["visits.@avg.cost", c.symbol, x],
        typed: relatedCompare(Pet.visits.average(\.cost), c, x),
        holds: { p in
          let v = d.visits(p)
          return c.holds(v.isEmpty ? 0 : v.reduce(0) { $0 + $1.cost } / Double(v.count), x)
        })
    case 15:
      let day = Int.random(in: 1...30, using: &rng), c = pick(Cmp.allCases)
      return PetCondition(
        format: "visits.@min.day \(c.symbol) \(day)", triplet: ["visits.@min.day", c.symbol, day],
        typed: relatedCompare(Pet.visits.min(\.day), c, day),
        holds: { c.holds(d.visits($0).map(\.day).min(), day) })
    case 16:
      let x = cost(), c = pick(Cmp.allCases)
      return PetCondition(
        format: "visits.@max.cost \(c.symbol) \(x)", triplet: ["visits.@max.cost", c.symbol, x],
        typed: relatedCompare(Pet.visits.max(\.cost), c, x),
        holds: { c.holds(d.visits($0).map(\.cost).max(), x) })
    case 17:
      // `vets` lists the vets the visits reach: a visit with no vet adds none.
      let q = pick(RelQuantifier.allCases), c = pick(Cmp.equality), name = pick(ClinicData.vetNames)
      return PetCondition(
        format: "\(q.word) vets.name \(c.symbol) '\(name)'", triplet: [q.word.lowercased(), "vets.name", c.symbol, name],
        holds: { p in q.holds(d.vets(p).map(Optional.some)) { c.holds($0?.name, name) } })
    case 18:
      let k = Int.random(in: 0...5, using: &rng), c = pick(Cmp.allCases)
      return PetCondition(
        format: "vets.@count \(c.symbol) \(k)", triplet: ["vets.@count", c.symbol, k],
        holds: { c.holds(d.vets($0).count, k) })
    case 19:
      let x = cost(), day = Int.random(in: 1...60, using: &rng), k = Int.random(in: 0...2, using: &rng)
      if Bool.random(using: &rng) {
        // A bare key inside a SUBQUERY is the pet's (documented): visits on a day no later
        // than three times the pet's age.
        return PetCondition(
          format: "SUBQUERY(visits, $v, $v.cost > \(x) AND $v.day <= age * 3).@count > \(k)",
          holds: { p in d.visits(p).filter { $0.cost > x && $0.day <= p.age * 3 }.count > k })
      }
      return PetCondition(
        format: "SUBQUERY(visits, $v, $v.cost > \(x) AND $v.day <= \(day)).@count > \(k)",
        holds: { p in d.visits(p).filter { $0.cost > x && $0.day <= day }.count > k })
    case 20:
      let name = pick(ClinicData.vetNames), k = Int.random(in: 0...1, using: &rng)
      if Bool.random(using: &rng) {
        // A bare key through a relation inside a SUBQUERY: the pet's owner's age.
        return PetCondition(
          format: "SUBQUERY(visits, $v, $v.vet.name == '\(name)' OR $v.day > owner.age).@count > \(k)",
          holds: { p in
            d.visits(p).filter { v in d.vet(v)?.name == name || d.owner(p)?.age.map { v.day > $0 } == true }.count > k
          })
      }
      return PetCondition(
        format: "SUBQUERY(visits, $v, $v.vet.name == '\(name)').@count > \(k)",
        holds: { p in d.visits(p).filter { d.vet($0)?.name == name }.count > k })
    case 21:
      // A collection reached through a missing owner is empty, as an absent nested array
      // is: its count is 0 (documented).
      let k = Int.random(in: 0...8, using: &rng), c = pick(Cmp.allCases)
      return PetCondition(
        format: "owner.pets.@count \(c.symbol) \(k)", triplet: ["owner.pets.@count", c.symbol, k],
        holds: { p in c.holds(d.owner(p).map { d.petCountByOwner[$0.id] ?? 0 } ?? 0, k) })
    case 22:
      let isNil = Bool.random(using: &rng)
      if Bool.random(using: &rng) {
        // The relation itself: no owner is a nil or a dangling key.
        return PetCondition(
          format: "owner \(isNil ? "==" : "!=") nil", triplet: ["owner", isNil ? "==" : "!=", "nil"],
          holds: { (d.owner($0) == nil) == isNil })
      }
      return PetCondition(
        format: "ownerID \(isNil ? "==" : "!=") nil", triplet: ["ownerID", isNil ? "==" : "!=", "nil"],
        holds: { ($0.ownerID == nil) == isNil })
    default:
      // No owner, or an owner with no age.
      return PetCondition(
        format: "owner.age == nil", triplet: ["owner.age", "==", "nil"], holds: { d.owner($0)?.age == nil })
    }
  }
}

enum RelQuantifier: CaseIterable {
  case any, all, none

  var word: String {
    switch self {
    case .any: return "ANY"
    case .all: return "ALL"
    case .none: return "NONE"
    }
  }

  /// ANY over none is false, ALL and NONE over none are true.
  func holds<T>(_ items: [T], _ test: (T) -> Bool) -> Bool {
    switch self {
    case .any: return items.contains(where: test)
    case .all: return items.allSatisfy(test)
    case .none: return !items.contains(where: test)
    }
  }

  func elements(_ relation: ToMany<Pet, Visit>) -> RelatedElements<Pet, Visit> {
    switch self {
    case .any: return relation.any
    case .all: return relation.all
    case .none: return relation.none
    }
  }
}

func typedCompare<V: Comparable & Sendable & Hashable & Encodable>(
  _ keyPath: KeyPath<Pet, V> & Sendable, _ c: Cmp, _ value: V
) -> RequestFilter<Pet> {
  switch c {
  case .eq: return keyPath == value
  case .ne: return keyPath != value
  case .lt: return keyPath < value
  case .le: return keyPath <= value
  case .gt: return keyPath > value
  case .ge: return keyPath >= value
  }
}

func relatedCompare<V: Comparable & Sendable & Encodable>(_ key: RelatedKey<Pet, V>, _ c: Cmp, _ value: V)
  -> RequestFilter<Pet>
{
  switch c {
  case .eq: return key == value
  case .ne: return key != value
  case .lt: return key < value
  case .le: return key <= value
  case .gt: return key > value
  case .ge: return key >= value
  }
}

func optionalCompare<V: Comparable & Sendable & Encodable>(_ key: RelatedKey<Pet, V?>, _ c: Cmp, _ value: V)
  -> RequestFilter<Pet>
{
  switch c {
  case .eq: return key == Optional(value)
  case .ne: return key != Optional(value)
  case .lt: return key < value
  case .le: return key <= value
  case .gt: return key > value
  case .ge: return key >= value
  }
}

// MARK: Generated sorts

/// A sort key through a relation (or the pet's own), in string and typed form.
struct PetSort {
  var key: String
  var descending: Bool
  var value: (Pet, ClinicData) -> SortValue
  var typed: (RequestSet<Pet>, RequestSortOrder) -> RequestSet<Pet>

  static var all: [(String, (Pet, ClinicData) -> SortValue, (RequestSet<Pet>, RequestSortOrder) -> RequestSet<Pet>)] {
    [
    ("owner.name", { p, d in SortValue(d.owner(p)?.name) }, { $0.sortBy(Pet.owner[dynamicMember: \Person.name], order: $1) }),
    ("owner.age", { p, d in SortValue(d.owner(p)?.age) }, { $0.sortBy(Pet.owner.age, order: $1) }),
    ("owner.city", { p, d in SortValue(d.owner(p)?.city) }, { $0.sortBy(Pet.owner.city, order: $1) }),
    ("visits.@count", { p, d in SortValue(d.visits(p).count) }, { $0.sortBy(Pet.visits.count, order: $1) }),
    (
      "visits.@sum.cost", { p, d in SortValue(d.visits(p).reduce(0) { $0 + $1.cost }) },
      { $0.sortBy(Pet.visits.sum(\.cost), order: $1) }
    ),
    ("visits.@max.cost", { p, d in SortValue(d.visits(p).map(\.cost).max()) }, { $0.sortBy(Pet.visits.max(\.cost), order: $1) }),
    ("visits.@min.day", { p, d in SortValue(d.visits(p).map(\.day).min()) }, { $0.sortBy(Pet.visits.min(\.day), order: $1) }),
    (
      // No visits average 0, as in filters (documented).
      "visits.@avg.cost",
      { p, d in
        let v = d.visits(p)
        return SortValue(v.isEmpty ? 0 : v.reduce(0) { $0 + $1.cost } / Double(v.count))
      }, { $0.sortBy(Pet.visits.average(\.cost), order: $1) }
    ),
    ("vets.@count", { p, d in SortValue(d.vets(p).count) }, { $0.sortBy("vets.@count", order: $1) }),
    ("age", { p, _ in SortValue(p.age) }, { $0.sortBy(\.age, order: $1) }),
    ]
  }

  static func random(using rng: inout SeededRandom) -> PetSort {
    let (key, value, typed) = all.randomElement(using: &rng)!
    return PetSort(key: key, descending: Bool.random(using: &rng), value: value, typed: typed)
  }

  func apply(to set: RequestSet<Pet>, typed useTyped: Bool) -> RequestSet<Pet> {
    let order: RequestSortOrder = descending ? .descending : .ascending
    return useTyped ? typed(set, order) : set.sortBy(key, order: order)
  }
}
