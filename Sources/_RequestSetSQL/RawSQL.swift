import RequestSet

/// What the raw SQL escape hatch of both SQL stores shares: the checks a statement passes
/// before it runs, its arguments as values, and a result row as a ``DynamicRecord``.
///
/// The escape hatch runs one read-only query; everything else is refused with
/// `.invalidSQL` before the database sees it, so it never writes around a store's change
/// log, its migrations or its live sets.
///
/// ```swift
/// try RawSQL.checkQuery("SELECT body FROM animals WHERE id = ?", engine: "SQLite")
/// ```
public enum RawSQL {
  /// The keywords a statement may start with: a query, and nothing else.
  static let queryKeywords: Set<String> = ["SELECT", "WITH", "VALUES"]

  /// Throws `.invalidSQL` unless `sql` starts (after spaces and comments) with `SELECT`,
  /// `WITH` or `VALUES`.
  ///
  /// ```swift
  /// try RawSQL.checkQuery("DELETE FROM animals", engine: "SQLite")   // throws .invalidSQL
  /// ```
  public static func checkQuery(_ sql: String, engine: String) throws {
    let keyword = leadingKeyword(sql)
    guard let keyword else {
      throw RequestSetError(
        .invalidSQL, "The SQL statement is empty (or only comments). Write a SELECT query, such as "
          + "SELECT body FROM \"Animal\" WHERE json_extract(body, '$.age') > ?.")
    }
    guard queryKeywords.contains(keyword.uppercased()) else {
      throw RequestSetError(
        .invalidSQL, "The raw SQL escape hatch runs queries only: the statement starts with \(keyword), not SELECT, "
          + "WITH or VALUES. Write to a store with its own methods (insert, save, apply, update or delete "
          + "through a RequestSet), which keep its change log, indexes and live sets right; \(engine) runs "
          + "nothing here that could change data.")
    }
  }

  /// The first word of `sql` after white space, opening parentheses and SQL comments
  /// (`-- …` and `/* … */`), or nil when there is none.
  ///
  /// ```swift
  /// RawSQL.leadingKeyword("  /* hi */ select 1")   // "select"
  /// ```
  public static func leadingKeyword(_ sql: String) -> String? {
    var scalars = Substring(sql).unicodeScalars[...]
    while let first = scalars.first {
      if first.properties.isWhitespace || first == "(" {
        scalars = scalars.dropFirst()
      } else if scalars.starts(with: "--".unicodeScalars) {
        scalars = scalars.drop { $0 != "\n" }
      } else if scalars.starts(with: "/*".unicodeScalars) {
        var rest = scalars.dropFirst(2)
        while !rest.isEmpty && !rest.starts(with: "*/".unicodeScalars) { rest = rest.dropFirst() }
        scalars = rest.dropFirst(2)
      } else {
        break
      }
    }
    let word = scalars.prefix { $0.properties.isAlphabetic || $0 == "_" }
    return word.isEmpty ? nil : String(String.UnicodeScalarView(word))
  }

  /// The statement's arguments as values, encoded as records encode them (a `Date` as
  /// seconds since 2001-01-01, a `UUID` as its string, nil as null).
  ///
  /// ```swift
  /// let values = try RawSQL.values([3, "dog", nil as String?])   // [.int(3), .string("dog"), .null]
  /// ```
  /// - Throws: `.encodingFailed` for an argument that does not encode.
  public static func values(_ arguments: [any Encodable & Sendable]) throws -> [FieldValue] {
    try arguments.map { try FieldValue(encoding: $0) }
  }

  /// Throws `.argumentCount` unless the statement's parameters and the arguments agree.
  ///
  /// ```swift
  /// try RawSQL.checkArguments(parameters: 1, arguments: 2, placeholders: "?")   // throws
  /// ```
  public static func checkArguments(parameters: Int, arguments: Int, placeholders: String) throws {
    guard parameters != arguments else { return }
    throw RequestSetError(
      .argumentCount,
      "The SQL statement has \(parameters) parameter\(parameters == 1 ? "" : "s") (\(placeholders)) but "
        + "\(arguments) argument\(arguments == 1 ? " was" : "s were") given. Pass one argument per parameter; "
        + "values are always bound, never spliced into the SQL text.")
  }

  /// A result row as a record: its `id` column becomes the record's ``DynamicRecord/id``
  /// (``FieldValue/null`` without one), every other column a field of its name.
  ///
  /// ```swift
  /// let row = try RawSQL.row(names: ["id", "n"], values: [.int(1), .int(2)])
  /// ```
  /// - Throws: `.invalidSQL` when two columns share a name.
  public static func row(names: [String], values: [FieldValue]) throws -> DynamicRecord {
    var fields: [String: FieldValue] = [:]
    fields.reserveCapacity(names.count)
    var seen: Set<String> = []
    var id = FieldValue.null
    for (name, value) in zip(names, values) {
      guard seen.insert(name).inserted else { throw duplicateColumn(name) }
      if name == "id" { id = value } else { fields[name] = value }
    }
    return DynamicRecord(id: id, fields: fields)
  }

