// Resolving relations when a query is prepared.
//
// A query over a graph's type may name keys that walk relations (`owner.city`,
// `ANY visits.vet`, `visits.@count`, `SUBQUERY(visits, …)`). When the query is prepared
// (see Prepare.swift: relations are resolved just before twins are decided), each such
// condition becomes a condition on the record's own keys:
// - a condition through a to-one becomes a semi-join: one query on the target's store
//   returns the ids of the targets that match, and the condition becomes
//   `foreignKey IN {ids}` (or its negation, when a missing target matches: then the ids
//   are those of the targets that do not), which every store runs, indexes serve and SQL
//   stores run themselves;
// - a quantified condition through a to-many (`ANY`, `ALL`, `NONE`) is one query on the
//   target's store for the inverse keys of the children that match (or fail), and becomes
//   `id IN {…}` or its negation; `@count` counts the inverse keys of one query;
// - any other condition that reads a relation (arithmetic, `SUBQUERY`, `@sum`…) reads
//   the related records materialized as nested values, one query per relation, and is
//   computed on each record in process, exactly as on records that nest the same values;
// - a sort key through a relation reads one value per related id from one query.
// The store of the record type never learns of the relation: a mixed graph (a LogStore
// of animals, a SQLite store of owners) runs each half where it lives.
//
// Stores that share a database (`QueryPushdownStore.location`: SQLite stores in one file)
// skip the ids. A to-one's semi-join, ANY/NONE/ALL and `@count` become a subquery node
// (`_FilterNode.related`) carrying the related store's own query, planned by that store's
// reader (its keys checked, its relations resolved the same way, so `owner.clinic.city`
// nests) but not run. The record's store runs it inside its statement when its reader
// says `.exact` (`StoreFilter.subquery`); wherever else it runs (an in-process remainder,
// a reader that declines it) it is read as ids by the semi-join above, once
// (`_RelatedSubquery.materialized()`): one road, two places the ids may be read.

extension _Query {
  /// The query with every condition and sort key that walks a relation rewritten over the
  /// record's own keys; an error becomes the query's error. One query per relation use.
  func resolvingRelations() -> _Query {
    guard let graph, invalid == nil else { return self }
    let relations = graph.relations(of: Element.self)
    guard !relations.isEmpty else { return self }
    var q = self
    do {
      var notes: [String] = []
      let resolver = _RelationResolver<Element>(graph: graph, relations: relations)
      for i in q.stages.indices {
        if let filter = q.stages[i].filter, let resolved = try resolver.filter(filter, notes: &notes) {
          q.stages[i].filter = resolved
        }
        for (j, key) in q.stages[i].sort.enumerated() {
          guard case .field(let name, let order, let collation) = key, let split = resolver.split(name) else { continue }
          try resolver.checkHops(name)
          q.stages[i].sort[j] = .typed(
            try resolver.sort(name, split, order, collation, inStore: i == 0, notes: &notes))
        }
      }
      q.relationNotes = notes
    } catch let error as RequestSetError {
      q.invalidate(error)
    } catch {
      q.invalidate(RequestSetError(.invalidRelation, "\(error)", underlying: error))
    }
    return q
  }
}

/// Rewrites one query's relation conditions (see the top of this file).
struct _RelationResolver<Element: Sendable>: Sendable {
  let graph: RecordGraph
  let relations: [String: _RelationInfo]

  /// The most relations one key may walk (`owner.pets.owner…`), a many-to-many counting
  /// two (its join records, then their target): each is a query, and resolving one
  /// recurses, so a key built from input cannot exhaust the stack. Every form of key
  /// past it throws `.invalidRelation`: field conditions, sorts, `values`, and the keys
  /// of computed conditions (a SUBQUERY's `$v.key` counts from its collection's records).
  static var maxHops: Int { 16 }

  /// Throws when `key` walks more than ``maxHops`` relations from `Element`.
  func checkHops(_ key: String) throws {
    _ = try _walk(key, from: Element.self, hops: 0, written: key)
  }

  /// Walks the relations `key` names from `type`, after `start` hops: the type the key
  /// reaches when every component is a relation (nil when it ends in a stored key), and
  /// the hops taken. Throws past ``maxHops``, naming the key as `written`.
  private func _walk(_ key: String, from type: Any.Type, hops start: Int, written: String) throws
    -> (reached: Any.Type?, hops: Int)
  {
    var type: Any.Type = type
    var hops = start
    for component in key.split(separator: ".") {
      guard let relation = graph.relation(String(component), of: type) else { return (nil, hops) }
      if case .through = relation.kind { hops += 2 } else { hops += 1 }
      if hops > Self.maxHops {
        throw RequestSetError(
          .invalidRelation,
          "The key \"\(written.prefix(200))\" walks more than \(Self.maxHops) relations from \(Element.self); each is a "
            + "query. Shorten the path, or query the related type's set directly.")
      }
      type = relation.target
    }
    return (type, hops)
  }

  /// The most relations any key of `c` walks, keys inside SUBQUERYs included (a
  /// variable's `$v.key` counts from the hops of its collection); throws past
  /// ``maxHops``. Recurses once per level of the tree, which the parser's nesting limit
  /// bounds.
  func hops(_ c: _ExpressionCondition) throws -> Int {
    var most = 0
    var scope: [String: (reached: Any.Type, hops: Int, written: String)] = [:]
    _ = try _hops(c.lhs, &scope, &most)
    _ = try _hops(c.rhs, &scope, &most)
    return most
  }

