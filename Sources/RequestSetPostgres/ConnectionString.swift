import CLibPQ
import RequestSet

/// A libpq connection string (a `postgresql://` URI or `key=value` pairs) and its redacted
/// form: what descriptions, errors and `explain()` show, with the password replaced by
/// `***`. Everything else (`sslmode`, `connect_timeout`, …) passes to libpq untouched.
struct _ConnectionString: Sendable, CustomStringConvertible {
  /// The string as given, for libpq only.
  let raw: String
  /// The password libpq reads from it, if any.
  let password: String?
  /// The string with every password replaced by `***`.
  let redacted: String

  init(_ raw: String) {
    self.raw = raw
    let password = Self._password(in: raw)
    self.password = password
    var redacted = Self._redactForm(raw)
    if let password, !password.isEmpty { redacted = redacted.replacing(password, with: "***") }
    self.redacted = redacted
  }

  var description: String { redacted }

  /// `text` (a libpq or server message) with the password replaced by `***` wherever it
  /// appears.
  func redact(_ text: String) -> String {
    guard let password, !password.isEmpty else { return text }
    return text.replacing(password, with: "***")
  }

  /// The password libpq would use, read by libpq's own parser; nil when the string has
  /// none or does not parse.
  static func _password(in raw: String) -> String? {
    var error: UnsafeMutablePointer<CChar>?
    guard let options = PQconninfoParse(raw, &error) else {
      if let error { PQfreemem(error) }
      return nil
    }
    defer { PQconninfoFree(options) }
    var option = options
    while let keyword = option.pointee.keyword {
      if String(cString: keyword) == "password", let value = option.pointee.val {
        return String(cString: value)
      }
      option += 1
    }
    return nil
  }

  /// The string with the password of a URI's user info, and any `password=` setting,
  /// replaced by `***`; works on strings libpq cannot parse too.
  static func _redactForm(_ raw: String) -> String {
    var text = raw
    // URI: scheme://user:password@host — the password ends at the last `@` of the authority.
    for scheme in ["postgresql://", "postgres://"] where text.hasPrefix(scheme) {
      let rest = text.dropFirst(scheme.count)
      let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
      let authority = rest[..<authorityEnd]
      if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
        text = scheme + rest[...colon] + "***" + rest[at...]
      }
    }
    // `password=value` in key=value form or a URI's query: the value runs to the next
    // space (key=value) or `&` (URI), or is single-quoted with backslash escapes.
    var result = ""
    var i = text.startIndex
    while i < text.endIndex {
      if let range = text[i...].range(of: "password"), _isSettingStart(text, range.lowerBound) {
        var j = range.upperBound
        while j < text.endIndex, text[j] == " " { j = text.index(after: j) }
        guard j < text.endIndex, text[j] == "=" else {
          result += text[i..<range.upperBound]
          i = range.upperBound
          continue
        }
        j = text.index(after: j)
        while j < text.endIndex, text[j] == " " { j = text.index(after: j) }
        result += text[i..<j] + "***"
        if j < text.endIndex, text[j] == "'" {
          j = text.index(after: j)
          while j < text.endIndex, text[j] != "'" {
            if text[j] == "\\" { j = text.index(after: j) }
            if j < text.endIndex { j = text.index(after: j) }
          }
          if j < text.endIndex { j = text.index(after: j) }
        } else {
          while j < text.endIndex, text[j] != " ", text[j] != "&" { j = text.index(after: j) }
        }
        i = j
      } else {
        result += text[i...]
        break
      }
    }
    return result
  }

  /// Whether a `password` at `index` starts a setting (not inside another word).
  private static func _isSettingStart(_ text: String, _ index: String.Index) -> Bool {
    guard index > text.startIndex else { return true }
    let before = text[text.index(before: index)]
    return before == " " || before == "?" || before == "&"
  }
}
