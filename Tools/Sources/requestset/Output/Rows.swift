import RequestSet

/// The output formats of `query`, `dump` and `history`.
enum OutputFormat: String, CaseIterable {
  case table, json, jsonl, csv
}

/// Rows of named cells, the shape every output format takes.
struct Rows {
  var columns: [String]
  var rows: [[String: FieldValue]]
  /// The order of nested keys, for JSON and CSV.
  var order = KeyOrder()
  /// Whether the columns are string keys already (`--values owner.city`) rather than
  /// field names (which CSV escapes when they hold a dot).
  var columnsAreKeys = false
  /// What one row is, for the table's count line: `(3 records)`, `(2 commits)`.
  var noun = "record"

  /// Records as rows: `id`, then every top-level key any of them holds or `order` lists
  /// (so a key no shown record holds, as after `query "arr_delay == nil"`, is still a
  /// column), in `order`.
  init(records: [DynamicRecord], order: KeyOrder) {
    var keys = Set(order.topLevelKeys)
    keys.remove("id")
    for r in records { keys.formUnion(r.fields.keys) }
    columns = ["id"] + order.ordered(keys)
    self.order = order
    rows = records.map { r in
      var row = r.fields
      row["id"] = r.id
      return row
    }
  }

  init(keys: [String], rows: [[String: FieldValue]], order: KeyOrder = KeyOrder()) {
    columns = keys
    self.rows = rows
    self.order = order
    columnsAreKeys = true
  }

  /// Writes the rows in `format`; a table fits `width` when it is given.
  func render(_ format: OutputFormat, to output: Output, width: Int?) {
    switch format {
    case .table: output.write(Table.render(self, width: width))
    case .json:
      output.write("[")
      for (i, row) in rows.enumerated() {
        var line: [UInt8] = i == 0 ? [] : Array(",".utf8)
        line.append(contentsOf: "\n".utf8)
        JSONText.appendRow(row, columns: columns, to: &line, order: order)
        output.write(bytes: line)
      }
      output.write(rows.isEmpty ? "]\n" : "\n]\n")
    case .jsonl:
      for row in rows {
        var line: [UInt8] = []
        JSONText.appendRow(row, columns: columns, to: &line, order: order)
        line.append(0x0A)
        output.write(bytes: line)
      }
    case .csv:
      // Nested objects become dotted columns, as `dump --format csv` writes them.
      var header: [(column: String, leaf: String)] = []
      var seen = Set<String>()
      for column in columns {
        let base = columnsAreKeys ? column : CSV.escape(column)
        var leaves = KeyOrderBuilder()
        for row in rows { leaves.add(CSV.leaves(of: row[column], key: base, order: order)) }
        let found = leaves.keys.isEmpty ? [base] : leaves.keys
        for leaf in found where seen.insert(leaf).inserted { header.append((column, leaf)) }
      }
      output.write(CSV.line(header.map { CSV.quoted($0.leaf) }))
      for row in rows {
        output.write(
          CSV.line(
            header.map { column, leaf in
              let base = columnsAreKeys ? column : CSV.escape(column)
              let inner = leaf.dropFirst(base.count).drop { $0 == "." }
              guard let value = row[column] else { return "" }
              return CSV.cell(inner.isEmpty ? value : CSV.value(at: String(inner), in: value))
            }))
      }
    }
  }
}
