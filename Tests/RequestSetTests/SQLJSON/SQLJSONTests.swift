import Foundation
import RequestSet
import Testing
import _RequestSetSQL

/// The JSON a SQL row keeps: exact round trips, the plain flag, and the quoting of names.
@Suite(.ownThreads) struct SQLJSONTests {
  static let awkward: [(FieldValue, Bool)] = [
    (.null, true), (.bool(true), true), (.int(0), true), (.int(Int.max), true), (.int(Int.min), true),
    (.int(9_007_199_254_740_993), true), (.uint(5), true), (.uint(UInt64.max), false),
    (.double(3), true), (.double(-0.0), false), (.double(0.1), true), (.double(1e-5), true),
    (.double(1e15), true), (.double(1.2345e20), true), (.double(.leastNonzeroMagnitude), true),
    (.double(.greatestFiniteMagnitude), true), (.double(.nan), false), (.double(.infinity), false),
    (.double(-.infinity), false), (.decimal(Decimal(string: "1.25")!), false),
    (.string(""), true), (.string("plain"), true), (.string("Zo\u{EB}"), true), (.string("Zoe\u{308}"), false),
    (.string("a\u{0}b"), false), (.string("quote\" back\\ slash / tab\t cr\r\n bell\u{7} del\u{7F}"), true),
    (.string("ß İ ı Σ σ ς 🐕‍🦺 %_*?"), true),
    (.array([]), true), (.array([.int(1), .string("x"), .null, .double(2.5)]), true),
    (.object([:]), true), (.object(["owner": .object(["city": .string("Oslo")])]), true),
    (.object(["$rs": .string("not a tag")]), false), (.object(["a\u{0}": .int(1)]), false),
    (.object(["Zoe\u{308}": .int(1)]), false), (.object(["n": .array([.double(.nan)])]), false),
  ]

