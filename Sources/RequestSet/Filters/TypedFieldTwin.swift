import Foundation

// A typed condition's twin over the store's encoded fields.
//
// `\.age > 3` tests records in place in memory, which is the fastest way there. A store that
// keeps records on disk would have to decode each record to run that test; the twin
// `age > 3` reads the one field from the record's bytes instead. A condition has a twin
// only when the two are sure to agree:
// - the key path names a field (see `_ResolvedField`): it is one of the key paths reflection
//   lists for the type's stored properties, or a chain of them (`\Animal.owner?.city` is
//   the field "owner.city"; see `_StoredPaths`), and those names are the record's Codable
//   keys unless the type renames them with `CodingKeys`. The first stored records of the type confirm the name once per key path
//   (see `_SchemaProbe.confirms`): on each, the key path must read the value stored under
//   its name, and the records must tell that key apart from every other, so renamed and
//   swapped keys get no twin. The twin is decided when a query is prepared (see
//   Execution/Prepare.swift), after the source's first records have been shown to the
//   probe, never when the filter is built. While the records cannot tell, a condition has
//   no twin and records are decoded to test it. Each key path
//   is confirmed on its own, so a field that encodes in a way of its own (an enum with a
//   payload, a nested class) costs only the conditions on that field their twin. The
//   compiler uses a twin only when that key exists and holds the value's kind;
// - the value is of a type whose encoded form orders and compares as the Swift value does:
//   integers up to 64 bits, signed and unsigned (compared exactly, see `_Numbers`), Double,
//   Float, Decimal, String, Date, and for == and != also Bool and UUID, or an optional of
//   one of these. (Not URL: `URL ==` compares a relative URL and its base, not the
//   absolute string the field holds.)
// A translated `#Predicate` (see `PredicateTranslation.swift`) holds its constants to the
// same list.

private let _orderedTypes: [Any.Type] = [
  Int.self, Int8.self, Int16.self, Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self, UInt32.self,
  UInt64.self, Double.self, Float.self, Decimal.self, String.self, Date.self,
  Int?.self, Int8?.self, Int16?.self, Int32?.self, Int64?.self, UInt?.self, UInt8?.self, UInt16?.self,
  UInt32?.self, UInt64?.self, Double?.self, Float?.self, Decimal?.self, String?.self, Date?.self,
]
private let _equatableTypes: [Any.Type] = _orderedTypes + [Bool.self, UUID.self, Bool?.self, UUID?.self]

/// Key paths already mapped to keys: describing a key path costs microseconds, more than
/// an indexed lookup, and programs filter on the same few key paths again and again.
private let _fieldKeys = _Lock<[_KeyPathKey: String?]>([:])

/// A key path as a dictionary key shared between threads.
///
/// `@unchecked Sendable` because `AnyKeyPath` is not declared `Sendable`, yet a key path
/// object is immutable once created: equality and hashing read only its fixed component
/// buffer, so sharing one between threads cannot race.
@usableFromInline
struct _KeyPathKey: Hashable, @unchecked Sendable {
  @usableFromInline let keyPath: AnyKeyPath
  @inlinable init(keyPath: AnyKeyPath) { self.keyPath = keyPath }
}

/// The Codable key a key path names, when it is a chain of stored properties (matched
/// against reflection's key paths, see ``_StoredPaths``) and the type's stored records
/// confirm it; nil otherwise (and, without caching, while undecided). The key of
/// ``_ResolvedField/named(by:root:)``.
func _fieldKey(_ keyPath: AnyKeyPath, root: Any.Type) -> String? {
  if let known = _fieldKeys.withLock({ $0[_KeyPathKey(keyPath: keyPath)] }) { return known }
  var key = _storedFieldKey(keyPath, root: root)
  // The name is the key unless CodingKeys say otherwise: check it on stored records.
  if let named = key {
    guard let confirmed = _SchemaProbe.confirms(keyPath, key: named, root: root) else { return nil }
    if !confirmed { key = nil }
  }
  _fieldKeys.withLock { cache in
    if cache.count > 4096 { cache.removeAll() }
    cache[_KeyPathKey(keyPath: keyPath)] = key
  }
  return key
}

/// The key a key path's chain of stored properties would be stored under if `CodingKeys`
/// kept their names (`\Animal.owner?.city` gives "owner.city"); nil for anything else (a
/// computed property, a subscript). See ``_StoredPaths``.
func _storedFieldKey(_ keyPath: AnyKeyPath, root: Any.Type) -> String? {
  guard let names = _StoredPaths.of(root).names(of: keyPath), !names.isEmpty else { return nil }
  return names.reduce(nil as String?) { _DottedKey.join($0, $1) }
}

/// A typed condition's twin, decided when a query is prepared, never when it is built.
///
/// Whether a key path names a Codable key is confirmed on stored records of its type (see
/// ``_fieldKey(_:root:)``), which a process may or may not have seen when a filter is
/// written. The builder keeps only what depends on the condition itself (the key path and
/// the encoded value); ``resolve`` reads the key when the query is prepared against a
/// source, after that source's records have been shown to the schema probe (see
/// `_Prepare.witness`), so the same query over the same data gets the same plan however
/// it was built.
///
/// A class, so that a typed condition carries one reference: conditions are copied as a
/// filter tree is walked, and a deep tree's walk must fit a small thread's stack.
@usableFromInline
final class _DeferredTwin: Sendable {
  /// The twin, or nil when the key path's name is not (yet) confirmed as a Codable key.
  let resolve: @Sendable () -> _FieldCondition?
  /// For `keyPath == value`: the encoded value, which an id map looks up when the key path
  /// is the record's `id` property (see ``namesID``).
  let idValue: FieldValue?
  /// Whether the key path is the record's `id` property: decided from the type alone (its
  /// reflected stored properties), so a lookup by id never waits for a witness.
  let namesID: @Sendable () -> Bool

