import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
import Testing

/// A SQL store kind the migration tests open by table.
enum SQLMigrationKind: String, CaseIterable, CustomStringConvertible, Sendable {
  case sqlite, postgres

  static var available: [SQLMigrationKind] { PostgresServer.testsRun ? [.sqlite, .postgres] : [.sqlite] }
  var description: String { rawValue }

  /// A fresh place: a database file, or a table name on the test server.
  func freshLocation() -> String {
    switch self {
    case .sqlite: return TemporaryLogDirectory.freshPath("pets.sqlite")
    case .postgres: return PostgresServer.freshTable("pets")
    }
  }

  func open<R: Record>(
    _ type: R.Type, at location: String, migrations: Migrator = Migrator(), migratesOnOpen: Bool = true
  ) throws -> any MigratingSQLStore<R> {
    switch self {
    case .sqlite:
      return try SQLiteStore<R>(path: location, table: "pets", migrations: migrations, migratesOnOpen: migratesOnOpen)
    case .postgres:
      return try PostgresStore<R>(
        url: PostgresServer.url(), table: location, migrations: migrations, migratesOnOpen: migratesOnOpen)
    }
  }
}

/// What the tests need of both SQL stores.
protocol MigratingSQLStore<Element>: RecordStore {
  var appliedMigrations: [String] { get }
  var pendingMigrations: [String] { get }
  @discardableResult func migrate() throws -> [String]
  func createIndex(_ key: String, unique: Bool) throws
  func close()
}
extension SQLiteStore: MigratingSQLStore {}
extension PostgresStore: MigratingSQLStore {}

@Suite("Migrations on the SQL stores", .ownThreads)
struct SQLMigrationTests {
  func v1(_ kind: SQLMigrationKind, _ n: Int = 300) throws -> (location: String, records: [PetV1]) {
    let location = kind.freshLocation()
    let records = PetMigrations.records(n)
    let store = try kind.open(PetV1.self, at: location)
    try store.insert(contentsOf: records)
    try store.createIndex("weight", unique: false)
    try store.createIndex("nickname", unique: false)
    store.close()
    return (location, records)
  }

  @Test(arguments: SQLMigrationKind.available)
  func aV1TableOpensAsV2AndV3AndEveryRecordReadsAsPlainSwiftComputesIt(_ kind: SQLMigrationKind) throws {
    let (location, v1) = try v1(kind)
    let v2 = try kind.open(PetV2.self, at: location, migrations: PetMigrations.toV2)
    #expect(v2.appliedMigrations == ["2: kg, legs, address"])
    #expect(v2.pendingMigrations.isEmpty)
    #expect(try RequestSet(v2).sortBy("id").fetch() == v1.map(PetMigrations.v2))
    // The renamed key's index followed it: the plan uses it.
    let heavy = RequestSet(v2).filter("weightKg", .greaterThan, 80.0)
    #expect(heavy.explain().contains("weightKg"))
    #expect(try heavy.sortBy("id").fetch() == v1.filter { $0.weight > 80 }.map(PetMigrations.v2))
    #expect(RequestSet(v2).filter("address.city", value: "Oslo").count == v1.filter { $0.city == "Oslo" }.count)
    v2.close()

    let v3 = try kind.open(PetV3.self, at: location, migrations: PetMigrations.toV3)
    #expect(v3.appliedMigrations == ["2: kg, legs, address", "3: names, tags"])
    #expect(try RequestSet(v3).sortBy("id").fetch() == v1.map(PetMigrations.v3))
    try v3.insert(PetV3(id: 10_000, name: "N", weightKg: 1, legs: 3, address: .init(city: "Oslo"), tags: []))
    v3.close()
    let again = try kind.open(PetV3.self, at: location, migrations: PetMigrations.toV3)
    #expect(again.pendingMigrations.isEmpty)
    #expect(RequestSet(again).count == v1.count + 1)
  }

  /// After a rename, the engine's plan for a query on the new key uses the index that
  /// followed it.
  @Test(arguments: SQLMigrationKind.available)
  func queriesOnARenamedKeyUseItsIndex(_ kind: SQLMigrationKind) throws {
    let (location, _) = try v1(kind, 5_000)
    let store = try kind.open(PetV2.self, at: location, migrations: PetMigrations.toV2)
    let query = StoreQuery(filter: .condition(try StoreCondition("weightKg", .equal, 42.0)))
    let plan: [String]
    switch kind {
    case .sqlite:
      plan = try (store as! SQLiteStore<PetV2>).queryReader().explain(query).plan
      #expect(plan.contains { $0.contains("USING INDEX") }, "\(plan)")
    case .postgres:
      _ = try postgresSQL("ANALYZE \"\(location)\"")
      plan = try (store as! PostgresStore<PetV2>).queryReader().explain(query).plan
      #expect(plan.contains { $0.contains("Index Scan") || $0.contains("Bitmap Index Scan") }, "\(plan)")
    }
  }

