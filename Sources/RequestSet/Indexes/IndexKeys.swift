/// The store key a key path names, for `createIndex(\.field)`.
///
/// Before a record of the type is stored, the key path's name is taken as the key: an
/// index is only a store of one key's values, and typed filters and sorts use it only
/// through a confirmed key (see TypedFieldTwin.swift), so a name that `CodingKeys` turn
/// out to rename costs speed, never a wrong answer.
func _indexKey<Root, Value>(_ keyPath: KeyPath<Root, Value>) throws -> String {
  let named = _storedFieldKey(keyPath, root: Root.self)
  let undecided = named.map { _SchemaProbe.confirms(keyPath, key: $0, root: Root.self) == nil } ?? false
  guard let key = undecided ? named : _fieldKey(keyPath, root: Root.self) else {
    throw RequestSetError(
      .invalidIndex,
      "\(keyPath) is not a chain of stored properties, so it names no stored field to index. "
        + "Index the field's Codable key instead: createIndex(\"key\").")
  }
  return key
}

/// The error for an index that exists with the other `unique` setting.
func _indexExists(_ key: String, unique: Bool) -> RequestSetError {
  RequestSetError(
    .invalidIndex,
    "The store already has \(unique ? "a unique" : "a non-unique") index on \"\(key)\". "
      + "Drop it with dropIndex(\"\(key)\") first to change whether it is unique.")
}
