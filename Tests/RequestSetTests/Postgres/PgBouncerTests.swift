import Foundation
import RequestSet
import Synchronization
import Testing

@testable import RequestSetPostgres

/// `PostgresStore` through PgBouncer in transaction mode (`PgBouncerServer`, a pool of 8
/// server sessions), opened with `pooler: .transaction`: reads, writes, transactions,
/// migrations, live sets, async calls and cancellation work and answer as a store on the
/// same table reached directly; what cannot work through a pooler is refused with a
/// message that says what to do. The relationship differential, live and async suites
/// take `StoreKind.pgbouncer` too (``StoreKind/throughPgBouncer``).
@Suite(
  .enabled(
    if: PgBouncerServer.testsRun,
    "pgbouncer is not installed (.ci/run installs it: apt-get install pgbouncer)"), .ownThreads)
struct PgBouncerTests {
  static let herd = Animal.random(count: 300, seed: 37)

  /// A store through PgBouncer on `table` (a fresh one by default).
  static func pooled(
    _ table: String = PostgresServer.freshTable(),
    options: PostgresConnectionOptions = .init(pooler: .transaction),
    migrations: Migrator = Migrator()
  ) throws -> PostgresStore<Animal> {
    try PostgresStore<Animal>(
      url: PgBouncerServer.url(), table: table, options: options, migrations: migrations)
  }

