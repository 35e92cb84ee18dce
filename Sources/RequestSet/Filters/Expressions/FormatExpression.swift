// The expressions of the NSPredicate grammar beyond `key <op> value`: SELF, variables,
// arithmetic, functions, collection operators, subscripts and SUBQUERY. A comparison whose
// two sides reduce to a key and a constant never becomes one of these: the parser (and a
// substitution of variables) lowers it to a `_FieldCondition`, which indexes and stores
// can answer. What is left is a `_ExpressionCondition`, computed on each record.
//
// Every tree here comes from the parser, whose nesting limit bounds its height, so the
// recursive walks below (description, substitution, variables) are bounded too.

/// One side of a comparison, computed.
indirect enum _Expression: Sendable {
  /// A literal, a substitution's argument, or a folded constant expression.
  case constant(FieldValue)
  /// A dotted key of the evaluated object: the record's field, inside a SUBQUERY too
  /// (the element's key is `$x.key`).
  case key(String)
  /// `SELF`: the evaluated object, the record (inside a SUBQUERY too).
  case evaluatedObject
  /// `$name`: bound by a SUBQUERY, or by ``RequestFilter/substituting(_:)``.
  case variable(String)
  /// `base.key`: a key of a computed value; over an array, the key of every element.
  case member(_Expression, String)
  /// A function, an arithmetic operator or a collection operator applied to its arguments.
  case function(_Function, [_Expression])
  /// `base[FIRST]`, `base[LAST]`, `base[SIZE]`, `base[n]`.
  case index(_Expression, _Subscript)
  /// `SUBQUERY(collection, $variable, predicate)`: the elements the predicate accepts.
  case subquery(_Expression, variable: String, _FieldPredicate)
  /// `{a, b}` with an element that is not constant.
  case list([_Expression])

  /// The constant value, when the expression is one.
  var constantValue: FieldValue? {
    if case .constant(let v) = self { return v }
    return nil
  }

  /// The key, when the expression is a plain key of the evaluated object.
  var plainKey: String? {
    if case .key(let k) = self { return k }
    return nil
  }
}

/// What a subscript picks.
enum _Subscript: Sendable {
  case first, last, size
  case at(_Expression)
}

/// The functions of the grammar, named as NSExpression names them.
enum _Function: String, Sendable, CaseIterable {
  // Statistics over an array (or over the arguments, when there are several).
  case sum = "sum:", count = "count:", min = "min:", max = "max:", average = "average:"
  case median = "median:", mode = "mode:", stddev = "stddev:"
  // Numbers.
  case sqrt = "sqrt:", log = "log:", ln = "ln:", raise = "raise:toPower:", exp = "exp:"
  case floor = "floor:", ceiling = "ceiling:", abs = "abs:", trunc = "trunc:", modulus = "modulus:by:"
  // Text.
  case uppercase = "uppercase:", lowercase = "lowercase:"
  /// The current date, as dates are stored: seconds since 2001-01-01 (`Date`'s reference).
  case now = "now"
  // The arithmetic operators, under the names NSExpression gives them.
  case add = "add:to:", subtract = "from:subtract:", multiply = "multiply:by:", divide = "divide:by:"
  /// Unary minus.
  case negate = "chs:"
  // Collection operators in key paths (`scores.@sum`), with KVC's answers for an empty array.
  case countOperator = "@count", sumOperator = "@sum", avgOperator = "@avg"
  case minOperator = "@min", maxOperator = "@max"

  static let byName: [String: _Function] = Dictionary(
    uniqueKeysWithValues: allCases.filter { !$0.rawValue.hasPrefix("@") }.map { ($0.rawValue, $0) })

  /// The collection operator of a key path component (`@sum`), if it names one.
  static func collectionOperator(_ component: String) -> _Function? {
    switch component.lowercased() {
    case "@count": return .countOperator
    case "@sum": return .sumOperator
    case "@avg": return .avgOperator
    case "@min": return .minOperator
    case "@max": return .maxOperator
    default: return nil
    }
  }

  /// How many arguments the function takes: nil for any number from one.
  var arity: Int? {
    switch self {
    case .sum, .count, .min, .max, .average, .median, .mode, .stddev: return nil
    case .now: return 0
    case .raise, .modulus, .add, .subtract, .multiply, .divide: return 2
    default: return 1
    }
  }

  /// The infix spelling of an arithmetic operator.
  var infix: String? {
    switch self {
    case .add: return "+"
    case .subtract: return "-"
    case .multiply: return "*"
    case .divide: return "/"
    case .raise: return "**"
    default: return nil
    }
  }

  /// Whether the result depends on when it is computed (it is never folded at parse time).
  var isVolatile: Bool { self == .now }
}

/// `lhs <op> rhs` where at least one side is computed on each record (or holds a variable
/// not bound yet).
@usableFromInline
struct _ExpressionCondition: Sendable, CustomStringConvertible {
  let lhs: _Expression
  let op: _FieldOperator
  let options: _TextOptions
  let quantifier: _Quantifier?
  let rhs: _Expression

  @usableFromInline var description: String {
    var text = quantifier.map { $0.rawValue + " " } ?? ""
    text += lhs.description + " "
    switch op {
    case .compare(let c): text += c.rawValue
    case .between: text += "BETWEEN"
    case .in: text += "IN"
    case .text(let t): text += t.rawValue
    }
    return text + options.suffix + " " + rhs.description
  }

  /// The variables the condition uses that no SUBQUERY inside it binds, in order of
  /// appearance.
  var freeVariables: [String] {
    var found: [String] = []
    lhs._collectVariables(bound: [], into: &found)
    rhs._collectVariables(bound: [], into: &found)
    return found
  }
}

