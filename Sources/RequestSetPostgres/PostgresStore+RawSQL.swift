import CLibPQ
import Foundation
import RequestSet
import _RequestSetSQL

extension PostgresStore {
  /// The store's records that a SQL query you write selects: the escape hatch for what
  /// RequestSet's query language cannot say (a window function, a join with a table of
  /// your own, `jsonb_path_query`, a full-text search of your own making).
  ///
  /// The query reads the store's table (its columns are `seq`, `id`, `body` (jsonb) and
  /// `plain`) and must return the `body` column, which is decoded as `Element`. It runs
  /// when the set is read, in a read-only transaction; filters, sorts and windows added
  /// after it run in process on the rows it returned, in the order it returned them.
  ///
  /// ```swift
  /// let store = try PostgresStore<Animal>(url: "postgresql://localhost/zoo")
  /// let oldest = store.records(
  ///   sql: """
  ///     SELECT body FROM "Animal" WHERE (body->>'age')::int >= $1 ORDER BY (body->>'age')::int DESC
  ///     """,
  ///   arguments: [10])
  /// print(oldest.filter(\.species == "dog").map(\.name))
  /// ```
  ///
  /// Values are only ever bound (`$1`, `$2`, …; each sent as text, typed by the server
  /// from where it stands), never spliced into the text, so an argument cannot change the
  /// statement. Only one query runs, in a `READ ONLY` transaction: a statement that would
  /// write (a data-modifying `WITH`, `nextval`, a function that writes) is refused.
  /// Writes through the returned set throw `.readOnly`: write through the store.
  ///
  /// - Parameters:
  ///   - sql: One `SELECT` (or `WITH … SELECT`, or `VALUES`) statement in PostgreSQL's dialect.
  ///   - arguments: One value per parameter, encoded as records encode them (a `Date` as
  ///     seconds since 2001-01-01, as `body` holds it).
  /// - Returns: A read-only request set; nothing runs until it is read.
  /// - Throws: Reading the set throws `RequestSetError` `.invalidSQL` for a statement
  ///   PostgreSQL refuses or that is not one read-only query, or a result without a `body`
  ///   column; `.argumentCount` when the highest `$N` and the arguments differ;
  ///   `.decodingFailed` for a body that does not decode; `.connectionFailed`, `.closed`.
  public func records(sql: String, arguments: [any Encodable & Sendable] = []) -> RequestSet<Element> {
    RequestSet(named: "SQL on \(_pool.connection.redacted)", threads: asyncThreads) { [self] in
      let result = try _rawQuery(sql, arguments)
      let names = (0..<result.columns).map { result.name($0) }
      guard let body = names.firstIndex(of: "body") else { throw RawSQL.noBodyColumn(names, table: _quoted) }
      var records: [Element] = []
      records.reserveCapacity(result.count)
      for row in 0..<result.count {
        guard
          let record = try result.withBytes(
            row, body,
            { bytes in
              try SQLJSON.decodeRecord(Element.self, utf8: bytes, in: "the result of records(sql:)")
            })
        else {
          throw RequestSetError(
            .invalidSQL,
            "A row of records(sql:) has a NULL body, which holds no record. Select the body "
              + "column of the store's table (\(_quoted)), or use rows(sql:).")
        }
        records.append(record)
      }
      return records
    }
  }

