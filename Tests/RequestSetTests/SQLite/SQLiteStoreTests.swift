import Foundation
import Testing

@testable import RequestSet
@testable import RequestSetSQLite

/// Runs `/usr/bin/sqlite3` on `path` with `sql` and returns its output lines.
func sqliteShell(_ path: String, _ sql: String) throws -> [String] {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
  process.arguments = [path, sql]
  let out = Pipe()
  process.standardOutput = out
  process.standardError = out
  try process.run()
  let data = out.fileHandleForReading.readDataToEndOfFile()
  process.waitForEnd()
  return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}

private func freshPath() -> String { TemporaryLogDirectory.freshPath("zoo.sqlite") }

private func condition(
  _ key: String, _ op: RequestComparison, _ value: (any Encodable & Sendable)?,
  collation: RequestCollation = .binary
) throws -> StoreFilter {
  .condition(try StoreCondition(key, op, value, collation: collation))
}

/// What the in-memory engine's own tests say `filter` selects from `records`.
private func engineMatches(_ filter: StoreFilter, _ record: FieldValue) -> Bool {
  switch filter {
  case .constant(let b): return b
  case .condition(let c): return c.matches(record[path: c.key] ?? .null)
  case .search(let s): return s.matches(s.keys.map { record[path: $0] ?? .null })
  case .and(let terms): return terms.allSatisfy { engineMatches($0, record) }
  case .or(let terms): return terms.contains { engineMatches($0, record) }
  case .not(let inner): return !engineMatches(inner, record)
  case .subquery: return false  // reads another table: not a test of one record
  }
}

@Suite(.ownThreads) struct SQLiteStoreTests {
  @Test func theFileOpensInTheSQLiteShellWithReadableRows() throws {
    let path = freshPath()
    let store = try SQLiteStore<Animal>(path: path)
    try store.insert(contentsOf: Animal.zoo)
    store.close()
    let rows = try sqliteShell(path, "SELECT id, json_extract(body, '$.name'), plain FROM Animal ORDER BY seq")
    #expect(rows == ["1|Micky|1", "2|Daisy|1", "3|Rex|1", "4|Bella|1", "5|alice|1", "6|Zed|1"])
    let meta = try sqliteShell(path, "SELECT name, type, format, version FROM requestset_tables")
    #expect(meta == ["Animal|Animal|1|1"])
  }

  @Test func reopeningKeepsRecordsAndOrderAndSaveKeepsItsPlace() throws {
    let path = freshPath()
    let store = try SQLiteStore<Animal>(path: path)
    try store.insert(contentsOf: Animal.zoo)
    var daisy = Animal.zoo[1]
    daisy.age = 8
    try store.save(daisy)
    try store.save(Animal(id: 9, name: "New", species: "Cat", age: 1))
    #expect(try store.delete(id: 3))
    #expect(try !store.delete(id: 3))
    store.close()
    let reopened = try SQLiteStore<Animal>(path: path)
    let snapshot = try reopened.snapshot()
    var expected = Animal.zoo
    expected[1] = daisy
    expected.remove(at: 2)
    expected.append(Animal(id: 9, name: "New", species: "Cat", age: 1))
    #expect(Array(RequestSet(reopened)) == expected)
    #expect(snapshot.version == 4)
    #expect(try reopened.fetch(id: 2) == daisy)
    #expect(try reopened.fetch(id: 3) == nil)
  }

