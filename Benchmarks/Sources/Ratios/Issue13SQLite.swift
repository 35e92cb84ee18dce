import BenchmarkSupport
import Foundation
import GRDB
import RequestSet
import RequestSetSQLite

// Issue 13, SQLite: SQLiteStore against GRDB running the store's statements on a table and
// indexes made from the store's own `CREATE` statements.

/// The peer's table name (the store's is the record type's name, `Animal`).
private let grdbTable = "\"animal_grdb\""

/// A GRDB database laid out as the store at `storePath` lays out its table: the store's
/// `CREATE TABLE` and `CREATE INDEX` statements from `sqlite_master`, renamed.
private func grdbCopy(of storePath: String, at path: String, indexes: Bool) throws -> DatabaseQueue {
  let source = try DatabaseQueue(path: storePath)
  let statements = try source.read { db in
    try String.fetchAll(
      db,
      sql:
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'Animal' AND sql IS NOT NULL AND (type = 'table' OR ?) ORDER BY type = 'index'",
      arguments: [indexes])
  }
  try source.close()
  guard !statements.isEmpty else {
    throw PostgresFailure(description: "the SQLiteStore file holds no Animal table")
  }
  remove(path, ["", "-journal", "-wal", "-shm"])
  let db = try DatabaseQueue(path: path, configuration: grdbConfiguration())
  try db.write { db in
    for statement in statements { try db.execute(sql: renamed(statement)) }
  }
  return db
}

/// The store's DDL with the peer's table name (and index names made distinct).
private func renamed(_ ddl: String) -> String {
  ddl.replacingOccurrences(of: "\"Animal\"", with: grdbTable)
    .replacingOccurrences(of: " Animal ", with: " \(grdbTable) ")
    .replacingOccurrences(of: " Animal(", with: " \(grdbTable)(")
}

/// The connection settings the store uses, so both sides pay for the same journal and syncs.
private func grdbConfiguration() -> Configuration {
  var configuration = Configuration()
  configuration.prepareDatabase { db in
    try db.execute(sql: "PRAGMA journal_mode = WAL")
  }
  // The sort statement names the store's collation (on values it never reaches for plain
  // rows: the third ORDER BY term is NULL unless the value is an array or object).
  configuration.prepareDatabase { db in
    db.add(
      collation: DatabaseCollation("rs_binary") { a, b in
        a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
      })
  }
  return configuration
}

/// Inserts `animals` the way a GRDB user would: one transaction, one prepared INSERT,
/// bodies through JSONEncoder.
private func grdbInsert(_ db: DatabaseQueue, _ animals: [Animal]) throws {
  let encoder = JSONEncoder()
  try db.write { db in
    let insert = try db.makeStatement(sql: Issue13Statements.sqlite.text(\.insert, table: grdbTable))
    for a in animals {
      try insert.execute(arguments: [String(a.id), try jsonBody(encoder, a), true])
    }
  }
}

/// The records a statement returns, bodies decoded with JSONDecoder.
private func grdbRecords(_ db: DatabaseQueue, _ sql: String, _ arguments: StatementArguments = []) throws
  -> [Animal]
{
  let decoder = JSONDecoder()
  return try db.read { db in
    var animals: [Animal] = []
    let rows = try GRDB.Row.fetchCursor(db, sql: sql, arguments: arguments)
    while let row = try rows.next() {
      animals.append(try decoder.decode(Animal.self, from: row[0] as Data))
    }
    return animals
  }
}

private func grdbCount(_ db: DatabaseQueue, _ sql: String, _ arguments: StatementArguments) throws -> Int {
  try db.read { try Int.fetchOne($0, sql: sql, arguments: arguments) ?? 0 }
}

/// What a store's reader runs for `query` (statement, bindings, plan), for the printed
/// comparison with the peer's text.
func storeExplanation<S: QueryPushdownStore>(_ store: S, _ query: StoreQuery) throws -> StoreExplanation {
  try store.queryReader().explain(query)
}

