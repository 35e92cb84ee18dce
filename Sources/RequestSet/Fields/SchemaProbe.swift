import Foundation

/// Learns a record type's keys from real records, and which Codable key a key path reads,
/// without ever running the type's `init(from:)` on values RequestSet made up.
///
/// A type's decoder may validate what it is given (`Kind(rawValue: raw)!`,
/// `precondition(email.contains("@"))`), and a placeholder value would make it trap, so
/// nothing here invents a value:
/// - Before a store holds a record it knows no keys, and accepts any key (which matches
///   nothing, as there is nothing).
/// - From the first record a store holds, ``learn(_:from:)`` decodes the record's own
///   encoded fields back through the type's `init(from:)`, with a decoder that writes down
///   every key asked for, including optional keys the record leaves out (`nickname` when
///   it is `nil`, which encoding alone cannot show). The type sees only the record's own
///   values, as when a ``LogStore`` reads it back; if decoding throws, the keys the records
///   encode are all the store knows. Keys seen in later records are added on top.
/// - The first records of each type (up to ``witnessLimit``), and after them any record
///   that holds a value under a key no witness does (up to ``witnessCap``), are kept as
///   witnesses for ``confirms(_:key:root:)``.
enum _SchemaProbe {
  /// How many records of each type are kept as witnesses.
  static let witnessLimit = 8

  /// A stored record and its encoded fields.
  struct Witness: @unchecked Sendable {
    // @unchecked Sendable: `record` holds a value of a `Sendable` type (a `Record`, or a
    // snapshot's `Element`: see `witness(_:fields:)`);
    // it is typed `Any` only so that one table holds witnesses of every type.
    let record: Any
    let fields: FieldValue
  }

  /// A type's witnesses, with the keys under which some witness holds a value other than
  /// null (kept as witnesses are added, so deciding whether a record shows a new key costs
  /// one subset test, not a walk of every witness's fields under the lock).
  struct Witnesses {
    var list: [Witness] = []
    var covered: Set<String> = []
  }

  private static let _witnesses = _Lock<[ObjectIdentifier: Witnesses]>([:])

  /// The kinds of value per dotted key that decoding `fields` (a record's encoded fields)
  /// as a `T` asks for, with the keys the record leaves out.
  static func learn<T: Decodable>(_ type: T.Type, from fields: FieldValue) -> [String: _KindSet] {
    let recorder = _ProbeRecorder()
    _ = try? _FieldDecoder.decode(T.self, from: fields, recorder: recorder)
    return recorder.kinds
  }

  /// The most witnesses a type keeps: past ``witnessLimit``, a record is kept only when it
  /// holds a value under a key no witness holds one under (an `owner.city` when the first
  /// records had no owner), so which records came first cannot leave a key path undecided
  /// for good.
  static let witnessCap = 64

  /// Whether `T` still takes witnesses: a store asks before it encodes one.
  static func wantsWitness<T>(_ type: T.Type) -> Bool {
    _witnesses.withLock { ($0[ObjectIdentifier(type)]?.list.count ?? 0) < witnessCap }
  }

  /// Whether the process holds a witness of `T`: a record of the type stored, opened or
  /// queried (see `_Prepare.witness`).
  static func hasWitnesses<T>(_ type: T.Type) -> Bool {
    _witnesses.withLock { !($0[ObjectIdentifier(type)]?.list.isEmpty ?? true) }
  }

  /// The top-level keys the witnesses of `type` encode, each with one key below it (the
  /// first by name) when it holds an object: the `Codable` keys the process has seen the
  /// type's records use, renamed ones included.
  static func seenKeys(of type: Any.Type) -> [String: String?] {
    let witnesses = _witnesses.withLock { $0[ObjectIdentifier(type)]?.list ?? [] }
    var keys: [String: String?] = [:]
    for w in witnesses {
      guard case .object(let fields) = w.fields else { continue }
      for (name, value) in fields {
        guard case .object(let inner) = value, let below = inner.keys.min() else {
          if keys[name] == nil { keys[name] = .some(nil) }
          continue
        }
        keys[name] = below
      }
    }
    return keys
  }

  /// The keys under which `fields` holds a value other than null.
  private static func _valuedKeys(_ fields: FieldValue) -> Set<String> {
    var keys = Set<String>()
    _forEachKey(fields, prefix: nil) { key, value in
      if value != .null { keys.insert(key) }
    }
    return keys
  }

