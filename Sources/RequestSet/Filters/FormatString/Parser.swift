/// A filter over string keys, independent of the record type: what format strings and
/// triplet queries parse into.
indirect enum _FieldPredicate: Sendable {
  case constant(Bool)
  case and([_FieldPredicate])
  case or([_FieldPredicate])
  case not(_FieldPredicate)
  case field(_FieldCondition)
}

extension _FilterNode {
  init(_ predicate: _FieldPredicate) {
    switch predicate {
    case .constant(let b): self = .constant(b)
    case .and(let parts): self = .and(parts.map(_FilterNode.init))
    case .or(let parts): self = .or(parts.map(_FilterNode.init))
    case .not(let inner): self = .not(_FilterNode(inner))
    case .field(let c): self = .field(c)
    }
  }
}

/// A recursive-descent parser for the NSPredicate format subset that applies to values.
///
/// ```
/// predicate  := or
/// or         := and (("OR" | "||") and)*
/// and        := not (("AND" | "&&") not)*
/// not        := ("NOT" | "!") not | primary
/// primary    := "(" or ")" | TRUEPREDICATE | FALSEPREDICATE | comparison
/// comparison := [ANY | SOME | ALL | NONE] operand operator [options] operand
/// operand    := keypath | %K | value | "{" [value ("," value)*] "}"
/// value      := number | "-" number | string | nil | NULL | true | false | YES | NO | %@ | %d | …
/// operator   := == = != <> < <= =< > >= => | BETWEEN | IN | CONTAINS | BEGINSWITH | ENDSWITH
///             | LIKE | MATCHES
/// options    := [c] | [d] | [cd]
/// ```
/// Keywords are case-insensitive. Nesting (parentheses, NOT, lists) is limited to
/// ``maxDepth`` levels so no input can exhaust the stack.
struct _FormatParser {
  static let maxDepth = 64

  let source: _FormatSource
  private var tokens: [_FormatToken]
  private var p = 0
  private var depth = 0

  /// Parses `format`, substituting `arguments`.
  static func parse(_ format: String, arguments: [(any Sendable)?]) throws -> _FieldPredicate {
    let source = _FormatSource(format)
    var lexer = _FormatLexer(source, arguments: arguments)
    var parser = _FormatParser(source: source, tokens: try lexer.tokenize())
    return try parser.parse()
  }

  init(source: _FormatSource, tokens: [_FormatToken]) {
    self.source = source
    self.tokens = tokens
  }

  private var current: _FormatToken { tokens[p] }

  private func found(_ t: _FormatToken) -> String {
    if case .end = t.kind { return "the end of the format string" }
    return "\"\(source.snippet(t.start, t.end))\""
  }

  private func isSymbol(_ s: String) -> Bool {
    if case .symbol(let x) = current.kind { return x == s }
    return false
  }

  private func isWord(_ w: _FormatWord) -> Bool {
    if case .word(let x) = current.kind { return x == w }
    return false
  }

  mutating func parse() throws -> _FieldPredicate {
    if case .end = current.kind {
      throw source.error(
        .invalidFormat, "Expected a predicate but found the end of the format string", at: 0,
        fix: "Write a comparison such as age > 3, or TRUEPREDICATE.")
    }
    let result = try _or()
    switch current.kind {
    case .end:
      return result
    case .symbol(")"):
      throw source.error(
        .invalidFormat, "Unbalanced parentheses: this \")\" has no matching \"(\"", at: current.start,
        fix: "Remove it, or add a \"(\" before it.")
    default:
      let previous = tokens[p - 1]
      throw source.error(
        .invalidFormat, "Expected AND, OR or the end after \(found(previous)) but found \(found(current))",
        at: current.start, fix: "Join comparisons with AND or OR, and quote text with ' or \".")
    }
  }

  private mutating func _enter(_ at: Int) throws {
    depth += 1
    if depth > Self.maxDepth {
      throw source.error(
        .invalidFormat, "Nesting deeper than \(Self.maxDepth) levels", at: at,
        fix: "Simplify the predicate: remove redundant parentheses or NOTs.")
    }
  }

  private mutating func _or() throws -> _FieldPredicate {
    var parts = [try _and()]
    while isWord(.or) || isSymbol("||") {
      p += 1
      parts.append(try _and())
    }
    return parts.count == 1 ? parts[0] : .or(parts)
  }

  private mutating func _and() throws -> _FieldPredicate {
    var parts = [try _not()]
    while isWord(.and) || isSymbol("&&") {
      p += 1
      parts.append(try _not())
    }
    return parts.count == 1 ? parts[0] : .and(parts)
  }

  private mutating func _not() throws -> _FieldPredicate {
    if isWord(.not) || isSymbol("!") {
      try _enter(current.start)
      defer { depth -= 1 }
      p += 1
      return .not(try _not())
    }
    return try _primary()
  }

