/// A token of a format string.
struct _FormatToken: Sendable {
  enum Kind: Sendable, Equatable {
    /// A key path: `name`, `owner.city`, `tags.@count`, `#in` (a reserved word used as a
    /// key), or the argument of `%K`.
    case key(String)
    /// A reserved word (case-insensitive).
    case word(_FormatWord)
    /// A literal or the argument of `%@`, `%d`, `%i`, `%ld`, `%f`, `%s`.
    case value(FieldValue)
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`, `(`, `)`, `{`, `}`, `,`, the
    /// arithmetic `+`, `-`, `*`, `/`, `**`, a subscript's `[` and `]`, and a `.` that
    /// continues a key path after `)` or `]` (`=`, `<>`, `=<`, `=>` arrive as their canonical
    /// spelling).
    case symbol(String)
    /// A key escaped with `#` (`#self`, `#subquery`): a key, whatever its name.
    case escapedKey(String)
    /// A function name with its colons, as NSExpression names it: `sum:`, `raise:toPower:`.
    case function(String)
    /// `[c]`, `[d]`, `[cd]` after an operator.
    case options(_TextOptions)
    case end
  }

  var kind: Kind
  /// Byte offsets of the token in the format string.
  var start: Int
  var end: Int
}

/// The reserved words of the grammar. `NIL`/`NULL`, `TRUE`/`YES`, `FALSE`/`NO` become values.
enum _FormatWord: String, Sendable, CaseIterable {
  case and = "AND", or = "OR", not = "NOT"
  case between = "BETWEEN", `in` = "IN"
  case contains = "CONTAINS", beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", like = "LIKE", matches = "MATCHES"
  case any = "ANY", some = "SOME", all = "ALL", none = "NONE"
  case truePredicate = "TRUEPREDICATE", falsePredicate = "FALSEPREDICATE"
  case subquery = "SUBQUERY"

  /// The words that are comparison operators (options in brackets may follow them).
  static let operators: Set<_FormatWord> = [.between, .in, .contains, .beginsWith, .endsWith, .like, .matches]
}

/// Splits a format string into tokens and substitutes the arguments.
///
/// It works on UTF-8 bytes; offsets in errors are converted to characters. Arguments are
/// consumed in the order their substitutions appear, as `printf` does.
struct _FormatLexer {
  let source: _FormatSource
  let arguments: [(any Sendable)?]
  private var i = 0
  private(set) var usedArguments = 0
  /// Where the first substitution without an argument was, to report the count.
  private var tokens: [_FormatToken] = []

  init(_ source: _FormatSource, arguments: [(any Sendable)?]) {
    self.source = source
    self.arguments = arguments
  }

  static let words: [String: _FormatWord] = Dictionary(
    uniqueKeysWithValues: _FormatWord.allCases.map { ($0.rawValue, $0) })

