import Foundation
import RequestSetPostgres
import RequestSetSQLite
import Testing

@testable import RequestSet

/// The awkward values the corpus tests feed through every store: what SQL engines, JSON
/// and collations get wrong (nil vs absent, NaN, -0.0, integers past 2^53, mixed kinds
/// under one key, NFC vs NFD, case folding beyond ASCII, pattern characters, U+0000, CRLF,
/// long strings, arrays and nested objects).
enum Corpus {
  static let nfc = "\u{E9}"  // é, one scalar
  static let nfd = "e\u{301}"  // é, e + combining acute
  static let long = String(repeating: "a", count: 10_240)

  /// Scalars of every kind; `nil` in this list means "the key is absent".
  static let scalars: [FieldValue?] = [
    nil, .null, .double(.nan), .double(-0.0), .double(0.0), .int(0), .int(1 << 53), .int((1 << 53) + 1),
    .double(9_007_199_254_740_992), .int(.max), .int(.min), .uint(.max), .decimal(Decimal(string: "19.99")!),
    .decimal(Decimal(string: "0.1")!), .double(0.1), .double(-2.5), .bool(true), .bool(false), .int(3),
    .double(3.0),
    .string("3"),
  ]

  /// Strings: Unicode normalisation and case folding traps, pattern and escape characters.
  static let strings: [String] = [
    nfc, nfd, "E", "e", "ß", "SS", "ss", "Straße", "STRASSE", "\u{130}", "i", "\u{131}", "I", "Σ", "σ", "ς",
    "ΣΑΣ",
    "%", "_", "\\", "*", "?", "a%b", "a_b", "a\\b", "a*b", "a?b", "x\u{0}y", "line\r\nbreak", "😀", "👨‍👩‍👧", "",
    long,
    "abc", "ABC", "Abc", "a", "z", "café", "cafe\u{301}", "10", "9", "O'Brien", "\"quoted\"",
  ]

  /// Array values: empty, mixed kinds, strings with case and accents, numbers near 2^53.
  static let arrays: [FieldValue?] = [
    nil, .array([]), .array([.int(1), .string("a"), .bool(true), .null]),
    .array([.string("é"), .string("E")]),
    .array([.string(nfd), .string("ß")]), .array([.int(1 << 53), .int((1 << 53) + 1)]),
    .array([.double(.nan)]),
    .array([.int(1), .int(2), .int(3)]), .array([.string("%"), .string("_")]), .null,
    .array([.array([.int(1)]), .object(["k": .int(1)])]),
  ]

  /// The records: every scalar under `v`, every string under `s`, arrays under `a`, and a
  /// nested object `o` whose `k` holds scalars and strings; absent and nil keys throughout.
  static let records: [DynamicRecord] = {
    let mixed: [FieldValue?] = scalars + strings.map { .string($0) }
    let count = max(mixed.count, strings.count + 2)
    return (0..<count).map { i in
      var fields: [String: FieldValue] = [:]
      if let v = mixed[i % mixed.count] { fields["v"] = v }
      if i % 11 == 10 {
        fields["s"] = .null
      } else if i % 13 != 12 {
        fields["s"] = .string(strings[i % strings.count])
      }
      if let a = arrays[i % arrays.count] { fields["a"] = a }
      switch i % 5 {
      case 0: break
      case 1: fields["o"] = .object([:])
      case 2: fields["o"] = .null
      default:
        if let k = mixed[(i * 7) % mixed.count] {
          fields["o"] = .object(["k": k, "city": .string(strings[i % 9])])
        }
      }
      return DynamicRecord(id: .int(i), fields: fields)
    }
  }()

  /// The keys queries name: a mixed-kind key, a string key, an array key, a nested key, and
  /// a key no record holds.
  static let keys = ["v", "s", "a", "o.k", "nope"]
  /// The keys the indexed kinds index.
  static let indexedKeys = ["v", "s", "a", "o.k"]

