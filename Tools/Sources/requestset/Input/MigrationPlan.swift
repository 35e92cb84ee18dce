import Foundation
import RequestSet

/// A migration plan: the text file `requestset migrate --plan` reads, naming ordered
/// migrations and their steps.
///
/// ```text
/// # comments and blank lines are ignored
/// migration "2: kg, legs"
///   rename weight weightKg
///   convert weightKg Double        # Double | Int | String | array
///   add legs 4                     # a JSON value: 4, 2.5, "text", true, null, [], {}
///   move city address.city
///   remove nickname
/// migration "3: tags"
///   add tags []
/// ```
///
/// The grammar, one statement a line (``MigrationPlan/grammar`` is the help text):
///
/// ```text
/// plan      = { line }
/// line      = [ statement ] [ "#" comment ]
/// statement = "migration" NAME
///           | "add" KEY VALUE | "rename" KEY KEY | "move" KEY KEY
///           | "remove" KEY | "convert" KEY TYPE
/// NAME, KEY = WORD | STRING
/// WORD      = characters other than blanks, `"` and `#`
/// STRING    = a JSON string: "…", with \" \\ \n \t \uXXXX escapes
/// VALUE     = a JSON value on one line: 4  2.5  "text"  true  false  null  [1, 2]  {"a": 1}
/// TYPE      = Double | Int | String | array
/// ```
///
/// Keywords and types are matched without regard to case. A KEY is a string key as the
/// library reads it: dots reach into nested objects, and a dot or backslash inside a field
/// name is escaped with a backslash. Steps belong to the `migration` line above them
/// (indenting them is customary, not required); every migration needs at least one step,
/// a unique non-empty name, and keys that name a field other than `id`.
struct MigrationPlan {
  /// One migration of a plan.
  struct Entry {
    var name: String
    /// The line of its `migration` statement.
    var line: Int
    var steps: [PlanStep]

    var migration: Migration { Migration(name, steps: steps.map(\.step)) }
  }

  /// The migrations, in the order they run.
  var entries: [Entry]

  /// The library's migrations of ``entries``.
  var migrations: [Migration] { entries.map(\.migration) }
  /// The migrator of ``migrations``.
  var migrator: Migrator { Migrator(migrations) }

  /// The grammar as `requestset migrate --help` and the README show it.
  static let grammar = """
    A plan is a text file of migrations, one statement a line. `migration NAME` starts a \
    migration; the step lines below it (indenting them is customary) are run in order on \
    every record:

      add KEY VALUE       give records without KEY (or holding null) the JSON VALUE
      rename KEY NEWKEY   move each record's value of KEY to NEWKEY
      move KEY NEWKEY     the same, for dotted keys into or out of nested objects
      remove KEY          remove KEY from every record
      convert KEY TYPE    make KEY's value a Double, Int, String or array

    NAME and KEY are a word (no blanks, `"` or `#`) or a JSON string in double quotes \
    ("first name", "2: kg, legs"). A dotted KEY (address.city) reaches into nested \
    objects; a dot inside a field name is escaped with a backslash (a\\.b, or "a\\\\.b" in \
    a string). VALUE is one JSON value on the line: 4 (an Int), 2.5 (a Double), "text", \
    true, false, null, [], {"city": "Oslo"}. A value a conversion cannot make without loss \
    ("Rex" to Int, 2.5 to Int), or a rename onto a key the record holds, fails the run. `#` outside a string starts a comment; blank lines are ignored; \
    keywords and types are matched without regard to case. Names must be unique and must \
    never change once a file has run them: the file records them. The id cannot be changed.
    """

