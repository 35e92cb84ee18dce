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

/// The store keys key paths name, for a composite index (`createIndex(\.species, \.age)`).
func _indexKeys<Root, First, Second, each More>(
  _ first: KeyPath<Root, First>, _ second: KeyPath<Root, Second>, _ more: repeat KeyPath<Root, each More>
) throws -> [String] {
  var keys = [try _indexKey(first), try _indexKey(second)]
  for keyPath in repeat each more { keys.append(try _indexKey(keyPath)) }
  return keys
}

/// The error for an index that exists with the other `unique` setting.
///
/// - Parameter key: The index's name: its key, or a composite index's keys joined as
///   `_CompositeKey` joins them.
func _indexExists(_ key: String, unique: Bool) -> RequestSetError {
  let keys = _CompositeKey.keys(of: key)
  return RequestSetError(
    .invalidIndex,
    "The store already has \(unique ? "a unique" : "a non-unique") index on \"\(keys.joined(separator: ", "))\". "
      + "Drop it with dropIndex(\(keys.map(\.debugDescription).joined(separator: ", "))) first to change whether it is "
      + "unique.")
}
