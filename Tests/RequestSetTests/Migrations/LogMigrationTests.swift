import Foundation
import RequestSet
import Testing

@Suite("Migrations on a LogStore", .ownThreads)
struct LogMigrationTests {
  /// A v1 log of `n` records, with indexes on the keys the migrations rename.
  func v1Log(_ n: Int = 500) throws -> (path: String, records: [PetV1]) {
    let path = TemporaryLogDirectory.freshPath("pets.rslog")
    let records = PetMigrations.records(n)
    let store = try LogStore<PetV1>(path: path)
    try store.insert(contentsOf: records)
    try store.createIndex("weight")
    try store.createIndex("city")
    try store.createIndex("nickname")
    store.close()
    return (path, records)
  }

  @Test func aV1LogOpensAsV2AndV3AndEveryRecordReadsAsPlainSwiftComputesIt() throws {
    let (path, v1) = try v1Log()
    let v2Store = try LogStore<PetV2>(path: path, options: .init(migrations: PetMigrations.toV2))
    #expect(v2Store.appliedMigrations == ["2: kg, legs, address"])
    #expect(v2Store.pendingMigrations.isEmpty)
    #expect(try RequestSet(v2Store).fetch() == v1.map(PetMigrations.v2))
    // Indexes followed the renamed keys, and the removed key's index is gone.
    #expect(Set(v2Store.indexes.map(\.key)) == ["weightKg", "address.city"])
    let heavy = RequestSet(v2Store).filter("weightKg", .greaterThan, 80.0)
    #expect(heavy.explain().contains("index"))
    #expect(try heavy.fetch() == v1.filter { $0.weight > 80 }.map(PetMigrations.v2))
    let oslo = RequestSet(v2Store).filter("address.city", value: "Oslo")
    #expect(oslo.explain().contains("index lookup on address.city"))
    #expect(oslo.count == v1.filter { $0.city == "Oslo" }.count)
    v2Store.close()

    let v3Store = try LogStore<PetV3>(path: path, options: .init(migrations: PetMigrations.toV3))
    #expect(v3Store.appliedMigrations == ["2: kg, legs, address", "3: names, tags"])
    #expect(try RequestSet(v3Store).fetch() == v1.map(PetMigrations.v3))
    let size = v3Store.fileSize
    v3Store.close()

    // Nothing pending: the next open rewrites nothing, and writes work.
    let again = try LogStore<PetV3>(path: path, options: .init(migrations: PetMigrations.toV3))
    #expect(again.fileSize == size)
    #expect(again.recoveryReport.isClean)
    try again.insert(PetV3(id: 10_000, name: "NEW", weightKg: 1.5, legs: 3, address: .init(city: "Oslo"), tags: ["a"]))
    #expect(again.count == v1.count + 1)
  }

  @Test func aV1LogMigratesStraightToV3InOneRewrite() throws {
    let (path, v1) = try v1Log(200)
    let store = try LogStore<PetV3>(path: path, options: .init(migrations: PetMigrations.toV3))
    #expect(store.appliedMigrations == PetMigrations.toV3.migrations.map(\.name))
    #expect(try RequestSet(store).sortBy("id").fetch() == v1.map(PetMigrations.v3))
    // One commit: the history starts at the migration.
    #expect(try store.history().count == 1)
  }

  @Test func aMigrationThatThrowsLeavesTheLogByteForByteAsItWas() throws {
    let (path, _) = try v1Log(100)
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    var migrator = PetMigrations.toV2
    migrator.register("breaks on 57") { record in
      if record.id == .int(57) { throw RequestSetError(.typeMismatch, "no 57") }
    }
    #expect {
      _ = try LogStore<PetV2>(path: path, options: .init(migrations: migrator))
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .migrationFailed && e.message.contains("breaks on 57") && e.message.contains("57")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    // Still v1, with both migrations pending, readable by the old type.
    let old = try LogStore<PetV1>(path: path)
    #expect(old.appliedMigrations.isEmpty)
    #expect(old.count == 100)
  }

