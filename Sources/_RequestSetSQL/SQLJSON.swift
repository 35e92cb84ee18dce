import Foundation
import RequestSet

/// The JSON a SQL store's row keeps for a record, and the quoting of names that reach SQL
/// text.
///
/// A record's fields (its `FieldValue`) are written as JSON that SQLite's JSON functions
/// and PostgreSQL's `jsonb` read with the same meaning the in-memory engine gives them:
/// integers as integers (64-bit, exact), doubles always with a decimal point and never an
/// exponent (so `jsonb`, which keeps numbers as exact decimals, gives them back as doubles,
/// and compares them exactly with integers), strings as their NFC text.
///
/// A value with no exact JSON twin is written as a tagged object, `{"$rs": kind, …}`, and
/// makes the row not *plain*: NaN, ±infinity and -0.0, `Decimal`, `UInt64` above `Int64.max`, a
/// string that is not in NFC or holds U+0000 (which `jsonb` cannot hold), and an object
/// with such a key or a key `"$rs"`. A store answers a query over rows that are not plain
/// as a superset and lets the engine check those rows again in process, so SQL never has
/// to compare them. ``decode(_:)`` reads every tagged value back exactly.
///
/// ```swift
/// let (text, plain) = SQLJSON.encode(.object(["age": .int(3), "ratio": .double(.nan)]))
/// // text == #"{"age":3,"ratio":{"$rs":"double","v":"nan"}}"#, plain == false
/// let back = try SQLJSON.decode(text)     // the same FieldValue
/// ```
public enum SQLJSON {
  /// The key of a tagged value.
  static let tag = "$rs"

  // MARK: - Encoding

  /// The JSON text of `value`, and whether every value in it is plain (see ``SQLJSON``).
  ///
  /// ```swift
  /// SQLJSON.encode(.object(["name": .string("Rex")]))   // (#"{"name":"Rex"}"#, true)
  /// ```
  /// - Complexity: O(*n*) in the encoded size; strings that are not ASCII are checked for
  ///   NFC, which costs a normalization pass each.
  public static func encode(_ value: FieldValue) -> (text: String, plain: Bool) {
    var out: [UInt8] = []
    out.reserveCapacity(128)
    var plain = true
    _write(value, into: &out, plain: &plain)
    return (String(decoding: out, as: UTF8.self), plain)
  }

