import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
import Testing

/// Indexes follow a migration by one rule on every store that runs migrations
/// (`Migration.indexKey(after:)`): a rename moves an index's key and the keys under it, each
/// key of a composite index alike, and a removed key takes its indexes with it. Checked from
/// outside, in each store's own catalog: a log's `indexes`, SQLite's `sqlite_master`,
/// PostgreSQL's `pg_indexes`.
@Suite(.ownThreads) struct IndexFollowTests {
  enum Kind: String, CaseIterable, CustomStringConvertible, Sendable {
    case log, sqlite, postgres
    var description: String { rawValue }
    static var available: [Kind] { PostgresServer.testsRun ? allCases : [.log, .sqlite] }

    /// A fresh log path, SQLite file or PostgreSQL table name.
    func freshLocation() -> String {
      switch self {
      case .log: return TemporaryLogDirectory.freshPath("pets.rslog")
      case .sqlite: return TemporaryLogDirectory.freshPath("pets.sqlite")
      case .postgres: return PostgresServer.freshTable("pets")
      }
    }
  }

  /// v1 keys: id, name, weight, city, nickname. The indexes made on v1, and where each must
  /// be after `PetMigrations.v2` (rename weight → weightKg, move city → address.city, remove
  /// nickname) and then `rename address → home`.
  static let made: [[String]] = [
    ["city", "weight"], ["weight", "nickname"], ["city"], ["name", "city", "weight"],
  ]
  static let afterV2: Set<[String]> = [
    ["address.city", "weightKg"], ["address.city"], ["name", "address.city", "weightKg"],
  ]
  static let afterHome: Set<[String]> = [
    ["home.city", "weightKg"], ["home.city"], ["name", "home.city", "weightKg"],
  ]
  static let home = Migration("4: home", .rename("address", to: "home"))

  @Test func theRuleMovesKeysUnderARenamedParentAndDropsRemovedOnes() {
    let m = Migration("m", .rename("owner", to: "keeper"), .remove("nickname"), .rename("age", to: "years"))
    #expect(m.indexKey(after: "owner.city") == "keeper.city")
    #expect(m.indexKey(after: "owner") == "keeper")
    #expect(m.indexKey(after: "ownerName") == "ownerName")
    #expect(m.indexKey(after: "nickname") == nil)
    #expect(m.indexKey(after: "nickname.first") == nil)
    #expect(m.indexKey(after: "age") == "years")
    // Steps run in order: a key renamed and then removed goes.
    #expect(Migration("n", .rename("a", to: "b"), .remove("b")).indexKey(after: "a") == nil)
  }

  @Test(arguments: Kind.available)
  func compositeAndNestedIndexesFollowRenamesAndGoWithRemovedKeys(_ kind: Kind) throws {
    let records = PetMigrations.records(400)
    let location = kind.freshLocation()
    do {
      let store = try Self.open(PetV1.self, kind, location, Migrator())
      try store.insert(contentsOf: records)
      for keys in Self.made { try Self.createIndex(store, keys) }
      store.close()
    }
    #expect(try Self.indexes(kind, location) == Set(Self.made))

    let v2 = try Self.open(PetV2.self, kind, location, PetMigrations.toV2)
    #expect(try Self.indexes(kind, location) == Self.afterV2)
    // The moved composite index still answers as a plain Swift filter does.
    let oslo = RequestSet(v2).filter("address.city", value: "Oslo").filter("weightKg", .greaterThan, 40.0)
    #expect(
      try oslo.sortBy("id").fetch().map(\.id)
        == records.filter { $0.city == "Oslo" && $0.weight > 40 }.map(\.id))
    v2.close()

