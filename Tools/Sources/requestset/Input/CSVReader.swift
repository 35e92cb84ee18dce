import Foundation
import RequestSet

/// CSV (RFC 4180), read as a stream: a header line of keys, then one record per line.
///
/// Quoted cells may hold commas, quotes (doubled) and line breaks. A dotted header
/// (`owner.city`) makes a nested object. An unquoted cell is typed: empty (or the
/// `--null` text) is absent, `true`/`false` a Boolean, an integer an `int`, a number with
/// a fraction or an exponent a `double` (`9523.0` stays a double), `[…]`/`{…}` that parse
/// as JSON that value, anything else a string; a quoted cell is a string unless it holds
/// a JSON array or object (or is the `--null` text).
struct CSVReader {
  /// The header's keys as dotted paths, once the header is read.
  private(set) var header: [[String]]?
  /// The header's cells as written (the input's key order).
  private(set) var headerKeys: [String] = []
  /// Cell text read as absent, besides the empty cell (`--null`).
  let nullText: [UInt8]?
  /// Per column: how many cells were numbers and how many text, and the first text, for
  /// ``mixedColumns`` (a number column with "NA" cells that `--null NA` would read as absent).
  private var numberCells: [Int] = []
  private var textCells: [Int] = []
  private var firstText: [String?] = []
  private var splitter = CSVRowSplitter()
  private var json = JSONReader()

  init(nullText: String?) { self.nullText = nullText.map { Array($0.utf8) } }

  /// Feeds the next bytes of the file; `body` gets each complete record, or each bad line.
  mutating func feed(
    _ chunk: UnsafeRawBufferPointer, _ body: (Result<InputRecord, InputProblem>) throws -> Void
  ) rethrows {
    // The splitter is moved out while it runs, so `handle` may change `self`.
    var s = splitter
    defer { splitter = s }
    try s.feed(chunk) { row in try handle(row, body) }
  }

  /// Ends the input: the last line, if it has no line break, and an unclosed quote.
  mutating func finish(_ body: (Result<InputRecord, InputProblem>) throws -> Void) rethrows {
    var s = splitter
    defer { splitter = s }
    let problem = try s.finish { row in try handle(row, body) }
    if let problem { try body(.failure(problem)) }
  }

  private mutating func handle(_ row: CSVRow, _ body: (Result<InputRecord, InputProblem>) throws -> Void)
    rethrows
  {
    if row.count == 1 && row.bytes(0).isEmpty && !row.quoted[0] { return }  // a blank line
    guard let header else {
      let names = (0..<row.count).map { String(decoding: row.bytes($0), as: UTF8.self) }
      if Set(names).count != names.count {
        try body(.failure(InputProblem(line: row.line, reason: "the header names a column twice")))
        self.header = []
        return
      }
      let paths = names.map { FieldValue.fieldNames(inKey: $0) }
      // As deep as JSON input may nest, and no deeper: each dot is one more object, and
      // objects are built, written and read back by recursion.
      if let deep = paths.firstIndex(where: { $0.count > JSONReader.maxDepth + 1 }) {
        let shown = names[deep].count > 40 ? names[deep].prefix(40) + "…" : names[deep]
        try body(
          .failure(
            InputProblem(
              line: row.line,
              reason: "the header's column \"\(shown)\" nests \(paths[deep].count - 1) objects deep; "
                + "at most \(JSONReader.maxDepth) are read")))
        self.header = []
        return
      }
      headerKeys = names
      self.header = paths
      numberCells = Array(repeating: 0, count: names.count)
      textCells = Array(repeating: 0, count: names.count)
      firstText = Array(repeating: nil, count: names.count)
      return
    }
    guard row.count == header.count else {
      try body(
        .failure(
          InputProblem(
            line: row.line, reason: "it has \(row.count) cells where the header has \(header.count)")))
      return
    }
    var fields: [String: FieldValue] = [:]
    fields.reserveCapacity(header.count)
    var id: FieldValue? = nil
    for (i, path) in header.enumerated() {
      guard let value = typed(row.bytes(i), quoted: row.quoted[i]) else { continue }
      switch value {
      case .int, .uint, .double: numberCells[i] &+= 1
      case .string(let text):
        textCells[i] &+= 1
        if firstText[i] == nil { firstText[i] = text }
      default: break
      }
      if path.count == 1 && path[0] == "id" {
        id = value
      } else if path.count == 1 {
        fields[path[0]] = value
      } else {
        fields[path[0]] = CSVReader.setting(value, at: path.dropFirst(), in: fields[path[0]] ?? .null)
      }
    }
    try body(.success(InputRecord(line: row.line, id: id, fields: fields)))
  }