  @Test func readsWritesAndTransactionsAnswerAsDirectly() throws {
    let table = PostgresServer.freshTable()
    let pooled = try Self.pooled(table)
    defer { pooled.close() }
    let direct = try PostgresStore<Animal>(url: PostgresServer.url(), table: table)
    defer { direct.close() }
    var reference = Self.herd
    try pooled.insert(contentsOf: reference)
    reference[0].age += 10
    try pooled.save(reference[0])
    try pooled.delete(id: reference[1].id)
    reference.remove(at: 1)
    try pooled.transaction { t in
      t.insert(Animal(id: 9_001, name: "Pia", species: "Cat", age: 2))
      t.delete(id: reference[2].id)
    }
    reference.remove(at: 2)
    reference.append(Animal(id: 9_001, name: "Pia", species: "Cat", age: 2))
    // A transaction that throws leaves nothing behind.
    #expect(throws: RequestSetError.self) {
      try pooled.transaction { t in
        t.insert(Animal(id: 9_002, name: "Gone", species: "Cat", age: 2))
        t.insert(Animal(id: 9_001, name: "Dup", species: "Cat", age: 2))
      }
    }
    let queries: [(RequestSet<Animal>) -> RequestSet<Animal>] = [
      { $0 },
      { $0.filter("species", value: "Cow").sortBy(\.age).sortBy(\.id).limit(7) },
      { $0.filter(\.age > 4).sortBy("name", "id").offset(3) },
      { $0.filter("owner.city", value: "Oslo").sortBy(\.weight, order: .descending).sortBy(\.id) },
    ]
    let sorted = reference.sorted { $0.id < $1.id }
    #expect(try RequestSet(pooled).sortBy(\.id).fetch() == sorted)
    for query in queries {
      let through = query(RequestSet(pooled)).sortBy(\.id)
      let straight = query(RequestSet(direct)).sortBy(\.id)
      #expect(try through.fetch() == straight.fetch())
      #expect(through.count == straight.count)
      #expect(try through.sum(\.age) == straight.sum(\.age))
    }
    // A scan long enough for a cursor (more than one batch) reads inside one transaction.
    #expect(try RequestSet(pooled).filter(\.age >= 0).fetch().count == reference.count)
    #expect(try pooled.fetch(id: 9_001)?.name == "Pia")
  }

  /// The store's `statement_timeout` holds in each transaction: set with
  /// `set_config(…, true)` after each `BEGIN`, since the session is not the store's
  /// between transactions.
  @Test func theStatementTimeoutHoldsInEveryTransaction() throws {
    let store = try Self.pooled(options: .init(statementTimeout: .milliseconds(1500), pooler: .transaction))
    defer { store.close() }
    for _ in 0..<3 {
      let rows = try store.rows(sql: "SELECT current_setting('statement_timeout') AS t").values("t")
      #expect(rows.map { $0["t"] } == [.string("1500ms")])
    }
    let slow = #expect(throws: RequestSetError.self) {
      try store.rows(sql: "SELECT pg_sleep(30) AS s").fetch()
    }
    #expect(slow?.code == .connectionFailed)
    #expect(
      slow?.message.hasPrefix("PostgreSQL cancelled the statement (SQLSTATE 57014)") == true,
      "\(String(describing: slow))")
    // The store goes on through the pooler.
    #expect(try RequestSet(store).fetchCount() == 0)
  }

  /// Two stores opening one table with a migration at once: the locks that make them take
  /// turns are a transaction's (`pg_advisory_xact_lock` when opening, the table's row
  /// `FOR UPDATE` for the migration), so they hold through the pooler, and the migration
  /// runs once.
  @Test func aMigrationRunsOnceThroughThePooler() async throws {
    let table = PostgresServer.freshTable()
    let first = try Self.pooled(table)
    try first.insert(contentsOf: Animal.zoo)
    first.close()
    let migrations = Migrator([Migration("add-extra", .add("extra", default: .int(1)))])
    let stores = try await withThrowingTaskGroup(of: PostgresStore<DynamicRecord>.self) { group in
      for _ in 0..<2 {
        group.addTask {
          try PostgresStore<DynamicRecord>(
            url: PgBouncerServer.url(), table: table, options: .init(pooler: .transaction),
            migrations: migrations)
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    defer { for store in stores { store.close() } }
    #expect(
      try PostgresServer.scalar("SELECT count(*) FROM requestset_migrations WHERE tbl = '\(table)'") == "1")
    for store in stores {
      let extras = try RequestSet(store).values("extra")
      #expect(extras.count == Animal.zoo.count)
      #expect(extras.allSatisfy { $0["extra"] == .int(1) })
    }
  }

  /// A live set through the pooler moves after another store's commit: its commits
  /// stream polls the table's commit counter, since `LISTEN` does not work there.
  @Test func aLiveSetMovesAfterAnotherStoresCommit() async throws {
    let table = PostgresServer.freshTable()
    let watched = try Self.pooled(
      table, options: .init(pooler: .transaction, commitDetection: .poll(every: .milliseconds(100))))
    defer { watched.close() }
    let writer = try Self.pooled(table)
    defer { writer.close() }
    try writer.insert(contentsOf: Array(Animal.zoo.prefix(3)))
    let reader = StateReader(RequestSet(watched).sortBy(\.id))
    let first = try #require(await reader.next())
    #expect(first.records.map(\.id) == Array(Animal.zoo.prefix(3)).map(\.id).sorted())
    try writer.insert(Animal(id: 9_100, name: "Late", species: "Dog", age: 1))
    var state = try #require(await reader.next())
    while !state.records.contains(where: { $0.id == 9_100 }) { state = try #require(await reader.next()) }
    #expect(state.records.count == 4)
    // The direct writer's commit reaches it the same way.
    let direct = try PostgresStore<Animal>(url: PostgresServer.url(), table: table)
    defer { direct.close() }
    try direct.delete(id: 9_100)
    state = try #require(await reader.next())
    while state.records.contains(where: { $0.id == 9_100 }) { state = try #require(await reader.next()) }
    #expect(state.records.count == 3)
  }

  /// A live set through the pooler never sends `LISTEN` (nor `UNLISTEN`) on any of its
  /// store's connections, yet moves after another store's commits, through the pooler and
  /// directly: `pooler: .transaction` makes automatic commit detection poll the table's
  /// commit counter. The same watch on a store reached directly sees its `LISTEN`, so it
  /// would see one sent through the pooler.
  @Test func aLiveSetThroughThePoolerNeverListensYetMoves() async throws {
    let table = PostgresServer.freshTable()
    // Connection strings of this test's own (an application_name no other test uses), so
    // the watch sees this test's watched stores only, among the suites running at once.
    let pooledURL = try PgBouncerServer.url() + "?application_name=\(table)_pooled"
    let directURL = try PostgresServer.url() + "?application_name=\(table)_direct"
    let writer = try Self.pooled(table)
    defer { writer.close() }
    let direct = try PostgresStore<Animal>(url: PostgresServer.url(), table: table)
    defer { direct.close() }
    try writer.insert(contentsOf: Array(Animal.zoo.prefix(3)))

    /// The statements a live set's store on `url` sends while the live set sees a commit
    /// through the pooler and one made directly.
    func statements(_ url: String, _ options: PostgresConnectionOptions, _ id: Int) async throws -> [String] {
      let sent = Mutex<[String]>([])
      try await _PGConnection._watchStatements(
        sentThrough: url, { sql, _ in sent.withLock { $0.append(sql) } }
      ) {
        let watched = try PostgresStore<Animal>(url: url, table: table, options: options)
        defer { watched.close() }
        let reader = StateReader(RequestSet(watched).sortBy(\.id))
        let first = try #require(await reader.next())
        #expect(first.records.map(\.id) == Animal.zoo.prefix(3).map(\.id).sorted())
        try await writer.async.insert(Animal(id: id, name: "Late", species: "Dog", age: 1))
        var state = try #require(await reader.next())
        while !state.records.contains(where: { $0.id == id }) { state = try #require(await reader.next()) }
        try await direct.async.delete(id: id)
        state = try #require(await reader.next())
        while state.records.contains(where: { $0.id == id }) { state = try #require(await reader.next()) }
        #expect(state.records.count == 3)
      }
      return sent.withLock { $0 }
    }

    let pooled = try await statements(pooledURL, .init(pooler: .transaction), 9_300)
    let listens = pooled.filter { $0.uppercased().contains("LISTEN") }
    #expect(listens == [], "sent through the pooler: \(listens)")
    // It learned of the commits by reading the commit counter.
    #expect(pooled.contains("SELECT version FROM requestset_tables WHERE name = $1"), "\(pooled)")
    // The control: reached directly, the same live set listens, and the watch sees it.
    let straight = try await statements(directURL, .init(), 9_301)
    #expect(straight.contains("LISTEN requestset"), "\(straight)")
  }

  /// Async reads and writes answer as the synchronous ones, and a cancelled async read
  /// stops its statement on the server: the cancel request goes through PgBouncer to the
  /// session running it.
  @Test func asyncCallsAndACancelThroughThePooler() async throws {
    let table = PostgresServer.freshTable()
    let store = try Self.pooled(table)
    defer { store.close() }
    try await store.async.insert(contentsOf: Array(Self.herd.prefix(50)))
    let cows = RequestSet(store).filter("species", value: "Cow").sortBy(\.id)
    #expect(try await cows.async.fetch() == cows.refreshed().fetch())
    #expect(try await cows.async.fetchCount() == Self.herd.prefix(50).filter { $0.species == "Cow" }.count)
    try PostgresServer.execute(
      """
      ALTER TABLE "\(table)" RENAME TO "\(table)_data";
      CREATE VIEW "\(table)" AS SELECT * FROM "\(table)_data" WHERE (SELECT true FROM pg_sleep(1000));
      """)
    let task = Task { try await RequestSet(store).filter("species", value: "Cow").async.fetch() }
    try await runnableSleep(0.5)
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
  }

  /// `.listen` cannot work through a transaction pooler: opening says so and what to
  /// use; so does a poll interval that is not positive.
  @Test func optionsThatCannotWorkThroughThePoolerAreRefused() throws {
    let listen = #expect(throws: RequestSetError.self) {
      try Self.pooled(options: .init(pooler: .transaction, commitDetection: .listen))
    }
    #expect(listen?.code == .invalidOptions)
    #expect(
      listen?.message
        == "PostgresConnectionOptions.commitDetection is .listen, which does not work through a transaction pooler "
        + "(pooler: .transaction): a notification goes to whichever client holds the listening session. "
        + "Use .automatic or .poll(every:), or connect to the server directly.")
    let zero = #expect(throws: RequestSetError.self) {
      try Self.pooled(options: .init(pooler: .transaction, commitDetection: .poll(every: .zero)))
    }
    #expect(zero?.code == .invalidOptions)
    #expect(
      zero?.message
        == "PostgresConnectionOptions.commitDetection's poll interval is 0.0 seconds; it must be positive.")
    // A session setting in the connection string (libpq's `options`) is refused by
    // PgBouncer; the error says what to do instead.
    let startup = #expect(throws: RequestSetError.self) {
      try PostgresStore<Animal>(
        url: PgBouncerServer.url() + "?options=-csearch_path%3Dpublic", table: PostgresServer.freshTable(),
        options: .init(pooler: .transaction))
    }
    #expect(startup?.code == .connectionFailed)
    #expect(
      startup?.message.contains("unsupported startup parameter: options") == true,
      "\(String(describing: startup))")
    #expect(
      startup?.message.hasSuffix(
        "A pooler such as PgBouncer refuses session settings in the connection string: remove the setting "
          + "(set it for the role instead: ALTER ROLE … SET …), or list the parameter in PgBouncer's "
          + "ignore_startup_parameters, which drops it.") == true)
    // Automatic detection polls through the pooler and listens directly.
    #expect(
      PostgresConnectionOptions(pooler: .transaction)._commitDetection == .poll(every: .milliseconds(250)))
    #expect(PostgresConnectionOptions()._commitDetection == .listen)
  }
}
