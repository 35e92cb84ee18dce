import RequestSet
import _RequestSetSQL

extension _PostgresReader {
  /// Groups formed by PostgreSQL with one `GROUP BY` statement, when every row keeps the
  /// engine's rules: nil when the table holds rows that are not plain, a key reads through
  /// an array, or the rows hold values SQL would group or aggregate differently (checked
  /// by the statement itself, per group).
  ///
  /// What PostgreSQL answers exactly: group keys holding integers, strings, Bools or nil
  /// (nil and an absent key make one group, as in memory; a Double among a group's values
  /// declines, since `jsonb` makes `1.0` equal to `1`); `count`; `sum` and `average` over
  /// integers (exact `numeric` sums; a sum past `Int` declines, and memory throws
  /// `.overflow` itself); `min` and `max` over integers or over strings (`COLLATE "C"`).
  func groups(_ query: StoreGroupQuery) throws -> [[FieldValue]]? {
    guard !hasNonPlainRows, !query.keys.isEmpty, query.query.sort.isEmpty, query.query.distinct == nil,
      query.query.offset == 0, query.query.limit == nil
    else { return nil }
    var paths: [String: String] = [:]
    for key in query.keys + query.columns.compactMap(\.key) {
      // `born.@month`: the month of `born`, a jsonb integer or NULL.
      let split = RequestDatePart.split(key)
      let names = FieldValue.fieldNames(inKey: split?.key ?? key)
      guard _arrayOnPath(names) == nil, let path = try? _PGSQL.literalPath(names) else { return nil }
      paths[key] = split.map { _PGTranslation.datePart($0.part, of: "(body #> \(path))") } ?? "(body #> \(path))"
    }
    func x(_ key: String) -> String { paths[key]! }
    func type(_ key: String) -> String { "jsonb_typeof(\(x(key)))" }
    func text(_ key: String) -> String { "(\(x(key)) #>> '{}')" }
    func nonInteger(_ key: String) -> String {
      "count(*) FILTER (WHERE \(type(key)) NOT IN ('number', 'null') OR (\(type(key)) = 'number' AND \(text(key)) ~ '[.eE]'))"
    }
    func number(_ key: String) -> String { "CASE WHEN \(type(key)) = 'number' THEN \(text(key))::numeric END" }
    var columns: [String] = []
    var groupBy: [String] = []
    for key in query.keys {
      let grouped = "COALESCE(\(x(key)), 'null'::jsonb)"
      groupBy.append(grouped)
      columns.append("(\(grouped))::text")
      columns.append(
        "count(*) FILTER (WHERE \(type(key)) IN ('object', 'array') OR (\(type(key)) = 'number' AND \(text(key)) ~ '[.eE]'))")
    }
    for column in query.columns {
      switch column {
      case .count:
        columns.append("count(*)")
      case .aggregate(.sum, let key), .aggregate(.average, let key):
        columns.append("sum(\(number(key)))::text")
        columns.append("count(\(number(key)))")
        columns.append(nonInteger(key))
      case .aggregate(let function, let key):
        let f = function == .min ? "min" : "max"
        columns.append("\(f)(\(number(key)))::text")
        columns.append("\(f)(CASE WHEN \(type(key)) = 'string' THEN \(text(key)) END COLLATE \"C\")")
        columns.append(nonInteger(key))
        columns.append("count(*) FILTER (WHERE \(type(key)) NOT IN ('string', 'null'))")
      }
    }
    // Past PostgreSQL's limit of bound values, the engine groups in process.
    guard
      let (sql, translation) = _PGTranslation.fitting({ translation -> String in
        var sql = "SELECT \(columns.joined(separator: ", ")) FROM \(store._quoted)"
        if let filter = query.query.filter { sql += " WHERE " + translation.filter(filter) }
        return sql + " GROUP BY " + groupBy.joined(separator: ", ")
      })
    else { return nil }
    let result = try _with { try $0.execute(sql, translation.parameters) }
    var rows: [[FieldValue]] = []
    for r in 0..<result.count {
      var row: [FieldValue] = []
      var i = 0
      func int(_ column: Int) -> Int128? { result.string(r, column).flatMap { Int128($0) } }
      for _ in query.keys {
        guard int(i + 1) == 0, let json = result.string(r, i) else { return nil }
        row.append(try SQLJSON.decode(json))
        i += 2
      }
      for column in query.columns {
        switch column {
        case .count:
          row.append(.int(Int(int(i) ?? 0)))
          i += 1
        case .aggregate(let function, _) where function == .sum || function == .average:
          guard int(i + 2) == 0, let count = int(i + 1) else { return nil }
          let sum: Int128
          if result.string(r, i) == nil {
            sum = 0
          } else {
            guard let exact = int(i) else { return nil }
            sum = exact
          }
          if function == .sum {
            guard let fits = Int(exactly: sum) else { return nil }
            row.append(.int(fits))
          } else {
            row.append(count == 0 ? .null : .double(Double(sum) / Double(count)))
          }
          i += 3
        case .aggregate:
          if int(i + 2) == 0 {
            guard let value = result.string(r, i) else {
              row.append(.null)
              i += 4
              continue
            }
            guard let exact = Int128(value), let fits = Int(exactly: exact) else { return nil }
            row.append(.int(fits))
          } else if int(i + 3) == 0 {
            row.append(result.string(r, i + 1).map(FieldValue.string) ?? .null)
          } else {
            return nil
          }
          i += 4
        }
      }
      rows.append(row)
    }
    return rows
  }
}
