extension RequestFilter {
  /// A copy of the filter with its format-string variables bound to values, as
  /// `NSPredicate.withSubstitutionVariables(_:)` binds them.
  ///
  /// A format string may name a value it does not know yet as `$name`; bind it here, as
  /// many times as you like, without parsing again. A comparison whose variable becomes a
  /// constant is planned like any other: `age > $min` bound to 3 reads an index on `age`.
  /// A variable a SUBQUERY declares is its own, inside it, and is never substituted.
  /// Variables left unbound stay in the filter: a read of a set filtered by it throws
  /// ``RequestSetError`` `.unboundVariable`, naming the first one.
  ///
  /// ```swift
  /// let older = try RequestFilter<Animal>(format: "age > $min AND species == $kind")
  /// animals.filter(older.substituting(["min": 3, "kind": "Dog"]))
  /// // explain(): filter: age > 3 AND species == "Dog"
  /// ```
  /// - Parameter variables: Values by variable name (without the `$`). Values are encoded
  ///   the way `%@` arguments are; names the filter does not use are ignored.
  /// - Returns: The filter with those variables replaced. A value that cannot be encoded,
  ///   or that its operator cannot take (a number for `BEGINSWITH`), makes its comparison
  ///   invalid: reading the set throws that error.
  /// - Complexity: O(*n*) in the size of the filter.
  public func substituting(_ variables: [String: (any Sendable)?]) -> RequestFilter {
    var values: [String: FieldValue] = [:]
    for (name, value) in variables {
      do {
        values[name] = try _encodeArgument(value)
      } catch {
        let failure = RequestSetError(
          .typeMismatch, "The value of $\(name), \(_describeArgument(value)), cannot be compared with a record's "
            + "fields: it is not Encodable. Pass a String, a number, a Bool, nil, an array or an Encodable value.",
          underlying: error)
        return RequestFilter(_node: .invalid(failure))
      }
    }
    return RequestFilter(_node: _node._substituting(values))
  }
}

extension _FilterNode {
  /// The tree with every expression condition's variables substituted and the condition
  /// lowered again (to a field condition when it now compares a key with a constant).
  ///
  /// Filters combined in a loop can nest deeply, so the walk uses an explicit stack.
  func _substituting(_ values: [String: FieldValue]) -> _FilterNode {
    var work: [_SubstitutionStep<Element>] = [.visit(self)]
    var built: [_FilterNode] = []
    while let step = work.popLast() {
      switch step {
      case .visit(let node):
        switch node {
        case .and(let parts):
          work.append(.and(parts.count))
          work.append(contentsOf: parts.terms.reversed().map(_SubstitutionStep.visit))
        case .or(let parts):
          work.append(.or(parts.count))
          work.append(contentsOf: parts.terms.reversed().map(_SubstitutionStep.visit))
        case .not(let inner):
          work.append(.not)
          work.append(.visit(inner))
        case .expression(let c):
          do {
            let substituted = _ExpressionCondition(
              lhs: try c.lhs._substituting(values, bound: []), op: c.op, options: c.options,
              quantifier: c.quantifier, rhs: try c.rhs._substituting(values, bound: []))
            built.append(_FilterNode(try substituted.lowered()))
          } catch let error as _ExpressionTypeError {
            built.append(.invalid(error.requestSetError))
          } catch let error as RequestSetError {
            built.append(.invalid(error))
          } catch {
            built.append(.invalid(RequestSetError(.invalidFormat, "A substitution failed.", underlying: error)))
          }
        default:
          built.append(node)
        }
      case .and(let n):
        let parts = Array(built.suffix(n))
        built.removeLast(n)
        built.append(.and(parts))
      case .or(let n):
        let parts = Array(built.suffix(n))
        built.removeLast(n)
        built.append(.or(parts))
      case .not:
        built.append(.not(built.removeLast()))
      }
    }
    return built[0]
  }
}

/// A step of `_FilterNode._substituting`'s walk: a node to visit, or a node to rebuild
/// from the last results.
enum _SubstitutionStep<Element: Sendable> {
  case visit(_FilterNode<Element>)
  case and(Int), or(Int), not
}
