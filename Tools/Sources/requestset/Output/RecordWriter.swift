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
      for (key, value) in fields {
        if let i = keys.firstIndex(of: key) {
          slots[i] = value
        } else {
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
