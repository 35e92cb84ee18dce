import Foundation
import RequestSet

/// JSON text for field values.
///
/// An object's keys are written in a ``KeyOrder`` (the order the input gave them; keys it
/// does not list come after, sorted). A double keeps its fraction (`9523.0`, not `9523`),
/// so it reads back as a double; a double that is NaN or infinite, which JSON cannot hold,
/// is written as `null`; a decimal is written as the number it prints as.
enum JSONText {
  /// Appends `value`; `prefix` is the dotted key of `value` itself, for ordering the keys
  /// of nested objects.
  static func append(
    _ value: FieldValue, to out: inout [UInt8], order: KeyOrder = KeyOrder(), prefix: String? = nil
  ) {
    switch value {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
    case .int(let i): appendInt(i, to: &out)
    case .uint(let u): out.append(contentsOf: String(u).utf8)
    case .double(let d): appendDouble(d, to: &out)
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
      out.append(UInt8(ascii: "{"))
      for (i, key) in order.ordered(fields.keys, under: prefix).enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        appendString(key, to: &out)
        out.append(UInt8(ascii: ":"))
        let dotted =
          prefix.map { $0 + "." + FieldValue.key(forFieldNames: [key]) }
          ?? FieldValue.key(forFieldNames: [key])
        append(fields[key]!, to: &out, order: order, prefix: dotted)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  /// A double as Swift prints it (shortest round-trip digits, `9523.0` for an integral
  /// value), or `null` for NaN and infinities.
  static func appendDouble(_ d: Double, to out: inout [UInt8]) {
    out.append(contentsOf: (d.isFinite ? d.description : "null").utf8)
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

  /// A row of named values as one object, in `columns` order (absent values left out).
  static func appendRow(
    _ row: [String: FieldValue], columns: [String], to out: inout [UInt8], order: KeyOrder
  ) {
    out.append(UInt8(ascii: "{"))
    var first = true
    for column in columns {
      guard let value = row[column] else { continue }
      if !first { out.append(UInt8(ascii: ",")) }
      first = false
      appendString(column, to: &out)
      out.append(UInt8(ascii: ":"))
      append(value, to: &out, order: order, prefix: column)
    }
    out.append(UInt8(ascii: "}"))
  }

  static func appendString(_ s: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    // Most strings need no escape: copy them whole (a native string's bytes in one pass).
    var s = s
    let plain = s.withUTF8 { bytes -> Bool in
      for b in bytes where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return false }
      out.append(contentsOf: bytes)
      return true
    }
    if plain {
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
  static func appendRecord(_ record: DynamicRecord, to out: inout [UInt8], order: KeyOrder = KeyOrder()) {
    var writer = RecordWriter(order: order)
    writer.append(record, to: &out)
  }

  static func text(_ value: FieldValue, order: KeyOrder = KeyOrder(), prefix: String? = nil) -> String {
    var out: [UInt8] = []
    append(value, to: &out, order: order, prefix: prefix)
    return String(decoding: out, as: UTF8.self)
  }
}
