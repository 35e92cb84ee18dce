import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// Writes PostgreSQL could not serialize (SQLSTATE 40001) or broke to end a deadlock
/// (40P01) run again, a bounded number of times, with the store at `READ COMMITTED` or
/// `SERIALIZABLE` (`PostgresConnectionOptions.isolation`).
@Suite(.enabled(if: PostgresServer.testsRun), .ownThreads) struct PostgresRetryTests {
  /// A store over `Animal.zoo` in a database of its own.
  static func store(_ options: PostgresConnectionOptions) throws -> (PostgresStore<Animal>, String) {
    let database = try PostgresPoolTests.freshDatabase()
    let url = try PostgresServer.url(database: database)
    let store = try PostgresStore<Animal>(url: url, table: "animals", options: options)
    try store.insert(contentsOf: Animal.zoo)
    return (store, url)
  }

  /// A real serialization failure: another session holds the table's row in
  /// `requestset_tables` while the store's SERIALIZABLE write waits for it, then changes
  /// it and commits. The write's snapshot is older than that commit, so PostgreSQL fails
  /// it with 40001; the store runs it again, and it goes through. At READ COMMITTED the
  /// same write waits and goes through the first time.
  @Test(arguments: [PostgresConnectionOptions.Isolation.serializable, .readCommitted])
  func aWriteThatMeetsAnotherCommitIsRetried(isolation: PostgresConnectionOptions.Isolation) async throws {
    let (store, url) = try Self.store(PostgresConnectionOptions(isolation: isolation))
    defer { store.close() }
    let database = try #require(url.split(separator: "/").last.map(String.init))
    let other = try _PGConnection(_ConnectionString(url))
    try other.execute("BEGIN")
    try other.execute("SELECT version FROM requestset_tables WHERE name = 'animals' FOR UPDATE")
    let writer = Task { try await onOwnThread { try store.insert(Animal(id: 100, name: "Late", species: "Cow", age: 1)) } }
    let monitor = try SessionSampler(database: database)
    #expect(try await eventually { try monitor.sessions(waitingForALock: true) == 1 })
    try other.execute("UPDATE requestset_tables SET version = version + 1 WHERE name = 'animals'")
    try other.execute("COMMIT")
    try await writer.value
    #expect(store._conflictRetries.load(ordering: .relaxed) == (isolation == .serializable ? 1 : 0))
    #expect(try store.fetch(id: 100)?.name == "Late")
  }

  /// Injected failures: a trigger raises 40001 (or 40P01) on the first `n` attempts. A
  /// write through a query and an insert go through after `n` retries, with the right
  /// count; one that always fails throws `.conflict` after `conflictRetries` retries, and
  /// writes nothing.
  @Test(arguments: ["40001", "40P01"])
  func injectedConflictsAreRetriedABoundedNumberOfTimes(state: String) throws {
    let (store, url) = try Self.store(PostgresConnectionOptions(isolation: .serializable, conflictRetries: 3))
    defer { store.close() }
    let other = try _PGConnection(_ConnectionString(url))
    // nextval is not rolled back with the failed attempt, so it counts attempts.
    try other.execute("CREATE SEQUENCE attempts")
    try other.execute("CREATE TABLE failing (n bigint NOT NULL)")
    try other.execute("INSERT INTO failing VALUES (2)")
    try other.execute(
      """
      CREATE FUNCTION fail_first() RETURNS trigger AS $$ BEGIN
        IF nextval('attempts') <= (SELECT n FROM failing) THEN
          RAISE EXCEPTION 'injected' USING ERRCODE = '\(state)';
        END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql
      """)
    try other.execute(
      "CREATE TRIGGER fail_first BEFORE INSERT OR UPDATE ON animals FOR EACH ROW EXECUTE FUNCTION fail_first()")
    // Two failures, then the update through a query goes through (one UPDATE statement).
    let n = try RequestSet(store).filter("species", value: "Cow").update("nickname", value: "Moo")
    #expect(n == Animal.zoo.filter { $0.species == "Cow" }.count)
    #expect(store._conflictRetries.load(ordering: .relaxed) == 2)
    #expect(try RequestSet(store).filter("nickname", value: "Moo").fetchCount() == n)

    // Always failing: 1 + 3 attempts, then `.conflict`; nothing written.
    try other.execute("SELECT setval('attempts', 1)")
    try other.execute("UPDATE failing SET n = 1000000")
    let error = #expect(throws: RequestSetError.self) {
      try store.insert(Animal(id: 100, name: "Never", species: "Cow", age: 1))
    }
    #expect(error?.code == .conflict)
    #expect(error?.message.hasPrefix("PostgreSQL could not serialize the write in 4 attempts (the last: ") == true)
    #expect(
      error?.message.hasSuffix(
        "Nothing of it was committed. Retry it later, or raise PostgresConnectionOptions.conflictRetries.") == true)
    #expect(store._conflictRetries.load(ordering: .relaxed) == 2 + 3)
    #expect(try store.fetch(id: 100) == nil)
    #expect(try other.execute("SELECT last_value FROM attempts").string(0, 0) == "5")
  }

  /// A stale `ifVersion` is the caller's to handle: `.conflict` at once, no retry.
  @Test func aStaleVersionIsNotRetried() throws {
    let (store, _) = try Self.store(PostgresConnectionOptions(isolation: .serializable))
    defer { store.close() }
    let version = try store.snapshot().version
    try store.insert(Animal(id: 100, name: "First", species: "Cow", age: 1))
    let error = #expect(throws: RequestSetError.self) {
      try store.apply([.insert(Animal(id: 101, name: "Second", species: "Cow", age: 1))], ifVersion: version)
    }
    #expect(error?.code == .conflict)
    #expect(store._conflictRetries.load(ordering: .relaxed) == 0)
  }

  @Test func conflictRetriesOutOfRangeAreInvalidOptions() {
    let error = #expect(throws: RequestSetError.self) {
      try PostgresStore<Animal>(url: "postgresql://x@127.0.0.1:1/db", options: PostgresConnectionOptions(conflictRetries: -1))
    }
    #expect(error?.code == .invalidOptions)
    #expect(error?.message == "PostgresConnectionOptions.conflictRetries is -1; it must be between 0 and 100.")
  }
}
