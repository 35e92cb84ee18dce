#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import RequestSet
import _RequestSetSQL

extension SQLiteStore {
  /// The store's records that a SQL query you write selects: the escape hatch for what
  /// RequestSet's query language cannot say (a window function, a join with a table of
  /// your own, a `json_each` over an array).
  ///
  /// The query reads the store's table (named ``table``; its columns are `seq`, `id`,
  /// `body` and `plain`) and must return the `body` column, which is decoded as
  /// `Element`. It runs when the set is read (counted, iterated, subscripted), each time a
  /// fresh set is read; filters, sorts and windows added after it run in process on the
  /// rows it returned, in the order it returned them.
  ///
  /// ```swift
  /// let store = try SQLiteStore<Animal>(path: "zoo.sqlite")
  /// let oldest = store.records(
  ///   sql: """
  ///     SELECT body FROM "Animal"
  ///     WHERE json_extract(body, '$.age') >= ? ORDER BY json_extract(body, '$.age') DESC
  ///     """,
  ///   arguments: [10])
  /// print(oldest.filter(\.species == "dog").map(\.name))
  /// ```
  ///
  /// Values are only ever bound (`?`, `?NNN`, `:name`), never spliced into the text, so an
  /// argument cannot change the statement. Only one read-only query runs: a statement
  /// that would write, or a second statement after the first, is refused before it runs.
  /// Writes through the returned set throw `.readOnly`: write through the store.
  ///
  /// - Parameters:
  ///   - sql: One `SELECT` (or `WITH … SELECT`, or `VALUES`) statement in SQLite's dialect.
  ///   - arguments: One value per parameter, encoded as records encode them (a `Date` as
  ///     seconds since 2001-01-01, as `body` holds it).
  /// - Returns: A read-only request set; nothing runs until it is read.
  /// - Throws: Reading the set throws `RequestSetError` `.invalidSQL` for a statement
  ///   SQLite refuses or that is not one query, or a result without a `body` column;
  ///   `.argumentCount` when parameters and arguments differ in number;
  ///   `.decodingFailed` for a body that does not decode as `Element`; `.closed`.
  public func records(sql: String, arguments: [any Encodable & Sendable] = []) -> RequestSet<Element> {
    RequestSet(named: "SQL on \(path)", threads: asyncThreads) { [self] in
      var records: [Element] = []
      try _rawQuery(sql, arguments) { statement, names in
        guard let body = names.firstIndex(of: "body") else {
          throw RawSQL.noBodyColumn(names, table: _quotedTable)
        }
        return { statement in
          guard !statement.isNull(Int32(body)) else {
            throw RequestSetError(
              .invalidSQL, "A row of records(sql:) has a NULL body, which holds no record. Select the body "
                + "column of the store's table (\(self._quotedTable)), or use rows(sql:).")
          }
          records.append(try statement.withText(Int32(body)) {
            try SQLJSON.decodeRecord(Element.self, utf8: $0, in: "the result of records(sql:) on \(self.path)")
          })
        }
      }
      return records
    }
  }

  /// The rows a SQL query you write returns, each as a `DynamicRecord`: its `id` column
  /// as the record's id (null without one), every other column as a field of its name.
  ///
  /// A column holds what SQLite gives: an integer as `.int`, a real as `.double`, text as
  /// `.string` (JSON included: SQLite has no JSON type, so `json_extract(body, '$.owner')`
  /// reads as its text), NULL as `.null`. A BLOB is refused: select `hex(column)`. The
  /// query runs when the set is read; filters, sorts and windows after it run in process.
  ///
  /// ```swift
  /// let perSpecies = store.rows(sql: """
  ///   SELECT json_extract(body, '$.species') AS species, count(*) AS n
  ///   FROM "Animal" GROUP BY 1
  ///   """)
  /// for row in perSpecies.sortBy("-n") { print(row["species"], row["n"]) }
  /// ```
  /// - Parameters:
  ///   - sql: One `SELECT` (or `WITH … SELECT`, or `VALUES`) statement in SQLite's dialect.
  ///   - arguments: One value per parameter (see ``records(sql:arguments:)``).
  /// - Returns: A read-only request set of dynamic records; nothing runs until it is read.
  /// - Throws: Reading the set throws `.invalidSQL` (as ``records(sql:arguments:)``, and
  ///   for two columns of one name or a BLOB), `.argumentCount`, `.closed`.
  public func rows(sql: String, arguments: [any Encodable & Sendable] = []) -> RequestSet<DynamicRecord> {
    RequestSet(named: "SQL on \(path)", threads: asyncThreads) { [self] in
      var rows: [DynamicRecord] = []
      try _rawQuery(sql, arguments) { statement, names in
        return { statement in
          var values: [FieldValue] = []
          values.reserveCapacity(names.count)
          for column in names.indices {
            let i = Int32(column)
            switch sqlite3_column_type(statement.pointer, i) {
            case SQLITE_INTEGER: values.append(.int(Int(statement.int(i))))
            case SQLITE_FLOAT: values.append(.double(statement.double(i)))
            case SQLITE_TEXT: values.append(.string(statement.text(i)))
            case SQLITE_NULL: values.append(.null)
            default:
              throw RequestSetError(
                .invalidSQL, "The column \(names[column]) of rows(sql:) holds a BLOB, which a record cannot "
                  + "hold. Select hex(\(names[column])) or CAST(\(names[column]) AS TEXT) instead.")
            }
          }
          rows.append(try RawSQL.row(names: names, values: values))
        }
      }
      return rows
    }
  }