  /// Reads and parses the plan at `path`.
  ///
  /// - Throws: ``ToolError`` naming the file, line and column of the first mistake.
  static func read(path: String) throws -> MigrationPlan {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
      throw ToolError("There is no plan file at \(path).")
    }
    guard !isDirectory.boolValue, let data = FileManager.default.contents(atPath: path) else {
      throw ToolError("Cannot read the plan \(path)\(isDirectory.boolValue ? ": it is a directory" : "").")
    }
    guard let text = String(data: data, encoding: .utf8) else {
      throw ToolError("The plan \(path) is not UTF-8 text.")
    }
    do {
      return try parse(text)
    } catch {
      throw ToolError(error.message(path: path))
    }
  }

  /// Parses a plan's text.
  ///
  /// - Throws: ``PlanSyntaxError`` at the first mistake.
  static func parse(_ text: String) throws(PlanSyntaxError) -> MigrationPlan {
    var text = Substring(text)
    if text.unicodeScalars.first == "\u{FEFF}" { text = Substring(text.unicodeScalars.dropFirst()) }
    var plan = MigrationPlan(entries: [])
    // The migration being read, the column of its name and its line's text.
    var current: (entry: Entry, column: Int, source: String)?
    var firstLine: [String: Int] = [:]

    func finish() throws(PlanSyntaxError) {
      guard let (entry, column, source) = current else { return }
      guard !entry.steps.isEmpty else {
        throw PlanSyntaxError(
          line: entry.line, column: column, source: source,
          expected: "at least one step (add, rename, move, remove, convert) on the lines after the migration "
            + "\(quoted(entry.name)), found none")
      }
      plan.entries.append(entry)
    }

    let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    for (index, rawLine) in lines.enumerated() {
      var line = PlanLine(String(rawLine), number: index + 1)
      line.skipBlanks()
      guard !line.atEndOrComment else { continue }
      let keywordColumn = line.column
      let keyword = try line.keyword()
      switch keyword {
      case "migration":
        try finish()
        let (name, column) = try line.word("the migration's name (in double quotes if it has blanks: \"2: kg\")")
        guard !name.isEmpty else {
          throw line.error(at: column, "a migration name that is not empty, found \"\"")
        }
        if let first = firstLine[name] {
          throw line.error(
            at: column,
            "a name no other migration has, found \(quoted(name)), which the migration on line \(first) has "
              + "already (a file records migrations by name)")
        }
        firstLine[name] = line.number
        try line.end(after: "the migration's name")
        current = (Entry(name: name, line: line.number, steps: []), column, line.text)
      case "add", "rename", "move", "remove", "convert":
        guard current != nil else {
          throw line.error(
            at: keywordColumn, "a line `migration NAME` before the first step, found the step \"\(keyword)\"")
        }
        let step = try line.step(keyword)
        try line.end(after: "the \(keyword) step")
        current!.entry.steps.append(step)
      default:
        throw line.error(
          at: keywordColumn,
          "a step (add, rename, move, remove, convert) or `migration NAME`, found \(quoted(keyword))")
      }
    }
    try finish()
    guard !plan.entries.isEmpty else {
      throw PlanSyntaxError(
        line: 1, column: 1, source: nil,
        expected: "at least one line `migration NAME` followed by its steps, found none")
    }
    return plan
  }

  /// A name or key as a plan writes it in double quotes: a JSON string.
  static func quoted(_ text: String) -> String {
    var out: [UInt8] = []
    JSONText.appendString(text, to: &out)
    return String(decoding: out, as: UTF8.self)
  }
}

/// One step of a plan, as written.
enum PlanStep {
  case add(String, FieldValue)
  case rename(String, String)
  case move(String, String)
  case remove(String)
  case convert(String, Migration.Conversion)

  /// The library's step.
  var step: Migration.Step {
    switch self {
    case .add(let key, let value): return .add(key, default: value)
    case .rename(let key, let newKey): return .rename(key, to: newKey)
    case .move(let key, let newKey): return .move(key, to: newKey)
    case .remove(let key): return .remove(key)
    case .convert(let key, let conversion): return .convert(key, conversion)
    }
  }
}

/// A mistake in a plan: where it is and what was expected there.
struct PlanSyntaxError: Error {
  /// 1-based line and column (columns count Unicode characters).
  var line: Int
  var column: Int
  /// The line's text, shown under the message with a caret at the column.
  var source: String?
  /// What was expected, and what was found instead.
  var expected: String

