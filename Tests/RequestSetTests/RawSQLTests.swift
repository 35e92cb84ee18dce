import Foundation
import RequestSet
@testable import RequestSetPostgres
import RequestSetSQLite
import Synchronization
import Testing
import _RequestSetSQL

/// The raw SQL escape hatch (`records(sql:arguments:)`, `rows(sql:arguments:)`) on both
/// SQL stores: right against a plain array, lazy, read-only, bound values only, and every
/// bad statement a typed error that changes nothing.
@Suite(.ownThreads) struct RawSQLTests {
  /// One SQL store, with the dialect its statements need.
  struct Target: CustomStringConvertible, Sendable {
    let description: String
    let store: any RecordStore<Animal>
    let table: String
    let records: @Sendable (String, [any Encodable & Sendable]) -> RequestSet<Animal>
    let rows: @Sendable (String, [any Encodable & Sendable]) -> RequestSet<DynamicRecord>
    /// The SQL for an integer key of the body, and for a text key.
    let int: @Sendable (String) -> String
    let text: @Sendable (String) -> String
    /// The `n`th parameter (1-based).
    let parameter: @Sendable (Int) -> String

    static func open(_ kind: String) throws -> Target {
      if kind == "sqlite" {
        let store = try SQLiteStore<Animal>(path: TemporaryLogDirectory.freshPath("raw.sqlite"), table: "animals")
        return Target(
          description: kind, store: store, table: #""animals""#,
          records: { store.records(sql: $0, arguments: $1) }, rows: { store.rows(sql: $0, arguments: $1) },
          int: { "json_extract(body, '$.\($0)')" }, text: { "json_extract(body, '$.\($0)')" }, parameter: { _ in "?" })
      }
      let table = PostgresServer.freshTable("raw")
      let store = try PostgresStore<Animal>(url: try PostgresServer.url(), table: table)
      return Target(
        description: kind, store: store, table: "\"\(table)\"",
        records: { store.records(sql: $0, arguments: $1) }, rows: { store.rows(sql: $0, arguments: $1) },
        int: { "(body->>'\($0)')::bigint" }, text: { "(body->>'\($0)')" }, parameter: { "$\($0)" })
    }

    static var kinds: [String] { ["sqlite"] + (PostgresServer.testsRun ? ["postgres"] : []) }
  }