  @Test func aConversionThatLosesDataFailsNamingTheRecordAndKey() throws {
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<DynamicRecord>(path: path, options: .init())
    try store.insert(DynamicRecord(id: .int(1), fields: ["n": .double(2)]))
    try store.insert(DynamicRecord(id: .int(2), fields: ["n": .double(2.5)]))
    store.close()
    #expect {
      _ = try LogStore<DynamicRecord>(path: path, options: .init(migrations: Migrator([Migration("int", .convert("n", .toInt))])))
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .migrationFailed && e.message.contains("id 2") && e.message.contains("n holds 2.5")
    }
  }

  @Test func aReadOnlyStoreWithMigrationsPendingRefusesToOpen() throws {
    let (path, _) = try v1Log(10)
    #expect {
      _ = try LogStore<PetV2>(path: path, options: .init(readOnly: true, migrations: PetMigrations.toV2))
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .migrationPending && e.message.contains("2: kg, legs, address")
    }
  }

  @Test func migrationsThatRunOnlyWhenAskedHoldWritesUntilThen() throws {
    let (path, v1) = try v1Log(50)
    let store = try LogStore<DynamicRecord>(
      path: path, options: .init(migrations: PetMigrations.toV2, migratesOnOpen: false))
    #expect(store.pendingMigrations == ["2: kg, legs, address"])
    #expect(RequestSet(store).count == 50)  // reads see the records as stored
    #expect {
      try store.insert(DynamicRecord(id: .int(99), fields: [:]))
    } throws: { error in
      (error as! RequestSetError).code == .migrationPending
        && (error as! RequestSetError).message.contains("migrate()")
    }
    #expect(try store.migrate() == ["2: kg, legs, address"])
    #expect(store.pendingMigrations.isEmpty)
    #expect(try store.migrate().isEmpty)
    let v2 = PetV2(id: 99, name: "x", weightKg: 1, legs: 2, address: .init(city: "Oslo"))
    try store.insert(try DynamicRecord(FieldValue(encoding: v2)))
    store.close()
    let typed = try LogStore<PetV2>(path: path)
    #expect(try RequestSet(typed).filter("id", .lessThan, 99).fetch() == v1.map(PetMigrations.v2))
  }

  @Test func aLiveSetRereadsWhenTheStoreMigrates() async throws {
    let (path, _) = try v1Log(20)
    let store = try LogStore<DynamicRecord>(
      path: path, options: .init(migrations: PetMigrations.toV2, migratesOnOpen: false))
    var changes = RequestSet(store).sortBy("id").changes.makeAsyncIterator()
    #expect(try await changes.next()?.records.first?["legs"] == nil)
    try store.migrate()
    let next = try await changes.next()
    #expect(next?.records.count == 20)
    #expect(next?.records.allSatisfy { $0["legs"] == .int(4) } == true)
  }

  @Test func openingWithATypeTheRecordsNoLongerDecodeAsNamesTheKeyAndTheRecord() throws {
    let (path, _) = try v1Log(30)
    #expect {
      _ = try LogStore<PetV2>(path: path)
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .decodingFailed && e.message.contains("id 0") && e.message.contains("Migration")
        && (e.message.contains("weightKg") || e.message.contains("legs") || e.message.contains("address"))
    }
    // The whole-log check finds a record in the middle that the open does not decode.
    let store = try LogStore<DynamicRecord>(path: path, options: .init())
    try store.save(DynamicRecord(id: .int(15), fields: ["name": .string("x"), "weight": .string("heavy"), "city": .string("Oslo")]))
    store.close()
    let typed = try LogStore<PetV1>(path: path)
    #expect {
      try typed.checkDecoding()
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .decodingFailed && e.message.contains("id 15") && e.message.contains("weight")
    }
  }

  @Test func aMalformedMigratorIsRefusedBeforeAnythingIsTouched() throws {
    let (path, _) = try v1Log(5)
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    for migrator in [
      Migrator([Migration("a", .remove("x")), Migration("a", .remove("y"))]),
      Migrator([Migration("b", .rename("id", to: "key"))]),
      Migrator([Migration("", .remove("x"))]),
      Migrator([Migration("c", .add("", default: .int(1)))]),
    ] {
      #expect {
        _ = try LogStore<PetV1>(path: path, options: .init(migrations: migrator))
      } throws: { error in (error as! RequestSetError).code == .migrationFailed }
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
  }

  @Test func aRenameOntoAKeyARecordHoldsFails() throws {
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<DynamicRecord>(path: path, options: .init())
    try store.insert(DynamicRecord(id: .int(1), fields: ["a": .int(1)]))
    try store.insert(DynamicRecord(id: .int(2), fields: ["a": .int(1), "b": .int(2)]))
    store.close()
    #expect {
      _ = try LogStore<DynamicRecord>(path: path, options: .init(migrations: Migrator([Migration("ab", .rename("a", to: "b"))])))
    } throws: { error in
      let e = error as! RequestSetError
      return e.code == .migrationFailed && e.message.contains("id 2") && e.message.contains("both a and b")
    }
  }

  @Test func anEmptyLogRecordsItsMigrations() throws {
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<PetV2>(path: path, options: .init(migrations: PetMigrations.toV2))
    #expect(store.appliedMigrations == ["2: kg, legs, address"])
    store.close()
    let again = try LogStore<PetV2>(path: path, options: .init(migrations: PetMigrations.toV2))
    #expect(again.appliedMigrations == ["2: kg, legs, address"])
    #expect(again.pendingMigrations.isEmpty)
  }
}
