import BenchmarkSupport
import Foundation
import GRDB
import RequestSet
import RequestSetPostgres
import RequestSetSQLite

// Issue 13 ("SQL engines"): SQLiteStore beside the same statements through GRDB, and
// PostgresStore beside the same statements through plain libpq, at `n` records, one run.
//
// The peers run the statements the stores run (copied from the stores' SQL; the run
// prints each store's `explain()` beside the peer's text so a drift shows), on a table
// of the same shape (seq, id, body JSON, plain): on SQLite the peer's table and indexes
// are made from the store's own `CREATE` statements, read back from `sqlite_master`; on
// PostgreSQL from `pg_indexes`. The peers encode bodies with JSONEncoder and decode them
// with JSONDecoder, as a user of GRDB or libpq would.

/// The queries of the table, as RequestSet runs them on a store.
enum Issue13Query {
  /// The indexed lookup's species.
  static let species = "Cow"
  /// The filtered count's bound: `age > 49`, about half the records.
  static let ageAbove = 49
  /// The unindexed equality count's age: about 1% of the records.
  static let ageEquals = 30

  static func lookup<S: RecordStore>(_ store: S) throws -> [Animal] where S.Element == Animal {
    try RequestSet(store).filter("species", value: species).fetch()
  }
  static func rangeCount<S: RecordStore>(_ store: S) -> Int where S.Element == Animal {
    RequestSet(store).filter("age", .greaterThan, ageAbove).count
  }
  static func sortLimit<S: RecordStore>(_ store: S) throws -> [Animal] where S.Element == Animal {
    try RequestSet(store).sortBy("age").limit(10).fetch()
  }
  static func equalityCount<S: RecordStore>(_ store: S) -> Int where S.Element == Animal {
    RequestSet(store).filter("age", value: ageEquals).count
  }
  /// The equality count as a closure: nothing to push down, so every row is fetched,
  /// decoded and tested in process.
  static func equalityCountInProcess<S: RecordStore>(_ store: S) -> Int where S.Element == Animal {
    RequestSet(store).filter { $0.age == ageEquals }.count
  }
}

/// The statements the SQL stores run for the table's rows, copied word for word from their
/// `explain()` and code (the run prints the store's text beside these and says whether they
/// are the same): what the peers run. `{table}` stands for the peer's table.
struct Issue13Statements {
  var insert: String
  var lookup: String
  var rangeCount: String
  var sortLimit: String
  var equalityCount: String

  func text(_ statement: KeyPath<Issue13Statements, String>, table: String) -> String {
    self[keyPath: statement].replacingOccurrences(of: "{table}", with: table)
  }

  /// SQLiteStore's statements (SQLiteStore.swift, SQLiteReader.swift, SQLiteTranslation.swift).
  /// Bindings: the lookup's species; the counts' age; the sort's limit and offset.
  static let sqlite = Issue13Statements(
    insert: #"INSERT INTO {table}(id, body, plain) VALUES (?, ?, ?)"#,
    lookup:
      #"SELECT body FROM {table} WHERE (json_extract(body, '$."species"') = ? AND json_type(body, '$."species"') IN ('text')) ORDER BY seq"#,
    rangeCount:
      #"SELECT count(*) FROM {table} WHERE (json_extract(body, '$."age"') > ? AND json_type(body, '$."age"') IN ('integer', 'real'))"#,
    sortLimit:
      #"SELECT body FROM {table} ORDER BY CASE json_type(body, '$."age"') WHEN 'true' THEN 1 WHEN 'false' THEN 1 "#
      + #"WHEN 'integer' THEN 2 WHEN 'real' THEN 2 WHEN 'text' THEN 3 WHEN 'array' THEN 4 WHEN 'object' THEN 5 ELSE 0 END ASC, "#
      + #"CASE WHEN json_type(body, '$."age"') IN ('array', 'object') THEN NULL ELSE json_extract(body, '$."age"') END ASC, "#
      + #"CASE WHEN json_type(body, '$."age"') IN ('array', 'object') THEN body -> '$."age"' END COLLATE rs_binary ASC, "#
      + #"seq LIMIT ? OFFSET ?"#,
    equalityCount:
      #"SELECT count(*) FROM {table} WHERE (json_extract(body, '$."age"') = ? AND json_type(body, '$."age"') IN ('integer', 'real'))"#
  )