  /// The type and hops of what `e` reads when it is a key through relations (a
  /// SUBQUERY's collection), and the key as written.
  private func _hops(
    _ e: _Expression, _ scope: inout [String: (reached: Any.Type, hops: Int, written: String)], _ most: inout Int
  ) throws -> (reached: Any.Type, hops: Int, written: String)? {
    func walk(_ key: String, _ base: (reached: Any.Type, hops: Int, written: String)) throws
      -> (reached: Any.Type, hops: Int, written: String)?
    {
      let written = base.written.isEmpty ? key : base.written + "." + key
      let (reached, hops) = try _walk(key, from: base.reached, hops: base.hops, written: written)
      most = Swift.max(most, hops)
      return reached.map { ($0, hops, written) }
    }
    switch e {
    case .constant:
      return nil
    case .key(let key):
      return try walk(key, (Element.self, 0, ""))
    case .evaluatedObject:
      return (Element.self, 0, "SELF")
    case .variable(let name):
      return scope[name]
    case .member(let base, let key):
      guard let reached = try _hops(base, &scope, &most) else { return nil }
      return try walk(key, reached)
    case .function(_, let args), .list(let args):
      for a in args { _ = try _hops(a, &scope, &most) }
      return nil
    case .index(let base, let s):
      if case .at(let position) = s { _ = try _hops(position, &scope, &most) }
      return try _hops(base, &scope, &most)
    case .subquery(let collection, let variable, let predicate):
      let reached = try _hops(collection, &scope, &most)
      let outer = scope[variable]
      scope[variable] = reached.map { ($0.reached, $0.hops, "$" + variable) }
      try _hops(predicate, &scope, &most)
      scope[variable] = outer
      return reached
    }
  }

  private func _hops(
    _ p: _FieldPredicate, _ scope: inout [String: (reached: Any.Type, hops: Int, written: String)], _ most: inout Int
  ) throws {
    switch p {
    case .constant: break
    case .and(let parts), .or(let parts): for part in parts { try _hops(part, &scope, &most) }
    case .not(let inner): try _hops(inner, &scope, &most)
    case .field(let c): _ = try _hops(.key(c.key), &scope, &most)
    case .search(let c): for key in c.keys { _ = try _hops(.key(key), &scope, &most) }
    case .expression(let c):
      _ = try _hops(c.lhs, &scope, &most)
      _ = try _hops(c.rhs, &scope, &most)
    }
  }

  /// The relation a key starts with, and the rest of the key; nil for a key of the record.
  func split(_ key: String) -> (relation: _RelationInfo, rest: String)? {
    let first = key.prefix { $0 != "." }
    guard let relation = relations[String(first)] else { return nil }
    return (relation, key.count > first.count ? String(key.dropFirst(first.count + 1)) : "")
  }

  /// The filter with its relation conditions rewritten, or nil when it has none. Recurses
  /// once per level, which the tree's depth bounds.
  func filter(_ node: _FilterNode<Element>, notes: inout [String]) throws -> _FilterNode<Element>? {
    switch node {
    case .field(let c):
      guard let (relation, rest) = split(c.key) else { return nil }
      try checkHops(c.key)
      return try field(c, relation, rest, notes: &notes)
    case .expression(let c):
      return try expression(c, notes: &notes)
    case .and(let j), .or(let j):
      let terms = j.terms
      var changed: [_FilterNode<Element>]? = nil
      for i in terms.indices {
        guard let r = try filter(terms[i], notes: &notes) else { continue }
        if changed == nil { changed = terms }
        changed![i] = r
      }
      guard let changed else { return nil }
      if case .and = node { return .and(changed) }
      return .or(changed)
    case .not(let inner):
      return try filter(inner, notes: &notes).map { !$0 }
    default:
      return nil
    }
  }

  private static func _in(_ key: String, _ values: some Collection<FieldValue>) throws -> _FilterNode<Element> {
    if values.isEmpty { return .constant(false) }
    return .field(try _FieldCondition(key: key, op: .in, value: .array(Array(values))))
  }

  private func _where(_ relation: _RelationInfo) -> String { relation.described }

  /// Appends `note`, then the notes of the queries it ran (`nested`) indented below it.
  private func _append(_ note: String, nested: [String], to notes: inout [String]) {
    notes.append(note)
    notes += nested.map { "  " + $0 }
  }

