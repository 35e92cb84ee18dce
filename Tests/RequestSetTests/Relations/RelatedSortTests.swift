import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetPostgres
@testable import RequestSetSQLite

/// A sort through a relation (`owner.name`, `visits.@count`, `visits.@sum.cost`) over SQLite
/// stores in one file is one statement: a correlated subquery in the ORDER BY, no query on
/// the related store. It orders exactly as the in-process road (stores in two files, or in
/// memory) and as plain Swift over arrays: a record with no related record as nil (to-one)
/// or as the operator gives for none (0 for `@count`, `@sum`, `@avg`; nil for `@min`,
/// `@max`), ties in store order. Serialized: the statement hook is process-wide (each test
/// counts only its own tables' statements).
@Suite(.serialized, .ownThreads(servedFirst: true)) struct RelatedSortTests {
  static let data = ClinicData.generate(people: 40, pets: 300, visits: 600, vets: 7, seed: 0x50_47)

  /// The sort keys through relations, with each pet's value in plain Swift.
  static let relatedKeys: [(key: String, value: @Sendable (Pet) -> FieldValue)] = {
    let d = data
    @Sendable func costs(_ p: Pet) -> [Double] { d.visits(p).map(\.cost) }
    return [
      ("owner.name", { d.owner($0).map { .string($0.name) } ?? .null }),
      ("owner.age", { d.owner($0)?.age.map { .int($0) } ?? .null }),
      ("owner.city", { d.owner($0).map { .string($0.city) } ?? .null }),
      ("owner", { d.owner($0).map { .int($0.id) } ?? .null }),
      ("visits.@count", { .int(d.visits($0).count) }),
      ("visits.@sum.cost", { costs($0).isEmpty ? .int(0) : .double(costs($0).reduce(0, +)) }),
      ("visits.@avg.cost", { costs($0).isEmpty ? .int(0) : .double(costs($0).reduce(0, +) / Double(costs($0).count)) }),
      ("visits.@max.cost", { costs($0).max().map { .double($0) } ?? .null }),
      ("visits.@min.day", { d.visits($0).map(\.day).min().map { .int($0) } ?? .null }),
    ]
  }()

  /// The pets' own keys a sort may add after a related one.
  static let ownKeys: [(key: String, value: @Sendable (Pet) -> FieldValue)] = [
    ("name", { .string($0.name) }), ("age", { .int($0.age) }), ("species", { .string($0.species) }),
  ]

  /// Filters, with their answers in plain Swift.
  static let filters: [(format: String?, holds: @Sendable (Pet) -> Bool)] = {
    let d = data
    return [
      (nil, { _ in true }),
      ("species == 'Cat'", { $0.species == "Cat" }),
      ("age > 6", { $0.age > 6 }),
      ("owner.city == 'Oslo'", { d.owner($0)?.city == "Oslo" }),
      ("visits.@count >= 1", { !d.visits($0).isEmpty }),
    ]
  }()

  /// The four clinic stores in one file (or, with `twoFiles`, pets and visits in one file
  /// and people and vets in another); table names start with `prefix`. The visits are
  /// indexed on `petID` unless `indexed` is false: a sort through `visits` runs in the
  /// statement only with that index.
  static func graph(_ prefix: String, twoFiles: Bool = false, indexed: Bool = true) throws -> RecordGraph {
    let first = TemporaryLogDirectory.freshPath("a.sqlite")
    let second = twoFiles ? TemporaryLogDirectory.freshPath("b.sqlite") : first
    let visits = try SQLiteStore<Visit>(path: first, table: prefix + "visits")
    if indexed { try visits.createIndex("petID") }
    let graph = try RecordGraph(
      SQLiteStore<Person>(path: second, table: prefix + "people"),
      SQLiteStore<Pet>(path: first, table: prefix + "pets"),
      visits,
      SQLiteStore<Vet>(path: second, table: prefix + "vets"))
    try data.insert(into: graph)
    return graph
  }

  static func memoryGraph() throws -> RecordGraph {
    let graph = try RecordGraph(MemoryStore<Person>(), MemoryStore<Pet>(), MemoryStore<Visit>(), MemoryStore<Vet>())
    try data.insert(into: graph)
    return graph
  }

  /// The ids plain Swift gives: the pets that pass `holds`, in store order, sorted stably by
  /// `keys`, then windowed.
  static func reference(
    _ holds: (Pet) -> Bool, _ keys: [(value: (Pet) -> FieldValue, descending: Bool)], offset: Int, limit: Int?
  ) -> [Int] {
    let rows = data.pets.filter(holds).map { pet in (pet.id, keys.map { $0.value(pet) }) }
    let sorted = rows.enumerated().sorted { a, b in
      for (i, key) in keys.enumerated() {
        let c = FieldValue._order(a.element.1[i], b.element.1[i], .binary)
        if c != 0 { return key.descending ? c > 0 : c < 0 }
      }
      return a.offset < b.offset
    }.map(\.element.0)
    let start = min(offset, sorted.count)
    let end = limit.map { min(sorted.count, start + $0) } ?? sorted.count
    return Array(sorted[start..<end])
  }

  /// The statements that read rows of a table whose name starts with `prefix` while
  /// `body` runs (not the reader's checks of keys and kinds).
  static func statements<T>(_ prefix: String, _ body: () throws -> T) rethrows -> (T, [String]) {
    let seen = Mutex<[String]>([])
    let result = try _SQLiteConnection._watchStatements({ sql in
      guard sql.hasPrefix("SELECT body FROM \"\(prefix)") || sql.hasPrefix("SELECT count(*) FROM \"\(prefix)")
      else { return }
      seen.withLock { $0.append(sql) }
    }, during: body)
    return (result, seen.withLock { $0 })
  }

  /// Seeded random sorts through to-one values and to-many `@count`, `@sum`, `@avg`, `@max`
  /// and `@min`, with filters (through relations too), a second key, limits and offsets:
  /// stores in one file (the sort in the statement), in two files and in memory (the
  /// related values read, the sort in process) and plain Swift give the same ids.
  @Test func randomSortsThroughRelationsAgreeOnEveryRoad() async throws {
    let oneFile = try Self.graph("rs1_")
    let twoFiles = try Self.graph("rs2_", twoFiles: true)
    let memory = try Self.memoryGraph()
    var rng = SeededRandom(seed: 0x50_27)
    var pushed = 0
    for round in 0..<60 {
      let related = Self.relatedKeys.randomElement(using: &rng)!
      let filter = Self.filters.randomElement(using: &rng)!
      var keys: [(key: String, value: @Sendable (Pet) -> FieldValue, descending: Bool)] = [
        (related.key, related.value, Bool.random(using: &rng))
      ]
      if Bool.random(using: &rng) {
        let own = Self.ownKeys.randomElement(using: &rng)!
        keys.append((own.key, own.value, Bool.random(using: &rng)))
      }
      if Int.random(in: 0..<4, using: &rng) == 0 {
        let second = Self.relatedKeys.randomElement(using: &rng)!
        keys.append((second.key, second.value, Bool.random(using: &rng)))
      }
      let offset = Int.random(in: 0..<3, using: &rng) == 0 ? Int.random(in: 0...40, using: &rng) : 0
      let limit = Bool.random(using: &rng) ? Int.random(in: 1...30, using: &rng) : nil
      let expected = Self.reference(
        filter.holds, keys.map { ($0.value, $0.descending) }, offset: offset, limit: limit)
      func query(_ graph: RecordGraph) -> RequestSet<Pet> {
        var set = graph.records(Pet.self)
        if let format = filter.format { set = set.filter(format) }
        for key in keys { set = set.sortBy(key.key, order: key.descending ? .descending : .ascending) }
        if offset > 0 { set = set.offset(offset) }
        if let limit { set = set.limit(limit) }
        return set
      }
      let described =
        "round \(round): \(filter.format ?? "all") sorted by "
        + keys.map { "\($0.key) \($0.descending ? "DESC" : "ASC")" }.joined(separator: ", ")
        + " offset \(offset) limit \(limit.map(String.init) ?? "none")"
      let tally = _PlanCounter.Tally()
      let (ids, statements) = try Self.statements("rs1_") {
        try _PlanCounter.$tally.withValue(tally) { try query(oneFile).fetch().map(\.id) }
      }
      #expect(ids == expected, "one file, \(described)")
      if tally.relationQueries == 0 {
        pushed += 1
        #expect(statements.count == 1, "\(described): \(statements)")
      }
      #expect(try query(twoFiles).fetch().map(\.id) == expected, "two files, \(described)")
      #expect(try query(memory).fetch().map(\.id) == expected, "memory, \(described)")
      #expect(try await query(oneFile).async.fetch().map(\.id) == expected, "async, \(described)")
      #expect(try query(oneFile).fetchCount() == expected.count, "count, \(described)")
    }
    // Every sort here runs in the statement: none reads a related store.
    #expect(pushed == 60)
  }

  /// PostgreSQL stores in one database get the same store keys; PostgresStore's reader
  /// declines them (the default), so the related values are read, once, and the sort runs
  /// in process, in the same order as plain Swift.
  @Test(.enabled(if: PostgresServer.testsRun)) func inOneDatabaseTheSortRunsInProcessAlike() async throws {
    let url = try PostgresServer.url()
    let prefix = PostgresServer.freshTable("rsp") + "_"
    let graph = try RecordGraph(
      PostgresStore<Person>(url: url, table: prefix + "people"), PostgresStore<Pet>(url: url, table: prefix + "pets"),
      PostgresStore<Visit>(url: url, table: prefix + "visits"), PostgresStore<Vet>(url: url, table: prefix + "vets"))
    try Self.data.insert(into: graph)
    var rng = SeededRandom(seed: 0x9E_57)
    for round in 0..<12 {
      let related = Self.relatedKeys.randomElement(using: &rng)!
      let filter = Self.filters.randomElement(using: &rng)!
      let descending = Bool.random(using: &rng)
      let limit = Int.random(in: 1...40, using: &rng)
      let expected = Self.reference(filter.holds, [(related.value, descending)], offset: 0, limit: limit)
      var set = graph.records(Pet.self)
      if let format = filter.format { set = set.filter(format) }
      set = set.sortBy(related.key, order: descending ? .descending : .ascending).limit(limit)
      let tally = _PlanCounter.Tally()
      let ids = try _PlanCounter.$tally.withValue(tally) { try set.fetch().map(\.id) }
      #expect(ids == expected, "round \(round): \(filter.format ?? "all") by \(related.key)")
      #expect(tally.relationQueries >= 1, "round \(round): the related values are read")
      #expect(try await set.async.fetch().map(\.id) == expected, "round \(round), async")
    }
    let plan = graph.records(Pet.self).sortBy("owner.name").limit(3).explain()
    #expect(plan.contains("sort by owner.name, 1 query on PostgresStore<Person>"), "\(plan)")
    #expect(plan.contains("the store sorts by no value of another store"), "\(plan)")
  }

  /// Each related key alone, sorted both ways with a limit: one statement that orders by
  /// a subquery on the related table, no query on a related store, and `explain()` shows
  /// the subquery in the statement and no related read.
  @Test func eachSortThroughARelationIsOneStatement() throws {
    let graph = try Self.graph("rso_")
    for (key, value) in Self.relatedKeys {
      for descending in [false, true] {
        let expected = Self.reference({ _ in true }, [(value, descending)], offset: 0, limit: 25)
        let set = graph.records(Pet.self).sortBy(key, order: descending ? .descending : .ascending).limit(25)
        let tally = _PlanCounter.Tally()
        let (ids, statements) = try Self.statements("rso_") {
          try _PlanCounter.$tally.withValue(tally) { try set.fetch().map(\.id) }
        }
        #expect(ids == expected, "\(key)")
        #expect(statements.count == 1, "\(key): \(statements)")
        #expect(statements.first?.contains(" AS rs_r WHERE ") == true, "\(key): \(statements)")
        #expect(tally.relationQueries == 0, "\(key): no query on a related store")
        let plan = set.explain()
        #expect(plan.contains("sort by \(key) in the statement, as a subquery on rso_"), "\(plan)")
        #expect(plan.contains("AS rs_r WHERE"), "\(plan)")
        #expect(!plan.contains("1 query on"), "\(plan)")
        #expect(!plan.contains("in process"), "\(plan)")
      }
    }
    // The exact lines for one key of each kind.
    let byName = graph.records(Pet.self).sortBy("owner.name").limit(3).explain()
    #expect(
      byName.contains(
        "relation Pet.owner (to-one → Person): sort by owner.name in the statement, as a subquery on rso_people: "
          + "(SELECT name FROM rso_people WHERE id == ownerID)"), "\(byName)")
    #expect(
      byName.contains(
        "ORDER BY (SELECT json_extract(rs_r.body, '$.\"name\"') FROM \"rso_people\" AS rs_r "
          + "WHERE rs_r.id = \"rso_pets\".body -> '$.\"ownerID\"' LIMIT 1) ASC, seq"), "\(byName)")
    let byCount = graph.records(Pet.self).sortBy("visits.@count", order: .descending).limit(3).explain()
    #expect(
      byCount.contains(
        "ORDER BY (SELECT count(*) FROM \"rso_visits\" AS rs_r WHERE json_extract(rs_r.body, '$.\"petID\"') = "
          + "json_extract(\"rso_pets\".body, '$.\"id\"')) DESC, seq"), "\(byCount)")
  }

  /// Over stores in two files the same sort reads the related values in one query and
  /// sorts in process, as before, and says so.
  @Test func inTwoFilesTheSortReadsTheRelatedValues() throws {
    let graph = try Self.graph("rst_", twoFiles: true)
    let set = graph.records(Pet.self).sortBy("owner.name").limit(5)
    let plan = set.explain()
    #expect(
      plan.contains("relation Pet.owner (to-one → Person): sort by owner.name, 1 query on SQLiteStore<Person>"),
      "\(plan)")
    let tally = _PlanCounter.Tally()
    let ids = try _PlanCounter.$tally.withValue(tally) { try set.fetch().map(\.id) }
    #expect(ids == Self.reference({ _ in true }, [(Self.relatedKeys[0].value, false)], offset: 0, limit: 5))
    #expect(tally.relationQueries == 1)
  }

  /// In one file, a sort through a to-many whose foreign key has no index reads the related
  /// values once and sorts in process, and `explain()` says why and how to change it: a
  /// subquery per pet would read every visit for each pet. A to-one, found through the
  /// related table's `id` column, needs no index.
  @Test func aToManySortWithoutAnIndexOnTheForeignKeyRunsInProcess() throws {
    let graph = try Self.graph("rsn_", indexed: false)
    for key in ["visits.@count", "visits.@sum.cost"] {
      let set = graph.records(Pet.self).sortBy(key, order: .descending).limit(7)
      let plan = set.explain()
      #expect(plan.contains("the key petID of rsn_visits has no index"), "\(plan)")
      #expect(plan.contains("createIndex(\"petID\")"), "\(plan)")
      let tally = _PlanCounter.Tally()
      let ids = try _PlanCounter.$tally.withValue(tally) { try set.fetch().map(\.id) }
      let value = Self.relatedKeys.first { $0.key == key }!.value
      #expect(ids == Self.reference({ _ in true }, [(value, true)], offset: 0, limit: 7), "\(key)")
      #expect(tally.relationQueries == 1, "\(key)")
    }
    let owner = graph.records(Pet.self).sortBy("owner.name").limit(5)
    #expect(!owner.explain().contains("1 query on"), "\(owner.explain())")
    #expect(try owner.fetch().map(\.id) == Self.reference({ _ in true }, [(Self.relatedKeys[0].value, false)], offset: 0, limit: 5))
  }

  /// A related value that has held integers, text and nil orders as it does in process:
  /// nil first, then numbers by value, then text by scalars; one that has held Booleans
  /// and arrays too (ordered through the engine's collation) as well.
  @Test func mixedKindsOrderAsInProcess() async throws {
    let path = TemporaryLogDirectory.freshPath("mixed.sqlite")
    let oneFile = try RecordGraph(
      SQLiteStore<Holder>(path: path, table: "rsm_holders"), SQLiteStore<Badge>(path: path, table: "rsm_badges"))
    let memory = try RecordGraph(MemoryStore<Holder>(), MemoryStore<Badge>())
    let badges: [Badge] = [
      Badge(id: 1, rank: .number(7), mark: .flag(true)), Badge(id: 2, rank: .text("b"), mark: .list([2, 1])),
      Badge(id: 3, rank: nil, mark: .number(-3)), Badge(id: 4, rank: .number(-2), mark: .text("a")),
      Badge(id: 5, rank: .text("A"), mark: .flag(false)), Badge(id: 6, rank: .number(7), mark: nil),
      Badge(id: 7, rank: .text("é"), mark: .list([])), Badge(id: 8, rank: .number(100), mark: .number(2)),
    ]
    var holders: [Holder] = []
    var rng = SeededRandom(seed: 0x3A1)
    for id in 1...80 {
      // Some hold no badge, some a badge id no badge has.
      let roll = Int.random(in: 0..<10, using: &rng)
      holders.append(Holder(id: id, badgeID: roll == 0 ? nil : roll == 1 ? 99 : Int.random(in: 1...8, using: &rng)))
    }
    for graph in [oneFile, memory] {
      try graph.insert(contentsOf: badges)
      try graph.insert(contentsOf: holders)
    }
    let byID = Dictionary(uniqueKeysWithValues: badges.map { ($0.id, $0) })
    func value(_ h: Holder, _ key: String) throws -> FieldValue {
      guard let badge = h.badgeID.flatMap({ byID[$0] }) else { return .null }
      let v = key == "badge.rank" ? badge.rank : badge.mark
      return try v.map { try FieldValue(encoding: $0) } ?? .null
    }
    for key in ["badge.rank", "badge.mark"] {
      for descending in [false, true] {
        let values = try holders.map { try value($0, key) }
        let expected = holders.indices.sorted { a, b in
          let c = FieldValue._order(values[a], values[b], .binary)
          if c != 0 { return descending ? c > 0 : c < 0 }
          return a < b
        }.map { holders[$0].id }
        let order: RequestSortOrder = descending ? .descending : .ascending
        let tally = _PlanCounter.Tally()
        let (ids, statements) = try Self.statements("rsm_") {
          try _PlanCounter.$tally.withValue(tally) {
            try oneFile.records(Holder.self).sortBy(key, order: order).fetch().map(\.id)
          }
        }
        #expect(ids == expected, "\(key) \(order)")
        #expect(statements.count == 1, "\(key): \(statements)")
        #expect(tally.relationQueries == 0, "\(key)")
        #expect(try memory.records(Holder.self).sortBy(key, order: order).fetch().map(\.id) == expected)
        #expect(
          try await oneFile.records(Holder.self).sortBy(key, order: order).limit(9).async.fetch().map(\.id)
            == Array(expected.prefix(9)))
      }
    }
    // Integers, text and nil order by their SQL values; Booleans and arrays through the
    // engine's collation.
    let rank = oneFile.records(Holder.self).sortBy("badge.rank").explain()
    #expect(rank.contains("(SELECT json_extract(rs_r.body, '$.\"rank\"')"), "\(rank)")
    let mark = oneFile.records(Holder.self).sortBy("badge.mark").explain()
    #expect(mark.contains("coalesce((SELECT rs_r.body -> '$.\"mark\"'"), "\(mark)")
    #expect(mark.contains("'null') COLLATE rs_binary ASC"), "\(mark)")
  }

  /// A to-many key without a collection operator names many values per record: it throws
  /// `.invalidRelation` in one file as in two, before any statement runs.
  @Test func aToManyKeyWithoutAnOperatorStillThrows() throws {
    for graph in [try Self.graph("rse_"), try Self.graph("rsf_", twoFiles: true)] {
      let (error, statements) = Self.statements("rse_") {
        #expect(throws: RequestSetError.self) { try graph.records(Pet.self).sortBy("visits.cost").fetch() }
      }
      #expect(error?.code == .invalidRelation, "\(String(describing: error))")
      #expect(statements.isEmpty)
    }
  }

  /// A sort the store declines (a key of the related type no record holds) runs in
  /// process, reading the related values only then; the error that read meets is thrown
  /// by the fetch, as over stores in two files (not a trap, not swallowed).
  @Test func anErrorReadingTheRelatedValuesIsThrown() throws {
    for graph in [try Self.graph("rsx_"), try Self.graph("rsy_", twoFiles: true), try Self.memoryGraph()] {
      let set = graph.records(Pet.self).sortBy("owner.nickname").limit(3)
      let error = #expect(throws: RequestSetError.self) { try set.fetch() }
      #expect(error?.code == .unknownKey, "\(String(describing: error))")
    }
  }
}

/// A value of several kinds, encoded as the kind it holds.
enum MixedValue: Codable, Equatable, Sendable {
  case number(Int)
  case text(String)
  case flag(Bool)
  case list([Int])

  init(from decoder: any Decoder) throws {
    let c = try decoder.singleValueContainer()
    if let b = try? c.decode(Bool.self) {
      self = .flag(b)
    } else if let i = try? c.decode(Int.self) {
      self = .number(i)
    } else if let s = try? c.decode(String.self) {
      self = .text(s)
    } else {
      self = .list(try c.decode([Int].self))
    }
  }

  func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    switch self {
    case .number(let i): try c.encode(i)
    case .text(let s): try c.encode(s)
    case .flag(let b): try c.encode(b)
    case .list(let l): try c.encode(l)
    }
  }
}

struct Badge: Record, Equatable {
  var id: Int
  var rank: MixedValue?
  var mark: MixedValue?
}

struct Holder: Record, Equatable {
  var id: Int
  var badgeID: Int?
}

extension Holder: RelatedRecord {
  static let badge = ToOne<Holder, Badge>("badge", \.badgeID, allowsDangling: true)
  static let relations: [any Relation<Holder>] = [badge]
}
