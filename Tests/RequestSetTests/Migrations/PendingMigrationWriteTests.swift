import Foundation
import RequestSet
import Testing

/// A store opened with its migrations held (`migratesOnOpen: false`) refuses every write
/// with `.migrationPending`, whichever road the write takes: direct, through a query
/// pushed down to SQL, through a query read and applied in process, sync or `.async`.
/// Nothing is written, and the records migrate intact afterwards.
@Suite(.ownThreads) struct PendingMigrationWriteTests {
  /// Each write through a query, named for the failure message.
  static let writes: [(name: String, run: @Sendable (RequestSet<PetV2>) async throws -> Void)] = [
    ("update(key:value:)", { _ = try $0.filter("name BEGINSWITH %@", "P").update("legs", value: 3) }),
    ("update(pairs)", { _ = try $0.filter(\.legs == 4).update([("legs", 3), ("name", "x")]) }),
    ("update { }", { _ = try $0.update { $0.legs = 3 } }),
    ("delete()", { _ = try $0.filter("name BEGINSWITH %@", "P").delete() }),
    ("delete() of all", { _ = try $0.delete() }),
    ("firstOrInsert", { _ = try $0.filter(\.id == 9_999).firstOrInsert { PetV2(id: 9_999, name: "n", weightKg: 1, legs: 4, address: .init(city: "c")) } }),
    ("async.update(key:value:)", { _ = try await $0.filter("name BEGINSWITH %@", "P").async.update("legs", value: 3) }),
    ("async.update { }", { _ = try await $0.async.update { $0.legs = 3 } }),
    ("async.delete()", { _ = try await $0.async.delete() }),
  ]

  static func expectRefused(_ set: RequestSet<PetV2>, _ where: String) async {
    for write in writes {
      do {
        try await write.run(set.refreshed())
        Issue.record("\(`where`) \(write.name): wrote while a migration was pending")
      } catch let error as RequestSetError {
        #expect(error.code == .migrationPending, "\(`where`) \(write.name): \(error)")
        #expect(error.message.contains("migrate()"), "\(`where`) \(write.name): \(error.message)")
      } catch {
        Issue.record("\(`where`) \(write.name): not a RequestSetError: \(error)")
      }
    }
  }

  /// An upsert, sync and async, is refused before it reads a record.
  static func expectUpsertRefused(_ store: any RecordStore<PetV2>, _ where: String) async {
    let pet = PetV2(id: 9_998, name: "Upserted", weightKg: 1, legs: 4, address: .init(city: "c"))
    let upserts: [(name: String, run: () async throws -> Void)] = [
      ("upsert", { try store.upsert([pet], on: \.name) }),
      ("async.upsert", { try await store.async.upsert([pet], on: "name") }),
    ]
    for upsert in upserts {
      do {
        try await upsert.run()
        Issue.record("\(`where`) \(upsert.name): wrote while a migration was pending")
      } catch let error as RequestSetError {
        #expect(error.code == .migrationPending, "\(`where`) \(upsert.name): \(error)")
      } catch {
        Issue.record("\(`where`) \(upsert.name): not a RequestSetError: \(error)")
      }
    }
  }

  @Test func aLogRefusesWritesThroughAQuery() async throws {
    let (path, v1) = try LogMigrationTests().v1Log(40)
    do {
      let held = try LogStore<PetV2>(path: path, options: .init(migrations: PetMigrations.toV2, migratesOnOpen: false))
      defer { held.close() }
      #expect(held.pendingMigrations == ["2: kg, legs, address"])
      await Self.expectRefused(RequestSet(held), "log")
      await Self.expectUpsertRefused(held, "log")
    }
    let migrated = try LogStore<PetV2>(path: path, options: .init(migrations: PetMigrations.toV2))
    defer { migrated.close() }
    #expect(try RequestSet(migrated).sortBy(\.id).fetch() == v1.map(PetMigrations.v2))
  }

  @Test(arguments: SQLMigrationKind.available)
  func aSQLTableRefusesWritesThroughAQuery(_ kind: SQLMigrationKind) async throws {
    let (location, v1) = try SQLMigrationTests().v1(kind, 40)
    do {
      let held = try kind.open(PetV2.self, at: location, migrations: PetMigrations.toV2, migratesOnOpen: false)
      defer { held.close() }
      await Self.expectRefused(RequestSet(held), "\(kind)")
      await Self.expectUpsertRefused(held, "\(kind)")
    }
    let migrated = try kind.open(PetV2.self, at: location, migrations: PetMigrations.toV2)
    defer { migrated.close() }
    #expect(try RequestSet(migrated).sortBy(\.id).fetch() == v1.map(PetMigrations.v2))
  }
}
