import RequestSet
import Synchronization
import _RequestSetSQL

/// One evaluation's view of a ``PostgresStore``: a pooled connection in a
/// `REPEATABLE READ READ ONLY` transaction for the reader's whole life (one snapshot for
/// the count, the records and the explanation), given back when the reader is released.
///
/// The connection is held through a ``_PGLease``: while the engine has paused the reader
/// (a set counted and not yet iterated keeps it so), a caller that finds all the pool's
/// connections busy may take it, ending the transaction; the reader's next statement then
/// begins a new transaction, and goes on if the table's version is still the reader's, or
/// throws `.conflict` if it moved.
final class _PostgresReader<Element: Record>: StoreQueryReader {
  let store: PostgresStore<Element>
  /// The connection and its transaction. The engine may share the reader between
  /// threads: the lease runs one statement at a time.
  private let _lease: _PGLease
  let version: UInt64
  /// Whether the table holds rows SQL cannot compare exactly (`plain` false): then
  /// conditions are supersets the engine rechecks, and sorts stay in process.
  let hasNonPlainRows: Bool
  private let _cursors = Atomic<Int>(0)
  /// The version of each other table a relation's subquery reads, as this transaction
  /// saw it (see `support(for: StoreSubquery)`), for a new transaction to check.
  private let _related: _PGTableVersions

  /// The statement that begins a reader's transaction.
  static var _begin: String { "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" }

