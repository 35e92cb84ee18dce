/// Dotted string keys over ``FieldValue`` objects: the same paths every string-key query
/// takes, for programs that handle records without their type.
extension FieldValue {
  /// The value at a string key inside this value, or nil when nothing is there.
  ///
  /// A key is a field name or a dotted path into nested objects, exactly as string-key
  /// queries read it (`"owner.city"`); a dot or backslash inside a name is escaped with a
  /// backslash (`"counts.b\\.c"` reaches `counts["b.c"]`). A path through a value that is
  /// not an object is nil; an explicit `nil` stored at the path is ``FieldValue/null``.
  ///
  /// ```swift
  /// let value: FieldValue = .object(["owner": .object(["city": .string("Oslo")])])
  /// value[path: "owner.city"]   // .string("Oslo")
  /// value[path: "owner.zip"]    // nil
  /// ```
  /// - Parameter key: A field name or dotted path.
  /// - Complexity: O(*d*) for a path of *d* names.
  public subscript(path key: String) -> FieldValue? {
    var current = self
    for name in _DottedKey.split(key) {
      guard case .object(let fields) = current, let next = fields[name] else { return nil }
      current = next
    }
    return current
  }

  /// The field names a string key passes through, with escapes removed.
  ///
  /// ```swift
  /// FieldValue.fieldNames(inKey: "owner.city")     // ["owner", "city"]
  /// FieldValue.fieldNames(inKey: "counts.b\\.c")   // ["counts", "b.c"]
  /// ```
  /// - Parameter key: A field name or dotted path.
  /// - Returns: The names, outermost first; one name for a key without dots.
  public static func fieldNames(inKey key: String) -> [String] { _DottedKey.split(key) }

  /// The string key that reaches the field at `names`: the inverse of
  /// ``fieldNames(inKey:)``, escaping dots and backslashes inside names.
  ///
  /// ```swift
  /// FieldValue.key(forFieldNames: ["counts", "b.c"])   // "counts.b\\.c"
  /// ```
  /// - Parameter names: Field names, outermost first.
  /// - Returns: The dotted key.
  public static func key(forFieldNames names: [String]) -> String {
    names.map(_DottedKey.escape).joined(separator: ".")
  }
}
