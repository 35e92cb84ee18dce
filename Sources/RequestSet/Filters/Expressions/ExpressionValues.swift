import Foundation

/// A function applied to values it cannot compute with (text added to a number): at parse
/// time a `.typeMismatch` error with the offset; on a record's values the result is nil.
struct _ExpressionTypeError: Error, Sendable {
  /// What went wrong.
  let what: String
  /// How to fix it.
  let fix: String

  /// The error without an offset, for a substitution of variables.
  var requestSetError: RequestSetError { RequestSetError(.typeMismatch, "\(what). \(fix)") }
}

/// The values functions, arithmetic, key paths and subscripts compute, with NSExpression's
/// semantics where they are well defined and a nil result (never a trap) where NSExpression
/// would raise on a record's value.
///
/// Numbers follow NSNumber: `+`, `-`, `*` and unary minus keep integers when both sides are
/// integers and the result fits (it becomes a Double otherwise); `/`, `**` and the math
/// functions compute in Double. Dates are stored as seconds since 2001-01-01, so date
/// arithmetic is arithmetic on seconds. A nil operand gives nil.
enum _ExpressionValues {
  private static func _number(_ v: FieldValue) -> Double? {
    switch v {
    case .int(let i): return Double(i)
    case .double(let d): return d
    default: return nil
    }
  }

  private static func _needNumber(_ f: _Function, _ v: FieldValue) throws(_ExpressionTypeError) -> Double {
    if let d = _number(v) { return d }
    throw _ExpressionTypeError(
      what: "\(_name(f)) computes with numbers but found \(v), a \(v._kind)",
      fix: "Pass a number, or a key that holds numbers")
  }

  private static func _name(_ f: _Function) -> String {
    if let op = f.infix { return "\"\(op)\"" }
    if f == .negate { return "\"-\"" }
    return f.rawValue
  }

  /// The value of `f` applied to `args`.
  ///
  /// - Throws: `_ExpressionTypeError` when an argument has a kind the function cannot use.
  static func apply(_ f: _Function, _ args: [FieldValue]) throws(_ExpressionTypeError) -> FieldValue {
    switch f {
    case .now:
      return .double(Date().timeIntervalSinceReferenceDate)
    case .add, .subtract, .multiply:
      let (a, b) = (args[0], args[1])
      if case .null = a { return .null }
      if case .null = b { return .null }
      if case .int(let x) = a, case .int(let y) = b {
        let (r, overflow): (Int, Bool)
        switch f {
        case .add: (r, overflow) = x.addingReportingOverflow(y)
        case .subtract: (r, overflow) = x.subtractingReportingOverflow(y)
        default: (r, overflow) = x.multipliedReportingOverflow(by: y)
        }
        if !overflow { return .int(r) }
      }
      let x = try _needNumber(f, a), y = try _needNumber(f, b)
      switch f {
      case .add: return .double(x + y)
      case .subtract: return .double(x - y)
      default: return .double(x * y)
      }
    case .divide, .raise:
      if case .null = args[0] { return .null }
      if case .null = args[1] { return .null }
      let x = try _needNumber(f, args[0]), y = try _needNumber(f, args[1])
      return .double(f == .divide ? x / y : Foundation.pow(x, y))
    case .modulus:
      let (a, b) = (args[0], args[1])
      if case .null = a { return .null }
      if case .null = b { return .null }
      if case .int(let x) = a, case .int(let y) = b {
        // A remainder by zero has no value: nil, where C would trap.
        if y == 0 { return .null }
        return .int(x.remainderReportingOverflow(dividingBy: y).partialValue)
      }
      let x = try _needNumber(f, a), y = try _needNumber(f, b)
      if y == 0 { return .null }
      return .double(Foundation.fmod(x, y))
    case .negate:
      switch args[0] {
      case .null: return .null
      case .int(let i) where i != Int.min: return .int(-i)
      default: return .double(-(try _needNumber(f, args[0])))
      }
    case .abs:
      switch args[0] {
      case .null: return .null
      case .int(let i) where i != Int.min: return .int(Swift.abs(i))
      default: return .double(Swift.abs(try _needNumber(f, args[0])))
      }
    case .sqrt, .log, .ln, .exp, .floor, .ceiling, .trunc:
      if case .null = args[0] { return .null }
      let x = try _needNumber(f, args[0])
      switch f {
      case .sqrt: return .double(x.squareRoot())
      case .log: return .double(Foundation.log10(x))
      case .ln: return .double(Foundation.log(x))
      case .exp: return .double(Foundation.exp(x))
      case .floor: return .double(x.rounded(.down))
      case .ceiling: return .double(x.rounded(.up))
      default: return .double(x.rounded(.towardZero))
      }
    case .uppercase, .lowercase:
      switch args[0] {
      case .null: return .null
      case .string(let s): return .string(f == .uppercase ? s.uppercased() : s.lowercased())
      default:
        throw _ExpressionTypeError(
          what: "\(f.rawValue) changes the case of text but found \(args[0]), a \(args[0]._kind)",
          fix: "Pass a String, or a key that holds text")
      }
    case .countOperator:
      switch args[0] {
      case .array(let a): return .int(a.count)
      case .object(let o): return .int(o.count)
      // An absent collection has no elements, as `key.@count` has always answered.
      case .null: return .int(0)
      default: return .null
      }
    case .count, .sum, .min, .max, .average, .median, .mode, .stddev, .sumOperator, .avgOperator,
      .minOperator, .maxOperator:
      return try _statistic(f, _elements(f, args))
    }
  }

