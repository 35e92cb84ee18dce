import CLibPQ
import Foundation
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
  /// Every spelling of a password the string holds, longest first: as written in a URI's
  /// user info or a `password=` setting, percent-decoded, unquoted, and as libpq reads
  /// it. ``redact(_:)`` hides each wherever it appears.
  let secrets: [String]
  /// Why the string cannot be used, in words that quote none of it but its redacted form;
  /// nil when libpq parses it and its password is unambiguous.
  let problem: String?
  /// The string's own `connect_timeout`, as written, or nil.
  let connectTimeoutSetting: String?

  init(_ raw: String) {
    self.raw = raw
    var parseError: String?
    let password = Self._setting("password", in: raw, error: &parseError)
    self.password = password
    var ignored: String?
    connectTimeoutSetting = Self._setting("connect_timeout", in: raw, error: &ignored)
    let ambiguity = Self._ambiguity(raw)
    var secrets = Self._writtenPasswords(raw)
    // An ambiguous string is refused before libpq sees it, and libpq's reading of its
    // password (a part of it) would only blot out letters of the redacted form.
    if let password, ambiguity == nil { secrets.append(password) }
    self.secrets = Array(Set(secrets.filter { !$0.isEmpty })).sorted { $0.utf8.count > $1.utf8.count }
    var redacted = Self._redactForm(raw)
    // A password written again elsewhere (an option's value) is hidden there too; a very
    // short one is left, since it would blot out letters of every word it occurs in.
    for secret in self.secrets where secret.count >= 4 { redacted = redacted.replacing(secret, with: "***") }
    self.redacted = redacted
    if let parseError {
      problem = "libpq cannot parse it: " + Self._quotingOnly(parseError, raw: raw, redacted: redacted)
    } else {
      problem = ambiguity
    }
  }

  var description: String { redacted }

  /// `text` (a libpq or server message) with the connection string and every spelling of
  /// its password replaced by their redacted forms.
  func redact(_ text: String) -> String {
    var text = text.replacing(raw, with: redacted)
    for secret in secrets { text = text.replacing(secret, with: "***") }
    return text
  }

  /// `message` with each double-quoted part that is not in `redacted` elided, so that a
  /// message about a string libpq could not parse (which quotes the string, or the part
  /// it stopped at, password and all) shows no more of it than its redacted form; a quoted
  /// single punctuation mark (`"]"`, `"="`) stays.
  static func _quotingOnly(_ message: String, raw: String, redacted: String) -> String {
    let parts = message.split(separator: "\"", omittingEmptySubsequences: false)
    var out = ""
    for (i, part) in parts.enumerated() {
      if i > 0 { out += "\"" }
      guard i % 2 == 1, i < parts.count - 1 else {
        out += part
        continue
      }
      if part == raw {
        out += redacted
      } else if redacted.contains(part)
        || (part.count == 1 && part.allSatisfy({ $0.isPunctuation || $0.isSymbol }))
      {
        out += part
      } else {
        out += "…"
      }
    }
    return out
  }

  /// The scheme of a libpq URI that `raw` starts with, or nil for `key=value` form.
  private static func _scheme(_ raw: String) -> String? {
    ["postgresql://", "postgres://"].first { raw.hasPrefix($0) }
  }

  /// The user info's password as libpq's URI parser finds it: the user info runs from the
  /// scheme to the first `@` met before any `/`, and its password follows its first `:`.
  private static func _uriPassword(_ raw: String) -> Range<String.Index>? {
    guard let scheme = _scheme(raw) else { return nil }
    let rest = raw.dropFirst(scheme.count)
    guard let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@",
      let colon = rest[..<end].firstIndex(of: ":")
    else { return nil }
    return rest.index(after: colon)..<end
  }

  /// The passwords as written (and percent-decoded, and unquoted), wherever libpq's parser
  /// or a reader would find one: a URI's user info, `password=` settings.
  static func _writtenPasswords(_ raw: String) -> [String] {
    var found: [String] = []
    if let range = _uriPassword(raw) {
      found.append(String(raw[range]))
      if let decoded = String(raw[range]).removingPercentEncoding { found.append(decoded) }
    }
    // What `_redactForm` hides: the greedy user info of a URI, each `password=` value.
    for (value, _) in _settingValues(raw) {
      found.append(value)
      if value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 {
        found.append(String(value.dropFirst().dropLast()))
      }
      if let decoded = value.removingPercentEncoding { found.append(decoded) }
    }
    if let greedy = _greedyUserInfoPassword(raw) { found.append(String(raw[greedy])) }
    return found
  }

  /// A URI's password as a person may have meant it: from the first `:` after the scheme
  /// to the last `@` before the query, when that `:` comes before it.
  private static func _greedyUserInfoPassword(_ raw: String) -> Range<String.Index>? {
    guard let scheme = _scheme(raw) else { return nil }
    let rest = raw.dropFirst(scheme.count)
    let beforeQuery = rest[..<(rest.firstIndex(of: "?") ?? rest.endIndex)]
    guard let at = beforeQuery.lastIndex(of: "@"), let colon = beforeQuery[..<at].firstIndex(of: ":") else {
      return nil
    }
    return beforeQuery.index(after: colon)..<at
  }

  /// Why a URI's password is ambiguous (libpq would read part of it as the host or the
  /// database, and quote that part in its errors), or nil. A `@` or `/` in a URI's user
  /// name or password must be percent-encoded.
  static func _ambiguity(_ raw: String) -> String? {
    guard let scheme = _scheme(raw) else { return nil }
    let rest = raw.dropFirst(scheme.count)
    let beforeQuery = rest[..<(rest.firstIndex(of: "?") ?? rest.endIndex)]
    let ats = beforeQuery.filter { $0 == "@" }.count
    if ats > 1 {
      return
        "it holds more than one @ before its query, so libpq would read part of the password as the host. "
        + "Percent-encode @ in the user name, password and database name as %40"
    }
    if ats == 1, let at = beforeQuery.firstIndex(of: "@"), let slash = beforeQuery.firstIndex(of: "/"),
      slash < at
    {
      return "a / comes before its @, so libpq would read the user info as the host and the database. "
        + "Percent-encode / in the user name and password as %2F"
    }
    return nil
  }

  /// The hosts the string lists (libpq's `host`, `hostaddr` and `port` lists, as in
  /// `postgresql://app@db1:5432,db2:5432/zoo`), in the order libpq tries them; empty or
  /// one for a string naming one host or none.
  var hosts: [_Host] {
    var ignored: String?
    func list(_ keyword: String) -> [String] {
      guard let value = Self._setting(keyword, in: raw, error: &ignored), !value.isEmpty else { return [] }
      return value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }
    let names = list("host")
    let addresses = list("hostaddr")
    let ports = list("port")
    return (0..<max(names.count, addresses.count)).map { i in
      _Host(
        name: i < names.count ? names[i] : "", address: i < addresses.count ? addresses[i] : "",
        port: ports.count == 1 ? ports[0] : i < ports.count ? ports[i] : "")
    }
  }

  /// One host of a connection string's host list.
  struct _Host: Sendable, Equatable, CustomStringConvertible {
    /// Its entry in the `host` list (a name, an address or a socket's directory), or "".
    var name: String
    /// Its entry in the `hostaddr` list, or "".
    var address: String
    /// Its port, or "" for libpq's default.
    var port: String

    /// `host:port`, as errors name it.
    var description: String { (name.isEmpty ? address : name) + (port.isEmpty ? "" : ":" + port) }

    /// The libpq settings that restrict a connection string to `hosts` (the tail of its
    /// host list), given after the string so that they win: each of the `host`,
    /// `hostaddr` and `port` lists the string has, cut to those hosts.
    static func settings(_ hosts: ArraySlice<_Host>, of raw: String) -> [(String, String)] {
      var ignored: String?
      var settings: [(String, String)] = []
      if !(_ConnectionString._setting("host", in: raw, error: &ignored) ?? "").isEmpty {
        settings.append(("host", hosts.map(\.name).joined(separator: ",")))
      }
      if !(_ConnectionString._setting("hostaddr", in: raw, error: &ignored) ?? "").isEmpty {
        settings.append(("hostaddr", hosts.map(\.address).joined(separator: ",")))
      }
      if !(_ConnectionString._setting("port", in: raw, error: &ignored) ?? "").isEmpty {
        settings.append(("port", hosts.map(\.port).joined(separator: ",")))
      }
      return settings
    }

    /// The index in `hosts`, at `start` or after it (libpq tries them in order), of the
    /// host the connection `handle` is trying, as `PQhost` and `PQport` name it; nil
    /// when none matches.
    static func index(of handle: OpaquePointer, in hosts: [_Host], from start: Int) -> Int? {
      let host = PQhost(handle).map { String(cString: $0) } ?? ""
      let port = PQport(handle).map { String(cString: $0) } ?? ""
      return hosts.indices.dropFirst(start).first { i in
        (hosts[i].name.isEmpty ? hosts[i].address : hosts[i].name) == host
          && (hosts[i].port.isEmpty || hosts[i].port == port)
      }
    }
  }

  /// How long opening a connection may take: the string's `connect_timeout` when it has
  /// one (in seconds as libpq reads it: 0 or less for no limit, 1 as 2), else `default`.
  func connectTimeout(default value: Duration?) -> Duration? {
    guard let text = connectTimeoutSetting else { return value }
    guard let seconds = Int(text.trimmingCharacters(in: .whitespaces)) else { return value }
    return seconds <= 0 ? nil : .seconds(max(2, seconds))
  }

  /// The value of the setting `keyword` libpq would use, read by libpq's own parser; nil
  /// when the string has none or does not parse (then `error` is libpq's message).
  static func _setting(_ keyword: String, in raw: String, error message: inout String?) -> String? {
    var error: UnsafeMutablePointer<CChar>?
    guard let options = PQconninfoParse(raw, &error) else {
      message = error.map { String(cString: $0).trimmed } ?? "out of memory"
      if let error { PQfreemem(error) }
      return nil
    }
    defer { PQconninfoFree(options) }
    var option = options
    while let name = option.pointee.keyword {
      if String(cString: name) == keyword, let value = option.pointee.val {
        return String(cString: value)
      }
      option += 1
    }
    return nil
  }

  /// The string with every password replaced by `***`: a URI's user info password (as
  /// libpq reads it, and up to the last `@` before the query, as a person may have meant
  /// it) and any `password=` setting; works on strings libpq cannot parse too.
  static func _redactForm(_ raw: String) -> String {
    var ranges = _settingValues(raw).map(\.range)
    if let range = _uriPassword(raw) { ranges.append(range) }
    if let range = _greedyUserInfoPassword(raw) { ranges.append(range) }
    var merged: [Range<String.Index>] = []
    for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
      if let last = merged.last, range.lowerBound <= last.upperBound {
        merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
      } else {
        merged.append(range)
      }
    }
    var result = ""
    var at = raw.startIndex
    for range in merged {
      result += raw[at..<range.lowerBound] + "***"
      at = range.upperBound
    }
    return result + raw[at...]
  }

  /// Each `password=value` setting's value, as written, in key=value form or a URI's query:
  /// the value runs to the next space (key=value) or `&` (URI), or is single-quoted with
  /// backslash escapes.
  static func _settingValues(_ text: String) -> [(value: String, range: Range<String.Index>)] {
    var found: [(String, Range<String.Index>)] = []
    var i = text.startIndex
    while i < text.endIndex, let range = text[i...].range(of: "password") {
      guard _isSettingStart(text, range.lowerBound) else {
        i = range.upperBound
        continue
      }
      var j = range.upperBound
      while j < text.endIndex, text[j] == " " { j = text.index(after: j) }
      guard j < text.endIndex, text[j] == "=" else {
        i = range.upperBound
        continue
      }
      j = text.index(after: j)
      while j < text.endIndex, text[j] == " " { j = text.index(after: j) }
      let start = j
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
      if start < j { found.append((String(text[start..<j]), start..<j)) }
      i = j
    }
    return found
  }

  /// Whether a `password` at `index` starts a setting (not inside another word).
  private static func _isSettingStart(_ text: String, _ index: String.Index) -> Bool {
    guard index > text.startIndex else { return true }
    let before = text[text.index(before: index)]
    return before == " " || before == "?" || before == "&"
  }
}
