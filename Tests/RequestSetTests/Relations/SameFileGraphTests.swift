import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetSQLite

/// SQLite stores in one database file answer a condition through a relation in one
/// statement: a subquery on the related table, not a list of ids read first. Stores in
/// two files answer the same through the semi-join. Serialized: the statement hook is
/// process-wide (each test counts only its own tables' statements).
@Suite(.serialized, .ownThreads(servedFirst: true)) struct SameFileGraphTests {
  static let data = ClinicData.generate(people: 60, pets: 400, visits: 700, vets: 9, seed: 0x5A3E)

  /// The relation conditions that run as subqueries, with their answers in plain Swift.
  static let conditions: [(format: String, holds: @Sendable (Pet) -> Bool)] = {
    let d = data
    return [
      ("owner.city == 'Oslo'", { d.owner($0)?.city == "Oslo" }),
      // A pet with no owner, or a dangling owner id, reads nil through the relation.
      ("owner.city != 'Oslo'", { d.owner($0)?.city != "Oslo" }),
      ("owner == nil", { d.owner($0) == nil }),
      ("ANY visits.cost > 80", { d.visits($0).contains { $0.cost > 80 } }),
      ("NONE visits.cost > 80", { !d.visits($0).contains { $0.cost > 80 } }),
      ("ALL visits.cost > 20", { d.visits($0).allSatisfy { $0.cost > 20 } }),
      ("visits.@count == 0", { d.visits($0).isEmpty }),
      ("visits.@count >= 3", { d.visits($0).count >= 3 }),
      ("visits.@count < 2", { d.visits($0).count < 2 }),
      // Nested: the visits' vet is a subquery inside the visits' subquery.
      ("ANY visits.vet.clinic == 'North'", { d.visits($0).contains { d.vet($0)?.clinic == "North" } }),
      ("owner.city == 'Rome' AND species == 'Cat'", { d.owner($0)?.city == "Rome" && $0.species == "Cat" }),
      // A SUBQUERY that reads only the child is the @count of the children it selects.
      (
        "SUBQUERY(visits, $v, $v.cost > 50 AND $v.day < 20).@count >= 1",
        { d.visits($0).filter { $0.cost > 50 && $0.day < 20 }.count >= 1 }
      ),
      ("SUBQUERY(visits, $v, $v.cost > 80)[SIZE] == 0", { !d.visits($0).contains { $0.cost > 80 } }),
      ("2 <= SUBQUERY(visits, $v, NOT $v.cost < 30).@count", { d.visits($0).filter { !($0.cost < 30) }.count >= 2 }),
      (
        "SUBQUERY(visits, $v, $v.vet.clinic == 'North' OR $v.vetID == nil).@count > 1",
        { d.visits($0).filter { d.vet($0)?.clinic == "North" || $0.vetID == nil }.count > 1 }
      ),
    ]
  }()

  /// `@sum`, `@avg`, `@min` and `@max` through a to-many, with their answers in plain
  /// Swift: a pet with no visits sums and averages 0 and has no minimum or maximum.
  static let aggregates: [(format: String, holds: @Sendable (Pet) -> Bool)] = {
    let d = data
    return [
      ("visits.@sum.cost > 150", { d.visits($0).reduce(0) { $0 + $1.cost } > 150 }),
      ("visits.@sum.cost == 0", { d.visits($0).reduce(0) { $0 + $1.cost } == 0 }),
      (
        "visits.@avg.cost < 40",
        { p in
          let costs = d.visits(p).map(\.cost)
          return (costs.isEmpty ? 0 : costs.reduce(0, +) / Double(costs.count)) < 40
        }
      ),
      ("visits.@max.cost >= 90", { d.visits($0).map(\.cost).max().map { $0 >= 90 } ?? false }),
      ("visits.@min.day <= 3", { d.visits($0).map(\.day).min().map { $0 <= 3 } ?? false }),
      ("visits.@max.cost == nil", { d.visits($0).isEmpty }),
    ]
  }()

  /// The four clinic stores, in one file or (with `twoFiles`) pets and visits in one file
  /// and people and vets in another; table names start with `prefix`.
  static func graph(_ prefix: String, twoFiles: Bool = false) throws -> RecordGraph {
    let first = TemporaryLogDirectory.freshPath("a.sqlite")
    let second = twoFiles ? TemporaryLogDirectory.freshPath("b.sqlite") : first
    let graph = try RecordGraph(
      SQLiteStore<Person>(path: second, table: prefix + "people"),
      SQLiteStore<Pet>(path: first, table: prefix + "pets"),
      SQLiteStore<Visit>(path: first, table: prefix + "visits"),
      SQLiteStore<Vet>(path: second, table: prefix + "vets"))
    try data.insert(into: graph)
    return graph
  }

  /// The statements that read rows of a table whose name starts with `prefix` while
  /// `body` runs (not the reader's checks of keys and kinds).
  static func statements<T>(_ prefix: String, _ body: () throws -> T) rethrows -> (T, [String]) {
    let seen = Mutex<[String]>([])
    let result = try _SQLiteConnection._watchStatements({ sql in
      guard
        sql.hasPrefix("SELECT body FROM \"\(prefix)") || sql.hasPrefix("SELECT count(*) FROM \"\(prefix)")
      else { return }
      seen.withLock { $0.append(sql) }
    }, during: body)
    return (result, seen.withLock { $0 })
  }

  @Test func eachRelationConditionIsOneStatementInOneFile() throws {
    let graph = try Self.graph("one_")
    let pets = graph.records(Pet.self)
    for (format, holds) in Self.conditions {
      let expected = Self.data.pets.filter(holds).map(\.id)
      let tally = _PlanCounter.Tally()
      let (ids, statements) = try Self.statements("one_") {
        try _PlanCounter.$tally.withValue(tally) { try pets.filter(format).sortBy("id").fetch().map(\.id) }
      }
      #expect(ids == expected, "\(format)")
      #expect(statements.count == 1, "\(format): \(statements)")
      #expect(statements.first?.contains("IN (SELECT json_extract(body") == true, "\(format)")
      #expect(tally.relationQueries == 0, "\(format): no query on a related store")
      let (count, counted) = try Self.statements("one_") { try pets.filter(format).fetchCount() }
      #expect(count == expected.count, "count of \(format)")
      #expect(counted.count == 1, "count of \(format): \(counted)")
    }
  }

  /// A to-many's `@sum`, `@avg`, `@min` or `@max` is a grouped subquery whose groups
  /// `rs_agg` reduces with the engine's own operator: one statement, no related query.
  @Test func eachAggregateThroughAToManyIsOneStatementInOneFile() async throws {
    let graph = try Self.graph("agg_")
    let pets = graph.records(Pet.self)
    for (format, holds) in Self.aggregates {
      let expected = Self.data.pets.filter(holds).map(\.id)
      let tally = _PlanCounter.Tally()
      let (ids, statements) = try Self.statements("agg_") {
        try _PlanCounter.$tally.withValue(tally) { try pets.filter(format).sortBy("id").fetch().map(\.id) }
      }
      #expect(ids == expected, "\(format)")
      #expect(statements.count == 1, "\(format): \(statements)")
      #expect(statements.first?.contains("GROUP BY 1 HAVING") == true, "\(format)")
      #expect(statements.first?.contains("rs_agg('@") == true, "\(format)")
      #expect(tally.relationQueries == 0, "\(format): no query on a related store")
      #expect(try pets.filter(format).fetchCount() == expected.count, "count of \(format)")
      #expect(
        try await pets.filter(format).sortBy("id").async.fetch().map(\.id) == expected, "async \(format)")
    }
    let lines = pets.filter("visits.@sum.cost > 150").explain().split(separator: "\n").map(String.init)
    #expect(
      lines.contains(
        "relation Pet.visits (to-many → Visit): in the statement, as a subquery on agg_visits: "
          + "id IN (SELECT petID FROM agg_visits GROUP BY petID HAVING @sum.cost > 150)"), "\(lines)")
    #expect(
      lines.contains {
        $0.contains(
          "statement: SELECT body FROM \"agg_pets\" WHERE json_extract(body, '$.\"id\"') IN (SELECT "
            + "json_extract(body, '$.\"petID\"') FROM \"agg_visits\" GROUP BY 1 HAVING "
            + "rs_cond(?, rs_agg('@sum', seq, body -> '$.\"cost\"')))")
      }, "\(lines)")
    // A parent with no children matches `@avg < 40` (it averages 0): not among the groups that fail.
    #expect(
      pets.filter("visits.@avg.cost < 40").explain().contains(
        "NOT id IN (SELECT petID FROM agg_visits GROUP BY petID HAVING NOT @avg.cost < 40)"))
  }

  /// The engine's operators where SQL's differ: integers whose sum overflows add up as
  /// doubles (SQL's `sum` throws), an empty group averages 0 (SQL's `avg` is NULL), text
  /// has a maximum but no sum (SQL's `sum` reads it as 0).
  @Test func aggregatesAnswerAsTheEngineWhereSQLDiffers() throws {
    let path = TemporaryLogDirectory.freshPath("edge.sqlite")
    let people = try SQLiteStore<Person>(path: path, table: "edge_people")
    let petsStore = try SQLiteStore<Pet>(path: path, table: "edge_pets")
    let graph = try RecordGraph(
      people, petsStore, SQLiteStore<Visit>(path: path, table: "edge_visits"),
      SQLiteStore<Vet>(path: path, table: "edge_vets"))
    for (id, name) in [(1, "Ann"), (2, "Bo"), (3, "Cy")] {
      try people.insert(Person(id: id, name: name, city: "Oslo", age: nil))
    }
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: Int.max, ownerID: 1))
    try petsStore.insert(Pet(id: 2, name: "Kit", species: "Cat", age: 1, ownerID: 1))
    try petsStore.insert(Pet(id: 3, name: "Zed", species: "Cat", age: 5, ownerID: 2))
    try petsStore.insert(Pet(id: 4, name: "Tom", species: "Dog", age: 6, ownerID: 2))
    let memory = try RecordGraph(
      MemoryStore<Person>(), MemoryStore<Pet>(), MemoryStore<Visit>(), MemoryStore<Vet>())
    try memory.insert(contentsOf: try graph.records(Person.self).fetch())
    try memory.insert(contentsOf: try graph.records(Pet.self).fetch())
    let owners = graph.records(Person.self)
    let cases: [(format: String, ids: [Int])] = [
      ("pets.@sum.age > 100", [1]),
      ("pets.@sum.age == 11", [2]),
      ("pets.@avg.age < 1", [3]),
      ("pets.@max.name == 'Zed'", [2]),
      ("pets.@sum.name == nil", [1, 2]),
    ]
    for (format, ids) in cases {
      let (found, statements) = try Self.statements("edge_") {
        try owners.filter(format).sortBy("id").fetch().map(\.id)
      }
      #expect(found == ids, "\(format)")
      #expect(statements.count == 1 && statements[0].contains("rs_agg("), "\(format): \(statements)")
      #expect(
        try memory.records(Person.self).filter(format).sortBy("id").fetch().map(\.id) == ids,
        "in memory: \(format)")
    }
  }

  @Test func theDataHasTheCasesSubqueriesMustGetRight() {
    let d = Self.data
    #expect(d.pets.contains { $0.ownerID == nil })
    #expect(d.pets.contains { $0.ownerID != nil && d.owner($0) == nil }, "a dangling owner id")
    #expect(d.pets.contains { d.visits($0).isEmpty }, "pets with no visits: NONE, ALL and @count == 0 hold")
  }

  @Test func storesInTwoFilesReadTheIdsFirstAndAnswerTheSame() throws {
    let graph = try Self.graph("two_", twoFiles: true)
    let pets = graph.records(Pet.self)
    for (format, holds) in Self.conditions {
      let expected = Self.data.pets.filter(holds).map(\.id)
      let tally = _PlanCounter.Tally()
      let ids = try _PlanCounter.$tally.withValue(tally) {
        try pets.filter(format).sortBy("id").fetch().map(\.id)
      }
      #expect(ids == expected, "\(format)")
      let acrossFiles = format.hasPrefix("owner") || format.contains("vet.")
      #expect(
        (tally.relationQueries > 0) == acrossFiles, "\(format): \(tally.relationQueries) related queries")
    }
    let explained = pets.filter("owner.city == 'Oslo'").explain()
    #expect(
      explained.contains("relation Pet.owner (to-one → Person): semi-join, 1 query on SQLiteStore<Person>"))
    #expect(!explained.contains("in the statement"))
  }

  @Test func explainShowsTheOneStatement() throws {
    let graph = try Self.graph("explain_")
    let pets = graph.records(Pet.self)
    let lines = pets.filter("owner.city == 'Oslo'").explain().split(separator: "\n").map(String.init)
    #expect(
      lines.prefix(3) == [
        "RequestSet<Pet> over SQLiteStore<Pet>",
        "relation Pet.owner (to-one → Person): in the statement, as a subquery on explain_people: "
          + "ownerID IN (SELECT id FROM explain_people WHERE city == \"Oslo\")",
        "stage 1: pushed to SQLiteStore<Pet>: WHERE ownerID IN (SELECT id FROM explain_people WHERE city == \"Oslo\")",
      ])
    #expect(
      lines.contains {
        $0.contains(
          "statement: SELECT body FROM \"explain_pets\" WHERE json_extract(body, '$.\"ownerID\"') IN "
            + "(SELECT json_extract(body, '$.\"id\"') FROM \"explain_people\" WHERE ")
      })
    #expect(!lines.contains { $0.contains("semi-join") })
    let counted = pets.filter("visits.@count == 0").explain()
    #expect(
      counted.contains(
        "relation Pet.visits (to-many → Visit): in the statement, as a subquery on explain_visits: "
          + "NOT id IN (SELECT petID FROM explain_visits GROUP BY petID HAVING NOT count == 0)"))
  }

  /// The subquery's key is read as the key's expression index reads it, so SQLite
  /// searches the index for the subquery's ids instead of scanning the table.
  @Test func anIndexOnTheForeignKeyServesTheStatement() throws {
    let path = TemporaryLogDirectory.freshPath("index.sqlite")
    let people = try SQLiteStore<Person>(path: path, table: "index_people")
    let petsStore = try SQLiteStore<Pet>(path: path, table: "index_pets")
    let graph = try RecordGraph(
      people, petsStore, SQLiteStore<Visit>(path: path, table: "index_visits"),
      SQLiteStore<Vet>(path: path, table: "index_vets"))
    try Self.data.insert(into: graph)
    try petsStore.createIndex("ownerID")
    let explained = graph.records(Pet.self).filter("owner.city == 'Oslo'").explain()
    #expect(explained.contains("plan: SEARCH index_pets USING INDEX"), "\(explained)")
  }

  /// A relation condition the store cannot run in its statement (here, in an OR with a
  /// closure, which runs in process) is read as ids, as across two files.
  @Test func aSubqueryThatRunsInProcessIsReadAsIds() throws {
    let graph = try Self.graph("mixed_")
    let pets = graph.records(Pet.self)
    let d = Self.data
    let set = pets.filter("owner.city == 'Oslo'")._with {
      $0.addFilter(.closure(_ClosureCondition { $0.age == 7 }), mode: .or)
    }
    let expected = d.pets.filter { d.owner($0)?.city == "Oslo" || $0.age == 7 }.map(\.id)
    #expect(try set.sortBy("id").fetch().map(\.id) == expected)
    let explained = set.explain()
    #expect(
      explained.contains("relation Pet.owner (to-one → Person): semi-join, 1 query on SQLiteStore<Person>"))
  }

  /// Text that is not NFC makes a table's rows not plain: SQL would compare its bytes, so
  /// the relation reads the ids through the engine's comparison instead.
  @Test func aRelatedTableSQLCannotCompareIsReadAsIds() throws {
    let path = TemporaryLogDirectory.freshPath("nfc.sqlite")
    let people = try SQLiteStore<Person>(path: path, table: "nfc_people")
    let petsStore = try SQLiteStore<Pet>(path: path, table: "nfc_pets")
    let graph = try RecordGraph(
      people, petsStore, SQLiteStore<Visit>(path: path, table: "nfc_visits"),
      SQLiteStore<Vet>(path: path, table: "nfc_vets"))
    try people.insert(Person(id: 1, name: "Ann", city: "Cafe\u{301}", age: nil))
    try people.insert(Person(id: 2, name: "Bo", city: "Oslo", age: nil))
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 1))
    try petsStore.insert(Pet(id: 2, name: "Kit", species: "Cat", age: 3, ownerID: 2))
    let set = graph.records(Pet.self).filter("owner.city == %@", "Caf\u{E9}")
    #expect(try set.fetch().map(\.id) == [1])
    #expect(set.explain().contains("semi-join"))
  }

  /// Each store has its own connection: a write one store committed is seen by the next
  /// read of a set through the other, in its one statement.
  @Test func aSubquerySeesWhatTheOtherStoreCommitted() throws {
    let path = TemporaryLogDirectory.freshPath("ryw.sqlite")
    let people = try SQLiteStore<Person>(path: path, table: "ryw_people")
    let petsStore = try SQLiteStore<Pet>(path: path, table: "ryw_pets")
    let graph = try RecordGraph(
      people, petsStore, SQLiteStore<Visit>(path: path, table: "ryw_visits"),
      SQLiteStore<Vet>(path: path, table: "ryw_vets"))
    try petsStore.insert(Pet(id: 1, name: "Rex", species: "Dog", age: 3, ownerID: 7))
    let pets = graph.records(Pet.self)
    #expect(try pets.filter("owner.city == 'Lima'").fetch().isEmpty)
    try people.insert(Person(id: 7, name: "Ann", city: "Lima", age: 40))
    let (ids, statements) = try Self.statements("ryw_") {
      try pets.filter("owner.city == 'Lima'").fetch().map(\.id)
    }
    #expect(ids == [1])
    #expect(statements.count == 1)
    #expect(try graph.delete(Person.self, id: 7))
    #expect(try pets.filter("owner.city == 'Lima'").fetch().isEmpty)
    #expect(try pets.filter("owner == nil").fetch().map(\.id) == [1], "the delete nullified the owner id")
  }

  /// A graph's delete through a set with a relation condition deletes what it selects.
  @Test func aGraphDeleteThroughARelationCondition() throws {
    let graph = try Self.graph("write_")
    let d = Self.data
    let doomed = d.pets.filter { d.visits($0).isEmpty }.map(\.id)
    let deleted = try graph.delete(graph.records(Pet.self).filter("visits.@count == 0"))
    #expect(deleted == doomed.count)
    #expect(
      try graph.records(Pet.self).sortBy("id").fetch().map(\.id)
        == d.pets.map(\.id).filter { !doomed.contains($0) })
  }

  /// The async forms run the same prepared query: the same answers, one statement.
  @Test func asyncReadsAgreeWithSyncOnes() async throws {
    let graph = try Self.graph("async_")
    let pets = graph.records(Pet.self)
    for (format, holds) in Self.conditions {
      let expected = Self.data.pets.filter(holds).map(\.id)
      #expect(try await pets.filter(format).sortBy("id").async.fetch().map(\.id) == expected, "\(format)")
      #expect(try await pets.filter(format).async.fetchCount() == expected.count, "count of \(format)")
    }
  }

  /// An update through a set with a relation condition is one UPDATE whose WHERE holds the
  /// subquery.
  @Test func anUpdateThroughARelationIsOneStatement() throws {
    let graph = try Self.graph("update_")
    let d = Self.data
    let oslo = Set(d.pets.filter { d.owner($0)?.city == "Oslo" }.map(\.id))
    let seen = Mutex<[String]>([])
    let changed = try _SQLiteConnection._watchStatements({ sql in
      if sql.hasPrefix("UPDATE \"update_") { seen.withLock { $0.append(sql) } }
    }) {
      try graph.records(Pet.self).filter("owner.city == 'Oslo'").update("age", value: 99)
    }
    #expect(changed == oslo.count)
    let updates = seen.withLock { $0 }
    #expect(updates.count == 1 && updates[0].contains("IN (SELECT json_extract(body"), "\(updates)")
    let aged = try graph.records(Pet.self).filter("age", value: 99).sortBy("id").fetch().map(\.id)
    #expect(aged == oslo.sorted())
  }

  /// Two spellings of one file name one database; `:memory:` names none.
  @Test func aStoreNamesItsFileCanonically() throws {
    let path = TemporaryLogDirectory.freshPath("canon.sqlite")
    let a = try SQLiteStore<Person>(path: path, table: "a")
    let dir = (path as NSString).deletingLastPathComponent
    let b = try SQLiteStore<Pet>(path: dir + "/./" + (path as NSString).lastPathComponent, table: "b")
    #expect(a.location?.database == b.location?.database)
    #expect(a.location?.table == "a")
    #expect(try SQLiteStore<Person>(path: ":memory:").location == nil)
  }
}
