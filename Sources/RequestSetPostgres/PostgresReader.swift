import RequestSet
import _RequestSetSQL
import Synchronization

/// One evaluation's view of a ``PostgresStore``: a pooled connection in a
/// `REPEATABLE READ READ ONLY` transaction for the reader's whole life (one snapshot for
/// the count, the records and the explanation), given back when the reader is released.
final class _PostgresReader<Element: Record>: StoreQueryReader {
  let store: PostgresStore<Element>
  /// The connection, nil once released. Guarded, since the engine may share the reader.
  private let _connection: Mutex<_PGConnection?>
  let version: UInt64
  /// Whether the table holds rows SQL cannot compare exactly (`plain` false): then
  /// conditions are supersets the engine rechecks, and sorts stay in process.
  let hasNonPlainRows: Bool
  private let _cursors = Atomic<Int>(0)

  init(_ store: PostgresStore<Element>) throws {
    self.store = store
    let c = try store._pool.acquire(reader: true)
    do {
      try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
      version = try store._version(c)
      let nonPlain = try c.execute("SELECT EXISTS (SELECT 1 FROM \(store._quoted) WHERE NOT plain)")
      hasNonPlainRows = nonPlain.string(0, 0) == "t"
    } catch {
      store._pool.release(c, reader: true)
      throw error
    }
    _connection = Mutex(c)
  }

  deinit {
    if let c = _connection.withLock({ $0.take() }) {
      if !c.isBroken { _ = try? c.execute("COMMIT") }
      store._pool.release(c, reader: true)
    }
  }

  /// Runs `body` with the reader's connection.
  @discardableResult
  private func _with<T>(_ body: (_PGConnection) throws -> T) throws -> T {
    try _connection.withLock { c in
      guard let c else { throw RequestSetError(.closed, "The reader was released.") }
      return try body(c)
    }
  }

