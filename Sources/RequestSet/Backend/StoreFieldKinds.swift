import Foundation

/// The keys a store's records have held and the kinds of value seen under each: what the
/// engine checks a query against before a ``QueryPushdownStore`` runs it, so that a key the
/// records never hold throws `.unknownKey` and a value of a kind the key never holds throws
/// `.typeMismatch`, as over a ``MemoryStore``, instead of matching nothing.
///
/// A store keeps one per table, notes every record it writes (``note(_:as:)``), keeps it
/// with its records (it only grows, as ``MemoryStore``'s does: deleting records forgets
/// nothing) and hands it out through ``StoreQueryReader/fieldKinds()``. Keys are the dotted
/// keys filters use (`owner.city`, a dot inside a field name escaped as `\.`); the first
/// record noted is also decoded once through the record type, which adds the optional keys
/// its records leave out.
///
/// ```swift
/// var kinds = StoreFieldKinds()
/// kinds.note(try FieldValue(encoding: rex), as: Animal.self)
/// kinds.keys                                  // ["age", "id", "name", "species"]
/// let text = kinds.encodedText()              // kept beside the records
/// let same = try StoreFieldKinds(encodedText: text)
/// ```
public struct StoreFieldKinds: Sendable, Hashable {
  /// Kinds per dotted key.
  var _kinds: [String: UInt8] = [:]
  /// Whether a record has been decoded through the record type for its optional keys.
  var _probed = false

  /// No key known: the summary of a store that has held no record. Every key is accepted
  /// then, as over an empty ``MemoryStore``.
  ///
  /// ```swift
  /// StoreFieldKinds().keys   // []
  /// ```
  public init() {}

  init(_ kinds: [String: _KindSet], probed: Bool) {
    _kinds = kinds.mapValues(\.bits)
    _probed = probed
  }

  /// Every key noted, sorted.
  ///
  /// ```swift
  /// kinds.keys.contains("owner.city")
  /// ```
  public var keys: [String] { _kinds.keys.sorted() }

  /// A kind of value a key holds.
  public enum Kind: Int, Sendable, Hashable, CaseIterable {
    /// nil, or a record that does not hold the key.
    case null = 0
    /// `true` or `false`.
    case bool
    /// An integer or a floating-point number.
    case number
    /// Text.
    case string
    /// An array.
    case array
    /// A nested object (a struct, a dictionary).
    case object
  }

  /// Whether some record has held a value of `kind` under `key` (always false for a key
  /// no record holds).
  ///
  /// ```swift
  /// if kinds.holds(.array, at: "members") { /* a path through members maps over elements */ }
  /// ```
  /// - Parameters:
  ///   - kind: The kind of value.
  ///   - key: A dotted key, as filters write it.
  /// - Returns: Whether a record has held such a value there.
  public func holds(_ kind: Kind, at key: String) -> Bool {
    guard let bits = _kinds[key] else { return false }
    return bits & (1 << UInt8(kind.rawValue)) != 0
  }

  /// Whether no record has been noted.
  ///
  /// ```swift
  /// StoreFieldKinds().isEmpty   // true
  /// ```
  public var isEmpty: Bool { _kinds.isEmpty && !_probed }

  /// Notes the keys and kinds of one record's fields (``FieldValue/init(encoding:)`` of the
  /// record); the first record noted is also decoded once as `type`, which adds the
  /// optional keys no record encodes.
  ///
  /// ```swift
  /// kinds.note(try FieldValue(encoding: rex), as: Animal.self)
  /// ```
  /// - Parameters:
  ///   - fields: The record's fields, an object.
  ///   - type: The record type.
  public mutating func note<Element: Decodable>(_ fields: FieldValue, as type: Element.Type) {
    if !_probed {
      _probed = true
      for (key, set) in _SchemaProbe.learn(Element.self, from: fields) {
        _kinds[key, default: 0] |= set.bits
      }
    }
    _note(fields, prefix: nil)
  }

  mutating func _note(_ value: FieldValue, prefix: String?) {
    guard case .object(let fields) = value else { return }
    for (name, field) in fields {
      let key = _DottedKey.join(prefix, name)
      let bit: UInt8 = 1 << UInt8(field._kind.rawValue)
      if let known = _kinds[key] {
        if known & bit == 0 { _kinds[key] = known | bit }
      } else {
        _kinds[key] = bit
      }
      if case .object = field { _note(field, prefix: key) }
    }
  }

  /// Adds what `other` knows.
  ///
  /// ```swift
  /// stored.formUnion(batch)
  /// ```
  public mutating func formUnion(_ other: StoreFieldKinds) {
    for (key, bits) in other._kinds { _kinds[key, default: 0] |= bits }
    _probed = _probed || other._probed
  }