func sqliteRows(_ animals: [Animal]) throws -> [Row] {
  let n = animals.count
  let records = "\(grouped(n)) records"
  let storePath = scratch + "/issue13-store.sqlite"
  let grdbPath = scratch + "/issue13-grdb.sqlite"
  let suffixes = ["", "-journal", "-wal", "-shm"]
  defer {
    remove(storePath, suffixes)
    remove(grdbPath, suffixes)
  }
  let sql = Issue13Statements.sqlite
  var rows: [Row] = []

  // Insert: a fresh file each run, outside the timing; the peer's table is the store's.
  progress("  issue 13, SQLite: insert…")
  var store: SQLiteStore<Animal>! = nil
  var grdb: DatabaseQueue! = nil
  var oursInsert: [Double] = []
  var grdbInsertTimes: [Double] = []
  for _ in 0..<3 {
    store?.close()
    remove(storePath, suffixes)
    store = try SQLiteStore<Animal>(path: storePath)
    oursInsert.append(try timed { try store.insert(contentsOf: animals) }.ms)
    grdb = try grdbCopy(of: storePath, at: grdbPath, indexes: true)
    grdbInsertTimes.append(try timed { try grdbInsert(grdb, animals) }.ms)
  }
  rows.append(
    issue13Row(
      "`insert(contentsOf:)` of \(records)", oursInsert.sorted()[1],
      "GRDB: one transaction of prepared INSERTs (seq, id, body, plain), body by JSONEncoder",
      grdbInsertTimes.sorted()[1],
      limit: 1.2, target: "≤ 1.2×"))

  // The index the lookup uses, on both sides: the store's own statement, copied.
  try store.createIndex("species")
  let indexDDL = try DatabaseQueue(path: storePath).read { db in
    try String.fetchAll(
      db,
      sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Animal' AND sql IS NOT NULL")
  }
  try grdb.write { db in
    for ddl in indexDDL where ddl.contains("species") { try db.execute(sql: renamed(ddl)) }
  }

  progress("  issue 13, SQLite: queries…")
  let lookupOurs = try median(runs: 3) { keep(try Issue13Query.lookup(store)) }
  let lookupPeer = try median(runs: 3) {
    keep(try grdbRecords(grdb, sql.text(\.lookup, table: grdbTable), [Issue13Query.species]))
  }
  rows.append(
    issue13Row(
      "indexed lookup `filter(\"species\", value: \"Cow\")` → \(grouped(try Issue13Query.lookup(store).count)) records",
      lookupOurs, "GRDB: the same SELECT and expression index, rows decoded with JSONDecoder", lookupPeer,
      limit: 1.2,
      target: "≤ 1.2×"))

  let rangeOurs = median(runs: 5) { keep(Issue13Query.rangeCount(store)) }
  let rangePeer = try median(runs: 5) {
    keep(try grdbCount(grdb, sql.text(\.rangeCount, table: grdbTable), [Issue13Query.ageAbove]))
  }
  rows.append(
    issue13Row(
      "filtered count `filter(\"age\", .greaterThan, \(Issue13Query.ageAbove)).count`", rangeOurs,
      "GRDB: the same SELECT count(*)",
      rangePeer, limit: 1.2, target: "≤ 1.2×"))

  let sortOurs = try median(runs: 5) { keep(try Issue13Query.sortLimit(store)) }
  let sortPeer = try median(runs: 5) {
    keep(try grdbRecords(grdb, sql.text(\.sortLimit, table: grdbTable), [10, 0]))
  }
  rows.append(
    issue13Row(
      "sort + limit `sortBy(\"age\").limit(10)` (no index on age)", sortOurs,
      "GRDB: the same SELECT, rows decoded with JSONDecoder",
      sortPeer, limit: 1.2, target: "≤ 1.2×"))

  let equalityOurs = median(runs: 5) { keep(Issue13Query.equalityCount(store)) }
  let equalityPeer = try median(runs: 5) {
    keep(try grdbCount(grdb, sql.text(\.equalityCount, table: grdbTable), [Issue13Query.ageEquals]))
  }
  rows.append(
    issue13Row(
      "equality count, no index, pushed down `filter(\"age\", value: \(Issue13Query.ageEquals)).count`",
      equalityOurs,
      "SQLite's own speed: the same SELECT count(*) through GRDB", equalityPeer, limit: 1.2,
      target: "SQLite's speed (≤ 1.2×)"))
  progress("  issue 13, SQLite: the in-process paths…")
  let closure = timed { Issue13Query.equalityCountInProcess(store) }.ms
  rows.append(
    issue13Row(
      "(the gap) the same count as a closure `filter { $0.age == \(Issue13Query.ageEquals) }.count`: every row fetched and decoded",
      closure, "SQLite's own speed", equalityPeer, limit: nil, target: "—"))
  let plain = timed { Issue13Query.equalityCount(PlainStore(store)) }.ms
  rows.append(
    issue13Row(
      "(the gap) the same count through a plain `RecordStore` wrapper (no pushdown: snapshot, then in process)",
      plain,
      "SQLite's own speed", equalityPeer, limit: nil, target: "—"))

  try printStatements("SQLite", store, storeTable: "\"Animal\"", sql)
  print("\n`explain()` of the lookup on the SQLiteStore:\n")
  print(RequestSet(store).filter("species", value: Issue13Query.species).explain())
  store.close()
  try grdb.close()
  return rows
}

/// Prints, per scenario, the statement the store's reader reports (with its bindings and
/// plan) and whether the peer runs the same text.
func printStatements<S: QueryPushdownStore>(
  _ engine: String, _ store: S, storeTable: String, _ peer: Issue13Statements
) throws
where S.Element == Animal {
  let scenarios: [(String, StoreQuery, KeyPath<Issue13Statements, String>, Bool)] = [
    (
      "indexed lookup",
      StoreQuery(filter: .condition(try StoreCondition("species", .equal, Issue13Query.species))), \.lookup,
      false
    ),
    (
      "filtered count",
      StoreQuery(filter: .condition(try StoreCondition("age", .greaterThan, Issue13Query.ageAbove))),
      \.rangeCount, true
    ),
    ("sort + limit", StoreQuery(sort: [StoreSortKey("age")], limit: 10), \.sortLimit, false),
    (
      "equality count",
      StoreQuery(filter: .condition(try StoreCondition("age", .equal, Issue13Query.ageEquals))),
      \.equalityCount, true
    ),
  ]
  print(
    "\nStatements, \(engine): what the store's reader explains, and whether the peer runs the same text\n")
  for (name, query, statement, counting) in scenarios {
    let explanation = try storeExplanation(store, query)
    let same = sameStatement(
      store: explanation.statement, storeTable: storeTable, peer: peer[keyPath: statement], counting: counting
    )
    print(
      "- \(name)\(counting ? " (the reader's count runs SELECT count(*) with this WHERE)" : ""): `\(explanation.statement)`"
    )
    print(
      "  bindings \(explanation.bindings); peer's text: \(same ? "the same" : "**DIFFERS**: `\(peer[keyPath: statement])`")"
    )
    print("  plan: " + explanation.plan.joined(separator: " / "))
  }
}