  /// A field condition whose key starts with a relation.
  /// - Parameter reached: For a through relation's join records, the condition that their
  ///   second relation reaches a record: only those count.
  func field(
    _ c: _FieldCondition, _ relation: _RelationInfo, _ rest: String, notes: inout [String],
    reached: _FieldPredicate? = nil
  ) throws -> _FilterNode<Element> {
    func children(_ p: _FieldPredicate) -> _FieldPredicate { reached.map { .and([$0, p]) } ?? p }
    let target = try graph.targetEntry(relation)
    switch relation.kind {
    case .toOne(let key, _, _, _):
      var inner = c
      // `owner == 3`, `owner == nil`: the related record's id, so a key that names no
      // record (a dangling id) reads as no owner, as every key through the relation does.
      inner.key = rest.isEmpty ? "id" : rest
      // A record with no related record reads nil through the relation, and a collection
      // operator further on reads what it gives for an empty collection (0 for `@count`).
      let missing = Self.missingMatches(inner)
      let filter: _FieldPredicate = missing ? .not(.field(inner)) : .field(inner)
      let step =
        missing
        ? "anti-join, 1 query on \(target.storeName) for NOT (\(inner)) → NOT \(key) IN"
        : "semi-join, 1 query on \(target.storeName) for \(c) → \(key) IN"
      return try _semiJoin(
        relation, target, key: key, column: "id", where: filter, negated: missing, step, notes: &notes)
    case .toMany(let key):
      if c.countsElements, c.quantifier == nil, rest.isEmpty {
        return try _count(c, relation, target, key, notes: &notes)
      }
      if c.quantifier == nil, !c.countsElements, rest.split(separator: ".").contains(where: { $0.hasPrefix("@") }) {
        return try _aggregate(c, relation, rest, notes: &notes)
      }
      guard let quantifier = c.quantifier, !rest.isEmpty else {
        throw RequestSetError(
          .invalidRelation,
          "\(relation.sourceName).\(relation.name) is a to-many relation, so \"\(c.key)\" names many values where "
            + "\(c) needs one. Write ANY \(c.key) (or ALL, NONE), or reduce it with \(relation.name).@count, "
            + "@sum, @avg, @min or @max.")
      }
      var inner = c
      inner.key = rest
      // A path that walks another to-many (`ANY visits.vet.visits.cost`) flattens, as KVC
      // does: the quantifier goes on to it. A path to one value per child drops it.
      let flattens = graph.walksToMany(rest, from: relation.target)
      inner.quantifier = flattens ? (quantifier == .all ? .all : .any) : nil
      // The join records of a many-to-many count only where they reach a record.
      let only = reached.map { "\($0.description) AND " } ?? ""
      switch quantifier {
      case .any, .noElement:
        let step =
          "semi-join, 1 query on \(target.storeName) for \(only)\(inner) → \(quantifier == .any ? "" : "NOT ")id IN"
        return try _semiJoin(
          relation, target, key: "id", column: key, where: children(.field(inner)), negated: quantifier != .any, step,
          notes: &notes)
      case .all:
        let step = "anti-join, 1 query on \(target.storeName) for \(only)NOT (\(inner)) → NOT id IN"
        return try _semiJoin(
          relation, target, key: "id", column: key, where: children(.not(.field(inner))), negated: true, step,
          notes: &notes)
      }
    case .through(let first, let second):
      guard let via = graph.relation(first, of: relation.source) else {
        throw RequestSetError(.invalidRelation, "\(_where(relation)) is not declared through \(first).\(second).")
      }
      if c.quantifier == nil, c.countsElements || rest.split(separator: ".").contains(where: { $0.hasPrefix("@") }) {
        var plain = c
        plain.countsElements = false
        return try _aggregate(plain, relation, c.countsElements ? "@count" : rest, notes: &notes)
      }
      var inner = c
      inner.key = first + "." + second + (rest.isEmpty ? "" : "." + rest)
      let reaches = _FieldCondition(key: second + ".id", comparison: .notEqual, value: .null, collation: .binary)
      var nested: [String] = []
      let node = try field(
        inner, via, second + (rest.isEmpty ? "" : "." + rest), notes: &nested, reached: .field(reaches))
      _append("\(_where(relation)): \(c) runs as \(inner), over the \(first) that reach a \(second)", nested: nested, to: &notes)
      return node
    }
  }

  /// Whether `c` holds for a record whose relation reaches no record: its key reads nil,
  /// or, when the key ends in a collection operator (`pets.@count`), what the operator
  /// gives for an empty collection.
  static func missingMatches(_ c: _FieldCondition) -> Bool {
    guard let empty = _RelationColumns.emptyAnswer(c.key) else { return c.matches(.null) }
    var test = c
    test.key = ""
    test.quantifier = nil
    test.countsElements = false
    return test.matches(empty)
  }

  /// `visits.@sum.cost <op> value` (any collection operator): the value for each parent
  /// from one query, then `id IN {…}`, or its negation when a record with no related
  /// record matches; in one database, a to-many's `@sum`, `@avg`, `@min` or `@max` of a
  /// key is a grouped subquery instead (see ``_count``: a parent with no children is in
  /// no group).
  private func _aggregate(_ c: _FieldCondition, _ relation: _RelationInfo, _ rest: String, notes: inout [String]) throws
    -> _FilterNode<Element>
  {
    var test = c
    test.key = ""
    test.quantifier = nil
    test.countsElements = false
    let graph = self.graph
    let name = _where(relation)
    let store = try _storeName(relation)
    let fallback = try _RelationColumns.fallback(relation, rest)
    let zero = test.matches(fallback)
    let read: @Sendable (inout [String]) throws -> _FilterNode<Element> = { [test] notes in
      var nested: [String] = []
      let (values, _) = try _RelationColumns.values(relation, rest, graph: graph, notes: &nested)
      notes.append("\(name): 1 query on \(store) for \(relation.name).\(rest) of each record")
      notes += nested.map { "  " + $0 }
      return try Self._in("id", values.lazy.filter { test.matches($0.value) != zero }.map(\.key))
    }
    if case .toMany(let key) = relation.kind,
      let aggregate = try _RelationColumns.storeAggregate(rest, of: relation, graph: graph)
    {
      let target = try graph.targetEntry(relation)
      if let node = try _subquery(
        relation, target, key: "id", column: key, where: nil, count: (test, !zero), aggregate: aggregate,
        negated: zero, materialize: read)
      {
        return node
      }
    }
    let node = try read(&notes)
    return zero ? !node : node
  }