  @Test func explainShowsTheQueryPlanUsingTheIndex() throws {
    let store = try SQLiteStore<Animal>(path: freshPath())
    try store.insert(contentsOf: Animal.zoo)
    let query = StoreQuery(filter: try condition("species", .equal, "Dog"))
    let before = try store.queryReader().explain(query)
    #expect(before.plan == ["SCAN Animal"])
    try store.createIndex("species")
    let after = try store.queryReader().explain(query)
    #expect(
      after.statement
        == "SELECT body FROM \"Animal\" WHERE (json_extract(body, '$.\"species\"') = ? AND json_type(body, "
        + "'$.\"species\"') IN ('text')) ORDER BY seq")
    #expect(after.bindings == ["Dog"])
    #expect(after.plan.count == 1)
    #expect(after.plan[0].hasPrefix("SEARCH Animal USING INDEX Animal_requestset_"))
    #expect(try store.queryReader().count(query) == 2)
    try store.dropIndex("species")
    #expect(try store.queryReader().explain(query).plan == ["SCAN Animal"])
  }

  @Test func aUniqueIndexRefusesRepeatsWithATypedError() throws {
    let store = try SQLiteStore<Animal>(path: freshPath())
    try store.insert(contentsOf: Animal.zoo)
    let refused = #expect(throws: RequestSetError.self) { try store.createIndex("species", unique: true) }
    #expect(refused?.code == .uniqueViolation)
    try store.createIndex("name", unique: true)
    let repeated = #expect(throws: RequestSetError.self) {
      try store.insert(Animal(id: 10, name: "Rex", species: "Dog", age: 1))
    }
    #expect(repeated?.code == .uniqueViolation)
    let duplicate = #expect(throws: RequestSetError.self) { try store.insert(Animal.zoo[0]) }
    #expect(duplicate?.code == .duplicateID)
    #expect(try store.snapshot().count == 6)
  }

  @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAlone() throws {
    let path = freshPath()
    let bytes = Data(repeating: 0x41, count: 4096)
    try bytes.write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: RequestSetError.self) { _ = try SQLiteStore<Animal>(path: path) }
    #expect(error?.code == .schemaMismatch)
    #expect(error?.message.contains("not a SQLite database") == true)
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
  }

  @Test func aTableThatIsNotRequestSetsIsRefusedAndTheFileUnchanged() throws {
    let path = freshPath()
    _ = try sqliteShell(path, "CREATE TABLE Animal(x); INSERT INTO Animal VALUES (1);")
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    let error = #expect(throws: RequestSetError.self) { _ = try SQLiteStore<Animal>(path: path) }
    #expect(error?.code == .schemaMismatch)
    #expect(error?.message.contains("not a RequestSet table") == true)
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    #expect(try sqliteShell(path, "SELECT name FROM sqlite_master") == ["Animal"])
  }

  @Test func aTableOfAnotherTypeIsRefusedNamingBoth() throws {
    let path = freshPath()
    try SQLiteStore<Animal>(path: path).insert(Animal.zoo[0])
    let error = #expect(throws: RequestSetError.self) { _ = try SQLiteStore<Team>(path: path, table: "Animal") }
    #expect(error?.code == .schemaMismatch)
    #expect(error?.message.contains("holds Animal records, not Team") == true)
    // Another table in the same file is fine.
    let teams = try SQLiteStore<Team>(path: path)
    try teams.insert(contentsOf: Team.league)
    #expect(try teams.snapshot().count == Team.league.count)
  }

  @Test func aWriteBlockedPastTheBusyTimeoutThrowsLockedAndWritesNothing() throws {
    let path = freshPath()
    let store = try SQLiteStore<Animal>(path: path)
    try store.insert(contentsOf: Animal.zoo)
    // Another connection holds the write lock past the store's busy timeout (5 s).
    let other = try _SQLiteConnection(path: path, create: false, busyTimeout: 100)
    try other.execute("BEGIN IMMEDIATE", doing: "take the write lock")
    let error = try #require(throws: RequestSetError.self) {
      try store.insert(Animal(id: 7, name: "Late", species: "Cat", age: 1))
    }
    #expect(error.code == .locked)
    #expect(error.message.contains("busy timeout"))
    // Reads go on meanwhile (WAL), and see nothing of the refused write.
    #expect(RequestSet(store).count == Animal.zoo.count)
    try other.execute("ROLLBACK", doing: "release the write lock")
    try store.insert(Animal(id: 7, name: "Late", species: "Cat", age: 1))
    #expect(RequestSet(store).count == Animal.zoo.count + 1)
  }

  @Test func aClosedStoreThrowsClosed() throws {
    let store = try SQLiteStore<Animal>(path: freshPath())
    store.close()
    let error = #expect(throws: RequestSetError.self) { try store.insert(Animal.zoo[0]) }
    #expect(error?.code == .closed)
    #expect((try? store.queryReader()) == nil)
  }

  @Test func pathLiteralsQuoteTheKeyOrRefuseIt() throws {
    #expect(_SQLiteTranslation.pathLiteral(["owner", "city"]) == #"'$."owner"."city"'"#)
    #expect(_SQLiteTranslation.pathLiteral(["o'k"]) == #"'$."o''k"'"#)
    #expect(_SQLiteTranslation.pathLiteral(["x'); DROP TABLE t; --"]) == #"'$."x''); DROP TABLE t; --"'"#)
    #expect(_SQLiteTranslation.pathLiteral(["back\\slash"]) == nil)
    #expect(_SQLiteTranslation.pathLiteral(["a\"b"]) == nil)
    #expect(_SQLiteTranslation.pathLiteral(["a\u{0}b"]) == nil)
  }

  static let hostileKeys = [
    "a'b", "x'); DROP TABLE Animal; --", "name\"", "back\\slash", "$", "$.name", "a;b", "--", "nul\u{0}key",
    String(repeating: "k", count: 10_000), "owner.c'ity", "",
  ]

  @Test(arguments: hostileKeys)
  func hostileKeysNeverReachSQLAsText(_ key: String) throws {
    let path = freshPath()
    let store = try SQLiteStore<Animal>(path: path)
    try store.insert(contentsOf: Animal.zoo)
    do {
      try store.createIndex(key)
      try store.dropIndex(key)
    } catch let error as RequestSetError {
      #expect([.invalidIndex, .invalidFormat].contains(error.code))
    }
    let reader = try store.queryReader()
    #expect(try reader.count(StoreQuery(filter: try condition(key, .equal, "x"))) == 0)
    #expect(try reader.count(StoreQuery(filter: try condition(key, .notEqual, "x"))) == 6)
    #expect(try reader.count(StoreQuery(filter: try condition(key, .equal, nil))) == 6)
    #expect(try reader.count(StoreQuery(filter: try condition(key, .greaterThan, 1))) == 0)
    // No Animal holds these keys: the reader leaves the sort to the engine and says why;
    // asked to run it anyway, it reads the key through a bound pointer, never as SQL text.
    let reason =
      key.contains("\\")
      ? "the key \(key) holds a backslash, an escape the engine resolves" : "no record holds the key \(key)"
    #expect(reader.support(for: StoreSortKey(key)) == .none(reason: reason))
    var seen = 0
    try reader.records(StoreQuery(sort: [StoreSortKey(key)], limit: 3)) { _ in
      seen += 1
      return true
    }
    #expect(seen == 3)
    #expect(try store.snapshot().count == 6)
    #expect(try sqliteShell(path, "SELECT count(*) FROM Animal") == ["6"])
  }

  @Test func aCountAndAnIterationAgreeAcrossAnotherConnectionsWrite() throws {
    let path = freshPath()
    let store = try SQLiteStore<Animal>(path: path)
    try store.insert(contentsOf: Animal.zoo)
    let reader = try store.queryReader()
    let query = StoreQuery(filter: try condition("age", .greaterThan, 2))
    let counted = try reader.count(query)
    let other = try SQLiteStore<Animal>(path: path)
    try other.insert(Animal(id: 20, name: "Late", species: "Dog", age: 9))
    var iterated = 0
    try reader.records(query) { _ in
      iterated += 1
      return true
    }
    #expect(counted == 5)
    #expect(iterated == counted)
    #expect(try store.queryReader().count(query) == 6)
    #expect(try store.queryReader().version == reader.version + 1)
  }

  @Test func recordsStopWhenTheBodyReturnsFalse() throws {
    let store = try SQLiteStore<Animal>(path: freshPath())
    try store.insert(contentsOf: Animal.zoo)
    var ids: [Int] = []
    try store.queryReader().records(StoreQuery()) { animal in
      ids.append(animal.id)
      return ids.count < 2
    }
    #expect(ids == [1, 2])
  }

  @Test func applyChecksTheVersionInsideTheTransaction() throws {
    let store = try SQLiteStore<Animal>(path: freshPath())
    try store.insert(contentsOf: Animal.zoo)
    let version = try store.snapshot().version
    try store.apply([.delete(id: 1)], ifVersion: version)
    let error = #expect(throws: RequestSetError.self) { try store.apply([.delete(id: 2)], ifVersion: version) }
    #expect(error?.code == .conflict)
    #expect(try store.fetch(id: 2) != nil)
    let batch = #expect(throws: RequestSetError.self) {
      try store.apply([.insert(Animal.zoo[0]), .insert(Animal.zoo[0])], ifVersion: nil)
    }
    #expect(batch?.code == .duplicateID)
    #expect(batch?.message.contains("twice") == true)
    #expect(try store.fetch(id: 1) == nil)
  }

  /// The translation against the engine's own test, on the zoo plus records whose kinds mix.
  static let filters: [StoreFilter] = {
    let f = { (k: String, op: RequestComparison, v: (any Encodable & Sendable)?) in try! condition(k, op, v) }
    return [
      f("nickname", .equal, nil), f("nickname", .notEqual, nil), f("nickname", .notEqual, "Mick"),
      f("age", .greaterThan, 3), f("age", .lessThanOrEqual, 5.5), f("weight", .equal, 30),
      f("name", .lessThan, "a"), f("name", .greaterThanOrEqual, "Rex"), f("owner.city", .equal, "Oslo"),
      f("owner.city", .notEqual, "Oslo"), f("owner", .equal, nil), f("tags", .equal, ["farm"]),
      f("name", .equal, "E\u{301}mile"), f("age", .greaterThan, "3"), f("species", .greaterThan, 3),
      f("flag", .equal, true), f("flag", .notEqual, true), f("flag", .greaterThan, 0), f("flag", .equal, 1),
      f("mixed", .greaterThan, 2), f("mixed", .lessThan, "z"), f("mixed", .equal, 3),
      .not(f("nickname", .equal, "Mick")), .not(.or([f("age", .greaterThan, 4), f("nickname", .equal, nil)])),
      .and([f("species", .equal, "Cow"), .not(f("age", .lessThan, 3))]),
      try! condition("name", .equal, "ALICE", collation: .caseInsensitive),
      try! condition("name", .lessThan, "b", collation: .caseInsensitive),
    ]
  }()

  @Test(arguments: filters.indices)
  func translatedFiltersSelectWhatTheEngineSelects(_ i: Int) throws {
    let filter = Self.filters[i]
    let store = try SQLiteStore<DynamicRecord>(path: freshPath())
    var rows = try Animal.zoo.map { try FieldValue(encoding: $0) }
    let extras: [FieldValue] = [
      .object(["id": .int(100), "mixed": .string("3"), "flag": .bool(true), "name": .string("\u{C9}mile")]),
      .object(["id": .int(101), "mixed": .int(3), "flag": .int(1)]),
      .object(["id": .int(102), "mixed": .double(3.0), "flag": .bool(false)]),
      .object(["id": .int(103), "mixed": .array([.int(1)]), "flag": .null]),
      .object(["id": .int(104), "mixed": .object(["a": .int(1)]), "flag": .string("true")]),
    ]
    rows += extras
    try store.insert(contentsOf: rows.map { try DynamicRecord($0) })
    try store.createIndex("age")
    let expected = rows.filter { engineMatches(filter, $0) }.map { $0[path: "id"] }
    let reader = try store.queryReader()
    var got: [FieldValue?] = []
    try reader.records(StoreQuery(filter: filter)) { record in
      got.append(try FieldValue(encoding: record)[path: "id"])
      return true
    }
    #expect(got.map { $0?.description } == expected.map { $0?.description }, "\(filter)")
    #expect(try reader.count(StoreQuery(filter: filter)) == expected.count)
  }

  @Test(arguments: ["nickname", "mixed", "owner.city", "tags", "name"], [RequestSortOrder.ascending, .descending])
  func sortsOrderAsTheEngineDoes(_ key: String, _ order: RequestSortOrder) throws {
    let store = try SQLiteStore<DynamicRecord>(path: freshPath())
    var rows = try Animal.zoo.map { try FieldValue(encoding: $0) }
    rows += [
      .object(["id": .int(100), "mixed": .string("3"), "tags": .array([.string("a"), .int(2)])]),
      .object(["id": .int(101), "mixed": .int(3), "tags": .array([.string("a")])]),
      .object(["id": .int(102), "mixed": .double(2.5), "name": .string("\u{C9}mile")]),
      .object(["id": .int(103), "mixed": .array([.int(1)]), "nickname": .null]),
      .object(["id": .int(104), "mixed": .object(["a": .int(1)]), "owner": .object(["city": .bool(true)])]),
      .object(["id": .int(105), "mixed": .bool(false), "name": .string("zz")]),
    ]
    try store.insert(contentsOf: rows.map { try DynamicRecord($0) })
    let sortKey = StoreSortKey(key, order: order)
    let expected = rows.enumerated().sorted { a, b in
      let c = sortKey.compare(a.element[path: key] ?? .null, b.element[path: key] ?? .null)
      return c != 0 ? c < 0 : a.offset < b.offset
    }.map { $0.element[path: "id"]!.description }
    var got: [String] = []
    try store.queryReader().records(StoreQuery(sort: [sortKey])) { record in
      got.append(try FieldValue(encoding: record)[path: "id"]!.description)
      return true
    }
    #expect(got == expected)
  }

  @Test func ownCommitsArriveOnceEvenWhenThePollerFallsBehindThePruning() async throws {
    let store = try SQLiteStore<Animal>(path: freshPath(), table: nil, changesKept: 64)
    // The poller sleeps through more commits than requestset_changes keeps.
    let stream = store.commits(polling: .milliseconds(400))
    let start = try store.snapshot().version
    for i in 0..<1_500 { try store.insert(Animal(id: 10 + i, name: "n\(i)", species: "Cow", age: 1)) }
    let last = try store.snapshot().version
    try await Task.sleep(for: .milliseconds(900))  // at least one poll after the burst
    try store.insert(Animal(id: 1, name: "Last", species: "Cow", age: 1))
    var versions: [UInt64] = []
    var unknown = 0
    for await commit in stream {
      versions.append(commit.version)
      if commit.changes == nil { unknown += 1 }
      if commit.version == last + 1 { break }
    }
    #expect(versions == Array((start + 1)...(last + 1)))
    #expect(unknown == 0)
  }

  /// Keys a JSON path cannot spell (a backslash, U+0000), keys with quotes, and rows that
  /// are not plain (an object with a key that is not NFC is kept tagged, so a JSON path
  /// into it reads nothing): the store reads the key as the engine does and sorts in SQL.
  @Test(arguments: ["it's", "nul\u{0}key", "say \"hi\"", "n"], [false, true])
  func sortsReadAwkwardKeysAndRowsThatAreNotPlain(_ key: String, _ tagged: Bool) throws {
    let store = try SQLiteStore<DynamicRecord>(path: freshPath())
    let values: [FieldValue] = [.int(3), .string("b"), .null, .double(-0.0), .int(1), .string("a"), .bool(true)]
    var rows: [FieldValue] = []
    for (i, value) in values.enumerated() {
      var fields: [String: FieldValue] = ["id": .int(i), key: value]
      // "e" + U+0301 is not NFC: the whole object is written tagged, not plain.
      if tagged && i % 2 == 0 { fields["e\u{301}"] = .int(i) }
      rows.append(.object(fields))
    }
    rows.append(.object(["id": .int(99)]))
    try store.insert(contentsOf: rows.map { try DynamicRecord($0) })
    let reader = try store.queryReader()
    for order in [RequestSortOrder.ascending, .descending] {
      let sortKey = StoreSortKey(key, order: order)
      #expect(reader.support(for: sortKey) == .exact)
      let expected = rows.enumerated().sorted { a, b in
        let c = sortKey.compare(a.element[path: key] ?? .null, b.element[path: key] ?? .null)
        return c != 0 ? c < 0 : a.offset < b.offset
      }.map { $0.element[path: "id"]!.description }
      var got: [String] = []
      try reader.records(StoreQuery(sort: [sortKey], offset: 1, limit: 6)) { record in
        got.append(try FieldValue(encoding: record)[path: "id"]!.description)
        return true
      }
      #expect(got == Array(expected[1..<7]), "\(sortKey)")
    }
  }

  /// A key no row holds is left to the engine, which knows what it means for the type
  /// (`.unknownKey` for a `DynamicRecord`, nil everywhere for an optional property).
  @Test func aSortByAKeyNoRowHoldsIsLeftToTheEngine() throws {
    let store = try SQLiteStore<DynamicRecord>(path: freshPath())
    try store.insert(contentsOf: [
      DynamicRecord(id: .int(1), fields: ["a": .int(2), "e\u{301}": .int(0)]),
      DynamicRecord(id: .int(2), fields: ["a": .null]),
    ])
    let reader = try store.queryReader()
    #expect(reader.support(for: StoreSortKey("a")) == .exact)
    #expect(reader.support(for: StoreSortKey("e\u{301}")) == .exact)
    #expect(reader.support(for: StoreSortKey("nope")) == .none(reason: "no record holds the key nope"))
    #expect(throws: RequestSetError.self) { try RequestSet(store).sortBy("nope").fetch() }
    let error = try #require(throws: RequestSetError.self) { try RequestSet(store).sortBy("nope").fetch() }
    #expect(error.code == .unknownKey)
  }

  @Test func anotherConnectionsCommitsArriveWithTheirChanges() async throws {
    let path = freshPath()
    let store = try SQLiteStore<Animal>(path: path)
    let other = try SQLiteStore<Animal>(path: path)
    let stream = store.commits(polling: .milliseconds(10))
    try store.insert(Animal.zoo[0])
    try other.insert(Animal.zoo[1])
    try other.delete(id: 1)
    var seen: [String] = []
    for await commit in stream {
      for change in commit.changes ?? [] {
        switch change {
        case .insert(let a): seen.append("insert \(a.id)")
        case .save(let a): seen.append("save \(a.id)")
        case .delete(let id): seen.append("delete \(id)")
        }
      }
      if seen.count == 3 { break }
    }
    #expect(seen == ["insert 1", "insert 2", "delete 1"])
  }

  @Test func deleteMatchingRunsOneStatementAndReportsTheChanges() async throws {
    let store = try SQLiteStore<Animal>(path: freshPath())
    try store.insert(contentsOf: Animal.zoo)
    let stream = store.commits(polling: .seconds(10))
    let deleted = try store.delete(matching: StoreQuery(filter: try condition("species", .equal, "Cow")))
    #expect(deleted == 2)
    #expect(Array(RequestSet(store)).map(\.id) == [1, 3, 5, 6])
    for await commit in stream {
      #expect(commit.changes?.map(\.id) == [2, 4])
      break
    }
  }
}