  /// The operands comparisons take: every scalar kind and the awkward strings.
  static let operands: [FieldValue] = [
    .null, .double(.nan), .double(-0.0), .int(0), .int(1 << 53), .int((1 << 53) + 1),
    .double(9_007_199_254_740_992),
    .int(.max), .int(.min), .uint(.max), .decimal(Decimal(string: "19.99")!), .double(0.1), .bool(true),
    .bool(false),
    .int(3), .string("3"), .string(nfc), .string(nfd), .string("E"), .string("ß"), .string("ss"),
    .string("SS"),
    .string("\u{130}"), .string("i"), .string("\u{131}"), .string("σ"), .string("ς"), .string("Σ"),
    .string("%"),
    .string("_"), .string("\\"), .string("*"), .string("?"), .string(""), .string("a"), .string(long),
    .string("x\u{0}y"), .string("\r\n"), .string("😀"), .string("café"),
  ]

  /// Operands of the string operators: substrings that meet the traps.
  static let stringOperands: [String] = [
    "", "a", nfc, nfd, "E", "ß", "SS", "\u{130}", "i", "\u{131}", "Σ", "ς", "%", "_", "\\", "*", "?", "\u{0}",
    "\r\n", "😀", long,
  ]

  /// The operands `[c]`, `[d]` and `[cd]` comparisons take: the case and accent traps.
  static let foldedOperands: [FieldValue] = [
    .string(nfc), .string(nfd), .string("E"), .string("ß"), .string("SS"), .string("\u{130}"), .string("\u{131}"),
    .string("σ"), .string("ς"), .string(""), .string("café"), .string(long), .int(3), .null,
  ]

  /// LIKE patterns (`*` any run, `?` one character) and MATCHES regular expressions.
  static let likePatterns = [
    "*", "?", "a*", "*b", "a?b", "*\\**", "*\\?*", "%", "_", "*%*", "*_*", "\u{E9}", "e?", "*ß*", "?*?",
  ]
  static let regexes = [
    ".*", "a.*", "[ßs]+", "\\d+", "\u{E9}", "e\u{301}", ".", "(?i)abc", "\\\\", ".*\\r\\n.*", "Σ.*",
  ]

  static let modifiers = ["", "[c]", "[d]", "[cd]"]
  static let comparisons = ["==", "!=", "<", "<=", ">", ">="]
  static let stringOperators = ["CONTAINS", "BEGINSWITH", "ENDSWITH"]

  static let collations: [RequestCollation] = [
    .binary, .caseInsensitive, .caseDiacriticInsensitive, .localized, .localizedCaseInsensitive,
    .localizedStandard,
  ]

