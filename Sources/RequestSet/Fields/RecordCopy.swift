/// Class records and the stores that hold them.
///
/// A class record is a reference: a store that kept the caller's object would see every
/// later change the caller makes to it, while the store's encoded fields (which string keys
/// and indexes read) keep the values written. Key-path and string-key filters would then
/// disagree. So a class record is never shared: a store, or a request set over an array,
/// keeps a copy decoded from the record's encoded fields when it is written, and hands out
/// a fresh copy each time it is read, as a `LogStore` does by decoding. A struct is copied
/// by value anyway and takes none of this.
enum _RecordCopy {
  /// Whether records of type `T` are copied in and out: `T` is a class and `Codable`.
  static func applies<T>(to type: T.Type) -> Bool {
    T.self is AnyClass && T.self is any Decodable.Type && T.self is any Encodable.Type
  }

  /// A copy of `record` that shares nothing with it, decoded from `fields` (its encoded
  /// fields) or, when they are not given, from a fresh encoding; `record` itself when
  /// ``applies(to:)`` does not.
  ///
  /// - Throws: ``RequestSetError`` `.decodingFailed` when the type's `init(from:)` cannot
  ///   read back what its `encode(to:)` wrote; `.encodingFailed` when encoding fails.
  static func copy<T>(_ record: T, fields: FieldValue? = nil) throws -> T {
    guard applies(to: T.self), let decodable = T.self as? any Decodable.Type else { return record }
    let encoded: FieldValue
    if let fields {
      encoded = fields
    } else {
      guard let encodable = record as? any Encodable else { return record }
      encoded = try _FieldEncoder.encode(encodable)
    }
    func decode<D: Decodable>(_ type: D.Type) throws -> T? { try _FieldDecoder.decode(D.self, from: encoded) as? T }
    do {
      if let made = try decode(decodable) { return made }
    } catch {
      throw RequestSetError(
        .decodingFailed,
        "\(T.self) is a class, so a store keeps its own copy of each record, decoded from what encode(to:) "
          + "writes, and the caller's object stays the caller's. init(from:) could not read that back: \(error). "
          + "Make init(from:) accept everything encode(to:) writes, or make \(T.self) a struct.",
        underlying: error)
    }
    return record
  }
}

extension _EncodedRow {
  /// The row as one encoded record (`.object`).
  var object: FieldValue { .object(Dictionary(fields, uniquingKeysWith: { _, last in last })) }
}

/// Struct records whose encoding leaves a stored property out (one missing from
/// `CodingKeys`, or skipped by a custom `encode(to:)`).
///
/// A `LogStore` reads such a property back as whatever `init(from:)` gives it (its
/// default), while a struct kept in memory would hold the caller's value: a key path to it,
/// or to a computed property that reads it, would answer one way on a `MemoryStore` and
/// another on a `LogStore`. So once the first records of a type show that decoding their
/// encoded fields loses a stored property's value, every store and array set keeps each
/// record of the type as it decodes back, as a `LogStore` reads it, and all answer alike.
extension _RecordCopy {
  /// Per struct type: whether a record lost a stored value through its encoding, and how
  /// many records were checked.
  fileprivate static let _lossy = _Lock<[ObjectIdentifier: (lossy: Bool, checked: Int)]>([:])

  /// How many records of a type are checked before the answer is final.
  static let checkLimit = 8

  /// `record` as a store keeps it: a copy for a class (see ``copy(_:fields:)``); for a
  /// struct whose type's first records lose a stored property's value through their
  /// encoding, the record as its encoded fields decode back; `record` itself otherwise.
  ///
  /// - Throws: ``RequestSetError`` `.decodingFailed` when a class's `init(from:)` cannot
  ///   read back what its `encode(to:)` wrote.
  static func kept<T>(_ record: T, row: _EncodedRow) throws -> T {
    if applies(to: T.self) { return try copy(record, fields: row.object) }
    guard !(T.self is AnyClass), let decodable = T.self as? any Decodable.Type else { return record }
    let id = ObjectIdentifier(T.self)
    let known = _lossy.withLock { $0[id] }
    if let known, !known.lossy && known.checked >= checkLimit { return record }
    let fields = row.object
    func decode<D: Decodable>(_ type: D.Type) -> T? { try? _FieldDecoder.decode(D.self, from: fields) as? T }
    guard let back = decode(decodable) else { return record }
    if known?.lossy == true { return back }
    let lost = _differs(record, back, depth: 0)
    _lossy.withLock { table in
      let old = table[id] ?? (false, 0)
      table[id] = (old.lossy || lost, old.checked + 1)
    }
    return lost ? back : record
  }

  /// Whether two values differ in a stored property. A value that encodes as a scalar
  /// (a number, a string, a `Date`, a `Decimal`) is compared by its encoded form; any
  /// other is compared property by property (through nested structs, classes, optionals
  /// and arrays), so a property an inner `encode(to:)` drops is found too. Dictionaries
  /// and sets are compared by their encoded form, whose order does not matter; values
  /// that do not encode are not compared.
  private static func _differs(_ a: Any, _ b: Any, depth: Int) -> Bool {
    let ea = (a as? any Encodable).flatMap { try? _FieldEncoder.encode($0) }
    let eb = (b as? any Encodable).flatMap { try? _FieldEncoder.encode($0) }
    func encodedDiffer() -> Bool {
      guard let ea, let eb else { return false }
      return !(ea == eb || (_Numbers.isNaN(ea) && _Numbers.isNaN(eb)))
    }
    if let ea, ea._kind != .object && ea._kind != .array { return encodedDiffer() }
    let ma = Mirror(reflecting: a)
    let mb = Mirror(reflecting: b)
    if depth >= 8 || ma.displayStyle == .dictionary || ma.displayStyle == .set || ma.children.isEmpty
      || ma.children.count != mb.children.count
    {
      return encodedDiffer()
    }
    for (ca, cb) in zip(ma.children, mb.children) where _differs(ca.value, cb.value, depth: depth + 1) {
      return true
    }
    return false
  }
}

extension _RecordCopy {
  /// Whether the first records of struct type `T` lost a stored value through their
  /// encoding (see ``kept(_:row:)``).
  static func isLossy<T>(_ type: T.Type) -> Bool {
    _lossy.withLock { $0[ObjectIdentifier(T.self)]?.lossy ?? false }
  }

  /// What the checks of struct type `T` found so far, nil before the first.
  fileprivate static func _lossyState<T>(_ type: T.Type) -> (lossy: Bool, checked: Int)? {
    _lossy.withLock { $0[ObjectIdentifier(T.self)] }
  }
}

extension _RecordCopy {
  /// Whether ``kept(_:row:)`` needs a record's encoded fields: for a class, for a struct
  /// type whose first records lost a stored value through their encoding, and while the
  /// first records of a `Decodable` struct type are being checked. Once false for a type,
  /// it stays false: a store then keeps records without encoding them for this rule.
  static func needsRow<T>(_ type: T.Type) -> Bool {
    if applies(to: T.self) { return true }
    guard !(T.self is AnyClass), T.self is any Decodable.Type else { return false }
    guard let known = _lossyState(T.self) else { return true }
    return known.lossy || known.checked < checkLimit
  }
}
