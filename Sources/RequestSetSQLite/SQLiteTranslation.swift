import Foundation
import RequestSet
import _RequestSetSQL

/// A `StoreQuery` as SQLite SQL over RequestSet's row layout (`seq`, `id`, `body`,
/// `plain`): values are bound parameters; a key reaches the SQL text only as a JSON path
/// quoted by `SQLJSON.quoteLiteral`, word for word the path an index on that key uses,
/// so SQLite's planner matches the two.
struct _SQLiteTranslation {
  var sql = ""
  var bindings: [_SQLiteBinding] = []
  /// The store's FTS5 table, which full-text conditions on its keys read.
  var text: _SQLiteTextTable?
  /// The table's summary of keys and kinds as the statement's own read transaction sees
  /// it, when the caller read it there: type tests then read a key's value where it tells
  /// the types apart (see ``typeExpression(_:testing:held:)``).
  var kinds: StoreFieldKinds?

  /// The SQL expression naming the JSON type of the value at `path`, for a test against
  /// `types` (among `'integer'`, `'real'`, `'text'`, `'null'`).
  ///
  /// `json_type(body, path)` reads the record's body, row by row, even where an index on
  /// the key answers the rest of the statement. When `held` (the kinds the key has ever
  /// held, by the table's summary) shows that the value's SQL type tells `types` apart,
  /// the expression is `typeof(json_extract(body, path))`, which the index holds: a count
  /// per carrier of 336,776 flights took 1.2 s reading bodies and 67 ms from the index.
  /// The value hides two things the JSON type shows: a Bool reads as an integer, and an
  /// array or an object as text. So a key that has held a Bool keeps the body when
  /// `'integer'` is tested, and one that has held an array or object when `'text'` is.
  /// (A missing key is NULL to `json_type` and `'null'` to `typeof`: a test that allows
  /// `'null'` allows both, one that does not, neither.)
  ///
  /// ```swift
  /// _SQLiteTranslation.typeExpression("'$.\"species\"'", testing: ["text"], held: [.string])
  /// // typeof(json_extract(body, '$."species"'))
  /// ```
  static func typeExpression(_ path: String, testing types: [String], held: Set<StoreFieldKinds.Kind>?) -> String {
    if let held,
      !(types.contains("integer") && held.contains(.bool)),
      !(types.contains("text") && (held.contains(.array) || held.contains(.object)))
    {
      return "typeof(json_extract(body, \(path)))"
    }
    return "json_type(body, \(path))"
  }

  /// JSON type names as a parenthesized SQL list: `('integer', 'real')`.
  static func typeList(_ types: [String]) -> String {
    "(" + types.map { "'\($0)'" }.joined(separator: ", ") + ")"
  }

  /// ``typeExpression(_:testing:held:)`` for `key`, by the summary the translation holds.
  private func typeExpression(_ key: String, _ path: String, testing types: [String]) -> String {
    Self.typeExpression(path, testing: types, held: kinds?.heldKinds(at: key))
  }

  /// The JSON path SQLite reads for `fieldNames`, as a SQL literal: `'$."owner"."city"'`;
  /// nil when a name holds a quote or U+0000, which SQLite's paths cannot spell
  /// (conditions on such keys read the key in Swift instead, through `rs_cond`).
  static func pathLiteral(_ fieldNames: [String]) -> String? {
    // SQLite 3.40 reads a backslash in a quoted path name as an escape, so a name holding
    // one has no path either.
    if fieldNames.contains(where: { $0.contains("\\") }) { return nil }
    return SQLJSON.jsonPath(fieldNames).flatMap { try? SQLJSON.quoteLiteral($0) }
  }

  /// The most values a translated filter binds; a filter that would bind more runs as one
  /// `rs_filter` call. Lists of equalities bind one value each, however long.
  static var maxBindings: Int { 10_000 }