  /// The highest `$N` parameter `sql` names outside strings, quoted names and comments:
  /// the number of arguments PostgreSQL expects.
  ///
  /// ```swift
  /// RawSQL.dollarParameters("SELECT body FROM t WHERE id = $2 AND '$9' <> $1")   // 2
  /// ```
  public static func dollarParameters(_ sql: String) -> Int {
    let b = Array(sql.utf8)
    var i = 0
    var highest = 0
    func isWord(_ c: UInt8) -> Bool {
      (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c >= 0x80
    }
    while i < b.count {
      let c = b[i]
      if c == UInt8(ascii: "'") {
        // A string; E'…' strings take backslash escapes.
        let escapes = i > 0 && (b[i - 1] == UInt8(ascii: "E") || b[i - 1] == UInt8(ascii: "e"))
          && (i < 2 || !isWord(b[i - 2]))
        i += 1
        while i < b.count {
          if escapes && b[i] == UInt8(ascii: "\\") { i += 2; continue }
          if b[i] == UInt8(ascii: "'") {
            if i + 1 < b.count && b[i + 1] == UInt8(ascii: "'") { i += 2; continue }
            break
          }
          i += 1
        }
        i += 1
      } else if c == UInt8(ascii: "\"") {
        i += 1
        while i < b.count && b[i] != UInt8(ascii: "\"") { i += 1 }
        i += 1
      } else if c == UInt8(ascii: "-") && i + 1 < b.count && b[i + 1] == UInt8(ascii: "-") {
        while i < b.count && b[i] != UInt8(ascii: "\n") { i += 1 }
      } else if c == UInt8(ascii: "/") && i + 1 < b.count && b[i + 1] == UInt8(ascii: "*") {
        // Comments nest in PostgreSQL.
        var depth = 1
        i += 2
        while i < b.count && depth > 0 {
          if b[i] == UInt8(ascii: "/") && i + 1 < b.count && b[i + 1] == UInt8(ascii: "*") {
            depth += 1
            i += 2
          } else if b[i] == UInt8(ascii: "*") && i + 1 < b.count && b[i + 1] == UInt8(ascii: "/") {
            depth -= 1
            i += 2
          } else {
            i += 1
          }
        }
      } else if c == UInt8(ascii: "$") && (i == 0 || !isWord(b[i - 1])) {
        var j = i + 1
        var n = 0
        while j < b.count && b[j] >= 0x30 && b[j] <= 0x39 {
          n = n > 100_000 ? n : n * 10 + Int(b[j] - 0x30)
          j += 1
        }
        if j > i + 1 {
          highest = max(highest, n)
          i = j
          continue
        }
        // A dollar-quoted string: $tag$ … $tag$.
        while j < b.count && isWord(b[j]) && !(b[j] >= 0x30 && b[j] <= 0x39 && j == i + 1) { j += 1 }
        guard j < b.count && b[j] == UInt8(ascii: "$") else {
          i = j
          continue
        }
        let tag = Array(b[i...j])
        var k = j + 1
        while k + tag.count <= b.count && !b[k..<(k + tag.count)].elementsEqual(tag) { k += 1 }
        i = k + tag.count
      } else {
        i += 1
      }
    }
    return highest
  }

  static func duplicateColumn(_ name: String) -> RequestSetError {
    RequestSetError(
      .invalidSQL, "Two result columns are named \(name), and a row holds one value per name. "
        + "Name them apart with AS (SELECT a.\(name) AS a_\(name), b.\(name) AS b_\(name) …).")
  }

  /// The error for a query whose result has no `body` column to decode records from.
  public static func noBodyColumn(_ columns: [String], table: String) -> RequestSetError {
    RequestSetError(
      .invalidSQL, "records(sql:) decodes each row's body column (the record as JSON), and this query returns "
        + "\(columns.isEmpty ? "no columns" : "the columns " + columns.joined(separator: ", ")). Select it: "
        + "SELECT body FROM \(table) WHERE …, or use rows(sql:) for rows that are not the store's records.")
  }

  /// The error the database gave for a statement it refused, in its words.
  public static func refused(_ message: String, engine: String, sql: String) -> RequestSetError {
    let shown = sql.count > 200 ? String(sql.prefix(200)) + "…" : sql
    return RequestSetError(
      .invalidSQL, "\(engine) refused the SQL statement: \(message). The statement: \(shown)")
  }
}