  /// The values a statistic runs over: one array argument's elements, or the arguments.
  private static func _elements(_ f: _Function, _ args: [FieldValue]) throws(_ExpressionTypeError) -> [FieldValue] {
    guard args.count == 1 else { return args }
    switch args[0] {
    case .array(let a): return a
    case .null: return []
    case .object(let o) where f == .count || f == .countOperator: return Array(o.values)
    default:
      throw _ExpressionTypeError(
        what: "\(f.rawValue) needs a collection but found \(args[0]), a \(args[0]._kind)",
        fix: "Pass an array key, a list {…}, or several values")
    }
  }

  private static func _statistic(_ f: _Function, _ all: [FieldValue]) throws(_ExpressionTypeError) -> FieldValue {
    if f == .count { return .int(all.count) }
    // nil elements are skipped, as KVC's collection operators skip them.
    let values = all.filter { if case .null = $0 { return false } else { return true } }
    switch f {
    case .min, .max, .minOperator, .maxOperator:
      guard var best = values.first else { return .null }
      let wantsMax = f == .max || f == .maxOperator
      for v in values.dropFirst() {
        guard v._kind == best._kind, v._kind == .number || v._kind == .string else {
          throw _ExpressionTypeError(
            what: "\(f.rawValue) compares numbers or text of one kind but found \(best) and \(v)",
            fix: "Pass values of one kind")
        }
        let order = FieldValue._order(v, best, .binary)
        if wantsMax ? order > 0 : order < 0 { best = v }
      }
      if best._kind != .number && best._kind != .string { _ = try _needNumber(f, best) }
      return best
    case .mode:
      // Values count as one as `groupBy` groups them (every NaN is one value).
      var counts: [_GroupingKey: Int] = [:]
      var order: [FieldValue] = []
      for v in values {
        if counts[_GroupingKey(v)] == nil { order.append(v) }
        counts[_GroupingKey(v), default: 0] += 1
      }
      let top = counts.values.max() ?? 0
      return .array(order.filter { counts[_GroupingKey($0)] == top })
    default:
      break
    }
    // The numeric statistics.
    var ints: [Int] = []
    var allInts = true
    var numbers: [Double] = []
    numbers.reserveCapacity(values.count)
    for v in values {
      if case .int(let i) = v { ints.append(i) } else { allInts = false }
      numbers.append(try _needNumber(f, v))
    }
    switch f {
    case .sum, .sumOperator:
      if allInts {
        var total = 0
        var overflow = false
        for i in ints where !overflow { (total, overflow) = total.addingReportingOverflow(i) }
        if !overflow { return .int(total) }
      }
      return .double(numbers.reduce(0, +))
    case .average, .avgOperator:
      // KVC's @avg of an empty collection is 0; the average: function has no value for it.
      guard !numbers.isEmpty else { return f == .avgOperator ? .int(0) : .null }
      return .double(numbers.reduce(0, +) / Double(numbers.count))
    case .median:
      guard !numbers.isEmpty else { return .null }
      let sorted = numbers.sorted()
      let mid = sorted.count / 2
      return .double(sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2)
    default:  // .stddev: the population standard deviation.
      guard !numbers.isEmpty else { return .null }
      let mean = numbers.reduce(0, +) / Double(numbers.count)
      let variance = numbers.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(numbers.count)
      return .double(variance.squareRoot())
    }
  }