  /// Runs one read-only query on a pooled reader connection: checks it, binds
  /// `arguments`, asks `begin` (given the statement and its column names) for what to do
  /// with each row, and steps through the rows. A cancelled async call interrupts it.
  func _rawQuery(
    _ sql: String, _ arguments: [any Encodable & Sendable],
    _ begin: (_SQLiteStatement, [String]) throws -> (_SQLiteStatement) throws -> Void
  ) throws {
    if _writer.withLock({ $0 == nil }) { throw _closed() }
    try RawSQL.checkQuery(sql, engine: "SQLite")
    let values = try RawSQL.values(arguments)
    let c = try _pool.take()
    defer { _pool.give(c) }
    let statement = try _prepareOne(sql, on: c)
    guard sqlite3_stmt_readonly(statement.pointer) != 0, sqlite3_column_count(statement.pointer) > 0 else {
      throw RequestSetError(
        .invalidSQL, "The raw SQL escape hatch runs queries that only read and return columns; SQLite says this "
          + "statement would change the database or returns nothing. Write through the store instead.")
    }
    try RawSQL.checkArguments(
      parameters: Int(sqlite3_bind_parameter_count(statement.pointer)), arguments: values.count,
      placeholders: "?, ?NNN, :name, @name or $name")
    for (i, value) in values.enumerated() { try statement.bind(Self._rawBinding(value), at: Int32(i + 1)) }
    let names = (0..<sqlite3_column_count(statement.pointer)).map {
      sqlite3_column_name(statement.pointer, $0).map { String(cString: $0) } ?? ""
    }
    let each = try begin(statement, names)
    nonisolated(unsafe) let handle = c.handle  // sqlite3_interrupt is safe from any thread
    try StoreThreads.whenCancelled({ sqlite3_interrupt(handle) }) {
      while try _step(statement, sql: sql) { try each(statement) }
    }
    if StoreThreads.isCancelled { throw CancellationError() }
  }

  /// Steps once, reporting SQLite's refusal (a missing function, a type error at run time)
  /// as `.invalidSQL` and an interrupted step as the cancellation it was.
  private func _step(_ statement: _SQLiteStatement, sql: String) throws -> Bool {
    let rc = sqlite3_step(statement.pointer)
    if rc == SQLITE_ROW { return true }
    if rc == SQLITE_DONE { return false }
    if rc & 0xff == SQLITE_INTERRUPT && StoreThreads.isCancelled { throw CancellationError() }
    if rc & 0xff == SQLITE_ERROR {
      throw RawSQL.refused(String(cString: sqlite3_errmsg(statement.connection.handle)), engine: "SQLite", sql: sql)
    }
    throw statement.connection.error(rc, doing: "run a raw SQL query")
  }

  /// Prepares the first statement of `sql` and throws `.invalidSQL` when SQLite refuses it
  /// or when another statement follows (only white space, comments and `;` may).
  private func _prepareOne(_ sql: String, on c: _SQLiteConnection) throws -> _SQLiteStatement {
    let utf8 = Array(sql.utf8CString)
    return try utf8.withUnsafeBufferPointer { buffer -> _SQLiteStatement in
      let base = buffer.baseAddress!
      var pointer: OpaquePointer?
      var tail: UnsafePointer<CChar>?
      let rc = sqlite3_prepare_v2(c.handle, base, Int32(buffer.count), &pointer, &tail)
      guard rc == SQLITE_OK else {
        throw RawSQL.refused(String(cString: sqlite3_errmsg(c.handle)), engine: "SQLite", sql: sql)
      }
      guard let pointer else {
        throw RequestSetError(.invalidSQL, "The SQL statement is empty (or only comments). Write a SELECT query.")
      }
      let statement = _SQLiteStatement(pointer, c, owned: true)
      // Whatever follows must prepare to no statement at all.
      while let rest = tail, rest.pointee != 0 {
        var next: OpaquePointer?
        var after: UnsafePointer<CChar>?
        let rc = sqlite3_prepare_v2(c.handle, rest, -1, &next, &after)
        if let next { sqlite3_finalize(next) }
        if rc != SQLITE_OK || next != nil {
          throw RequestSetError(
            .invalidSQL, "The raw SQL escape hatch runs one statement, and text follows the first: "
              + "\"\(String(cString: rest).prefix(80))\". Remove it (or run each query on its own).")
        }
        if after == rest { break }
        tail = after
      }
      return statement
    }
  }

  /// A value bound for SQLite as `body` holds it: booleans as 0 and 1 (what
  /// `json_extract` gives), arrays and objects as their JSON text.
  static func _rawBinding(_ value: FieldValue) -> _SQLiteBinding {
    switch value {
    case .null: return .null
    case .bool(let b): return .int(b ? 1 : 0)
    case .int(let i): return .int(Int64(i))
    case .uint(let u): return u <= UInt64(Int64.max) ? .int(Int64(u)) : .double(Double(u))
    case .double(let d): return .double(d)
    case .decimal(let d): return .text("\(d)")
    case .string(let s): return .text(s)
    case .array, .object: return .text(SQLJSON.encode(value).text)
    }
  }
}
