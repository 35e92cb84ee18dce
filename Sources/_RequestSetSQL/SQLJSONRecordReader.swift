import Foundation
import RequestSet

// Reading a record straight from a row's JSON.
//
// `SQLJSON.decode(utf8:)` builds a `FieldValue` tree (a dictionary per object, a string
// per key and value), and `storedRecord(_:in:)` decodes the record from the tree: for a
// small record most of a fetch's time per row went to building the tree and looking keys
// up in its dictionaries. `_JSONRecordReader` is a `Decoder` over the UTF-8 bytes: a keyed
// container notes where each member's key and value lie, and a field is parsed from the
// bytes when the record asks for it, by the tree's own string and number readers.
//
// It answers only what it answers exactly as the tree's decoder does. Every call either
// gives what the same call on the tree gives, or marks the document failed and throws;
// a record is taken only when no call failed (a type may catch an error and go on) and
// the whole text parses as the tree's reader parses it. Anything else is decoded again
// through the tree, which gives the record or the `.decodingFailed` error naming the
// record's id and key: tagged values (NaN, `Decimal`, text that is not NFC, …), keys
// with escapes, a key the type asks for and the row lacks, a kind the type does not take,
// and JSON that does not parse. Keys are compared by bytes when both are ASCII, else as
// `String`s (canonical equivalence, as the tree's dictionary compares them); of equal
// keys the last one counts, as in the dictionary.

extension SQLJSON {
  /// The stored record a row's JSON body holds, decoded as `type` from its UTF-8 bytes:
  /// what ``decode(utf8:)`` then `storedRecord(_:in:)` give, without the `FieldValue`
  /// tree between them.
  ///
  /// The bytes are read directly where that gives exactly the tree's answer, and through
  /// the tree otherwise (tagged values, escaped keys, a record that does not decode), so
  /// the records and errors are always those of the tree.
  ///
  /// ```swift
  /// let doc = try statement.withText(0) { try SQLJSON.decodeRecord(Doc.self, utf8: $0, in: "the table docs") }
  /// ```
  /// - Parameters:
  ///   - type: The record type.
  ///   - bytes: The row's JSON text as UTF-8; read during the call only.
  ///   - place: Where the row is, as in "the table animals of zoo.sqlite".
  /// - Returns: The record.
  /// - Throws: `RequestSetError` `.decodingFailed` when the bytes are not a stored
  ///   record's JSON, or the record does not decode as `type` (naming its id and key).
  /// - Complexity: O(*n*) in the bytes, plus O(*k*) per field asked for in an object of
  ///   *k* members.
  public static func decodeRecord<R: Decodable>(
    _ type: R.Type, utf8 bytes: UnsafeRawBufferPointer, in place: @autoclosure () -> String
  ) throws -> R {
    if let record = _JSONRecordReader.read(type, bytes) { return record }
    return try decode(utf8: bytes).storedRecord(type, in: place())
  }

  /// ``decodeRecord(_:utf8:in:)`` over a `String`'s UTF-8.
  ///
  /// ```swift
  /// let doc = try SQLJSON.decodeRecord(Doc.self, text: body, in: "the table docs")
  /// ```
  /// - Throws: What ``decodeRecord(_:utf8:in:)`` throws.
  public static func decodeRecord<R: Decodable>(
    _ type: R.Type, text: String, in place: @autoclosure () -> String
  ) throws -> R {
    var text = text
    return try text.withUTF8 { try decodeRecord(type, utf8: UnsafeRawBufferPointer($0), in: place()) }
  }

  /// The record the direct reader gives for `bytes`, or nil where it leaves the record to
  /// the tree: for the differential tests, which hold it beside ``decode(utf8:)`` and
  /// `storedRecord(_:in:)`.
  ///
  /// ```swift
  /// SQLJSON._readDirectly(Doc.self, utf8: bytes)   // nil for a body holding NaN
  /// ```
  public static func _readDirectly<R: Decodable>(_ type: R.Type, utf8 bytes: UnsafeRawBufferPointer) -> R? {
    _JSONRecordReader.read(type, bytes)
  }
}

