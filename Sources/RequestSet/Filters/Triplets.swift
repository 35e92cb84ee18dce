/// Parses KEYShadow-style triplet queries: `[key, operator, value]` triplets with
/// connectors between them and nested arrays for grouping.
///
/// ```swift
/// ["name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"]]
/// // name CONTAINS[c] "Micky" AND NOT species IN {"Cow", "Dog"}
/// ```
/// Each triplet goes through the format-string parser as `%K <operator> %@`, so triplets
/// accept exactly the format grammar's operators and options, with the same checks.
enum _TripletParser {
  enum Connector { case and, andNot, or, orNot, not }

  static let connectors: [String: Connector] = [
    "and": .and, "and not": .andNot, "or": .or, "or not": .orNot, "not": .not,
  ]
  static let quantifiers: Set<String> = ["any", "some", "all", "none"]

  static func parse(_ items: [Any]) throws -> _FieldPredicate {
    try _list(items, path: [])
  }

  private static func _describe(_ value: Any) -> String { _describeArgument(value) }

  private static func _error(_ what: String, _ path: [Int]) -> RequestSetError {
    let at = path.map(String.init).joined(separator: ".")
    return RequestSetError(
      .invalidFormat,
      "Triplet query: \(what) at index \(at). Write [key, operator, value] triplets, joined by \"and\" "
        + "(the default), \"and not\", \"or\", \"or not\" or \"not\", with nested arrays for grouping.")
  }

  private static func _list(_ items: [Any], path: [Int]) throws -> _FieldPredicate {
    if items.isEmpty { return .constant(true) }
    guard path.count < _FormatParser.maxDepth else { throw _error("nesting deeper than \(_FormatParser.maxDepth) levels", path) }
    var alternatives: [[_FieldPredicate]] = [[]]
    var expectingTerm = true
    var negate = false
    var i = 0
    while i < items.count {
      let item = items[i]
      if !expectingTerm {
        expectingTerm = true
        // A connector, or none: "and" is the default.
        if let word = item as? String, let connector = connectors[word.lowercased()] {
          switch connector {
          case .and: break
          case .andNot, .not: negate = true
          case .or: alternatives.append([])
          case .orNot:
            alternatives.append([])
            negate = true
          }
          i += 1
          continue
        }
      }
      var term: _FieldPredicate
      if let word = item as? String, word.lowercased() == "not" {
        negate.toggle()
        i += 1
        continue
      } else if let group = item as? [Any] {
        term = try _list(group, path: path + [i])
        i += 1
      } else if let word = item as? String {
        var quantifier = ""
        var start = i
        if quantifiers.contains(word.lowercased()), i + 3 < items.count {
          quantifier = word.uppercased() + " "
          start += 1
        }
        guard start + 2 < items.count else {
          throw _error("expected a triplet [key, operator, value] but found only \(items.count - start) element(s)", path + [start])
        }
        guard let key = items[start] as? String else {
          throw _error("expected a key (a String) but found \(_describe(items[start]))", path + [start])
        }
        guard let op = items[start + 1] as? String, _isOperator(op) else {
          throw _error(
            "expected an operator such as \"==\", \"in\" or \"contains[c]\" but found \(_describe(items[start + 1]))",
            path + [start + 1])
        }
        var value: Any? = _unwrapOptional(items[start + 2])
        if let text = value as? String, text == "nil" { value = nil }
        do {
          term = try _FormatParser.parse(quantifier + "%K " + op + " %@", arguments: [key, try _tripletValue(value)])
        } catch let error as RequestSetError {
          throw RequestSetError(
            error.code,
            "Triplet query: the triplet at index \(( path + [start]).map(String.init).joined(separator: ".")) "
              + "[\(FieldValue.string(key)), \(FieldValue.string(op)), \(_describeArgument(value))] is invalid: "
              + error.message,
            underlying: error.underlying)
        }
        i = start + 3
      } else {
        throw _error("expected a key (a String) or a nested array but found \(_describe(item))", path + [i])
      }
      if negate { term = .not(term) }
      negate = false
      alternatives[alternatives.count - 1].append(term)
      expectingTerm = false
    }
    if expectingTerm {
      throw _error("expected a triplet after the last connector", path + [items.count])
    }
    let ands = alternatives.map { $0.count == 1 ? $0[0] : _FieldPredicate.and($0) }
    return ands.count == 1 ? ands[0] : .or(ands)
  }

  /// A triplet's value as a `%@` argument: arrays of anything become arrays of encoded
  /// values (nested literals arrive as `[Any]`).
  private static func _tripletValue(_ value: Any?) throws -> FieldValue {
    guard let value = value.flatMap(_unwrapOptional) else { return .null }
    if let array = value as? [Any], !(value is any Encodable) {
      return .array(try array.map { try _tripletValue($0) })
    }
    if let encodable = value as? any Encodable { return try _FieldEncoder.encode(encodable) }
    throw RequestSetError(
      .typeMismatch, "A value of type \(type(of: value)) cannot be compared with a record's fields: it is not Encodable.")
  }

  /// An operator word with an optional `[c]`/`[d]` suffix: nothing a format string could
  /// read as more than one token.
  private static func _isOperator(_ op: String) -> Bool {
    let core = op.split(separator: "[", maxSplits: 1).first.map(String.init) ?? ""
    guard !core.isEmpty, core.allSatisfy({ $0.isLetter || "=!<>".contains($0) }) else { return false }
    guard let bracket = op.firstIndex(of: "[") else { return true }
    let suffix = op[bracket...]
    return suffix.hasSuffix("]") && suffix.dropFirst().dropLast().allSatisfy(\.isLetter)
  }
}