  /// Whether every key and kind of `other` is known here.
  ///
  /// ```swift
  /// if !stored.contains(batch) { try write(stored.union(batch)) }
  /// ```
  public func contains(_ other: StoreFieldKinds) -> Bool {
    if other._probed && !_probed { return false }
    for (key, bits) in other._kinds {
      guard let mine = _kinds[key], mine & bits == bits else { return false }
    }
    return true
  }

  /// The summary as text a store keeps beside its records (JSON), read back by
  /// ``init(encodedText:)``.
  ///
  /// ```swift
  /// kinds.encodedText()   // {"kinds":{"age":4,"name":8},"probed":true}
  /// ```
  public func encodedText() -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    // A dictionary of strings to integers always encodes.
    let data = (try? encoder.encode(_Encoded(kinds: _kinds, probed: _probed))) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
  }

  /// Reads a summary written by ``encodedText()``.
  ///
  /// ```swift
  /// let kinds = try StoreFieldKinds(encodedText: text)
  /// ```
  /// - Throws: ``RequestSetError`` `.schemaMismatch` when the text is not such a summary.
  public init(encodedText text: String) throws {
    guard let decoded = try? JSONDecoder().decode(_Encoded.self, from: Data(text.utf8)),
      decoded.kinds.values.allSatisfy({ $0 < 0x40 })
    else {
      throw RequestSetError(
        .schemaMismatch,
        "The store's summary of keys and kinds is not one RequestSet wrote (\(text.prefix(80))). "
          + "Another program changed it: delete that row and reopen the store, which rebuilds it.")
    }
    _kinds = decoded.kinds
    _probed = decoded.probed
  }

  private struct _Encoded: Codable {
    var kinds: [String: UInt8]
    var probed: Bool
  }

  /// The kinds as the engine's checks read them.
  var _kindSets: [String: _KindSet] { _kinds.mapValues { _KindSet(bits: $0) } }
}

extension StoreFieldKinds {
  /// The summary after `migration` rewrote the records it describes, when its steps say
  /// exactly what becomes of each key; nil when a step (a ``Migration/Step/transform(_:)``
  /// or a custom conversion) can make anything, and the store must note its records again.
  ///
  /// A backend that runs a migration's steps as statements (`json_set`) keeps its summary
  /// current with this instead of reading every record.
  ///
  /// ```swift
  /// let after = kinds.migrated(by: Migration("kg", .rename("weight", to: "weightKg")))
  /// after?.keys   // […, "weightKg"]
  /// ```
  /// - Parameter migration: The migration the records went through.
  /// - Returns: The new summary, or nil.
  /// - Complexity: O(*k*) per step for *k* keys.
  public func migrated(by migration: Migration) -> StoreFieldKinds? {
    var kinds = self
    func under(_ key: String, _ candidate: String) -> Bool { candidate == key || candidate.hasPrefix(key + ".") }
    for step in migration.steps {
      switch step._kind {
      case .add(let key, let value):
        // The value wrapped in the objects on a dotted key's way, which hold objects now.
        var nested = value
        for name in FieldValue.fieldNames(inKey: key).reversed() { nested = .object([name: nested]) }
        var added = StoreFieldKinds()
        added._note(nested, prefix: nil)
        kinds.formUnion(added)
      case .rename(let from, let to):
        var moved: [String: UInt8] = [:]
        for (key, bits) in kinds._kinds where under(from, key) {
          moved[to + key.dropFirst(from.count)] = bits
          kinds._kinds[key] = nil
        }
        for (key, bits) in moved { kinds._kinds[key, default: 0] |= bits }
        let names = FieldValue.fieldNames(inKey: to)
        for n in 1..<max(1, names.count) {
          kinds._kinds[FieldValue.key(forFieldNames: Array(names.prefix(n))), default: 0] |= 1 << UInt8(Kind.object.rawValue)
        }
      case .remove(let key):
        kinds._kinds = kinds._kinds.filter { !under(key, $0.key) }
      case .convert(let key, let conversion):
        guard let kind = conversion._result else { return nil }
        guard let bits = kinds._kinds[key] else { continue }
        let nullBit: UInt8 = 1 << UInt8(Kind.null.rawValue)
        kinds._kinds[key] = (bits & nullBit) | (1 << UInt8(kind.rawValue))
        if kind != .object { kinds._kinds = kinds._kinds.filter { !$0.key.hasPrefix(key + ".") } }
      case .transform:
        return nil
      }
    }
    // The record type changed: the next record noted is probed for its optional keys.
    kinds._probed = false
    return kinds
  }
}