/// Decodes a record from JSON bytes without a `FieldValue` tree (see the top of this file).
enum _JSONRecordReader {
  /// The record, or nil when some call failed or the text does not parse.
  static func read<R: Decodable>(_ type: R.Type, _ bytes: UnsafeRawBufferPointer) -> R? {
    let document = _JSONDocument(copying: bytes)
    var parser = _JSONParser(bytes: document.bytes)
    parser.skipSpace()
    document.root = parser.at
    guard let record = try? R(from: _JSONValueDecoder(document: document, at: parser.at, codingPath: [])),
      !document.failed
    else { return nil }
    // The whole text must parse: a container made at the root checked it; else check now.
    if let end = document.rootEnd {
      parser.at = end
    } else {
      do { try parser.skip(depth: 0) } catch { return nil }
    }
    parser.skipSpace()
    return parser.at == document.bytes.count ? record : nil
  }
}

/// A failed call of the direct reader: the record is read through the tree instead.
struct _JSONUnanswered: Error {}

/// One object member: where its key's bytes (between the quotes) and its value lie.
struct _JSONMember {
  var keyStart: Int
  var keyEnd: Int
  /// Whether the key is ASCII (compared by bytes).
  var ascii: Bool
  /// The value's first byte.
  var value: Int
}

/// A row's JSON bytes, copied so that a decoder a type keeps stays valid, and whether a
/// call failed.
final class _JSONDocument {
  let bytes: UnsafeRawBufferPointer
  private let storage: UnsafeMutableRawBufferPointer
  /// Set by every call that throws (see ``fail()``).
  var failed = false
  /// The root value's first byte, and its end once a container made there checked it.
  var root = 0
  var rootEnd: Int?