  /// The rows a SQL query you write returns, each as a `DynamicRecord`: its `id` column
  /// as the record's id (null without one), every other column as a field of its name.
  ///
  /// A column holds its PostgreSQL type's value: `boolean` as `.bool`, `smallint`,
  /// `integer`, `bigint` and `oid` as `.int`, `real` and `double precision` as `.double`,
  /// `numeric` as `.decimal` (what `sum` and `avg` of integers give), `json` and `jsonb` as
  /// the value they hold (an object, an array, …), NULL as `.null`, and every other type
  /// as its text (`text`, `timestamptz`, `uuid`, `bytea` as `\x…`). SQLite has no JSON
  /// type, so the same JSON column reads there as its text. The query runs when the set
  /// is read; filters, sorts and windows after it run in process.
  ///
  /// ```swift
  /// let perSpecies = store.rows(sql: """
  ///   SELECT body->>'species' AS species, count(*) AS n FROM "Animal" GROUP BY 1
  ///   """)
  /// for row in perSpecies.sortBy("-n") { print(row["species"], row["n"]) }
  /// ```
  /// - Parameters:
  ///   - sql: One `SELECT` (or `WITH … SELECT`, or `VALUES`) statement in PostgreSQL's dialect.
  ///   - arguments: One value per parameter (see ``records(sql:arguments:)``).
  /// - Returns: A read-only request set of dynamic records; nothing runs until it is read.
  /// - Throws: Reading the set throws `.invalidSQL` (as ``records(sql:arguments:)``, and for
  ///   two columns of one name), `.argumentCount`, `.connectionFailed`, `.closed`.
  public func rows(sql: String, arguments: [any Encodable & Sendable] = []) -> RequestSet<DynamicRecord> {
    RequestSet(named: "SQL on \(_pool.connection.redacted)", threads: asyncThreads) { [self] in
      let result = try _rawQuery(sql, arguments)
      let names = (0..<result.columns).map { result.name($0) }
      let types = (0..<result.columns).map { result.type($0) }
      var rows: [DynamicRecord] = []
      rows.reserveCapacity(result.count)
      for row in 0..<result.count {
        var values: [FieldValue] = []
        values.reserveCapacity(names.count)
        for column in names.indices {
          values.append(try Self._rawValue(result, row, column, type: types[column]))
        }
        rows.append(try RawSQL.row(names: names, values: values))
      }
      return rows
    }
  }

  /// Runs one read-only query with `arguments` bound, in a `READ ONLY` transaction, and
  /// returns its result; the database's refusals are `.invalidSQL`.
  func _rawQuery(_ sql: String, _ arguments: [any Encodable & Sendable]) throws -> _PGResult {
    try _pool.checkOpen()
    try RawSQL.checkQuery(sql, engine: "PostgreSQL")
    let values = try RawSQL.values(arguments)
    try RawSQL.checkArguments(
      parameters: RawSQL.dollarParameters(sql), arguments: values.count, placeholders: "$1, $2, …")
    let parameters = values.map(Self._rawParameter)
    do {
      return try _read { c in
        try _transaction(c, "BEGIN READ ONLY") { try c.execute(sql, parameters) }
      }
    } catch let error as RequestSetError where error.code == .storeFailed || error.code == .schemaMismatch {
      let diagnostic = error.underlying as? _PGDiagnostic
      let said = "SQLSTATE \(diagnostic?.state ?? "?"): \(diagnostic?.message ?? error.message)"
      if diagnostic?.state == "25006" {
        throw RequestSetError(
          .invalidSQL,
          "The raw SQL escape hatch runs queries that only read, in a READ ONLY transaction, and this one would "
            + "write (\(said)). Write through the store instead.", underlying: error)
      }
      throw RawSQL.refused(said, engine: "PostgreSQL", sql: sql)
    }
  }

  /// An argument as the text PostgreSQL reads for a parameter: booleans as `true` and
  /// `false`, numbers in full, arrays and objects as JSON.
  static func _rawParameter(_ value: FieldValue) -> String? {
    switch value {
    case .null: return nil
    case .bool(let b): return b ? "true" : "false"
    case .int(let i): return String(i)
    case .uint(let u): return String(u)
    case .double(let d): return d.isNaN ? "NaN" : d.isInfinite ? (d < 0 ? "-Infinity" : "Infinity") : "\(d)"
    case .decimal(let d): return "\(d)"
    case .string(let s): return s
    case .array, .object: return SQLJSON.encode(value).text
    }
  }

  /// A result column's value by its type (see ``rows(sql:arguments:)``).
  static func _rawValue(_ result: _PGResult, _ row: Int, _ column: Int, type: UInt32) throws -> FieldValue {
    guard let text = result.string(row, column) else { return .null }
    switch type {
    case 16: return .bool(text == "t")
    case 20, 21, 23, 26: return Int(text).map(FieldValue.int) ?? .string(text)
    case 700, 701: return Double(text).map(FieldValue.double) ?? .string(text)
    case 1700:
      if text == "NaN" { return .double(.nan) }
      return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).map(FieldValue.decimal)
        ?? .string(text)
    case 114, 3802: return try SQLJSON.decode(text)
    default: return .string(text)
    }
  }
}

extension _PGResult {
  /// A column's name.
  func name(_ column: Int) -> String { PQfname(pointer, Int32(column)).map { String(cString: $0) } ?? "" }
  /// A column's type, as PostgreSQL's type OID.
  func type(_ column: Int) -> UInt32 { UInt32(PQftype(pointer, Int32(column))) }
}
