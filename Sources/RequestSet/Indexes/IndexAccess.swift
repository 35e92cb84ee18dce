/// What a snapshot gives the planner beyond its records: the store's secondary indexes as
/// of the snapshot, and a way to find a record by id.
struct _IndexAccess: Sendable {
  var catalog: _IndexCatalog
  /// The slot holding a record with this id value in the snapshot of `version`.
  var slotForID: (@Sendable (_ id: FieldValue, _ version: UInt64) -> _IDLookup)?
  /// The store's full-text index as of the snapshot, if it keeps one.
  var text: _TextIndex?
}

/// An id lookup's answer.
enum _IDLookup {
  case found(Int)
  case absent
  /// The store has moved past the snapshot (or the value is no id): scan instead.
  case unknown
}

/// An id value as the element's `ID` type.
func _decodeID<ID: Decodable>(_ value: FieldValue, as type: ID.Type) -> ID? {
  if ID.self == Int.self, case .int(let i) = value { return unsafeBitCast(i, to: ID.self) }
  if ID.self == String.self, case .string(let s) = value { return unsafeBitCast(s, to: ID.self) }
  return try? _FieldDecoder.decode(ID.self, from: value)
}