  init(copying source: UnsafeRawBufferPointer) {
    storage = .allocate(byteCount: max(source.count, 1), alignment: 1)
    if source.count > 0 { storage.copyMemory(from: source) }
    bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[0..<source.count])
  }

  deinit { storage.deallocate() }

  /// Marks the document failed: the record is read through the tree.
  func fail() -> _JSONUnanswered {
    failed = true
    return _JSONUnanswered()
  }

  private func parser(at: Int) -> _JSONParser { _JSONParser(bytes: bytes, at: at) }

  /// The members of the object at `at`, its whole text checked.
  func members(ofObjectAt at: Int) throws -> [_JSONMember] {
    guard at < bytes.count, bytes[at] == UInt8(ascii: "{") else { throw fail() }
    var p = parser(at: at)
    do {
      let members = try p.object(depth: 0, keeping: true)
      if at == root { rootEnd = p.at }
      return members
    } catch {
      throw fail()
    }
  }

  /// Where each element of the array at `at` begins, its whole text checked.
  func elements(ofArrayAt at: Int) throws -> [Int] {
    guard at < bytes.count, bytes[at] == UInt8(ascii: "[") else { throw fail() }
    var p = parser(at: at)
    do {
      let elements = try p.array(depth: 0)
      if at == root { rootEnd = p.at }
      return elements
    } catch {
      throw fail()
    }
  }

  /// The value of the last member whose key is `name`, as the tree's dictionary finds it.
  func find(_ name: String, in members: [_JSONMember]) -> Int? {
    guard !members.isEmpty, let base = bytes.baseAddress else { return nil }
    var key = name
    return key.withUTF8 { key -> Int? in
      var ascii = true
      for b in key where b >= 0x80 {
        ascii = false
        break
      }
      var i = members.count
      while i > 0 {
        i -= 1
        let m = members[i]
        if ascii && m.ascii {
          let count = m.keyEnd - m.keyStart
          guard count == key.count else { continue }
          if count == 0 || memcmp(base + m.keyStart, key.baseAddress!, count) == 0 { return m.value }
        } else if keyString(m) == name {
          return m.value
        }
      }
      return nil
    }
  }

  /// A member's key as the tree's reader makes it.
  func keyString(_ m: _JSONMember) -> String {
    String(decoding: UnsafeRawBufferPointer(rebasing: bytes[m.keyStart..<m.keyEnd]), as: UTF8.self)
  }

  func isNull(_ at: Int) -> Bool { at < bytes.count && bytes[at] == UInt8(ascii: "n") }

  func string(_ at: Int) throws -> String {
    guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let base = bytes.baseAddress else {
      throw fail()
    }
    // The common case, found with memchr: no escape before the closing quote. The
    // string is then the bytes between the quotes, as the tree's reader makes it.
    if let end = bytes._quoteWithoutEscape(after: at) {
      return String(
        decoding: UnsafeRawBufferPointer(start: base + at + 1, count: end - at - 1), as: UTF8.self)
    }
    var p = parser(at: at)
    do { return try p.string() } catch { throw fail() }
  }

  func bool(_ at: Int) throws -> Bool {
    guard at < bytes.count else { throw fail() }
    switch bytes[at] {
    case UInt8(ascii: "t"): return true
    case UInt8(ascii: "f"): return false
    default: throw fail()
    }
  }

  /// The number at `at` as the tree's reader reads it (`.int`, `.uint` or `.double`).
  func number(_ at: Int) throws -> FieldValue {
    guard at < bytes.count else { throw fail() }
    switch bytes[at] {
    case UInt8(ascii: "n"), UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "\""), UInt8(ascii: "["),
      UInt8(ascii: "{"):
      throw fail()
    default:
      var p = parser(at: at)
      do { return try p.number() } catch { throw fail() }
    }
  }

  /// An integer field, converted as the tree's decoder converts a number.
  func integer<I: FixedWidthInteger>(_: I.Type, _ at: Int) throws -> I {
    switch try number(at) {
    case .int(let i): if let v = I(exactly: i) { return v }
    case .uint(let u): if let v = I(exactly: u) { return v }
    case .double(let d): if let v = I(exactly: d) { return v }
    default: break
    }
    throw fail()
  }

  func double(_ at: Int) throws -> Double {
    switch try number(at) {
    case .double(let d): return d
    case .int(let i): return Double(i)
    case .uint(let u): return Double(u)
    default: throw fail()
    }
  }

  /// The value at `at` as a `FieldValue` tree (for the types the tree's decoder reads
  /// from the value itself: `Decimal`, `URL`, `FieldValue`).
  func tree(_ at: Int) throws -> FieldValue {
    var p = parser(at: at)
    do { return try p.value(depth: 0) } catch { throw fail() }
  }

  /// A field of type `T` at `at`: the scalars the tree's decoder reads itself are read
  /// here alike; any other type decodes itself from a decoder at `at`.
  func decode<T: Decodable>(_ type: T.Type, at: Int, path: @autoclosure () -> [any CodingKey]) throws -> T {
    if T.self == String.self { return try string(at) as! T }
    if T.self == Int.self { return try integer(Int.self, at) as! T }
    if T.self == Double.self { return try double(at) as! T }
    if T.self == Bool.self { return try bool(at) as! T }
    if T.self == Float.self { return Float(try double(at)) as! T }
    if T.self == Int64.self { return try integer(Int64.self, at) as! T }
    if T.self == Int32.self { return try integer(Int32.self, at) as! T }
    if T.self == Int16.self { return try integer(Int16.self, at) as! T }
    if T.self == Int8.self { return try integer(Int8.self, at) as! T }
    if T.self == UInt.self { return try integer(UInt.self, at) as! T }
    if T.self == UInt64.self { return try integer(UInt64.self, at) as! T }
    if T.self == UInt32.self { return try integer(UInt32.self, at) as! T }
    if T.self == UInt16.self { return try integer(UInt16.self, at) as! T }
    if T.self == UInt8.self { return try integer(UInt8.self, at) as! T }
    if T.self == Decimal.self || T.self == URL.self || T.self == FieldValue.self {
      let value = try tree(at)
      do { return try value._decodeField(type) } catch { throw fail() }
    }
    return try T(from: _JSONValueDecoder(document: self, at: at, codingPath: path()))
  }
}

extension _JSONParser {
  /// Reads past one value as ``value(depth:)`` reads it, building nothing; throws where it
  /// throws, and at a key with an escape or a tagged value's key (left to the tree).
  mutating func skip(depth: Int) throws {
    guard depth < Self.maxDepth else { throw fail("nested too deeply") }
    guard at < bytes.count else { throw fail("unexpected end") }
    switch bytes[at] {
    case UInt8(ascii: "n"): try expect("null")
    case UInt8(ascii: "t"): try expect("true")
    case UInt8(ascii: "f"): try expect("false")
    case UInt8(ascii: "\""): try skipString()
    case UInt8(ascii: "["): _ = try array(depth: depth, keeping: false)
    case UInt8(ascii: "{"): _ = try object(depth: depth, keeping: false)
    default: _ = try number()
    }
  }

  /// Reads past a string, checked as ``string()`` checks it.
  mutating func skipString() throws {
    if let end = bytes._quoteWithoutEscape(after: at) {
      at = end + 1
      return
    }
    // An escape (rare), or no closing quote: the tree's reader checks it.
    _ = try string()
  }

