extension RequestFilter where Element: Encodable {
  /// A filter from a predicate format string, as `NSPredicate(format:)` reads it, with an
  /// array of arguments.
  ///
  /// The grammar is NSPredicate's subset that applies to values: comparisons (`==`, `!=`,
  /// `<`, `<=`, `>`, `>=` and their other spellings), `BETWEEN {a, b}`, `IN {…}`,
  /// `CONTAINS`, `BEGINSWITH`, `ENDSWITH`, `LIKE` (`*`, `?`), `MATCHES` (a regular
  /// expression matching the whole string), each with `[c]`, `[d]` or `[cd]`; `AND`, `OR`,
  /// `NOT` and parentheses; `ANY`, `ALL`, `NONE` over array fields; `key.@count`; literals
  /// and the substitutions `%@`, `%K`, `%d`, `%i`, `%ld`, `%f`, `%s`. Keys are the record's
  /// `Codable` keys, with dots into nested values.
  ///
  /// ```swift
  /// let userText = "age > %d AND name BEGINSWITH[c] %@"
  /// let f = try RequestFilter<Animal>(format: userText, arguments: [3, "mi"])
  /// animals.filter(f)
  /// // explain(): filter: age > 3 AND name BEGINSWITH[c] "mi"
  /// ```
  /// - Parameters:
  ///   - format: The format string.
  ///   - arguments: One argument per substitution, in order.
  /// - Throws: ``RequestSetError`` `.invalidFormat` for a syntax error, `.argumentCount` when
  ///   substitutions and arguments differ in number, `.typeMismatch` for an argument that
  ///   does not fit its substitution or operator. Every message gives the character offset
  ///   and the text around it. Unknown keys, and values that cannot match their field, are
  ///   reported when the set is evaluated, as for other string-key filters.
  /// - Complexity: O(*n*) in the length of the format string; patterns (LIKE, MATCHES,
  ///   `[c]`/`[d]` operands) are prepared here, once.
  public init(format: String, arguments: [(any Sendable)?]) throws {
    self.init(_node: _FilterNode(try _FormatParser.parse(format, arguments: arguments)))
  }

  /// A filter from a predicate format string and its arguments; see
  /// ``init(format:arguments:)``.
  ///
  /// ```swift
  /// let f = try RequestFilter<Animal>(format: "%K == %@", "species", "Cow")
  /// ```
  /// - Throws: ``RequestSetError`` as ``init(format:arguments:)`` does.
  public init(format: String, _ arguments: (any Sendable)?...) throws {
    try self.init(format: format, arguments: arguments)
  }
}

extension RequestSet where Element: Encodable {
  /// Keeps the records matching a predicate format string, joined with the filters before
  /// by `mode`.
  ///
  /// ```swift
  /// animals.filter("age > %@ AND name BEGINSWITH[c] %@", 3, "mi")
  /// animals.filter("%K == %@", "name", "Alice", mode: .or)
  /// animals.filter("ANY tags == 'farm' AND tags.@count >= 2")
  /// ```
  /// The grammar is the one ``RequestFilter/init(format:arguments:)`` describes. A format
  /// string that does not parse behaves like other bad input: ``fetch()`` throws its
  /// ``RequestSetError`` (`.invalidFormat`, `.argumentCount`, `.typeMismatch`), and the
  /// collection members stop with the same message. Use the throwing
  /// ``RequestFilter/init(format:arguments:)`` to check user input up front.
  /// - Complexity: O(*n*) in the length of the format string to parse; nothing runs until
  ///   the set is read.
  public func filter(_ format: String, _ arguments: (any Sendable)?..., mode: RequestFilterMode = .and) -> RequestSet {
    filter(RequestFilter(_node: _formatNode(format, arguments)), mode: mode)
  }

  /// Drops the records matching a predicate format string.
  ///
  /// ```swift
  /// animals.exclude("species IN %@", ["Cow", "Dog"])
  /// ```
  public func exclude(_ format: String, _ arguments: (any Sendable)?...) -> RequestSet {
    exclude(RequestFilter(_node: _formatNode(format, arguments)))
  }

  private func _formatNode(_ format: String, _ arguments: [(any Sendable)?]) -> _FilterNode<Element> {
    do {
      return _FilterNode(try _FormatParser.parse(format, arguments: arguments))
    } catch let error as RequestSetError {
      return .invalid(error)
    } catch {
      return .invalid(RequestSetError(.invalidFormat, "The format string could not be parsed.", underlying: error))
    }
  }
}