  private mutating func _primary() throws -> _FieldPredicate {
    switch current.kind {
    case .symbol("("):
      let open = current
      try _enter(open.start)
      defer { depth -= 1 }
      p += 1
      let inner = try _or()
      guard isSymbol(")") else {
        if case .end = current.kind {
          throw source.error(
            .invalidFormat, "Unbalanced parentheses: this \"(\" is never closed", at: open.start,
            fix: "Add a \")\" after the grouped comparisons, or remove the \"(\".")
        }
        throw source.error(
          .invalidFormat, "Expected \")\", AND or OR but found \(found(current))", at: current.start,
          fix: "Close the group opened at offset \(source.characterOffset(open.start)) with \")\".")
      }
      p += 1
      return inner
    case .word(.truePredicate):
      p += 1
      return .constant(true)
    case .word(.falsePredicate):
      p += 1
      return .constant(false)
    default:
      return try _comparison()
    }
  }

  /// One side of a comparison.
  private enum Operand {
    case key(String, count: Bool)
    case value(FieldValue)
  }

  private mutating func _comparison() throws -> _FieldPredicate {
    var quantifier: _Quantifier?
    let quantifierToken = current
    switch current.kind {
    case .word(.any), .word(.some): quantifier = .any
    case .word(.all): quantifier = .all
    case .word(.none): quantifier = .noElement
    default: break
    }
    if quantifier != nil { p += 1 }
    let lhsToken = current
    let lhs = try _operand(after: quantifier == nil ? nil : quantifierToken)
    let opToken = current
    let op = try _operator(after: lhsToken)
    var options: _TextOptions = []
    if case .options(let o) = current.kind {
      options = o
      p += 1
    }
    let rhsToken = current
    let rhs = try _operand(after: opToken)

    switch (lhs, rhs) {
    case (.key(let key, let count), .value(let value)):
      return .field(
        try _condition(
          key: key, count: count, op: op, opToken: opToken, value: value, valueToken: rhsToken,
          options: options, quantifier: quantifier))
    case (.value(let value), .key(let key, let count)):
      if let quantifier {
        throw source.error(
          .invalidFormat, "\(quantifier.rawValue) needs a key right after it but found \(found(lhsToken))",
          at: lhsToken.start, fix: "Write \(quantifier.rawValue) tags == 'x', with the array key first.")
      }
      // A value on the left: mirror the comparison so the key comes first.
      let mirrored: _FieldOperator
      switch op {
      case .compare(.lessThan): mirrored = .compare(.greaterThan)
      case .compare(.lessThanOrEqual): mirrored = .compare(.greaterThanOrEqual)
      case .compare(.greaterThan): mirrored = .compare(.lessThan)
      case .compare(.greaterThanOrEqual): mirrored = .compare(.lessThanOrEqual)
      case .compare: mirrored = op
      // `'farm' IN tags`: tags contains 'farm'; `'Micky Mouse' CONTAINS name`: name IN it.
      case .in: mirrored = .text(.contains)
      case .text(.contains) where value._kind == .string: mirrored = .in
      default:
        throw source.error(
          .invalidFormat, "\(found(opToken)) needs the key on its left, but found the value \(found(lhsToken))",
          at: lhsToken.start, fix: "Write the key first, as in name BEGINSWITH 'M'.")
      }
      return .field(
        try _condition(
          key: key, count: count, op: mirrored, opToken: opToken, value: value, valueToken: lhsToken,
          options: options, quantifier: nil))
    case (.value(let left), .value(let right)):
      // Two values: decide now.
      let c = try _condition(
        key: "", count: false, op: op, opToken: opToken, value: right, valueToken: rhsToken,
        options: options, quantifier: quantifier)
      return .constant(c.matches(left))
    case (.key(let left, _), .key(let right, _)):
      throw source.error(
        .invalidFormat,
        "Comparing two keys (\(left) and \(right)) is not supported; found the key \(found(rhsToken))",
        at: rhsToken.start,
        fix: "Quote it ('\(right)') to compare with that text, or pass the value with %@.")
    }
  }

  private func _condition(
    key: String, count: Bool, op: _FieldOperator, opToken: _FormatToken, value: FieldValue,
    valueToken: _FormatToken, options: _TextOptions, quantifier: _Quantifier?
  ) throws -> _FieldCondition {
    switch op {
    case .between:
      guard case .array(let bounds) = value, bounds.count == 2 else {
        throw source.error(
          .invalidFormat, "BETWEEN expects two values {lower, upper} but found \(found(valueToken))",
          at: valueToken.start, fix: "Write \(key.isEmpty ? "age" : key) BETWEEN {1, 5}, or pass a two-element array.")
      }
    case .in:
      switch value {
      case .array, .string: break
      default:
        throw source.error(
          .invalidFormat, "IN expects a list but found \(found(valueToken))", at: valueToken.start,
          fix: "Write a list such as {1, 2}, or pass an array with %@.")
      }
    case .text(let t) where t != .contains:
      guard case .string = value else {
        throw source.error(
          .typeMismatch, "\(t.rawValue) compares text but found \(found(valueToken)), \(_withArticle(value._kind.description)),",
          at: valueToken.start, fix: "Quote the text, or use == to compare numbers.")
      }
    default:
      break
    }
    do {
      return try _FieldCondition(
        key: key, op: op, value: value, options: options, quantifier: quantifier, countsElements: count)
    } catch {
      throw source.error(
        .invalidFormat, "Invalid regular expression \(value) for MATCHES", at: valueToken.start,
        fix: "Fix the pattern (ICU syntax; it must match the whole string).", underlying: error)
    }
  }