  /// The filter as a WHERE expression. With `nonPlain`, rows whose values SQL cannot
  /// compare exactly pass unconditionally (the engine rechecks them).
  ///
  /// With `opaque`, the whole filter is one call of `rs_filter`, the engine's own test of
  /// the filter run by SQLite on each row's decoded body: exact on every row, with no index
  /// and no limit of SQLite's to meet. A reader uses it when SQLite refuses the translated
  /// statement (see ``_SQLiteConnection/prepare(_:)-(_SQLiteConnection.Build)``).
  ///
  /// With `kinds` (the table's summary, read in the statement's own transaction), type
  /// tests read a key's value where the summary allows (see ``kinds``).
  static func whereClause(
    _ filter: StoreFilter?, nonPlain: Bool, opaque: Bool = false, text: _SQLiteTextTable? = nil,
    kinds: StoreFieldKinds? = nil
  ) -> _SQLiteTranslation {
    var t = _SQLiteTranslation()
    t.text = text
    t.kinds = kinds
    guard let filter else { return t }
    // `rs_filter` tests a row's own body; a relation's subquery reads another table, so a
    // filter holding one is always translated (a statement SQLite refuses then throws).
    let opaque = opaque && !filter.holdsSubquery
    if opaque {
      t.bindings.append(.filter(filter))
      t.sql = " WHERE rs_filter(?, body)"
      return t
    }
    var expression = ""
    t.append(filter, into: &expression)
    // SQLite's prepare compares each bound value with every one before it (it factors
    // constants out of the loop), so a statement binding tens of thousands of values takes
    // minutes to prepare: past this many, the engine's test runs the filter instead.
    if t.bindings.count > maxBindings, !filter.holdsSubquery {
      return whereClause(filter, nonPlain: nonPlain, opaque: true, text: text)
    }
    // Only conditions are answered as a superset (constants are exact everywhere), so a
    // filter without one must not let the rows through.
    let superset = nonPlain && !filter.conditions.isEmpty
    t.sql = superset ? " WHERE (NOT plain OR (\(expression)))" : " WHERE " + expression
    return t
  }

  /// Appends `filter`. ANDs and ORs are written as balanced trees, `((a OR b) OR (c OR d))`,
  /// so a junction of n operands nests log2(n) deep, not n (SQLite refuses expressions
  /// deeper than 1000, and its parser's stack holds about 90 open parentheses); an OR's
  /// equalities on one key become one `IN` over a bound JSON array (see ``_inLists``).
  /// Recursion follows the filter's depth, which the engine bounds (`_FilterNode.maxDepth`
  /// plus a format string's 64 levels).
  private mutating func append(_ filter: StoreFilter, into out: inout String) {
    switch filter {
    case .constant(let b): out += b ? "1" : "0"
    case .condition(let c): out += condition(c)
    case .and(let terms):
      guard !terms.isEmpty else {
        out += "1"
        return
      }
      appendBalanced(terms[...], joiner: " AND ", into: &out)
    case .or(let terms):
      guard !terms.isEmpty else {
        out += "0"
        return
      }
      let lists = Self.inLists(terms)
      var operands = lists.map { inTest($0) }
      let listed = Set(lists.map(\.path))
      for term in terms {
        if case .condition(let c) = term, Self.inListValue(c) != nil,
          let path = Self.pathLiteral(c.fieldNames),
          listed.contains(path)
        {
          continue
        }
        var operand = ""
        append(term, into: &operand)
        operands.append(operand)
      }
      appendBalanced(operands[...], joiner: " OR ", into: &out)
    case .search(let s):
      // The FTS5 table's MATCH, exact (see SQLiteStore+TextIndex.swift); without a table
      // on the search's keys, the engine's matcher on each row's body.
      if let text, let match = text.match(s) {
        out += "seq IN (SELECT rowid FROM \(text.quotedName) WHERE \(text.quotedName) MATCH ?)"
        bindings.append(.text(match))
      } else {
        out += "rs_filter(?, body)"
        bindings.append(.filter(filter))
      }
    case .subquery(let s):
      out += subquery(s)
    case .not(let inner):
      // A NULL inside stands for false (every NULL comes from a condition the engine calls
      // false), so NOT treats it as false too.
      out += "NOT IFNULL("
      append(inner, into: &out)
      out += ", 0)"
    }
  }

