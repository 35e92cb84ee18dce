import Foundation
import RequestSet
import _RequestSetSQL

/// A ``StoreQuery`` as SQLite SQL over RequestSet's row layout (`seq`, `id`, `body`,
/// `plain`): values are bound parameters; a key reaches the SQL text only as a JSON path
/// quoted by `SQLJSON.quoteLiteral`, word for word the path an index on that key uses,
/// so SQLite's planner matches the two.
struct _SQLiteTranslation {
  var sql = ""
  var bindings: [_SQLiteBinding] = []

  /// The JSON path SQLite reads for `fieldNames`, as a SQL literal: `'$."owner"."city"'`;
  /// nil when a name holds a quote or U+0000, which SQLite's paths cannot spell
  /// (conditions on such keys read the key in Swift instead, through `rs_cond`).
  static func pathLiteral(_ fieldNames: [String]) -> String? {
    // SQLite 3.40 reads a backslash in a quoted path name as an escape, so a name holding
    // one has no path either.
    if fieldNames.contains(where: { $0.contains("\\") }) { return nil }
    return SQLJSON.jsonPath(fieldNames).flatMap { try? SQLJSON.quoteLiteral($0) }
  }

  /// The filter as a WHERE expression. With `nonPlain`, rows whose values SQL cannot
  /// compare exactly pass unconditionally (the engine rechecks them).
  static func whereClause(_ filter: StoreFilter?, nonPlain: Bool) throws -> _SQLiteTranslation {
    var t = _SQLiteTranslation()
    guard let filter else { return t }
    var expression = ""
    try t.append(filter, into: &expression, depth: 0)
    // Only conditions are answered as a superset (constants are exact everywhere), so a
    // filter without one must not let the rows through.
    let superset = nonPlain && !filter.conditions.isEmpty
    t.sql = superset ? " WHERE (NOT plain OR (\(expression)))" : " WHERE " + expression
    return t
  }

  private mutating func append(_ filter: StoreFilter, into out: inout String, depth: Int) throws {
    // SQLite refuses expressions deeper than 1000; stop well before it with our own error.
    if depth > 400 {
      throw RequestSetError(
        .tooComplex, "The filter nests more than 400 levels deep for SQLite. Join conditions in one and(…) instead.")
    }
    switch filter {
    case .constant(let b): out += b ? "1" : "0"
    case .condition(let c): out += try condition(c)
    case .and(let terms), .or(let terms):
      guard !terms.isEmpty else {
        out += { if case .and = filter { return "1" } else { return "0" } }()
        return
      }
      let joiner: String = { if case .and = filter { return " AND " } else { return " OR " } }()
      out += "("
      for (i, term) in terms.enumerated() {
        if i > 0 { out += joiner }
        try append(term, into: &out, depth: depth + 1)
      }
      out += ")"
    case .not(let inner):
      // A NULL inside stands for false (every NULL comes from a condition the engine calls
      // false), so NOT treats it as false too.
      out += "NOT IFNULL("
      try append(inner, into: &out, depth: depth + 1)
      out += ", 0)"
    }
  }

  /// One condition: native SQL where it is exactly the engine's test, else `rs_cond`, the
  /// engine's own test run by SQLite.
  private mutating func condition(_ c: StoreCondition) throws -> String {
    guard let path = Self.pathLiteral(c.fieldNames) else {
      bindings.append(.condition(c, wholeBody: true))
      return "rs_cond(?, body)"
    }
    if let native = native(c, path) { return native }
    bindings.append(.condition(c, wholeBody: false))
    return "rs_cond(?, body -> \(path))"
  }