  /// Keeps a stored record as a witness of its type, while the type has fewer than
  /// ``witnessLimit``. A class instance is kept as a copy decoded from its fields, so a
  /// later change to the caller's object cannot make it disagree with them; a type that
  /// is not `Decodable` keeps none.
  ///
  /// `T` is not required to be `Sendable` only because a snapshot's records, opened as
  /// `Encodable`, lose the marker: every caller passes a record of a `Sendable` type (a
  /// `Record`, or a snapshot's `Element`), which ``Witness`` relies on.
  static func witness<T: Encodable>(_ record: T, fields: FieldValue) {
    guard let decodable = T.self as? any Decodable.Type else { return }
    func copy<D: Decodable>(_ type: D.Type) -> Any? { try? _FieldDecoder.decode(D.self, from: fields) }
    let kept: Any
    if T.self is AnyClass {
      guard let made = copy(decodable) else { return }
      kept = made
    } else {
      kept = record
    }
    let valued = _valuedKeys(fields)
    _witnesses.withLock { table in
      let id = ObjectIdentifier(T.self)
      let count = table[id]?.list.count ?? 0
      guard count < witnessCap else { return }
      // Past the first few, only a record that shows a key no witness shows a value for.
      if count >= witnessLimit, let covered = table[id]?.covered, valued.isSubset(of: covered) { return }
      table[id, default: Witnesses()].list.append(Witness(record: kept, fields: fields))
      table[id, default: Witnesses()].covered.formUnion(valued)
    }
  }

  /// Keeps the first records of an array that queries run on as witnesses.
  static func witness<T: Encodable & Sendable>(contentsOf records: some Collection<T>) {
    guard wantsWitness(T.self) else { return }
    for r in records.prefix(witnessLimit) {
      guard let fields = try? _FieldEncoder.encode(r) else { return }
      witness(r, fields: fields)
    }
  }

  /// Whether `keyPath` reads the value `root`'s Codable conformance stores under `key`:
  /// true or false once the type's witnesses decide it, nil while they cannot (no record of
  /// the type stored yet, or every witness holds the same value under another key too).
  ///
  /// On every witness the key path must read the value stored under `key`, and for every
  /// other key some witness must hold another value there, so that `CodingKeys` that rename
  /// a property to another property's name are caught. A key path that reads `nil` on every
  /// witness is undecided too.
  static func confirms(_ keyPath: AnyKeyPath, key: String, root: Any.Type) -> Bool? {
    let witnesses = _witnesses.withLock { $0[ObjectIdentifier(root)]?.list ?? [] }
    guard !witnesses.isEmpty else { return nil }
    var alike: Set<String>?
    var sawValue = false
    for w in witnesses {
      guard let read = w.record[keyPath: keyPath] else { return false }
      guard let encodable = read as? any Encodable, let value = try? _FieldEncoder.encode(encodable) else {
        return false
      }
      guard _same(value, _EncodedRow(w.fields).value(at: key)) else { return false }
      if value != .null { sawValue = true }
      // Decisive where it can be tried: change the property, see which key changes.
      if let changed = _perturbed(w, keyPath) { return changed == [key] }
      var here = Set<String>()
      _forEachKey(w.fields, prefix: nil) { other, v in
        if other != key && _same(v, value) { here.insert(other) }
      }
      alike = alike.map { $0.intersection(here) } ?? here
    }
    return sawValue && alike?.isEmpty == true ? true : nil
  }

