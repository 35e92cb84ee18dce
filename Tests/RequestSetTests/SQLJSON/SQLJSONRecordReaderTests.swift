import Foundation
import RequestSet
import Testing
import _RequestSetSQL

/// `SQLJSON.decodeRecord`, which reads a record straight from a row's JSON bytes, against
/// the road it shortcuts (`SQLJSON.decode(utf8:)` then `storedRecord(_:in:)`): the same
/// records and the same errors on seeded random bodies, valid, awkward and broken.
@Suite(.ownThreads) struct SQLJSONRecordReaderTests {
  enum Kind: String, Codable, Equatable { case cat, dog, bird }

  struct Inner: Codable, Equatable {
    var city: String
    var zip: Int?
    var tags: [String]
    var score: Double?
  }

  /// A record with a field of every kind the field decoder reads itself, and more.
  struct Rec: Record, Equatable {
    var id: Int
    var name: String
    var nickname: String?
    var age: Int8?
    var big: UInt64
    var small: Int32
    var unsigned: UInt16
    var ratio: Double
    var ratioF: Float
    var flag: Bool
    var born: Date
    var died: Date?
    var tags: [String]
    var matrix: [[Int]]
    var owner: Inner
    var owners: [Inner]
    var previous: Inner?
    var lookup: [String: Int]
    var amount: Decimal?
    var url: URL?
    var uuid: UUID
    var extra: FieldValue?
    var kind: Kind
    var kinds: [Kind?]
    // Keys with canonical equivalents spelled otherwise: K (U+212A KELVIN SIGN) and
    // "café" (NFD, e + U+0301); the tree's dictionary finds them by `String` equality.
    var K: Int?
    var café: Int?
  }

  static let place = "the table recs of test.sqlite"

  // MARK: Random values

  /// Random field values; one in `odd` is one a plain row cannot hold as it is (NaN,
  /// -0.0, an integer above `Int.max`, a `Decimal`, text that is not NFC or holds U+0000),
  /// which the store tags and the direct reader leaves to the tree (never, at 0).
  struct Maker {
    var g: SeededRandom
    var odd: Int

    static let strings = [
      "", "a", "Micky", "Zo\u{EB}", "quote\" back\\ slash / tab\t cr\r\n bell\u{7} del\u{7F}",
      "ß İ ı Σ σ ς 🐕‍🦺 %_*?", "K", "日本語", "\u{1F600}", "$rs", "null", "-0", "1e400", "x y",
    ]
    static let oddStrings = ["Zoe\u{308}", "a\u{0}b", "cafe\u{301}", "\u{212A}"]
    static let ints = [
      0, 1, -1, 3, 127, 128, -129, 200, 65_535, 65_536, Int(Int32.max), Int(Int32.min), Int.max, Int.min,
      9_007_199_254_740_993,
    ]
    static let doubles: [Double] = [
      0, 0.1, 3, 3.5, -2.5e-3, 1e-5, 1e15, 1e16, 1.2345e20, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
      1.0 / 3, 65_535, 9_007_199_254_740_992, -1e300,
    ]
    static let oddDoubles: [Double] = [-0.0, .nan, .infinity, -.infinity]

    mutating func chance(_ n: Int) -> Bool { Int.random(in: 0..<n, using: &g) == 0 }
    mutating func isOdd() -> Bool { odd > 0 && chance(odd) }
    mutating func bool() -> Bool { Bool.random(using: &g) }
    mutating func count(_ n: Int) -> Int { Int.random(in: 0...n, using: &g) }
    mutating func pick<T>(_ items: [T]) -> T { items.randomElement(using: &g)! }
    mutating func maybe<T>(_ make: (inout Maker) -> T) -> T? { bool() ? make(&self) : nil }

    mutating func string() -> String {
      (0..<Int.random(in: 1...3, using: &g)).map { _ in isOdd() ? pick(Self.oddStrings) : pick(Self.strings) }
        .joined()
    }
    mutating func int() -> Int { pick(Self.ints) }
    mutating func double() -> Double {
      if isOdd() { return pick(Self.oddDoubles) }
      return bool() ? pick(Self.doubles) : Double.random(in: -1e6...1e6, using: &g)
    }
    mutating func uint64() -> UInt64 {
      isOdd() ? pick([UInt64(Int.max) + 1, .max]) : pick([0, 1, UInt64(Int.max)])
    }

    mutating func inner() -> Inner {
      Inner(
        city: string(), zip: maybe { $0.int() }, tags: (0..<count(3)).map { _ in string() },
        score: maybe { $0.double() })
    }