  func support(for condition: StoreCondition) -> PushdownSupport {
    let support = _PGTranslation.support(for: condition)
    // Rows SQL cannot compare (NaN, Decimal, …): the engine runs the filter in process.
    // (`.superset` with `NOT plain OR …` would do, but a filter the engine pushes whole,
    // such as a constant, is never rechecked, so the wrapping must not reach it.)
    if support == .exact && hasNonPlainRows {
      return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    return support
  }

  func support(for sort: StoreSortKey) -> PushdownSupport {
    let support = _PGTranslation.support(for: sort)
    guard support == .exact else { return support }
    if hasNonPlainRows {
      return .none(reason: "the table holds values SQL cannot order exactly (NaN, Decimal, …)")
    }
    // Collections order element by element in memory; PostgreSQL's jsonb order differs.
    guard holdsNoCollections(sort.fieldNames) else {
      return .none(reason: "the key \(sort.key) holds arrays or objects, which PostgreSQL orders differently")
    }
    return .exact
  }

  /// Whether no row holds an array or an object at the key: one `EXISTS` scan of the table
  /// per key and table version, remembered by the store. The reader's snapshot is the
  /// table at `version` (both read in its REPEATABLE READ transaction), and every write
  /// bumps the version, so an answer for this version holds for every reader of it.
  /// A failed check answers false (the sort then runs in process) and is not remembered.
  private func holdsNoCollections(_ fieldNames: [String]) -> Bool {
    if let known = store._collectionKeys.answer(fieldNames, version: version) { return !known }
    var translation = _PGTranslation()
    let x = translation.field(fieldNames)
    guard
      let result = try? _with({
        try $0.execute(
          "SELECT EXISTS (SELECT 1 FROM \(store._quoted) WHERE jsonb_typeof(\(x)) IN ('array', 'object'))",
          translation.parameters)
      }), let found = result.string(0, 0)
    else { return false }
    store._collectionKeys.remember(fieldNames, version: version, holdsCollections: found != "f")
    return found == "f"
  }

  /// The SELECT for `query`, with `columns`.
  func statement(_ query: StoreQuery, columns: String) -> (sql: String, parameters: [String?]) {
    var translation = _PGTranslation()
    var sql = "SELECT \(columns) FROM \(store._quoted)"
    if let filter = query.filter {
      let condition = translation.filter(filter)
      // No `NOT plain OR …`: over rows SQL cannot compare, conditions are declined, and a
      // constant filter (no condition) is exact on every row.
      sql += " WHERE " + condition
    }
    sql += " ORDER BY " + translation.orderBy(query.sort)
    if query.offset > 0 { sql += " OFFSET \(translation.bind(String(query.offset)))::bigint" }
    if let limit = query.limit { sql += " LIMIT \(translation.bind(String(limit)))::bigint" }
    return (sql, translation.parameters)
  }

  func count(_ query: StoreQuery) throws -> Int {
    var (sql, parameters) = statement(query, columns: "1")
    if query.sort.isEmpty && query.offset == 0 && query.limit == nil {
      var translation = _PGTranslation()
      sql = "SELECT count(*) FROM \(store._quoted)"
      if let filter = query.filter { sql += " WHERE " + translation.filter(filter) }
      parameters = translation.parameters
    } else {
      sql = "SELECT count(*) FROM (\(sql)) AS rs_window"
    }
    let result = try _with { try $0.execute(sql, parameters) }
    return Int(result.string(0, 0) ?? "0") ?? 0
  }

  func records(_ query: StoreQuery, _ body: (Element) throws -> Bool) throws {
    let (sql, parameters) = statement(query, columns: "body")
    // A small window is read in one statement: a cursor would cost three round trips
    // (DECLARE, FETCH, CLOSE) and plans for its first tenth of the rows.
    if let limit = query.limit, limit <= Self.directLimit {
      let rows = try _with { try $0.execute(sql, parameters) }
      for row in 0..<rows.count {
        guard try body(try record(rows, row)) else { return }
      }
      return
    }
    let cursor = "rs_cursor_\(_cursors.add(1, ordering: .relaxed).newValue)"
    try _with { try $0.execute("DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)", parameters) }
    defer { _ = try? _with { try $0.execute("CLOSE \(cursor)") } }
    // Batches grow, so a `first` reads little and a full scan makes few round trips.
    var batch = 64
    while true {
      let rows = try _with { try $0.execute("FETCH FORWARD \(batch) FROM \(cursor)") }
      for row in 0..<rows.count {
        guard try body(try record(rows, row)) else { return }
      }
      if rows.count < batch { return }
      batch = min(batch * 4, 8192)
    }
  }

  /// The largest `limit` read without a cursor.
  static var directLimit: Int { 1024 }

  /// The record in a row's first column, decoded from libpq's buffer (no `String` copy).
  private func record(_ rows: _PGResult, _ row: Int) throws -> Element {
    let value = try rows.withBytes(row, 0) { try SQLJSON.decode(utf8: $0) } ?? .null
    return try value.decode(Element.self)
  }

  func explain(_ query: StoreQuery) throws -> StoreExplanation {
    let (sql, parameters) = statement(query, columns: "body")
    let plan = try _with { try $0.execute("EXPLAIN " + sql, parameters) }
    return StoreExplanation(
      statement: sql, bindings: parameters.map { $0 ?? "NULL" },
      plan: (0..<plan.count).map { plan.string($0, 0) ?? "" })
  }
}

extension PostgresStore {
  /// A reader of the store's current state, for one evaluation (see `StoreQueryReader`).
  ///
  /// ```swift
  /// let reader = try store.queryReader()
  /// try reader.count(StoreQuery())   // SELECT count(*) … in a REPEATABLE READ transaction
  /// ```
  /// - Throws: ``RequestSetError`` `.closed`, `.connectionFailed`.
  public func queryReader() throws -> any StoreQueryReader<Element> {
    try _PostgresReader(self)
  }
}

extension PostgresStore {
  /// The WHERE clause for `query`'s filter when PostgreSQL runs it exactly on the table as
  /// it is inside the write transaction on `c`: nil when a condition is not supported or
  /// the table holds rows SQL cannot compare exactly.
  func _exactWhere(_ query: StoreQuery, _ translation: inout _PGTranslation, on c: _PGConnection) throws -> String? {
    guard query.offset == 0, query.limit == nil, query.distinct == nil else { return nil }
    for condition in query.filter?.conditions ?? [] where _PGTranslation.support(for: condition) != .exact {
      return nil
    }
    let nonPlain = try c.execute("SELECT EXISTS (SELECT 1 FROM \(_quoted) WHERE NOT plain)")
    guard nonPlain.string(0, 0) == "f" else { return nil }
    return query.filter.map { translation.filter($0) } ?? "TRUE"
  }