  @Test func roundTripsExactlyAndFlagsWhatSQLCannotCompare() throws {
    for (value, plain) in Self.awkward {
      let (text, isPlain) = SQLJSON.encode(value)
      #expect(isPlain == plain, "\(value): \(text)")
      let back = try SQLJSON.decode(text)
      // FieldValue's == makes NaN unequal to itself: compare the text of a second encoding.
      #expect(SQLJSON.encode(back).text == text, "\(value) came back as \(back)")
      if case .double(let d) = value, d.isFinite { #expect(back == value && "\(back)" == "\(value)") }
      if case .string(let s) = value, case .string(let t) = back {
        #expect(Array(s.unicodeScalars) == Array(t.unicodeScalars), "scalars of \(s.debugDescription)")
      }
    }
  }

  @Test func doublesKeepADecimalPointAndNoExponent() {
    let cases: [(Double, String)] = [
      (3, "3.0"), (-0.0, "-0.0"), (1e-5, "0.00001"), (1e15, "1000000000000000.0"), (1e16, "10000000000000000.0"),
      (1.2345e20, "123450000000000000000.0"), (-2.5e-3, "-0.0025"), (0.1, "0.1"),
    ]
    for (d, text) in cases { #expect(SQLJSON.plainDecimal(d) == text, "\(d)") }
    for d in [Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude, 1.0 / 3, 123_456.789e-200] {
      let text = SQLJSON.plainDecimal(d)
      #expect(!text.contains("e") && text.contains("."))
      #expect(Double(text) == d, "\(d) -> \(text)")
    }
  }

  @Test func readsWhatADatabaseGivesBack() throws {
    // jsonb's output: spaces, reordered keys, escapes written differently.
    let value = try SQLJSON.decode(#"{"name": "R\u00e9x \ud83d\udc15", "age": 3, "w": 4.50, "tags": [ ], "n": null}"#)
    #expect(value == .object(["name": .string("Réx 🐕"), "age": .int(3), "w": .double(4.5), "tags": .array([]), "n": .null]))
    #expect(try SQLJSON.decode("18446744073709551615") == .uint(UInt64.max))
  }

  /// Numbers are read without a `String` when they are short and have no exponent; every
  /// number must still read as the general path (`Int(text)`, then `Double(text)`) reads it,
  /// to the bit.
  @Test func numbersReadAsTheirTextReads() throws {
    var texts = [
      "0", "-0", "007", "-12", "123456789012345678", "-999999999999999999", "1234567890123456789",
      "9223372036854775807", "-9223372036854775808", "9223372036854775808", "0.0", "-0.0", "0.1", "-2.5",
      "1.000000000000001", "123456789012345.6", "12345678901234.5", "99999999999999.9", "0.000000000000001",
      "0.0000000000000000000001", "1.5e2", "1E-3", "-4.25E+1", "00.5", "1.", ".5",
    ]
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<5_000 {
      // Short decimals: up to 18 digits with the point anywhere, and written doubles.
      let digits = String(Int.random(in: 0..<1_000_000_000_000_000_000, using: &generator))
      let point = Int.random(in: 1...digits.count, using: &generator)
      let sign = Bool.random(using: &generator) ? "-" : ""
      let fraction = point == digits.count ? "0" : String(digits.dropFirst(point))
      texts.append(sign + digits.prefix(point) + "." + fraction)
      let d = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator))
      if d.isFinite { texts.append(SQLJSON.plainDecimal(d)) }
      texts.append(SQLJSON.plainDecimal(Double(Int.random(in: -1_000_000...1_000_000, using: &generator)) / 1000))
    }
    for text in texts {
      let expected: FieldValue
      if !text.contains(where: { ".eE".contains($0) }), let i = Int(text) {
        expected = .int(i)
      } else if !text.contains(where: { ".eE".contains($0) }), let u = UInt64(text) {
        expected = .uint(u)
      } else {
        expected = .double(try #require(Double(text)))
      }
      let value = try SQLJSON.decode(text)
      switch (value, expected) {
      case (.double(let a), .double(let b)):
        #expect(a.bitPattern == b.bitPattern, "\(text) read as \(a), not \(b)")
      default:
        #expect(value == expected, "\(text) read as \(value), not \(expected)")
      }
      #expect(try SQLJSON.decode("[" + text + ",1]") == .array([value, .int(1)]), "\(text) in an array")
    }
    for text in ["-", "1..2", "1.2.3", "--1", "1-2", "1.5-", "+"] {
      #expect(throws: RequestSetError.self, "\(text)") { try SQLJSON.decode(text) }
    }
  }

  @Test func damagedTextThrowsATypedError() {
    for text in ["", "{", #"{"a":}"#, "[1,]", #""abc"#, "tru", "1 2", #"{"$rs":"double","v":"maybe"}"#, #""\ud800""#] {
      #expect(throws: RequestSetError.self, "\(text)") { try SQLJSON.decode(text) }
      do { _ = try SQLJSON.decode(text) } catch let error as RequestSetError { #expect(error.code == .decodingFailed) } catch {
        Issue.record("untyped error \(error)")
      }
    }
    // Deep nesting is refused, not a stack overflow.
    let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
    #expect(throws: RequestSetError.self) { try SQLJSON.decode(deep) }
  }

  @Test func quotesNamesAndRefusesWhatCannotBeQuoted() throws {
    #expect(try SQLJSON.quoteIdentifier(#"odd"name"#) == #""odd""name""#)
    #expect(try SQLJSON.quoteLiteral("it's '; DROP TABLE x; --") == "'it''s ''; DROP TABLE x; --'")
    #expect(throws: RequestSetError.self) { try SQLJSON.quoteIdentifier("") }
    #expect(throws: RequestSetError.self) { try SQLJSON.quoteIdentifier("a\u{0}b") }
    #expect(throws: RequestSetError.self) { try SQLJSON.quoteLiteral("a\u{0}b") }
    #expect(SQLJSON.jsonPath(["owner", "city"]) == #"$."owner"."city""#)
    #expect(SQLJSON.jsonPath(["a.b", "c'd", "$[0]"]) == #"$."a.b"."c'd"."$[0]""#)
    #expect(SQLJSON.jsonPath([#"say "hi""#]) == nil)
    #expect(SQLJSON.jsonPath(["nul\u{0}"]) == nil)
  }
}