  /// The array at `at`: where each element begins (none kept unless `keeping`).
  mutating func array(depth: Int, keeping: Bool = true) throws -> [Int] {
    at += 1
    var elements: [Int] = []
    skipSpace()
    if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
      at += 1
      return elements
    }
    while true {
      skipSpace()
      if keeping { elements.append(at) }
      try skip(depth: depth + 1)
      skipSpace()
      guard at < bytes.count else { throw fail("unterminated array") }
      if bytes[at] == UInt8(ascii: ",") {
        at += 1
        continue
      }
      if bytes[at] == UInt8(ascii: "]") {
        at += 1
        return elements
      }
      throw fail("expected , or ]")
    }
  }

  /// The object at `at`: its members (none kept unless `keeping`).
  mutating func object(depth: Int, keeping: Bool) throws -> [_JSONMember] {
    at += 1
    var members: [_JSONMember] = []
    if keeping { members.reserveCapacity(8) }
    skipSpace()
    if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
      at += 1
      return members
    }
    while true {
      skipSpace()
      guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key") }
      at += 1
      let keyStart = at
      var ascii = true
      while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
        let b = bytes[at]
        if b == UInt8(ascii: "\\") { throw _JSONUnanswered() }
        if b >= 0x80 { ascii = false }
        at += 1
      }
      guard at < bytes.count else { throw fail("unterminated string") }
      let keyEnd = at
      at += 1
      // A tagged value's key (`$rs`): the tree's reader untags the object.
      if ascii
        ? keyEnd - keyStart == 3 && bytes[keyStart] == UInt8(ascii: "$")
          && bytes[keyStart + 1] == UInt8(ascii: "r")
          && bytes[keyStart + 2] == UInt8(ascii: "s")
        : String(decoding: UnsafeRawBufferPointer(rebasing: bytes[keyStart..<keyEnd]), as: UTF8.self)
          == SQLJSON.tag
      {
        throw _JSONUnanswered()
      }
      skipSpace()
      guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("expected :") }
      at += 1
      skipSpace()
      if keeping { members.append(_JSONMember(keyStart: keyStart, keyEnd: keyEnd, ascii: ascii, value: at)) }
      try skip(depth: depth + 1)
      skipSpace()
      guard at < bytes.count else { throw fail("unterminated object") }
      if bytes[at] == UInt8(ascii: ",") {
        at += 1
        continue
      }
      if bytes[at] == UInt8(ascii: "}") {
        at += 1
        return members
      }
      throw fail("expected , or }")
    }
  }
}

/// A decoder at one value of a document.
struct _JSONValueDecoder: Decoder {
  let document: _JSONDocument
  let at: Int
  var codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    KeyedDecodingContainer(
      _JSONKeyed<Key>(
        document: document, members: try document.members(ofObjectAt: at), codingPath: codingPath))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    _JSONUnkeyed(document: document, elements: try document.elements(ofArrayAt: at), codingPath: codingPath)
  }

  func singleValueContainer() throws -> any SingleValueDecodingContainer {
    _JSONSingle(document: document, at: at, codingPath: codingPath)
  }
}

/// An unkeyed container's index key, as the tree's decoder names it.
private struct _JSONIndexKey: CodingKey {
  var stringValue: String { String(intValue!) }
  var intValue: Int?
  init(_ index: Int) { intValue = index }
  init?(stringValue: String) { nil }
  init?(intValue: Int) { self.intValue = intValue }
}

