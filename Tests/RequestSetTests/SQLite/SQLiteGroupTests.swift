import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetSQLite

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// A record whose keys hold one JSON type each, or several.
private struct Mixed: Record {
  var id: Int
  var text: String
  var number: Double
  var flag: Bool?
  var pad: String
}

/// SQLite's `GROUP BY` statements check that SQL groups the keys' values as the engine
/// does, and their filters (and a count's) test each value's JSON type; both read the key's
/// value, which an index holds, when the table's summary of kinds shows the value tells the
/// types apart.
@Suite(.ownThreads) struct SQLiteGroupTests {
  @Test func theTypeTestReadsTheValueWhereTheSummaryAllows() {
    let path = "'$.\"k\"'"
    func readsValue(_ types: [String], _ held: Set<StoreFieldKinds.Kind>?) -> Bool {
      let type = _SQLiteTranslation.typeExpression(path, testing: types, held: held)
      #expect(type == "typeof(json_extract(body, \(path)))" || type == "json_type(body, \(path))")
      return type.hasPrefix("typeof")
    }
    let grouping = ["integer", "text", "null"]
    #expect(readsValue(grouping, [.string, .null]))
    #expect(readsValue(grouping, [.number, .string]))  // a Double reads as 'real'
    #expect(readsValue(grouping, []))
    #expect(!readsValue(grouping, [.number, .bool]))  // true reads as the integer 1
    #expect(!readsValue(grouping, [.string, .array]))  // an array reads as text
    #expect(!readsValue(grouping, [.object]))
    #expect(!readsValue(grouping, nil))  // no summary: the body
    // Where text is not tested, an array or object reading as text still fails the test;
    // where integers are not, a Bool reading as one does.
    #expect(readsValue(["integer", "real"], [.number, .array, .object]))
    #expect(readsValue(["text"], [.string, .bool]))
    #expect(!readsValue(["integer", "real"], [.bool]))
    #expect(!readsValue(["text"], [.string, .object]))
  }

