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
