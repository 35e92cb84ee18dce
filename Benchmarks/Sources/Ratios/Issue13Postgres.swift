import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetPostgres

// Issue 13, PostgreSQL: PostgresStore against plain libpq running the store's statements
// with the same parameters, on a private server (or REQUESTSET_POSTGRES_URL's).

/// The tables: the store's and the peer's, side by side in one database.
private let storeTable = "issue13_store"
private let peerTable = "\"issue13_libpq\""

/// The peer's table: the store's columns (seq, id, body jsonb, plain).
private let peerTableDDL = """
  CREATE TABLE \(peerTable) (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text NOT NULL UNIQUE,
    body jsonb NOT NULL, plain boolean NOT NULL)
  """

/// Inserts `animals` as the store does, with the store's statement: one transaction of
/// multi-row INSERTs of 2,000 rows, the rows bound as three array literals; the bodies
/// through JSONEncoder.
private func libpqInsert(_ pq: PlainLibPQ, _ animals: [Animal]) throws {
  let encoder = JSONEncoder()
  let insert = Issue13Statements.postgres.text(\.insert, table: peerTable)
  try pq.exec("BEGIN")
  var start = 0
  while start < animals.count {
    let batch = animals[start..<min(animals.count, start + 2000)]
    try pq.exec(
      insert,
      [
        arrayLiteral(batch.map { String($0.id) }), arrayLiteral(try batch.map { try jsonBody(encoder, $0) }),
        "{" + Array(repeating: "t", count: batch.count).joined(separator: ",") + "}",
      ])
    start += batch.count
  }
  try pq.exec("COMMIT")
}

/// A PostgreSQL array literal of text elements, each double-quoted with `"` and `\` escaped.
private func arrayLiteral(_ elements: [String]) -> String {
  var text = "{"
  for (i, element) in elements.enumerated() {
    if i > 0 { text += "," }
    text += "\""
    for c in element.unicodeScalars {
      if c == "\"" || c == "\\" { text.unicodeScalars.append("\\") }
      text.unicodeScalars.append(c)
    }
    text += "\""
  }
  return text + "}"
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

/// Makes on the peer's table the store table's indexes whose definitions pass `wanted`,
/// from their definitions in pg_indexes, renamed.
private func copyIndexes(_ pq: PlainLibPQ, _ wanted: (String) -> Bool) throws {
  var definitions: [String] = []
  try pq.forEachText("SELECT indexdef FROM pg_indexes WHERE tablename = $1", [storeTable]) {
    definitions.append(String(cString: $0))
  }
  for definition in definitions where wanted(definition) {
    var ddl = definition.replacingOccurrences(of: storeTable, with: peerTable)
    if let name = ddl.range(of: #"INDEX \S+ ON"#, options: .regularExpression) {
      ddl.replaceSubrange(name, with: "INDEX \"issue13_libpq_\(abs(definition.hashValue))\" ON")
    }
    try pq.exec(ddl)
  }
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

  try copyIndexes(pq) { $0.contains(" WHERE ") }  // the store's partial index on rows that are not plain

  // Insert: one run each (a 1M-row insert is long); both tables are then VACUUM ANALYZEd.
  progress("  issue 13, PostgreSQL: insert…")
  let oursInsert = try timed { try store.insert(contentsOf: animals) }.ms
  let peerInsert = try timed { try libpqInsert(pq, animals) }.ms
  rows.append(
    issue13Row(
      "`insert(contentsOf:)` of \(records)", oursInsert,
      "libpq: the store's multi-row INSERTs through `PQexecParams` in one transaction, body by JSONEncoder",
      peerInsert, limit: 1.2,
      target: "≤ 1.2×"))

  // The lookup's index on both sides: the store's own definition, copied from pg_indexes.
  try store.createIndex("species")
  try copyIndexes(pq) { $0.contains("species") }
  try pq.exec("VACUUM ANALYZE \(storeTable)")
  try pq.exec("VACUUM ANALYZE \(peerTable)")

  progress("  issue 13, PostgreSQL: queries…")
  let lookupOurs = try median(runs: 3) { keep(try Issue13Query.lookup(store)) }
  let lookupPeer = try median(runs: 3) {
    keep(
      try libpqRecords(
        pq, sql.text(\.lookup, table: peerTable), [#"{"species"}"#, #""\#(Issue13Query.species)""#]))
  }
  rows.append(
    issue13Row(
      "indexed lookup `filter(\"species\", value: \"Cow\")` → \(grouped(try Issue13Query.lookup(store).count)) records",
      lookupOurs, "libpq: the same SELECT and expression index, rows decoded with JSONDecoder", lookupPeer,
      limit: 1.2,
      target: "≤ 1.2×"))

  let rangeOurs = median(runs: 5) { keep(Issue13Query.rangeCount(store)) }
  let rangePeer = try median(runs: 5) {
    keep(
      try pq.integer(sql.text(\.rangeCount, table: peerTable), [#"{"age"}"#, String(Issue13Query.ageAbove)]))
  }
  rows.append(
    issue13Row(
      "filtered count `filter(\"age\", .greaterThan, \(Issue13Query.ageAbove)).count`", rangeOurs,
      "libpq: the same SELECT count(*)",
      rangePeer, limit: 1.2, target: "≤ 1.2×"))

  let sortOurs = try median(runs: 5) { keep(try Issue13Query.sortLimit(store)) }
  let sortPeer = try median(runs: 5) {
    keep(try libpqRecords(pq, sql.text(\.sortLimit, table: peerTable), [#"{"age"}"#, "10"]))
  }
  rows.append(
    issue13Row(
      "sort + limit `sortBy(\"age\").limit(10)` (no index on age)", sortOurs,
      "libpq: the same SELECT, rows decoded with JSONDecoder",
      sortPeer, limit: 1.2, target: "≤ 1.2×"))

  let equalityOurs = median(runs: 5) { keep(Issue13Query.equalityCount(store)) }
  let equalityPeer = try median(runs: 5) {
    keep(
      try pq.integer(
        sql.text(\.equalityCount, table: peerTable), [#"{"age"}"#, String(Issue13Query.ageEquals)]))
  }
  rows.append(
    issue13Row(
      "equality count, no index, pushed down `filter(\"age\", value: \(Issue13Query.ageEquals)).count`",
      equalityOurs,
      "libpq: the same SELECT count(*)", equalityPeer, limit: 1.2, target: "≤ 1.2×"))

  try printStatements("PostgreSQL", store, storeTable: "\"\(storeTable)\"", sql)
  print("\n`explain()` of the lookup on the PostgresStore:\n")
  print(RequestSet(store).filter("species", value: Issue13Query.species).explain())
  return rows
}