  /// A dotted key path of a value, as KVC reads it: a nested object's key, every element's
  /// key over an array, `self` for the value itself, and a collection operator (`@sum`)
  /// applied to what the rest of the path reads from each element.
  static func member(_ value: FieldValue, _ path: String) -> FieldValue {
    member(value, path.split(separator: ".", omittingEmptySubsequences: false)[...])
  }

  static func member(_ value: FieldValue, _ path: ArraySlice<Substring>) -> FieldValue {
    var current = value
    var rest = path
    while let component = rest.popFirst() {
      if component.hasPrefix("@") {
        guard let op = _Function.collectionOperator(String(component)) else { return .null }
        let collection = rest.isEmpty ? current : member(current, rest)
        return (try? apply(op, [collection])) ?? .null
      }
      current = _step(current, component)
    }
    return current
  }

  private static func _step(_ value: FieldValue, _ key: Substring) -> FieldValue {
    if key == "self" { return value }
    switch value {
    case .object(let o): return o[String(key)] ?? .null
    case .array(let a): return .array(a.map { _step($0, key) })
    default: return .null
    }
  }

  /// `value[FIRST]`, `[LAST]`, `[SIZE]`, `[n]` (an integer index into an array, or a
  /// String key into a nested object). Out of range is nil.
  static func index(_ value: FieldValue, _ s: _Subscript, _ at: FieldValue?) -> FieldValue {
    switch (s, value) {
    case (.size, _): return (try? apply(.countOperator, [value])) ?? .null
    case (.first, .array(let a)): return a.first ?? .null
    case (.last, .array(let a)): return a.last ?? .null
    case (.at, .array(let a)):
      let i: Int?
      switch at {
      case .int(let n)?: i = n
      case .double(let d)? where d == d.rounded(.towardZero) && Swift.abs(d) < 1e18: i = Int(d)
      default: i = nil
      }
      guard let i, i >= 0, i < a.count else { return .null }
      return a[i]
    case (.at, .object(let o)):
      if case .string(let key)? = at { return o[key] ?? .null }
      return .null
    default: return .null
    }
  }
}

/// Builds expressions, folding those whose operands are all constants (`3 + 2` is `5`
/// before planning, so `age > 3 + 2` reads an index on age).
enum _ExpressionFolding {
  static func function(_ f: _Function, _ args: [_Expression]) throws(_ExpressionTypeError) -> _Expression {
    guard !f.isVolatile else { return .function(f, args) }
    var values: [FieldValue] = []
    for a in args {
      guard let v = a.constantValue else { return .function(f, args) }
      values.append(v)
    }
    return .constant(try _ExpressionValues.apply(f, values))
  }

  static func member(_ base: _Expression, _ key: String) -> _Expression {
    if let v = base.constantValue { return .constant(_ExpressionValues.member(v, key)) }
    return .member(base, key)
  }

  static func index(_ base: _Expression, _ s: _Subscript) throws(_ExpressionTypeError) -> _Expression {
    if let v = base.constantValue {
      switch s {
      case .at(let e):
        if let i = e.constantValue { return .constant(_ExpressionValues.index(v, s, i)) }
      default:
        return .constant(_ExpressionValues.index(v, s, nil))
      }
    }
    return .index(base, s)
  }