  /// The store a relation's query runs on: the join type's for a through relation.
  private func _storeName(_ relation: _RelationInfo) throws -> String {
    if case .through(let first, _) = relation.kind, let via = graph.relation(first, of: relation.source) {
      return try graph.targetEntry(via).storeName
    }
    return try graph.targetEntry(relation).storeName
  }

  /// `visits.@count <op> value`: one query for the children's inverse keys, or, in one
  /// database, a grouped subquery (a parent with no children is in no group, so a test
  /// that 0 passes keeps the parents whose count fails it, negated). With `filter`, only
  /// the children it selects count (a SUBQUERY's, see RelationSubqueries.swift).
  func _count(
    _ c: _FieldCondition, _ relation: _RelationInfo, _ target: any _GraphEntry, _ key: String,
    where filter: _FieldPredicate? = nil, notes: inout [String]
  ) throws -> _FilterNode<Element> {
    var test = c
    test.key = ""
    test.countsElements = false
    let zero = test.matches(.int(0))
    let graph = self.graph
    let name = _where(relation)
    let count: @Sendable (inout [String]) throws -> _FilterNode<Element> = { [test] notes in
      var counts: [FieldValue: Int] = [:]
      var nested: [String] = []
      for parent in try target.column(key, where: filter, graph: graph, notes: &nested) {
        counts[parent, default: 0] += 1
      }
      let which = filter.map { " that match \($0.description)" } ?? ""
      notes.append("\(name): 1 query on \(target.storeName) counting \(counts.count) parents' children\(which)")
      notes += nested.map { "  " + $0 }
      return try Self._in("id", counts.lazy.filter { test.matches(.int($0.value)) != zero }.map(\.key))
    }
    if let node = try _subquery(
      relation, target, key: "id", column: key, where: filter, count: (test, !zero), negated: zero, materialize: count)
    {
      return node
    }
    let node = try count(&notes)
    return zero ? !node : node
  }

  /// `key IN {the column's values in the target's records that match filter}`, negated
  /// when `negated`: a subquery when the stores share a database (see ``_subquery``),
  /// else the column read now, in one query (`step` starts its `explain()` line).
  private func _semiJoin(
    _ relation: _RelationInfo, _ target: any _GraphEntry, key: String, column: String, where filter: _FieldPredicate,
    negated: Bool, _ step: String, notes: inout [String]
  ) throws -> _FilterNode<Element> {
    let graph = self.graph
    let name = _where(relation)
    let read: @Sendable (inout [String]) throws -> _FilterNode<Element> = { notes in
      var nested: [String] = []
      let ids = Set(try target.column(column, where: filter, graph: graph, notes: &nested))
      notes.append("\(name): \(step) {\(ids.count) ids}")
      notes += nested.map { "  " + $0 }
      return try Self._in(key, ids)
    }
    if let node = try _subquery(
      relation, target, key: key, column: column, where: filter, negated: negated, materialize: read)
    {
      return node
    }
    let node = try read(&notes)
    return negated ? !node : node
  }

  /// `key IN (SELECT column FROM target WHERE filter)` as a subquery the record's store
  /// runs in its own statement, when both stores name one database and the target's
  /// store runs the filter exactly (see the top of this file); nil otherwise. The
  /// subquery is read as ids by `materialize` (the semi-join, un-negated) wherever it
  /// runs in process. With `count`, the subquery keeps the column's values whose number
  /// of records (or, with `aggregate`, whose records' collection operator of a key) passes
  /// the test (or fails it, when the flag is false).
  private func _subquery(
    _ relation: _RelationInfo, _ target: any _GraphEntry, key: String, column: String, where filter: _FieldPredicate?,
    count: (test: _FieldCondition, passes: Bool)? = nil, aggregate: StoreSubquery.Aggregate? = nil,
    negated: Bool, materialize: @escaping @Sendable (inout [String]) throws -> _FilterNode<Element>
  ) throws -> _FilterNode<Element>? {
    guard let own = graph.entry(Element.self)?.location, let location = target.location,
      own.database == location.database,
      let (query, nested) = try target.subquery(column, where: filter, graph: graph)
    else { return nil }
    let subquery = StoreSubquery(
      key: key, location: location, column: column, query: query, count: count.map { StoreCondition($0.test) },
      countPasses: count?.passes ?? true, aggregate: aggregate)
    let lines =
      ["\(_where(relation)): in the statement, as a subquery on \(location.table): \(negated ? "NOT " : "")\(subquery)"]
      + nested.map { "  " + $0 }
    let node = _FilterNode<Element>.related(
      _RelatedSubquery(subquery, notes: lines) {
        var notes: [String] = []
        let node = try materialize(&notes)
        return (node, notes)
      })
    return negated ? !node : node
  }