  /// A relation's condition as a subquery on another table of the same file (see
  /// `StoreSubquery`): `json_extract(body, key) IN (SELECT json_extract(body, column) FROM
  /// other WHERE …)`, both sides read as the tables' expression indexes read them, so an
  /// index on the key serves the statement. SQLite's `IN` is the engine's over the values
  /// the reader lets through (nil, numbers and NFC text: nil equals nothing, 3 equals
  /// 3.0, text never equals a number; see `support(for: StoreSubquery)`). With a count,
  /// the other table's rows are grouped by value and `rs_cond` tests each group's size,
  /// or, with an aggregate, what `rs_agg` gives: the engine's `@sum`, `@avg`, `@min` or
  /// `@max` of the group's values of the key, each read as its JSON (`body -> path`), in
  /// store order (`seq`), so doubles add up in the order they do in process.
  /// The reader's transaction covers both tables (one file, one snapshot), so the
  /// subquery reads the other table as it was when the statement's reader began.
  private mutating func subquery(_ s: StoreSubquery) -> String {
    // The reader supports only keys a path spells (`support(for: StoreSubquery)`).
    guard let key = Self.pathLiteral(FieldValue.fieldNames(inKey: s.key)),
      let column = Self.pathLiteral(FieldValue.fieldNames(inKey: s.column)),
      let table = try? SQLJSON.quoteIdentifier(s.location.table)
    else { return "0" }
    var inner = "SELECT json_extract(body, \(column)) FROM \(table)"
    if let filter = s.query.filter {
      // Unqualified, `body` names the nearest table: the other table's row, inside.
      var expression = ""
      let own = text
      text = nil
      append(filter, into: &expression)
      text = own
      inner += " WHERE " + expression
    }
    if let count = s.count {
      var size = "count(*)"
      if let aggregate = s.aggregate {
        // The reader supports only keys a path spells (`support(for: StoreSubquery)`).
        guard let path = Self.pathLiteral(FieldValue.fieldNames(inKey: aggregate.key)) else { return "0" }
        size = "rs_agg('\(aggregate.collectionOperator)', seq, body -> \(path))"
      }
      bindings.append(.condition(count, wholeBody: false))
      inner += " GROUP BY 1 HAVING \(s.countPasses ? "" : "NOT ")rs_cond(?, \(size))"
    }
    return "json_extract(body, \(key)) IN (\(inner))"
  }

  /// `terms` joined by `joiner` as a balanced tree of parenthesized halves. Each term is
  /// written in order, so its parameters bind in the order they appear.
  private mutating func appendBalanced(
    _ terms: ArraySlice<StoreFilter>, joiner: String, into out: inout String
  ) {
    var operands: [String] = []
    operands.reserveCapacity(terms.count)
    for term in terms {
      var operand = ""
      append(term, into: &operand)
      operands.append(operand)
    }
    appendBalanced(operands[...], joiner: joiner, into: &out)
  }

  /// Operands already written, joined by `joiner` as a balanced tree.
  private func appendBalanced(_ operands: ArraySlice<String>, joiner: String, into out: inout String) {
    if operands.count == 1 {
      out += operands.first!
      return
    }
    let middle = operands.startIndex + operands.count / 2
    out += "("
    appendBalanced(operands[..<middle], joiner: joiner, into: &out)
    out += joiner
    appendBalanced(operands[middle...], joiner: joiner, into: &out)
    out += ")"
  }

  // MARK: Equalities as IN

  /// The values one key is tested against in an OR of equalities and `IN`s.
  struct _InList {
    var path: String
    /// The key the path spells (the summary of kinds names keys).
    var key: String
    /// Integers and doubles, as JSON text.
    var numbers: [String] = []
    /// NFC strings, as JSON text.
    var strings: [String] = []
    var bools: Set<Bool> = []
    var null = false
  }

  /// The value `c` tests its key for equality with, when SQLite's `IN` runs that test
  /// exactly (the engine's equality on scalars: binary strings, finite numbers, Bools,
  /// nil); nil otherwise.
  static func inListValue(_ c: StoreCondition) -> FieldValue? {
    guard c.quantifier == nil, !c.countsElements, c.datePart == nil, c.collation == .binary,
      !c.caseInsensitive,
      !c.diacriticInsensitive, case .compare(.equal) = c.operator, pathLiteral(c.fieldNames) != nil
    else { return nil }
    switch c.value {
    case .null, .bool, .int: return c.value
    case .uint(let u) where u <= UInt64(Int64.max): return c.value
    case .double(let d) where d.isFinite: return c.value
    case .string(let s) where !s.utf8.contains(0): return c.value
    default: return nil
    }
  }