  static func list(_ items: [_Expression]) -> _Expression {
    var values: [FieldValue] = []
    for item in items {
      guard let v = item.constantValue else { return .list(items) }
      values.append(v)
    }
    return .constant(.array(values))
  }
}

extension _ExpressionCondition {
  /// The condition in its simplest form: a constant when both sides are, a field condition
  /// (which indexes can answer) when one side is a key and the other a constant, else
  /// itself, computed on each record.
  ///
  /// - Throws: `RequestSetError` when the operator cannot take the constant (BETWEEN
  ///   without two bounds, a text operator with a number, an invalid MATCHES pattern).
  func lowered() throws -> _FieldPredicate {
    if let l = lhs.constantValue, let r = rhs.constantValue {
      try _check(r)
      return .constant(try _condition(key: "", count: false, value: r).matches(l))
    }
    if let (key, count) = lhs._keyOperand, let value = rhs.constantValue {
      try _check(value)
      return .field(try _condition(key: key, count: count, value: value))
    }
    if let value = lhs.constantValue, quantifier == nil {
      // A constant on the left: mirror the comparison so the constant is the value.
      if let mirrored = _FieldOperator._mirror(op, value) {
        return try _ExpressionCondition(lhs: rhs, op: mirrored, options: options, quantifier: nil, rhs: lhs).lowered()
      }
    }
    return .expression(self)
  }

  private func _condition(key: String, count: Bool, value: FieldValue) throws -> _FieldCondition {
    do {
      return try _FieldCondition(
        key: key, op: op, value: value, options: options, quantifier: quantifier, countsElements: count)
    } catch {
      throw RequestSetError(
        .invalidFormat, "Invalid regular expression \(value) for MATCHES in \(description). "
          + "Fix the pattern (ICU syntax; it must match the whole string).", underlying: error)
    }
  }

  /// The checks the parser makes on a constant operand, for one that a substitution gave.
  private func _check(_ value: FieldValue) throws {
    switch op {
    case .between:
      guard case .array(let bounds) = value, bounds.count == 2 else {
        throw RequestSetError(
          .invalidFormat, "BETWEEN expects two values {lower, upper} but found \(value) in \(description). "
            + "Pass a two-element array.")
      }
    case .in:
      switch value {
      case .array, .string: break
      default:
        throw RequestSetError(.invalidFormat, "IN expects a list but found \(value) in \(description). Pass an array.")
      }
    case .text(let t) where t != .contains:
      guard case .string = value else {
        throw RequestSetError(
          .typeMismatch, "\(t.rawValue) compares text but found \(value), a \(value._kind), in \(description). "
            + "Pass a String, or use == to compare numbers.")
      }
    default: break
    }
  }
}

extension _Expression {
  /// A key of the record as a field condition reads it: the key, and whether the
  /// condition counts its elements (`tags.@count`, `tags[SIZE]`, `count:(tags)`).
  var _keyOperand: (String, Bool)? {
    switch self {
    case .key(let k): return (k, false)
    case .function(.countOperator, let args) where args.count == 1:
      if case .key(let k) = args[0] { return (k, true) }
    case .index(.key(let k), .size): return (k, true)
    default: break
    }
    return nil
  }
}

extension _FieldOperator {
  /// The operator with its operands swapped, when the grammar has one: `3 < age` is
  /// `age > 3`, `'farm' IN tags` is `tags CONTAINS 'farm'`, `'Micky Mouse' CONTAINS name`
  /// is `name IN 'Micky Mouse'`.
  static func _mirror(_ op: _FieldOperator, _ constant: FieldValue) -> _FieldOperator? {
    switch op {
    case .compare(.lessThan): return .compare(.greaterThan)
    case .compare(.lessThanOrEqual): return .compare(.greaterThanOrEqual)
    case .compare(.greaterThan): return .compare(.lessThan)
    case .compare(.greaterThanOrEqual): return .compare(.lessThanOrEqual)
    case .compare: return op
    case .in: return .text(.contains)
    case .text(.contains) where constant._kind == .string: return .in
    default: return nil
    }
  }
}