    mutating func value(depth: Int = 0) -> FieldValue {
      switch Int.random(in: 0..<(depth > 2 ? 7 : 9), using: &g) {
      case 0: return .null
      case 1: return .bool(bool())
      case 2: return .int(int())
      case 3: return .uint(uint64())
      case 4: return .double(double())
      case 5:
        return isOdd()
          ? .decimal(pick([Decimal(string: "1.25")!, Decimal(string: "-0.000001")!])) : .int(int())
      case 6: return .string(string())
      case 7: return .array((0..<count(3)).map { _ in value(depth: depth + 1) })
      default:
        var fields: [String: FieldValue] = [:]
        for _ in 0..<count(3) { fields[string()] = value(depth: depth + 1) }
        return .object(fields)
      }
    }

    mutating func record(id: Int) -> Rec {
      Rec(
        id: id, name: string(), nickname: maybe { $0.string() },
        age: maybe { Int8(truncatingIfNeeded: $0.int()) },
        big: uint64(), small: Int32(truncatingIfNeeded: int()), unsigned: UInt16(truncatingIfNeeded: int()),
        ratio: double(), ratioF: Float(double()), flag: bool(),
        born: Date(
          timeIntervalSinceReferenceDate: bool() ? double() : Double.random(in: -1e9...1e9, using: &g)),
        died: maybe {
          Date(timeIntervalSinceReferenceDate: Double(Int32.random(in: .min ... .max, using: &$0.g)) / 8)
        },
        tags: (0..<count(4)).map { _ in string() },
        matrix: (0..<count(3)).map { _ in (0..<count(3)).map { _ in int() } },
        owner: inner(), owners: (0..<count(2)).map { _ in inner() }, previous: maybe { $0.inner() },
        lookup: Dictionary((0..<count(3)).map { _ in (string(), int()) }, uniquingKeysWith: { a, _ in a }),
        amount: isOdd() ? Decimal(string: "12.5")! : nil,
        url: maybe { _ in URL(string: "https://example.com/a?b=c#d")! },
        uuid: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
        extra: maybe { maker -> FieldValue in
          // `.some(.null)` is written as null, which reads back as nil.
          let value = maker.value()
          return value == .null ? .int(0) : value
        },
        kind: pick([.cat, .dog, .bird]), kinds: (0..<count(3)).map { _ in maybe { $0.pick([.cat, .dog]) } },
        K: maybe { $0.int() }, café: maybe { $0.int() })
    }
  }

  // MARK: Random bodies

  /// Values spliced into a body as a member's JSON text: every kind, numbers the field
  /// decoder converts or refuses, tagged values, escapes, broken and too-deep JSON.
  static let snippets = [
    #""x""#, "5", "-0", "3.0", "3.5", "1e2", "1E+2", "null", "true", "false", "[]", "{}", "200", "-129",
    "65536",
    "18446744073709551615", "-9223372036854775809", "9223372036854775808", "1e400", "-1e400", "+5", ".5",
    "5.",
    "0x10", "--1", "1e", #"{"$rs":"double","v":"nan"}"#, #"{"$rs":"decimal","v":"1.5"}"#, #"{"$rs":"bogus"}"#,
    #"{"$rs":"string","u":[90,111,101,776]}"#, #""\u00e9\ud83d\ude00\n\t\"\\\/""#, #""\ud800""#, #""\udc00""#,
    #""\x""#, #""unterminated"#, "[1,[2,[3]]]", #"{"city":"Oslo","tags":[]}"#, #"{"a":1,"a":2}"#,
    String(repeating: "[", count: 600) + String(repeating: "]", count: 600), "[1,]", "{,}", "nul", "tru",
    "\"\u{80}\u{FF}\"", "2000000000", "-2147483649", "0.1", "1.5e300",
  ]

  static let keys = [
    "id", "name", "nickname", "age", "big", "small", "unsigned", "ratio", "ratioF", "flag", "born", "died",
    "tags",
    "matrix", "owner", "owners", "previous", "lookup", "amount", "url", "uuid", "extra", "kind", "kinds", "K",
    "café",
  ]

  /// Keys as a body may spell them: plain, escaped, the other canonical spelling, a tag.
  static func keyText(_ g: inout SeededRandom) -> String {
    let key = keys.randomElement(using: &g)!
    switch Int.random(in: 0..<8, using: &g) {
    case 0: return #""\u00"# + String(key.utf8.first!, radix: 16) + String(key.dropFirst()) + "\""
    case 1: return key == "K" ? "\"\u{212A}\"" : key == "café" ? "\"cafe\u{301}\"" : "\"\(key)\""
    case 2: return #""$rs""#
    case 3: return #""unknown\"key""#
    default: return "\"\(key)\""
    }
  }