  /// `plan.txt:3:12: expected …`, the line, a caret under the column, and that nothing changed.
  func message(path: String) -> String {
    var text = "\(path):\(line):\(column): expected \(expected)."
    if let source {
      // A tab is shown as one blank, so the caret stays under its column.
      let shown = String(String.UnicodeScalarView(source.unicodeScalars.map { $0 == "\t" ? " " : $0 }))
      text += "\n  \(shown)\n  \(String(repeating: " ", count: column - 1))^"
    }
    return text + "\nThe plan is not valid, so nothing was changed."
  }
}

/// One line of a plan being read, scalar by scalar.
private struct PlanLine {
  let text: String
  let scalars: [Unicode.Scalar]
  let number: Int
  var i = 0

  init(_ text: String, number: Int) {
    self.text = text
    self.scalars = Array(text.unicodeScalars)
    self.number = number
  }

  /// The 1-based column of the next scalar.
  var column: Int { i + 1 }
  var atEnd: Bool { i >= scalars.count }
  var atEndOrComment: Bool { atEnd || scalars[i] == "#" }

  static func isBlank(_ s: Unicode.Scalar) -> Bool { s.properties.isWhitespace }

  mutating func skipBlanks() {
    while i < scalars.count, Self.isBlank(scalars[i]) { i += 1 }
  }

  func error(at column: Int, _ expected: String) -> PlanSyntaxError {
    PlanSyntaxError(line: number, column: column, source: text, expected: expected)
  }

  /// What the line holds from here, for "found …": the next word, or the end of the line.
  var found: String {
    if atEnd { return "the end of the line" }
    if scalars[i] == "#" { return "a comment" }
    var j = i
    while j < scalars.count, !Self.isBlank(scalars[j]) { j += 1 }
    return MigrationPlan.quoted(String(String.UnicodeScalarView(scalars[i..<j])))
  }

  /// The statement's keyword, lowercased.
  mutating func keyword() throws(PlanSyntaxError) -> String {
    let (word, _) = try word("a step or `migration NAME`")
    return word.lowercased()
  }

  /// A word or a JSON string, and the column it starts at; `what` names what was expected.
  mutating func word(_ what: String) throws(PlanSyntaxError) -> (String, Int) {
    skipBlanks()
    let start = column
    guard !atEndOrComment else { throw error(at: start, "\(what), found \(found)") }
    if scalars[i] == "\"" {
      let end = try stringEnd(from: i)
      let value = try json(i..<end, what: what)
      guard case .string(let s) = value else { throw error(at: start, "\(what)") }
      i = end
      return (s, start)
    }
    let first = i
    while i < scalars.count, !Self.isBlank(scalars[i]), scalars[i] != "#" {
      if scalars[i] == "\"" {
        throw error(
          at: column,
          "a blank or the end of the line, found a quote inside a word (write a name or key that holds a quote "
            + "as a JSON string: \"a\\\"b\")")
      }
      i += 1
    }
    return (String(String.UnicodeScalarView(scalars[first..<i])), start)
  }

  /// A key: a word or string that names a field other than `id`.
  mutating func key(_ what: String) throws(PlanSyntaxError) -> String {
    let (key, column) = try word(what)
    let names = FieldValue.fieldNames(inKey: key)
    guard !key.isEmpty, !names.contains(where: \.isEmpty) else {
      throw error(
        at: column,
        "\(what), found \(MigrationPlan.quoted(key)), which has an empty field name (a key is a field name, or "
          + "names joined by single dots: address.city)")
    }
    guard names[0] != "id" else {
      throw error(
        at: column,
        "\(what), found \(MigrationPlan.quoted(key)): migrations never change a record's id, which the file finds "
          + "records by")
    }
    return key
  }

