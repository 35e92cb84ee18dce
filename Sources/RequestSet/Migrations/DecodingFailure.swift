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