  /// PostgresStore's statements (PostgresStore.swift, PostgresReader.swift,
  /// PostgresTranslation.swift). Parameters: `$1` the key's path as a `text[]` literal
  /// (`{"age"}`), `$2` the value as JSON text (`"Cow"`, `49`) or the sort's limit; the
  /// insert's are three array literals of up to 2,000 rows.
  static let postgres = Issue13Statements(
    insert:
      "INSERT INTO {table} (id, body, plain)\nSELECT * FROM unnest($1::text[], $2::jsonb[], $3::boolean[])",
    lookup:
      "SELECT body FROM {table} WHERE ((body #> $1::text[]) IS NOT NULL AND (body #> $1::text[]) = $2::jsonb) ORDER BY seq ASC",
    rangeCount:
      "SELECT count(*) FROM {table} WHERE ((body #> $1::text[]) IS NOT NULL AND jsonb_typeof((body #> $1::text[])) = 'number' "
      + "AND (body #> $1::text[]) > $2::jsonb)",
    sortLimit:
      "SELECT body FROM {table} ORDER BY (CASE WHEN (body #> $1::text[]) IS NULL OR jsonb_typeof((body #> $1::text[])) = 'null' "
      + "THEN 0 WHEN jsonb_typeof((body #> $1::text[])) = 'boolean' THEN 1 WHEN jsonb_typeof((body #> $1::text[])) = 'number' THEN 2 "
      + "WHEN jsonb_typeof((body #> $1::text[])) = 'string' THEN 3 WHEN jsonb_typeof((body #> $1::text[])) = 'array' THEN 4 ELSE 5 END) ASC, "
      + "(CASE WHEN jsonb_typeof((body #> $1::text[])) IN ('boolean', 'number') THEN (body #> $1::text[]) END) ASC, "
      + "(CASE WHEN jsonb_typeof((body #> $1::text[])) = 'string' THEN (body #> $1::text[]) #>> '{}' END) COLLATE \"C\" ASC, "
      + "seq ASC LIMIT $2::bigint",
    equalityCount:
      "SELECT count(*) FROM {table} WHERE ((body #> $1::text[]) IS NOT NULL AND (body #> $1::text[]) = $2::jsonb)"
  )
}

/// Whether the peer's text is the store's: the store's records statement for a query (from
/// its reader's `explain`), or, for a count, the count the reader runs for the same filter
/// (`SELECT count(*) FROM t WHERE …`, no ORDER BY).
func sameStatement(store: String, storeTable: String, peer: String, counting: Bool) -> Bool {
  var text = store.replacingOccurrences(of: storeTable, with: "{table}")
  if counting {
    guard text.hasPrefix("SELECT body FROM ") else { return false }
    text = "SELECT count(*) FROM " + text.dropFirst("SELECT body FROM ".count)
    for suffix in [" ORDER BY seq ASC", " ORDER BY seq"] where text.hasSuffix(suffix) {
      text.removeLast(suffix.count)
      break
    }
  }
  return text == peer
}

/// A store that is only a `RecordStore`: it hides the SQL store's pushdown, so the engine
/// fetches every row and runs the query in process (the path issue 13 replaces).
final class PlainStore<Inner: RecordStore>: RecordStore {
  typealias Element = Inner.Element
  let inner: Inner
  init(_ inner: Inner) { self.inner = inner }
  func insert(_ record: Element) throws { try inner.insert(record) }
  func insert(contentsOf records: some Sequence<Element>) throws { try inner.insert(contentsOf: records) }
  func save(_ record: Element) throws { try inner.save(record) }
  func delete(id: Element.ID) throws -> Bool { try inner.delete(id: id) }
  func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    try inner.apply(changes, ifVersion: expectedVersion)
  }
  func fetch(id: Element.ID) throws -> Element? { try inner.fetch(id: id) }
  func snapshot() throws -> StoreSnapshot<Element> { try inner.snapshot() }
  func commits(polling interval: Duration) -> AsyncStream<StoreCommit<Element>> {
    inner.commits(polling: interval)
  }
  func close() { inner.close() }
}

/// A row of the issue 13 table: ours beside the peer, judged against `limit` (ours ÷ peer).
func issue13Row(
  _ scenario: String, _ ours: Double, _ peer: String, _ peerTime: Double, limit: Double?, target: String
) -> Row {
  var row = Row(scenario, ours, peer, peerTime, target: target)
  row.plainRatio = true
  row.verdict = limit.map { mark(ours / peerTime <= $0) } ?? "—"
  return row
}

/// The body a GRDB or libpq user writes: the record through JSONEncoder.
func jsonBody(_ encoder: JSONEncoder, _ animal: Animal) throws -> String {
  String(decoding: try encoder.encode(animal), as: UTF8.self)
}

/// `RATIOS_ISSUE13_ONLY=sqlite` or `=postgres` runs one engine's table.
func issue13Tables(_ animals: [Animal]) throws {
  let only = ProcessInfo.processInfo.environment["RATIOS_ISSUE13_ONLY"]
  if only != "postgres" {
    try printTable(
      "Issue 13: SQLiteStore beside the same statements through GRDB, \(grouped(animals.count)) records",
      sqliteRows(animals))
  }
  if only == "sqlite" { return }
  let postgres: [Row]
  do {
    postgres = try postgresRows(animals)
  } catch let failure as PostgresFailure {
    print("\nIssue 13, PostgreSQL: not run (\(failure))")
    return
  }
  printTable(
    "Issue 13: PostgresStore beside the same statements through plain libpq, \(grouped(animals.count)) records",
    postgres)
}

/// Prints a progress line at once, also when the output is a pipe or a file.
func progress(_ line: String) {
  print(line)
  fflush(nil)
}