  /// An expression condition that reads a relation: computed on each record over the
  /// related records materialized as nested values; nil when it reads none.
  func expression(_ c: _ExpressionCondition, notes: inout [String]) throws -> _FilterNode<Element>? {
    var tops = Set<String>()
    var components = Set<String>()
    c.lhs._relationKeys(top: &tops, components: &components)
    c.rhs._relationKeys(top: &tops, components: &components)
    let used = tops.compactMap { relations[$0] }.sorted { $0.name < $1.name }
    guard !used.isEmpty else { return nil }
    let hops = try hops(c)
    // `SUBQUERY(visits, $v, $v.cost > 50).@count > 2`: a count of the children a
    // condition selects, when the condition reads only the children (RelationSubqueries.swift).
    if let node = try countedSubquery(c, notes: &notes) { return node }
    // `visits.@sum.cost > 100`: the aggregate for each parent from one query.
    if c.quantifier == nil, case .function(let f, let args) = c.lhs, f.rawValue.hasPrefix("@"), args.count == 1,
      case .key(let key) = args[0], let constant = c.rhs.constantValue, let (relation, rest) = split(key),
      !relation.isToOne
    {
      let condition = try _FieldCondition(key: "", op: c.op, value: constant, options: c.options)
      return try _aggregate(condition, relation, f.rawValue + (rest.isEmpty ? "" : "." + rest), notes: &notes)
    }
    // Deep enough for the longest chain of relations the expression's keys walk (and, for
    // a key read off a computed value, which the walk cannot follow, for every relation
    // name it holds).
    let depth = Swift.max(hops, Swift.min(components.count, Self.maxHops))
    var attachments: [(name: String, lookup: String, values: [FieldValue: FieldValue], many: Bool)] = []
    // One read per related type and level, shared by every relation and parent.
    let materializer = _RelationMaterializer(graph: graph, include: components)
    for relation in used {
      // Every related record, keyed by what the parent holds.
      let target = try graph.targetEntry(relation)
      switch relation.kind {
      case .toOne(let key, _, _, _):
        let byID = try materializer.grouped(target, depth: depth, by: "id")
        attachments.append((relation.name, key, byID.compactMapValues(\.first), false))
      case .toMany(let key):
        let byParent = try materializer.grouped(target, depth: depth, by: key)
        attachments.append((relation.name, "id", byParent.mapValues { .array($0) }, true))
      case .through(let first, _):
        // Attach through the first relation's records, by each parent's id.
        guard let via = graph.relation(first, of: relation.source) else { continue }
        let viaTarget = try graph.targetEntry(via)
        let byParent = try materializer.grouped(viaTarget, depth: depth, by: via.key)
        var values: [FieldValue: FieldValue] = [:]
        for (parent, children) in byParent {
          guard case .through(_, let second) = relation.kind else { continue }
          values[parent] = .array(children.map { _ExpressionValues.member($0, second) }.filter { $0 != .null })
        }
        attachments.append((relation.name, "id", values, true))
      }
      notes.append("\(_where(relation)): materialized, 1 query on \(try _storeName(relation)); \(c) computed on each record")
    }
    let test = try _ExpressionCompiler<Element>.valueTest(c)
    let frozen = attachments
    return .closure(
      _ClosureCondition { record in
        guard let encodable = record as? any Encodable, case .object(var object) = try? _FieldEncoder.encode(encodable)
        else { return false }
        for a in frozen {
          let value = a.values[object[a.lookup] ?? .null]
          object[a.name] = value ?? (a.many ? .array([]) : .null)
        }
        return (try? test(.object(object))) ?? false
      })
  }

