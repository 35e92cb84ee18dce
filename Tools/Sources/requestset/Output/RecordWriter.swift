import RequestSet

/// Writes records as JSON objects, `id` first and the other keys in a ``KeyOrder``.
///
/// Records of one type hold the same few keys, so the writer keeps the ordered union of
/// the keys it has seen, each with its JSON prefix (`,"name":`) made once, and places a
/// record's fields by walking its dictionary once, with no hashing or sorting per record.
struct RecordWriter {
  let order: KeyOrder
  /// The ordered union of the keys seen so far, and each one's `,"key":` bytes.
  private var keys: [String] = []
  private var prefixes: [[UInt8]] = []
  private var slots: [FieldValue?] = []
  /// Per shape met, per position in a record's fields, the key's index in ``keys`` (see
  /// ``FieldPlacer``): records of one shape list their fields in one order, so most
  /// fields are placed by one string comparison.
  private var shapes: [[Int]] = []
  private var current = 0
  /// Past this many distinct keys a record's keys are ordered one by one instead.
  static let maxCachedKeys = 64

  init(order: KeyOrder) { self.order = order }

  mutating func append(_ record: DynamicRecord, to out: inout [UInt8]) {
    out.append(contentsOf: #"{"id":"#.utf8)
    JSONText.append(record.id, to: &out)
    let fields = record.fields
    if keys.count > Self.maxCachedKeys {
      for key in order.ordered(fields.keys) { field(key, fields[key]!, to: &out) }
    } else {
      for i in slots.indices { slots[i] = nil }
      var position = 0
      for (key, value) in fields {
        defer { position += 1 }
        if position == 0 { pickShape(firstKey: key) }
        let guess = position < shapes[current].count ? shapes[current][position] : -1
        if guess >= 0, keys[guess] == key {
          slots[guess] = value
        } else if let i = keys.firstIndex(of: key) {
          slots[i] = value
          if position < shapes[current].count { shapes[current][position] = i } else { shapes[current].append(i) }
        } else {
          // Indices after the new key move: forget every shape's guesses.
          for s in shapes.indices { shapes[s].removeAll() }
          let i = keys.firstIndex { order.precedes(key, $0) } ?? keys.count
          keys.insert(key, at: i)
          var prefix: [UInt8] = [UInt8(ascii: ",")]
          JSONText.appendString(key, to: &prefix)
          prefix.append(UInt8(ascii: ":"))
          prefixes.insert(prefix, at: i)
          slots.insert(value, at: i)
        }
      }
      for i in slots.indices {
        guard let value = slots[i] else { continue }
        out.append(contentsOf: prefixes[i])
        appendValue(value, key: keys[i], to: &out)
      }
    }
    out.append(UInt8(ascii: "}"))
  }

  /// Makes ``current`` the shape whose first field is `key` (see ``FieldPlacer``).
  private mutating func pickShape(firstKey key: String) {
    func starts(_ shape: [Int]) -> Bool { shape.first.map { $0 >= 0 && keys[$0] == key } ?? false }
    if current < shapes.count && starts(shapes[current]) { return }
    if let i = shapes.firstIndex(where: starts) {
      current = i
    } else if let empty = shapes.firstIndex(where: \.isEmpty) {
      current = empty
    } else if shapes.count < FieldPlacer.maxShapes {
      shapes.append([])
      current = shapes.count - 1
    } else {
      current = 0
    }
  }

  private func appendValue(_ value: FieldValue, key: String, to out: inout [UInt8]) {
    if case .object = value {
      JSONText.append(value, to: &out, order: order, prefix: FieldValue.key(forFieldNames: [key]))
    } else {
      JSONText.append(value, to: &out)
    }
  }

  private func field(_ key: String, _ value: FieldValue, to out: inout [UInt8]) {
    out.append(UInt8(ascii: ","))
    JSONText.appendString(key, to: &out)
    out.append(UInt8(ascii: ":"))
    appendValue(value, key: key, to: &out)
  }
}