  /// Columns that hold mostly numbers but some text (as "NA" for a missing value): each
  /// with how many text cells it holds and the first of them. Such a column cannot be
  /// summed or averaged until the text is read as absent (`--null NA`).
  var mixedColumns: [(column: String, textCells: Int, example: String)] {
    headerKeys.indices.compactMap { i in
      guard i < numberCells.count, numberCells[i] > 0, textCells[i] > 0, textCells[i] <= numberCells[i],
        let example = firstText[i]
      else { return nil }
      return (headerKeys[i], textCells[i], example)
    }
  }

  /// A cell's value, or nil when it is absent (empty and unquoted, or the `--null` text).
  private mutating func typed(_ bytes: ArraySlice<UInt8>, quoted: Bool) -> FieldValue? {
    if let nullText, bytes.elementsEqual(nullText) { return nil }
    if quoted {
      if let first = bytes.first, first == UInt8(ascii: "[") || first == UInt8(ascii: "{"),
        let v = parseJSON(bytes)
      {
        return v
      }
      return .string(String(decoding: bytes, as: UTF8.self))
    }
    guard let first = bytes.first else { return nil }
    // An integer: digits with an optional sign, read without making a String.
    if first == UInt8(ascii: "-") || first == UInt8(ascii: "+") || (first >= 0x30 && first <= 0x39) {
      if let i = CSVReader.integer(bytes) { return .int(i) }
      if bytes.allSatisfy({ CSVReader.isNumberByte($0) }) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let u = UInt64(text) { return .uint(u) }
        if let d = Double(text), d.isFinite { return .double(d) }
        return .string(text)
      }
    } else if first == UInt8(ascii: ".") {
      let text = String(decoding: bytes, as: UTF8.self)
      if bytes.allSatisfy({ CSVReader.isNumberByte($0) }),
        bytes.contains(where: { $0 >= 0x30 && $0 <= 0x39 }),
        let d = Double(text), d.isFinite
      {
        return .double(d)
      }
      return .string(text)
    } else if first == UInt8(ascii: "t") && bytes.elementsEqual("true".utf8) {
      return .bool(true)
    } else if first == UInt8(ascii: "f") && bytes.elementsEqual("false".utf8) {
      return .bool(false)
    } else if first == UInt8(ascii: "[") || first == UInt8(ascii: "{"), let v = parseJSON(bytes) {
      return v
    }
    return .string(String(decoding: bytes, as: UTF8.self))
  }

  private mutating func parseJSON(_ bytes: ArraySlice<UInt8>) -> FieldValue? {
    bytes.withUnsafeBytes { raw in try? json.parse(raw) }
  }

  static func isNumberByte(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
      || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
  }

  /// The integer the bytes spell (an optional sign, then 1 to 18 digits), or nil.
  static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
    var i = bytes.startIndex
    var negative = false
    if bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
      negative = bytes[i] == UInt8(ascii: "-")
      i += 1
    }
    let digits = bytes.endIndex - i
    guard digits > 0 && digits <= 18 else { return nil }
    var v = 0
    while i < bytes.endIndex {
      let b = bytes[i]
      guard b >= 0x30 && b <= 0x39 else { return nil }
      v = v * 10 + Int(b - 0x30)
      i += 1
    }
    return negative ? -v : v
  }

  /// What an unquoted cell's text reads as (how `CSV.cell` decides whether a string
  /// must be quoted to read back as a string).
  static func infer(_ text: String) -> FieldValue {
    var reader = CSVReader(nullText: nil)
    return reader.typed(ArraySlice(text.utf8), quoted: false) ?? .null
  }

  static func setting(_ value: FieldValue, at path: ArraySlice<String>, in object: FieldValue) -> FieldValue {
    guard let head = path.first else { return value }
    var fields: [String: FieldValue]
    if case .object(let existing) = object { fields = existing } else { fields = [:] }
    fields[head] = setting(value, at: path.dropFirst(), in: fields[head] ?? .null)
    return .object(fields)
  }
}