  /// Every format-string query of the corpus: the format and its arguments.
  static var queries: [CorpusQuery] {
    var out: [CorpusQuery] = []
    // A key no record holds: every operator once, with two operands.
    for op in comparisons + ["==[cd]"] {
      for value in [FieldValue.null, .string("a")] { out.append(.init("%K \(op) %@", ["nope", value])) }
    }
    // A string operator takes no nil (that is a syntax error, the same on every store).
    for op in ["CONTAINS", "BEGINSWITH[c]", "LIKE", "MATCHES"] { out.append(.init("%K \(op) %@", ["nope", "a"])) }
    for q in ["ANY", "ALL", "NONE"] { out.append(.init("\(q) %K == 1", ["nope"])) }
    out.append(.init("%K.@count == 0", ["nope"]))
    out.append(.init("NOT (%K == nil)", ["nope"]))
    for key in keys where key != "nope" {
      for op in comparisons {
        for value in operands { out.append(.init("%K \(op) %@", [key, value])) }
        for m in modifiers.dropFirst() {
          for value in foldedOperands { out.append(.init("%K \(op)\(m) %@", [key, value])) }
        }
      }
      for value in operands {
        out.append(.init("NOT (%K == %@)", [key, value]))
        out.append(.init("NOT (%K < %@)", [key, value]))
        out.append(.init("NOT (%K != %@)", [key, value]))
      }
      for op in stringOperators {
        for m in modifiers {
          for value in stringOperands { out.append(.init("%K \(op)\(m) %@", [key, value])) }
        }
      }
      for m in modifiers {
        for p in likePatterns { out.append(.init("%K LIKE\(m) %@", [key, p])) }
        for r in regexes { out.append(.init("%K MATCHES\(m) %@", [key, r])) }
      }
      let ranges: [(FieldValue, FieldValue)] = [
        (.int(0), .int(1 << 53)), (.double(-0.0), .double(0.0)), (.int(.min), .int(.max)),
        (.string("a"), .string("z")),
        (.string("E"), .string(nfc)), (.int(1 << 53), .uint(.max)), (.null, .int(3)),
        (.double(.nan), .int(3)),
      ]
      for (lo, hi) in ranges { out.append(.init("%K BETWEEN %@", [key, FieldValue.array([lo, hi])])) }
      let lists: [FieldValue] = [
        .array([.null, .int(3), .string("3")]), .array([.string(nfc), .string("ß")]), .array([.string(nfd)]),
        .array([.double(.nan)]), .array([.int((1 << 53) + 1)]), .array([]), .array([.bool(true), .int(1)]),
        .array([.uint(.max), .int(.min)]),
      ]
      for list in lists {
        out.append(.init("%K IN %@", [key, list]))
        out.append(.init("NOT (%K IN %@)", [key, list]))
      }
      for m in modifiers {
        out.append(
          .init("%K IN\(m) %@", [key, FieldValue.array([.string("e"), .string("SS"), .string("\u{131}")])]))
      }
      for q in ["ANY", "ALL", "NONE"] {
        for (op, value) in [
          ("==", FieldValue.int(1)), ("==", .string(nfc)), ("==[c]", .string("e")), ("==[cd]", .string("E")),
          ("<", .int(2)), (">=", .int(1 << 53)), ("==", .null), ("!=", .null), ("BEGINSWITH", .string("%")),
          ("CONTAINS[c]", .string("SS")), ("LIKE", .string("?")), ("==", .double(.nan)),
        ] {
          out.append(.init("\(q) %K \(op) %@", [key, value]))
          out.append(.init("NOT (\(q) %K \(op) %@)", [key, value]))
        }
      }
      for op in comparisons {
        for n in [0, 1, 2, 4] { out.append(.init("%K.@count \(op) %d", [key, n])) }
      }
      out.append(.init("%K == nil", [key]))
      out.append(.init("%K != nil", [key]))
      out.append(.init("NOT (%K == nil)", [key]))
    }
    return out
  }

  /// The corpus on a backend of `kind`; the indexed kinds index ``indexedKeys``.
  static func makeSet(_ kind: StoreKind) throws -> RequestSet<DynamicRecord> {
    if kind == .array { return RequestSet(records) }
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: records)
    if kind.rawValue.hasPrefix("indexed") {
      let indexable = try #require(store as? any CorpusIndexable, "\(kind) has no createIndex(_:unique:)")
      for key in indexedKeys { try indexable.createIndex(key, unique: false) }
    }
    return RequestSet(store)
  }
}

/// A store the corpus can index, whatever its type.
protocol CorpusIndexable {
  func createIndex(_ key: String, unique: Bool) throws
}
extension MemoryStore: CorpusIndexable {}
extension LogStore: CorpusIndexable {}
extension SQLiteStore: CorpusIndexable {}
extension PostgresStore: CorpusIndexable {}

/// One format-string query and its arguments.
struct CorpusQuery: CustomStringConvertible {
  var format: String
  var arguments: [(any Sendable)?]

  init(_ format: String, _ arguments: [(any Sendable)?]) {
    self.format = format
    self.arguments = arguments
  }

  var description: String {
    let shown = arguments.map { a -> String in
      let text = a.map { "\($0)" } ?? "nil"
      return text.count > 60 ? String(text.prefix(40)) + "…(\(text.count) chars)" : text.debugDescription
    }
    return "filter(\(format.debugDescription), \(shown.joined(separator: ", ")))"
  }
}

/// What a query answered: the ids in order, or the error's code.
enum CorpusAnswer: Equatable, CustomStringConvertible {
  case ids([FieldValue])
  case error(RequestSetError.Code)
  case otherError(String)