  /// `text` with a random change that keeps the JSON's tokens apart: whitespace between
  /// tokens, escapes in strings, a member added at the start or end, a cut, a byte replaced.
  static func mutate(_ text: String, _ g: inout SeededRandom) -> [UInt8] {
    var bytes = Array(text.utf8)
    switch Int.random(in: 0..<8, using: &g) {
    case 0, 1:
      return bytes
    case 2:
      // Whitespace between tokens (outside strings), as jsonb writes it back.
      var out: [UInt8] = []
      var inString = false
      var escaped = false
      for b in bytes {
        if inString {
          if escaped {
            escaped = false
          } else if b == UInt8(ascii: "\\") {
            escaped = true
          } else if b == 0x22 {
            inString = false
          }
          out.append(b)
          continue
        }
        if b == 0x22 { inString = true }
        out.append(b)
        if [UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "{"), UInt8(ascii: "[")].contains(b),
          Bool.random(using: &g)
        {
          out.append(contentsOf: [" ", "\n", "\t", "\r\n  "].randomElement(using: &g)!.utf8)
        }
      }
      return out
    case 3:
      // Escapes inside strings (keys included): \u00XX for letters, \uXXXX or a surrogate
      // pair for other scalars.
      var out = ""
      var inString = false
      var escaped = false
      for scalar in text.unicodeScalars {
        if inString && !escaped && scalar != "\"" && scalar != "\\" && Int.random(in: 0..<6, using: &g) == 0 {
          func hex(_ v: UInt32) -> String {
            let s = String(v, radix: 16)
            return #"\u"# + String(repeating: "0", count: 4 - s.count) + s
          }
          if scalar.value > 0xFFFF {
            let v = scalar.value - 0x10000
            out += hex(0xD800 + (v >> 10)) + hex(0xDC00 + (v & 0x3FF))
          } else {
            out += hex(scalar.value)
          }
          continue
        }
        if inString {
          if escaped {
            escaped = false
          } else if scalar == "\\" {
            escaped = true
          } else if scalar == "\"" {
            inString = false
          }
        } else if scalar == "\"" {
          inString = true
        }
        out.unicodeScalars.append(scalar)
      }
      return Array(out.utf8)
    case 4:
      // A member added first (a duplicate there loses) or last (a duplicate there wins).
      let member = Array((keyText(&g) + ":" + snippets.randomElement(using: &g)!).utf8)
      if Bool.random(using: &g) {
        bytes.insert(contentsOf: member + [UInt8(ascii: ",")], at: 1)
      } else {
        bytes.insert(contentsOf: [UInt8(ascii: ",")] + member, at: bytes.count - 1)
      }
      return bytes
    case 5:
      // Cut anywhere.
      return Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &g)))
    case 6:
      // One byte replaced.
      let i = Int.random(in: 0..<bytes.count, using: &g)
      bytes[i] = (Array(#"{}[],:"\0123456789-+.eEntf x"#.utf8) + [0x80, 0xFF, 0x00]).randomElement(using: &g)!
      return bytes
    default:
      // Trailing text, or whitespace around the value.
      return Bool.random(using: &g) ? [0x20, 0x0A] + bytes + [0x09] : bytes + Array(" x".utf8)
    }
  }

  /// The record's fields with a random change of kind: a key removed, or a value replaced
  /// by one of another kind.
  static func reshaped(_ value: FieldValue, _ g: inout SeededRandom) -> FieldValue {
    guard case .object(var fields) = value, Int.random(in: 0..<4, using: &g) == 0 else { return value }
    let key = keys.randomElement(using: &g)!
    if Bool.random(using: &g) {
      fields[key] = nil
    } else if key == "owner", case .object(var owner)? = fields[key] {
      var maker = Maker(g: g, odd: 5)
      owner[["city", "zip", "tags", "score"].randomElement(using: &g)!] = maker.value()
      fields[key] = .object(owner)
      g = maker.g
    } else {
      var maker = Maker(g: g, odd: 5)
      fields[key] = maker.value()
      g = maker.g
    }
    return .object(fields)
  }

  // MARK: Comparing

  /// Records compared by their encoding (NaN is not equal to itself, -0.0 equals 0.0).
  static func same(_ a: Rec, _ b: Rec) throws -> Bool {
    SQLJSON.encode(try FieldValue(encoding: a)).text == SQLJSON.encode(try FieldValue(encoding: b)).text
  }

  struct Tally {
    var direct = 0
    var throughTree = 0
    var errors = 0
  }

  /// Checks one body: when the direct reader answers, the tree's road gives the same
  /// record; `decodeRecord` gives the tree's record or throws its error, word for word.
  static func check(_ body: [UInt8], _ tally: inout Tally) throws {
    let tree = Result {
      try body.withUnsafeBytes { try SQLJSON.decode(utf8: $0).storedRecord(Rec.self, in: place) }
    }
    let direct = body.withUnsafeBytes { SQLJSON._readDirectly(Rec.self, utf8: $0) }
    let road = Result { try body.withUnsafeBytes { try SQLJSON.decodeRecord(Rec.self, utf8: $0, in: place) } }
    let text = String(decoding: body, as: UTF8.self)
    if let direct {
      tally.direct += 1
      guard case .success(let record) = tree, try same(record, direct) else {
        Issue.record("The direct reader answered \(direct) where the tree gives \(tree) for \(text)")
        return
      }
    } else {
      tally.throughTree += 1
    }
    switch (tree, road) {
    case (.success(let a), .success(let b)):
      #expect(try same(a, b), "\(text)")
    case (.failure(let a), .failure(let b)):
      tally.errors += 1
      let (a, b) = (a as? RequestSetError, b as? RequestSetError)
      #expect(a != nil && b?.code == a?.code && b?.message == a?.message, "\(text): \(String(describing: b))")
    default:
      Issue.record("\(text): the tree gives \(tree), decodeRecord \(road)")
    }
  }

  // MARK: Tests

  @Test(arguments: [1, 2, 3, 4] as [UInt64])
  func givesTheTreesRecordsAndErrorsOnRandomBodies(_ seed: UInt64) throws {
    var g = SeededRandom(seed: seed)
    var tally = Tally()
    for id in 0..<1_500 {
      // Half the records plain, half with one awkward value in five.
      var maker = Maker(g: g, odd: Bool.random(using: &g) ? 0 : 5)
      let record = maker.record(id: id)
      g = maker.g
      let fields = Self.reshaped(try FieldValue(encoding: record), &g)
      try Self.check(Self.mutate(SQLJSON.encode(fields).text, &g), &tally)
    }
    // Both roads ran, and bodies that do not decode were among them.
    #expect(tally.direct > 150 && tally.throughTree > 300 && tally.errors > 150, "\(tally)")
  }

  /// A dictionary whose values fail under two keys names the same key every time (the
  /// first in sorted order), however the dictionary holding the fields was built: a
  /// dictionary lists its keys in an order that depends on its size and history, and the
  /// random differential above once saw the two roads name different keys.
  @Test func aDictionaryWithTwoBadValuesNamesTheSameKeyEveryTime() {
    struct Tallies: Decodable { var counts: [String: Int] }
    let entries: [(String, FieldValue)] = [
      ("a", .int(1)), ("x", .string("no")), ("c", .int(3)), ("m", .string("no")), ("z", .int(5)),
    ]
    var named = Set<String>()
    for round in 0..<24 {
      var fields: [String: FieldValue] = [:]
      fields.reserveCapacity(round * 3)
      for i in entries.indices { let (key, value) = entries[(i + round) % entries.count]; fields[key] = value }
      do {
        _ = try FieldValue.object(["counts": .object(fields)]).decode(Tallies.self)
        Issue.record("decoded a dictionary holding two strings as [String: Int]")
      } catch let DecodingError.typeMismatch(_, context) {
        named.insert(context.codingPath.map(\.stringValue).joined(separator: "."))
      } catch {
        Issue.record("unexpected \(error)")
      }
    }
    #expect(named == ["counts.m"])
  }

  @Test func readsPlainBodiesDirectly() throws {
    var maker = Maker(g: SeededRandom(seed: 9), odd: 0)
    for id in 0..<200 {
      var record = maker.record(id: id)
      // Values a plain body holds: no tag (NaN, Decimal, text that is not NFC, U+0000).
      record.ratio = 2.5
      record.ratioF = 0.5
      record.born = Date(timeIntervalSinceReferenceDate: 12.25)
      record.big = 7
      record.name = "Rex"
      record.nickname = nil
      record.tags = ["a", "Zo\u{EB}", "🐕‍🦺"]
      record.owner = Inner(city: "Oslo", zip: 1, tags: [], score: nil)
      record.owners = []
      record.previous = nil
      record.lookup = ["x": 1]
      record.amount = nil
      record.extra = .array([.int(1), .string("x"), .object(["k": .null])])
      let (text, plain) = SQLJSON.encode(try FieldValue(encoding: record))
      #expect(plain, "\(text)")
      let direct = Array(text.utf8).withUnsafeBytes { SQLJSON._readDirectly(Rec.self, utf8: $0) }
      #expect(try direct.map { try Self.same($0, record) } == true, "\(text)")
    }
  }

  @Test func anErrorNamesTheRecordAndTheKey() {
    let body = Array(#"{"id":15,"name":3}"#.utf8)
    let error = #expect(throws: RequestSetError.self) {
      try body.withUnsafeBytes { try SQLJSON.decodeRecord(Rec.self, utf8: $0, in: Self.place) }
    }
    #expect(error?.code == .decodingFailed)
    #expect(
      error?.message.contains("The record with id 15 in \(Self.place)") == true,
      "\(String(describing: error))")
    #expect(error?.message.contains("at the key name") == true, "\(String(describing: error))")
    let damaged = #expect(throws: RequestSetError.self) {
      try Array(#"{"id":15,"#.utf8).withUnsafeBytes {
        try SQLJSON.decodeRecord(Rec.self, utf8: $0, in: Self.place)
      }
    }
    #expect(damaged?.code == .decodingFailed)
    #expect(damaged?.message.hasPrefix("A stored row's JSON is damaged at byte 9") == true)
  }

  /// A type that catches a decoding error and goes on: the direct reader, which failed
  /// on the tagged NaN, must not answer with the type's fallback value.
  struct Lenient: Decodable {
    enum Keys: String, CodingKey { case ratio }
    var ratio: Double
    init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: Keys.self)
      ratio = (try? c.decode(Double.self, forKey: .ratio)) ?? -1
    }
  }

  @Test func aCaughtFailureStillSendsTheRecordThroughTheTree() throws {
    let body = Array(#"{"ratio":{"$rs":"double","v":"nan"}}"#.utf8)
    #expect(body.withUnsafeBytes { SQLJSON._readDirectly(Lenient.self, utf8: $0) } == nil)
    let record = try body.withUnsafeBytes { try SQLJSON.decodeRecord(Lenient.self, utf8: $0, in: Self.place) }
    #expect(record.ratio.isNaN)
    let plain = Array(#"{"ratio":"text"}"#.utf8)
    #expect(plain.withUnsafeBytes { SQLJSON._readDirectly(Lenient.self, utf8: $0) } == nil)
    #expect(
      try plain.withUnsafeBytes { try SQLJSON.decodeRecord(Lenient.self, utf8: $0, in: Self.place) }.ratio
        == -1)
  }

  /// Of equal keys the last counts, and canonically equivalent keys are equal keys, as in
  /// the tree's dictionary.
  @Test func duplicateAndEquivalentKeysReadAsTheTreeReadsThem() throws {
    struct Two: Decodable, Equatable {
      var K: Int
      var café: String
    }
    let bodies = [
      #"{"K":1,"café":"a","K":2}"#, "{\"\u{212A}\":1,\"cafe\u{301}\":\"b\"}",
      "{\"K\":1,\"\u{212A}\":3,\"café\":\"c\"}",
    ]
    for text in bodies {
      let body = Array(text.utf8)
      let tree = try body.withUnsafeBytes {
        try SQLJSON.decode(utf8: $0).storedRecord(Two.self, in: Self.place)
      }
      let direct = body.withUnsafeBytes { SQLJSON._readDirectly(Two.self, utf8: $0) }
      #expect(direct == tree, "\(text)")
    }
  }
}

/// Records of every kind of field through the SQL stores: what a fetch reads (directly or
/// through the tree) is what was inserted.
@Suite(.ownThreads) struct SQLRecordReadingTests {
  @Test(arguments: SQLMigrationKind.available)
  func randomRecordsReadBackAsInserted(_ kind: SQLMigrationKind) throws {
    var maker = SQLJSONRecordReaderTests.Maker(g: SeededRandom(seed: 11), odd: 5)
    let records = (0..<300).map { maker.record(id: $0) }
    let store = try kind.open(SQLJSONRecordReaderTests.Rec.self, at: kind.freshLocation())
    defer { store.close() }
    try store.insert(contentsOf: records)
    let fetched = try RequestSet(store).sortBy(\.id).fetch()
    #expect(fetched.count == records.count)
    for (a, b) in zip(fetched, records) {
      #expect(try SQLJSONRecordReaderTests.same(a, b), "\(a) is not \(b)")
    }
    #expect(try SQLJSONRecordReaderTests.same(try #require(try store.fetch(id: 17)), records[17]))
  }
}