  /// The OR's equalities, one list per key that more than one of them tests (a single
  /// equality stays a plain `=`); the terms not listed are written one by one. An `IN`
  /// condition needs no list: `rs_cond` tests it with one set lookup, however long it is.
  static func inLists(_ terms: [StoreFilter]) -> [_InList] {
    var lists: [String: _InList] = [:]
    var counts: [String: Int] = [:]
    var order: [String] = []
    for term in terms {
      guard case .condition(let c) = term, let value = inListValue(c), let path = pathLiteral(c.fieldNames)
      else { continue }
      if lists[path] == nil {
        lists[path] = _InList(path: path, key: c.key)
        order.append(path)
      }
      counts[path, default: 0] += 1
      switch value {
      case .null: lists[path]!.null = true
      case .bool(let b): lists[path]!.bools.insert(b)
      case .string(let s): lists[path]!.strings.append(SQLJSON.encode(.string(SQLJSON.nfc(s))).text)
      default: lists[path]!.numbers.append(SQLJSON.encode(value).text)
      }
    }
    return order.filter { counts[$0]! > 1 }.map { lists[$0]! }
  }

  /// The list of `key IN {…}` when SQLite's `IN` runs the engine's test exactly: a plain
  /// condition (binary collation, no quantifier, no `@count`) whose values are all scalars
  /// `inListValue` accepts; nil otherwise.
  static func inList(_ c: StoreCondition, _ path: String) -> _InList? {
    guard c.quantifier == nil, !c.countsElements, c.datePart == nil, c.collation == .binary,
      !c.caseInsensitive,
      !c.diacriticInsensitive, case .array(let items) = c.value
    else { return nil }
    var list = _InList(path: path, key: c.key)
    for item in items {
      switch item {
      case .null: list.null = true
      case .bool(let b): list.bools.insert(b)
      case .int:
        list.numbers.append(SQLJSON.encode(item).text)
      case .uint(let u) where u <= UInt64(Int64.max):
        list.numbers.append(SQLJSON.encode(item).text)
      case .double(let d) where d.isFinite:
        list.numbers.append(SQLJSON.encode(item).text)
      case .string(let text):
        guard !text.utf8.contains(0) else { return nil }
        list.strings.append(SQLJSON.encode(.string(SQLJSON.nfc(text))).text)
      default: return nil
      }
    }
    return list
  }

  /// One key's list as SQL: `json_extract(…) IN (SELECT value FROM json_each(?))` per kind
  /// (numbers by exact value across integer and real, text by bytes), the JSON array bound
  /// as one parameter however long it is; nil and Bools by their JSON type.
  private mutating func inTest(_ list: _InList) -> String {
    let value = "json_extract(body, \(list.path))"
    let type = "json_type(body, \(list.path))"
    var tests: [String] = []
    if list.null { tests.append("coalesce(\(type), 'null') = 'null'") }
    for b in list.bools.sorted(by: { !$0 && $1 }) { tests.append("coalesce(\(type), '') = '\(b)'") }
    if !list.numbers.isEmpty {
      bindings.append(.text("[" + list.numbers.joined(separator: ",") + "]"))
      let numeric = typeExpression(list.key, list.path, testing: ["integer", "real"])
      tests.append("(\(value) IN (SELECT value FROM json_each(?)) AND \(numeric) IN ('integer', 'real'))")
    }
    if !list.strings.isEmpty {
      bindings.append(.text("[" + list.strings.joined(separator: ",") + "]"))
      let text = typeExpression(list.key, list.path, testing: ["text"])
      tests.append("(\(value) IN (SELECT value FROM json_each(?)) AND \(text) IN ('text'))")
    }
    return tests.count == 1 ? tests[0] : "(" + tests.joined(separator: " OR ") + ")"
  }

