/// The keys and kinds of value that a log's live records hold, counted straight from their
/// encoded bytes: the `keys` of a ``LogInspection``.
///
/// Inspecting used to build a ``FieldValue`` tree for every record to list its keys; at a
/// million records that was most of `requestset info`. This walks the same bytes, checks
/// them exactly as ``_BinaryValue/read(_:names:depth:)`` does (the same records are
/// unreadable either way), and counts top-level keys by key id, so a record costs no
/// allocation and no hashing unless it holds nested objects.
///
/// ```swift
/// var census = _KeyCensus(names: index.keys.names)
/// for location in index.liveLocations { census.count(recordBytes(location)) }   // false: unreadable
/// census.keys   // [Key(key: "age", kinds: ["int"], recordCount: 3), ...]
/// ```
///
/// A record whose objects hold one key twice (no writer of this library makes one) is read
/// through the value tree instead, which keeps the last value of such a key, so that the
/// report is the same as before in every case.
struct _KeyCensus {
  /// The kinds of value a report names, in the order of their bits.
  private static let kindNames = [
    "null", "bool", "int", "uint", "double", "decimal", "string", "array", "object",
  ]
  private static let null: UInt16 = 1 << 0
  private static let bool: UInt16 = 1 << 1
  private static let int: UInt16 = 1 << 2
  private static let uint: UInt16 = 1 << 3
  private static let double: UInt16 = 1 << 4
  private static let decimal: UInt16 = 1 << 5
  private static let string: UInt16 = 1 << 6
  private static let array: UInt16 = 1 << 7
  private static let object: UInt16 = 1 << 8

  private let names: [String?]
  /// Per top-level key id: the kinds seen and how many records hold it.
  private var topKinds: [UInt16]
  private var topCounts: [Int]
  /// Per dotted key below the top level: the kinds seen and how many records hold it.
  private var nestedKinds: [String: UInt16] = [:]
  private var nestedCounts: [String: Int] = [:]

  /// The current record's findings, kept apart until the whole record has read well.
  private var recordTop: [(id: Int, kind: UInt16)] = []
  private var recordNested: [(key: String, kind: UInt16)] = []
  /// Per key id, the number of the object that last held it: a key met twice in one
  /// object is a duplicate. Objects are numbered from 1 across the whole census.
  private var lastObject: [Int]
  private var objectNumber = 0
  private var duplicate = false

  /// A census of records whose key ids refer to `names`.
  init(names: [String?]) {
    self.names = names
    topKinds = Array(repeating: 0, count: names.count)
    topCounts = Array(repeating: 0, count: names.count)
    lastObject = Array(repeating: 0, count: names.count)
  }

  /// Counts the keys of one record's payload (its id value, then its record value).
  ///
  /// - Returns: False, counting nothing, when the payload does not read as a value (the
  ///   record is unreadable).
  /// - Complexity: O(*r*) for *r* bytes.
  mutating func count(_ payload: UnsafeRawBufferPointer) -> Bool {
    recordTop.removeAll(keepingCapacity: true)
    recordNested.removeAll(keepingCapacity: true)
    duplicate = false
    var r = _ByteReader(payload)
    do throws(_CodecError) {
      try _BinaryValue.skip(&r)
      _ = try walk(&r, depth: 0, key: nil)
    } catch {
      return false
    }
    if duplicate { return countThroughValue(payload) }
    for (id, kind) in recordTop {
      topKinds[id] |= kind
      topCounts[id] += 1
    }
    if !recordNested.isEmpty {
      var held = Set<String>()
      for (key, kind) in recordNested {
        nestedKinds[key, default: 0] |= kind
        if held.insert(key).inserted { nestedCounts[key, default: 0] += 1 }
      }
    }
    return true
  }

  /// Every key counted, sorted by key, as a report lists them.
  var keys: [LogInspection.Key] {
    var kinds = nestedKinds
    var counts = nestedCounts
    for id in topCounts.indices where topCounts[id] > 0 {
      guard let name = names[id] else { continue }
      let key = _DottedKey.join(nil, name)
      kinds[key, default: 0] |= topKinds[id]
      counts[key, default: 0] += topCounts[id]
    }
    return counts.keys.sorted().map { key in
      let bits = kinds[key, default: 0]
      let names = Self.kindNames.indices.filter { bits & (1 << $0) != 0 }.map { Self.kindNames[$0] }
      return LogInspection.Key(key: key, kinds: names.sorted(), recordCount: counts[key]!)
    }
  }