  init(_ store: PostgresStore<Element>) throws {
    self.store = store
    // On a replica that has replayed the store's latest commit, else on the primary.
    let (pool, c, version, nonPlain) = try store._onReadServer { pool, c in
      try c.execute(Self._begin)
      let version = try store._version(c)
      let nonPlain = try c.execute("SELECT EXISTS (SELECT 1 FROM \(store._quoted) WHERE NOT plain)")
      return (pool, c, version, nonPlain.string(0, 0) == "t")
    }
    self.version = version
    hasNonPlainRows = nonPlain
    let (table, quoted, limit) = (store._table, store._quoted, pool.limit)
    let related = _PGTableVersions()
    _related = related
    _lease = _PGLease(pool, c, begin: Self._begin) { c in
      // Whether a table's version is no longer the one the first transaction read.
      func moved(_ name: String, from seen: some CustomStringConvertible) throws -> Bool {
        let row = try c.execute("SELECT version FROM requestset_tables WHERE name = $1", [name])
        return row.count != 1 || row.string(0, 0) != seen.description
      }
      if try moved(table, from: version) {
        throw RequestSetError(
          .conflict,
          "The table \(quoted) changed while this evaluation waited between two reads (a set counted and not yet "
            + "read, say) and its connection served another call (all \(limit) were busy), so it can no longer read "
            + "the state it began with. Read the set again (refreshed()), or open the store with more connections."
        )
      }
      // The tables a relation's subquery reads must be as the first transaction saw them too.
      for (other, seen) in related.state.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
        if try moved(other, from: seen) {
          throw RequestSetError(
            .conflict,
            "The table \(other), which a relation of this evaluation reads in its statement, changed while the "
              + "evaluation waited between two reads (a set counted and not yet read, say) and its connection served "
              + "another call (all \(limit) were busy), so it can no longer read the state it began with. Read the "
              + "set again (refreshed()), or open the store with more connections.")
        }
      }
    }
  }

  deinit { _lease.end() }

  /// Lets a caller that finds every connection busy take the reader's (see ``_PGLease``).
  func pause() { _lease.unpin() }

  /// Keeps the reader's connection (or the next one it takes) for the reader again.
  func resume() { _lease.pin() }

  /// Runs `body` with the reader's connection, in its transaction.
  @discardableResult
  func _with<T>(_ body: (_PGConnection) throws -> T) throws -> T {
    try _lease.with(body)
  }

  /// The table's keys and kinds as this transaction's snapshot sees them, read once.
  func fieldKinds() throws -> StoreFieldKinds? {
    if let known = _kinds.withLock({ $0 }) { return known }
    let read = try _with { c in try store._storedKinds(c).map { try store._fieldKinds.kinds(fromText: $0) } }
    _kinds.withLock { $0 = .some(read) }
    return read
  }

  private let _kinds = Mutex<StoreFieldKinds??>(nil)

  /// Why a nested key cannot run in SQL: a record held an array part way along its path,
  /// and the engine reads the rest of the key in each of its elements, which a jsonb path
  /// does not. Nil when the key is safe.
  func _arrayOnPath(_ names: [String]) -> String? {
    guard names.count > 1 else { return nil }
    guard let kinds = try? fieldKinds() else {
      return "the table's summary of keys is unreadable, so a path through an array cannot be ruled out"
    }
    for end in 1..<names.count
    where kinds.holds(.array, at: FieldValue.key(forFieldNames: Array(names[..<end]))) {
      return "the key \(FieldValue.key(forFieldNames: names)) reads through an array in some record, "
        + "which SQL paths do not map over"
    }
    return nil
  }

  func support(for condition: StoreCondition) -> PushdownSupport {
    if let reason = _arrayOnPath(condition.fieldNames) { return .none(reason: reason) }
    let support = _PGTranslation.support(for: condition)
    // Rows SQL cannot compare (NaN, Decimal, …): the engine runs the filter in process.
    // (`.superset` with `NOT plain OR …` would do, but a filter the engine pushes whole,
    // such as a constant, is never rechecked, so the wrapping must not reach it.)
    if support == .exact && hasNonPlainRows {
      return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    return support
  }

  /// A relation's subquery on another table of this database, when PostgreSQL compares
  /// exactly what both sides read (see `PostgresStore._subqueryProblem`: plain rows, keys
  /// that never held arrays or objects nor read through one, no integers and doubles
  /// beyond 2^53 compared, no full-text search in a related query; a key an aggregate
  /// reduces holds only numbers within 2^53). The related tables
  /// are checked in this reader's transaction, whose snapshot the statement reads: it sees
  /// every write committed before the reader began, through any store, as a semi-join's
  /// read of the related store begun then would. Their versions are kept: when the reader's
  /// connection is lent and its next statement begins a new transaction, a related table
  /// that moved meanwhile throws `.conflict`, as the reader's own table does. A graph's
  /// write still commits store by store, so a statement begun between two of its commits
  /// sees the first and not the second, as a semi-join's two reads could.
  func support(for subquery: StoreSubquery) -> PushdownSupport {
    if hasNonPlainRows {
      return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    guard subquery.location.database == store._database else {
      return .none(reason: "the table \(subquery.location.table) is in another database")
    }
    guard let (problem, versions) = try? _with({ try store._subqueryProblem(subquery, on: $0) }) else {
      return .none(reason: "the related tables could not be checked")
    }
    if let problem { return .none(reason: problem) }
    _related.state.withLock { $0.merge(versions) { old, _ in old } }
    return .exact
  }

  /// Declines a query whose statement would bind more than 10,000 values
  /// (``_PGTranslation/budget``): thousands of conditions that are not lists, such as an
  /// OR of ranges or of pairs of conditions, or a long AND of inequalities. PostgreSQL
  /// refuses a statement of more than 65,535, and plans one of more than 10,000 for
  /// seconds to minutes (its planning time grows with the square of the conditions). The
  /// engine then runs the query's largest terms in process, and PostgreSQL the rest.
  ///
  /// ```swift
  /// // 33,000 × (n > a AND s == b), ORed, binds 66,002 values:
  /// reader.support(for: query)   // .none(reason: "its statement would bind 66002 values …")
  /// ```
  func support(for query: StoreQuery) -> PushdownSupport {
    // A condition binds at most three values (its key's path, bound once per statement,
    // and two bounds), a sort key one, `distinct` one more plus the sort again, the window
    // two: a query this small fits without writing its statement.
    let conditions = query.filter?.conditions.count ?? 0
    // A subquery's conditions are not among the filter's own: its statement is counted.
    let small = 3 * conditions + 2 * query.sort.count + 3 <= _PGTranslation.budget
    if small && query.filter?.holdsSubquery != true { return .exact }
    var translation = _PGTranslation()
    _ = statement(query, columns: "body", &translation)
    let n = translation.parameters.count
    guard n > _PGTranslation.budget else { return .exact }
    return .none(
      reason:
        "its statement would bind \(n) values; PostgreSQL takes at most \(_PGTranslation.maxParameters), "
        + "and plans more than \(_PGTranslation.budget) for seconds to minutes (a list, IN or ORed equalities on "
        + "one key, binds one)")
  }

  /// Every date part: `SQLDateParts` spells `RequestDatePart`'s arithmetic in SQL.
  func support(forDatePart part: RequestDatePart) -> PushdownSupport { .exact }

  /// A full-text condition on keys the table's text index covers, as `words @@ tsquery`
  /// (see PostgresStore+TextIndex.swift): exact when every row has its words, the
  /// condition searches exactly the index's keys (the words of other keys would let
  /// records through), and it has no phrase or no row lacks positions; else a superset
  /// the engine rechecks. Without a text index on the keys, or for a query PostgreSQL
  /// cannot hold (more than 256 terms, a word of more than 2,000 bytes), the engine runs
  /// the search in process.
  func support(for search: StoreTextSearch) -> PushdownSupport {
    guard let text = textState() else {
      return .none(reason: "the table has no text index (createTextIndex) or it could not be read")
    }
    guard Set(search.keys).isSubset(of: text.keys) else {
      return .none(
        reason:
          "the text index covers \(text.keys.joined(separator: ", ")), not \(search.keys.joined(separator: ", "))"
      )
    }
    if let problem = _PGTextWords.problem(search) { return .none(reason: problem) }
    let exact =
      !text.unfilled && Set(search.keys) == Set(text.keys)
      && !(text.unpositioned && _PGTextWords.hasPhrase(search))
    return exact ? .exact : .superset
  }

  /// The table's text index as this reader's snapshot sees it, read once: its keys,
  /// whether some row has no words, whether some row's words have no positions. Nil
  /// without a text index (or when it could not be read).
  ///
  /// The rows without words are found through the partial index on them. The rows
  /// without positions are counted, not looked for with `EXISTS`: for an `EXISTS` of a
  /// word the planner expects to find early, it walks the table testing every row (50 ms
  /// over 100,000 documents here), where a count reads the GIN index.
  func textState() -> _PGTextState? {
    if let known = _text.withLock({ $0 }) { return known }
    let read = try? _with { c -> _PGTextState? in
      guard let keys = try store._textKeys(c) else { return nil }
      let row = try c.execute(
        """
        SELECT EXISTS (SELECT 1 FROM \(store._quoted) WHERE words IS NULL), \
        (SELECT count(*) FROM \(store._quoted) WHERE words @@ $1::tsquery) > 0
        """, [_PGTextWords.quoted(_PGTextWords.unpositioned)])
      return _PGTextState(
        keys: keys, unfilled: row.string(0, 0) != "f", unpositioned: row.string(0, 1) != "f")
    }
    let state = read ?? nil
    _text.withLock { $0 = .some(state) }
    return state
  }

  private let _text = Mutex<_PGTextState??>(nil)

  func support(for sort: StoreSortKey) -> PushdownSupport {
    if let reason = _arrayOnPath(sort.fieldNames) { return .none(reason: reason) }
    let support = _PGTranslation.support(for: sort)
    guard support == .exact else { return support }
    if hasNonPlainRows {
      return .none(reason: "the table holds values SQL cannot order exactly (NaN, Decimal, …)")
    }
    guard let check = keyCheck(sort.fieldNames) else {
      return .none(reason: "the kinds the key \(sort.key) holds could not be checked")
    }
    // Collections order element by element in memory; PostgreSQL's jsonb order differs.
    if check.collections {
      return .none(reason: "the key \(sort.key) holds arrays or objects, which PostgreSQL orders differently")
    }
    // A date part is an integer whatever the numbers it is read from.
    if check.inexactNumbers && sort.datePart == nil {
      return .none(reason: Self._inexactNumbersReason(sort.key))
    }
    return .exact
  }

  /// Why a key holding integers and doubles beyond 2^53 stays in process.
  private static func _inexactNumbersReason(_ key: String) -> String {
    "the key \(key) holds integers and doubles beyond 2^53, which jsonb compares by the doubles' shortest "
      + "decimals, not their values"
  }

  /// Keeps the first row per value of `key` in PostgreSQL when the table's values under it
  /// are plain scalars, whose `jsonb` equality is the engine's (`1` equals `1.0`, a Bool is
  /// never a number, NFC text by bytes; nil and absent are made one value); declines rows
  /// that are not plain, arrays and objects under the key, integers and doubles beyond
  /// 2^53 both under the key (see ``_PGTranslation/inexactNumbers(_:)``), and a key no row
  /// holds (the engine decides what that means for the type).
  func support(forDistinct key: String) -> PushdownSupport {
    let names = FieldValue.fieldNames(inKey: key)
    if hasNonPlainRows {
      return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    if names.contains(where: { $0.utf8.contains(0) }) {
      return .none(reason: "the key holds U+0000, which PostgreSQL text cannot hold")
    }
    var translation = _PGTranslation()
    let x = translation.field(names)
    let found = try? _with {
      try $0.execute(
        """
        SELECT EXISTS (SELECT 1 FROM \(store._quoted) WHERE \(x) IS NOT NULL)
        """, translation.parameters)
    }
    guard let found, found.string(0, 0) == "t" else { return .none(reason: "no record holds the key \(key)") }
    guard let check = keyCheck(names) else {
      return .none(reason: "the kinds the key \(key) holds could not be checked")
    }
    if check.collections {
      return .none(reason: "the key \(key) holds arrays or objects, whose jsonb equality is not the engine's")
    }
    if check.inexactNumbers { return .none(reason: Self._inexactNumbersReason(key)) }
    return .exact
  }

  /// What the rows hold at a sort or distinct key that SQL would order or compare
  /// otherwise than the engine: one scan of the table per key and table version,
  /// remembered by the store. The reader's snapshot is the table at `version` (both read
  /// in its REPEATABLE READ transaction), and every write bumps the version, so an answer
  /// for this version holds for every reader of it. Nil when the check failed (the key
  /// then stays in process); a failure is not remembered.
  private func keyCheck(_ fieldNames: [String]) -> _PGKeyCheck? {
    if let known = store._collectionKeys.answer(fieldNames, version: version) { return known }
    var translation = _PGTranslation()
    let x = translation.field(fieldNames)
    guard
      let result = try? _with({
        try $0.execute(
          """
          SELECT EXISTS (SELECT 1 FROM \(store._quoted) WHERE jsonb_typeof(\(x)) IN ('array', 'object')), \
          \(_PGTranslation.inexactNumbers(x, table: store._quoted))
          """, translation.parameters)
      }), let collections = result.string(0, 0), let numbers = result.string(0, 1)
    else { return nil }
    let check = _PGKeyCheck(collections: collections != "f", inexactNumbers: numbers != "f")
    store._collectionKeys.remember(fieldNames, version: version, check)
    return check
  }

  /// The SELECT for `query`, with `columns`.
  func statement(_ query: StoreQuery, columns: String) throws -> (sql: String, parameters: [String?]) {
    let (sql, translation) = try _PGTranslation.building { statement(query, columns: columns, &$0) }
    return (sql, translation.parameters)
  }

  /// The SELECT for `query`, with `columns`, binding through `translation`.
  func statement(_ query: StoreQuery, columns: String, _ translation: inout _PGTranslation) -> String {
    var sql = "SELECT \(columns) FROM \(store._quoted)"
    var condition = ""
    if let filter = query.filter {
      // No `NOT plain OR …`: over rows SQL cannot compare, conditions are declined, and a
      // constant filter (no condition) is exact on every row.
      condition = " WHERE " + translation.filter(filter)
    }
    if let key = query.distinct {
      // Each row's place in the query's order, then the first row per value of the key
      // (the engine asked support(forDistinct:) first).
      let x = translation.field(FieldValue.fieldNames(inKey: key))
      let order = translation.orderBy(query.sort)
      let partitionOrder = translation.orderBy(query.sort)
      sql = """
        SELECT \(columns) FROM (SELECT body, row_number() OVER (ORDER BY \(order)) AS rs_pos, \
        row_number() OVER (PARTITION BY coalesce(\(x), 'null'::jsonb) ORDER BY \(partitionOrder)) AS rs_n \
        FROM \(store._quoted)\(condition)) AS rs_distinct WHERE rs_n = 1 ORDER BY rs_pos
        """
      if query.offset > 0 { sql += " OFFSET \(translation.bind(String(query.offset)))::bigint" }
      if let limit = query.limit { sql += " LIMIT \(translation.bind(String(limit)))::bigint" }
      return sql
    }
    sql += condition
    sql += " ORDER BY " + translation.orderBy(query.sort)
    if query.offset > 0 { sql += " OFFSET \(translation.bind(String(query.offset)))::bigint" }
    if let limit = query.limit { sql += " LIMIT \(translation.bind(String(limit)))::bigint" }
    return sql
  }

  func count(_ query: StoreQuery) throws -> Int {
    let (sql, translation) = try _PGTranslation.building { translation -> String in
      guard query.sort.isEmpty && query.offset == 0 && query.limit == nil && query.distinct == nil else {
        return "SELECT count(*) FROM (\(statement(query, columns: "1", &translation))) AS rs_window"
      }
      var sql = "SELECT count(*) FROM \(store._quoted)"
      if let filter = query.filter { sql += " WHERE " + translation.filter(filter) }
      return sql
    }
    let result = try _with { try $0.execute(sql, translation.parameters) }
    return Int(result.string(0, 0) ?? "0") ?? 0
  }

  func records(_ query: StoreQuery, _ body: (Element) throws -> Bool) throws {
    let (sql, parameters) = try statement(query, columns: "body")
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
    // The cursor lives in the transaction: the connection stays with the reader until
    // the last batch is read.
    try _lease.during {
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
  }

  /// `function` of `key` over the rows `query` selects, in one statement; nil (the engine
  /// computes it) wherever PostgreSQL could answer otherwise than the engine.
  ///
  /// Declined: a table holding rows that are not plain, a key holding U+0000 or no row
  /// holds, values of several kinds or arrays and objects among the selected rows (the
  /// engine throws `.typeMismatch` for those), a sum or average over doubles
  /// (floating-point addition depends on the order of the terms), a minimum or maximum
  /// over integers and doubles together (which of two equal numbers the engine keeps
  /// depends on their order), and an integer sum beyond `Int` (the engine throws
  /// `.overflow`). Integers sum exactly as `numeric`; a double is told from an integer by
  /// its decimal point, which `SQLJSON` always writes and `jsonb` keeps.
  ///
  /// ```swift
  /// try reader.aggregate(.sum, of: "age", StoreQuery())   // .int(34), one SELECT
  /// ```
  func aggregate(_ function: StoreAggregate, of key: String, _ query: StoreQuery) throws -> FieldValue? {
    let names = FieldValue.fieldNames(inKey: key)
    guard !hasNonPlainRows, !names.contains(where: { $0.utf8.contains(0) }) else { return nil }
    // Past PostgreSQL's limit of bound values, the engine computes it.
    guard
      let (sql, translation) = _PGTranslation.fitting({ translation -> String in
        let rows = statement(query, columns: "body", &translation)
        let x = translation.field(names)
        return Self._aggregateStatement(rows: rows, x: x, table: store._quoted)
      })
    else { return nil }
    let result = try _with { try $0.execute(sql, translation.parameters) }
    return Self._aggregate(function, result)
  }

  /// The statement of ``aggregate(_:of:_:)`` over the rows the SELECT `rows` reads, for the
  /// key read by `x`.
  private static func _aggregateStatement(rows: String, x: String, table: String) -> String {
    // The kind of each selected value: i(nteger), r(eal), b(oolean), s(tring), c(ollection);
    // NULL for nil and absent.
    let kind = """
      CASE jsonb_typeof(\(x)) WHEN 'number' THEN (CASE WHEN position('.' IN \(x) #>> '{}') = 0 THEN 'i' ELSE 'r' END) \
      WHEN 'boolean' THEN 'b' WHEN 'string' THEN 's' WHEN 'array' THEN 'c' WHEN 'object' THEN 'c' END
      """
    return """
      SELECT count(*) FILTER (WHERE k = 'i'), count(*) FILTER (WHERE k = 'r'), count(*) FILTER (WHERE k = 'b'), \
      count(*) FILTER (WHERE k = 's'), count(*) FILTER (WHERE k = 'c'), \
      sum((v #>> '{}')::numeric) FILTER (WHERE k = 'i'), \
      min((v #>> '{}')::numeric) FILTER (WHERE k IN ('i', 'r')), max((v #>> '{}')::numeric) FILTER (WHERE k IN ('i', 'r')), \
      min(v #>> '{}' COLLATE "C") FILTER (WHERE k = 's'), max(v #>> '{}' COLLATE "C") FILTER (WHERE k = 's'), \
      bool_and((v #>> '{}')::boolean) FILTER (WHERE k = 'b'), bool_or((v #>> '{}')::boolean) FILTER (WHERE k = 'b'), \
      (SELECT EXISTS (SELECT 1 FROM \(table) WHERE \(x) IS NOT NULL)), \
      (SELECT string_agg(DISTINCT k, ',') FROM (SELECT CASE jsonb_typeof(\(x)) WHEN 'number' THEN 'n' \
      WHEN 'boolean' THEN 'b' WHEN 'string' THEN 's' WHEN 'array' THEN 'c' WHEN 'object' THEN 'c' END AS k \
      FROM \(table)) AS rs_kinds) \
      FROM (SELECT \(kind) AS k, \(x) AS v FROM (\(rows)) AS rs_rows(body)) AS rs_values
      """
  }

  /// The answer of ``aggregate(_:of:_:)`` from its statement's `result`, or nil.
  private static func _aggregate(_ function: StoreAggregate, _ result: _PGResult) -> FieldValue? {
    guard result.count == 1 else { return nil }
    let counts = (0..<4).map { Int(result.string(0, $0) ?? "0") ?? 0 }
    let (ints, reals, bools, texts) = (counts[0], counts[1], counts[2], counts[3])
    // A key no row holds: the engine decides what it means for the type.
    guard result.string(0, 12) == "t" else { return nil }
    // The engine checks the kinds the key holds in the whole store, not only in the rows
    // selected: numbers only for a sum or average, one kind of scalar for min and max.
    let held = Set((result.string(0, 13) ?? "").split(separator: ","))
    guard SQLAggregates.acceptsKinds(function, held: held) else { return nil }
    switch function {
    case .sum, .average:
      guard reals == 0 else { return nil }
      let total = result.string(0, 5) ?? "0"
      if function == .sum { return Int(total).map(FieldValue.int) }
      guard ints > 0 else { return .null }
      // The engine divides the exact sum, rounded once to a Double, by the count.
      guard let exact = Int128(total) else { return nil }
      return .double(Double(exact) / Double(ints))
    case .min, .max:
      guard !(ints > 0 && reals > 0) else { return nil }
      let isMin = function == .min
      if ints > 0 { return (result.string(0, isMin ? 6 : 7)).flatMap { Int($0) }.map(FieldValue.int) }
      if reals > 0 { return (result.string(0, isMin ? 6 : 7)).flatMap { Double($0) }.map(FieldValue.double) }
      if texts > 0 { return result.string(0, isMin ? 8 : 9).map(FieldValue.string) }
      if bools > 0 { return result.string(0, isMin ? 10 : 11).map { FieldValue.bool($0 == "t") } }
      return .null
    }
  }

  /// The largest `limit` read without a cursor.
  static var directLimit: Int { 1024 }

  /// The record in a row's first column, decoded from libpq's buffer (no `String` copy).
  private func record(_ rows: _PGResult, _ row: Int) throws -> Element {
    let place = "the table \(store._quoted)"
    if let record = try rows.withBytes(row, 0, { try SQLJSON.decodeRecord(Element.self, utf8: $0, in: place) }) {
      return record
    }
    return try FieldValue.null.storedRecord(Element.self, in: place)
  }

  func explain(_ query: StoreQuery) throws -> StoreExplanation {
    let (sql, parameters) = try statement(query, columns: "body")
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
  /// - Throws: `RequestSetError` `.closed`, `.connectionFailed`.
  public func queryReader() throws -> any StoreQueryReader<Element> {
    try _PostgresReader(self)
  }
}

extension PostgresStore {
  /// The WHERE clause for `query`'s filter when PostgreSQL runs it exactly on the table as
  /// it is inside the write transaction on `c`: nil when a condition is not supported or
  /// the table holds rows SQL cannot compare exactly.
  func _exactWhere(_ query: StoreQuery, _ translation: inout _PGTranslation, on c: _PGConnection) throws
    -> String?
  {
    guard query.offset == 0, query.limit == nil, query.distinct == nil else { return nil }
    // A text search's exactness depends on the rows' words, which this transaction has
    // not checked: the engine writes record by record.
    if query.filter?.holdsSearch == true { return nil }
    for condition in query.filter?.conditions ?? [] where _PGTranslation.support(for: condition) != .exact {
      return nil
    }
    let nonPlain = try c.execute("SELECT EXISTS (SELECT 1 FROM \(_quoted) WHERE NOT plain)")
    guard nonPlain.string(0, 0) == "f" else { return nil }
    // A relation's subquery, checked again in this transaction, which it reads in.
    var subqueries: [StoreSubquery] = []
    _ = query.filter?.contains {
      if case .subquery(let s) = $0 { subqueries.append(s) }
      return false
    }
    for s in subqueries {
      if try _subqueryProblem(s, on: c).problem != nil { return nil }
    }
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
  /// - Throws: `RequestSetError` `.decodingFailed` (nothing written), `.connectionFailed`.
  public func update(matching query: StoreQuery, set assignments: [(key: String, value: FieldValue)]) throws
    -> Int?
  {
    // The engine has checked each assignment's key and value against the table's keys and
    // kinds (`StoreFieldKinds`) before calling this.
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
      changed = []  // a retried attempt starts again
      // Past PostgreSQL's limit of bound values, the engine updates record by record.
      let made = try _PGTranslation.fitting { translation -> String? in
        guard let condition = try _exactWhere(query, &translation, on: c) else { return nil }
        var body = "body"
        for (name, json) in values {
          body =
            "jsonb_set(\(body), ARRAY[\(translation.bind(name))]::text[], \(translation.bind(json))::jsonb, true)"
        }
        return "UPDATE \(_quoted) SET body = \(body) WHERE \(condition) RETURNING body"
      }
      guard case (let statement?, let translation)? = made else { return false }
      let rows = try c.execute(statement, translation.parameters)
      var bodies: [FieldValue] = []
      for row in 0..<rows.count {
        let body = try SQLJSON.decode(rows.string(row, 0) ?? "null")
        do {
          changed.append(try body.decode(Element.self))
        } catch {
          throw RequestSetError(
            .decodingFailed,
            "update cannot make \(Element.self) from \(body) (\(error)). Use update { … } with a closure to "
              + "supply the other fields; nothing was written.",
            underlying: error)
        }
        bodies.append(body)
      }
      // A key that held only nil may hold a value now.
      if let text = try _fieldKinds.merged(
        stored: _storedKinds(c), batch: _fieldKinds.noting(bodies, as: Element.self))
      {
        try _writeKinds(c, text)
      }
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
      deleted = []  // a retried attempt starts again
      // Past PostgreSQL's limit of bound values, the engine deletes record by record.
      let made = try _PGTranslation.fitting { translation -> String? in
        try _exactWhere(query, &translation, on: c).map { "DELETE FROM \(_quoted) WHERE \($0) RETURNING id" }
      }
      guard case (let statement?, let translation)? = made else { return false }
      let rows = try c.execute(statement, translation.parameters)
      for row in 0..<rows.count {
        deleted.append(try SQLJSON.decode(rows.string(row, 0) ?? "null").decode(Element.ID.self))
      }
      count = rows.count
      return rows.count > 0
    }
    return count
  }
}

/// A table's text index as a reader saw it (see ``_PostgresReader/textState()``).
struct _PGTextState: Sendable {
  /// The indexed keys.
  var keys: [String]
  /// Some row has no words (NULL): another program wrote it, or its words do not fit.
  var unfilled: Bool
  /// Some row's words have no positions (see ``_PGTextWords/unpositioned``).
  var unpositioned: Bool
}

extension StoreFilter {
  /// Whether a full-text condition is part of the filter.
  var holdsSearch: Bool {
    contains {
      if case .search = $0 { return true }
      return false
    }
  }
}

/// Tables' versions as a reader's transaction saw them (see `_PostgresReader`).
final class _PGTableVersions: Sendable {
  let state = Mutex<[String: UInt64]>([:])
}

/// What a reader's key check found at a sort or distinct key.
struct _PGKeyCheck: Sendable, Hashable {
  /// Some row holds an array or an object there.
  var collections: Bool
  /// Rows hold integers and doubles beyond 2^53 there (see
  /// ``_PGTranslation/inexactNumbers(_:table:)``).
  var inexactNumbers: Bool
}

/// The answers of the readers' key checks (``_PGKeyCheck``), each for the table version it
/// was found at; a newer version drops them.
final class _PGCollectionKeys: Sendable {
  private let state = Mutex<(version: UInt64, answers: [[String]: _PGKeyCheck])>((0, [:]))

  /// The answer for `fieldNames` at `version`, or nil when none is known.
  func answer(_ fieldNames: [String], version: UInt64) -> _PGKeyCheck? {
    state.withLock { $0.version == version ? $0.answers[fieldNames] : nil }
  }

  /// Keeps an answer found at `version` (one older than the newest kept is dropped).
  func remember(_ fieldNames: [String], version: UInt64, _ check: _PGKeyCheck) {
    state.withLock { state in
      if version > state.version { state = (version, [:]) }
      if version == state.version { state.answers[fieldNames] = check }
    }
  }
}