extension _Expression: CustomStringConvertible {
  /// The expression as the format grammar writes it.
  var description: String {
    switch self {
    case .constant(let v):
      if case .array(let items) = v { return "{" + items.map(\.description).joined(separator: ", ") + "}" }
      return v.description
    case .key(let k): return k
    case .evaluatedObject: return "SELF"
    case .variable(let name): return "$" + name
    case .member(let base, let key): return base._operandDescription + "." + key
    case .function(let f, let args):
      if let op = f.infix, args.count == 2 {
        return args[0]._operandDescription + " " + op + " " + args[1]._operandDescription
      }
      switch f {
      case .negate: return "-" + (args.first?._operandDescription ?? "")
      case .countOperator, .sumOperator, .avgOperator, .minOperator, .maxOperator:
        return (args.first?._operandDescription ?? "") + "." + f.rawValue
      case .now: return "now()"
      default: return f.rawValue + "(" + args.map(\.description).joined(separator: ", ") + ")"
      }
    case .index(let base, let s):
      let inner: String
      switch s {
      case .first: inner = "FIRST"
      case .last: inner = "LAST"
      case .size: inner = "SIZE"
      case .at(let e): inner = e.description
      }
      return base._operandDescription + "[" + inner + "]"
    case .subquery(let collection, let variable, let predicate):
      return "SUBQUERY(\(collection.description), $\(variable), \(predicate.description))"
    case .list(let items): return "{" + items.map(\.description).joined(separator: ", ") + "}"
    }
  }

  /// Arithmetic inside another expression is parenthesized.
  private var _operandDescription: String {
    if case .function(let f, let args) = self, f.infix != nil, args.count == 2 { return "(" + description + ")" }
    return description
  }

  func _collectVariables(bound: Set<String>, into found: inout [String]) {
    switch self {
    case .constant, .key, .evaluatedObject: return
    case .variable(let name):
      if !bound.contains(name) && !found.contains(name) { found.append(name) }
    case .member(let base, _): base._collectVariables(bound: bound, into: &found)
    case .function(_, let args), .list(let args):
      for a in args { a._collectVariables(bound: bound, into: &found) }
    case .index(let base, let s):
      base._collectVariables(bound: bound, into: &found)
      if case .at(let e) = s { e._collectVariables(bound: bound, into: &found) }
    case .subquery(let collection, let variable, let predicate):
      collection._collectVariables(bound: bound, into: &found)
      predicate._collectVariables(bound: bound.union([variable]), into: &found)
    }
  }

  /// The expression with variables replaced by values, except those a SUBQUERY inside it
  /// binds (its own variable shadows a substitution within its predicate).
  func _substituting(_ values: [String: FieldValue], bound: Set<String>) throws -> _Expression {
    switch self {
    case .constant, .key, .evaluatedObject: return self
    case .variable(let name):
      if !bound.contains(name), let v = values[name] { return .constant(v) }
      return self
    case .member(let base, let key):
      return try _ExpressionFolding.member(base._substituting(values, bound: bound), key)
    case .function(let f, let args):
      return try _ExpressionFolding.function(f, args.map { try $0._substituting(values, bound: bound) })
    case .list(let items):
      return _ExpressionFolding.list(try items.map { try $0._substituting(values, bound: bound) })
    case .index(let base, let s):
      var sub = s
      if case .at(let e) = s { sub = .at(try e._substituting(values, bound: bound)) }
      return try _ExpressionFolding.index(base._substituting(values, bound: bound), sub)
    case .subquery(let collection, let variable, let predicate):
      return .subquery(
        try collection._substituting(values, bound: bound), variable: variable,
        try predicate._substituting(values, bound: bound.union([variable])))
    }
  }
}

extension _FieldPredicate {
  /// The predicate as the format grammar writes it (inside a SUBQUERY).
  var description: String {
    switch self {
    case .constant(let b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
    case .and(let parts): return parts.map { $0._operandDescription }.joined(separator: " AND ")
    case .or(let parts): return parts.map { $0._operandDescription }.joined(separator: " OR ")
    case .not(let inner): return "NOT " + inner._operandDescription
    case .field(let c): return c.description
    case .expression(let c): return c.description
    case .search(let c): return c.description
    }
  }

  private var _operandDescription: String {
    switch self {
    case .and, .or: return "(" + description + ")"
    default: return description
    }
  }

  func _collectVariables(bound: Set<String>, into found: inout [String]) {
    switch self {
    case .constant, .field, .search: return
    case .and(let parts), .or(let parts): for p in parts { p._collectVariables(bound: bound, into: &found) }
    case .not(let inner): inner._collectVariables(bound: bound, into: &found)
    case .expression(let c):
      c.lhs._collectVariables(bound: bound, into: &found)
      c.rhs._collectVariables(bound: bound, into: &found)
    }
  }

  func _substituting(_ values: [String: FieldValue], bound: Set<String>) throws -> _FieldPredicate {
    switch self {
    case .constant, .field, .search: return self
    case .and(let parts): return .and(try parts.map { try $0._substituting(values, bound: bound) })
    case .or(let parts): return .or(try parts.map { try $0._substituting(values, bound: bound) })
    case .not(let inner): return .not(try inner._substituting(values, bound: bound))
    case .expression(let c):
      return try _ExpressionCondition(
        lhs: c.lhs._substituting(values, bound: bound), op: c.op, options: c.options, quantifier: c.quantifier,
        rhs: c.rhs._substituting(values, bound: bound)
      ).lowered()
    }
  }
}
