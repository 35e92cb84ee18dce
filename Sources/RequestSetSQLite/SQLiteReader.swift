import RequestSet
import Synchronization
import _RequestSetSQL

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// One read transaction on a pooled connection, held from the reader's creation to its
/// release: every count, iteration and explain through it sees the same rows.
final class _SQLiteReader<Element: Record>: StoreQueryReader {
  let version: UInt64
  /// Whether the table holds rows SQL cannot compare exactly (NaN, Decimal, text that is
  /// not NFC, …): conditions are then a superset, rechecked by the engine.
  let nonPlain: Bool
  private let table: String
  let quotedTable: String
  private let pool: _SQLitePool
  private let connection: Mutex<_SQLiteConnection?>
  private let kinds: SQLFieldKinds
  /// The store's FTS5 table, read when the reader began.
  let textTable: _SQLiteTextTable?
  /// The database file, as `SQLiteStore.location` names it.
  private let database: String?

  init(store: SQLiteStore<Element>) throws {
    let c = try store._pool.take()
    table = store.table
    quotedTable = store._quotedTable
    pool = store._pool
    kinds = store._kinds
    database = store._database
    // BEGIN is deferred: the first read below starts the snapshot the reader keeps.
    try c.execute("BEGIN", doing: "start a read transaction")
    do {
      version = try store._version(c)
      // Kept on the connection while the file is unchanged (see `_SQLiteTableChecks`).
      let checks = try _SQLiteTableChecks.read(c, table: store.table, quotedTable: quotedTable)
      textTable = checks.textTable
      nonPlain = checks.nonPlain
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

  /// Every full-text condition: an FTS5 `MATCH` over the store's text index when it
  /// covers the keys, else the engine's matcher on each row (see SQLiteStore+TextIndex.swift).
  /// Over rows SQL cannot compare exactly, the other conditions let rows through that the
  /// engine rechecks, so the search is rechecked with them.
  func support(for search: StoreTextSearch) -> PushdownSupport { nonPlain ? .superset : .exact }

  /// A relation's subquery on another table of this file, when SQL compares exactly what
  /// both sides read: this table's rows and every table the subquery reads are plain, the
  /// keys are JSON paths that read through no array, and the tables' summaries say the
  /// keys compared have only held nil, numbers and text (a key an aggregate reduces may
  /// hold any kind: `rs_agg` computes the engine's operator on its JSON). The other tables
  /// are checked in this reader's transaction, whose snapshot the statement reads: stores
  /// in one file have their own connections, and a write one of them committed is in the
  /// snapshot of every reader that begins after it (WAL), so a subquery sees the related
  /// rows as any read of that store begun then would. Writes are unchanged: a graph's write still commits
  /// store by store under the graph's write lock, and a statement begun between two of its
  /// commits sees the first and not the second, as a semi-join's two reads could; one
  /// snapshot for both tables only narrows what a read can see apart.
  func support(for subquery: StoreSubquery) -> PushdownSupport {
    guard let database, subquery.location.database == database else {
      return .none(reason: "the table \(subquery.location.table) is in another database file")
    }
    if nonPlain { return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)") }
    let names = FieldValue.fieldNames(inKey: subquery.key)
    guard _SQLiteTranslation.pathLiteral(names) != nil,
      _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: subquery.column)) != nil
    else { return .none(reason: "the key \(subquery.key) or \(subquery.column) holds a quote or U+0000") }
    if let reason = arrayOnPath(names) { return .none(reason: reason) }
    guard let tables = SQLSubqueries.tables(.subquery(subquery)),
      let quoted = try? tables.map(SQLJSON.quoteIdentifier)
    else { return .none(reason: "a full-text search on a related table runs on its own store") }
    // SQL's `IN` is the engine's equality over nil, numbers and text; a key that has
    // ever held a Bool (SQL's 1), an array or an object (JSON text) is compared in process.
    for (table, key) in SQLSubqueries.comparedKeys(subquery, in: table) {
      let read = try? withConnection { c in
        try SQLiteStore<Element>._storedKinds(c, table: table).map { try SQLFieldKinds().kinds(fromText: $0) }
      }
      guard let summary = read ?? nil else { return .none(reason: "the table \(table) keeps no summary of its keys") }
      if summary.holds(.bool, at: key) || summary.holds(.array, at: key) || summary.holds(.object, at: key) {
        return .none(
          reason: "the key \(key) of \(table) has held Booleans, arrays or objects, which SQL's IN compares otherwise")
      }
    }
    // An aggregate reads its key's JSON as the record holds it (`rs_agg`), so any kind is
    // exact, but a path through an array maps over elements in the engine, not in SQL.
    if let aggregate = subquery.aggregate {
      let names = FieldValue.fieldNames(inKey: aggregate.key)
      guard _SQLiteTranslation.pathLiteral(names) != nil else {
        return .none(reason: "the key \(aggregate.key) holds a quote or U+0000")
      }
      let table = subquery.location.table
      let read = try? withConnection { c in
        try SQLiteStore<Element>._storedKinds(c, table: table).map { try SQLFieldKinds().kinds(fromText: $0) }
      }
      guard let summary = read ?? nil else {
        return .none(reason: "the table \(table) keeps no summary of its keys")
      }
      for end in 1..<max(1, names.count)
      where summary.holds(.array, at: FieldValue.key(forFieldNames: Array(names[..<end]))) {
        return .none(
          reason:
            "the key \(aggregate.key) of \(table) reads through an array in some record, which SQL paths do not map over"
        )
      }
    }
    let tests = quoted.map { "EXISTS(SELECT 1 FROM \($0) WHERE NOT plain)" }.joined(separator: " OR ")
    let plain = try? withConnection { c -> Bool in
      let s = try c.prepare("SELECT \(tests)")
      return try s.step(doing: "check a related table's rows") && s.int(0) == 0
    }
    guard plain == true else {
      return .none(reason: "a related table holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    return .exact
  }

  /// How the statement reads each related sort value this reader took (see
  /// ``support(forRelatedSort:)``), decided there, where the tables are read.
  private let relatedForms = Mutex<[StoreRelatedValue: _SQLiteRelatedForm]>([:])

  /// A sort by a value of another table of this file (`owner.name`, `visits.@count`), as a
  /// correlated subquery in the ORDER BY (see `_SQLiteTranslation.orderBy`), when SQL
  /// orders exactly as the engine does: both tables hold only plain rows, every key is a
  /// JSON path that reads through no array, the keys compared (the record's key and the
  /// related column) have held only nil, numbers and text, as for a subquery
  /// (``support(for:)-(StoreSubquery)``), and the key read is held by some related row (a
  /// key no row holds is left to the engine, which decides what it means). The tables'
  /// summaries and rows are read in this reader's transaction, whose snapshot the
  /// statement reads.
  func support(forRelatedSort sort: StoreSortKey) -> PushdownSupport {
    guard let related = sort.related else { return support(for: sort) }
    let other = related.location.table
    guard let database, related.location.database == database else {
      return .none(reason: "the table \(other) is in another database file")
    }
    if nonPlain { return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)") }
    let readKey: String?
    switch related.reading {
    case .value(let key): readKey = key
    case .count: readKey = nil
    case .aggregate(let aggregate): readKey = aggregate.key
    }
    let keys = [related.key, related.column] + (readKey.map { [$0] } ?? [])
    for key in keys {
      // `FieldValue[path:]` and the engine's key model read a backslash apart.
      guard !key.contains("\\"), _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: key)) != nil else {
        return .none(reason: "the key \(key) holds a backslash, a quote or U+0000")
      }
    }
    if let reason = arrayOnPath(FieldValue.fieldNames(inKey: related.key)) { return .none(reason: reason) }
    guard let quoted = try? SQLJSON.quoteIdentifier(other) else {
      return .none(reason: "the table \(other) has no SQL name")
    }
    let own = table
    let read = try? withConnection { c -> (StoreFieldKinds?, StoreFieldKinds?, Bool) in
      func kinds(_ table: String) throws -> StoreFieldKinds? {
        try SQLiteStore<Element>._storedKinds(c, table: table).map { try SQLFieldKinds().kinds(fromText: $0) }
      }
      let (mine, theirs) = (try kinds(own), try kinds(other))
      let s = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(quoted) WHERE NOT plain)")
      let plain = try s.step(doing: "check a related table's rows") && s.int(0) == 0
      return (mine, theirs, plain)
    }
    guard case let (mine?, theirs?, plain)? = read else {
      return .none(reason: "the table \(own) or \(other) keeps no summary of its keys")
    }
    guard plain else {
      return .none(reason: "the table \(other) holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    let scalars: Set<StoreFieldKinds.Kind> = [.null, .number, .string]
    let compared = [
      (own, related.key, mine.heldKinds(at: related.key)),
      (other, related.column, theirs.heldKinds(at: related.column)),
    ]
    for (table, key, kinds) in compared {
      if kinds.isEmpty { return .none(reason: "no record of \(table) holds the key \(key)") }
      if !kinds.isSubset(of: scalars) {
        return .none(
          reason: "the key \(key) of \(table) has held Booleans, arrays or objects, which SQL's = compares otherwise")
      }
    }
    var scalar = false
    if let readKey {
      let kinds = theirs.heldKinds(at: readKey)
      if kinds.isEmpty { return .none(reason: "no record of \(other) holds the key \(readKey)") }
      let names = FieldValue.fieldNames(inKey: readKey)
      for end in 1..<max(1, names.count)
      where theirs.holds(.array, at: FieldValue.key(forFieldNames: Array(names[..<end]))) {
        return .none(
          reason:
            "the key \(readKey) of \(other) reads through an array in some record, which SQL paths do not map over")
      }
      scalar = kinds.isSubset(of: scalars)
    }
    // A to-one finds its target through the table's `id` column (unique, so indexed),
    // which holds the id's JSON text: the foreign key's JSON text (`body -> path`, as the
    // row holds it) equals it exactly when the values are equal, unless a double is
    // involved (3.0 is written `3e0`, the integer 3 `3`).
    var byIDColumn = false
    if related.column == "id" {
      byIDColumn = true
      for (table, key, kinds) in compared where kinds.contains(.number) {
        guard let path = _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: key)),
          let name = try? SQLJSON.quoteIdentifier(table)
        else {
          byIDColumn = false
          break
        }
        let reals = try? withConnection { c -> Bool in
          let s = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(name) WHERE json_type(body, \(path)) = 'real')")
          return try s.step(doing: "check a key's numbers") && s.int(0) != 0
        }
        if reals != false { byIDColumn = false }
      }
    }
    // A subquery that finds its related rows by a JSON key reads every related row for each
    // record unless an index on that key serves it: then the statement would be quadratic
    // where the in-process road (one read of the related values, a sort in Swift) is not.
    if !byIDColumn {
      let column = related.column
      let indexed = (try? withConnection { c in
        try SQLiteStore<Element>._madeIndexes(c, table: other).contains { $0.keys.first == column }
      }) ?? false
      guard indexed else {
        return .none(
          reason: "the key \(column) of \(other) has no index, so a subquery per record would read every row of "
            + "\(other); createIndex(\"\(column)\") on that store lets the statement sort")
      }
    }
    relatedForms.withLock { $0[related] = _SQLiteRelatedForm(scalar: scalar, byIDColumn: byIDColumn) }
    return .exact
  }

  /// How the statement reads `related`, as ``support(forRelatedSort:)`` decided; the
  /// general form (exact on every kind) when it did not.
  func relatedForm(_ related: StoreRelatedValue) -> _SQLiteRelatedForm {
    relatedForms.withLock { $0[related] } ?? _SQLiteRelatedForm(scalar: false, byIDColumn: false)
  }

  /// Every date part: `SQLDateParts` spells `RequestDatePart`'s arithmetic in SQL.
  func support(forDatePart part: RequestDatePart) -> PushdownSupport { .exact }

  func support(for sort: StoreSortKey) -> PushdownSupport {
    // `FieldValue[path:]` and the engine's key model read a trailing backslash apart (the
    // engine finds no field), so escapes stay with the engine.
    if sort.key.contains("\\") {
      return .none(reason: "the key \(sort.key) holds a backslash, an escape the engine resolves")
    }
    if let reason = arrayOnPath(sort.fieldNames) { return .none(reason: reason) }
    if sort.datePart != nil {
      // Over rows that are not plain, a date may be a tagged value SQL does not read.
      if nonPlain {
        return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)")
      }
      guard let base = RequestDatePart.split(sort.key)?.key,
        _SQLiteTranslation.pathLiteral(sort.fieldNames) != nil, isHeld(base)
      else {
        return .none(reason: "no record holds the key \(sort.key)")
      }
      return .exact
    }
    if !isHeld(sort.key) {
      // The engine decides what a key no record holds means for the record type (a
      // property that is nil everywhere, or `.unknownKey`); SQL would sort by nothing.
      return .none(reason: "no record holds the key \(sort.key)")
    }
    return .exact
  }

  /// Keeps the first row per value of `key` in SQL when the table's values under it are
  /// plain scalars, whose SQL equality is the engine's (`1` equals `1.0`, nil equals
  /// absent, NFC text by bytes); declines rows that are not plain, arrays and objects
  /// under the key, and keys the engine must check (no row holds it, an escape).
  func support(forDistinct key: String) -> PushdownSupport {
    let names = FieldValue.fieldNames(inKey: key)
    if nonPlain {
      return .none(reason: "the table holds values SQL cannot compare exactly (NaN, Decimal, …)")
    }
    guard !key.contains("\\"), let path = _SQLiteTranslation.pathLiteral(names) else {
      return .none(reason: "the key \(key) holds a backslash, a quote or U+0000")
    }
    if let reason = arrayOnPath(names) { return .none(reason: reason) }
    if !isHeld(key) { return .none(reason: "no record holds the key \(key)") }
    let collections =
      (try? withConnection { c -> Bool in
        let s = try c.prepare(
          "SELECT EXISTS(SELECT 1 FROM \(quotedTable) WHERE json_type(body, \(path)) IN ('array', 'object'))")
        return try s.step(doing: "check a key's kinds") && s.int(0) != 0
      }) ?? true
    if collections {
      return .none(reason: "the key \(key) holds arrays or objects, whose SQL equality is not the engine's")
    }
    return .exact
  }

  private let heldKeys = Mutex<[String: Bool]>([:])
  /// The table's summary of keys and kinds as this reader's transaction sees it, read once
  /// (nil inside: no summary, or it could not be read).
  private let summary = Mutex<StoreFieldKinds??>(nil)

  /// Whether every row's value of `key` is nil, a number or text, by the table's summary
  /// (which notes every kind a key has ever held): no Bool, array or object, so SQLite's
  /// order of the key's SQL values is the engine's (see `_SQLiteTranslation.orderBy`).
  ///
  /// The summary is read by ``readSummary(for:)`` before the statement is built (a read
  /// needs the connection, which building holds); unread, no key is scalar.
  func isScalar(_ key: String) -> Bool {
    guard !nonPlain, let read = summary.withLock({ $0 }), let kinds = read else { return false }
    let held = kinds.heldKinds(at: key)
    return !held.isEmpty && held.isSubset(of: [.null, .number, .string])
  }

  /// Whether some row holds `key` (nil included), read as the engine reads it. Checked
  /// once per key per reader; the scan stops at the first row that holds it.
  func isHeld(_ key: String) -> Bool {
    if let known = heldKeys.withLock({ $0[key] }) { return known }
    var t = _SQLiteTranslation()
    var test = "rs_field(?, body) IS NOT NULL"
    t.bindings.append(.key(key))
    if let path = _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: key)) {
      test = "CASE WHEN plain THEN json_type(body, \(path)) IS NOT NULL ELSE \(test) END"
    }
    // A failed check answers "held": the engine then pushes, as before the check.
    let held =
      (try? withConnection { c -> Bool in
        let s = try c.prepare("SELECT EXISTS(SELECT 1 FROM \(quotedTable) WHERE \(test))")
        try s.bind(t.bindings)
        return try s.step(doing: "check that a key is held") && s.int(0) != 0
      }) ?? true
    heldKeys.withLock { $0[key] = held }
    return held
  }

  private let arrayPaths = Mutex<[[String]: String?]>([:])

  /// Why a nested key cannot run in SQL: some row holds an array part way along its path,
  /// and the engine reads the rest of the key in each of its elements, which a JSON path
  /// does not. Checked once per key per reader; nil when the key is safe.
  func arrayOnPath(_ names: [String]) -> String? {
    guard names.count > 1 else { return nil }
    if let known = arrayPaths.withLock({ $0[names] }) { return known }
    var tests: [String] = []
    for end in 1..<names.count {
      guard let path = _SQLiteTranslation.pathLiteral(Array(names[..<end])) else { break }
      tests.append("json_type(body, \(path)) = 'array'")
    }
    let key = FieldValue.key(forFieldNames: names)
    var reason: String? =
      "the key \(key) reads through an array in some record, which SQL paths do not map over"
    if !tests.isEmpty,
      let found = try? withConnection({ c -> Bool in
        let s = try c.prepare(
          "SELECT EXISTS(SELECT 1 FROM \(quotedTable) WHERE \(tests.joined(separator: " OR ")))")
        return try s.step(doing: "check a key's path") && s.int(0) != 0
      }), !found
    {
      reason = nil
    }
    arrayPaths.withLock { $0[names] = reason }
    return reason
  }

  /// The JSON path of the query's distinct key, checked (it reads the table, so call it
  /// outside ``withConnection(_:)``); nil without one.
  private func distinctPath(_ query: StoreQuery) throws -> String? {
    try query.distinct.map { key -> String in
      guard case .exact = support(forDistinct: key),
        let path = _SQLiteTranslation.pathLiteral(FieldValue.fieldNames(inKey: key))
      else {
        throw RequestSetError(
          .notPushedDown, "SQLite cannot keep distinct values of \(key) exactly; run distinct in process.")
      }
      return path
    }
  }

  /// SELECT (or count) with the query's WHERE, ORDER BY, DISTINCT (on `distinct`, from
  /// ``distinctPath(_:)``) and window; with `opaque`, the WHERE is one `rs_filter` call
  /// (see `_SQLiteConnection.prepare(_:)`).
  private func statement(
    _ query: StoreQuery, counting: Bool, distinct: String?, opaque: Bool, kinds: StoreFieldKinds? = nil
  ) -> _SQLiteTranslation {
    var t = _SQLiteTranslation.whereClause(
      query.filter, nonPlain: nonPlain, opaque: opaque, text: textTable, kinds: kinds)
    let order =
      counting && distinct == nil
      ? (sql: "", bindings: [])
      : _SQLiteTranslation.orderBy(
        query.sort, nonPlain: nonPlain, isScalar: isScalar, table: quotedTable, related: relatedForm)
    let whereBindings = t.bindings
    t.bindings += order.bindings
    let windowed = query.offset != 0 || query.limit != nil
    var window = ""
    if windowed {
      window = " LIMIT ? OFFSET ?"
      t.bindings.append(.int(query.limit.map { Int64($0) } ?? -1))
      t.bindings.append(.int(Int64(query.offset)))
    }
    if let path = distinct {
      // Each row's place in the query's order, then the first row per value: values are
      // told apart by kind (a Bool is not the number 1) and by SQL value (integers and
      // reals by exact numeric value, text by bytes, which is canonical equivalence for
      // the NFC text of plain rows); nil and absent are one value.
      let type = "json_type(body, \(path))"
      let ranked = """
        SELECT body, row_number() OVER (\(order.sql.dropFirst())) AS rs_pos, \
        row_number() OVER (PARTITION BY CASE WHEN \(type) IN ('true', 'false') THEN 1 \
        WHEN \(type) IN ('integer', 'real') THEN 2 WHEN \(type) = 'text' THEN 3 ELSE 0 END, \
        CASE WHEN \(type) = 'null' THEN NULL ELSE json_extract(body, \(path)) END \
        \(order.sql.dropFirst())) AS rs_n FROM \(quotedTable)\(t.sql)
        """
      // The statement reads the order's keys in both windows before the WHERE clause.
      t.bindings =
        order.bindings + order.bindings + whereBindings
        + t.bindings.dropFirst(whereBindings.count + order.bindings.count)
      t.sql =
        counting
        ? "SELECT count(*) FROM (SELECT 1 FROM (\(ranked)) WHERE rs_n = 1 ORDER BY rs_pos\(window))"
        : "SELECT body FROM (\(ranked)) WHERE rs_n = 1 ORDER BY rs_pos\(window)"
      return t
    }
    if counting {
      t.sql =
        windowed
        ? "SELECT count(*) FROM (SELECT 1 FROM \(quotedTable)\(t.sql)\(window))"
        : "SELECT count(*) FROM \(quotedTable)\(t.sql)"
      return t
    }
    t.sql = "SELECT body FROM \(quotedTable)\(t.sql)\(order.sql)\(window)"
    return t
  }

  func withConnection<T>(_ body: (_SQLiteConnection) throws -> T) throws -> T {
    // A cancelled async call interrupts the statement (sqlite3_interrupt may be called
    // from any thread; it is never called once `body` returned, see `whenCancelled`).
    nonisolated(unsafe) let handle = connection.withLock { $0?.handle }
    return try StoreThreads.whenCancelled({ if let handle { sqlite3_interrupt(handle) } }) {
      try connection.withLock { c in
        guard let c else {
          throw RequestSetError(.closed, "The reader of \(table) was released. Open another.")
        }
        return try body(c)
      }
    }
  }

  /// Reads the table's summary of kinds once, when `query` sorts (see ``isScalar(_:)``).
  private func readSummary(for query: StoreQuery) {
    guard !query.sort.isEmpty, !nonPlain else { return }
    _ = summaryKinds()
  }

  /// The table's summary of keys and kinds as this reader's transaction sees it, read once
  /// per reader; nil when there is none or it could not be read.
  func summaryKinds() -> StoreFieldKinds? {
    if let known = summary.withLock({ $0 }) { return known }
    let read = try? fieldKinds()
    summary.withLock { $0 = .some(read) }
    return read
  }

  /// The table's keys and kinds as this read transaction sees them.
  func fieldKinds() throws -> StoreFieldKinds? {
    try withConnection { c in
      try SQLiteStore<Element>._storedKinds(c, table: table).map { try kinds.kinds(fromText: $0) }
    }
  }

  func count(_ query: StoreQuery) throws -> Int {
    let distinct = try distinctPath(query)
    if distinct != nil { readSummary(for: query) }
    // A count reads no record: with the summary, its type tests read each key's value,
    // which an index on the key holds, instead of the body (see
    // `_SQLiteTranslation.typeExpression`), so an index answers the count alone.
    let kinds = distinct == nil && !nonPlain && query.filter != nil ? summaryKinds() : nil
    return try withConnection { c in
      let (s, t) = try c.prepare { statement(query, counting: true, distinct: distinct, opaque: $0, kinds: kinds) }
      try s.bind(t.bindings)
      _ = try s.step(doing: "count records")
      return Int(s.int(0))
    }
  }

  func records(_ query: StoreQuery, _ body: (Element) throws -> Bool) throws {
    let distinct = try distinctPath(query)
    readSummary(for: query)
    try withConnection { c in
      let (s, t) = try c.prepare { statement(query, counting: false, distinct: distinct, opaque: $0) }
      try s.bind(t.bindings)
      while try s.step(doing: "read records") {
        let record = try s.withText(0) {
          try SQLJSON.decodeRecord(Element.self, utf8: $0, in: "the table \(table) of \(c.path)")
        }
        if try !body(record) { break }
      }
    }
  }

  /// `function` of `key` over the rows `query` selects, in one statement; nil (the engine
  /// computes it) wherever SQLite could answer otherwise than the engine.
  ///
  /// Declined: a table holding rows that are not plain, a key no JSON path spells or no
  /// row holds, a key reading through an array, values of several kinds or arrays and
  /// objects among the selected rows (the engine throws `.typeMismatch` for those), a sum
  /// or average over doubles (floating-point addition depends on the order of the terms),
  /// and a minimum or maximum over integers and doubles together (which of two equal
  /// numbers the engine keeps depends on their order). Integer sums are exact: the high
  /// and low 32 bits are summed apart, so nothing overflows in SQL, and a total beyond
  /// `Int` is left to the engine, which throws `.overflow`.
  ///
  /// ```swift
  /// try reader.aggregate(.sum, of: "age", StoreQuery())   // .int(34), one SELECT
  /// ```
  func aggregate(_ function: StoreAggregate, of key: String, _ query: StoreQuery) throws -> FieldValue? {
    let names = FieldValue.fieldNames(inKey: key)
    guard !nonPlain, let path = _SQLiteTranslation.pathLiteral(names), arrayOnPath(names) == nil, isHeld(key)
    else { return nil }
    let t = "json_type(body, \(path))"
    func sql(_ rows: _SQLiteTranslation) -> String {
      """
      SELECT count(*) FILTER (WHERE t = 'integer'), count(*) FILTER (WHERE t = 'real'), \
      count(*) FILTER (WHERE t IN ('true', 'false')), count(*) FILTER (WHERE t = 'text'), \
      count(*) FILTER (WHERE t IN ('array', 'object')), \
      min(v) FILTER (WHERE t NOT IN ('array', 'object', 'null')), \
      max(v) FILTER (WHERE t NOT IN ('array', 'object', 'null')), \
      sum(v >> 32) FILTER (WHERE t = 'integer'), sum(v & 4294967295) FILTER (WHERE t = 'integer'), \
      (SELECT group_concat(k) FROM (SELECT DISTINCT CASE \(t) WHEN 'integer' THEN 'n' WHEN 'real' THEN 'n' \
      WHEN 'true' THEN 'b' WHEN 'false' THEN 'b' WHEN 'text' THEN 's' WHEN 'array' THEN 'c' WHEN 'object' THEN 'c' \
      END AS k FROM \(quotedTable) WHERE k IS NOT NULL)) \
      FROM (SELECT \(t) AS t, json_extract(body, \(path)) AS v FROM (\(rows.sql)))
      """
    }
    let distinct = try distinctPath(query)
    readSummary(for: query)
    return try withConnection { c -> FieldValue? in
      let (s, rows) = try c.prepare { opaque in
        var rows = statement(query, counting: false, distinct: distinct, opaque: opaque)
        rows.sql = sql(rows)
        return rows
      }
      try s.bind(rows.bindings)
      guard try s.step(doing: "aggregate records") else { return nil }
      let (ints, reals, bools) = (s.int(0), s.int(1), s.int(2))
      // The engine checks the kinds the key holds in the whole store, not only in the rows
      // selected: numbers only for a sum or average, one kind of scalar for min and max.
      let held = Set(s.isNull(9) ? [] : s.text(9).split(separator: ","))
      guard SQLAggregates.acceptsKinds(function, held: held) else { return nil }
      switch function {
      case .sum, .average:
        guard reals == 0 else { return nil }
        // Each part sums at most 2^32 per row, so SQLite's 64-bit sum cannot overflow
        // below 2^31 rows.
        guard ints < 1 << 31 else { return nil }
        let total = Int128(s.int(7)) << 32 + Int128(s.int(8))
        if function == .average { return ints == 0 ? .null : .double(Double(total) / Double(ints)) }
        return Int(exactly: total).map(FieldValue.int)
      case .min, .max:
        guard !(ints > 0 && reals > 0) else { return nil }
        let column: Int32 = function == .min ? 5 : 6
        if s.isNull(column) { return .null }
        if bools > 0 { return .bool(s.int(column) != 0) }
        if ints > 0 { return .int(Int(s.int(column))) }
        if reals > 0 { return .double(s.double(column)) }
        return .string(s.text(column))
      }
    }
  }

  func explain(_ query: StoreQuery) throws -> StoreExplanation {
    let distinct = try distinctPath(query)
    readSummary(for: query)
    let (t, plan): (_SQLiteTranslation, [String]) = try withConnection { c in
      let (s, explained) = try c.prepare { opaque in
        var t = statement(query, counting: false, distinct: distinct, opaque: opaque)
        t.sql = "EXPLAIN QUERY PLAN " + t.sql
        return t
      }
      try s.bind(explained.bindings)
      var lines: [String] = []
      while try s.step(doing: "explain a query") { lines.append(s.text(3)) }
      var t = explained
      t.sql.removeFirst("EXPLAIN QUERY PLAN ".count)
      return (t, lines)
    }
    return StoreExplanation(statement: t.sql, bindings: t.bindings.map(\.description), plan: plan)
  }
}

extension StoreFieldKinds {
  /// The kinds some record has held under `key`: empty for a key no record holds.
  ///
  /// ```swift
  /// kinds.heldKinds(at: "species")   // [.string]
  /// ```
  func heldKinds(at key: String) -> Set<Kind> {
    Set(Kind.allCases.filter { holds($0, at: key) })
  }
}