  /// Seeded random statements, each with filters, sorts and windows after it, against the
  /// same selection made on a plain array.
  @Test(arguments: Target.kinds)
  func randomQueriesAnswerAsTheArrayDoes(_ kind: String) throws {
    let t = try Target.open(kind)
    defer { t.store.close() }
    let animals = Animal.random(count: 300, seed: 41)
    try t.store.insert(contentsOf: animals)
    var rng = SeededRandom(seed: 7)
    for round in 0..<60 {
      let age = Int.random(in: 0...21, using: &rng)
      let species = Animal.speciesPool.randomElement(using: &rng)!
      let weight = Double(Int.random(in: 0...400, using: &rng)) / 4
      let limit = Int.random(in: 0...40, using: &rng)
      let sql = """
        SELECT body FROM \(t.table) WHERE \(t.int("age")) >= \(t.parameter(1)) AND \(t.text("species")) <> \(t.parameter(2))
        ORDER BY \(t.int("age")) DESC, seq
        """
      let set = t.records(sql, [age, species])
      let expected = animals.filter { $0.age >= age && $0.species != species }
        .enumerated().sorted { ($0.element.age, -$0.offset) > ($1.element.age, -$1.offset) }.map(\.element)
      #expect(set.map(\.id) == expected.map(\.id), "round \(round): \(kind)")
      let refined = set.filter(\.weight > weight).sortBy(\.name).limit(limit)
      let reference = expected.filter { $0.weight > weight }
        .enumerated().sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }.map(\.element)
        .prefix(limit)
      #expect(refined.map(\.id) == reference.map(\.id), "round \(round): \(kind) then filtered in process")
      #expect(set.count == expected.count)
    }
    // Rows: a grouped count, as the array counts.
    let rows = t.rows(
      "SELECT \(t.text("species")) AS species, count(*) AS n FROM \(t.table) GROUP BY 1", [])
    var counted: [String: Int] = [:]
    for row in rows {
      guard case .string(let s)? = row["species"], case .int(let n)? = row["n"] else {
        Issue.record("\(kind): a row that is not (species, n): \(row)")
        continue
      }
      counted[s] = n
    }
    #expect(counted == Dictionary(grouping: animals, by: \.species).mapValues(\.count))
    #expect(rows.filter("n > %d", 1_000).count == 0)
  }

  /// The statement runs when the set is read, not when it is made; a fresh set runs it
  /// again; the async API gives what the synchronous one gives.
  @Test(arguments: Target.kinds)
  func theStatementRunsWhenTheSetIsRead(_ kind: String) async throws {
    let t = try Target.open(kind)
    defer { t.store.close() }
    let dogs = t.records("SELECT body FROM \(t.table) WHERE \(t.text("species")) = \(t.parameter(1))", ["Dog"])
    try t.store.insert(Animal(id: 1, name: "Rex", species: "Dog", age: 3))
    #expect(dogs.map(\.name) == ["Rex"])
    try t.store.insert(Animal(id: 2, name: "Fido", species: "Dog", age: 5))
    #expect(dogs.count == 1, "one evaluation: one run")
    #expect(dogs.refreshed().count == 2)
    #expect(try await dogs.refreshed().async.fetch().map(\.id) == [1, 2])
    #expect(try await dogs.refreshed().async.fetchCount() == 2)
  }

  /// An argument is a value, never SQL: quotes and statements in it match nothing and
  /// run nothing.
  @Test(arguments: Target.kinds)
  func argumentsAreBoundNeverSpliced(_ kind: String) throws {
    let t = try Target.open(kind)
    defer { t.store.close() }
    try t.store.insert(contentsOf: Animal.random(count: 20, seed: 3))
    for hostile in ["x' OR '1'='1", "Dog'; DELETE FROM \(t.table); --", "\" OR 1=1 --", "$1", "?"] {
      let set = t.records("SELECT body FROM \(t.table) WHERE \(t.text("name")) = \(t.parameter(1))", [hostile])
      #expect(set.count == 0, "\(kind): \(hostile)")
    }
    #expect(RequestSet(t.store).count == 20)
  }

  /// Every statement that is not one read-only query, and every result that does not
  /// fit, is a typed error, and the store is as it was.
  @Test(arguments: Target.kinds)
  func badStatementsAreTypedErrorsAndChangeNothing(_ kind: String) throws {
    let t = try Target.open(kind)
    defer { t.store.close() }
    let animals = Animal.random(count: 10, seed: 5)
    try t.store.insert(contentsOf: animals)
    let p = t.parameter(1)
    var cases: [(String, [any Encodable & Sendable], RequestSetError.Code)] = [
      ("", [], .invalidSQL),
      ("  -- nothing\n /* at all */ ", [], .invalidSQL),
      ("SELEC body FROM \(t.table)", [], .invalidSQL),
      ("SELECT body FROM no_such_table", [], .invalidSQL),
      ("SELECT no_such_column FROM \(t.table)", [], .invalidSQL),
      ("DELETE FROM \(t.table)", [], .invalidSQL),
      ("UPDATE \(t.table) SET body = body", [], .invalidSQL),
      ("DROP TABLE \(t.table)", [], .invalidSQL),
      ("SELECT body FROM \(t.table); DELETE FROM \(t.table)", [], .invalidSQL),
      ("SELECT id FROM \(t.table)", [], .invalidSQL),
      ("SELECT NULL AS body", [], .invalidSQL),
      ("SELECT body FROM \(t.table) WHERE \(t.int("age")) > \(p)", [], .argumentCount),
      ("SELECT body FROM \(t.table) WHERE \(t.int("age")) > \(p)", [1, 2], .argumentCount),
      ("SELECT body FROM \(t.table)", [1], .argumentCount),
      ("SELECT '{\"id\": \"one\"}' AS body", [], .decodingFailed),
    ]
    if kind == "postgres" {
      cases.append(("WITH gone AS (DELETE FROM \(t.table) RETURNING body) SELECT body FROM gone", [], .invalidSQL))
      cases.append(("SELECT body FROM \(t.table) WHERE \(t.int("age")) > $2", [1], .argumentCount))
    }
    for (sql, arguments, code) in cases {
      let error = #expect(throws: RequestSetError.self, "\(kind): \(sql)") { try t.records(sql, arguments).fetch() }
      #expect(error?.code == code, "\(kind): \(sql): \(String(describing: error))")
      #expect(error?.message.isEmpty == false)
    }
    let rowCases: [String] =
      ["SELECT 1 AS a, 2 AS a", "SELECT 1 AS id, 2 AS id"] + (kind == "sqlite" ? ["SELECT x'00ff' AS data"] : [])
    for sql in rowCases {
      let error = #expect(throws: RequestSetError.self, "\(kind): \(sql)") { try t.rows(sql, []).fetch() }
      #expect(error?.code == .invalidSQL, "\(kind): \(sql): \(String(describing: error))")
    }
    // Writing through the result is refused: it has no store behind it.
    let all = t.records("SELECT body FROM \(t.table)", [])
    #expect(throws: RequestSetError.self) { try all.delete() }
    #expect((try? all.delete()) == nil)
    #expect(throws: RequestSetError.self) { try all.update("age", value: 1) }
    #expect(RequestSet(t.store).sortBy(\.id).map(\.id) == animals.map(\.id))
    #expect(RequestSet(t.store).filter(\.age == 1).count == animals.filter { $0.age == 1 }.count)
    // A closed store's statement throws `.closed`.
    t.store.close()
    let closed = #expect(throws: RequestSetError.self) { try t.records("SELECT body FROM \(t.table)", []).fetch() }
    #expect(closed?.code == .closed)
  }

  /// Each column type reads as the value the documentation names.
  @Test(arguments: Target.kinds)
  func rowColumnsHoldTheirTypesValues(_ kind: String) throws {
    let t = try Target.open(kind)
    defer { t.store.close() }
    if kind == "sqlite" {
      let row = try #require(try t.rows("SELECT 7 AS id, 2 AS i, 2.5 AS d, 'x' AS s, NULL AS n", []).fetch().first)
      #expect(row.id == .int(7))
      #expect(row["i"] == .int(2))
      #expect(row["d"] == .double(2.5))
      #expect(row["s"] == .string("x"))
      #expect(row["n"] == .null)
    } else {
      let row = try #require(
        try t.rows(
          """
          SELECT 7 AS id, true AS b, 2::int AS i, 2.5::float8 AS d, 1.25::numeric AS m, 'x'::text AS s,
          '{"a": [1, "z"]}'::jsonb AS j, NULL::int AS n
          """, []
        ).fetch().first)
      #expect(row.id == .int(7))
      #expect(row["b"] == .bool(true))
      #expect(row["i"] == .int(2))
      #expect(row["d"] == .double(2.5))
      #expect(row["m"] == .decimal(Decimal(string: "1.25")!))
      #expect(row["s"] == .string("x"))
      #expect(row["j"] == .object(["a": .array([.int(1), .string("z")])]))
      #expect(row["n"] == .null)
    }
    // Without an `id` column, the id is null.
    #expect(try t.rows("SELECT 1 AS one", []).fetch().first?.id == .null)
  }

  /// A cancelled async read stops the statement on the server (SQLite interrupts it,
  /// PostgreSQL cancels it) and throws `CancellationError`, rather than run it to the end.
  @Test(arguments: Target.kinds)
  func cancellingStopsALongStatement(_ kind: String) async throws {
    let t = try Target.open(kind)
    defer { t.store.close() }
    let sql =
      kind == "sqlite"
      ? "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000000) SELECT count(*) AS n FROM c"
      : "SELECT 1 AS n FROM pg_sleep(600)"
    let rows = t.rows(sql, [])
    let task = Task { try await rows.async.fetch() }
    try await Task.sleep(for: .milliseconds(300))
    task.cancel()
    let result = await task.result
    #expect(throws: CancellationError.self, "\(kind)") { try result.get() }
  }

  /// The tests that hook the statements every connection of the process sends, one at a
  /// time (other suites may add hooks of their own meanwhile: `_watchStatements` keeps
  /// each).
  @Suite(.serialized, .ownThreads(servedFirst: true)) struct StatementHook {
    /// A cancel that reaches PostgreSQL before the statement does (a cancel request travels
    /// on a connection of its own, and the server ignores one for a session between
    /// statements) is not lost: the store asks again while the statement runs. The
    /// statement is held back until the call is cancelled and 200 ms more, so the first
    /// request is ignored for certain; without the repeat the call would wait out its
    /// 600 s sleep (the store has no statement timeout here), past the test's time limit.
    @Test(.enabled(if: PostgresServer.testsRun), .timeLimit(.minutes(3)))
    func aCancelThatArrivesBeforeTheStatementIsNotLost() async throws {
      let store = try PostgresStore<Animal>(
        url: try PostgresServer.url(), table: PostgresServer.freshTable("rawcancel"), connections: 2,
        options: PostgresConnectionOptions(statementTimeout: nil))
      defer { store.close() }
      let held = SharedCounter()
      var heldBack = false
      let result = try await _PGConnection._watchStatements({ sql in
        guard sql.contains("/* held back */") else { return }
        held.add()
        while !StoreThreads.isCancelled { usleep(1_000) }
        usleep(200_000)
      }) { () async throws in
        let rows = store.rows(sql: "SELECT 1 AS n FROM pg_sleep(600) /* held back */")
        let task = Task { try await rows.async.fetch() }
        heldBack = try await eventually { held.value > 0 }
        task.cancel()
        return await task.result
      }
      #expect(heldBack, "the statement is held back")
      #expect(throws: CancellationError.self) { try result.get() }
    }

    /// PostgreSQL's parameters are counted where they are parameters, not in strings,
    /// quoted names, comments or dollar-quoted text.

    /// Hooks added while another is in place each see every statement, and removing one
    /// leaves the other: with one slot, a suite counting its statements replaced, then
    /// cleared, the hook that held back another test's statement, which then ran its whole
    /// `pg_sleep(600)` past that test's time limit.
    @Test func watchersAddedAtOnceKeepEachOther() {
      let probe = "/* two watchers probe */"
      let outer = SharedCounter(), inner = SharedCounter()
      _PGConnection._watchStatements({ if $0 == probe { outer.add() } }) {
        _PGConnection._willSend(probe)
        _PGConnection._watchStatements({ if $0 == probe { inner.add() } }) {
          _PGConnection._willSend(probe)
        }
        _PGConnection._willSend(probe)
      }
      _PGConnection._willSend(probe)
      #expect(outer.value == 3)
      #expect(inner.value == 1)
    }

    /// The hook is called at the same stack depth however often it was read: it used to
    /// gain two reabstraction thunks at each read (one per statement sent), and a test
    /// holding it while other tests sent thousands of statements overflowed the stack.
    @Test func readingTheHookDoesNotDeepenIt() {
      let probe = "/* hook depth probe */"
      let depths = Mutex<[Int]>([])
      _PGConnection._watchStatements({ sql in
        guard sql == probe else { return }
        let depth = Thread.callStackReturnAddresses.count
        depths.withLock { $0.append(depth) }
      }) {
        for _ in 0..<2_000 { _PGConnection._willSend(probe) }
      }
      let seen = depths.withLock { $0 }
      #expect(seen.count == 2_000)
      #expect(seen.first == seen.last, "the call went \((seen.last ?? 0) - (seen.first ?? 0)) frames deeper")
    }
  }

  @Test func dollarParametersAreCountedWhereTheyStand() {
    #expect(RawSQL.dollarParameters("SELECT 1") == 0)
    #expect(RawSQL.dollarParameters("SELECT $1, $2") == 2)
    #expect(RawSQL.dollarParameters("SELECT $3") == 3)
    #expect(RawSQL.dollarParameters("SELECT '$5', \"$6\", $1 -- $7\n /* $8 /* $9 */ */") == 1)
    #expect(RawSQL.dollarParameters("SELECT $tag$ $4 $tag$, $$ $5 $$, $2") == 2)
    #expect(RawSQL.dollarParameters("SELECT E'\\' $4', $1") == 1)
    #expect(RawSQL.dollarParameters("SELECT 'it''s $3', a$1") == 0)
    #expect(RawSQL.dollarParameters("SELECT $99999999999999999999999") > 0)
  }

  @Test func theLeadingKeywordSkipsSpaceAndComments() {
    #expect(RawSQL.leadingKeyword("  /* hi */ -- there\n select 1") == "select")
    #expect(RawSQL.leadingKeyword("WITH x AS (SELECT 1) SELECT * FROM x") == "WITH")
    #expect(RawSQL.leadingKeyword("/* unterminated") == nil)
    #expect(RawSQL.leadingKeyword("") == nil)
    #expect(RawSQL.leadingKeyword("(SELECT 1) UNION (SELECT 2)") == "SELECT")
  }
}
