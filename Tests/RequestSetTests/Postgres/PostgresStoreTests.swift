import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// A connection of the test's own, for SQL the store does not run (checking a table,
/// making a database, ANALYZE).
func postgresSQL(_ sql: String, _ parameters: [String?] = [], url: String? = nil) throws -> [[String?]] {
  let connection = try _PGConnection(_ConnectionString(url ?? PostgresServer.url()))
  let result = try connection.execute(sql, parameters)
  return (0..<result.count).map { row in (0..<result.columns).map { result.string(row, $0) } }
}

@Suite(.enabled(if: PostgresServer.testsRun), .ownThreads) struct PostgresStoreTests {
  func fresh<R: Record>(_ type: R.Type = Animal.self, table: String? = nil) throws -> PostgresStore<R> {
    try PostgresStore<R>(url: PostgresServer.url(), table: table ?? PostgresServer.freshTable())
  }

  @Test func aRefusedConnectionThrowsConnectionFailed() throws {
    // A loopback port nobody listens on.
    let url = "postgresql://postgres:\(PostgresServer.password)@127.0.0.1:1/postgres?connect_timeout=5"
    let error = try #require(throws: RequestSetError.self) { try PostgresStore<Animal>(url: url) }
    #expect(error.code == .connectionFailed)
    #expect(error.message.contains("127.0.0.1"))
    #expect(!error.description.contains(PostgresServer.password))
    #expect(error.message.contains("postgresql://postgres:***@127.0.0.1:1/postgres"))
  }

  @Test func thePasswordNeverShowsInDescriptionsErrorsOrExplain() throws {
    let server = try PostgresServer.shared.get()
    let secret = PostgresServer.password
    let url = server.url(user: PostgresServer.passwordUser, password: secret)
    let store = try PostgresStore<Animal>(url: url, table: PostgresServer.freshTable())
    try store.insert(contentsOf: Animal.zoo)
    #expect(!store.description.contains(secret))
    #expect(store.description.contains("***"))
    let explanation = try store.queryReader().explain(
      StoreQuery(filter: .condition(try StoreCondition("age", .greaterThan, 3))))
    #expect(!explanation.description.contains(secret))
    // A failed statement's error: the table dropped under the store.
    try PostgresStore<Animal>.dropTable(url: url, table: store._table)
    let error = try #require(throws: RequestSetError.self) { try store.insert(Animal.zoo[0]) }
    #expect(!error.description.contains(secret))
    // key=value form, quoted, and a URI's query parameter.
    for form in [
      "host=127.0.0.1 port=1 user=x password=\(secret) connect_timeout=5",
      "host=127.0.0.1 port=1 user=x password='\(secret)' connect_timeout=5",
      "postgresql://x@127.0.0.1:1/db?password=\(secret)&connect_timeout=5",
    ] {
      let error = try #require(throws: RequestSetError.self) { try PostgresStore<Animal>(url: form) }
      #expect(error.code == .connectionFailed)
      #expect(!error.description.contains(secret), "\(form)")
      #expect(_ConnectionString(form).redacted.contains("***"))
      #expect(!_ConnectionString(form).redacted.contains(secret))
    }
  }

  @Test func redactionKeepsEverythingButThePassword() {
    #expect(
      _ConnectionString("postgresql://u:p%40ss@h:5/db?sslmode=require").redacted
        == "postgresql://u:***@h:5/db?sslmode=require")
    #expect(
      _ConnectionString("host=h password='a b\\' c' sslmode=disable").redacted
        == "host=h password=*** sslmode=disable")
    #expect(_ConnectionString("host=h user=u").redacted == "host=h user=u")
    #expect(_ConnectionString("postgres://u:pw@h/db").redacted == "postgres://u:***@h/db")
  }

  @Test func sslmodePassesThroughToLibpq() throws {
    // The test server has no TLS: libpq refuses `sslmode=require`, which it can do only if
    // the setting reached it.
    let url = try PostgresServer.url() + "?sslmode=require"
    let error = try #require(throws: RequestSetError.self) { try PostgresStore<Animal>(url: url) }
    #expect(error.code == .connectionFailed)
    #expect(error.message.contains("SSL"))
  }

  @Test func aTableOfAnotherTypeIsASchemaMismatch() throws {
    let table = PostgresServer.freshTable()
    let animals = try fresh(Animal.self, table: table)
    try animals.insert(Animal.zoo[0])
    let error = try #require(throws: RequestSetError.self) { try fresh(Team.self, table: table) }
    #expect(error.code == .schemaMismatch)
    #expect(error.message.contains("holds Animal records, not Team"))
  }

  @Test func aTableRequestSetDidNotMakeIsASchemaMismatch() throws {
    let table = PostgresServer.freshTable()
    _ = try postgresSQL("CREATE TABLE \"\(table)\" (x integer)")
    let error = try #require(throws: RequestSetError.self) { try fresh(Animal.self, table: table) }
    #expect(error.code == .schemaMismatch)
    #expect(error.message.contains("is not a RequestSet table"))
  }

  @Test func aDatabaseThatIsNotRequestSetsIsASchemaMismatch() throws {
    let database = PostgresServer.freshTable("db")
    _ = try postgresSQL("CREATE DATABASE \"\(database)\"")
    let url = try PostgresServer.shared.get().url(database: database)
    _ = try postgresSQL("CREATE TABLE requestset_tables (name integer, other text)", url: url)
    let error = try #require(throws: RequestSetError.self) { try PostgresStore<Animal>(url: url) }
    #expect(error.code == .schemaMismatch)
    #expect(error.message.contains("requestset_tables that is not RequestSet's"))
  }

  @Test func saveKeepsStoreOrderAndApplyChecksTheVersionInsideTheTransaction() throws {
    let store = try fresh()
    try store.insert(contentsOf: Animal.zoo)
    var first = Animal.zoo[0]
    first.age = 99
    try store.save(first)
    #expect(try RequestSet(store).fetch().map(\.id) == Animal.zoo.map(\.id))
    #expect(try store.fetch(id: first.id)?.age == 99)
    let version = try store.snapshot().version
    try store.delete(id: Animal.zoo[1].id)
    let error = try #require(throws: RequestSetError.self) {
      try store.apply([.delete(id: Animal.zoo[2].id)], ifVersion: version)
    }
    #expect(error.code == .conflict)
    #expect(try store.fetch(id: Animal.zoo[2].id) != nil)
  }

  @Test func aSortKeysCollectionCheckIsRememberedForItsVersionOnly() throws {
    let store = try fresh()
    var animals = Animal.zoo.map { var a = $0; a.owner = nil; return a }
    try store.insert(contentsOf: animals)
    let reader = try store.queryReader()
    let version = reader.version
    // No owner is an object yet: the sort runs in SQL, and the scan's answer is kept.
    #expect(store._collectionKeys.answer(["owner"], version: version) == nil)
    #expect(reader.support(for: StoreSortKey("owner")) == .exact)
    #expect(store._collectionKeys.answer(["owner"], version: version)?.collections == false)
    #expect(try store.queryReader().support(for: StoreSortKey("owner")) == .exact)
    // A write makes a new version: its readers check again, and now decline.
    try store.save(Animal.zoo[0])
    animals[0] = Animal.zoo[0]
    #expect(store._collectionKeys.answer(["owner"], version: version + 1) == nil)
    #expect(
      try store.queryReader().support(for: StoreSortKey("owner"))
        == .none(reason: "the key owner holds arrays or objects, which PostgreSQL orders differently"))
    #expect(store._collectionKeys.answer(["owner"], version: version + 1)?.collections == true)
    // The reader opened before the write still sees its own version's answer.
    #expect(reader.support(for: StoreSortKey("owner")) == .exact)
    #expect(
      try RequestSet(store).sortBy("owner").fetch().map(\.id)
        == RequestSet(animals).sortBy("owner").fetch().map(\.id))
  }

  @Test func aSmallWindowAndALargeOneReadTheSameRecords() throws {
    let store = try fresh()
    let many = (1...1_500).map { Animal(id: $0, name: "n\($0)", species: "Cow", age: $0 % 97) }
    try store.insert(contentsOf: many)
    let reference = RequestSet(many)
    // Up to 1,024 records run as one statement, more through a cursor.
    for limit in [1, 10, 1_024, 1_025, 1_200] {
      #expect(
        try RequestSet(store).sortBy("age").offset(3).limit(limit).fetch().map(\.id)
          == reference.sortBy("age").offset(3).limit(limit).fetch().map(\.id), "limit \(limit)")
    }
  }

  @Test func aDuplicateInABatchInsertsNothing() throws {
    let store = try fresh()
    try store.insert(Animal.zoo[0])
    let error = try #require(throws: RequestSetError.self) { try store.insert(contentsOf: Animal.zoo) }
    #expect(error.code == .duplicateID)
    #expect(try store.snapshot().count == 1)
  }

  @Test func aServerStoppedMidUseGivesATypedErrorAndWritesNothingHalf() throws {
    let server = try PostgresServer.start()
    defer { server.stop() }
    let table = PostgresServer.freshTable()
    let store = try PostgresStore<Animal>(url: server.url(), table: table, connections: 2)
    try store.insert(contentsOf: Animal.zoo)
    let many = (1000..<21000).map { Animal(id: $0, name: "n\($0)", species: "s", age: $0 % 50) }
    // A large write in flight while the server goes away.
    let failed = Mutex<RequestSetError?>(nil)
    let writer = Thread {
      do { try store.insert(contentsOf: many) } catch let error as RequestSetError { failed.withLock { $0 = error } } catch {}
    }
    writer.start()
    usleep(150_000)
    try server.pause()
    while !writer.isFinished { usleep(10_000) }
    let error = try #require(throws: RequestSetError.self) { try store.insert(Animal(id: 1, name: "x", species: "y", age: 1)) }
    #expect(error.code == .connectionFailed)
    #expect(try #require(throws: RequestSetError.self) { try store.snapshot() }.code == .connectionFailed)
    try server.resume()
    let count = try PostgresStore<Animal>(url: server.url(), table: table).snapshot().count
    if let failed = failed.withLock({ $0 }) {
      #expect(failed.code == .connectionFailed)
      #expect(count == Animal.zoo.count)
    } else {
      #expect(count == Animal.zoo.count + many.count)
    }
    // The store's pool replaces its broken connections.
    try store.insert(Animal(id: 5000, name: "back", species: "y", age: 1))
    #expect(try store.fetch(id: 5000)?.name == "back")
  }

  @Test func hostileKeysAreBoundOrQuotedNeverSpliced() throws {
    let hostile = [
      "a'b", "a\"b", "x'; DROP TABLE requestset_tables; --", "back\\slash", "$1", "a}b{c", "a,b", "x\u{0}y",
      String(repeating: "k", count: 10_000), "--", ";",
    ]
    let store = try fresh(DynamicRecord.self)
    var records: [DynamicRecord] = []
    for (i, key) in hostile.enumerated() where !key.utf8.contains(0) {
      records.append(DynamicRecord(id: .int(i), fields: [key: .int(i), "other": .string(key)]))
    }
    try store.insert(contentsOf: records)
    let reader = try store.queryReader()
    for (i, key) in hostile.enumerated() {
      let condition = try StoreCondition(FieldValue.key(forFieldNames: [key]), .equal, i)
      if key.utf8.contains(0) {
        #expect(reader.support(for: condition) != .exact)
        #expect(throws: RequestSetError.self) { try store.createIndex(FieldValue.key(forFieldNames: [key])) }
        continue
      }
      #expect(reader.support(for: condition) == .exact, "\(key.prefix(20))")
      #expect(try reader.count(StoreQuery(filter: .condition(condition))) == 1, "\(key.prefix(20))")
      try store.createIndex(FieldValue.key(forFieldNames: [key]))
    }
    #expect(try postgresSQL("SELECT to_regclass('requestset_tables') IS NOT NULL") == [["t"]])
    #expect(try store.snapshot().count == records.count)
  }

  @Test func explainShowsPostgresPlanUsingTheIndex() throws {
    let store = try fresh()
    let many = (0..<5000).map { Animal(id: $0, name: "n\($0)", species: "s\($0 % 7)", age: $0) }
    try store.insert(contentsOf: many)
    try store.createIndex("age")
    _ = try postgresSQL("ANALYZE \"\(store._table)\"")
    let query = StoreQuery(filter: .condition(try StoreCondition("age", .equal, 42)))
    let explanation = try store.queryReader().explain(query)
    #expect(explanation.statement.hasPrefix("SELECT body FROM \"\(store._table)\" WHERE"))
    #expect(explanation.bindings.contains("42"))
    #expect(explanation.plan.contains { $0.contains("Index Scan") || $0.contains("Bitmap Index Scan") }, "\(explanation)")
    #expect(explanation.plan.contains { $0.contains(store._indexName("key age")) }, "\(explanation)")
    #expect(try store.queryReader().count(query) == 1)
  }

  @Test func commitsOfAnotherStoreOnTheTableArriveWithTheirChanges() async throws {
    let table = PostgresServer.freshTable()
    let writer = try fresh(Animal.self, table: table)
    let watcher = try fresh(Animal.self, table: table)
    let stream = watcher.commits(polling: .milliseconds(20))
    try writer.insert(Animal.zoo[0])
    try writer.delete(id: Animal.zoo[0].id)
    var seen: [StoreCommit<Animal>] = []
    for await commit in stream {
      seen.append(commit)
      if seen.count == 2 { break }
    }
    #expect(seen.map(\.version) == [1, 2])
    guard case .insert(let inserted)? = seen.first?.changes?.first else {
      Issue.record("no insert in \(seen)")
      return
    }
    #expect(inserted == Animal.zoo[0])
    guard case .delete(let id)? = seen.last?.changes?.first else {
      Issue.record("no delete in \(seen)")
      return
    }
    #expect(id == Animal.zoo[0].id)
    writer.close()
    watcher.close()
  }
}