  /// One condition: native SQL where it is exactly the engine's test, else `rs_cond`, the
  /// engine's own test run by SQLite.
  private mutating func condition(_ c: StoreCondition) -> String {
    guard let path = Self.pathLiteral(c.fieldNames) else {
      bindings.append(.condition(c, wholeBody: true))
      return "rs_cond(?, body)"
    }
    if let native = native(c, path) { return native }
    bindings.append(.condition(c, wholeBody: false))
    return "rs_cond(?, body -> \(path))"
  }

  private mutating func native(_ c: StoreCondition, _ path: String) -> String? {
    if let part = c.datePart { return datePart(part, c, path) }
    if case .in = c.operator, let list = Self.inList(c, path) {
      // `key IN {…}` of scalars (a relation's semi-join): SQL's IN over the bound list,
      // which an index on the key serves, instead of `rs_cond` on every row.
      if !list.null && list.bools.isEmpty && list.numbers.isEmpty && list.strings.isEmpty { return "0" }
      return inTest(list)
    }
    guard c.quantifier == nil, !c.countsElements, c.datePart == nil, c.collation == .binary,
      !c.caseInsensitive,
      !c.diacriticInsensitive, case .compare(let comparison) = c.operator
    else { return nil }
    let value = "json_extract(body, \(path))"
    let type = "json_type(body, \(path))"
    switch (comparison, c.value) {
    case (.equal, .null): return "coalesce(\(type), 'null') = 'null'"
    case (.notEqual, .null): return "coalesce(\(type), 'null') <> 'null'"
    case (.equal, .bool(let b)): return "coalesce(\(type), '') = '\(b)'"
    case (.notEqual, .bool(let b)): return "coalesce(\(type), '') <> '\(b)'"
    default: break
    }
    let kinds: [String]
    switch c.value {
    case .int(let i):
      bindings.append(.int(Int64(i)))
      kinds = ["integer", "real"]
    case .uint(let u) where u <= UInt64(Int64.max):
      bindings.append(.int(Int64(u)))
      kinds = ["integer", "real"]
    case .double(let d) where d.isFinite:
      bindings.append(.double(d))
      kinds = ["integer", "real"]
    case .string(let s) where !s.utf8.contains(0):
      // Rows keep NFC text when plain, and the engine compares canonical equivalents as
      // equal (and orders by NFC scalars), so the NFC form of the value is exact.
      bindings.append(.text(SQLJSON.nfc(s)))
      kinds = ["text"]
    default: return nil
    }
    let tested = typeExpression(c.key, path, testing: kinds)
    let test = "(\(value) \(Self.sqlOperator(comparison)) ? AND \(tested) IN \(Self.typeList(kinds)))"
    return comparison == .notEqual ? "NOT IFNULL(\(test), 0)" : test
  }

  /// The date part of the number at `path` (seconds since 2001), as an integer, or NULL
  /// when the field holds no number: the same value for conditions, sorts and groups.
  static func datePartValue(_ part: RequestDatePart, _ path: String) -> String {
    let seconds =
      "CASE WHEN json_type(body, \(path)) IN ('integer', 'real') THEN json_extract(body, \(path)) END"
    return SQLDateParts.expression(part, seconds: seconds, dialect: .sqlite)
  }