private struct _JSONKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let document: _JSONDocument
  let members: [_JSONMember]
  var codingPath: [any CodingKey]

  /// Each distinct key once (the first spelling, as the dictionary keeps it).
  var allKeys: [Key] {
    var seen = Set<String>()
    var keys: [Key] = []
    for m in members {
      let name = document.keyString(m)
      if seen.insert(name).inserted, let key = Key(stringValue: name) { keys.append(key) }
    }
    return keys
  }

  private func value(_ key: Key) -> Int? { document.find(key.stringValue, in: members) }

  private func required(_ key: Key) throws -> Int {
    guard let at = value(key) else { throw document.fail() }
    return at
  }

  /// The value of a key present and not null.
  private func present(_ key: Key) -> Int? {
    guard let at = value(key), !document.isNull(at) else { return nil }
    return at
  }

  func contains(_ key: Key) -> Bool { value(key) != nil }

  func decodeNil(forKey key: Key) throws -> Bool {
    guard let at = value(key) else { return true }
    return document.isNull(at)
  }

  func decode(_ type: String.Type, forKey key: Key) throws -> String {
    try document.string(try required(key))
  }
  func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
    try document.integer(Int.self, try required(key))
  }
  func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
    try document.double(try required(key))
  }
  func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try document.bool(try required(key)) }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
    try document.decode(type, at: try required(key), path: codingPath + [key])
  }

  func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
    try present(key).map { try document.string($0) }
  }
  func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
    try present(key).map { try document.integer(Int.self, $0) }
  }
  func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
    try present(key).map { try document.double($0) }
  }
  func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
    try present(key).map { try document.bool($0) }
  }
  func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    guard let at = present(key) else { return nil }
    return try document.decode(type, at: at, path: codingPath + [key])
  }

  func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    try _JSONValueDecoder(document: document, at: try required(key), codingPath: codingPath + [key])
      .container(keyedBy: type)
  }

  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    try _JSONValueDecoder(document: document, at: try required(key), codingPath: codingPath + [key])
      .unkeyedContainer()
  }

  /// The tree's decoder reads an absent key as nil here: left to it.
  func superDecoder() throws -> any Decoder {
    guard let at = document.find("super", in: members) else { throw document.fail() }
    return _JSONValueDecoder(document: document, at: at, codingPath: codingPath)
  }

  func superDecoder(forKey key: Key) throws -> any Decoder {
    _JSONValueDecoder(document: document, at: try required(key), codingPath: codingPath + [key])
  }
}

private struct _JSONUnkeyed: UnkeyedDecodingContainer {
  let document: _JSONDocument
  let elements: [Int]
  var codingPath: [any CodingKey]
  var currentIndex = 0
  var count: Int? { elements.count }
  var isAtEnd: Bool { currentIndex >= elements.count }

  private mutating func next() throws -> Int {
    guard !isAtEnd else { throw document.fail() }
    defer { currentIndex += 1 }
    return elements[currentIndex]
  }

  mutating func decodeNil() throws -> Bool {
    guard !isAtEnd, document.isNull(elements[currentIndex]) else { return false }
    currentIndex += 1
    return true
  }

  mutating func decode(_ type: String.Type) throws -> String { try document.string(try next()) }
  mutating func decode(_ type: Int.Type) throws -> Int { try document.integer(Int.self, try next()) }
  mutating func decode(_ type: Double.Type) throws -> Double { try document.double(try next()) }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
    let index = currentIndex
    return try document.decode(type, at: try next(), path: codingPath + [_JSONIndexKey(index)])
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    let path = codingPath + [_JSONIndexKey(currentIndex)]
    return try _JSONValueDecoder(document: document, at: try next(), codingPath: path).container(
      keyedBy: type)
  }

  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let path = codingPath + [_JSONIndexKey(currentIndex)]
    return try _JSONValueDecoder(document: document, at: try next(), codingPath: path).unkeyedContainer()
  }

  mutating func superDecoder() throws -> any Decoder {
    let path = codingPath + [_JSONIndexKey(currentIndex)]
    return _JSONValueDecoder(document: document, at: try next(), codingPath: path)
  }
}

private struct _JSONSingle: SingleValueDecodingContainer {
  let document: _JSONDocument
  let at: Int
  var codingPath: [any CodingKey]

  func decodeNil() -> Bool { document.isNull(at) }
  func decode(_ type: String.Type) throws -> String { try document.string(at) }
  func decode(_ type: Double.Type) throws -> Double { try document.double(at) }
  func decode(_ type: Int.Type) throws -> Int { try document.integer(Int.self, at) }
  func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try document.decode(type, at: at, path: codingPath)
  }
}

extension UnsafeRawBufferPointer {
  /// The offset of the quote closing the string whose opening quote is at `open`, when no
  /// backslash comes before it; nil otherwise (an escape, or no closing quote).
  func _quoteWithoutEscape(after open: Int) -> Int? {
    guard let base = baseAddress, open < count else { return nil }
    let from = open + 1
    guard let quote = memchr(base + from, 0x22, count - from) else { return nil }
    let end = base.distance(to: UnsafeRawPointer(quote))
    return memchr(base + from, 0x5C, end - from) == nil ? end : nil
  }
}
