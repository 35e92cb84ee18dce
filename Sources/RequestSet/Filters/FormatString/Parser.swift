/// A filter over string keys, independent of the record type: what format strings and
/// triplet queries parse into.
indirect enum _FieldPredicate: Sendable {
  case constant(Bool)
  case and([_FieldPredicate])
  case or([_FieldPredicate])
  case not(_FieldPredicate)
  case field(_FieldCondition)
  /// A comparison computed on each record (see FormatExpression.swift).
  case expression(_ExpressionCondition)
  /// `key MATCHES[fts] 'words'`: full-text search (see TextSearch.swift).
  case search(_TextSearchCondition)
}

extension _FilterNode {
  init(_ predicate: _FieldPredicate) {
    switch predicate {
    case .constant(let b): self = .constant(b)
    case .and(let parts): self = .and(parts.map(_FilterNode.init))
    case .or(let parts): self = .or(parts.map(_FilterNode.init))
    case .not(let inner): self = .not(_FilterNode(inner))
    case .field(let c): self = .field(c)
    case .expression(let c): self = .expression(c)
    case .search(let c): self = .search(c)
    }
  }
}

/// A recursive-descent parser for NSPredicate's format grammar.
///
/// ```
/// predicate  := or
/// or         := and (("OR" | "||") and)*
/// and        := not (("AND" | "&&") not)*
/// not        := ("NOT" | "!") not | primary
/// primary    := "(" or ")" | TRUEPREDICATE | FALSEPREDICATE | comparison
/// comparison := [ANY | SOME | ALL | NONE] expr operator [options] expr
/// expr       := term (("+" | "-") term)*
/// term       := unary (("*" | "/") unary)*
/// unary      := "-" unary | power
/// power      := postfix ("**" unary)*
/// postfix    := atom ("[" (FIRST | LAST | SIZE | expr) "]" | "." keypath)*
/// atom       := keypath | SELF | $variable | %K | value | "(" expr ")" | "{" [expr ("," expr)*] "}"
///             | name:(expr, …) | now() | SUBQUERY "(" expr "," $variable "," predicate ")"
/// keypath    := key ("." key)* with collection operators @count @sum @avg @min @max
/// value      := number | string | nil | NULL | true | false | YES | NO | %@ | %d | …
/// operator   := == = != <> < <= =< > >= => | BETWEEN | IN | CONTAINS | BEGINSWITH | ENDSWITH
///             | LIKE | MATCHES
/// options    := [c] | [d] | [cd]
/// ```
/// Keywords are case-insensitive. A "(" opens an expression when what follows its ")"
/// continues one, else a group. Constant expressions fold as they are parsed; a comparison
/// of a key with a constant becomes a field condition, anything else an expression
/// condition computed on each record. Nesting (parentheses, NOT, lists, subscripts,
/// function calls, SUBQUERY, and each operator of an arithmetic chain) is limited to
/// ``maxDepth`` levels so no input can exhaust the stack, here or in the walks over the
/// tree it builds.
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

  /// For each "(" token, the index of its ")" (unmatched ones are absent): tells a group
  /// of predicates from a parenthesized expression in one look.
  private lazy var closing: [Int: Int] = {
    var open: [Int] = []
    var result: [Int: Int] = [:]
    for (i, t) in tokens.enumerated() {
      switch t.kind {
      case .symbol("("): open.append(i)
      case .symbol(")"): if let o = open.popLast() { result[o] = i }
      default: break
      }
    }
    return result
  }()

  /// Whether the "(" at `index` opens an expression (`(age + 1) * 2 > 3`) rather than a
  /// group of predicates: what follows its ")" continues an expression or is an operator.
  private mutating func _opensExpression(_ index: Int) -> Bool {
    guard let close = closing[index], close + 1 < tokens.count else { return false }
    switch tokens[close + 1].kind {
    case .symbol(let s):
      return ["+", "-", "*", "/", "**", "[", ".", "==", "!=", "<", "<=", ">", ">="].contains(s)
    case .word(let w): return _FormatWord.operators.contains(w)
    default: return false
    }
  }

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
    case .symbol("(") where !_opensExpression(p):
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
    let lhs = try _expression(after: quantifier == nil ? nil : quantifierToken)
    let opToken = current
    let op = try _operator(after: tokens[p - 1])
    var options: _TextOptions = []
    if case .options(let o) = current.kind {
      options = o
      p += 1
    }
    let rhsToken = current
    let rhs = try _expression(after: opToken)
    if options.contains(.fullText) {
      return try _search(
        lhs, lhsToken: lhsToken, op: op, opToken: opToken, options: options, quantifier: quantifier, rhs: rhs,
        rhsToken: rhsToken)
    }

    // ANY over a constant list ({1, 5, 9}) is decided now; over a single value it is a mistake.
    if let quantifier, let constant = lhs.constantValue, constant._kind != .array {
      throw source.error(
        .invalidFormat, "\(quantifier.rawValue) needs a key right after it but found \(found(lhsToken))",
        at: lhsToken.start, fix: "Write \(quantifier.rawValue) tags == 'x', with the array key first.")
    }
    switch (lhs._keyOperand, lhs.constantValue, rhs._keyOperand, rhs.constantValue) {
    case (let (key, count)?, _, _, let value?):
      return .field(
        try _condition(
          key: key, count: count, op: op, opToken: opToken, value: value, valueToken: rhsToken,
          options: options, quantifier: quantifier))
    case (_, let value?, let (key, count)?, _):
      // A value on the left: mirror the comparison so the key comes first.
      if let mirrored = _FieldOperator._mirror(op, value) {
        return .field(
          try _condition(
            key: key, count: count, op: mirrored, opToken: opToken, value: value, valueToken: lhsToken,
            options: options, quantifier: nil))
      }
      // 'Micky Mouse' BEGINSWITH name: the text is tested against each record's key.
      guard case .string = value else {
        throw source.error(
          .invalidFormat, "\(found(opToken)) needs the key on its left, but found the value \(found(lhsToken))",
          at: lhsToken.start, fix: "Write the key first, as in name BEGINSWITH 'M'.")
      }
      return .expression(_ExpressionCondition(lhs: lhs, op: op, options: options, quantifier: nil, rhs: rhs))
    case (_, let left?, _, let right?):
      // Two values: decide now.
      let c = try _condition(
        key: "", count: false, op: op, opToken: opToken, value: right, valueToken: rhsToken,
        options: options, quantifier: quantifier)
      return .constant(c.matches(left))
    default:
      if let value = rhs.constantValue {
        // Checked (and a MATCHES pattern compiled) here, so the error has its offset.
        _ = try _condition(
          key: "", count: false, op: op, opToken: opToken, value: value, valueToken: rhsToken,
          options: options, quantifier: quantifier)
      }
      if let value = lhs.constantValue, case .compare = op, let mirrored = _FieldOperator._mirror(op, value) {
        return .expression(_ExpressionCondition(lhs: rhs, op: mirrored, options: options, quantifier: nil, rhs: lhs))
      }
      return .expression(_ExpressionCondition(lhs: lhs, op: op, options: options, quantifier: quantifier, rhs: rhs))
    }
  }

  /// `key MATCHES[fts] 'quick fox'`: a full-text condition on one key.
  private func _search(
    _ lhs: _Expression, lhsToken: _FormatToken, op: _FieldOperator, opToken: _FormatToken,
    options: _TextOptions,
    quantifier: _Quantifier?, rhs: _Expression, rhsToken: _FormatToken
  ) throws -> _FieldPredicate {
    guard case .text(.matches) = op, options == .fullText, quantifier == nil else {
      throw source.error(
        .invalidFormat, "[fts] goes only after MATCHES, with no other option or quantifier",
        at: opToken.start,
        fix: "Write title MATCHES[fts] 'quick fox'.")
    }
    guard let (key, count) = lhs._keyOperand, !count else {
      throw source.error(
        .invalidFormat, "MATCHES[fts] needs a key on its left but found \(found(lhsToken))",
        at: lhsToken.start,
        fix: "Write title MATCHES[fts] 'quick fox'.")
    }
    guard case .string(let text)? = rhs.constantValue else {
      throw source.error(
        .invalidFormat, "MATCHES[fts] needs the words to search for as text but found \(found(rhsToken))",
        at: rhsToken.start,
        fix: "Quote the words, as in title MATCHES[fts] 'quick fox', or pass a String with %@.")
    }
    do {
      return .search(_TextSearchCondition(keys: [key], query: try _TextQuery(text)))
    } catch {
      throw source.error(
        .invalidFormat, "The text query \"\(text)\" has no word to search for", at: rhsToken.start,
        fix: "Search for at least one word (letters or digits; punctuation separates words).")
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


  // MARK: Expressions

  /// `additive := multiplicative (("+" | "-") multiplicative)*`. Each operator of a chain
  /// counts as a level of nesting, so the tree it builds stays within ``maxDepth``.
  private mutating func _expression(after previous: _FormatToken?) throws -> _Expression {
    var lhs = try _multiplicative(after: previous)
    var levels = 0
    defer { depth -= levels }
    while isSymbol("+") || isSymbol("-") {
      let opToken = current
      try _enter(opToken.start)
      levels += 1
      p += 1
      let rhs = try _multiplicative(after: opToken)
      lhs = try _fold(isSymbolToken(opToken, "+") ? .add : .subtract, [lhs, rhs], at: opToken)
    }
    return lhs
  }

  private mutating func _multiplicative(after previous: _FormatToken?) throws -> _Expression {
    var lhs = try _unary(after: previous)
    var levels = 0
    defer { depth -= levels }
    while isSymbol("*") || isSymbol("/") {
      let opToken = current
      try _enter(opToken.start)
      levels += 1
      p += 1
      let rhs = try _unary(after: opToken)
      lhs = try _fold(isSymbolToken(opToken, "*") ? .multiply : .divide, [lhs, rhs], at: opToken)
    }
    return lhs
  }

  /// `unary := "-" unary | power`: `-2 ** 2` is `-(2 ** 2)`.
  private mutating func _unary(after previous: _FormatToken?) throws -> _Expression {
    guard isSymbol("-") else { return try _power(after: previous) }
    let minus = current
    try _enter(minus.start)
    defer { depth -= 1 }
    p += 1
    let operandToken = current
    let operand = try _unary(after: minus)
    if let v = operand.constantValue, v._kind != .number, v._kind != .null {
      throw source.error(
        .invalidFormat, "Expected a number after \"-\" but found \(found(operandToken))", at: operandToken.start,
        fix: "Write a negative number as -3 or -2.5.")
    }
    return try _fold(.negate, [operand], at: minus)
  }

  /// `power := postfix ("**" unary)*`, left to right.
  private mutating func _power(after previous: _FormatToken?) throws -> _Expression {
    var lhs = try _postfix(after: previous)
    var levels = 0
    defer { depth -= levels }
    while isSymbol("**") {
      let opToken = current
      try _enter(opToken.start)
      levels += 1
      p += 1
      let rhs = try _unary(after: opToken)
      lhs = try _fold(.raise, [lhs, rhs], at: opToken)
    }
    return lhs
  }

  /// A primary expression followed by subscripts (`[FIRST]`, `[LAST]`, `[SIZE]`, `[n]`) and
  /// key paths (`.@count`, `.name`).
  private mutating func _postfix(after previous: _FormatToken?) throws -> _Expression {
    var base = try _primaryExpression(after: previous)
    var levels = 0
    defer { depth -= levels }
    while true {
      if isSymbol("[") {
        let open = current
        try _enter(open.start)
        levels += 1
        p += 1
        let s: _Subscript
        switch current.kind {
        case .key(let word) where ["FIRST", "LAST", "SIZE"].contains(word.uppercased()):
          s = word.uppercased() == "FIRST" ? .first : (word.uppercased() == "LAST" ? .last : .size)
          p += 1
        default:
          s = .at(try _expression(after: open))
        }
        guard isSymbol("]") else {
          throw source.error(
            .invalidFormat, "Expected \"]\" after the subscript but found \(found(current))", at: current.start,
            fix: "Write a subscript as [FIRST], [LAST], [SIZE] or [n], with n a number.")
        }
        p += 1
        base = try _wrap(at: open) { () throws(_ExpressionTypeError) in try _ExpressionFolding.index(base, s) }
      } else if isSymbol(".") {
        let dot = current
        p += 1
        guard case .key(let path) = current.kind else {
          throw source.error(
            .invalidFormat, "Expected a key after \".\" but found \(found(current))", at: current.start,
            fix: "Write a key or a collection operator after the dot, as in SUBQUERY(…).@count.")
        }
        let t = current
        p += 1
        base = try _path(on: base, path.split(separator: ".", omittingEmptySubsequences: false)[...], t)
        _ = dot
      } else {
        return base
      }
    }
  }

  private mutating func _primaryExpression(after previous: _FormatToken?) throws -> _Expression {
    let t = current
    switch t.kind {
    case .key(let path):
      p += 1
      if isSymbol("(") { return try _bareFunction(path, t) }
      return try _keyPath(path, t)
    case .escapedKey(let path):
      // `#self.age`: plain keys, never SELF or a variable.
      p += 1
      return try _path(on: .evaluatedObject, path.split(separator: ".", omittingEmptySubsequences: false)[...], t)
    case .value(let v):
      p += 1
      return .constant(v)
    case .function(let name):
      p += 1
      guard let f = _Function.byName[name] else {
        throw source.error(
          .invalidFormat, "Unknown function \"\(name)\"", at: t.start,
          fix: "Use one of " + _Function.byName.keys.sorted().joined(separator: ", ") + ".")
      }
      return try _call(f, t)
    case .symbol("("):
      try _enter(t.start)
      defer { depth -= 1 }
      p += 1
      let inner = try _expression(after: t)
      guard isSymbol(")") else {
        throw source.error(
          .invalidFormat, "Expected \")\" but found \(found(current))", at: current.start,
          fix: "Close the expression opened at offset \(source.characterOffset(t.start)) with \")\".")
      }
      p += 1
      return inner
    case .symbol("{"):
      return try _list()
    case .word(.subquery):
      return try _subquery()
    default:
      let what = previous.map { "Expected a key or a value after \(found($0))" } ?? "Expected a comparison"
      throw source.error(
        .invalidFormat, "\(what) but found \(found(t))", at: t.start,
        fix: "Write a key, a number, a quoted string, nil, true or false, a list {…}, or a substitution such as %@.")
    }
  }

  /// `name:(arguments)`.
  private mutating func _call(_ f: _Function, _ nameToken: _FormatToken) throws -> _Expression {
    guard isSymbol("(") else {
      throw source.error(
        .invalidFormat, "Expected \"(\" after \(found(nameToken)) but found \(found(current))", at: current.start,
        fix: "Write the arguments in parentheses, as in \(f.rawValue)(scores).")
    }
    let open = current
    try _enter(open.start)
    defer { depth -= 1 }
    p += 1
    var args: [_Expression] = []
    if isSymbol(")") {
      p += 1
    } else {
      while true {
        args.append(try _expression(after: tokens[p - 1]))
        if isSymbol(",") {
          p += 1
          continue
        }
        guard isSymbol(")") else {
          throw source.error(
            .invalidFormat, "Expected \",\" or \")\" in the arguments of \(f.rawValue) but found \(found(current))",
            at: current.start, fix: "Separate arguments with commas and close them with \")\".")
        }
        p += 1
        break
      }
    }
    let arity = f.arity
    if arity.map({ $0 != args.count }) ?? args.isEmpty {
      let wanted = arity.map { _plural($0, "argument") } ?? "at least 1 argument"
      throw source.error(
        .invalidFormat, "\(f.rawValue) takes \(wanted) but \(args.count) \(args.count == 1 ? "was" : "were") given",
        at: nameToken.start, fix: "Pass \(wanted), as in \(f == .raise ? "raise:toPower:(2, 3)" : f.rawValue + "(scores)").")
    }
    return try _fold(f, args, at: nameToken)
  }

  /// `now()`; any other `name(…)` is an error that names the function form.
  private mutating func _bareFunction(_ name: String, _ t: _FormatToken) throws -> _Expression {
    if name.lowercased() == "now" { return try _call(.now, t) }
    let hint: String
    if let f = _Function.byName[name + ":"] {
      hint = "Write the function with its colon, as in \(f.rawValue)(…)."
    } else if name.uppercased() == "FUNCTION" {
      hint = "FUNCTION(…) is not supported; write a built-in function as name:(arguments), as in sum:(scores)."
    } else {
      hint = "Use one of " + _Function.byName.keys.sorted().joined(separator: ", ") + ", or now()."
    }
    throw source.error(.invalidFormat, "Unknown function \"\(name)\"", at: t.start, fix: hint)
  }

  /// `SUBQUERY(collection, $variable, predicate)`.
  private mutating func _subquery() throws -> _Expression {
    let word = current
    try _enter(word.start)
    defer { depth -= 1 }
    p += 1
    func expect(_ symbol: String, _ what: String) throws {
      guard isSymbol(symbol) else {
        throw source.error(
          .invalidFormat, "Expected \"\(symbol)\" \(what) but found \(found(current))", at: current.start,
          fix: "Write SUBQUERY(collection, $x, predicate), as in SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0.")
      }
      p += 1
    }
    try expect("(", "after SUBQUERY")
    let collection = try _expression(after: tokens[p - 1])
    try expect(",", "after the SUBQUERY's collection")
    guard case .key(let name) = current.kind, name.hasPrefix("$"), name.count > 1, !name.contains(".") else {
      throw source.error(
        .invalidFormat, "Expected a variable such as $x as the SUBQUERY's second argument but found \(found(current))",
        at: current.start,
        fix: "Write SUBQUERY(collection, $x, predicate), as in SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0.")
    }
    p += 1
    try expect(",", "after the SUBQUERY's variable")
    let predicate = try _or()
    try expect(")", "to close the SUBQUERY")
    return .subquery(collection, variable: String(name.dropFirst()), predicate)
  }

  /// `{a, b, …}`.
  private mutating func _list() throws -> _Expression {
    let open = current
    try _enter(open.start)
    defer { depth -= 1 }
    p += 1
    var items: [_Expression] = []
    if isSymbol("}") {
      p += 1
      return .constant(.array([]))
    }
    while true {
      items.append(try _expression(after: tokens[p - 1]))
      if isSymbol(",") {
        p += 1
        continue
      }
      if isSymbol("}") {
        p += 1
        return _ExpressionFolding.list(items)
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

  /// A key path token: `name`, `owner.city`, `SELF`, `SELF.age`, `$x`, `$x.age`,
  /// `tags.@count`, `scores.@avg`, `pets.@sum.age`.
  private func _keyPath(_ path: String, _ t: _FormatToken) throws -> _Expression {
    // The common case, a plain key, without splitting it.
    if !path.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "$") }),
      path.utf8.count != 4 || path.uppercased() != "SELF"
    {
      return .key(path)
    }
    var components = path.split(separator: ".", omittingEmptySubsequences: false)[...]
    let first = components.first ?? ""
    let base: _Expression
    if first.hasPrefix("$") {
      guard first.count > 1 else {
        throw source.error(
          .invalidFormat, "Expected a variable name after \"$\" in \"\(path)\"", at: t.start,
          fix: "Name the variable, as in age > $minimum.")
      }
      base = .variable(String(first.dropFirst()))
      components.removeFirst()
    } else if first.uppercased() == "SELF" {
      base = .evaluatedObject
      components.removeFirst()
    } else {
      base = .evaluatedObject
    }
    return try _path(on: base, components, t)
  }

  /// Applies key path components to an expression: plain keys of the evaluated object
  /// stay one dotted key (so `SELF.owner.city` reads the column `owner.city`), a
  /// collection operator applies to what the rest of the path reads.
  private func _path(on base: _Expression, _ components: ArraySlice<Substring>, _ t: _FormatToken) throws -> _Expression {
    var result = base
    var rest = components
    while let component = rest.popFirst() {
      if component.hasPrefix("@"), let part = RequestDatePart._named(component) {
        // `born.@year`: a date part of a key of the record, kept in the key (see
        // `RequestDatePart`), so it lowers to a field condition a store can run.
        guard rest.isEmpty, case .key(let key) = result else {
          throw source.error(
            .invalidFormat, "The date part \"\(component)\" in \"\(source.snippet(t.start, t.end))\" must end a key of the record",
            at: t.start, fix: "Write it after a Date field's key, as in born.@year == 1990.")
        }
        result = .key(part.key(key))
        continue
      }
      if component.hasPrefix("@") {
        guard let op = _Function.collectionOperator(String(component)) else {
          throw source.error(
            .invalidFormat, "Unknown collection operator or date part \"\(component)\" in \"\(source.snippet(t.start, t.end))\"",
            at: t.start,
            fix: "Use @count, @sum, @avg, @min or @max, as in scores.@avg > 3, or a date part (\(RequestDatePart._names)), as in born.@year == 1990.")
        }
        if !rest.isEmpty {
          result = try _path(on: result, rest, t)
          rest = []
        }
        result = try _wrap(at: t) { () throws(_ExpressionTypeError) in try _ExpressionFolding.function(op, [result]) }
        continue
      }
      guard !component.isEmpty else {
        throw source.error(
          .invalidFormat, "Empty key in \"\(source.snippet(t.start, t.end))\"", at: t.start,
          fix: "Write keys separated by single dots, as in owner.city.")
      }
      switch result {
      case .evaluatedObject: result = .key(String(component))
      case .key(let k): result = .key(k + "." + component)
      default: result = _ExpressionFolding.member(result, String(component))
      }
    }
    return result
  }

  private func isSymbolToken(_ t: _FormatToken, _ s: String) -> Bool {
    if case .symbol(let x) = t.kind { return x == s }
    return false
  }

  /// A function of folded arguments, with a type error reported at the operator.
  private func _fold(_ f: _Function, _ args: [_Expression], at t: _FormatToken) throws -> _Expression {
    try _wrap(at: t) { () throws(_ExpressionTypeError) in try _ExpressionFolding.function(f, args) }
  }

  private func _wrap(
    at t: _FormatToken, _ body: () throws(_ExpressionTypeError) -> _Expression
  ) throws -> _Expression {
    do {
      return try body()
    } catch {
      throw source.error(.typeMismatch, error.what, at: t.start, fix: error.fix + ".")
    }
  }
}