  /// A comparison, BETWEEN or IN of a date part (`born.@year == 1990`) as SQL on the
  /// stored seconds (see `SQLDateParts`), when its values are integers or nil (what
  /// validation lets through besides doubles, which stay with `rs_cond`); nil otherwise.
  private mutating func datePart(_ part: RequestDatePart, _ c: StoreCondition, _ path: String) -> String? {
    guard c.quantifier == nil, !c.caseInsensitive, !c.diacriticInsensitive else { return nil }
    let value = Self.datePartValue(part, path)
    func integer(_ v: FieldValue) -> Int64? {
      switch v {
      case .int(let i): return Int64(i)
      case .uint(let u) where u <= UInt64(Int64.max): return Int64(u)
      default: return nil
      }
    }
    switch (c.operator, c.value) {
    case (.compare(.equal), .null): return "(\(value) IS NULL)"
    case (.compare(.notEqual), .null): return "(\(value) IS NOT NULL)"
    case (.compare(let comparison), let v):
      guard let i = integer(v) else { return nil }
      bindings.append(.int(i))
      let test = "\(value) \(Self.sqlOperator(comparison)) ?"
      // nil != 1990 holds in memory; SQL's NULL = 1990 is NULL.
      return comparison == .notEqual ? "NOT IFNULL(\(test), 0)" : "IFNULL(\(test), 0)"
    case (.between, .array(let bounds)) where bounds.count == 2:
      guard let lo = integer(bounds[0]), let hi = integer(bounds[1]) else { return nil }
      bindings.append(.int(lo))
      bindings.append(.int(hi))
      return "IFNULL(\(value) BETWEEN ? AND ?, 0)"
    case (.in, .array(let items)):
      var ints: [Int64] = []
      var null = false
      for item in items {
        if case .null = item {
          null = true
        } else if let i = integer(item) {
          ints.append(i)
        } else {
          return nil
        }
      }
      bindings.append(.text("[" + ints.map(String.init).joined(separator: ",") + "]"))
      let listed = "IFNULL(\(value) IN (SELECT value FROM json_each(?)), 0)"
      return null ? "(\(listed) OR \(value) IS NULL)" : listed
    default: return nil
    }
  }

  private static func sqlOperator(_ comparison: RequestComparison) -> String {
    switch comparison {
    case .equal, .notEqual: return "="
    case .lessThan: return "<"
    case .lessThanOrEqual: return "<="
    case .greaterThan: return ">"
    case .greaterThanOrEqual: return ">="
    }
  }

  /// ORDER BY for `sort`, ties by `seq`, and the keys it binds. With a collation other
  /// than binary, with rows that are not plain (`nonPlain`), or for a key no JSON path
  /// spells, a key orders through the `rs_…` collation (the engine's order on the decoded
  /// values), read by `rs_field` wherever a JSON path would not read what the engine reads
  /// (rows that are not plain keep tagged values and objects; see `SQLJSON`). Otherwise by
  /// kind rank, then the SQL value (numbers exactly across integer and real, text by bytes:
  /// Unicode scalar order of NFC text), then arrays and objects through the collation.
  ///
  /// A key that `isScalar` says holds nothing but nil, numbers and text (no Bool, array or
  /// object in any row) orders by its SQL value alone: SQLite's own order of NULL, then
  /// numbers, then text by bytes is then the engine's, and `json_extract(body, path)` is
  /// the expression of the store's indexes, so an index on the key (or a composite index
  /// whose earlier keys the WHERE holds equal) serves the sort, and a limit stops early.
  ///
  /// A key through a relation (``StoreSortKey/related``) orders by a correlated subquery
  /// on the other table (see ``relatedValue(_:_:table:form:)``), which reads the outer row
  /// as `table.body`.
  static func orderBy(
    _ sort: [StoreSortKey], nonPlain: Bool, isScalar: (String) -> Bool = { _ in false }, table: String = "",
    related: (StoreRelatedValue) -> _SQLiteRelatedForm = { _ in _SQLiteRelatedForm(scalar: false, byIDColumn: false) }
  ) -> (sql: String, bindings: [_SQLiteBinding]) {
    guard !sort.isEmpty else { return (" ORDER BY seq", []) }
    var terms: [String] = []
    var bindings: [_SQLiteBinding] = []
    for key in sort {
      let direction = key.order == .ascending ? "ASC" : "DESC"
      let collate = "COLLATE " + _collationName(key.collation)
      if let value = key.related {
        terms.append(relatedValue(value, key.collation, table: table, form: related(value)) + " " + direction)
        continue
      }
      if let part = key.datePart, let path = pathLiteral(key.fieldNames) {
        // An integer or NULL (nil sorts first ascending, as in memory); the reader takes
        // such a key only over plain rows.
        let value = datePartValue(part, path)
        terms.append("(\(value)) IS NOT NULL \(direction)")
        terms.append("\(value) \(direction)")
        continue
      }
      guard let path = pathLiteral(key.fieldNames) else {
        bindings.append(.key(key.key))
        terms.append("coalesce(rs_field(?, body), 'null') \(collate) \(direction)")
        continue
      }
      if nonPlain {
        bindings.append(.key(key.key))
        terms.append(
          "coalesce(CASE WHEN plain THEN body -> \(path) ELSE rs_field(?, body) END, 'null') \(collate) \(direction)"
        )
        continue
      }
      if key.collation != .binary {
        terms.append("coalesce(body -> \(path), 'null') \(collate) \(direction)")
        continue
      }
      if isScalar(key.key) {
        terms.append("json_extract(body, \(path)) \(direction)")
        continue
      }
      let type = "json_type(body, \(path))"
      terms.append(
        "CASE \(type) WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'integer' THEN 2 WHEN 'real' THEN 2 "
          + "WHEN 'text' THEN 3 WHEN 'array' THEN 4 WHEN 'object' THEN 5 ELSE 0 END \(direction)")
      terms.append(
        "CASE WHEN \(type) IN ('array', 'object') THEN NULL ELSE json_extract(body, \(path)) END \(direction)"
      )
      terms.append(
        "CASE WHEN \(type) IN ('array', 'object') THEN body -> \(path) END \(collate) \(direction)")
    }
    return (" ORDER BY " + terms.joined(separator: ", ") + ", seq", bindings)
  }