  private mutating func native(_ c: StoreCondition, _ path: String) -> String? {
    guard c.quantifier == nil, !c.countsElements, c.collation == .binary, !c.caseInsensitive,
      !c.diacriticInsensitive, case .compare(let comparison) = c.operator
    else { return nil }
    let value = "json_extract(body, \(path))"
    let type = "json_type(body, \(path))"
    switch (comparison, c.value) {
    case (.equal, .null): return "coalesce(\(type), 'null') = 'null'"
    case (.notEqual, .null): return "coalesce(\(type), 'null') <> 'null'"
    case (.equal, .bool(let b)): return "coalesce(\(type), '') = '\(b)'"
    case (.notEqual, .bool(let b)): return "coalesce(\(type), '') <> '\(b)'"
    default: break
    }
    let kinds: String
    switch c.value {
    case .int(let i):
      bindings.append(.int(Int64(i)))
      kinds = "('integer', 'real')"
    case .uint(let u) where u <= UInt64(Int64.max):
      bindings.append(.int(Int64(u)))
      kinds = "('integer', 'real')"
    case .double(let d) where d.isFinite:
      bindings.append(.double(d))
      kinds = "('integer', 'real')"
    case .string(let s) where !s.utf8.contains(0):
      // Rows keep NFC text when plain, and the engine compares canonical equivalents as
      // equal (and orders by NFC scalars), so the NFC form of the value is exact.
      bindings.append(.text(SQLJSON.nfc(s)))
      kinds = "('text')"
    default: return nil
    }
    let test = "(\(value) \(Self.sqlOperator(comparison)) ? AND \(type) IN \(kinds))"
    return comparison == .notEqual ? "NOT IFNULL(\(test), 0)" : test
  }

  private static func sqlOperator(_ comparison: RequestComparison) -> String {
    switch comparison {
    case .equal, .notEqual: return "="
    case .lessThan: return "<"
    case .lessThanOrEqual: return "<="
    case .greaterThan: return ">"
    case .greaterThanOrEqual: return ">="
    }
  }

  /// ORDER BY for `sort`, ties by `seq`, and the keys it binds. With a collation other
  /// than binary, with rows that are not plain (`nonPlain`), or for a key no JSON path
  /// spells, a key orders through the `rs_…` collation (the engine's order on the decoded
  /// values), read by `rs_field` wherever a JSON path would not read what the engine reads
  /// (rows that are not plain keep tagged values and objects; see `SQLJSON`). Otherwise by
  /// kind rank, then the SQL value (numbers exactly across integer and real, text by bytes:
  /// Unicode scalar order of NFC text), then arrays and objects through the collation.
  static func orderBy(_ sort: [StoreSortKey], nonPlain: Bool) -> (sql: String, bindings: [_SQLiteBinding]) {
    guard !sort.isEmpty else { return (" ORDER BY seq", []) }
    var terms: [String] = []
    var bindings: [_SQLiteBinding] = []
    for key in sort {
      let direction = key.order == .ascending ? "ASC" : "DESC"
      let collate = "COLLATE " + _collationName(key.collation)
      guard let path = pathLiteral(key.fieldNames) else {
        bindings.append(.key(key.key))
        terms.append("coalesce(rs_field(?, body), 'null') \(collate) \(direction)")
        continue
      }
      if nonPlain {
        bindings.append(.key(key.key))
        terms.append(
          "coalesce(CASE WHEN plain THEN body -> \(path) ELSE rs_field(?, body) END, 'null') \(collate) \(direction)")
        continue
      }
      if key.collation != .binary {
        terms.append("coalesce(body -> \(path), 'null') \(collate) \(direction)")
        continue
      }
      let type = "json_type(body, \(path))"
      terms.append(
        "CASE \(type) WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'integer' THEN 2 WHEN 'real' THEN 2 "
          + "WHEN 'text' THEN 3 WHEN 'array' THEN 4 WHEN 'object' THEN 5 ELSE 0 END \(direction)")
      terms.append("CASE WHEN \(type) IN ('array', 'object') THEN NULL ELSE json_extract(body, \(path)) END \(direction)")
      terms.append("CASE WHEN \(type) IN ('array', 'object') THEN body -> \(path) END \(collate) \(direction)")
    }
    return (" ORDER BY " + terms.joined(separator: ", ") + ", seq", bindings)
  }
}