  @Test(arguments: SQLMigrationKind.available)
  func aMigrationThatThrowsChangesNothing(_ kind: SQLMigrationKind) throws {
    let (location, v1) = try v1(kind, 100)
    var migrator = PetMigrations.toV2
    migrator.register("breaks on 57") { record in
      if record.id == .int(57) { throw RequestSetError(.typeMismatch, "no 57") }
    }
    #expect {
      _ = try kind.open(PetV2.self, at: location, migrations: migrator)
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .migrationFailed && e.message.contains("breaks on 57") && e.message.contains("57")
    }
    let old = try kind.open(PetV1.self, at: location)
    #expect(old.appliedMigrations.isEmpty)
    #expect(try RequestSet(old).sortBy("id").fetch() == v1)
  }

  @Test(arguments: SQLMigrationKind.available)
  func writesWaitForMigrationsThatRunOnlyWhenAsked(_ kind: SQLMigrationKind) throws {
    let (location, v1) = try v1(kind, 40)
    let store = try kind.open(DynamicRecord.self, at: location, migrations: PetMigrations.toV2, migratesOnOpen: false)
    #expect(store.pendingMigrations == ["2: kg, legs, address"])
    #expect {
      try store.insert(DynamicRecord(id: .int(999), fields: [:]))
    } throws: { error in (error as! RequestSetError).code == .migrationPending }
    #expect(try store.migrate() == ["2: kg, legs, address"])
    #expect(try store.migrate().isEmpty)
    store.close()
    let typed = try kind.open(PetV2.self, at: location, migrations: PetMigrations.toV2)
    #expect(try RequestSet(typed).sortBy("id").fetch() == v1.map(PetMigrations.v2))
  }

  @Test(arguments: SQLMigrationKind.available)
  func openingWithATypeTheRowsNoLongerDecodeAsNamesTheKeyAndTheRecord(_ kind: SQLMigrationKind) throws {
    let (location, _) = try v1(kind, 10)
    #expect {
      _ = try kind.open(PetV1Renamed.self, at: location)
    } throws: { error in (error as! RequestSetError).code == .schemaMismatch }
    let store = try kind.open(DynamicRecord.self, at: location)
    try store.save(DynamicRecord(id: .int(0), fields: ["name": .string("x"), "weight": .string("heavy"), "city": .string("Oslo")]))
    store.close()
    #expect {
      _ = try kind.open(PetV1.self, at: location)
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .decodingFailed && e.message.contains("id 0") && e.message.contains("weight")
    }
  }

  /// The one-statement forms give what the record-by-record path gives, on random records
  /// with nil, absent, nested and clashing values.
  @Test(arguments: SQLMigrationKind.available)
  func statementsAndRecordByRecordAgreeOnRandomRecords(_ kind: SQLMigrationKind) throws {
    var rng = SeededRandom(seed: 42)
    let values: [FieldValue] = [
      .null, .int(1), .int(-7), .double(2.5), .string("x"), .bool(true), .array([.int(1)]), .object(["c": .int(3)]),
      .decimal(Decimal(string: "1.25")!), .uint(UInt64.max),
    ]
    for round in 0..<6 {
      var records: [DynamicRecord] = []
      for i in 0..<60 {
        var fields: [String: FieldValue] = [:]
        for key in ["a", "b", "c", "d"] where rng.next() % 3 != 0 {
          fields[key] = values[Int(rng.next() % UInt64(values.count))]
        }
        if fields["a"] != nil && fields["b"] != nil && fields["b"] != .null { fields["b"] = nil }  // no clash
        records.append(DynamicRecord(id: .int(i), fields: fields))
      }
      let steps: [[Migration.Step]] = [
        [.rename("a", to: "b")], [.add("c", default: .string("d"))], [.remove("d")],
        [.rename("a", to: "e"), .add("a", default: .array([])), .remove("c")],
        [.add("n", default: .decimal(Decimal(string: "0.1")!)), .rename("n", to: "m")],
        [.remove("a"), .rename("c", to: "a")],
      ]
      let migration = Migration("round \(round)", steps: steps[round])
      let expected = try Migrator([migration]).migrate(records)
      let location = kind.freshLocation()
      let store = try kind.open(DynamicRecord.self, at: location)
      try store.insert(contentsOf: records)
      store.close()
      let migrated = try kind.open(DynamicRecord.self, at: location, migrations: Migrator([migration]))
      #expect(try RequestSet(migrated).sortBy("id").fetch() == expected, "\(migration)")
      // The summary of keys follows: a key the migration made can be queried.
      for key in Set(expected.flatMap(\.fields.keys)) {
        #expect(throws: Never.self) { _ = try RequestSet(migrated).filter("\(key) != nil").fetch() }
      }
      migrated.close()
    }
  }

  @Test(arguments: SQLMigrationKind.available)
  func aRenameOntoAHeldKeyFailsNamingTheRecord(_ kind: SQLMigrationKind) throws {
    let location = kind.freshLocation()
    let store = try kind.open(DynamicRecord.self, at: location)
    try store.insert(DynamicRecord(id: .int(1), fields: ["a": .int(1)]))
    try store.insert(DynamicRecord(id: .int(2), fields: ["a": .int(1), "b": .int(2)]))
    store.close()
    #expect {
      _ = try kind.open(DynamicRecord.self, at: location, migrations: Migrator([Migration("ab", .rename("a", to: "b"))]))
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .migrationFailed && e.message.contains("2") && e.message.contains("both a and b")
    }
  }
}

/// A type with PetV1's fields under another name: its table belongs to PetV1.
struct PetV1Renamed: Record, Equatable {
  var id: Int
  var name: String
}