  /// Runs `body`, keeping its ids or its error.
  static func of(_ body: () throws -> [DynamicRecord]) -> CorpusAnswer {
    do {
      return .ids(try body().map(\.id))
    } catch let error as RequestSetError {
      return .error(error.code)
    } catch {
      return .otherError("\(error)")
    }
  }

  /// Runs `body`, keeping any equatable result or its error.
  static func value<T>(_ body: () throws -> T) -> CorpusAnswer {
    do {
      return .ids([.string("\(try body())")])
    } catch let error as RequestSetError {
      return .error(error.code)
    } catch {
      return .otherError("\(error)")
    }
  }

  var description: String {
    switch self {
    case .ids(let ids): return "\(ids.count) rows \(ids.map(\.description).joined(separator: ","))"
    case .error(let code): return "throws .\(code)"
    case .otherError(let text): return "throws \(text)"
    }
  }
}

/// Collects the queries whose answers differ and reports them together, each with the
/// query, the store and both answers, so one broken rule does not print thousands of lines.
struct CorpusMismatches {
  var kind: StoreKind
  var lines: [String] = []
  var checked = 0

  mutating func check(_ query: String, store: CorpusAnswer, reference: CorpusAnswer) {
    checked += 1
    if store != reference {
      lines.append("\(query) on \(kind): store \(store), array reference \(reference)")
    }
  }

  /// Fails with every mismatch, except those a ``CorpusKnownDivergence`` names for this
  /// kind: those are recorded as known issues (printed, not failing) until their owner
  /// fixes them, and then they pass unnoticed; any other mismatch still fails.
  func report(sourceLocation: SourceLocation = #_sourceLocation) {
    var unknown: [String] = []
    var known: [Int: [String]] = [:]
    for line in lines {
      if let i = CorpusKnownDivergence.all.firstIndex(where: { $0.kinds.contains(kind) && $0.matches(line) }) {
        known[i, default: []].append(line)
      } else {
        unknown.append(line)
      }
    }
    for (i, found) in known.sorted(by: { $0.key < $1.key }) {
      let divergence = CorpusKnownDivergence.all[i]
      withKnownIssue("\(divergence.summary) (to fix: \(divergence.owner))", isIntermittent: true) {
        Issue.record(
          "\(found.count) queries on \(kind):\n\(found.prefix(10).joined(separator: "\n"))",
          sourceLocation: sourceLocation)
      }
    }
    let shown = unknown.prefix(40).joined(separator: "\n")
    #expect(
      unknown.isEmpty, "\(unknown.count) of \(checked) queries differ on \(kind):\n\(shown)",
      sourceLocation: sourceLocation)
  }
}

extension CorpusMismatches {
  /// Loads `records` into a fresh store of ``kind`` (the array itself for `.array`) and
  /// checks each of `answers` there against the same answer over the plain array, each
  /// named with `label` first.
  mutating func checkAgainstReference(
    _ records: [DynamicRecord], label: String, _ answers: (RequestSet<DynamicRecord>) -> [(String, CorpusAnswer)]
  ) throws {
    let set: RequestSet<DynamicRecord>
    if kind == .array {
      set = RequestSet(records)
    } else {
      let store = try kind.makeStore(of: DynamicRecord.self)
      try store.insert(contentsOf: records)
      set = RequestSet(store)
    }
    for ((name, got), (_, want)) in zip(answers(set), answers(RequestSet(records))) {
      check("\(label)\(name)", store: got, reference: want)
    }
  }
}

/// A divergence from the array reference that the corpus found in another branch's store
/// or engine code, recorded here so the suite stays green while it is fixed there. Each
/// names its owner; delete an entry once it is fixed (the corpus then holds the store to
/// the reference again).
struct CorpusKnownDivergence: Sendable {
  var kinds: Set<StoreKind>
  var owner: String
  var summary: String
  var matches: @Sendable (String) -> Bool

  /// None now: every store answers the corpus as the array reference does.
  static let all: [CorpusKnownDivergence] = []
}
