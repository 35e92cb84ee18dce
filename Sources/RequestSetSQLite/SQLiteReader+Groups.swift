#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import RequestSet
import _RequestSetSQL

extension _SQLiteReader {
  /// Groups formed by SQLite with one `GROUP BY` statement, when every row keeps the
  /// engine's rules: nil when the table holds rows that are not plain, a key has no JSON
  /// path or reads through an array, or the rows hold values SQL would group or aggregate
  /// differently (checked by the statement itself, per group).
  ///
  /// What SQLite answers exactly: group keys holding integers, strings or nil (a Double or
  /// a Bool among a group's values declines: SQLite's `json_extract` makes `1.0` and `true`
  /// equal to `1`); `count`; `sum` and `average` over integers (SQLite's integer overflow
  /// declines; the average is the exact sum over the count, as in memory); `min` and `max`
  /// over integers or over strings (binary order of NFC text is Unicode scalar order).
  func groups(_ query: StoreGroupQuery) throws -> [[FieldValue]]? {
    guard !nonPlain, !query.keys.isEmpty, query.query.sort.isEmpty, query.query.distinct == nil, query.query.offset == 0,
      query.query.limit == nil
    else { return nil }
    var paths: [String: String] = [:]
    var parts: [String: RequestDatePart] = [:]
    for key in query.keys + query.columns.compactMap(\.key) {
      // `born.@month`: the month of `born`, an integer or NULL (see `SQLDateParts`).
      let split = RequestDatePart.split(key)
      let names = FieldValue.fieldNames(inKey: split?.key ?? key)
      guard arrayOnPath(names) == nil, let path = _SQLiteTranslation.pathLiteral(names) else { return nil }
      paths[key] = path
      parts[key] = split?.part
    }
    func value(_ key: String) -> String {
      if let part = parts[key] { return _SQLiteTranslation.datePartValue(part, paths[key]!) }
      return "json_extract(body, \(paths[key]!))"
    }
    // The kinds each key has held, by the table's summary, as this read sees it: they let
    // a type check (and the filter's) read the key's value, which an index on the key
    // holds, instead of the key's JSON type, which only the record's body holds (see
    // `_SQLiteTranslation.typeExpression`).
    let kinds = summaryKinds()
    func typed(_ key: String, notIn types: [String]) -> String {
      // A date part is always an integer or NULL.
      if parts[key] != nil { return "0" }
      let type = _SQLiteTranslation.typeExpression(paths[key]!, testing: types, held: kinds?.heldKinds(at: key))
      return "count(CASE WHEN \(type) NOT IN \(_SQLiteTranslation.typeList(types)) THEN 1 END)"
    }
    // Per group key: its value, and how many values SQLite would equate with another kind.
    var columns: [String] = []
    for key in query.keys {
      columns.append(value(key))
      columns.append(typed(key, notIn: ["integer", "text", "null"]))
    }
    // Per column: its value(s), then the checks that say whether the value is exact.
    for column in query.columns {
      switch column {
      case .count:
        columns.append("count(*)")
      case .aggregate(.sum, let key), .aggregate(.average, let key):
        columns.append("sum(\(value(key)))")
        columns.append("count(\(value(key)))")
        columns.append(typed(key, notIn: ["integer", "null"]))
      case .aggregate(let function, let key):
        columns.append("\(function == .min ? "min" : "max")(\(value(key)))")
        columns.append(typed(key, notIn: ["integer", "null"]))
        columns.append(typed(key, notIn: ["text", "null"]))
      }
    }
    let groupBy = query.keys.isEmpty ? "" : " GROUP BY " + query.keys.map(value).joined(separator: ", ")
    return try withConnection { c -> [[FieldValue]]? in
      let (s, t) = try c.prepare { opaque in
        var t = _SQLiteTranslation.whereClause(
          query.query.filter, nonPlain: false, opaque: opaque, text: textTable, kinds: kinds)
        t.sql = "SELECT \(columns.joined(separator: ", ")) FROM \(quotedTable)\(t.sql)\(groupBy)"
        return t
      }
      try s.bind(t.bindings)
      var rows: [[FieldValue]] = []
      while true {
        let more: Bool
        do {
          more = try s.step(doing: "group records")
        } catch let error as RequestSetError where error.message.contains("integer overflow") {
          return nil  // in memory the sum is exact, or throws .overflow itself
        }
        guard more else { break }
        var row: [FieldValue] = []
        var i: Int32 = 0
        for _ in query.keys {
          guard s.int(i + 1) == 0 else { return nil }
          row.append(s.isNull(i) ? .null : Self._scalar(s, i))
          i += 2
        }
        for column in query.columns {
          switch column {
          case .count:
            row.append(.int(Int(s.int(i))))
            i += 1
          case .aggregate(let function, _) where function == .sum || function == .average:
            guard s.int(i + 2) == 0 else { return nil }
            let sum = s.isNull(i) ? 0 : s.int(i)
            let count = s.int(i + 1)
            if function == .sum {
              row.append(.int(Int(sum)))
            } else {
              row.append(count == 0 ? .null : .double(Double(Int128(sum)) / Double(count)))
            }
            i += 3
          case .aggregate:
            guard s.int(i + 1) == 0 || s.int(i + 2) == 0 else { return nil }
            row.append(s.isNull(i) ? .null : Self._scalar(s, i))
            i += 3
          }
        }
        rows.append(row)
      }
      return rows
    }
  }

  /// An integer or text column as the engine's value.
  private static func _scalar(_ s: _SQLiteStatement, _ column: Int32) -> FieldValue {
    sqlite3_column_type(s.pointer, column) == SQLITE_INTEGER ? .int(Int(s.int(column))) : .string(s.text(column))
  }
}
