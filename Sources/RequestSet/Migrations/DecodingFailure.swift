/// The `.decodingFailed` error of a stored record that no longer decodes as its type: it
/// names the record, the key and what the key holds, and says how to fix it.
enum _DecodingFailure {
  /// The dotted key a `DecodingError` is about, and what went wrong there.
  static func describe(_ error: any Error) -> (key: String?, reason: String) {
    func key(_ path: [any CodingKey]) -> String? {
      let names = path.filter { $0.intValue == nil }.map(\.stringValue)
      return names.isEmpty ? nil : FieldValue.key(forFieldNames: names)
    }
    switch error as? DecodingError {
    case .keyNotFound(let missing, let context)?:
      let k = key(context.codingPath + [missing])
      return (k, "the record has no \(k ?? missing.stringValue)")
    case .typeMismatch(let type, let context)?:
      let k = key(context.codingPath)
      return (k, "\(k ?? "a value") does not hold \(_withArticle(type)) (\(context.debugDescription))")
    case .valueNotFound(let type, let context)?:
      let k = key(context.codingPath)
      return (k, "\(k ?? "a value") is nil where \(_withArticle(type)) is needed")
    case .dataCorrupted(let context)?:
      let k = key(context.codingPath)
      return (k, "\(k ?? "the record") does not read: \(context.debugDescription)")
    default:
      return (nil, "\(error)")
    }
  }

  static func error(_ error: any Error, type: Any.Type, id: FieldValue, store: String) -> RequestSetError {
    let (key, reason) = describe(error)
    return RequestSetError(
      .decodingFailed,
      "The record with id \(id) in \(store) does not decode as \(type)\(key.map { " at the key \($0)" } ?? ""): "
        + "\(reason). \(type) changed since the record was written: register a Migration that brings old records "
        + "to the new shape (add the key with a default, rename or convert it), or make the property optional.",
      underlying: error)
  }
}

extension RequestSetError {
  /// The `.decodingFailed` error of a stored record that no longer decodes as its type,
  /// as every store reports it: the record's id, the key, what went wrong there, and how
  /// to fix it (a ``Migration``). For backends that check their records.
  ///
  /// ```swift
  /// do { _ = try body.decode(Element.self) } catch {
  ///   throw RequestSetError.recordDoesNotDecode(error, as: Element.self, id: id, in: "the table animals")
  /// }
  /// ```
  /// - Parameters:
  ///   - error: What the decoder threw.
  ///   - type: The record type.
  ///   - id: The record's id.
  ///   - place: Where the record is, as in "the table animals of zoo.sqlite".
  public static func recordDoesNotDecode(_ error: any Error, as type: Any.Type, id: FieldValue, in place: String)
    -> RequestSetError
  {
    _DecodingFailure.error(error, type: type, id: id, store: place)
  }
}
