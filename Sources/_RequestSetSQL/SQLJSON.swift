import Foundation
import RequestSet

// TEMPORARY stand-in for the lead's SQLJSON.swift (same API), so the SQLite store builds
// before it lands on main. Replaced by main's file at the merge.
public enum SQLJSON {
  public static func encode(_ value: FieldValue) -> (text: String, plain: Bool) {
    var out = ""
    var plain = true
    write(value, &out, &plain)
    return (out, plain)
  }

  private static func write(_ value: FieldValue, _ out: inout String, _ plain: inout Bool) {
    switch value {
    case .null: out += "null"
    case .bool(let b): out += b ? "true" : "false"
    case .int(let i): out += String(i)
    case .uint(let u):
      if u <= UInt64(Int64.max) { out += String(u) } else { tag("uint", String(u), &out, &plain) }
    case .double(let d):
      let s = String(d)
      if d.isFinite && !s.contains("e") { out += s.contains(".") ? s : s + ".0" } else { tag("double", s, &out, &plain) }
    case .decimal(let d): tag("decimal", d.description, &out, &plain)
    case .string(let s):
      if s.utf8.contains(0) || s.precomposedStringWithCanonicalMapping.unicodeScalars.elementsEqual(s.unicodeScalars) == false {
        tag("string", s, &out, &plain)
      } else {
        quote(s, &out)
      }
    case .array(let a):
      out += "["
      for (i, e) in a.enumerated() {
        if i > 0 { out += "," }
        write(e, &out, &plain)
      }
      out += "]"
    case .object(let o):
      out += "{"
      for (i, key) in o.keys.sorted().enumerated() {
        if i > 0 { out += "," }
        if key.utf8.contains(0) || key == "$rs" { plain = false }
        quote(key, &out)
        out += ":"
        write(o[key]!, &out, &plain)
      }
      out += "}"
    }
  }

  private static func tag(_ kind: String, _ text: String, _ out: inout String, _ plain: inout Bool) {
    plain = false
    out += "{\"$rs\":\"\(kind)\",\"v\":"
    quote(text, &out)
    out += "}"
  }

  private static func quote(_ s: String, _ out: inout String) {
    out += "\""
    for u in s.unicodeScalars {
      switch u {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
      }
    }
    out += "\""
  }

  public static func decode(_ text: String) throws -> FieldValue {
    var p = Parser(bytes: Array(text.utf8))
    let v = try p.value()
    return v
  }

  public static func quoteIdentifier(_ name: String) throws -> String {
    if name.isEmpty || name.utf8.contains(0) {
      throw RequestSetError(.invalidFormat, "A SQL name is empty or holds U+0000. Use another name.")
    }
    return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  public static func jsonPath(_ fieldNames: [String]) -> String {
    "$" + fieldNames.map { ".\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }.joined()
  }

  private struct Parser {
    let bytes: [UInt8]
    var i = 0

    func fail() -> RequestSetError { RequestSetError(.decodingFailed, "Bad JSON in a SQL row at \(i).") }

    mutating func skip() { while i < bytes.count, [9, 10, 13, 32].contains(bytes[i]) { i += 1 } }

    mutating func value() throws -> FieldValue {
      skip()
      guard i < bytes.count else { throw fail() }
      switch bytes[i] {
      case UInt8(ascii: "n"): i += 4; return .null
      case UInt8(ascii: "t"): i += 4; return .bool(true)
      case UInt8(ascii: "f"): i += 5; return .bool(false)
      case UInt8(ascii: "\""): return .string(try string())
      case UInt8(ascii: "["):
        i += 1
        var a: [FieldValue] = []
        skip()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
        while true {
          a.append(try value())
          skip()
          guard i < bytes.count else { throw fail() }
          if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
          if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
          throw fail()
        }
      case UInt8(ascii: "{"):
        i += 1
        var o: [String: FieldValue] = [:]
        skip()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
        while true {
          skip()
          let k = try string()
          skip()
          guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail() }
          i += 1
          o[k] = try value()
          skip()
          guard i < bytes.count else { throw fail() }
          if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
          if bytes[i] == UInt8(ascii: "}") { i += 1; break }
          throw fail()
        }
        if case .string(let kind)? = o["$rs"], case .string(let v)? = o["v"], o.count == 2 {
          switch kind {
          case "uint": return .uint(UInt64(v) ?? 0)
          case "double": return .double(Double(v) ?? .nan)
          case "decimal": return .decimal(Decimal(string: v) ?? 0)
          case "string": return .string(v)
          default: break
          }
        }
        return .object(o)
      default:
        let start = i
        while i < bytes.count, !",]} \n\r\t".utf8.contains(bytes[i]) { i += 1 }
        let s = String(decoding: bytes[start..<i], as: UTF8.self)
        if !s.contains(".") && !s.contains("e") && !s.contains("E"), let n = Int(s) { return .int(n) }
        if let d = Double(s) { return .double(d) }
        throw fail()
      }
    }

    mutating func string() throws -> String {
      guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail() }
      i += 1
      var scalars = String.UnicodeScalarView()
      var raw: [UInt8] = []
      func flush() {
        scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
        raw = []
      }
      while i < bytes.count {
        let b = bytes[i]
        if b == UInt8(ascii: "\"") { i += 1; flush(); return String(scalars) }
        if b == UInt8(ascii: "\\") {
          flush()
          i += 1
          guard i < bytes.count else { throw fail() }
          let e = bytes[i]
          i += 1
          switch e {
          case UInt8(ascii: "n"): scalars.append("\n")
          case UInt8(ascii: "r"): scalars.append("\r")
          case UInt8(ascii: "t"): scalars.append("\t")
          case UInt8(ascii: "b"): scalars.append("\u{8}")
          case UInt8(ascii: "f"): scalars.append("\u{c}")
          case UInt8(ascii: "u"):
            var code = try hex4()
            if (0xD800..<0xDC00).contains(code), i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\") {
              i += 2
              let low = try hex4()
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            }
            scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
          default: scalars.append(Unicode.Scalar(e))
          }
          continue
        }
        raw.append(b)
        i += 1
      }
      throw fail()
    }

    mutating func hex4() throws -> UInt32 {
      guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16) else {
        throw fail()
      }
      i += 4
      return v
    }
  }
}
