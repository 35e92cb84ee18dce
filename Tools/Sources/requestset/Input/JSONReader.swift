import Foundation
import RequestSet

/// Why a JSON text does not parse: a reason a user can act on, and the byte it was found at.
struct JSONSyntaxError: Error {
  var reason: String
  var offset: Int
}

/// A small JSON parser over UTF-8 bytes, made for importing records.
///
/// Unlike `JSONSerialization` or `JSONDecoder`, it keeps what a user wrote: an object's
/// keys in the order written (``keyOrder``, when asked for), and a number's kind as
/// written: `9523` is ``FieldValue/int(_:)``, `9523.0` and `1e3` are
/// ``FieldValue/double(_:)``, an integer too large for `Int` is ``FieldValue/uint(_:)`` or
/// a double. It is also several times faster, as it builds `FieldValue`s directly.
///
/// ```swift
/// var parser = JSONReader(trackKeys: true)
/// let value = try parser.parse(bytes)   // {"id":1,"w":9523.0} → .object(["id": .int(1), "w": .double(9523.0)])
/// parser.keyOrder                       // ["id", "w"]
/// ```
struct JSONReader {
  /// Whether ``parse(_:)`` records the dotted key paths of objects in ``keyOrder``.
  var trackKeys: Bool
  /// The top-level object's keys in the order written, then nested keys as dotted paths
  /// (`owner.city`) in the order met; filled only when ``trackKeys`` is set.
  private(set) var keyOrder: [String] = []
  /// The top-level keys of the last object parsed, in the order written (always filled).
  private(set) var topLevelKeys: [String] = []
  /// The top-level object's `id` value, which ``parse(_:)`` keeps out of the object's
  /// fields (so a record's dictionary never holds it), or nil when it has none.
  private(set) var topLevelID: FieldValue?
  /// How many keys the last top-level object held.
  private var lastTopLevelCount = 0
  /// Nesting deeper than this is refused, so hostile input cannot overflow the stack.
  static let maxDepth = 64

  /// Whether ``parse(_:)`` keeps a top-level object's `id` out of its fields, in
  /// ``topLevelID`` (how records are read); other JSON keeps it.
  let separatesID: Bool

  init(trackKeys: Bool = false, separatesID: Bool = false) {
    self.trackKeys = trackKeys
    self.separatesID = separatesID
  }