  mutating func tokenize() throws -> [_FormatToken] {
    let b = source.bytes
    tokens.reserveCapacity(b.count / 4 + 4)  // about one token per 4 bytes: no regrowth
    while true {
      while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
      guard i < b.count else { break }
      let start = i
      let c = b[i]
      switch c {
      case UInt8(ascii: "'"), UInt8(ascii: "\""):
        tokens.append(_FormatToken(kind: .value(.string(try _string(quote: c))), start: start, end: i))
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        tokens.append(_FormatToken(kind: .value(try _number()), start: start, end: i))
      case UInt8(ascii: "%"):
        tokens.append(try _substitution())
      case UInt8(ascii: "["):
        // Right after an operator, `[c]`/`[d]` are options; anywhere else `[` opens a subscript.
        if _afterOperator {
          tokens.append(try _options())
        } else {
          i += 1
          tokens.append(_FormatToken(kind: .symbol("["), start: start, end: i))
        }
      case UInt8(ascii: "*") where i + 1 < b.count && b[i + 1] == UInt8(ascii: "*"):
        i += 2
        tokens.append(_FormatToken(kind: .symbol("**"), start: start, end: i))
      case UInt8(ascii: ".") where i + 1 < b.count && (_isIdentifierStart(b[i + 1]) || b[i + 1] == UInt8(ascii: "@")):
        i += 1
        tokens.append(_FormatToken(kind: .symbol("."), start: start, end: i))
      case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ","),
        UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "*"), UInt8(ascii: "/"), UInt8(ascii: "]"):
        i += 1
        tokens.append(_FormatToken(kind: .symbol(String(UnicodeScalar(c))), start: start, end: i))
      case UInt8(ascii: "="), UInt8(ascii: "!"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"),
        UInt8(ascii: "|"):
        tokens.append(try _operator())
      default:
        if _isIdentifierStart(c) || c == UInt8(ascii: "#") || c == UInt8(ascii: "@") {
          tokens.append(_identifier())
        } else {
          throw _unexpectedCharacter(at: start)
        }
      }
    }
    tokens.append(_FormatToken(kind: .end, start: b.count, end: b.count))
    if usedArguments < arguments.count {
      let n = arguments.count
      throw RequestSetError(
        .argumentCount,
        "The format string has \(_plural(usedArguments, "substitution")) but \(_plural(n, "argument")) "
          + "\(n == 1 ? "was" : "were") given, in \"\(source.context(aroundCharacter: 0))\". "
          + "Remove the extra arguments, or add a substitution such as %@ for each.")
    }
    return tokens
  }

  private func _unexpectedCharacter(at start: Int) -> RequestSetError {
    var end = start + 1
    while end < source.bytes.count, source.bytes[end] & 0xC0 == 0x80 { end += 1 }
    return source.error(
      .invalidFormat, "Unexpected character \"\(source.snippet(start, end))\"", at: start,
      fix: "Quote text with ' or \", and use ==, !=, <, <=, >, >=, AND, OR, NOT and parentheses.")
  }

  /// Whether the last token is a comparison operator, after which `[` starts options.
  private var _afterOperator: Bool {
    switch tokens.last?.kind {
    case .symbol("=="), .symbol("!="), .symbol("<"), .symbol("<="), .symbol(">"), .symbol(">="): return true
    case .word(let w): return _FormatWord.operators.contains(w)
    default: return false
    }
  }

  @inline(__always)
  private func _isIdentifierStart(_ c: UInt8) -> Bool {
    (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") || c == UInt8(ascii: "_")
      || c == UInt8(ascii: "$") || c >= 0x80
  }

  @inline(__always)
  private func _isIdentifierPart(_ c: UInt8) -> Bool {
    _isIdentifierStart(c) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
  }

  /// A key path or a reserved word. `#word` escapes a reserved word; dots join components;
  /// `@count` may follow a dot.
  private mutating func _identifier() -> _FormatToken {
    let b = source.bytes
    let start = i
    let escaped = b[i] == UInt8(ascii: "#")
    if escaped { i += 1 }
    if i < b.count, b[i] == UInt8(ascii: "@") { i += 1 }
    while i < b.count {
      if _isIdentifierPart(b[i]) {
        i += 1
      } else if b[i] == UInt8(ascii: "."), i + 1 < b.count,
        _isIdentifierStart(b[i + 1]) || b[i + 1] == UInt8(ascii: "@")
      {
        i += 2
      } else {
        break
      }
    }
    if !escaped, i < b.count, b[i] == UInt8(ascii: ":"), !b[start..<i].contains(UInt8(ascii: ".")) {
      // `sum:`, `raise:toPower:`: a function name keeps its colons.
      i += 1
      while i < b.count, _isIdentifierStart(b[i]) {
        var j = i
        while j < b.count, _isIdentifierPart(b[j]) { j += 1 }
        guard j < b.count, b[j] == UInt8(ascii: ":") else { break }
        i = j + 1
      }
      return _FormatToken(kind: .function(String(decoding: b[start..<i], as: UTF8.self)), start: start, end: i)
    }
    let text = String(decoding: b[(escaped ? start + 1 : start)..<i], as: UTF8.self)
    // Reserved words are ASCII letters, 2 to 14 of them: anything else is a key, found
    // without uppercasing it (which allocates) or hashing it.
    if !escaped, (2...14).contains(i - start), b[start..<i].allSatisfy({ ($0 | 0x20) &- 0x61 < 26 }) {
      var upper = [UInt8](b[start..<i])
      for k in upper.indices { upper[k] &= ~0x20 }
      switch String(decoding: upper, as: UTF8.self) {
      case "NIL", "NULL": return _FormatToken(kind: .value(.null), start: start, end: i)
      case "TRUE", "YES": return _FormatToken(kind: .value(.bool(true)), start: start, end: i)
      case "FALSE", "NO": return _FormatToken(kind: .value(.bool(false)), start: start, end: i)
      case let upper:
        if let word = Self.words[upper] { return _FormatToken(kind: .word(word), start: start, end: i) }
      }
    }
    return _FormatToken(kind: escaped ? .escapedKey(text) : .key(text), start: start, end: i)
  }

  /// `==`, `=`, `!=`, `<>`, `<`, `<=`, `=<`, `>`, `>=`, `=>`, `&&`, `||`, `!`.
  private mutating func _operator() throws -> _FormatToken {
    let b = source.bytes
    let start = i
    let c = b[i]
    let next: UInt8 = i + 1 < b.count ? b[i + 1] : 0
    func token(_ text: String, _ length: Int) -> _FormatToken {
      i += length
      return _FormatToken(kind: .symbol(text), start: start, end: i)
    }
    switch (c, next) {
    case (UInt8(ascii: "="), UInt8(ascii: "=")): return token("==", 2)
    case (UInt8(ascii: "="), UInt8(ascii: "<")): return token("<=", 2)
    case (UInt8(ascii: "="), UInt8(ascii: ">")): return token(">=", 2)
    case (UInt8(ascii: "="), _): return token("==", 1)
    case (UInt8(ascii: "!"), UInt8(ascii: "=")): return token("!=", 2)
    case (UInt8(ascii: "!"), _): return token("!", 1)
    case (UInt8(ascii: "<"), UInt8(ascii: ">")): return token("!=", 2)
    case (UInt8(ascii: "<"), UInt8(ascii: "=")): return token("<=", 2)
    case (UInt8(ascii: "<"), _): return token("<", 1)
    case (UInt8(ascii: ">"), UInt8(ascii: "=")): return token(">=", 2)
    case (UInt8(ascii: ">"), _): return token(">", 1)
    case (UInt8(ascii: "&"), UInt8(ascii: "&")): return token("&&", 2)
    case (UInt8(ascii: "|"), UInt8(ascii: "|")): return token("||", 2)
    default:
      let doubled = String(UnicodeScalar(c)) + String(UnicodeScalar(c))
      throw source.error(
        .invalidFormat, "Unexpected character \"\(UnicodeScalar(c))\"", at: start,
        fix: "Write \(doubled) (or \(c == UInt8(ascii: "&") ? "AND" : "OR")) to combine comparisons.")
    }
  }

  /// `[c]`, `[d]`, `[cd]`.
  private mutating func _options() throws -> _FormatToken {
    let b = source.bytes
    let start = i
    i += 1
    var options: _TextOptions = []
    var valid = true
    // `[fts]`: full-text search, after MATCHES.
    if i + 4 <= b.count, b[i..<i + 3].map({ $0 | 0x20 }) == Array("fts".utf8), b[i + 3] == UInt8(ascii: "]") {
      i += 4
      return _FormatToken(kind: .options(.fullText), start: start, end: i)
    }
    while i < b.count, b[i] != UInt8(ascii: "]") {
      switch b[i] | 0x20 {
      case UInt8(ascii: "c"): options.insert(.caseInsensitive)
      case UInt8(ascii: "d"): options.insert(.diacriticInsensitive)
      default: valid = false
      }
      i += 1
      if i - start > 8 { break }
    }
    guard valid, i < b.count, b[i] == UInt8(ascii: "]"), !options.isEmpty else {
      var end = i
      if end < b.count, b[end] == UInt8(ascii: "]") { end += 1 }
      throw source.error(
        .invalidFormat, "Unknown comparison option \"\(source.snippet(start, end))\"", at: start,
        fix:
          "Use [c] (case-insensitive), [d] (diacritic-insensitive) or [cd] right after the operator, or [fts] "
          + "after MATCHES for full-text search.")
    }
    i += 1
    return _FormatToken(kind: .options(options), start: start, end: i)
  }

  /// A decimal integer or floating-point number, or a hexadecimal integer (`0x1F`).
  private mutating func _number() throws -> FieldValue {
    let b = source.bytes
    let start = i
    func digits(_ isDigit: (UInt8) -> Bool) { while i < b.count, isDigit(b[i]) { i += 1 } }
    let decimal: (UInt8) -> Bool = { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    if b[i] == UInt8(ascii: "0"), i + 1 < b.count, b[i + 1] | 0x20 == UInt8(ascii: "x") {
      i += 2
      let digitsStart = i
      digits { decimal($0) || ($0 | 0x20 >= UInt8(ascii: "a") && $0 | 0x20 <= UInt8(ascii: "f")) }
      let text = String(decoding: b[digitsStart..<i], as: UTF8.self)
      guard let value = Int(text, radix: 16) else {
        throw source.error(
          .invalidFormat, "Invalid hexadecimal number \"\(source.snippet(start, i))\"", at: start,
          fix: "Write hexadecimal digits after 0x, at most \(Int.max) in value.")
      }
      return .int(value)
    }
    digits(decimal)
    var isInteger = true
    if i + 1 < b.count, b[i] == UInt8(ascii: "."), decimal(b[i + 1]) {
      isInteger = false
      i += 1
      digits(decimal)
    }
    if i < b.count, b[i] | 0x20 == UInt8(ascii: "e") {
      var j = i + 1
      if j < b.count, b[j] == UInt8(ascii: "+") || b[j] == UInt8(ascii: "-") { j += 1 }
      if j < b.count, decimal(b[j]) {
        isInteger = false
        i = j
        digits(decimal)
      }
    }
    let text = String(decoding: b[start..<i], as: UTF8.self)
    if isInteger, let value = Int(text) { return .int(value) }
    return .double(Double(text) ?? .infinity)
  }

  /// A quoted string. Escapes: `\n`, `\t`, `\r`, `\0`, `\\`, `\'`, `\"`, `\uXXXX`; any other
  /// escaped character keeps its backslash, so regular expressions (`'\d+'`) and LIKE
  /// patterns (`'100\*'`) read as written. `%%` is a literal `%`; other substitutions are
  /// not replaced inside quotes.
  private mutating func _string(quote: UInt8) throws -> String {
    let b = source.bytes
    let start = i
    i += 1
    var out: [UInt8] = []
    while i < b.count, b[i] != quote {
      let c = b[i]
      if c == UInt8(ascii: "%"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "%") {
        out.append(c)
        i += 2
        continue
      }
      guard c == UInt8(ascii: "\\"), i + 1 < b.count else {
        out.append(c)
        i += 1
        continue
      }
      let e = b[i + 1]
      i += 2
      switch e {
      case UInt8(ascii: "n"): out.append(0x0A)
      case UInt8(ascii: "t"): out.append(0x09)
      case UInt8(ascii: "r"): out.append(0x0D)
      case UInt8(ascii: "0"): out.append(0x00)
      case UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""): out.append(e)
      case UInt8(ascii: "u"):
        if i + 4 <= b.count, let code = UInt32(String(decoding: b[i..<(i + 4)], as: UTF8.self), radix: 16),
          let scalar = Unicode.Scalar(code)
        {
          out.append(contentsOf: Array(String(Character(scalar)).utf8))
          i += 4
        } else {
          out.append(contentsOf: [UInt8(ascii: "\\"), e])
        }
      default:
        out.append(contentsOf: [UInt8(ascii: "\\"), e])
      }
    }
    guard i < b.count else {
      let q = String(UnicodeScalar(quote))
      throw source.error(
        .invalidFormat, "Unterminated string: this \(q) is never closed",
        at: start, fix: "Close the string with \(q), and write \\\(q) for a \(q) inside it.")
    }
    i += 1
    return String(decoding: out, as: UTF8.self)
  }

  /// `%@`, `%K`, `%d`, `%i`, `%ld`, `%lld`, `%f`, `%lf`, `%s`; `%%` outside quotes is an error.
  private mutating func _substitution() throws -> _FormatToken {
    let b = source.bytes
    let start = i
    i += 1
    var spec = ""
    while i < b.count, spec.count < 3 {
      let c = b[i]
      spec.append(Character(UnicodeScalar(c < 0x80 ? c : UInt8(ascii: "?"))))
      i += 1
      if c != UInt8(ascii: "l") { break }
    }
    let text = "%" + spec
    func take() throws -> (any Sendable)? {
      guard usedArguments < arguments.count else {
        throw source.error(
          .argumentCount,
          "Missing argument: \(_plural(arguments.count, "argument")) \(arguments.count == 1 ? "was" : "were") "
            + "given, but \(text) is substitution \(usedArguments + 1)",
          at: start,
          fix: "Pass one argument for each %@, %K, %d, %i, %ld, %f and %s, in order.")
      }
      defer { usedArguments += 1 }
      return arguments[usedArguments]
    }
    func mismatch(_ expected: String, _ arg: (any Sendable)?, _ fix: String) -> RequestSetError {
      source.error(
        .typeMismatch, "\(text) expects \(expected) but argument \(usedArguments) is \(_describeArgument(arg))",
        at: start, fix: fix)
    }
    let kind: _FormatToken.Kind
    switch spec {
    case "@":
      let arg = try take()
      do {
        kind = .value(try _encodeArgument(arg))
      } catch {
        throw source.error(
          .typeMismatch,
          "%@ expects a String, a number, a Bool, nil, an array or another Encodable value, but argument "
            + "\(usedArguments) is \(_describeArgument(arg))",
          at: start, fix: "Pass a value of the type the field holds.", underlying: error)
      }
    case "K":
      let arg = try take()
      guard let key = arg as? String else {
        throw mismatch("a key name (a String)", arg, "Pass the key as a String, such as \"name\" or \"owner.city\".")
      }
      kind = .key(key)
    case "d", "i", "ld", "li", "lld", "lli":
      let arg = try take()
      if let value = arg as? Int {
        // The common argument, without the cast to an existential below.
        kind = .value(.int(value))
        break
      }
      guard let integer = arg as? any BinaryInteger, !(arg is Bool), let value = Int(exactly: integer) else {
        throw mismatch("an integer", arg, "Pass an Int, or use %@ for a value of any type.")
      }
      kind = .value(.int(value))
    case "f", "lf":
      let arg = try take()
      if let d = arg as? any BinaryFloatingPoint {
        kind = .value(.double(Double(d)))
      } else if let integer = arg as? any BinaryInteger, let d = Double(exactly: integer) {
        kind = .value(.double(d))
      } else {
        throw mismatch("a floating-point number", arg, "Pass a Double, or use %@ for a value of any type.")
      }
    case "s":
      let arg = try take()
      guard let s = arg as? any StringProtocol else {
        throw mismatch("a String", arg, "Pass a String, or use %@ for a value of any type.")
      }
      kind = .value(.string(String(s)))
    case "%":
      throw source.error(
        .invalidFormat, "\"%%\" (a literal percent sign) outside a quoted string", at: start,
        fix: "Write it inside quotes, as in name LIKE '*100%%*'.")
    default:
      throw source.error(
        .invalidFormat, "Unknown substitution \"\(source.snippet(start, i))\"", at: start,
        fix: "Use %@ (any value), %K (a key), %d, %i or %ld (an integer), %f (a Double) or %s (a String).")
    }
    return _FormatToken(kind: kind, start: start, end: i)
  }
}

/// Encodes a `%@` argument, an IN list element or a triplet value the way records encode.
func _encodeArgument(_ value: (any Sendable)?) throws -> FieldValue {
  guard let value else { return .null }
  // The scalar cases stay ahead of the Encodable one although `_FieldEncoder.encode` has
  // the same fast path: triplet values reach here in forms that the `any Encodable` case
  // does not handle the same way (TripletTests fail without these lines).
  switch value {
  case let s as String: return .string(s)
  case let i as Int: return .int(i)
  case let d as Double: return .double(d)
  case let b as Bool: return .bool(b)
  case let f as FieldValue: return f
  case let e as any Encodable: return try _FieldEncoder.encode(e)
  case let a as [any Sendable]: return .array(try a.map { try _encodeArgument($0) })
  case let a as [(any Sendable)?]: return .array(try a.map { try _encodeArgument($0) })
  default:
    throw RequestSetError(
      .typeMismatch, "A value of type \(type(of: value)) cannot be compared with a record's fields: it is not Encodable.")
  }
}

func _plural(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
