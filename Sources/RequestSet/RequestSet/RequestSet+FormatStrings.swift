extension RequestFilter where Element: Encodable {
  /// A filter from a predicate format string, as `NSPredicate(format:)` reads it, with an
  /// array of arguments.
  ///
  /// The grammar is NSPredicate's: comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=` and their
  /// other spellings), `BETWEEN {a, b}`, `IN {…}`, `CONTAINS`, `BEGINSWITH`, `ENDSWITH`,
  /// `LIKE` (`*`, `?`), `MATCHES` (a regular expression matching the whole string), each
  /// with `[c]`, `[d]` or `[cd]`; `AND`, `OR`, `NOT` and parentheses; `ANY`, `ALL`, `NONE`
  /// over array fields; literals and the substitutions `%@`, `%K`, `%d`, `%i`, `%ld`, `%f`,
  /// `%s`. Either side of a comparison may be computed: another key, arithmetic
  /// (`+ - * / **`), `SELF`, functions (`sum:(scores)`, `abs:(x)`, `now()`, …), collection
  /// operators (`@count`, `@sum`, `@avg`, `@min`, `@max`), subscripts (`[FIRST]`, `[LAST]`,
  /// `[SIZE]`, `[n]`), `SUBQUERY(collection, $x, predicate)` and `$variables`, bound with
  /// ``substituting(_:)``. Keys are the record's `Codable` keys, with dots into nested
  /// values. Constant expressions fold here; a key compared with a constant reads indexes
  /// like any string-key filter, and other comparisons are computed on each record.
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
  ///   does not fit its substitution or operator, or a constant a function or operator
  ///   cannot compute with. Every message gives the character offset
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

  /// Keeps the records matching a predicate format string whose `$variables` take the
  /// given values, joined with the filters before by `mode`.
  ///
  /// ```swift
  /// animals.filter("age > $min AND ANY tags == $tag", variables: ["min": 3, "tag": "farm"])
  /// animals.filter("weight > %@ * $factor", 10, variables: ["factor": 2])
  /// ```
  /// The same as filtering by ``RequestFilter/init(format:arguments:)`` then
  /// ``RequestFilter/substituting(_:)``. A variable given no value makes ``fetch()`` throw
  /// `.unboundVariable`, naming it.
  /// - Complexity: O(*n*) in the length of the format string to parse; nothing runs until
  ///   the set is read.
  public func filter(
    _ format: String, _ arguments: (any Sendable)?..., variables: [String: (any Sendable)?],
    mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(_node: _formatNode(format, arguments)).substituting(variables), mode: mode)
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

extension RequestFilter where Element: Encodable {
  /// A filter from a KEYShadow-style triplet query.
  ///
  /// The query is a flat array of `[key, operator, value]` triplets, with connectors
  /// between them: `"and"` (the default when none is written), `"and not"`, `"or"`,
  /// `"or not"`, `"not"`. A nested array groups, in place of parentheses; a triplet
  /// preceded by `"any"` (or `"all"`, `"none"`) tests the elements of an array field; the
  /// lowercase string `"nil"` as a value means nil. Operators are the format grammar's, in
  /// any case, with `[c]`/`[d]`: `"=="`, `"<"`, `"in"`, `"between"`, `"contains[c]"`,
  /// `"like"`, `"matches"`, …. AND binds tighter than OR, as in format strings.
  ///
  /// ```swift
  /// let f = try RequestFilter<Animal>(triplets: [
  ///   "name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"],
  /// ])
  /// // name CONTAINS[c] "Micky" AND NOT species IN {"Cow", "Dog"}
  /// let farm = try RequestFilter<Animal>(triplets: [["age", ">", 3, "or", "any", "tags", "==", "farm"], "owner", "!=", "nil"])
  /// // (age > 3 OR ANY tags == "farm") AND owner != nil
  /// ```
  /// The query is parsed here, at once, so it may hold any values (nested array literals
  /// arrive as `[Any]`); values must be `Encodable`, like other string-key filter values.
  /// - Throws: ``RequestSetError`` `.invalidFormat` naming the index of the bad element, or
  ///   the error of a triplet that is not valid, prefixed with the triplet.
  public init(triplets: [Any]) throws {
    self.init(_node: _FilterNode(try _TripletParser.parse(triplets)))
  }
}

extension RequestSet where Element: Encodable {
  /// Keeps the records matching a KEYShadow-style triplet query; see
  /// ``RequestFilter/init(triplets:)``.
  ///
  /// ```swift
  /// animals.filter(where: ["name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"]])
  /// ```
  /// A malformed query makes ``fetch()`` throw `.invalidFormat`, like other bad input.
  public func filter(where triplets: [Any], mode: RequestFilterMode = .and) -> RequestSet {
    filter(RequestFilter(_node: _tripletNode(triplets)), mode: mode)
  }

  /// Drops the records matching a triplet query.
  ///
  /// ```swift
  /// animals.exclude(where: ["species", "==", "Cow"])
  /// ```
  public func exclude(where triplets: [Any]) -> RequestSet {
    exclude(RequestFilter(_node: _tripletNode(triplets)))
  }

  private func _tripletNode(_ triplets: [Any]) -> _FilterNode<Element> {
    do {
      return _FilterNode(try _TripletParser.parse(triplets))
    } catch let error as RequestSetError {
      return .invalid(error)
    } catch {
      return .invalid(RequestSetError(.invalidFormat, "The triplet query could not be parsed.", underlying: error))
    }
  }
}