  /// Parses one JSON value that fills `bytes` (leading and trailing blanks allowed).
  ///
  /// - Throws: ``JSONSyntaxError`` for anything but exactly one JSON value.
  mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) -> FieldValue {
    keyOrder.removeAll(keepingCapacity: true)
    topLevelKeys.removeAll(keepingCapacity: true)
    topLevelID = nil
    var cursor = Cursor(bytes: bytes)
    cursor.skipBlanks()
    let value = try value(&cursor, depth: 0, path: nil)
    cursor.skipBlanks()
    guard cursor.atEnd else { throw cursor.error("there is more text after the JSON value") }
    return value
  }

  /// A position in the bytes being parsed.
  struct Cursor {
    let bytes: UnsafeRawBufferPointer
    var i = 0

    var atEnd: Bool { i >= bytes.count }
    var peek: UInt8 { i < bytes.count ? bytes[i] : 0 }

    mutating func skipBlanks() {
      while i < bytes.count {
        let b = bytes[i]
        guard b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D else { return }
        i += 1
      }
    }

    func error(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(reason: reason, offset: i) }
  }

  private mutating func value(_ c: inout Cursor, depth: Int, path: String?) throws(JSONSyntaxError)
    -> FieldValue
  {
    guard !c.atEnd else { throw c.error("the JSON text ends where a value should be") }
    switch c.peek {
    case UInt8(ascii: "{"): return try object(&c, depth: depth + 1, path: path)
    case UInt8(ascii: "["):
      guard depth < Self.maxDepth else { throw c.error("it nests deeper than \(Self.maxDepth) levels") }
      c.i += 1
      var items: [FieldValue] = []
      c.skipBlanks()
      if c.peek == UInt8(ascii: "]") {
        c.i += 1
        return .array(items)
      }
      while true {
        c.skipBlanks()
        items.append(try value(&c, depth: depth + 1, path: nil))
        c.skipBlanks()
        let b = c.peek
        c.i += 1
        if b == UInt8(ascii: ",") { continue }
        if b == UInt8(ascii: "]") { return .array(items) }
        c.i -= 1
        throw c.error("an array's items must be separated by commas and end with ]")
      }
    case UInt8(ascii: "\""): return .string(try string(&c))
    case UInt8(ascii: "t"): return try literal(&c, "true", .bool(true))
    case UInt8(ascii: "f"): return try literal(&c, "false", .bool(false))
    case UInt8(ascii: "n"): return try literal(&c, "null", .null)
    default: return try number(&c)
    }
  }

  private mutating func object(_ c: inout Cursor, depth: Int, path: String?) throws(JSONSyntaxError)
    -> FieldValue
  {
    guard depth <= Self.maxDepth else { throw c.error("it nests deeper than \(Self.maxDepth) levels") }
    c.i += 1
    var fields: [String: FieldValue] = [:]
    // Lines of JSON Lines hold the same keys: size the top-level object as the last one,
    // so it is not grown (and rehashed) several times per line.
    if depth == 1 { fields.reserveCapacity(lastTopLevelCount) }
    c.skipBlanks()
    if c.peek == UInt8(ascii: "}") {
      c.i += 1
      return .object(fields)
    }
    while true {
      c.skipBlanks()
      guard c.peek == UInt8(ascii: "\"") else {
        throw c.error("an object's keys must be strings in double quotes")
      }
      let key = try string(&c)
      c.skipBlanks()
      guard c.peek == UInt8(ascii: ":") else { throw c.error("a key must be followed by a colon") }
      c.i += 1
      c.skipBlanks()
      var childPath: String? = nil
      if depth == 1 { topLevelKeys.append(key) }
      if trackKeys && (depth == 1 || path != nil) {
        let dotted =
          path.map { $0 + "." + FieldValue.key(forFieldNames: [key]) } ?? FieldValue.key(forFieldNames: [key])
        keyOrder.append(dotted)
        childPath = dotted
      }
      let item = try value(&c, depth: depth, path: childPath)
      if depth == 1 && separatesID && key == "id" {
        guard topLevelID == nil else { throw c.error("the key \"id\" occurs twice") }
        topLevelID = item
      } else if fields.updateValue(item, forKey: key) != nil {
        throw c.error("the key \"\(key)\" occurs twice")
      }
      c.skipBlanks()
      let b = c.peek
      c.i += 1
      if b == UInt8(ascii: ",") { continue }
      if b == UInt8(ascii: "}") {
        if depth == 1 { lastTopLevelCount = fields.count }
        return .object(fields)
      }
      c.i -= 1
      throw c.error("an object's fields must be separated by commas and end with }")
    }
  }

  private func literal(_ c: inout Cursor, _ word: StaticString, _ value: FieldValue) throws(JSONSyntaxError)
    -> FieldValue
  {
    let n = word.utf8CodeUnitCount
    guard c.i + n <= c.bytes.count else { throw c.error("it is not valid JSON") }
    for k in 0..<n where c.bytes[c.i + k] != word.utf8Start[k] { throw c.error("it is not valid JSON") }
    c.i += n
    return value
  }

  /// A number: an integer when written without a fraction or exponent, else a double.
  private func number(_ c: inout Cursor) throws(JSONSyntaxError) -> FieldValue {
    let start = c.i
    var negative = false
    if c.peek == UInt8(ascii: "-") {
      negative = true
      c.i += 1
    }
    var magnitude: UInt64 = 0
    var overflow = false
    let digitsStart = c.i
    while c.i < c.bytes.count, case let b = c.bytes[c.i], b >= 0x30 && b <= 0x39 {
      let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
      let (m2, o2) = m1.addingReportingOverflow(UInt64(b - 0x30))
      magnitude = m2
      overflow = overflow || o1 || o2
      c.i += 1
    }
    guard c.i > digitsStart else { throw c.error("it is not valid JSON") }
    var isInteger = true
    if c.peek == UInt8(ascii: ".") {
      isInteger = false
      c.i += 1
      let fractionStart = c.i
      while c.i < c.bytes.count, c.bytes[c.i] >= 0x30 && c.bytes[c.i] <= 0x39 { c.i += 1 }
      guard c.i > fractionStart else { throw c.error("a number's decimal point must be followed by digits") }
    }
    if c.peek == UInt8(ascii: "e") || c.peek == UInt8(ascii: "E") {
      isInteger = false
      c.i += 1
      if c.peek == UInt8(ascii: "+") || c.peek == UInt8(ascii: "-") { c.i += 1 }
      let exponentStart = c.i
      while c.i < c.bytes.count, c.bytes[c.i] >= 0x30 && c.bytes[c.i] <= 0x39 { c.i += 1 }
      guard c.i > exponentStart else { throw c.error("a number's exponent must have digits") }
    }
    if isInteger && !overflow {
      if !negative && magnitude <= UInt64(Int.max) { return .int(Int(magnitude)) }
      if negative && magnitude <= UInt64(Int.max) + 1 {
        return .int(magnitude == UInt64(Int.max) + 1 ? .min : -Int(magnitude))
      }
      if !negative { return .uint(magnitude) }
    }
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: c.bytes[start..<c.i]), as: UTF8.self)
    guard let d = Double(text), d.isFinite else { throw c.error("the number \(text) is out of range") }
    return .double(d)
  }

  /// A string, its escapes resolved; the cursor is on its opening quote.
  private func string(_ c: inout Cursor) throws(JSONSyntaxError) -> String {
    c.i += 1
    let start = c.i
    // Most strings hold no escape: take their bytes whole.
    while c.i < c.bytes.count {
      let b = c.bytes[c.i]
      if b == UInt8(ascii: "\"") {
        let s = String(decoding: UnsafeRawBufferPointer(rebasing: c.bytes[start..<c.i]), as: UTF8.self)
        c.i += 1
        return s
      }
      if b == UInt8(ascii: "\\") { break }
      if b < 0x20 {
        throw c.error("a string holds a control character; write it escaped (\\n, \\t, \\u0001)")
      }
      c.i += 1
    }
    var out = [UInt8](UnsafeRawBufferPointer(rebasing: c.bytes[start..<c.i]))
    while c.i < c.bytes.count {
      let b = c.bytes[c.i]
      c.i += 1
      switch b {
      case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
      case UInt8(ascii: "\\"):
        guard c.i < c.bytes.count else { break }
        let e = c.bytes[c.i]
        c.i += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var scalar = try hex4(&c)
          if (0xD800..<0xDC00).contains(scalar), c.i + 1 < c.bytes.count, c.bytes[c.i] == UInt8(ascii: "\\"),
            c.bytes[c.i + 1] == UInt8(ascii: "u")
          {
            c.i += 2
            let low = try hex4(&c)
            guard (0xDC00..<0xE000).contains(low) else {
              throw c.error("a \\u escape holds half a surrogate pair")
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          }
          guard let u = Unicode.Scalar(scalar) else {
            throw c.error("a \\u escape holds half a surrogate pair")
          }
          out.append(contentsOf: Array(String(Character(u)).utf8))
        default: throw c.error("a string holds an unknown escape \\\(Character(Unicode.Scalar(e)))")
        }
      default:
        if b < 0x20 {
          throw c.error("a string holds a control character; write it escaped (\\n, \\t, \\u0001)")
        }
        out.append(b)
      }
    }
    throw c.error("a string is never closed")
  }

  private func hex4(_ c: inout Cursor) throws(JSONSyntaxError) -> UInt32 {
    guard c.i + 4 <= c.bytes.count else { throw c.error("a \\u escape needs four hex digits") }
    var v: UInt32 = 0
    for _ in 0..<4 {
      let b = c.bytes[c.i]
      let d: UInt8
      switch b {
      case 0x30...0x39: d = b - 0x30
      case 0x41...0x46: d = b - 0x41 + 10
      case 0x61...0x66: d = b - 0x61 + 10
      default: throw c.error("a \\u escape needs four hex digits")
      }
      v = v << 4 | UInt32(d)
      c.i += 1
    }
    return v
  }
}