  private static func _write(_ value: FieldValue, into out: inout [UInt8], plain: inout Bool) {
    switch value {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
    case .int(let i): out.append(contentsOf: String(i).utf8)
    case .uint(let u):
      if u <= UInt64(Int64.max) {
        out.append(contentsOf: String(u).utf8)
      } else {
        plain = false
        _writeTagged("uint", String(u), into: &out)
      }
    case .double(let d):
      if d.isFinite && !(d == 0 && d.sign == .minus) {
        out.append(contentsOf: plainDecimal(d).utf8)
      } else {
        // jsonb keeps numbers as decimals, which have no negative zero: -0.0 would come
        // back as 0.0, so it is tagged like NaN and read back with its sign.
        plain = false
        let name = d.isNaN ? "nan" : d.isInfinite ? (d < 0 ? "-inf" : "inf") : "-0"
        _writeTagged("double", name, into: &out)
      }
    case .decimal(let d):
      plain = false
      _writeTagged("decimal", d.description, into: &out)
    case .string(let s):
      _writeString(s, into: &out, plain: &plain)
    case .array(let items):
      out.append(UInt8(ascii: "["))
      for (i, item) in items.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        _write(item, into: &out, plain: &plain)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let fields):
      let keys = fields.keys.sorted()
      if keys.contains(where: { $0 == tag || !_isPlainText($0) }) {
        // Keys JSON (or jsonb) cannot hold as they are: a list of [key, value] pairs.
        plain = false
        out.append(contentsOf: #"{"$rs":"object","v":["#.utf8)
        for (i, key) in keys.enumerated() {
          if i > 0 { out.append(UInt8(ascii: ",")) }
          out.append(UInt8(ascii: "["))
          var ignored = true
          _writeString(key, into: &out, plain: &ignored)
          out.append(UInt8(ascii: ","))
          _write(fields[key]!, into: &out, plain: &plain)
          out.append(UInt8(ascii: "]"))
        }
        out.append(contentsOf: "]}".utf8)
        return
      }
      out.append(UInt8(ascii: "{"))
      for (i, key) in keys.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        _writeQuoted(key, into: &out)
        out.append(UInt8(ascii: ":"))
        _write(fields[key]!, into: &out, plain: &plain)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  /// A string: as JSON text when it is plain, else tagged as its Unicode scalars.
  private static func _writeString(_ s: String, into out: inout [UInt8], plain: inout Bool) {
    if _isPlainText(s) {
      _writeQuoted(s, into: &out)
      return
    }
    plain = false
    out.append(contentsOf: #"{"$rs":"string","u":["#.utf8)
    for (i, scalar) in s.unicodeScalars.enumerated() {
      if i > 0 { out.append(UInt8(ascii: ",")) }
      out.append(contentsOf: String(scalar.value).utf8)
    }
    out.append(contentsOf: "]}".utf8)
  }

  private static func _writeTagged(_ kind: String, _ text: String, into out: inout [UInt8]) {
    out.append(contentsOf: #"{"$rs":""#.utf8)
    out.append(contentsOf: kind.utf8)
    out.append(contentsOf: #"","v":""#.utf8)
    out.append(contentsOf: text.utf8)
    out.append(contentsOf: #""}"#.utf8)
  }

  private static let _hex: [UInt8] = Array("0123456789abcdef".utf8)

  /// `s` as a JSON string literal (the caller checked it holds no U+0000).
  private static func _writeQuoted(_ s: String, into out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for b in s.utf8 {
      switch b {
      case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
      case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
      case UInt8(ascii: "\n"): out.append(contentsOf: #"\n"#.utf8)
      case UInt8(ascii: "\r"): out.append(contentsOf: #"\r"#.utf8)
      case UInt8(ascii: "\t"): out.append(contentsOf: #"\t"#.utf8)
      case 0..<0x20, 0x7F:
        out.append(contentsOf: #"\u00"#.utf8)
        out.append(_hex[Int(b >> 4)])
        out.append(_hex[Int(b & 0xF)])
      default: out.append(b)
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  /// Whether SQL can hold and compare `s` as it is: no U+0000, and in NFC (so byte order is
  /// the in-memory engine's order, and byte equality its equality).
  ///
  /// ```swift
  /// SQLJSON.isPlainText("Zoë")            // true (NFC)
  /// SQLJSON.isPlainText("Zoe\u{308}")     // false (NFD)
  /// ```
  public static func isPlainText(_ s: String) -> Bool { _isPlainText(s) }

  @inline(__always)
  private static func _isPlainText(_ s: String) -> Bool {
    var ascii = true
    for b in s.utf8 {
      if b == 0 { return false }
      if b >= 0x80 { ascii = false }
    }
    if ascii { return true }
    return s.utf8.elementsEqual(s.precomposedStringWithCanonicalMapping.utf8)
  }

  /// `s` in NFC: the form a plain row keeps, and the form a bound query string must have
  /// to compare with it byte by byte.
  ///
  /// ```swift
  /// SQLJSON.nfc("Zoe\u{308}") == "Zo\u{EB}"   // true, and their bytes are equal too
  /// ```
  public static func nfc(_ s: String) -> String {
    if s.utf8.allSatisfy({ $0 < 0x80 }) { return s }
    return s.precomposedStringWithCanonicalMapping
  }

  /// A finite double in decimal notation with a decimal point and no exponent, the
  /// shortest that reads back as the same double: `3.0`, `0.00001`, `-0.0`,
  /// `123450000000000000000.0`.
  ///
  /// ```swift
  /// SQLJSON.plainDecimal(1e-5)   // "0.00001"
  /// ```
  public static func plainDecimal(_ d: Double) -> String {
    let text = d.description   // shortest round trip: "3.0", "1e-05", "1.2345e+20"
    guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) else { return text }
    var mantissa = String(text[..<e])
    let exponent = Int(text[text.index(after: e)...]) ?? 0
    var sign = ""
    if mantissa.hasPrefix("-") {
      sign = "-"
      mantissa.removeFirst()
    }
    // Digits with the point after `point` of them.
    var digits: String
    var point: Int
    if let dot = mantissa.firstIndex(of: ".") {
      digits = String(mantissa[..<dot]) + String(mantissa[mantissa.index(after: dot)...])
      point = mantissa.distance(from: mantissa.startIndex, to: dot)
    } else {
      digits = mantissa
      point = mantissa.count
    }
    point += exponent
    if point <= 0 {
      digits = String(repeating: "0", count: -point + 1) + digits
      point = 1
    } else if point >= digits.count {
      digits += String(repeating: "0", count: point - digits.count + 1)
    }
    let i = digits.index(digits.startIndex, offsetBy: point)
    var fraction = String(digits[i...])
    while fraction.count > 1 && fraction.hasSuffix("0") { fraction.removeLast() }
    var whole = String(digits[..<i])
    while whole.count > 1 && whole.hasPrefix("0") { whole.removeFirst() }
    return sign + whole + "." + (fraction.isEmpty ? "0" : fraction)
  }

  // MARK: - Decoding

  /// Reads JSON text that ``encode(_:)`` wrote (or that a database gave back for it, with
  /// whitespace or reordered keys, as `jsonb` does) as the `FieldValue` it encoded.
  ///
  /// ```swift
  /// try SQLJSON.decode(#"{"age": 3, "weight": 4.5}"#)   // .object(["age": .int(3), "weight": .double(4.5)])
  /// ```
  /// - Throws: `RequestSetError` `.decodingFailed` when the text is not such JSON.
  public static func decode(_ text: String) throws -> FieldValue {
    var text = text
    return try text.withUTF8 { try decode(utf8: UnsafeRawBufferPointer($0)) }
  }

  /// ``decode(_:)`` over UTF-8 bytes where they lie (a database's result buffer).
  ///
  /// ```swift
  /// try bytes.withUnsafeBytes { try SQLJSON.decode(utf8: $0) }
  /// ```
  /// - Throws: `RequestSetError` `.decodingFailed` when the bytes are not such JSON.
  public static func decode(utf8 bytes: UnsafeRawBufferPointer) throws -> FieldValue {
    var parser = _JSONParser(bytes: bytes)
    do {
      parser.skipSpace()
      let value = try parser.value(depth: 0)
      parser.skipSpace()
      guard parser.at == bytes.count else { throw _JSONParseError(offset: parser.at, reason: "text after the value") }
      return value
    } catch let error as _JSONParseError {
      throw RequestSetError(
        .decodingFailed,
        "A stored row's JSON is damaged at byte \(error.offset) (\(error.reason)). "
          + "The row was not written by RequestSet, or was changed by hand; restore it from a backup or delete it.")
    }
  }

  // MARK: - Quoting

  /// `name` as a double-quoted SQL identifier (`"my ""table"""`), for table and index names.
  ///
  /// ```swift
  /// try SQLJSON.quoteIdentifier(#"odd"name"#)   // "\"odd\"\"name\""
  /// ```
  /// - Throws: `RequestSetError` `.invalidFormat` for an empty name or one holding U+0000.
  public static func quoteIdentifier(_ name: String) throws -> String {
    guard !name.isEmpty, !name.utf8.contains(0) else {
      throw RequestSetError(
        .invalidFormat,
        "A SQL name must be non-empty and hold no NUL character; got \(name.debugDescription). Pick another table name.")
    }
    return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// `text` as a single-quoted SQL string literal (`'it''s'`), for the JSON paths an index
  /// expression must spell out in its text.
  ///
  /// ```swift
  /// try SQLJSON.quoteLiteral("it's")   // "'it''s'"
  /// ```
  /// - Throws: `RequestSetError` `.invalidFormat` for text holding U+0000.
  public static func quoteLiteral(_ text: String) throws -> String {
    guard !text.utf8.contains(0) else {
      throw RequestSetError(
        .invalidFormat,
        "A SQL string literal cannot hold a NUL character; got \(text.debugDescription). Use a key without one.")
    }
    return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
  }

  /// The SQLite JSON path of a key's field names, `$."owner"."city"`, or nil when a name
  /// cannot be written in one (SQLite's quoted path names end at the next `"`, with no
  /// escape, so a name holding `"` or U+0000 has no path; the engine runs such a key in
  /// process). Bind it as a parameter, or quote it with ``quoteLiteral(_:)``.
  ///
  /// ```swift
  /// SQLJSON.jsonPath(["owner", "city"])   // #"$."owner"."city""#
  /// ```
  public static func jsonPath(_ fieldNames: [String]) -> String? {
    var path = "$"
    for name in fieldNames {
      if name.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == 0 }) { return nil }
      path += ".\"" + name + "\""
    }
    return path
  }
}

/// Where and why ``_JSONParser`` stopped.
struct _JSONParseError: Error {
  let offset: Int
  let reason: String
}

/// A JSON reader into `FieldValue`s, with tagged values untagged. `_JSONRecordReader`
/// reads records with its strings and numbers, and skips values as it reads them.
struct _JSONParser {
  let bytes: UnsafeRawBufferPointer
  var at = 0

  static let maxDepth = 512

  mutating func skipSpace() {
    while at < bytes.count {
      switch bytes[at] {
      case 0x20, 0x09, 0x0A, 0x0D: at += 1
      default: return
      }
    }
  }

  func fail(_ reason: String) -> _JSONParseError { _JSONParseError(offset: at, reason: reason) }

  mutating func expect(_ literal: StaticString) throws {
    let n = literal.utf8CodeUnitCount
    guard at + n <= bytes.count else { throw fail("expected \(literal)") }
    let p = literal.utf8Start
    for i in 0..<n where bytes[at + i] != p[i] { throw fail("expected \(literal)") }
    at += n
  }

  mutating func value(depth: Int) throws -> FieldValue {
    guard depth < Self.maxDepth else { throw fail("nested too deeply") }
    guard at < bytes.count else { throw fail("unexpected end") }
    switch bytes[at] {
    case UInt8(ascii: "n"): try expect("null"); return .null
    case UInt8(ascii: "t"): try expect("true"); return .bool(true)
    case UInt8(ascii: "f"): try expect("false"); return .bool(false)
    case UInt8(ascii: "\""): return .string(try string())
    case UInt8(ascii: "["):
      at += 1
      var items: [FieldValue] = []
      skipSpace()
      if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
        at += 1
        return .array(items)
      }
      while true {
        skipSpace()
        items.append(try value(depth: depth + 1))
        skipSpace()
        guard at < bytes.count else { throw fail("unterminated array") }
        if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
        if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
        throw fail("expected , or ]")
      }
    case UInt8(ascii: "{"):
      at += 1
      var fields: [String: FieldValue] = [:]
      skipSpace()
      if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
        at += 1
        return .object(fields)
      }
      while true {
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key") }
        let key = try string()
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("expected :") }
        at += 1
        skipSpace()
        fields[key] = try value(depth: depth + 1)
        skipSpace()
        guard at < bytes.count else { throw fail("unterminated object") }
        if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
        if bytes[at] == UInt8(ascii: "}") { at += 1; break }
        throw fail("expected , or }")
      }
      if let kind = fields[SQLJSON.tag] { return try untag(kind, fields) }
      return .object(fields)
    default:
      return try number()
    }
  }

  func untag(_ kind: FieldValue, _ fields: [String: FieldValue]) throws -> FieldValue {
    guard case .string(let kind) = kind else { throw fail("bad tag") }
    switch (kind, fields["v"], fields["u"]) {
    case ("uint", .string(let v)?, _):
      guard let u = UInt64(v) else { throw fail("bad uint") }
      return .uint(u)
    case ("double", .string(let v)?, _):
      switch v {
      case "nan": return .double(.nan)
      case "inf": return .double(.infinity)
      case "-inf": return .double(-.infinity)
      case "-0": return .double(-0.0)
      default: throw fail("bad double")
      }
    case ("decimal", .string(let v)?, _):
      guard let d = Decimal(string: v, locale: Locale(identifier: "en_US_POSIX")) else { throw fail("bad decimal") }
      return .decimal(d)
    case ("string", _, .array(let scalars)?):
      return .string(try Self.string(scalars: scalars, fail: fail("bad scalar")))
    case ("object", .array(let pairs)?, _):
      var object: [String: FieldValue] = [:]
      for pair in pairs {
        guard case .array(let kv) = pair, kv.count == 2, case .string(let key) = kv[0] else { throw fail("bad pair") }
        object[key] = kv[1]
      }
      return .object(object)
    default:
      throw fail("unknown tag \(kind)")
    }
  }

  static func string(scalars: [FieldValue], fail: @autoclosure () -> _JSONParseError) throws -> String {
    var s = String.UnicodeScalarView()
    for item in scalars {
      guard case .int(let v) = item, let u = UInt32(exactly: v), let scalar = Unicode.Scalar(u) else { throw fail() }
      s.append(scalar)
    }
    return String(s)
  }

  mutating func string() throws -> String {
    at += 1  // the opening quote
    let start = at
    // The common case: no escapes.
    while at < bytes.count {
      let b = bytes[at]
      if b == UInt8(ascii: "\"") {
        let s = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        at += 1
        return s
      }
      if b == UInt8(ascii: "\\") { break }
      at += 1
    }
    var out = Array(bytes[start..<at])
    while at < bytes.count {
      let b = bytes[at]
      if b == UInt8(ascii: "\"") {
        at += 1
        return String(decoding: out, as: UTF8.self)
      }
      if b != UInt8(ascii: "\\") {
        out.append(b)
        at += 1
        continue
      }
      at += 1
      guard at < bytes.count else { break }
      let e = bytes[at]
      at += 1
      switch e {
      case UInt8(ascii: "\""): out.append(0x22)
      case UInt8(ascii: "\\"): out.append(0x5C)
      case UInt8(ascii: "/"): out.append(0x2F)
      case UInt8(ascii: "b"): out.append(0x08)
      case UInt8(ascii: "f"): out.append(0x0C)
      case UInt8(ascii: "n"): out.append(0x0A)
      case UInt8(ascii: "r"): out.append(0x0D)
      case UInt8(ascii: "t"): out.append(0x09)
      case UInt8(ascii: "u"):
        var code = try hex4()
        if (0xD800..<0xDC00).contains(code) {
          // A surrogate pair.
          guard at + 2 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
            throw fail("lone surrogate")
          }
          at += 2
          let low = try hex4()
          guard (0xDC00..<0xE000).contains(low) else { throw fail("bad surrogate pair") }
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(code) else { throw fail("bad \\u escape") }
        out.append(contentsOf: String(Character(scalar)).utf8)
      default: throw fail("bad escape")
      }
    }
    throw fail("unterminated string")
  }

  mutating func hex4() throws -> UInt32 {
    guard at + 4 <= bytes.count else { throw fail("short \\u escape") }
    var v: UInt32 = 0
    for _ in 0..<4 {
      let b = bytes[at]
      at += 1
      switch b {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): v = v << 4 | UInt32(b - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): v = v << 4 | UInt32(b - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): v = v << 4 | UInt32(b - UInt8(ascii: "A") + 10)
      default: throw fail("bad hex digit")
      }
    }
    return v
  }

  /// Powers of ten a `Double` holds exactly (10^0 … 10^22).
  static let exactPowersOfTen: [Double] = (0...22).map { k in (0..<k).reduce(1.0) { r, _ in r * 10 } }

  /// The common numbers without building a `String`: `-?digits` with at most 18 digits
  /// (no overflow) and `-?digits.digits` with at most 15 digits in all (the digits as an
  /// integer below 2^53, divided by an exact power of ten: one correctly rounded
  /// operation, so the same `Double` as parsing the text). Nil for anything else, which
  /// the general path reads; `at` is unchanged then.
  mutating func plainNumber() -> FieldValue? {
    var i = at
    let negative = i < bytes.count && bytes[i] == UInt8(ascii: "-")
    if negative { i += 1 }
    var digits: Int64 = 0
    var count = 0
    var fraction = -1  // digits after the point, -1 without one
    scan: while i < bytes.count {
      let b = bytes[i]
      switch b {
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        count += 1
        if count > 18 { return nil }
        digits = digits &* 10 &+ Int64(b &- UInt8(ascii: "0"))
        if fraction >= 0 { fraction += 1 }
      case UInt8(ascii: ".") where fraction < 0 && count > 0:
        fraction = 0
      case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-"):
        return nil
      default:
        break scan
      }
      i += 1
    }
    guard count > 0, fraction != 0 else { return nil }
    if fraction < 0 {
      at = i
      return .int(Int(negative ? -digits : digits))
    }
    guard count <= 15 else { return nil }
    let magnitude = Double(digits) / Self.exactPowersOfTen[fraction]
    at = i
    return .double(negative ? -magnitude : magnitude)
  }

  mutating func number() throws -> FieldValue {
    if let plain = plainNumber() { return plain }
    let start = at
    var isInteger = true
    while at < bytes.count {
      let b = bytes[at]
      if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") {
        at += 1
      } else if b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E") {
        isInteger = false
        at += 1
      } else {
        break
      }
    }
    guard at > start else { throw fail("unexpected character") }
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
    if isInteger {
      if let i = Int(text) { return .int(i) }
      if let u = UInt64(text) { return .uint(u) }
    }
    guard let d = Double(text), d.isFinite || isInteger else { throw fail("bad number \(text)") }
    return .double(d)
  }
}
