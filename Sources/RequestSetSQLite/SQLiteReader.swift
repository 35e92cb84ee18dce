#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import RequestSet
import Synchronization
import _RequestSetSQL

/// One read transaction on a pooled connection, held from the reader's creation to its
/// release: every count, iteration and explain through it sees the same rows.
final class _SQLiteReader<Element: Record>: StoreQueryReader {
  let version: UInt64
  /// Whether the table holds rows SQL cannot compare exactly (NaN, Decimal, text that is
  /// not NFC, …): conditions are then a superset, rechecked by the engine.
  let nonPlain: Bool
  private let table: String
  private let quotedTable: String
  private let pool: _SQLitePool
  private let connection: Mutex<_SQLiteConnection?>

  init(store: SQLiteStore<Element>) throws {
    let c = try store._pool.take()
    table = store.table
    quotedTable = store._quotedTable
    pool = store._pool
    // BEGIN is deferred: the first read below starts the snapshot the reader keeps.
    try c.execute("BEGIN", doing: "start a read transaction")
    do {
      version = try store._version(c)
      let statement = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(quotedTable) WHERE NOT plain)")
      nonPlain = try statement.step(doing: "check for rows SQL cannot compare") && statement.int(0) != 0
    } catch {
      _ = sqlite3_exec(c.handle, "ROLLBACK", nil, nil, nil)
      throw error
    }
    connection = Mutex(c)
  }

  deinit {
    if let c = connection.withLock({ c -> _SQLiteConnection? in
      defer { c = nil }
      return c
    }) {
      if sqlite3_exec(c.handle, "ROLLBACK", nil, nil, nil) == SQLITE_OK { pool.give(c) }
    }
  }

  func support(for condition: StoreCondition) -> PushdownSupport {
    if let reason = arrayOnPath(condition.fieldNames) { return .none(reason: reason) }
    return nonPlain ? .superset : .exact
  }

  func support(for sort: StoreSortKey) -> PushdownSupport {
    if _SQLiteTranslation.pathLiteral(sort.fieldNames) == nil {
      return .none(reason: "the key \(sort.key) holds a quote, a backslash or U+0000, which SQLite's JSON paths cannot spell")
    }
    if let reason = arrayOnPath(sort.fieldNames) { return .none(reason: reason) }
    return .exact
  }

  private let arrayPaths = Mutex<[[String]: String?]>([:])

  /// Why a nested key cannot run in SQL: some row holds an array part way along its path,
  /// and the engine reads the rest of the key in each of its elements, which a JSON path
  /// does not. Checked once per key per reader; nil when the key is safe.
  private func arrayOnPath(_ names: [String]) -> String? {
    guard names.count > 1 else { return nil }
    if let known = arrayPaths.withLock({ $0[names] }) { return known }
    var tests: [String] = []
    for end in 1..<names.count {
      guard let path = _SQLiteTranslation.pathLiteral(Array(names[..<end])) else { break }
      tests.append("json_type(body, \(path)) = 'array'")
    }
    let key = FieldValue.key(forFieldNames: names)
    var reason: String? = "the key \(key) reads through an array in some record, which SQL paths do not map over"
    if !tests.isEmpty,
      let found = try? withConnection({ c -> Bool in
        let s = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(quotedTable) WHERE \(tests.joined(separator: " OR ")))")
        return try s.step(doing: "check a key's path") && s.int(0) != 0
      }), !found
    {
      reason = nil
    }
    arrayPaths.withLock { $0[names] = reason }
    return reason
  }

  /// SELECT (or count) with the query's WHERE, ORDER BY and window.
  private func statement(_ query: StoreQuery, counting: Bool) throws -> _SQLiteTranslation {
    var t = try _SQLiteTranslation.whereClause(query.filter, nonPlain: nonPlain)
    let windowed = query.offset != 0 || query.limit != nil
    var window = ""
    if windowed {
      window = " LIMIT ? OFFSET ?"
      t.bindings.append(.int(query.limit.map { Int64($0) } ?? -1))
      t.bindings.append(.int(Int64(query.offset)))
    }
    if counting {
      t.sql =
        windowed
        ? "SELECT count(*) FROM (SELECT 1 FROM \(quotedTable)\(t.sql)\(window))"
        : "SELECT count(*) FROM \(quotedTable)\(t.sql)"
      return t
    }
    guard let order = _SQLiteTranslation.orderBy(query.sort, nonPlain: nonPlain) else {
      throw RequestSetError(
        .notPushedDown, "A sort key of \(query) cannot be spelled as a SQLite JSON path; sort it in process.")
    }
    t.sql = "SELECT body FROM \(quotedTable)\(t.sql)\(order.isEmpty ? " ORDER BY seq" : order)\(window)"
    return t
  }

  private func withConnection<T>(_ body: (_SQLiteConnection) throws -> T) throws -> T {
    try connection.withLock { c in
      guard let c else { throw RequestSetError(.closed, "The reader of \(table) was released. Open another.") }
      return try body(c)
    }
  }

  func count(_ query: StoreQuery) throws -> Int {
    let t = try statement(query, counting: true)
    return try withConnection { c in
      let s = try c.prepare(t.sql)
      try s.bind(t.bindings)
      _ = try s.step(doing: "count records")
      return Int(s.int(0))
    }
  }

  func records(_ query: StoreQuery, _ body: (Element) throws -> Bool) throws {
    let t = try statement(query, counting: false)
    try withConnection { c in
      let s = try c.prepare(t.sql)
      try s.bind(t.bindings)
      while try s.step(doing: "read records") {
        let record = try s.withText(0) { try SQLJSON.decode(utf8: $0) }.decode(Element.self)
        if try !body(record) { break }
      }
    }
  }

  func explain(_ query: StoreQuery) throws -> StoreExplanation {
    let t = try statement(query, counting: false)
    let plan: [String] = try withConnection { c in
      let s = try c.prepare("EXPLAIN QUERY PLAN " + t.sql)
      try s.bind(t.bindings)
      var lines: [String] = []
      while try s.step(doing: "explain a query") { lines.append(s.text(3)) }
      return lines
    }
    return StoreExplanation(statement: t.sql, bindings: t.bindings.map(\.description), plan: plan)
  }
}
