import Foundation
import RequestSet
import Testing

/// A row in the middle of a SQL table that no longer decodes as its type (the check at
/// open reads only the first and last) reports itself on every read road as the check
/// does: `.decodingFailed`, naming the record's id and the key, never a bare
/// `DecodingError`.
@Suite(.ownThreads) struct StoredRecordDecodingTests {
  /// Breaks record 15 of a 30-record table of `PetV1`: its `name` is removed.
  static func brokenTable(_ kind: SQLMigrationKind) throws -> String {
    let location = kind.freshLocation()
    let store = try kind.open(PetV1.self, at: location)
    try store.insert(contentsOf: PetMigrations.records(30))
    store.close()
    switch kind {
    case .sqlite:
      try StoreFieldKindsTests.sqlite(location, "UPDATE pets SET body = json_remove(body, '$.name') WHERE id = '15'")
    case .postgres:
      try PostgresServer.execute(#"UPDATE "\#(location)" SET body = body - 'name' WHERE id = '15'"#)
    }
    return location
  }

  static func expectNamed(_ error: (any Error)?, _ road: String) {
    guard let error = error as? RequestSetError else {
      Issue.record("\(road): not a RequestSetError: \(String(describing: error))")
      return
    }
    #expect(error.code == .decodingFailed, "\(road): \(error)")
    #expect(error.message.contains("id 15"), "\(road): \(error.message)")
    #expect(error.message.contains("name"), "\(road): \(error.message)")
  }

  @Test(arguments: SQLMigrationKind.available)
  func everyReadNamesTheRecordAndTheKey(_ kind: SQLMigrationKind) async throws {
    let location = try Self.brokenTable(kind)
    let store = try kind.open(PetV1.self, at: location)
    defer { store.close() }
    let all = RequestSet(store)
    let reads: [(String, () throws -> Void)] = [
      ("fetch", { _ = try all.refreshed().fetch() }),
      ("sorted fetch", { _ = try all.refreshed().sortBy(\.name).fetch() }),
      ("filtered fetch", { _ = try all.refreshed().filter(\.id == 15).fetch() }),
      ("get", { _ = try all.refreshed().filter(\.id == 15).get() }),
      ("values", { _ = try all.refreshed().values(\.weight) }),
      ("fetch(id:)", { _ = try store.fetch(id: 15) }),
    ]
    for (road, read) in reads {
      Self.expectNamed(#expect(throws: (any Error).self) { try read() }, "\(kind) \(road)")
    }
    let asyncError = await #expect(throws: (any Error).self) { try await all.refreshed().async.fetch() }
    Self.expectNamed(asyncError, "\(kind) async.fetch")
    let liveError = await #expect(throws: (any Error).self) {
      var changes = all.refreshed().changes.makeAsyncIterator()
      _ = try await changes.next()
    }
    Self.expectNamed(liveError, "\(kind) live set")
    // Records that decode still read.
    #expect(try all.refreshed().filter(\.id < 15).fetch().count == PetMigrations.records(30).filter { $0.id < 15 }.count)
  }
}
