import Foundation
import GRDB
import RequestSet
import RequestSetPostgres
import RequestSetSQLite

// Issue 38, full-text search: a two-word query over 100,000 documents, beside SQLite FTS5
// through GRDB on the same text (an FTS5 table with the unicode61 tokenizer, diacritics
// removed, as a GRDB user writes it). RequestSet's MemoryStore answers from its inverted
// index; its SQLiteStore runs an FTS5 MATCH over the words the engine found; its
// PostgresStore (a private server) tests each record in process without a text index, and
// runs `words @@ tsquery` over a GIN index with one.
//
//   swift run -c release --package-path Benchmarks Ratios fts

func textSearchTables() throws {
  let vocabulary = (0..<1_000).map { "w\($0)" } + ["quick", "brown", "fox", "café", "lazy", "dog"]
  var g = SystemRandomNumberGenerator()
  let docs = (0..<100_000).map { id in
    Doc(
      id: id, title: (0..<4).map { _ in vocabulary.randomElement(using: &g)! }.joined(separator: " "),
      body: (0..<30).map { _ in vocabulary.randomElement(using: &g)! }.joined(separator: " "))
  }
  let query = "quick fox"
  let dir = FileManager.default.temporaryDirectory.path + "/requestset-ratios-fts-\(getpid())"
  try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: dir) }

  progress("  fts: MemoryStore with a text index…")
  let memory = MemoryStore<Doc>()
  try memory.insert(contentsOf: docs)
  // The index's memory: resident heap before and after building it (freed heap returned
  // first), beside the UTF-8 bytes of the text it indexes.
  let textBytes = docs.reduce(0) { $0 + $1.title.utf8.count + $1.body.utf8.count }
  let heapBefore = Resident.now().anonymous
  try memory.createTextIndex("title", "body")
  let indexBytes = Resident.now().anonymous - heapBefore
  let memoryCount = try RequestSet(memory).filter(matching: query).fetchCount()
  let memoryMs = try median { _ = try RequestSet(memory).filter(matching: query).fetch() }

  progress("  fts: SQLiteStore with a text index…")
  let sqlite = try SQLiteStore<Doc>(path: dir + "/store.sqlite")
  try sqlite.insert(contentsOf: docs)
  try sqlite.createTextIndex("title", "body")
  let sqliteCount = try RequestSet(sqlite).filter(matching: query).fetchCount()
  let sqliteMs = try median { _ = try RequestSet(sqlite).filter(matching: query).fetch() }

  progress("  fts: GRDB and FTS5…")
  let db = try DatabaseQueue(path: dir + "/grdb.sqlite")
  try db.write { db in
    try db.execute(sql: "CREATE TABLE doc(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL)")
    try db.execute(
      sql: "CREATE VIRTUAL TABLE doc_fts USING fts5(title, body, content='doc', content_rowid='id', "
        + "tokenize='unicode61 remove_diacritics 2')")
    for d in docs {
      try db.execute(
        sql: "INSERT INTO doc(id, title, body) VALUES (?, ?, ?)", arguments: [d.id, d.title, d.body])
    }
    try db.execute(sql: "INSERT INTO doc_fts(doc_fts) VALUES ('rebuild')")
  }
  let peerCount = try db.read { db in
    try Int.fetchOne(db, sql: "SELECT count(*) FROM doc_fts WHERE doc_fts MATCH ?", arguments: [query])!
  }
  precondition(
    memoryCount == peerCount && sqliteCount == peerCount, "\(memoryCount) \(sqliteCount) \(peerCount)")
  let peerMs = try median {
    _ = try db.read { db in
      try GRDB.Row.fetchAll(
        db,
        sql: "SELECT doc.id, doc.title, doc.body FROM doc JOIN doc_fts ON doc_fts.rowid = doc.id "
          + "WHERE doc_fts MATCH ? ORDER BY doc.id", arguments: [query])
    }
  }
  sqlite.close()
  try db.close()

  progress("  fts: PostgresStore, a private server…")
  let server = try PrivatePostgres()
  defer { server.stop() }
  let table = "fts_docs"
  try? PostgresStore<Doc>.dropTable(url: server.url, table: table)
  let postgres = try PostgresStore<Doc>(url: server.url, table: table)
  // Inserting the documents without and with the text index: the store writes each row,
  // then fills its words in the same transaction.
  let plainInsertMs = try timed { try postgres.insert(contentsOf: docs) }.ms
  let plainCount = try RequestSet(postgres).filter(matching: query, in: ["title", "body"]).fetchCount()
  let plainMs = try median(runs: 3) {
    _ = try RequestSet(postgres).filter(matching: query, in: ["title", "body"]).fetch()
  }
  try RequestSet(postgres).delete()
  try postgres.createTextIndex("title", "body")
  let indexedInsertMs = try timed { try postgres.insert(contentsOf: docs) }.ms
  let indexedCount = try RequestSet(postgres).filter(matching: query).fetchCount()
  let indexedMs = try median { _ = try RequestSet(postgres).filter(matching: query).fetch() }
  // Right after a bulk insert the table has no statistics, and the cursor's fast-start
  // plan walks the primary key testing every row; once PostgreSQL has analyzed the table
  // (autovacuum does within a minute or so) it reads the GIN index.
  try PlainLibPQ(url: server.url).exec("ANALYZE \(table)")
  let analyzedMs = try median { _ = try RequestSet(postgres).filter(matching: query).fetch() }
  precondition(plainCount == peerCount && indexedCount == peerCount, "\(plainCount) \(indexedCount) \(peerCount)")
  let plan = RequestSet(postgres).filter(matching: query).explain()
  postgres.close()
  try? PostgresStore<Doc>.dropTable(url: server.url, table: table)
  let peer = "GRDB: FTS5 MATCH (unicode61) joined to the table, rows fetched"
  printTable(
    "Issue 38: full-text search, \"\(query)\" over 100,000 documents (\(peerCount) matches)",
    [
      issue13Row(
        "MemoryStore, text index: `filter(matching:)`, fetched", memoryMs, peer, peerMs, limit: 1.5,
        target: "≤ 1.5×"),
      issue13Row(
        "SQLiteStore, FTS5 text index: `filter(matching:)`, fetched", sqliteMs, peer, peerMs, limit: 1.5,
        target: "≤ 1.5×"),
      issue13Row(
        "PostgresStore, no text index (in process): `filter(matching:in:)`, fetched", plainMs, peer, peerMs,
        limit: nil, target: "—"),
      issue13Row(
        "PostgresStore, tsvector + GIN text index, before ANALYZE: `filter(matching:)`, fetched", indexedMs, peer,
        peerMs, limit: nil, target: "—"),
      issue13Row(
        "PostgresStore, tsvector + GIN text index, analyzed: `filter(matching:)`, fetched", analyzedMs, peer,
        peerMs, limit: nil, target: "—"),
    ])
  print(
    "PostgresStore, inserting the 100,000 documents in one call: \(String(format: "%.0f", plainInsertMs)) ms "
      + "without a text index, \(String(format: "%.0f", indexedInsertMs)) ms with one "
      + "(\(String(format: "%.2f", indexedInsertMs / plainInsertMs))×).")
  print("\n`explain()` of the indexed search on the PostgresStore:\n")
  print(plan.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
  let ratio = Double(indexBytes) / Double(textBytes)
  print(
    "MemoryStore's text index: \(indexBytes / 1_000_000) MB resident for \(textBytes / 1_000_000) MB of text "
      + "(\(String(format: "%.2f", ratio))×; target ≤ 2×: \(ratio <= 2 ? "met" : "**missed**"))")
}
