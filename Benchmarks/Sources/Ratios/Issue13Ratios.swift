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

/// The statements the SQL stores run for the table's rows, copied from their code (and
/// checked against their `explain()` at run time): what the peers run. `{table}` stands for
/// the peer's table name.
struct Issue13Statements {
  var insert: String
  var lookup: String
  var rangeCount: String
  var sortLimit: String
  var equalityCount: String

  func text(_ statement: KeyPath<Issue13Statements, String>, table: String) -> String {
    self[keyPath: statement].replacingOccurrences(of: "{table}", with: table)
  }

  static let sqlite = Issue13Statements(
    insert: #"INSERT INTO {table} (id, body, plain) VALUES (?, ?, ?)"#,
    lookup: #"SELECT body FROM {table} WHERE json_extract(body, '$."species"') = ? ORDER BY seq"#,
    rangeCount: #"SELECT count(*) FROM {table} WHERE json_extract(body, '$."age"') > ?"#,
    sortLimit: #"SELECT body FROM {table} ORDER BY json_extract(body, '$."age"'), seq LIMIT 10"#,
    equalityCount: #"SELECT count(*) FROM {table} WHERE json_extract(body, '$."age"') = ?"#)

  static let postgres = Issue13Statements(
    insert: #"INSERT INTO {table} (id, body, plain) VALUES ($1, $2, $3)"#,
    lookup: #"SELECT body FROM {table} WHERE body->'species' = to_jsonb($1::text) ORDER BY seq"#,
    rangeCount: #"SELECT count(*) FROM {table} WHERE (body->'age') > to_jsonb($1::bigint)"#,
    sortLimit: #"SELECT body FROM {table} ORDER BY body->'age' NULLS FIRST, seq LIMIT 10"#,
    equalityCount: #"SELECT count(*) FROM {table} WHERE body->'age' = to_jsonb($1::bigint)"#)
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
  func commits(polling interval: Duration) -> AsyncStream<StoreCommit<Element>> { inner.commits(polling: interval) }
  func close() { inner.close() }
}

/// A row of the issue 13 table: ours beside the peer, judged against `limit` (ours ÷ peer).
func issue13Row(_ scenario: String, _ ours: Double, _ peer: String, _ peerTime: Double, limit: Double?, target: String) -> Row {
  var row = Row(scenario, ours, peer, peerTime, target: target)
  row.plainRatio = true
  row.verdict = limit.map { mark(ours / peerTime <= $0) } ?? "—"
  return row
}

/// The body a GRDB or libpq user writes: the record through JSONEncoder.
func jsonBody(_ encoder: JSONEncoder, _ animal: Animal) throws -> String {
  String(decoding: try encoder.encode(animal), as: UTF8.self)
}

func issue13Tables(_ animals: [Animal]) throws {
  try printTable("Issue 13: SQLiteStore beside the same statements through GRDB, \(grouped(animals.count)) records", sqliteRows(animals))
  let postgres: [Row]
  do {
    postgres = try postgresRows(animals)
  } catch let failure as PostgresFailure {
    print("\nIssue 13, PostgreSQL: not run (\(failure))")
    return
  }
  printTable("Issue 13: PostgresStore beside the same statements through plain libpq, \(grouped(animals.count)) records", postgres)
}

/// Prints a progress line at once, also when the output is a pipe or a file.
func progress(_ line: String) {
  print(line)
  fflush(nil)
}
