import Foundation
import RequestSet

/// JSON text for field values. Object keys are written sorted (a record's `id` first); a
/// double that is NaN or infinite, which JSON cannot hold, is written as `null`; a
/// decimal is written as the number it prints as.
enum JSONText {
  static func append(_ value: FieldValue, to out: inout [UInt8]) {
    switch value {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
    case .int(let i): appendInt(i, to: &out)
    case .uint(let u): out.append(contentsOf: String(u).utf8)
    case .double(let d):
      out.append(contentsOf: (d.isFinite ? String(d) : "null").utf8)
    case .decimal(let d):
      out.append(contentsOf: (d.isNaN ? "null" : d.description).utf8)
    case .string(let s): appendString(s, to: &out)
    case .array(let items):
      out.append(UInt8(ascii: "["))
      for (i, item) in items.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        append(item, to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let fields):
      appendObject(fields, idFirst: false, to: &out)
    }
  }

  /// An integer's decimal digits, without making a String.
  static func appendInt(_ i: Int, to out: inout [UInt8]) {
    if i < 0 {
      guard i != .min else { return out.append(contentsOf: String(i).utf8) }
      out.append(UInt8(ascii: "-"))
    }
    var v = i.magnitude
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 20 digits, most significant last
    var n = 0
    withUnsafeMutableBytes(of: &digits) { buffer in
      repeat {
        buffer[n] = UInt8(ascii: "0") + UInt8(v % 10)
        v /= 10
        n += 1
      } while v > 0
      for k in stride(from: n - 1, through: 0, by: -1) { out.append(buffer[k]) }
    }
  }

