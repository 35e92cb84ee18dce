/// Builds the errors of format strings: what was expected, the character offset, the text
/// around it, and how to fix it.
///
/// ```
/// Expected a value after ">" but found "AND" at offset 6, near "age > AND name == 'x'".
/// Write a number, a quoted string, nil, true or false, or a substitution such as %@.
/// ```
struct _FormatSource {
  let text: String
  let bytes: [UInt8]

  init(_ text: String) {
    self.text = text
    self.bytes = Array(text.utf8)
  }

  /// The character offset of a byte offset (the lexer works on UTF-8).
  func characterOffset(_ byte: Int) -> Int {
    String(decoding: bytes[0..<min(max(byte, 0), bytes.count)], as: UTF8.self).count
  }

  /// Up to 24 characters either side of a character offset, with "…" where cut.
  func context(aroundCharacter offset: Int) -> String {
    let chars = Array(text)
    let start = max(0, offset - 24)
    let end = min(chars.count, offset + 24)
    guard start <= end else { return "" }
    return (start > 0 ? "…" : "") + String(chars[start..<end]) + (end < chars.count ? "…" : "")
  }

  /// `<what> at offset N, near "…". <fix>`
  func error(
    _ code: RequestSetError.Code, _ what: String, at byte: Int, fix: String, underlying: (any Error)? = nil
  ) -> RequestSetError {
    let offset = characterOffset(byte)
    return RequestSetError(
      code, "\(what) at offset \(offset), near \"\(context(aroundCharacter: offset))\". \(fix)",
      underlying: underlying)
  }

  /// The source text of a token, shortened, for "found …".
  func snippet(_ start: Int, _ end: Int) -> String {
    let clipped = bytes[min(start, bytes.count)..<min(max(end, start), bytes.count)]
    var s = String(decoding: clipped, as: UTF8.self)
    if s.count > 24 { s = String(s.prefix(24)) + "…" }
    return s
  }
}

/// What a value of an argument is, for messages: `"three" (String)`.
func _describeArgument(_ value: Any?) -> String {
  guard let value = value.flatMap(_unwrapOptional) else { return "nil" }
  let text: String
  if let s = value as? String { text = FieldValue.string(s).description } else { text = String(describing: value) }
  return "\(text.count > 40 ? String(text.prefix(40)) + "…" : text) (\(type(of: value)))"
}

/// The value inside an `Optional` held as `Any`, or the value itself.
func _unwrapOptional(_ value: Any) -> Any? {
  let mirror = Mirror(reflecting: value)
  guard mirror.displayStyle == .optional else { return value }
  return mirror.children.first.flatMap { _unwrapOptional($0.value) }
}