  /// A sort key through a relation: the value for each related id, read in one query.
  /// With `inStore` (a first stage's key, which a store may run), over stores that share
  /// a database, the key also carries the store key a reader may run as a subquery, and
  /// the values are read only if the sort runs in process (see RelatedSort.swift).
  func sort(
    _ name: String, _ split: (relation: _RelationInfo, rest: String), _ order: RequestSortOrder,
    _ collation: RequestCollation, inStore: Bool = false, notes: inout [String]
  ) throws -> _TypedSort<Element> {
    // A sort needs one value per record, as a condition without ANY/ALL/NONE does: a key
    // through a to-many names many values until a collection operator reduces them.
    if graph.walksToMany(name, from: Element.self), !name.split(separator: ".").contains(where: { $0.hasPrefix("@") }) {
      throw RequestSetError(
        .invalidRelation,
        "\"\(name)\" walks a to-many relation of \(Element.self) and names many values per record, so it cannot "
          + "sort. Sort by one value per record: reduce the collection with @count, or with @sum, @avg, @min or @max "
          + "of a key (\"visits.@count\", \"visits.@max.cost\").")
    }
    let relation = split.relation
    let read: @Sendable (UnsafePointer<Element>) -> FieldValue
    // The stored key `read` encodes: a store whose records are not in memory sorts by it
    // read once per record (see `_TypedSort.throughField`).
    let storedKey = relation.isToOne ? relation.key : "id"
    if relation.isToOne {
      guard let fk = relation.read as? @Sendable (Element) -> FieldValue else {
        throw RequestSetError(.invalidRelation, "\(_where(relation)) is not declared on \(Element.self).")
      }
      read = { fk($0.pointee) }
    } else {
      guard let id = graph.entry(Element.self)?.readID as? @Sendable (UnsafePointer<Element>) -> FieldValue else {
        throw RequestSetError.missingStore(Element.self)
      }
      read = id
    }
    let description = name + " [through \(relation.name)]"
    let make: @Sendable ([FieldValue: FieldValue], FieldValue) -> _TypedSort<Element> = { values, fallback in
      var sort = _TypedSort<Element>(description: description, order: order) { a, b in
        FieldValue._order(values[read(a)] ?? fallback, values[read(b)] ?? fallback, collation)
      }
      sort.throughField = _ThroughField(key: storedKey, collation: collation) { values[$0] ?? fallback }
      return sort
    }
    let line = "\(_where(relation)): sort by \(name), 1 query on \(try _storeName(relation))"
    if inStore, let (related, table) = try _relatedValue(relation, split.rest) {
      let graph = self.graph
      let rest = split.rest
      let storeKey = StoreSortKey(name, order: order, collation: collation, related: related)
      let sort = _RelatedSort<Element>(
        storeKey: storeKey,
        notes: ["\(_where(relation)): sort by \(name) in the statement, as a subquery on \(table): \(related)"],
        line: line
      ) {
        var nested: [String] = []
        let (values, fallback) = try _RelationColumns.values(relation, rest, graph: graph, notes: &nested)
        return (make(values, fallback), nested)
      }
      // Every in-process sort asks for `inProcess()` first; this comparison stands in.
      var typed = _TypedSort<Element>(description: description, order: order) { a, b in
        (try? sort.sort())?.compare(a, b) ?? 0
      }
      typed.related = sort
      return typed
    }
    var nested: [String] = []
    let (values, fallback) = try _RelationColumns.values(relation, split.rest, graph: graph, notes: &nested)
    _append(line, nested: nested, to: &notes)
    return make(values, fallback)
  }

  /// The value a store in the record's database reads for a sort through `relation`
  /// (`rest` the key after the relation), with the related table: a to-one's stored key
  /// (`owner.name`; `owner` is the target's id), a to-many's `@count`, or its `@sum`,
  /// `@avg`, `@min` or `@max` of a stored key. Nil when the stores are in two databases,
  /// for a through relation, or for a key that walks a further relation or reads a date
  /// part: those sort in process.
  private func _relatedValue(_ relation: _RelationInfo, _ rest: String) throws
    -> (value: StoreRelatedValue, table: String)?
  {
    guard graph.asOfTime == nil, let own = graph.entry(Element.self)?.location else { return nil }
    let target = try graph.targetEntry(relation)
    guard let location = target.location, location.database == own.database else { return nil }
    let value: StoreRelatedValue
    switch relation.kind {
    case .toOne(let key, _, _, _):
      let read = rest.isEmpty ? "id" : rest
      let components = read.split(separator: ".")
      guard !components.contains(where: { $0.hasPrefix("@") }), let first = components.first,
        graph.relation(String(first), of: relation.target) == nil
      else { return nil }
      value = StoreRelatedValue(key: key, location: location, column: "id", reading: .value(read))
    case .toMany(let key):
      guard graph.relation(key, of: relation.target) == nil else { return nil }
      let (path, op) = try _RelationColumns.aggregate(rest, of: relation)
      if path.isEmpty, op == .countOperator {
        value = StoreRelatedValue(key: "id", location: location, column: key, reading: .count)
      } else if let aggregate = try _RelationColumns.storeAggregate(rest, of: relation, graph: graph) {
        value = StoreRelatedValue(key: "id", location: location, column: key, reading: .aggregate(aggregate))
      } else {
        return nil
      }
    case .through:
      return nil
    }
    return (value, location.table)
  }
}

/// The values of keys through relations, keyed by the id the record holds.
enum _RelationColumns {
  /// The most distinct ids a set's `values` through a relation binds into the related
  /// query (`key IN {ids}`); past it, the query reads every related record once.
  static var fewIDs: Int { 1_000 }

  /// A key's path and its one collection operator: `cost.@sum` and `@sum.cost` are
  /// `(["cost"], @sum)`; nil when the key has no operator.
  static func aggregate(_ rest: String, of relation: _RelationInfo) throws -> (path: [String], op: _Function?) {
    var path: [String] = []
    var op: _Function? = nil
    for component in rest.split(separator: ".") {
      if component.hasPrefix("@") {
        guard let f = _Function.collectionOperator(String(component)), op == nil else {
          throw RequestSetError(
            .invalidFormat,
            "\"\(component)\" in \"\(relation.name).\(rest)\" is not one collection operator. "
              + "Use one of @count, @sum, @avg, @min or @max.")
        }
        op = f
      } else {
        path.append(String(component))
      }
    }
    if path.isEmpty && op == nil {
      throw RequestSetError(
        .invalidRelation,
        "\(relation.sourceName).\(relation.name) is a to-many relation: sort or read it through a key "
          + "(\(relation.name).@count, \(relation.name).@sum.cost) that gives one value per record.")
    }
    return (path, op)
  }

