import Foundation
import RequestSet

/// CSV as RFC 4180 writes it: a header line of keys, then a line per record.
///
/// A nested object's fields are dotted columns (`owner.city`); an array is its JSON text;
/// an absent or nil value is an empty cell; a string that would read back as something
/// else (a number, a Boolean, JSON, an empty cell) is quoted; a double keeps its fraction
/// (`9523.0`), so `import` reads every cell back as the value it was.
enum CSV {
  static func line(_ cells: [String]) -> String { cells.joined(separator: ",") + "\n" }

  /// The dotted leaf keys under `key` in `value` (the key itself when it is no object).
  static func leaves(of value: FieldValue?, key: String, order: KeyOrder) -> [String] {
    guard case .object(let fields)? = value, !fields.isEmpty else { return value == nil ? [] : [key] }
    return order.ordered(fields.keys, under: key).flatMap {
      leaves(of: fields[$0], key: key + "." + escape($0), order: order)
    }
  }

  static func escape(_ name: String) -> String { FieldValue.key(forFieldNames: [name]) }

  static func value(at key: String, in object: FieldValue) -> FieldValue? { object[path: key] }

  static func cell(_ value: FieldValue?) -> String {
    var out: [UInt8] = []
    appendCell(value, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends a cell's text for `value`.
  static func appendCell(_ value: FieldValue?, to out: inout [UInt8]) {
    switch value {
    case nil, .null?: return
    case .int(let i)?: JSONText.appendInt(i, to: &out)
    case .double(let d)?: JSONText.appendDouble(d, to: &out)
    case .bool(let b)?: out.append(contentsOf: (b ? "true" : "false").utf8)
    case .string(let s)?:
      if readsBackAsString(s) { appendQuoted(s, to: &out) } else { appendForceQuoted(s, to: &out) }
    case let v?: appendQuoted(JSONText.text(v), to: &out)
    }
  }

  /// Whether `s`, written unquoted, reads back as the string itself. Only text that starts
  /// like a number, a Boolean or JSON needs the full check.
  static func readsBackAsString(_ s: String) -> Bool {
    guard let first = s.utf8.first else { return false }  // an empty cell reads as absent
    switch first {
    case 0x30...0x39, UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "t"),
      UInt8(ascii: "f"),
      UInt8(ascii: "["), UInt8(ascii: "{"):
      return CSVReader.infer(s) == .string(s)
    default:
      return true
    }
  }

  static func quoted(_ s: String) -> String {
    var out: [UInt8] = []
    appendQuoted(s, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// `s` as a cell: quoted only when it holds a comma, a quote, a line break, or edge spaces.
  static func appendQuoted(_ s: String, to out: inout [UInt8]) {
    let utf8 = s.utf8
    if utf8.contains(where: {
      $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D
    })
      || utf8.first == 0x20 || utf8.last == 0x20
    {
      return appendForceQuoted(s, to: &out)
    }
    out.append(contentsOf: utf8)
  }

  static func appendForceQuoted(_ s: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for b in s.utf8 {
      if b == UInt8(ascii: "\"") { out.append(b) }
      out.append(b)
    }
    out.append(UInt8(ascii: "\""))
  }
}

/// Writes records as CSV lines under a fixed header of dotted leaf keys.
///
/// A record's top-level fields are placed into the columns by a ``FieldPlacer`` (no key
/// is hashed for records of a shape seen before); a dotted column reads into its object.
struct CSVRecordWriter {
  /// The columns: `id`, then dotted leaf keys.
  let columns: [String]
  /// Per column: its top-level field's slot in ``placer`` (-1 for `id`), and the dotted
  /// key below that field (nil for a top-level column).
  private let sources: [(slot: Int, rest: String?)]
  private var placer: FieldPlacer
  private var slots: [FieldValue?]

  init(columns: [String]) {
    self.columns = columns
    var topNames: [String] = []
    var sources: [(slot: Int, rest: String?)] = []
    for column in columns {
      let path = FieldValue.fieldNames(inKey: column)
      if path.count == 1 && path[0] == "id" {
        sources.append((-1, nil))
        continue
      }
      let top = path.first ?? column
      let slot = topNames.firstIndex(of: top) ?? { topNames.append(top); return topNames.count - 1 }()
      sources.append((slot, path.count > 1 ? FieldValue.key(forFieldNames: Array(path.dropFirst())) : nil))
    }
    self.sources = sources
    placer = FieldPlacer(names: topNames)
    slots = Array(repeating: nil, count: topNames.count)
  }

  /// The header line.
  func appendHeader(to out: inout [UInt8]) {
    for (i, column) in columns.enumerated() {
      if i > 0 { out.append(UInt8(ascii: ",")) }
      CSV.appendQuoted(column, to: &out)
    }
    out.append(0x0A)
  }

  /// Appends a record's line.
  /// - Parameter uncovered: Called with each top-level key of the record no column reads.
  mutating func append(_ record: DynamicRecord, to out: inout [UInt8], uncovered: (String) -> Void = { _ in }) {
    placer.place(record.fields, into: &slots, unknown: uncovered)
    for (i, source) in sources.enumerated() {
      if i > 0 { out.append(UInt8(ascii: ",")) }
      if source.slot < 0 {
        CSV.appendCell(record.id, to: &out)
      } else if let rest = source.rest {
        CSV.appendCell(slots[source.slot]?[path: rest], to: &out)
      } else {
        CSV.appendCell(slots[source.slot], to: &out)
      }
    }
    out.append(0x0A)
  }

  /// The CSV columns of records: `id`, then every leaf key they hold, in `order`.
  static func columns(of records: some Sequence<DynamicRecord>, order: KeyOrder) -> [String] {
    var builder = KeyOrderBuilder()
    var topLevel = Set<String>()
    var nested: [String: FieldValue] = [:]
    for record in records {
      for (key, value) in record.fields {
        topLevel.insert(key)
        if case .object(let fields) = value {
          // Merge the object's shape, so every leaf any record holds gets a column.
          if case .object(var known)? = nested[key] {
            for (k, v) in fields where known[k] == nil { known[k] = v }
            nested[key] = .object(known)
          } else {
            nested[key] = value
          }
        }
      }
    }
    builder.add(["id"])
    for key in order.ordered(topLevel) {
      if let object = nested[key] {
        builder.add(CSV.leaves(of: object, key: CSV.escape(key), order: order))
      } else {
        builder.add([CSV.escape(key)])
      }
    }
    return builder.keys
  }

  /// The leaf keys of a complete ``KeyOrder`` (those no other key extends), `id` first.
  static func columns(of order: KeyOrder) -> [String] {
    let keys = order.keys
    let parents = Set(
      keys.compactMap { key -> String? in
        let names = FieldValue.fieldNames(inKey: key)
        return names.count > 1 ? FieldValue.key(forFieldNames: Array(names.dropLast())) : nil
      })
    var builder = KeyOrderBuilder()
    builder.add(["id"])
    builder.add(keys.filter { !parents.contains($0) })
    return builder.keys
  }
}

/// Places a record's top-level fields into slots by name without hashing them.
///
/// Records of one log mostly share a few shapes, and the library decodes each shape into
/// a dictionary of one layout, so the records of a shape list their fields in one order.
/// The placer keeps, per shape met (up to ``maxShapes``), the slot of the field at each
/// position, picks the shape by the record's first field, and checks each guess with one
/// string comparison; only a field that moved is looked up (a linear search).
struct FieldPlacer {
  /// The slot names.
  let names: [String]
  /// Per shape, per position in a record's fields, the slot its field took (-1: none).
  private var shapes: [[Int]] = []
  private var current = 0
  static let maxShapes = 16

  init(names: [String]) { self.names = names }

  /// Sets `slots` to the record's values by name (nil where it has none); `unknown` gets
  /// each key no slot is named.
  mutating func place(
    _ fields: [String: FieldValue], into slots: inout [FieldValue?], unknown: (String) -> Void
  ) {
    for i in slots.indices { slots[i] = nil }
    var position = 0
    for (key, value) in fields {
      if position == 0 { pickShape(firstKey: key) }
      var slot = position < shapes[current].count ? shapes[current][position] : -1
      if slot < 0 || names[slot] != key {
        slot = names.firstIndex(of: key) ?? -1
        if position < shapes[current].count {
          shapes[current][position] = slot
        } else {
          shapes[current].append(slot)
        }
      }
      if slot >= 0 { slots[slot] = value } else { unknown(key) }
      position += 1
    }
  }

  /// Makes ``current`` the shape whose first field is `firstKey`: the current one, another
  /// known one, or a new one (or, past ``maxShapes``, the current one, corrected as it goes).
  private mutating func pickShape(firstKey key: String) {
    func starts(_ shape: [Int]) -> Bool { shape.first.map { $0 >= 0 && names[$0] == key } ?? false }
    if current < shapes.count && starts(shapes[current]) { return }
    if let i = shapes.firstIndex(where: starts) {
      current = i
    } else if shapes.count < Self.maxShapes {
      shapes.append([])
      current = shapes.count - 1
    } else if current >= shapes.count {
      current = 0
    }
  }
}
