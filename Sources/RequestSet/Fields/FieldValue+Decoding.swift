extension FieldValue {
  /// Decodes a value of `type` from this field value: the inverse of
  /// ``init(encoding:)``, for a store that keeps records as field values (a JSON document
  /// in a SQL row, say).
  ///
  /// ```swift
  /// let value = try FieldValue(encoding: micky)
  /// let back = try value.decode(Animal.self)   // == micky
  /// ```
  /// - Throws: `DecodingError` when the value does not hold a `T`.
  public func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try _FieldDecoder.decode(type, from: self)
  }
}

extension FieldValue {
  /// Decodes a value of `type` as a record's field is decoded from its value: as
  /// ``decode(_:)``, except that the types the field decoder reads from the value itself
  /// (numbers, strings, `Bool`, `Decimal`, `URL` from its string, `FieldValue`) are read
  /// that way, not through their own `init(from:)`. For a SQL store's direct record
  /// reader, which hands such a field to the tree's decoder.
  ///
  /// ```swift
  /// try FieldValue.string("https://example.com")._decodeField(URL.self)   // the URL
  /// ```
  /// - Throws: `DecodingError` when the value does not hold a `T`.
  public func _decodeField<T: Decodable>(_ type: T.Type) throws -> T {
    try _FieldDecoder.decodeField(type, from: self)
  }
}
