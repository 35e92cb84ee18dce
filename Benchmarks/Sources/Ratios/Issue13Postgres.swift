import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetPostgres

// Issue 13, PostgreSQL: PostgresStore against plain libpq running the store's statements
// with the same parameters, on a private server (or REQUESTSET_POSTGRES_URL's).

/// The tables: the store's and the peer's, side by side in one database.
private let storeTable = "issue13_store"
private let peerTable = "issue13_libpq"

/// The peer's table: the store's columns (seq, id, body jsonb, plain).
private let peerTableDDL = """
  CREATE TABLE \(peerTable) (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text NOT NULL UNIQUE,
    body jsonb NOT NULL, plain boolean NOT NULL)
  """

/// Inserts `animals` the way a libpq user would: one transaction, `PQexecParams` per row,
/// bodies through JSONEncoder.
private func libpqInsert(_ pq: PlainLibPQ, _ animals: [Animal]) throws {
  let encoder = JSONEncoder()
  let insert = Issue13Statements.postgres.text(\.insert, table: peerTable)
  try pq.exec("BEGIN")
  for a in animals {
    try pq.exec(insert, [String(a.id), try jsonBody(encoder, a), "true"])
  }
  try pq.exec("COMMIT")
}

/// The records a statement returns, bodies decoded with JSONDecoder.
private func libpqRecords(_ pq: PlainLibPQ, _ sql: String, _ parameters: [String?] = []) throws -> [Animal] {
  let decoder = JSONDecoder()
  var animals: [Animal] = []
  try pq.forEachText(sql, parameters) { text in
    let bytes = UnsafeRawBufferPointer(start: text, count: strlen(text))
    animals.append(try decoder.decode(Animal.self, from: Data(bytes)))
  }
  return animals
}

func postgresRows(_ animals: [Animal]) throws -> [Row] {
  let n = animals.count
  let records = "\(grouped(n)) records"
  progress("  issue 13, PostgreSQL: starting a server…")
  let server = try PrivatePostgres()
  defer { server.stop() }
  let pq = try PlainLibPQ(url: server.url)
  let sql = Issue13Statements.postgres
  var rows: [Row] = []

  try? PostgresStore<Animal>.dropTable(url: server.url, table: storeTable)
  try pq.exec("DROP TABLE IF EXISTS \(peerTable)")
  try pq.exec(peerTableDDL)
  let store = try PostgresStore<Animal>(url: server.url, table: storeTable)
  defer {
    store.close()
    try? PostgresStore<Animal>.dropTable(url: server.url, table: storeTable)
    try? pq.exec("DROP TABLE IF EXISTS \(peerTable)")
  }

  // Insert: one run each (a 1M-row insert is long); both tables are then VACUUM ANALYZEd.
  progress("  issue 13, PostgreSQL: insert…")
  let oursInsert = try timed { try store.insert(contentsOf: animals) }.ms
  let peerInsert = try timed { try libpqInsert(pq, animals) }.ms
  rows.append(
    issue13Row(
      "`insert(contentsOf:)` of \(records)", oursInsert,
      "libpq: one transaction of `PQexecParams` INSERTs (seq, id, body, plain), body by JSONEncoder", peerInsert, limit: 1.2,
      target: "≤ 1.2×"))

  // The lookup's index on both sides: the store's own definition, copied from pg_indexes.
  try store.createIndex("species")
  var definitions: [String] = []
  try pq.forEachText("SELECT indexdef FROM pg_indexes WHERE tablename = $1", [storeTable]) { definitions.append(String(cString: $0)) }
  for (i, definition) in definitions.enumerated() where definition.contains("species") {
    var ddl = definition.replacingOccurrences(of: storeTable, with: peerTable)
    if let name = ddl.range(of: #"INDEX \S+ ON"#, options: .regularExpression) {
      ddl.replaceSubrange(name, with: "INDEX issue13_libpq_\(i) ON")
    }
    try pq.exec(ddl)
  }
  try pq.exec("VACUUM ANALYZE \(storeTable)")
  try pq.exec("VACUUM ANALYZE \(peerTable)")

  progress("  issue 13, PostgreSQL: queries…")
  let lookupOurs = try median(runs: 3) { keep(try Issue13Query.lookup(store)) }
  let lookupPeer = try median(runs: 3) { keep(try libpqRecords(pq, sql.text(\.lookup, table: peerTable), [Issue13Query.species])) }
  rows.append(
    issue13Row(
      "indexed lookup `filter(\"species\", value: \"Cow\")` → \(grouped(try Issue13Query.lookup(store).count)) records",
      lookupOurs, "libpq: the same SELECT and expression index, rows decoded with JSONDecoder", lookupPeer, limit: 1.2,
      target: "≤ 1.2×"))

  let rangeOurs = median(runs: 5) { keep(Issue13Query.rangeCount(store)) }
  let rangePeer = try median(runs: 5) {
    keep(try pq.integer(sql.text(\.rangeCount, table: peerTable), [String(Issue13Query.ageAbove)]))
  }
  rows.append(
    issue13Row(
      "filtered count `filter(\"age\", .greaterThan, \(Issue13Query.ageAbove)).count`", rangeOurs, "libpq: the same SELECT count(*)",
      rangePeer, limit: 1.2, target: "≤ 1.2×"))

  let sortOurs = try median(runs: 5) { keep(try Issue13Query.sortLimit(store)) }
  let sortPeer = try median(runs: 5) { keep(try libpqRecords(pq, sql.text(\.sortLimit, table: peerTable))) }
  rows.append(
    issue13Row(
      "sort + limit `sortBy(\"age\").limit(10)` (no index on age)", sortOurs, "libpq: the same SELECT, rows decoded with JSONDecoder",
      sortPeer, limit: 1.2, target: "≤ 1.2×"))

  let equalityOurs = median(runs: 5) { keep(Issue13Query.equalityCount(store)) }
  let equalityPeer = try median(runs: 5) {
    keep(try pq.integer(sql.text(\.equalityCount, table: peerTable), [String(Issue13Query.ageEquals)]))
  }
  rows.append(
    issue13Row(
      "equality count, no index, pushed down `filter(\"age\", value: \(Issue13Query.ageEquals)).count`", equalityOurs,
      "libpq: the same SELECT count(*)", equalityPeer, limit: 1.2, target: "≤ 1.2×"))

  printStatements(
    "PostgreSQL",
    [
      ("lookup", storeStatement(store, try StoreQuery(filter: .condition(StoreCondition("species", .equal, Issue13Query.species)))),
       sql.lookup),
      ("filtered count", storeStatement(store, try StoreQuery(filter: .condition(StoreCondition("age", .greaterThan, Issue13Query.ageAbove)))),
       sql.rangeCount),
      ("sort + limit", storeStatement(store, StoreQuery(sort: [StoreSortKey("age")], limit: 10)), sql.sortLimit),
      ("equality count", storeStatement(store, try StoreQuery(filter: .condition(StoreCondition("age", .equal, Issue13Query.ageEquals)))),
       sql.equalityCount),
    ])
  print("\n`explain()` of the lookup on the PostgresStore:\n")
  print(RequestSet(store).filter("species", value: Issue13Query.species).explain())
  return rows
}