  init(
    idValue: FieldValue? = nil, namesID: @escaping @Sendable () -> Bool,
    resolve: @escaping @Sendable () -> _FieldCondition?
  ) {
    self.idValue = idValue
    self.namesID = namesID
    self.resolve = resolve
  }

  /// The id a `\.id == value` condition looks up, or nil for any other condition: the
  /// small-query path that finds a record in the id map without preparing the query.
  func idEquality() -> FieldValue? {
    guard let idValue, namesID() else { return nil }
    return idValue
  }
}

/// Whether `keyPath` is `root`'s `id` stored property: the decided Codable key when there
/// is one (a dictionary lookup), else the reflected name.
func _namesID(_ keyPath: AnyKeyPath, root: Any.Type) -> Bool {
  // A key already decided is the property's own name: no reflection needed.
  if let known = _fieldKeys.withLock({ $0[_KeyPathKey(keyPath: keyPath)] }), let key = known { return key == "id" }
  return _storedFieldKey(keyPath, root: root) == "id"
}

/// The field condition that agrees with `keyPath <comparison> value`, decided when the
/// query is prepared; nil when the value's type has no twin (decided here, from the type
/// alone).
@usableFromInline
func _fieldTwin<Root, Value>(
  _ keyPath: AnyKeyPath & Sendable, _ root: Root.Type, _ comparison: RequestComparison, _ value: Value
) -> _DeferredTwin? {
  guard let encoded = _twinValue(value, ordered: comparison != .equal && comparison != .notEqual) else { return nil }
  return _DeferredTwin(
    idValue: comparison == .equal ? encoded : nil, namesID: { _namesID(keyPath, root: Root.self) }
  ) {
    if let key = _fieldKey(keyPath, root: Root.self) {
      return _FieldCondition(key: key, comparison: comparison, value: encoded, collation: .binary)
    }
    // `\.id` whose Codable key is another: still the record's id, for a lookup by id.
    guard comparison == .equal, _storedFieldKey(keyPath, root: Root.self) == "id" else { return nil }
    var twin = _FieldCondition(key: "id", comparison: comparison, value: encoded, collation: .binary)
    twin.idOnly = true
    return twin
  }
}

/// The field condition that agrees with "the value at `keyPath` is one of `values`",
/// decided when the query is prepared: `key IN {…}` when every value has a twin (see
/// ``_twinValue(_:ordered:)``), else nil at once.
func _fieldTwin<Root, Value>(_ keyPath: AnyKeyPath & Sendable, _ root: Root.Type, in values: [Value]) -> _DeferredTwin? {
  var encoded: [FieldValue] = []
  encoded.reserveCapacity(values.count)
  for value in values {
    guard let e = _twinValue(value, ordered: false) else { return nil }
    encoded.append(e)
  }
  let list = FieldValue.array(encoded)
  return _DeferredTwin(namesID: { _namesID(keyPath, root: Root.self) }) {
    if let key = _fieldKey(keyPath, root: Root.self) {
      return try? _FieldCondition(key: key, op: .in, value: list)
    }
    guard _storedFieldKey(keyPath, root: Root.self) == "id",
      var twin = try? _FieldCondition(key: "id", op: .in, value: list)
    else { return nil }
    twin.idOnly = true
    return twin
  }
}

/// The store key a typed sort orders by, when the key path's encoded values order exactly
/// as the Swift values do (an index on that key can serve the sort), decided when the
/// query is prepared; nil at once when `Value` does not order as its encoded form.
@usableFromInline
func _sortFieldKey<Root, Value>(
  _ keyPath: AnyKeyPath & Sendable, _ root: Root.Type, _ value: Value.Type
) -> (@Sendable () -> String?)? {
  guard _isTwinType(Value.self, ordered: true) else { return nil }
  return { _ResolvedField.named(by: keyPath, root: Root.self)?.key }
}

/// Whether values of `type` encode to fields that compare as the Swift values do: with
/// `==` and `!=` only, or (`ordered`) with `<`, `<=`, `>`, `>=` as well.
func _isTwinType(_ type: Any.Type, ordered: Bool) -> Bool {
  (ordered ? _orderedTypes : _equatableTypes).contains { $0 == type }
}

/// The encoded form of `value` when its type is one whose fields agree with it (see
/// ``_isTwinType(_:ordered:)``), or nil; nil for NaN too, which the encoded form would
/// compare differently.
func _twinValue<Value>(_ value: Value, ordered: Bool) -> FieldValue? {
  // The two commonest kinds of filter value, as `_FieldEncoder` encodes them, with no
  // dynamic cast: a small query's filter is built for each query.
  if Value.self == Int.self { return .int(unsafeBitCast(value, to: Int.self)) }
  if Value.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
  guard _isTwinType(Value.self, ordered: ordered), let encodable = value as? any Encodable,
    let encoded = try? _FieldEncoder.encode(encodable)
  else { return nil }
  if _Numbers.isNaN(encoded) { return nil }
  return encoded
}