  /// The two checks over the same table, each on a fresh connection: the one that reads
  /// the value reads the index's pages alone, the other every record's body.
  @Test func theValueCheckReadsTheIndexNotTheBodies() throws {
    let path = TemporaryLogDirectory.freshPath("groups.sqlite")
    var setup: OpaquePointer?
    guard sqlite3_open(path, &setup) == SQLITE_OK else { throw RequestSetError(.ioFailure, "no database") }
    let pad = String(repeating: "x", count: 2_000)
    let made = sqlite3_exec(
      setup,
      """
      CREATE TABLE t(body TEXT);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
      INSERT INTO t SELECT json_object('k', 'c' || (i % 16), 'pad', '\(pad)') FROM n;
      CREATE INDEX tk ON t(json_extract(body, '$."k"'));
      """, nil, nil, nil)
    sqlite3_close(setup)
    #expect(made == SQLITE_OK)
    func pagesRead(_ check: String) throws -> (misses: Int32, groups: Int) {
      var db: OpaquePointer?
      guard sqlite3_open(path, &db) == SQLITE_OK else { throw RequestSetError(.ioFailure, "no database") }
      defer { sqlite3_close(db) }
      var statement: OpaquePointer?
      let sql = "SELECT json_extract(body, '$.\"k\"'), \(check), count(*) FROM t GROUP BY json_extract(body, '$.\"k\"')"
      guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
        throw RequestSetError(.invalidSQL, String(cString: sqlite3_errmsg(db)))
      }
      var groups = 0
      while sqlite3_step(statement) == SQLITE_ROW {
        #expect(sqlite3_column_int(statement, 1) == 0 && sqlite3_column_int(statement, 2) == 125)
        groups += 1
      }
      sqlite3_finalize(statement)
      var misses: Int32 = 0, highwater: Int32 = 0
      sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_MISS, &misses, &highwater, 0)
      return (misses, groups)
    }
    func check(_ held: Set<StoreFieldKinds.Kind>?) -> String {
      let type = _SQLiteTranslation.typeExpression("'$.\"k\"'", testing: ["integer", "text", "null"], held: held)
      return "count(CASE WHEN \(type) NOT IN ('integer', 'text', 'null') THEN 1 END)"
    }
    let value = try pagesRead(check([.string]))
    let body = try pagesRead(check(nil))
    #expect(value.groups == 16 && body.groups == 16)
    // 2,000 bodies of 2 KB fill about 1,000 pages; the index fits in a few.
    #expect(value.misses * 10 < body.misses, "pages read: \(value.misses) from the value, \(body.misses) from bodies")
  }

  /// Through the store: groups over keys of one type or several, with an index on each,
  /// give the same rows as the same query over a plain array.
  @Test(arguments: [11, 12])
  func groupsOverIndexedKeysMatchTheArray(seed: UInt64) throws {
    var random = SeededRandom(seed: seed)
    let records = (0..<300).map { i in
      Mixed(
        id: i, text: ["a", "b", "c", "d"][Int.random(in: 0..<4, using: &random)],
        number: i % 7 == 0 ? 2.5 : Double(Int.random(in: 0..<3, using: &random)),
        flag: i % 5 == 0 ? nil : Bool.random(using: &random), pad: "")
    }
    let store = try SQLiteStore<Mixed>(path: TemporaryLogDirectory.freshPath("mixed.sqlite"))
    try store.insert(contentsOf: records)
    for key in ["text", "number", "flag"] { try store.createIndex(key) }
    for key in ["text", "number", "flag"] {
      let stored = try RequestSet(store).groupBy(key).aggregate(.count).sortBy(key).fetch()
      let reference = try RequestSet(records).groupBy(key).aggregate(.count).sortBy(key).fetch()
      #expect(stored == reference, "\(key)")
    }
    // The reference for the string key, counted by hand.
    let counted = Dictionary(grouping: records, by: \.text).mapValues(\.count)
    let rows = try RequestSet(store).groupBy("text").aggregate(.count).fetch()
    #expect(rows.count == counted.count)
    for row in rows {
      guard case .string(let text)? = row["text"], case .int(let n)? = row["count"] else {
        Issue.record("row \(row)")
        continue
      }
      #expect(counted[text] == n)
    }
  }

  /// The statement a group query runs: over an indexed text key that has held only text, a
  /// filter and a check on the value alone; over a key that has held a Bool, on the body.
  @Test func theGroupStatementReadsValuesWhereTheKeysAllow() throws {
    let records = (0..<60).map { i in
      Mixed(id: i, text: ["a", "b", "c"][i % 3], number: Double(i % 4), flag: i % 2 == 0, pad: "")
    }
    let store = try SQLiteStore<Mixed>(path: TemporaryLogDirectory.freshPath("statements.sqlite"), table: "group_watch")
    try store.insert(contentsOf: records)
    try store.createIndex("text")
    func statements(_ body: () throws -> [RequestRow]) throws -> (rows: [RequestRow], sql: [String]) {
      let seen = Mutex<[String]>([])
      let rows = try _SQLiteConnection._watchStatements(
        { sql in
          // The hook sees every test's statements: only this table's groups count.
          if sql.contains("FROM \"group_watch\"") && sql.contains(" GROUP BY ") { seen.withLock { $0.append(sql) } }
        }, during: body)
      return (rows, seen.withLock { $0 })
    }
    let text = try statements {
      try RequestSet(store).filter("text IN %@", ["a", "b"]).groupBy("text").aggregate(.count).sortBy("text").fetch()
    }
    #expect(text.rows.map { $0["count"] } == [FieldValue.int(20), .int(20)])
    #expect(text.sql.count == 1)
    #expect(text.sql.allSatisfy { $0.contains("typeof(json_extract(body, '$.\"text\"'))") && !$0.contains("json_type(") })
    let flag = try statements {
      try RequestSet(store).filter("number", .greaterThan, 0).groupBy("flag").aggregate(.count).fetch()
    }
    // Bools group in process (SQLite reads them as integers), after the statement declines.
    #expect(flag.sql.count == 1)
    #expect(flag.sql.allSatisfy { $0.contains("json_type(body, '$.\"flag\"')") })
    #expect(flag.sql.allSatisfy { $0.contains("typeof(json_extract(body, '$.\"number\"'))") })
    let reference = try RequestSet(records).filter("number", .greaterThan, 0).groupBy("flag").aggregate(.count)
      .sortBy("flag").fetch()
    #expect(
      try RequestSet(store).filter("number", .greaterThan, 0).groupBy("flag").aggregate(.count).sortBy("flag").fetch()
        == reference)
  }

  /// A count reads no record, so its filter's type tests read the key's value too: over an
  /// indexed key that has held only text the index answers it; a key that has held a Bool
  /// keeps the body's JSON type. Counts equal the array's.
  @Test func aCountsTypeTestsReadValuesWhereTheKeysAllow() throws {
    let records = (0..<90).map { i in
      Mixed(id: i, text: ["a", "b", "c"][i % 3], number: i % 5 == 0 ? 1.5 : Double(i % 4), flag: i % 2 == 0, pad: "")
    }
    let store = try SQLiteStore<Mixed>(path: TemporaryLogDirectory.freshPath("counts.sqlite"), table: "count_watch")
    try store.insert(contentsOf: records)
    try store.createIndex("text")
    var reference = records
    func counted(_ format: String, _ argument: any Sendable) throws -> (count: Int, sql: [String]) {
      let seen = Mutex<[String]>([])
      let count = try _SQLiteConnection._watchStatements(
        { sql in
          if sql.hasPrefix("SELECT count(*) FROM \"count_watch\"") { seen.withLock { $0.append(sql) } }
        }, during: { try RequestSet(store).filter(format, argument).fetchCount() })
      #expect(count == (try RequestSet(reference).filter(format, argument).fetchCount()), "\(format)")
      return (count, seen.withLock { $0 })
    }
    let text = try counted("text == %@", "b")
    #expect(text.count == 30 && text.sql.count == 1)
    #expect(text.sql.allSatisfy { $0.contains("typeof(json_extract(body, '$.\"text\"'))") && !$0.contains("json_type(") })
    let numbers = try counted("number > %@", 1)
    #expect(numbers.sql.allSatisfy { $0.contains("typeof(json_extract(body, '$.\"number\"'))") })
    let listed = try counted("text IN %@", ["a", "c"])
    #expect(listed.count == 60 && listed.sql.allSatisfy { !$0.contains("json_type(") })
    // A Bool key's test reads the body: its value would read as an integer.
    let flags = try counted("flag == %@", true)
    #expect(flags.count == 45 && flags.sql.allSatisfy { $0.contains("json_type(body, '$.\"flag\"')") })
    let added = Mixed(id: 200, text: "x", number: 2, flag: nil, pad: "")
    try store.save(added)
    reference.append(added)
    let afterSave = try counted("number == %@", 2)
    #expect(afterSave.count == records.filter { $0.number == 2 }.count + 1)
  }
}