  private mutating func _operator(after previous: _FormatToken) throws -> _FieldOperator {
    let t = current
    let op: _FieldOperator
    switch t.kind {
    case .symbol("=="): op = .compare(.equal)
    case .symbol("!="): op = .compare(.notEqual)
    case .symbol("<"): op = .compare(.lessThan)
    case .symbol("<="): op = .compare(.lessThanOrEqual)
    case .symbol(">"): op = .compare(.greaterThan)
    case .symbol(">="): op = .compare(.greaterThanOrEqual)
    case .word(.between): op = .between
    case .word(.in): op = .in
    case .word(.contains): op = .text(.contains)
    case .word(.beginsWith): op = .text(.beginsWith)
    case .word(.endsWith): op = .text(.endsWith)
    case .word(.like): op = .text(.like)
    case .word(.matches): op = .text(.matches)
    case .word(.not):
      throw source.error(
        .invalidFormat, "Unknown operator \"NOT\" after \(found(previous))", at: t.start,
        fix: "Put NOT before the whole comparison, as in NOT (name IN {'a', 'b'}).")
    case .key(let word):
      throw source.error(
        .invalidFormat, "Unknown operator \"\(word)\" after \(found(previous))", at: t.start,
        fix: "Use ==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE or MATCHES.")
    default:
      throw source.error(
        .invalidFormat, "Expected an operator after \(found(previous)) but found \(found(t))", at: t.start,
        fix: "Use ==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE or MATCHES.")
    }
    p += 1
    return op
  }

  private mutating func _operand(after previous: _FormatToken?) throws -> Operand {
    let t = current
    switch t.kind {
    case .key(let path):
      p += 1
      return try _keyPath(path, t)
    case .value(let v):
      p += 1
      return .value(v)
    case .symbol("-"):
      p += 1
      switch current.kind {
      case .value(.int(let i)) where i != Int.min:
        p += 1
        return .value(.int(-i))
      case .value(.double(let d)):
        p += 1
        return .value(.double(-d))
      default:
        throw source.error(
          .invalidFormat, "Expected a number after \"-\" but found \(found(current))", at: current.start,
          fix: "Write a negative number as -3 or -2.5.")
      }
    case .symbol("{"):
      return .value(try _list())
    default:
      let what = previous.map { "Expected a key or a value after \(found($0))" } ?? "Expected a comparison"
      throw source.error(
        .invalidFormat, "\(what) but found \(found(t))", at: t.start,
        fix: "Write a key, a number, a quoted string, nil, true or false, a list {…}, or a substitution such as %@.")
    }
  }

  /// `{a, b, …}`.
  private mutating func _list() throws -> FieldValue {
    let open = current
    try _enter(open.start)
    defer { depth -= 1 }
    p += 1
    var items: [FieldValue] = []
    if isSymbol("}") {
      p += 1
      return .array(items)
    }
    while true {
      let itemToken = current
      switch try _operand(after: tokens[p - 1]) {
      case .value(let v): items.append(v)
      case .key:
        throw source.error(
          .invalidFormat, "Expected a value in the list but found the key \(found(itemToken))",
          at: itemToken.start, fix: "Quote text in a list, as in {'Cow', 'Dog'}.")
      }
      if isSymbol(",") {
        p += 1
        continue
      }
      if isSymbol("}") {
        p += 1
        return .array(items)
      }
      if case .end = current.kind {
        throw source.error(
          .invalidFormat, "Unbalanced braces: this \"{\" is never closed", at: open.start,
          fix: "Close the list with \"}\".")
      }
      throw source.error(
        .invalidFormat, "Expected \",\" or \"}\" in the list but found \(found(current))", at: current.start,
        fix: "Separate list values with commas and close the list with \"}\".")
    }
  }

  /// A key path, with a final `@count`; other collection operators are not supported.
  private func _keyPath(_ path: String, _ t: _FormatToken) throws -> Operand {
    guard path.contains("@") else { return .key(path, count: false) }
    var components = path.split(separator: ".", omittingEmptySubsequences: false)
    if let last = components.last, last.lowercased() == "@count", components.count > 1 {
      components.removeLast()
      let key = components.joined(separator: ".")
      if !key.contains("@") { return .key(key, count: true) }
    }
    let op = components.first { $0.hasPrefix("@") }.map(String.init) ?? path
    throw source.error(
      .invalidFormat, "Unsupported collection operator \"\(op)\" in \"\(path)\"", at: t.start,
      fix: "Only @count is supported, at the end of a key path (tags.@count).")
  }
}