  /// What a key ending in a collection operator (`pets.@count`) reads for an empty
  /// collection (0 for `@count`, `@sum` and `@avg`, nil for `@min` and `@max`); nil for a
  /// key without one.
  static func emptyAnswer(_ key: String) -> FieldValue? {
    guard let op = key.split(separator: ".").last(where: { $0.hasPrefix("@") }),
      let f = _Function.collectionOperator(String(op))
    else { return nil }
    return (try? _ExpressionValues.apply(f, [.array([])])) ?? .null
  }

  /// What `rest` reads for a record with no related record: ``values(_:_:graph:notes:)``'s
  /// fallback, without a query.
  static func fallback(_ relation: _RelationInfo, _ rest: String) throws -> FieldValue {
    if relation.isToOne { return emptyAnswer(rest) ?? .null }
    guard let op = try aggregate(rest, of: relation).op else { return .array([]) }
    return (try? _ExpressionValues.apply(op, [.array([])])) ?? .null
  }

  /// A to-many key's `@sum`, `@avg`, `@min` or `@max` of a stored key of the related
  /// records (`@sum.cost`), as a store computes it in a subquery; nil for `@count`, for no
  /// operator, and for a key that walks a further relation (read by its own query).
  static func storeAggregate(_ rest: String, of relation: _RelationInfo, graph: RecordGraph) throws
    -> StoreSubquery.Aggregate?
  {
    let (path, op) = try aggregate(rest, of: relation)
    guard let op, let first = path.first, graph.relation(first, of: relation.target) == nil else {
      return nil
    }
    let function: StoreAggregate
    switch op {
    case .sumOperator: function = .sum
    case .avgOperator: function = .average
    case .minOperator: function = .min
    case .maxOperator: function = .max
    default: return nil
    }
    return StoreSubquery.Aggregate(function: function, key: path.joined(separator: "."))
  }

  /// For a to-one, each target's value of `rest`, by target id; for a to-many, each
  /// parent's values (or their `@count`, `@sum`, `@avg`, `@min`, `@max`), by parent id,
  /// as they read when the related records are nested in the parent. The fallback is the
  /// value of a record with no related record.
  /// `notes` gains what the queries' own relations did, for `explain()`.
  ///
  /// With `only`, the values of those ids alone (what the record holds: a to-one's foreign
  /// keys, else the parents' ids): the related query selects the related records that
  /// carry one (`key IN {ids}`, which an index on the key serves), so a few parents read
  /// their own children, not every child of the store. Nil ids select nothing.
  static func values(
    _ relation: _RelationInfo, _ rest: String, graph: RecordGraph, notes: inout [String], only: Set<FieldValue>? = nil
  ) throws -> (values: [FieldValue: FieldValue], fallback: FieldValue) {
    let target = try graph.targetEntry(relation)
    // `key IN {only}`; nil when every related record is read.
    func selecting(_ key: String) throws -> _FieldPredicate? {
      guard let only else { return nil }
      let ids = only.filter { $0 != .null }
      guard !ids.isEmpty else { return .constant(false) }
      return .field(try _FieldCondition(key: key, op: .in, value: .array(Array(ids))))
    }
    switch relation.kind {
    case .toOne:
      let columns = try target.columns(
        ["id", rest.isEmpty ? "id" : rest], where: try selecting("id"), graph: graph, notes: &notes)
      var map: [FieldValue: FieldValue] = [:]
      map.reserveCapacity(columns[0].count)
      for (id, value) in zip(columns[0], columns[1]) { map[id] = value }
      // With no related record a key reads nil, and a collection operator further on
      // (`owner.pets.@count`) what it gives for an empty collection.
      return (map, emptyAnswer(rest) ?? .null)
    case .toMany(let key):
      let (path, op) = try aggregate(rest, of: relation)
      if path.isEmpty, op == .countOperator, graph.relation(key, of: relation.target) == nil,
        let counts = try? target.counts(by: key, where: try selecting(key), graph: graph)
      {
        // `visits.@count`: the children counted per parent by a group query (grouped in a
        // SQL store's statement), not read; a foreign key whose values do not group (an
        // array, an object) reads the column below.
        return (counts.mapValues { .int($0) }, .int(0))
      }
      let columns = try target.columns(
        [key, path.isEmpty ? "id" : path.joined(separator: ".")], where: try selecting(key), graph: graph,
        notes: &notes)
      var grouped: [FieldValue: [FieldValue]] = [:]
      for (parent, value) in zip(columns[0], columns[1]) { grouped[parent, default: []].append(value) }
      return reduce(grouped, op)
    case .through(let first, let second):
      // The through records' values, kept only where the second relation reaches a record,
      // as `vets` lists only the vets its visits reach.
      guard let via = graph.relation(first, of: relation.source) else { return ([:], .null) }
      let viaTarget = try graph.targetEntry(via)
      let (path, op) = try aggregate(rest, of: relation)
      let reached = second + ".id"
      let valueKey = path.isEmpty ? reached : second + "." + path.joined(separator: ".")
      // `vets.@count` reads whether each visit reaches a vet once, not twice.
      let keys = valueKey == reached ? [via.key, reached] : [via.key, reached, valueKey]
      let columns = try viaTarget.columns(keys, where: try selecting(via.key), graph: graph, notes: &notes)
      var grouped: [FieldValue: [FieldValue]] = [:]
      for i in columns[0].indices where columns[1][i] != .null {
        grouped[columns[0][i], default: []].append(columns[keys.count - 1][i])
      }
      return reduce(grouped, op)
    }
  }