  /// Sets `assignments` on every record `query` matches with one `UPDATE … jsonb_set`, in
  /// one write transaction; nil (the engine then writes record by record) when the query
  /// is not exact here, an assignment is to `id` or a nested key, or a value has no exact
  /// JSON twin.
  ///
  /// Every updated record is decoded as `Element` before the commit: a value of the wrong
  /// type rolls the whole update back.
  ///
  /// ```swift
  /// try animals.filter("species", value: "dog").update("age", value: 4)   // one UPDATE
  /// ```
  /// - Returns: How many records changed, or nil.
  /// - Throws: ``RequestSetError`` `.decodingFailed` (nothing written), `.connectionFailed`.
  public func update(matching query: StoreQuery, set assignments: [(key: String, value: FieldValue)]) throws -> Int? {
    // The engine checks an assignment's key and value against the type before it writes;
    // this statement cannot (the type's key model is internal to RequestSet), so it runs
    // only when the caller opts in. Until then the engine writes record by record.
    guard _sqlUpdates else { return nil }
    var values: [(name: String, json: String)] = []
    for (key, value) in assignments {
      let names = FieldValue.fieldNames(inKey: key)
      guard names.count == 1, names[0] != "id", !names[0].utf8.contains(0) else { return nil }
      let encoded = SQLJSON.encode(value)
      guard encoded.plain else { return nil }
      values.append((names[0], encoded.text))
    }
    var count: Int? = nil
    var changed: [Element] = []
    try _write(ifVersion: nil, changes: { changed.map { .save($0) } }) { c in
      var translation = _PGTranslation()
      guard let condition = try _exactWhere(query, &translation, on: c) else { return false }
      var body = "body"
      for (name, json) in values {
        body = "jsonb_set(\(body), ARRAY[\(translation.bind(name))]::text[], \(translation.bind(json))::jsonb, true)"
      }
      let rows = try c.execute(
        "UPDATE \(_quoted) SET body = \(body) WHERE \(condition) RETURNING body", translation.parameters)
      for row in 0..<rows.count { changed.append(try _record(rows.string(row, 0) ?? "null")) }
      count = rows.count
      return rows.count > 0
    }
    return count
  }

  /// Deletes every record `query` matches with one `DELETE`, in one write transaction;
  /// nil when the query is not exact here.
  ///
  /// ```swift
  /// try animals.filter("age", .greaterThan, 12).delete()   // one DELETE
  /// ```
  /// - Returns: How many records were deleted, or nil.
  public func delete(matching query: StoreQuery) throws -> Int? {
    var count: Int? = nil
    var deleted: [Element.ID] = []
    try _write(ifVersion: nil, changes: { deleted.map { .delete(id: $0) } }) { c in
      var translation = _PGTranslation()
      guard let condition = try _exactWhere(query, &translation, on: c) else { return false }
      let rows = try c.execute("DELETE FROM \(_quoted) WHERE \(condition) RETURNING id", translation.parameters)
      for row in 0..<rows.count {
        deleted.append(try SQLJSON.decode(rows.string(row, 0) ?? "null").decode(Element.ID.self))
      }
      count = rows.count
      return rows.count > 0
    }
    return count
  }
}

/// The answers of the readers' collection checks (does any row hold an array or an object
/// at this key?), each for the table version it was found at; a newer version drops them.
final class _PGCollectionKeys: Sendable {
  private let state = Mutex<(version: UInt64, answers: [[String]: Bool])>((0, [:]))

  /// The answer for `fieldNames` at `version`, or nil when none is known.
  func answer(_ fieldNames: [String], version: UInt64) -> Bool? {
    state.withLock { $0.version == version ? $0.answers[fieldNames] : nil }
  }

  /// Keeps an answer found at `version` (one older than the newest kept is dropped).
  func remember(_ fieldNames: [String], version: UInt64, holdsCollections: Bool) {
    state.withLock { state in
      if version > state.version { state = (version, [:]) }
      if version == state.version { state.answers[fieldNames] = holdsCollections }
    }
  }
}