  /// One step's operands, after its keyword.
  mutating func step(_ keyword: String) throws(PlanSyntaxError) -> PlanStep {
    switch keyword {
    case "add":
      let key = try self.key("a key after \"add\"")
      return .add(key, try value())
    case "rename", "move":
      let key = try self.key("the key to \(keyword) after \"\(keyword)\"")
      let newKey = try self.key("the new key after \(MigrationPlan.quoted(key))")
      return keyword == "move" ? .move(key, newKey) : .rename(key, newKey)
    case "remove":
      return .remove(try self.key("the key to remove after \"remove\""))
    default:
      let key = try self.key("the key to convert after \"convert\"")
      let types = "a type to convert to (Double, Int, String or array)"
      let (type, column) = try word(types)
      switch type.lowercased() {
      case "double": return .convert(key, .toDouble)
      case "int": return .convert(key, .toInt)
      case "string": return .convert(key, .toString)
      case "array": return .convert(key, .toArray)
      default: throw error(at: column, "\(types), found \(MigrationPlan.quoted(type))")
      }
    }
  }

  /// The JSON value of an `add` step.
  mutating func value() throws(PlanSyntaxError) -> FieldValue {
    let what = "a JSON value for records without the key (4, 2.5, \"text\", true, null, [], {})"
    skipBlanks()
    let start = i
    guard !atEndOrComment else { throw error(at: column, "\(what), found \(found)") }
    var end = i
    switch scalars[i] {
    case "\"":
      end = try stringEnd(from: i)
    case "[", "{":
      var depth = 0
      while true {
        guard end < scalars.count else {
          throw error(
            at: start + 1,
            "a closing \(scalars[start] == "[" ? "]" : "}") on this line for the \(scalars[start]) that opens "
              + "here (a value must fit on one line)")
        }
        switch scalars[end] {
        case "\"":
          end = try stringEnd(from: end)
          continue
        case "[", "{": depth += 1
        case "]", "}": depth -= 1
        default: break
        }
        end += 1
        if depth == 0 { break }
      }
    default:
      while end < scalars.count, !Self.isBlank(scalars[end]), scalars[end] != "#" { end += 1 }
      let word = String(String.UnicodeScalarView(scalars[start..<end]))
      if let first = word.unicodeScalars.first, first.properties.isAlphabetic,
        !["true", "false", "null"].contains(word)
      {
        throw error(
          at: start + 1,
          "\(what), found \(word); text is written in double quotes: \(MigrationPlan.quoted(word))")
      }
    }
    let value = try json(start..<end, what: what)
    i = end
    return value
  }

  /// The index after the closing quote of the string that opens at `start`.
  func stringEnd(from start: Int) throws(PlanSyntaxError) -> Int {
    var j = start + 1
    while j < scalars.count {
      if scalars[j] == "\\" {
        j += 2
        continue
      }
      if scalars[j] == "\"" { return j + 1 }
      j += 1
    }
    throw error(at: start + 1, "a closing \" on this line for the string that opens here")
  }

  /// The JSON value in `range`, or an error at the column JSON parsing stopped.
  func json(_ range: Range<Int>, what: String) throws(PlanSyntaxError) -> FieldValue {
    let text = String(String.UnicodeScalarView(scalars[range]))
    var reader = JSONReader()
    let parsed = Array(text.utf8).withUnsafeBytes { bytes in
      Result { () throws(JSONSyntaxError) -> FieldValue in try reader.parse(bytes) }
    }
    switch parsed {
    case .success(let value):
      return value
    case .failure(let error):
      // Back from a byte offset in `text` to a column on the line.
      let before = String(decoding: Array(text.utf8).prefix(error.offset), as: UTF8.self)
      let column = range.lowerBound + before.unicodeScalars.count + 1
      throw self.error(at: min(column, range.upperBound + 1), "\(what), but \(error.reason)")
    }
  }

  /// Requires the rest of the line to be blank or a comment.
  mutating func end(after what: String) throws(PlanSyntaxError) {
    skipBlanks()
    guard atEndOrComment else {
      throw error(
        at: column,
        "the end of the line after \(what), found \(found) (a key or name with blanks is written in double "
          + "quotes: \"first name\")")
    }
  }
}