  /// Reads one value, checking it as `_BinaryValue.read` does, and notes the keys of the
  /// objects on the way down from the record (not those inside arrays, which a report
  /// does not list).
  ///
  /// - Parameters:
  ///   - depth: The value's nesting, as `read` counts it.
  ///   - key: The dotted key of the value, when its keys are listed: nil for the record
  ///     itself and for values inside arrays (see `listed`).
  ///   - listed: Whether the value's own keys are listed.
  /// - Returns: The value's kind bit.
  private mutating func walk(_ r: inout _ByteReader, depth: Int, key: String?, listed: Bool = true)
    throws(_CodecError) -> UInt16
  {
    let start = r.position
    let tag = try r.readByte()
    if tag >= _Tag.smallInt { return Self.int }
    switch tag {
    case _Tag.null: return Self.null
    case _Tag.false, _Tag.true: return Self.bool
    case _Tag.int:
      _ = try r.readVarint()
      return Self.int
    case _Tag.uint: return Int(exactly: try r.readVarint()) == nil ? Self.uint : Self.int
    case _Tag.double:
      _ = try r.readLittleEndian(UInt64.self)
      return Self.double
    case _Tag.string:
      _ = try r.readBytes(try r.readLength(max: r.remaining))
      return Self.string
    case _Tag.decimal:
      _ = try _BinaryValue.readDecimal(&r)
      return Self.decimal
    case _Tag.array:
      guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
      while try r.peekByte() != _Tag.arrayEnd { _ = try walk(&r, depth: depth + 1, key: nil, listed: false) }
      r.position += 1
      return Self.array
    case _Tag.object:
      guard depth < _Tag.maxDepth else { throw r.error("values nest deeper than \(_Tag.maxDepth) levels") }
      objectNumber += 1
      let number = objectNumber
      while true {
        guard let entry = try r.readKey(names: names) else { break }
        let id = entry.id, name = entry.name
        if listed {
          if lastObject[id] == number { duplicate = true }
          lastObject[id] = number
        }
        if listed && depth == 0 {
          let kind = try walkField(&r, depth: depth + 1, key: _DottedKey.join(nil, name))
          recordTop.append((id, kind))
        } else if listed {
          let dotted = _DottedKey.join(key, name)
          let kind = try walkField(&r, depth: depth + 1, key: dotted)
          recordNested.append((dotted, kind))
        } else {
          _ = try walk(&r, depth: depth + 1, key: nil, listed: false)
        }
      }
      return Self.object
    default:
      throw r.error("unknown value tag 0x\(String(tag, radix: 16))", at: start)
    }
  }

  /// Reads a listed field's value: its own keys are listed only when it is an object, and
  /// its dotted key is built only then for a top-level field.
  @inline(__always)
  private mutating func walkField(_ r: inout _ByteReader, depth: Int, key: @autoclosure () -> String)
    throws(_CodecError) -> UInt16
  {
    if r.position < r.end, r.base[r.position] == _Tag.object {
      return try walk(&r, depth: depth, key: key())
    }
    return try walk(&r, depth: depth, key: nil, listed: false)
  }

  /// Counts a record through its ``FieldValue`` tree (a record with a duplicate key).
  private mutating func countThroughValue(_ payload: UnsafeRawBufferPointer) -> Bool {
    var r = _ByteReader(payload)
    guard (try? _BinaryValue.skip(&r)) != nil, let value = try? _BinaryValue.read(&r, names: names) else {
      return false
    }
    var held = Set<String>()
    var stack: [(FieldValue, String?)] = [(value, nil)]
    while let (value, prefix) = stack.popLast() {
      guard case .object(let fields) = value else { continue }
      for (name, v) in fields {
        let key = _DottedKey.join(prefix, name)
        nestedKinds[key, default: 0] |= Self.kind(of: v)
        held.insert(key)
        stack.append((v, key))
      }
    }
    for key in held { nestedCounts[key, default: 0] += 1 }
    return true
  }

  /// The kind bit of a value in the tree.
  private static func kind(of value: FieldValue) -> UInt16 {
    switch value {
    case .null: return null
    case .bool: return bool
    case .int: return int
    case .uint: return uint
    case .double: return double
    case .decimal: return decimal
    case .string: return string
    case .array: return array
    case .object: return object
    }
  }
}