  /// The keys whose encoded values change when the witness's property at `keyPath` is
  /// given another value: exactly the key path's own key when the name is right. Nil when
  /// that cannot be tried without running the type's code: the key path is not a plain
  /// stored property of a struct (`MemoryLayout.offset(of:)` finds none, so no setter or
  /// observer is involved; the new value is written straight into a copy), or its type is
  /// not one of the scalars `_otherValue` knows.
  private static func _perturbed(_ w: Witness, _ keyPath: AnyKeyPath) -> Set<String>? {
    func open<Root>(_ record: Root) -> Set<String>? {
      guard !(Root.self is AnyClass), let path = keyPath as? PartialKeyPath<Root>,
        let offset = MemoryLayout<Root>.offset(of: path), let other = _otherValue(record[keyPath: path])
      else { return nil }
      var copy = record
      func store<V>(_ value: V) {
        withUnsafeMutableBytes(of: &copy) {
          $0.baseAddress!.advanced(by: offset).assumingMemoryBound(to: V.self).pointee = value
        }
      }
      _openExistential(other, do: store)
      guard let encodable = copy as? any Encodable, let changed = try? _FieldEncoder.encode(encodable) else {
        return nil
      }
      var before: [String: FieldValue] = [:]
      var after: [String: FieldValue] = [:]
      _forEachKey(w.fields, prefix: nil) { before[$0] = $1 }
      _forEachKey(changed, prefix: nil) { after[$0] = $1 }
      return Set(
        Set(before.keys).union(after.keys).filter { k in
          guard let b = before[k], let a = after[k] else { return true }
          if case .object = b, case .object = a { return false }  // its leaves say what changed
          return !_same(a, b)
        })
    }
    return _openExistential(w.record, do: open)
  }

  /// A value of exactly `value`'s dynamic type that differs from it, for the scalar types
  /// a twin can have; nil for any other type (an optional among them).
  private static func _otherValue(_ value: Any) -> Any? {
    let type = Swift.type(of: value)
    switch value {
    case let v as Int where type == Int.self: return v &+ 1
    case let v as Int64 where type == Int64.self: return v &+ 1
    case let v as Int32 where type == Int32.self: return v &+ 1
    case let v as UInt64 where type == UInt64.self: return v &+ 1
    case let v as String where type == String.self: return v + "\u{1}"
    case let v as Double where type == Double.self: return _other(v)
    case let v as Bool where type == Bool.self: return !v
    case let v as Date where type == Date.self:
      return Date(timeIntervalSinceReferenceDate: _other(v.timeIntervalSinceReferenceDate))
    case let v as Decimal where type == Decimal.self: return v.isNaN || v.isZero ? Decimal(1) : v * 2
    default: return nil
    }
  }

  /// A double that differs from `d` (`d + 1` would not, past 2^53).
  private static func _other(_ d: Double) -> Double { d.isNaN || d == .infinity ? 0.5 : d.nextUp }

  /// Equality that also holds between two NaNs (a witness's own value against itself).
  private static func _same(_ a: FieldValue, _ b: FieldValue) -> Bool {
    a == b || (_Numbers.isNaN(a) && _Numbers.isNaN(b))
  }

  /// Every dotted key of an encoded record (as the field table flattens it), with its value.
  private static func _forEachKey(_ value: FieldValue, prefix: String?, _ body: (String, FieldValue) -> Void)
  {
    guard case .object(let fields) = value else { return }
    for (name, v) in fields {
      let key = _DottedKey.join(prefix, name)
      body(key, v)
      _forEachKey(v, prefix: key, body)
    }
  }
}

/// Writes down the keys a decoder is asked for, and the kinds of value they hold.
final class _ProbeRecorder {
  var kinds: [String: _KindSet] = [:]

  func record(_ path: [any CodingKey], _ kind: _FieldKind) {
    // Keys inside arrays are not string keys.
    guard !path.isEmpty, !path.contains(where: { $0.intValue != nil }) else { return }
    var key: String?
    for k in path { key = _DottedKey.join(key, k.stringValue) }
    kinds[key!, default: _KindSet()].insert(kind)
  }

  /// Records a key the record leaves out: nil, and the kind its type encodes as when that
  /// is known without running the type's code.
  func recordAbsent<T>(_ path: [any CodingKey], _ type: T.Type) {
    record(path, .null)
    if let kind = _scalarKind(type) { record(path, kind) }
  }
}

/// The kind a scalar type encodes as (see `_FieldEncoder`), or nil for other types.
private func _scalarKind(_ type: Any.Type) -> _FieldKind? {
  switch type {
  case is String.Type, is UUID.Type, is URL.Type: return .string
  case is Bool.Type: return .bool
  case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type, is UInt.Type, is UInt8.Type,
    is UInt16.Type, is UInt32.Type, is UInt64.Type, is Double.Type, is Float.Type, is Decimal.Type,
    is Date.Type:
    return .number
  default: return nil
  }
}