  /// An object with sorted keys; with `idFirst`, the key `id` leads.
  static func appendObject(_ fields: [String: FieldValue], idFirst: Bool, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "{"))
    var first = true
    func field(_ key: String, _ value: FieldValue) {
      if !first { out.append(UInt8(ascii: ",")) }
      first = false
      appendString(key, to: &out)
      out.append(UInt8(ascii: ":"))
      append(value, to: &out)
    }
    if idFirst, let id = fields["id"] { field("id", id) }
    for key in fields.keys.sorted() where !(idFirst && key == "id") { field(key, fields[key]!) }
    out.append(UInt8(ascii: "}"))
  }

  static func appendString(_ s: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    // Most strings need no escape: copy them whole.
    if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
      out.append(contentsOf: s.utf8)
      out.append(UInt8(ascii: "\""))
      return
    }
    for byte in s.utf8 {
      switch byte {
      case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
      case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
      case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
      case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
      case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
      case 0..<0x20:
        let hex = String(byte, radix: 16)
        out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
      default: out.append(byte)
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  /// A record as one JSON object, `id` first.
  static func record(_ record: DynamicRecord) -> [UInt8] {
    var out: [UInt8] = []
    appendRecord(record, to: &out)
    return out
  }

  static func appendRecord(_ record: DynamicRecord, to out: inout [UInt8]) {
    var writer = RecordWriter()
    writer.append(record, to: &out)
  }

  static func text(_ value: FieldValue) -> String {
    var out: [UInt8] = []
    append(value, to: &out)
    return String(decoding: out, as: UTF8.self)
  }
}

/// Writes records as JSON objects, `id` first and the other keys sorted.
///
/// Records of one type hold the same few keys, so the writer keeps the sorted union of the
/// keys it has seen, each with its JSON prefix (`,"name":`) made once, and places a
/// record's fields by walking its dictionary once, with no hashing or sorting per record.
struct RecordWriter {
  /// The sorted union of the keys seen so far, and each one's `,"key":` bytes.
  private var keys: [String] = []
  private var prefixes: [[UInt8]] = []
  private var slots: [FieldValue?] = []
  /// Past this many distinct keys a record's keys are sorted one by one instead.
  static let maxCachedKeys = 32

  mutating func append(_ record: DynamicRecord, to out: inout [UInt8]) {
    out.append(contentsOf: #"{"id":"#.utf8)
    JSONText.append(record.id, to: &out)
    let fields = record.fields
    if keys.count > Self.maxCachedKeys {
      for key in fields.keys.sorted() { field(key, fields[key]!, to: &out) }
    } else {
      for i in slots.indices { slots[i] = nil }
      for (key, value) in fields {
        if let i = keys.firstIndex(of: key) {
          slots[i] = value
        } else {
          let i = keys.firstIndex { $0 > key } ?? keys.count
          keys.insert(key, at: i)
          var prefix: [UInt8] = [UInt8(ascii: ",")]
          JSONText.appendString(key, to: &prefix)
          prefix.append(UInt8(ascii: ":"))
          prefixes.insert(prefix, at: i)
          slots.insert(value, at: i)
        }
      }
      for i in slots.indices {
        guard let value = slots[i] else { continue }
        out.append(contentsOf: prefixes[i])
        JSONText.append(value, to: &out)
      }
    }
    out.append(UInt8(ascii: "}"))
  }

  private func field(_ key: String, _ value: FieldValue, to out: inout [UInt8]) {
    out.append(UInt8(ascii: ","))
    JSONText.appendString(key, to: &out)
    out.append(UInt8(ascii: ":"))
    JSONText.append(value, to: &out)
  }
}

/// Rows of named cells, the shape every output format takes.
struct Rows {
  var columns: [String]
  var rows: [[String: FieldValue]]
  /// Whether the columns are string keys already (`--values owner.city`) rather than
  /// field names (which CSV escapes when they hold a dot).
  var columnsAreKeys = false

  /// Records as rows: `id`, then every top-level key any of them holds, sorted.
  init(records: [DynamicRecord]) {
    var keys = Set<String>()
    for r in records { keys.formUnion(r.fields.keys) }
    columns = ["id"] + keys.sorted()
    rows = records.map { r in
      var row = r.fields
      row["id"] = r.id
      return row
    }
  }

  init(keys: [String], rows: [[String: FieldValue]]) {
    columns = keys
    self.rows = rows
    columnsAreKeys = true
  }
}

/// The output formats of `query`.
enum OutputFormat: String, CaseIterable {
  case table, json, jsonl, csv
}

extension Rows {
  func render(_ format: OutputFormat, to output: Output, width: Int) {
    switch format {
    case .table: output.write(Table.render(self, width: width))
    case .json:
      output.write("[")
      for (i, row) in rows.enumerated() {
        var line: [UInt8] = i == 0 ? [] : Array(",".utf8)
        line.append(contentsOf: "\n".utf8)
        JSONText.appendObject(row, idFirst: true, to: &line)
        output.write(bytes: line)
      }
      output.write(rows.isEmpty ? "]\n" : "\n]\n")
    case .jsonl:
      for row in rows {
        var line: [UInt8] = []
        JSONText.appendObject(row, idFirst: true, to: &line)
        line.append(0x0A)
        output.write(bytes: line)
      }
    case .csv:
      // Nested objects become dotted columns, as `dump --format csv` writes them.
      var header: [(column: String, leaf: String)] = []
      var seen = Set<String>()
      for column in columns {
        let base = columnsAreKeys ? column : CSV.escape(column)
        var leaves = Set<String>()
        for row in rows { leaves.formUnion(CSV.leaves(of: row[column], key: base)) }
        if leaves.isEmpty { leaves = [base] }
        for leaf in leaves.sorted() where seen.insert(leaf).inserted { header.append((column, leaf)) }
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

/// CSV as RFC 4180 writes it: a header line of keys, then a line per record. A nested
/// object's fields are dotted columns (`owner.city`); an array is its JSON text; an absent
/// or nil value is an empty cell; a string that would read back as something else (a
/// number, a Boolean, JSON, an empty cell) is quoted.
enum CSV {
  static func line(_ cells: [String]) -> String { cells.joined(separator: ",") + "\n" }

  /// The dotted leaf keys under `key` in `value` (the key itself when it is no object).
  static func leaves(of value: FieldValue?, key: String) -> [String] {
    guard case .object(let fields)? = value, !fields.isEmpty else { return value == nil ? [] : [key] }
    return fields.keys.sorted().flatMap { leaves(of: fields[$0], key: key + "." + escape($0)) }
  }

  static func escape(_ name: String) -> String { FieldValue.key(forFieldNames: [name]) }

  static func value(at key: String, in object: FieldValue) -> FieldValue? { object[path: key] }

  /// A dotted key's names; `\.` is a dot inside a name.
  static func splitKey(_ key: String) -> [String] { FieldValue.fieldNames(inKey: key) }

  static func cell(_ value: FieldValue?) -> String {
    switch value {
    case nil, .null?: return ""
    case .string(let s)?:
      return CSVReader.infer(s) == .string(s) ? quoted(s) : forceQuoted(s)
    case let v?: return quoted(JSONText.text(v))
    }
  }

  static func quoted(_ s: String) -> String {
    if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) || s.first == " " || s.last == " " {
      return forceQuoted(s)
    }
    return s
  }

  static func forceQuoted(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

/// A table that fits a width: columns shrink (longest first, cells cut with `…`) down to a
/// minimum, and columns that still do not fit are left out and named below the table.
enum Table {
  static let minimumWidth = 4

  static func text(_ value: FieldValue?) -> String {
    switch value {
    case nil: return ""
    case .string(let s)?: return s
    case let v?: return JSONText.text(v)
    }
  }

  static func clean(_ s: String) -> String {
    String(s.map { $0.isNewline || $0 == "\t" ? " " : $0 })
  }

  static func render(_ rows: Rows, width: Int) -> String {
    var columns = rows.columns
    var cells = rows.rows.map { row in columns.map { clean(text(row[$0])) } }
    var widths = columns.indices.map { i in max(columns[i].count, cells.map { $0[i].count }.max() ?? 0) }
    func total(_ w: [Int]) -> Int { w.reduce(0, +) + 2 * max(0, w.count - 1) }
    // Shrink the widest column one character at a time until the table fits.
    while total(widths) > width, let i = widths.indices.max(by: { widths[$0] < widths[$1] }), widths[i] > minimumWidth {
      widths[i] -= 1
    }
    var leftOut: [String] = []
    while total(widths) > width, columns.count > 1 {
      leftOut.insert(columns.removeLast(), at: 0)
      widths.removeLast()
      cells = cells.map { Array($0.dropLast()) }
    }
    func fit(_ s: String, _ w: Int) -> String {
      s.count <= w ? s + String(repeating: " ", count: w - s.count) : String(s.prefix(w - 1)) + "…"
    }
    func line(_ parts: [String]) -> String {
      var text = zip(parts, widths).map { fit($0, $1) }.joined(separator: "  ")
      while text.last == " " { text.removeLast() }
      return text + "\n"
    }
    var out = line(columns)
    out += line(widths.map { String(repeating: "-", count: $0) })
    for row in cells { out += line(row) }
    out += "(\(rows.rows.count) \(rows.rows.count == 1 ? "record" : "records"))\n"
    if !leftOut.isEmpty {
      out += wrap(
        "\(leftOut.count) more \(leftOut.count == 1 ? "column does" : "columns do") not fit: "
          + leftOut.joined(separator: ", ") + " (use --values or --format json)", width: width)
    }
    return out
  }

  /// Words wrapped into lines of at most `width` characters (a longer word is cut).
  static func wrap(_ text: String, width: Int) -> String {
    var out = ""
    var line = ""
    for word in text.split(separator: " ") {
      var word = String(word)
      if word.count > width { word = String(word.prefix(max(1, width - 1))) + "…" }
      if !line.isEmpty && line.count + 1 + word.count > width {
        out += line + "\n"
        line = ""
      }
      line += line.isEmpty ? word : " " + word
    }
    return out + line + "\n"
  }
}
