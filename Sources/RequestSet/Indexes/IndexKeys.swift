/// The store key a key path names, for `createIndex(\.field)`.
func _indexKey<Root, Value>(_ keyPath: KeyPath<Root, Value>) throws -> String {
  guard let key = _fieldKey(keyPath, root: Root.self) else {
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
