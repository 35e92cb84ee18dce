/// Writing a ``DynamicRecord`` from its storage.
extension _BinaryEncoder {
  /// Encodes a dynamic record: the bytes its `encode(to:)` gives, without building them.
  ///
  /// Through `Codable` a dynamic record encodes ``DynamicRecord/value``, which copies its
  /// fields into a new dictionary with `id` added, and the object is then written with
  /// its keys sorted into a new array. This writes the same object straight from
  /// ``DynamicRecord/fields``: the fields' keys are sorted in a reused buffer and `id` is
  /// written where it sorts among them, so the bytes are the same, byte for byte (tests
  /// compare them with `allowsReflection` off, which takes the `Codable` path).
  ///
  /// ```swift
  /// // DynamicRecord(id: .int(4), fields: ["name": .string("Calf"), "age": .int(0)])
  /// // 08  <age> 80  <id> 84  <name> 06 04 "Calf"  00
  /// ```
  /// - Throws: ``RequestSetError`` when a value nests too deep or the key table is full;
  ///   `out` and `keys` are then left as they were.
  /// - Complexity: O(*f* log *f*) for *f* fields, plus their encoded size.
  func encodeDynamicRecord(_ record: DynamicRecord) throws {
    let start = out.count
    let keyMark = keys.count
    keyPosition = 0
    let fields = record.fields
    var order = dynamicOrder
    dynamicOrder = []
    defer { dynamicOrder = order }
    order.removeAll(keepingCapacity: true)
    // Keys with their positions, sorted by key: comparing them touches no value (reading
    // a field through its index would copy, so retain, its value at every comparison).
    var i = fields.startIndex
    for key in fields.keys {
      // `value` sets "id" over a field of that name: the id wins.
      if key != "id" { order.append((key, i)) }
      fields.formIndex(after: &i)
    }
    order.sort { $0.key < $1.key }
    do {
      out.append(_Tag.object)
      var idWritten = false
      for (key, position) in order {
        if !idWritten && "id" < key {
          try writeKey("id")
          try write(record.id, depth: 1)
          idWritten = true
        }
        try writeKey(key)
        try write(fields.values[position], depth: 1)
      }
      if !idWritten {
        try writeKey("id")
        try write(record.id, depth: 1)
      }
      out.append(0)
    } catch {
      out.count = start
      keys.rollback(to: keyMark)
      throw error
    }
  }
}