    let v4 = try Self.open(DynamicRecord.self, kind, location, Migrator([PetMigrations.v2, Self.home]))
    #expect(try Self.indexes(kind, location) == Self.afterHome)
    let homeOslo = RequestSet(v4).filter("home.city", value: "Oslo")
    #expect(homeOslo.count == records.filter { $0.city == "Oslo" }.count)
    v4.close()
  }

  /// A unique composite index stays unique when it moves.
  @Test(arguments: Kind.available)
  func aUniqueCompositeIndexStaysUnique(_ kind: Kind) throws {
    let location = kind.freshLocation()
    do {
      let store = try Self.open(PetV1.self, kind, location, Migrator())
      try store.insert(contentsOf: [
        PetV1(id: 1, name: "A", weight: 3, city: "Oslo", nickname: nil),
        PetV1(id: 2, name: "A", weight: 4, city: "Oslo", nickname: nil),
      ])
      try Self.createIndex(store, ["name", "weight"], unique: true)
      store.close()
    }
    let v2 = try Self.open(PetV2.self, kind, location, PetMigrations.toV2)
    #expect(try Self.indexes(kind, location) == [["name", "weightKg"]])
    #expect(throws: RequestSetError.self) {
      try v2.insert(PetV2(id: 3, name: "A", weightKg: 4, legs: 4, address: .init(city: "Rome")))
    }
    try v2.insert(PetV2(id: 3, name: "A", weightKg: 5, legs: 4, address: .init(city: "Rome")))
    #expect(RequestSet(v2).count == 3)
    v2.close()
  }

  /// A text index follows the same rule: its keys move with a rename (a search with no
  /// keys, which searches the text index's, finds the moved text), and it goes with a
  /// removed key.
  @Test(arguments: Kind.available)
  func aTextIndexFollowsARenameAndGoesWithARemovedKey(_ kind: Kind) throws {
    let location = kind.freshLocation()
    func open(_ migrations: Migrator) throws -> any RecordStore<DynamicRecord> {
      try Self.open(DynamicRecord.self, kind, location, migrations)
    }
    func textKeys(_ store: any RecordStore<DynamicRecord>) throws -> [String]? {
      if let log = store as? LogStore<DynamicRecord> { return log.textIndexKeys }
      if let pg = store as? PostgresStore<DynamicRecord> { return try pg.textIndexKeys() }
      return try (store as! SQLiteStore<DynamicRecord>).textIndexKeys()
    }
    let posts = (1...40).map { i in
      DynamicRecord(
        id: .int(i),
        fields: ["title": .string(i % 3 == 0 ? "Quick fox \(i)" : "Slow bear \(i)"), "body": .string("text \(i)")])
    }
    let foxIDs = Set((1...40).filter { $0 % 3 == 0 }.map { FieldValue.int($0) })
    do {
      let store = try open(Migrator())
      try store.insert(contentsOf: posts)
      if let log = store as? LogStore<DynamicRecord> { try log.createTextIndex(["title", "body"]) }
      if let sqlite = store as? SQLiteStore<DynamicRecord> { try sqlite.createTextIndex(["title", "body"]) }
      if let pg = store as? PostgresStore<DynamicRecord> { try pg.createTextIndex(["title", "body"]) }
      store.close()
    }
    let renamed = Migrator([Migration("headline", .rename("title", to: "headline"))])
    do {
      let store = try open(renamed)
      #expect(try textKeys(store) == ["headline", "body"])
      #expect(Set(try RequestSet(store).filter(matching: "fox").fetch().map(\.id)) == foxIDs)
      let foxes = RequestSet(store).filter(matching: "fox", in: ["headline", "body"])
      if kind == .log { #expect(foxes.explain().contains("text index lookup on headline, body"), "\(foxes.explain())") }
      #expect(Set(try foxes.fetch().map(\.id)) == foxIDs)
      // Writes after the migration feed the moved index.
      try store.insert(DynamicRecord(id: .int(99), fields: ["headline": .string("A fox again"), "body": .string("")]))
      #expect(RequestSet(store).filter(matching: "fox").count == foxIDs.count + 1)
      store.close()
    }
    let removed = Migrator(renamed.migrations + [Migration("no body", .remove("body"))])
    let store = try open(removed)
    defer { store.close() }
    #expect(try textKeys(store) == nil)
    let foxes = RequestSet(store).filter(matching: "fox", in: ["headline"])
    // No index lookup: not the log's, not SQLite's FTS5 MATCH, not PostgreSQL's `@@`.
    let plan = foxes.explain()
    #expect(!plan.contains("text index lookup") && !plan.contains(" MATCH ") && !plan.contains("@@"), "\(plan)")
    #expect(foxes.count == foxIDs.count + 1)
  }

  /// A SQL store's `indexes()` lists what `createIndex` made, one key or composite, in
  /// order, with `unique`, as the catalog holds them (also after a migration moved them).
  @Test(arguments: Kind.available.filter { $0 != .log })
  func aSQLStoreListsItsIndexes(_ kind: Kind) throws {
    let location = kind.freshLocation()
    func list(_ store: Any) throws -> [String] {
      let indexes: [RequestIndex]
      switch store {
      case let s as SQLiteStore<PetV1>: indexes = try s.indexes()
      case let s as PostgresStore<PetV1>: indexes = try s.indexes()
      case let s as SQLiteStore<PetV2>: indexes = try s.indexes()
      case let s as PostgresStore<PetV2>: indexes = try s.indexes()
      default: indexes = []
      }
      return indexes.map { $0.keys.joined(separator: "+") + ($0.unique ? "!" : "") }
    }
    let store = try Self.open(PetV1.self, kind, location, Migrator())
    try store.insert(contentsOf: PetMigrations.records(50))
    #expect(try list(store) == [])
    try Self.createIndex(store, ["city"])
    try Self.createIndex(store, ["name", "weight"], unique: true)
    try Self.createIndex(store, ["city", "weight"])
    #expect(try list(store) == ["city", "name+weight!", "city+weight"])
    #expect(Set(try list(store).map { $0.replacingOccurrences(of: "!", with: "").split(separator: "+").map(String.init) })
      == (try Self.indexes(kind, location)))
    if let s = store as? SQLiteStore<PetV1> { try s.dropIndex("city", "weight") }
    if let s = store as? PostgresStore<PetV1> { try s.dropIndex("city", "weight") }
    #expect(try list(store) == ["city", "name+weight!"])
    store.close()
    let v2 = try Self.open(PetV2.self, kind, location, PetMigrations.toV2)
    #expect(try list(v2) == ["address.city", "name+weightKg!"])
    v2.close()
    #expect(throws: RequestSetError.self) { try list(v2) }
  }

  // MARK: Opening and reading each store's catalog

  static func open<R: Record>(_ type: R.Type, _ kind: Kind, _ location: String, _ migrations: Migrator) throws
    -> any RecordStore<R>
  {
    switch kind {
    case .log: return try LogStore<R>(path: location, options: .init(migrations: migrations))
    case .sqlite: return try SQLiteStore<R>(path: location, table: "pets", migrations: migrations)
    case .postgres:
      return try PostgresStore<R>(url: PostgresServer.url(), table: location, migrations: migrations)
    }
  }

  static func createIndex<R: Record>(_ store: any RecordStore<R>, _ keys: [String], unique: Bool = false)
    throws
  {
    switch store {
    case let log as LogStore<R>: try log.createIndex(on: keys, unique: unique)
    case let sqlite as SQLiteStore<R>: try sqlite.createIndex(on: keys, unique: unique)
    case let postgres as PostgresStore<R>: try postgres.createIndex(on: keys, unique: unique)
    default: Issue.record("no index for \(store)")
    }
  }

  /// The key lists of the indexes the store's catalog holds, read with a pattern of the
  /// test's own (not the stores' parsers).
  static func indexes(_ kind: Kind, _ location: String) throws -> Set<[String]> {
    switch kind {
    case .log:
      let log = try LogStore<DynamicRecord>(path: location, options: .init(readOnly: true))
      defer { log.close() }
      return Set(log.indexes.map(\.keys))
    case .sqlite:
      let lines = try sqliteShell(
        location, "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'pets'")
      return Set(
        lines.map { line in
          matches(of: #"'\$((?:\."[^"]*")+)'"#, in: line).map { path in
            matches(of: #"\."([^"]*)""#, in: path).joined(separator: ".")
          }
        }.filter { !$0.isEmpty })
    case .postgres:
      let rows = try postgresSQL("SELECT indexdef FROM pg_indexes WHERE tablename = $1", [location])
      return Set(
        rows.compactMap { $0.first ?? nil }.map { def in
          matches(of: #"'\{([^}]*)\}'::text\[\]"#, in: def).map {
            $0.split(separator: ",").joined(separator: ".")
          }
        }.filter { !$0.isEmpty })
    }
  }

  /// The first capture group of each match of `pattern` in `text`.
  static func matches(of pattern: String, in text: String) -> [String] {
    guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
    let ns = text as NSString
    return regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map {
      ns.substring(with: $0.range(at: 1))
    }
  }
}