  private static func reduce(_ grouped: [FieldValue: [FieldValue]], _ op: _Function?)
    -> (values: [FieldValue: FieldValue], fallback: FieldValue)
  {
    guard let op else { return (grouped.mapValues { .array($0) }, .array([])) }
    func reduce(_ values: [FieldValue]) -> FieldValue { (try? _ExpressionValues.apply(op, [.array(values)])) ?? .null }
    return (grouped.mapValues(reduce), reduce([]))
  }
}

extension RequestSet {
  /// The values of `key` for the set's records, in order. In a graph's set the key may
  /// walk relations (`owner.city`, `visits.@count`): one query per relation.
  func _column(_ key: String) throws -> [FieldValue] {
    var unexplained: [String] = []
    return try _column(key, notes: &unexplained)
  }

  /// ``_column(_:)``, with `notes` gaining what resolving relations did (the key's, and
  /// the set's filter's), for `explain()`.
  func _column(_ key: String, notes: inout [String]) throws -> [FieldValue] {
    if let graph = _query.graph {
      let resolver = _RelationResolver<Element>(graph: graph, relations: graph.relations(of: Element.self))
      if let (relation, rest) = resolver.split(key) {
        try resolver.checkHops(key)
        var nested: [String] = []
        var ownNotes: [String] = []
        let own = try _column(relation.isToOne ? relation.key : "id", notes: &ownNotes)
        // A few records read the related values of their own ids alone (an index on the
        // related key serves it); many read every related record's, in one pass.
        let ids = Set(own)
        let few = ids.count <= _RelationColumns.fewIDs
        let (values, fallback) = try _RelationColumns.values(
          relation, rest, graph: graph, notes: &nested, only: few ? ids : nil)
        notes.append(
          "\(relation.described): read \(key), 1 query on \(try graph.targetEntry(relation).storeName)"
            + (few ? " for \(ids.count) ids" : ""))
        notes += nested.map { "  " + $0 }
        notes += ownNotes
        return own.map { values[$0] ?? fallback }
      }
    }
    let e = try _cache.evaluation(_source, _query)
    notes += _cache.peekPrepared()?.query.relationNotes ?? []
    let fields = try e.snapshot._fields()
    if !e.slots.isEmpty { try _FilterCompiler<Element>.validate(key, value: nil, in: fields) }
    // A date part (`hired.@month`) reads as in `values`: a related record's date parts
    // sort and project through a relation as the record's own do.
    guard let read = try fields.readerWithDateParts(for: key) else {
      return Array(repeating: .null, count: e.slots.count)
    }
    return try e.slots.map(read)
  }
}

extension RequestSetError {
  static func missingStore(_ type: Any.Type) -> RequestSetError { RecordGraph.missingStore(type, for: nil) }
}

extension _Expression {
  /// The first component of every key of the evaluated record the expression reads
  /// (`top`: a bare key inside a SUBQUERY is the record's too), and every component of
  /// every key anywhere in it (`components`, the members a SUBQUERY's variable reads
  /// included): which relations to materialize, and how deep.
  func _relationKeys(top: inout Set<String>, components: inout Set<String>) {
    switch self {
    case .constant, .evaluatedObject, .variable:
      break
    case .key(let key):
      let parts = key.split(separator: ".")
      if let first = parts.first { top.insert(String(first)) }
      for p in parts { components.insert(String(p)) }
    case .member(let base, let key):
      base._relationKeys(top: &top, components: &components)
      for p in key.split(separator: ".") { components.insert(String(p)) }
    case .function(_, let args), .list(let args):
      for a in args { a._relationKeys(top: &top, components: &components) }
    case .index(let base, let s):
      base._relationKeys(top: &top, components: &components)
      if case .at(let e) = s { e._relationKeys(top: &top, components: &components) }
    case .subquery(let collection, _, let predicate):
      collection._relationKeys(top: &top, components: &components)
      predicate._relationComponents(top: &top, components: &components)
    }
  }
}

extension _FieldPredicate {
  func _relationComponents(top: inout Set<String>, components: inout Set<String>) {
    switch self {
    case .constant: break
    case .and(let parts), .or(let parts): for p in parts { p._relationComponents(top: &top, components: &components) }
    case .not(let inner): inner._relationComponents(top: &top, components: &components)
    // A bare key inside a SUBQUERY is the record's, as outside it.
    case .field(let c): _Expression.key(c.key)._relationKeys(top: &top, components: &components)
    case .search(let c):
      for key in c.keys { _Expression.key(key)._relationKeys(top: &top, components: &components) }
    case .expression(let c):
      c.lhs._relationKeys(top: &top, components: &components)
      c.rhs._relationKeys(top: &top, components: &components)
    }
  }
}
