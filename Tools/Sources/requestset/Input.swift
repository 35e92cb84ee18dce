import Foundation
import RequestSet

/// One record read from an input file, with the line it starts on.
struct InputRecord {
  var line: Int
  var fields: [String: FieldValue]
}

/// A bad line of an input file.
struct InputProblem {
  var line: Int
  var reason: String
}

/// JSON Lines: one JSON object per line; blank lines are skipped.
enum JSONLinesReader {
  static func read(_ data: Data, problems: inout [InputProblem]) -> [InputRecord] {
    var records: [InputRecord] = []
    let decoder = JSONDecoder()
    var lineNumber = 0
    for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
      lineNumber += 1
      var bytes = line
      if bytes.last == 0x0D { bytes = bytes.dropLast() }
      if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
      do {
        let value = try decoder.decode(FieldValue.self, from: Data(bytes))
        guard case .object(let fields) = value else {
          problems.append(InputProblem(line: lineNumber, reason: "it holds \(value), not a JSON object"))
          continue
        }
        records.append(InputRecord(line: lineNumber, fields: fields))
      } catch {
        problems.append(InputProblem(line: lineNumber, reason: "it is not valid JSON"))
      }
    }
    return records
  }
}

/// CSV (RFC 4180): a header line of keys, then one record per line. Quoted cells may hold
/// commas, quotes (doubled) and line breaks. A dotted header (`owner.city`) makes a nested
/// object. An unquoted cell is typed: empty is absent, `true`/`false` a Boolean, an integer
/// or a decimal number a number, `[…]`/`{…}` that parse as JSON that value, anything else
/// a string; a quoted cell is a string unless it holds a JSON array or object.
enum CSVReader {
  static func read(_ text: String, problems: inout [InputProblem]) -> [InputRecord] {
    var lines = parse(text, problems: &problems)
    guard !lines.isEmpty else { return [] }
    let header = lines.removeFirst()
    let keys = header.cells.map { CSV.splitKey($0.text) }
    if Set(header.cells.map(\.text)).count != header.cells.count {
      problems.append(InputProblem(line: header.line, reason: "the header names a column twice"))
      return []
    }
    var records: [InputRecord] = []
    for row in lines {
      if row.cells.count == 1 && row.cells[0].text.isEmpty && !row.cells[0].quoted { continue }
      guard row.cells.count == keys.count else {
        problems.append(
          InputProblem(line: row.line, reason: "it has \(row.cells.count) cells where the header has \(keys.count)"))
        continue
      }
      var object = FieldValue.object([:])
      for (path, cell) in zip(keys, row.cells) {
        guard let value = typed(cell) else { continue }
        object = setting(value, at: path[...], in: object)
      }
      guard case .object(let fields) = object else { continue }
      records.append(InputRecord(line: row.line, fields: fields))
    }
    return records
  }

  struct Cell {
    var text: String
    var quoted: Bool
  }
  struct Row {
    var line: Int
    var cells: [Cell]
  }

  static func typed(_ cell: Cell) -> FieldValue? {
    if cell.quoted {
      if let first = cell.text.first, first == "[" || first == "{", let json = json(cell.text) { return json }
      return .string(cell.text)
    }
    if cell.text.isEmpty { return nil }
    return infer(cell.text)
  }

  /// What an unquoted cell's text reads as.
  static func infer(_ text: String) -> FieldValue {
    if text.isEmpty { return .null }
    if text == "true" { return .bool(true) }
    if text == "false" { return .bool(false) }
    if let i = Int(text) { return .int(i) }
    if let u = UInt64(text) { return .uint(u) }
    if text.allSatisfy({ "0123456789+-.eE".contains($0) }), text.contains(where: \.isNumber), let d = Double(text),
      d.isFinite
    {
      return .double(d)
    }
    if let first = text.first, first == "[" || first == "{", let json = json(text) { return json }
    return .string(text)
  }

  static func json(_ text: String) -> FieldValue? {
    try? JSONDecoder().decode(FieldValue.self, from: Data(text.utf8))
  }

  static func setting(_ value: FieldValue, at path: ArraySlice<String>, in object: FieldValue) -> FieldValue {
    guard let head = path.first else { return value }
    var fields: [String: FieldValue]
    if case .object(let existing) = object { fields = existing } else { fields = [:] }
    fields[head] = setting(value, at: path.dropFirst(), in: fields[head] ?? .null)
    return .object(fields)
  }

  /// Splits text into rows of cells, each row with the line it starts on.
  static func parse(_ text: String, problems: inout [InputProblem]) -> [Row] {
    var rows: [Row] = []
    var cells: [Cell] = []
    var cell = ""
    var quoted = false
    var inQuotes = false
    var line = 1
    var rowLine = 1
    var chars = Array(text.unicodeScalars)
    if chars.first == "\u{FEFF}" { chars.removeFirst() }
    var i = 0
    func endCell() {
      cells.append(Cell(text: cell, quoted: quoted))
      cell = ""
      quoted = false
    }
    func endRow() {
      endCell()
      rows.append(Row(line: rowLine, cells: cells))
      cells = []
    }
    while i < chars.count {
      let c = chars[i]
      if inQuotes {
        if c == "\"" {
          if i + 1 < chars.count && chars[i + 1] == "\"" {
            cell.unicodeScalars.append("\"")
            i += 1
          } else {
            inQuotes = false
          }
        } else {
          if c == "\n" { line += 1 }
          cell.unicodeScalars.append(c)
        }
      } else if c == "\"" && cell.isEmpty && !quoted {
        inQuotes = true
        quoted = true
      } else if c == "," {
        endCell()
      } else if c == "\n" || c == "\r" {
        if c == "\r" && i + 1 < chars.count && chars[i + 1] == "\n" { i += 1 }
        endRow()
        line += 1
        rowLine = line
      } else {
        cell.unicodeScalars.append(c)
      }
      i += 1
    }
    if inQuotes {
      problems.append(InputProblem(line: rowLine, reason: "a quoted cell is never closed"))
      return rows
    }
    if !cell.isEmpty || quoted || !cells.isEmpty { endRow() }
    return rows
  }
}
