import Foundation
import RequestSet

/// A table of rows for people to read.
///
/// Piped or redirected (no terminal, no `COLUMNS`), it is as wide as its widest cells:
/// nothing is cut. On a terminal (or with `COLUMNS`) it fits the width: string columns
/// shrink (longest first, cells cut with `…`) down to a minimum, numbers are never cut,
/// and columns that still do not fit are left out and named below the table.
enum Table {
  static let minimumWidth = 4

  static func text(_ value: FieldValue?, order: KeyOrder, column: String) -> String {
    switch value {
    case nil: return ""
    case .string(let s)?: return s
    case let v?: return JSONText.text(v, order: order, prefix: column)
    }
  }

  static func isNumber(_ value: FieldValue?) -> Bool {
    switch value {
    case .int?, .uint?, .double?, .decimal?: return true
    default: return false
    }
  }

  static func clean(_ s: String) -> String {
    String(s.map { $0.isNewline || $0 == "\t" ? " " : $0 })
  }

  static func render(_ rows: Rows, width: Int?) -> String {
    var columns = rows.columns
    var cells = rows.rows.map { row in columns.map { clean(text(row[$0], order: rows.order, column: $0)) } }
    var widths = columns.indices.map { i in max(columns[i].count, cells.map { $0[i].count }.max() ?? 0) }
    // A column's numbers are never cut: it shrinks no narrower than its widest number.
    var floors = columns.indices.map { i in
      max(
        minimumWidth,
        rows.rows.indices.filter { isNumber(rows.rows[$0][columns[i]]) }.map { cells[$0][i].count }.max() ?? 0
      )
    }
    var leftOut: [String] = []
    if let width {
      func total(_ w: [Int]) -> Int { w.reduce(0, +) + 2 * max(0, w.count - 1) }
      let natural = widths
      // Shrink the widest column that may shrink, one character at a time, until the table
      // fits; when two cut headers read alike ("dep…" for dep_time and dep_delay), the
      // columns with them may shrink less, and the table is shrunk again.
      while true {
        widths = natural
        while total(widths) > width,
          let i = widths.indices.filter({ widths[$0] > floors[$0] }).max(by: { widths[$0] < widths[$1] })
        {
          widths[i] -= 1
        }
        let shown = headers(columns, widths)
        let raise = columns.indices.filter { i in
          floors[i] < natural[i] && isAmbiguous(shown[i], among: columns, besides: i)
        }
        if raise.isEmpty { break }
        for i in raise { floors[i] += 1 }
      }
      while total(widths) > width, columns.count > 1 {
        leftOut.insert(columns.removeLast(), at: 0)
        widths.removeLast()
        floors.removeLast()
        cells = cells.map { Array($0.dropLast()) }
      }
    }
    func fit(_ s: String, _ w: Int) -> String {
      s.count <= w ? s + String(repeating: " ", count: w - s.count) : String(s.prefix(w - 1)) + "…"
    }
    func line(_ parts: [String]) -> String {
      var text = zip(parts, widths).map { fit($0, $1) }.joined(separator: "  ")
      while text.last == " " { text.removeLast() }
      return text + "\n"
    }
    var out = zip(headers(columns, widths), widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
      .joined(separator: "  ")
    while out.last == " " { out.removeLast() }
    out += "\n"
    out += line(widths.map { String(repeating: "-", count: $0) })
    for row in cells { out += line(row) }
    out += "(\(rows.rows.count) \(rows.noun)\(rows.rows.count == 1 ? "" : "s"))\n"
    if !leftOut.isEmpty, let width {
      out += wrap(
        "\(leftOut.count) more \(leftOut.count == 1 ? "column does" : "columns do") not fit: "
          + leftOut.joined(separator: ", ") + " (use --values, --format json, or pipe the output)",
        width: width)
    }
    return out
  }

  /// The headers as shown in columns of `widths`: a header that does not fit is cut at its
  /// end (`carr…`), or, when that could be another header's (`dep_…` for dep_time and
  /// dep_delay), in its middle (`de…me`, `de…ay`).
  static func headers(_ columns: [String], _ widths: [Int]) -> [String] {
    columns.indices.map { i in
      let header = columns[i], width = widths[i]
      guard header.count > width else { return header }
      let cut = String(header.prefix(max(0, width - 1))) + "…"
      return isAmbiguous(cut, among: columns, besides: i) ? abbreviate(header, width) : cut
    }
  }

  /// Whether a shown header could be the cut of another column's header than column `i`'s.
  static func isAmbiguous(_ shown: String, among columns: [String], besides i: Int) -> Bool {
    columns.indices.contains { j in j != i && could(shown, be: columns[j]) }
  }

  /// Whether `shown` (a header, or its start and end around `…`) could show `header`.
  static func could(_ shown: String, be header: String) -> Bool {
    guard let ellipsis = shown.firstIndex(of: "…") else { return shown == header }
    let head = shown[..<ellipsis], tail = shown[shown.index(after: ellipsis)...]
    return header.count > head.count + tail.count && header.hasPrefix(head) && header.hasSuffix(tail)
  }

  /// A header cut to `width` characters in the middle, so both its start and its end show
  /// (`dep_delay` in 5 is `de…ay`, `dep_time` is `de…me`); as it is when it fits.
  static func abbreviate(_ header: String, _ width: Int) -> String {
    guard header.count > width else { return header }
    guard width > 1 else { return "…" }
    let tail = width / 2
    let head = width - 1 - tail
    return String(header.prefix(head)) + "…" + String(header.suffix(tail))
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