  /// A sort value through a relation as a correlated subquery on the other table (`rs_r`),
  /// ordering exactly as the engine orders the values it reads from the related store:
  /// - a to-one's value: the target's `json_extract`, when the key has held only nil,
  ///   numbers and text (`form.scalar`: SQLite's order of NULL, numbers, then text by bytes
  ///   is then the engine's) and the collation is binary; otherwise its JSON text, 'null'
  ///   for none, through the `rs_…` collation (the engine's order on decoded values);
  /// - a count: `count(*)`, 0 for none;
  /// - an aggregate: `rs_agg`, the engine's operator over the values in store order, as a
  ///   subquery's HAVING computes it, its JSON text (the fallback's for none) through the
  ///   collation.
  /// The target is found by its `id` column when `form.byIDColumn` (see
  /// `_SQLiteReader.support(forRelatedSort:)`), else by comparing the keys' SQL values (an
  /// expression index on the related column serves it).
  static func relatedValue(
    _ value: StoreRelatedValue, _ collation: RequestCollation, table: String, form: _SQLiteRelatedForm
  ) -> String {
    // The reader supports only keys a path spells.
    guard let key = pathLiteral(FieldValue.fieldNames(inKey: value.key)),
      let column = pathLiteral(FieldValue.fieldNames(inKey: value.column)),
      let other = try? SQLJSON.quoteIdentifier(value.location.table)
    else { return "NULL" }
    let match =
      form.byIDColumn
      ? "rs_r.id = \(table).body -> \(key)"
      : "json_extract(rs_r.body, \(column)) = json_extract(\(table).body, \(key))"
    let from = "FROM \(other) AS rs_r WHERE \(match)"
    let collate = "COLLATE " + _collationName(collation)
    switch value.reading {
    case .value(let read):
      guard let path = pathLiteral(FieldValue.fieldNames(inKey: read)) else { return "NULL" }
      if form.scalar && collation == .binary {
        return "(SELECT json_extract(rs_r.body, \(path)) \(from) LIMIT 1)"
      }
      return "coalesce((SELECT rs_r.body -> \(path) \(from) LIMIT 1), 'null') \(collate)"
    case .count:
      return "(SELECT count(*) \(from))"
    case .aggregate(let aggregate):
      guard let path = pathLiteral(FieldValue.fieldNames(inKey: aggregate.key)),
        let fallback = try? SQLJSON.quoteLiteral(SQLJSON.encode(value.fallback).text)
      else { return "NULL" }
      return
        "coalesce((SELECT rs_agg('\(aggregate.collectionOperator)', rs_r.seq, rs_r.body -> \(path)) \(from)), "
        + "\(fallback)) \(collate)"
    }
  }
}

/// How a statement reads one related sort value (see
/// `_SQLiteTranslation.relatedValue(_:_:table:form:)`).
struct _SQLiteRelatedForm: Sendable {
  /// The value read has held only nil, numbers and text: SQL orders it as it is.
  var scalar: Bool
  /// The target is found by the related table's `id` column.
  var byIDColumn: Bool
}
