import RequestSet

extension FieldValue {
  /// The stored record this row body holds, decoded as `type`, or the `.decodingFailed`
  /// error every store gives for a record that no longer decodes: it names the record's
  /// id, the key and what went wrong there, and says how to fix it (a `Migration`).
  ///
  /// Every read of a record from a SQL row goes through here (fetches, live re-reads,
  /// commit feeds), so a row in the middle of a table that does not decode reports itself
  /// as the check at open does, never as a bare `DecodingError`.
  ///
  /// ```swift
  /// let animal = try SQLJSON.decode(text).storedRecord(Animal.self, in: "the table animals of zoo.sqlite")
  /// ```
  /// - Parameters:
  ///   - type: The record type.
  ///   - place: Where the row is, as in "the table animals of zoo.sqlite".
  /// - Throws: `RequestSetError` `.decodingFailed`.
  public func storedRecord<R: Decodable>(_ type: R.Type, in place: @autoclosure () -> String) throws -> R {
    do {
      return try decode(type)
    } catch {
      var id = FieldValue.null
      if case .object(let fields) = self, let stored = fields["id"] { id = stored }
      throw RequestSetError.recordDoesNotDecode(error, as: type, id: id, in: place())
    }
  }
}