/// One CSV row: its cells' bytes, whether each was quoted, and the line it starts on.
struct CSVRow {
  var line: Int
  var storage: [UInt8]
  var ends: [Int]
  var quoted: [Bool]

  var count: Int { ends.count }

  func bytes(_ i: Int) -> ArraySlice<UInt8> { storage[(i == 0 ? 0 : ends[i - 1])..<ends[i]] }
}

/// Splits CSV bytes, fed in chunks of any size, into rows of cells.
struct CSVRowSplitter {
  private var row = CSVRow(line: 1, storage: [], ends: [], quoted: [])
  private var line = 1
  private var inQuotes = false
  private var quoted = false
  private var justClosedQuote = false
  private var skipLineFeed = false
  private var cellStart = 0
  private var atStart = true
  private var bomSeen = 0

  mutating func feed(_ chunk: UnsafeRawBufferPointer, _ body: (CSVRow) throws -> Void) rethrows {
    var i = 0
    // A UTF-8 byte order mark at the start is no part of the first key.
    if atStart {
      while bomSeen < 3 && i < chunk.count && chunk[i] == [0xEF, 0xBB, 0xBF][bomSeen] {
        bomSeen += 1
        i += 1
      }
      if i < chunk.count || bomSeen == 3 {
        if bomSeen > 0 && bomSeen < 3 { row.storage.append(contentsOf: [0xEF, 0xBB, 0xBF][0..<bomSeen]) }
        atStart = false
      }
    }
    let n = chunk.count
    while i < n {
      let b = chunk[i]
      if inQuotes {
        // Copy a run of plain bytes at once.
        var j = i
        while j < n, chunk[j] != UInt8(ascii: "\""), chunk[j] != 0x0A { j += 1 }
        if j > i { row.storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[i..<j])) }
        i = j
        guard i < n else { break }
        if chunk[i] == 0x0A {
          line += 1
          row.storage.append(0x0A)
        } else {
          inQuotes = false
          justClosedQuote = true
        }
        i += 1
        continue
      }
      if skipLineFeed {
        skipLineFeed = false
        if b == 0x0A {
          i += 1
          continue
        }
      }
      switch b {
      case UInt8(ascii: ","):
        endCell()
      case 0x0A, 0x0D:
        endCell()
        try body(row)
        line += 1
        row.line = line
        row.storage.removeAll(keepingCapacity: true)
        row.ends.removeAll(keepingCapacity: true)
        row.quoted.removeAll(keepingCapacity: true)
        cellStart = 0
        skipLineFeed = b == 0x0D
      case UInt8(ascii: "\""):
        if justClosedQuote {
          row.storage.append(b)  // a doubled quote inside a quoted cell
          inQuotes = true
        } else if row.storage.count == cellStart && !quoted {
          inQuotes = true
          quoted = true
        } else {
          row.storage.append(b)
        }
      default:
        var j = i
        while j < n {
          let c = chunk[j]
          if c == UInt8(ascii: ",") || c == 0x0A || c == 0x0D || c == UInt8(ascii: "\"") { break }
          j += 1
        }
        row.storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[i..<j]))
        justClosedQuote = false
        i = j
        continue
      }
      justClosedQuote = false
      i += 1
    }
  }

  private mutating func endCell() {
    row.ends.append(row.storage.count)
    row.quoted.append(quoted)
    cellStart = row.storage.count
    quoted = false
    justClosedQuote = false
  }

  /// Ends the input; returns the problem of a quoted cell never closed.
  mutating func finish(_ body: (CSVRow) throws -> Void) rethrows -> InputProblem? {
    if inQuotes { return InputProblem(line: row.line, reason: "a quoted cell is never closed") }
    if row.storage.count > 0 || quoted || !row.ends.isEmpty {
      endCell()
      try body(row)
    }
    return nil
  }
}
