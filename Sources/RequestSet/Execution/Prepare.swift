import Synchronization

// Preparing a query: the one step between the query a request set accumulated (`_Query`,
// plain data) and running it.
//
// A request set is evaluated once (see `_ResultCache`). On its first read the engine
// prepares it against the source it reads: a snapshot of a store that runs no query
// itself, or one reader of a `QueryPushdownStore`. Preparing
// 1. shows the source's first records to the schema probe when the process has seen no
//    record of the type yet (``_Prepare/witness(_:)``);
// 2. decides every typed condition's field twin, typed sort's store key and `#Predicate`
//    translation, for that source (``_Query/resolvingTwins()``): the plan then depends on
//    the query and the data, never on what the process read before the filter was built;
// 3. checks the query against the store's keys and kinds and splits it between the store
//    and the process (`_PushdownPlan`), or, over a snapshot, plans the first stage's access
//    (`_AccessPlan`: a scan, an id or index lookup, or an ordered index walk) the first
//    time a read needs it.
// `count`, `first`, `last`, `exists`, subscripts, iteration and `explain()` all read the one
// `_PreparedQuery`: nothing plans twice for one evaluated set (`_PlanCounter` counts, for
// the tests that pin it).

/// One evaluation's decisions: the query with its twins decided, the snapshot or reader it
/// runs on, and the plan, made at most once.
final class _PreparedQuery<Element: Sendable>: Sendable {
  /// The query, with every twin decided for this source.
  let query: _Query<Element>
  /// The snapshot the query reads, for a store that runs no query itself.
  let snapshot: StoreSnapshot<Element>?
  /// The split between store and process, for a ``QueryPushdownStore``.
  let pushdown: _PushdownPlan<Element>?
  /// The first stage's access plan over ``snapshot``, made on first use.
  private let _access = _Lock<_AccessPlan<Element>?>(nil)

  /// Prepares `query` over a snapshot; the access plan is made when a read needs it.
  init(_ query: _Query<Element>, snapshot: StoreSnapshot<Element>) {
    // Records in memory were shown when the snapshot was made; a backend's, read from
    // outside, are shown here, as a store's reader shows its first records.
    if query.invalid == nil, !query.twinsResolved, query.hasTypedParts { snapshot._witnessFirstRecords() }
    self.query = query.resolvingTwins()
    self.snapshot = snapshot
    self.pushdown = nil
  }

  /// Prepares `query` for a store's reader: its records shown to the probe when the
  /// process has seen none of the type, twins decided, the query checked against the
  /// store's keys and kinds and split between store and process.
  init(_ query: _Query<Element>, reader: _PushdownReader<Element>, storeName: String) throws {
    let resolved = Self.resolved(query, reader)
    try _Pushdown.check(resolved, reader)
    let plan = _PushdownPlan(resolved, reader)
    try _Pushdown.refuse(plan, resolved, storeName: storeName)
    self.query = resolved
    self.snapshot = nil
    self.pushdown = plan
  }

  /// The split of `query` between a store's reader and the process, checked against the
  /// store's keys and kinds: for a write or an aggregate through the query, which asks
  /// only whether the store runs it all.
  static func split(_ query: _Query<Element>, _ reader: _PushdownReader<Element>) throws -> _PushdownPlan<Element> {
    let resolved = Self.resolved(query, reader)
    try _Pushdown.check(resolved, reader)
    return _PushdownPlan(resolved, reader)
  }

  /// `query` with its twins decided for a store's reader, after the store's first records
  /// were shown to the probe when the process had seen none of the type.
  static func resolved(_ query: _Query<Element>, _ reader: _PushdownReader<Element>) -> _Query<Element> {
    // Only a hint: a store whose first records cannot be read now (or decoded as the type)
    // still runs the query, which reports its own error if it reads them.
    if query.invalid == nil, !query.twinsResolved, query.hasTypedParts { try? reader.witness() }
    return query.resolvingTwins()
  }

  /// The first stage's access plan over the snapshot, made once.
  func access() -> _AccessPlan<Element> {
    _access.withLock { known in
      if let known { return known }
      let plan = _Planner.plan(query.stages[0], in: snapshot!)
      known = plan
      return plan
    }
  }
}

/// How many plans the engine made while a test watched: a test binds ``tally`` around
/// the reads of one set to pin that an evaluated set plans once, whatever reads it. Only
/// a plan that weighs choices counts (`_Planner.plan` over a snapshot with indexes, and
/// `_PushdownPlan`). It also counts the queries a graph set's preparation runs on related
/// stores (semi-joins, materializations, sort values), each a set of its own that plans
/// once: `first` then iteration on a graph set runs each of them once.
enum _PlanCounter {
  /// The plans and relation queries counted in one task.
  final class Tally: Sendable {
    let made = Atomic<Int>(0)
    let related = Atomic<Int>(0)
    let planned = Atomic<Int>(0)
    /// The plans made.
    var count: Int { made.load(ordering: .relaxed) }
    /// The queries run on related stores.
    var relationQueries: Int { related.load(ordering: .relaxed) }
    /// The related stores' queries planned to be subqueries of another store's statement
    /// (stores in one database): each plans once and reads nothing.
    var subqueries: Int { planned.load(ordering: .relaxed) }
  }

  @TaskLocal static var tally: Tally?

  @inline(__always)
  static func note() { tally?.made.add(1, ordering: .relaxed) }

  /// Notes one query on a related store.
  @inline(__always)
  static func noteRelationQuery() { tally?.related.add(1, ordering: .relaxed) }

  /// Notes one related store's query planned as a subquery.
  @inline(__always)
  static func noteSubquery() { tally?.planned.add(1, ordering: .relaxed) }
}

extension _Query {
  /// Whether any typed condition, typed sort or `#Predicate` waits for its twin.
  var hasTypedParts: Bool {
    stages.contains { stage in
      stage.sort.contains { if case .typed(let t) = $0 { return t.findFieldKey != nil } else { return false } }
        || (stage.filter?._hasTypedParts ?? false)
    }
  }

  /// The query with every typed condition's twin, typed sort's store key and predicate's
  /// translation decided now (see `TypedFieldTwin.swift`); itself when that is done.
  /// - Complexity: O(*n*) in the number of conditions and sort keys; O(1) once resolved.
  func resolvingTwins() -> _Query {
    if twinsResolved { return self }
    var q = graph == nil ? self : resolvingRelations()
    for i in q.stages.indices {
      if let filter = q.stages[i].filter, let resolved = filter._resolvingTwins() {
        q.stages[i].filter = resolved
        // A set operation's operand that failed to read (see `_IDSubquery`) fails the query.
        if case .invalid(let error) = resolved { q.invalidate(error) }
      }
      if q.stages[i].sort.contains(where: { if case .typed = $0 { return true } else { return false } }) {
        q.stages[i].sort = q.stages[i].sort.map { key in
          guard case .typed(let t) = key else { return key }
          return .typed(t.resolvingFieldKey())
        }
      }
    }
    q.twinsResolved = true
    return q
  }
}

extension _FilterNode {
  /// Whether the tree holds a condition whose twin is decided when prepared; O(1) below
  /// NOTs, since each junction knows it of its operands.
  var _hasTypedParts: Bool {
    switch self {
    case .typed(let t): return t.twin != nil
    case .predicate, .ids: return true
    case .and(let j), .or(let j): return j.hasTypedParts
    case .not(let inner): return inner._hasTypedParts
    default: return false
    }
  }

  /// The tree with its twins decided now, or nil when nothing in it waits for one. It
  /// recurses once per level, which the tree's depth bounds (see ``maxDepth``).
  func _resolvingTwins() -> _FilterNode? {
    switch self {
    case .typed(let t):
      guard t.twin != nil else { return nil }
      return .typed(t.resolvingTwin())
    case .predicate(let p):
      return .predicate(p.retranslated())
    case .ids(let s):
      return s.resolved()
    case .and(let j), .or(let j):
      // A junction with no typed part (a format string's tree) is left as it is, unwalked.
      guard j.hasTypedParts else { return nil }
      let terms = j.terms
      var changed: [_FilterNode]? = nil
      for i in terms.indices {
        guard let r = terms[i]._resolvingTwins() else { continue }
        if changed == nil { changed = terms }
        changed![i] = r
      }
      guard let changed else { return nil }
      // An invalid operand makes the whole invalid, as `&&` and `||` build it.
      if let invalid = changed.first(where: { if case .invalid = $0 { return true } else { return false } }) {
        return invalid
      }
      if case .and = self { return .and(changed) }
      return .or(changed)
    case .not(let inner):
      return inner._resolvingTwins().map { !$0 }
    default:
      return nil
    }
  }
}

/// Showing a source's records to the schema probe before twins are decided.
enum _Prepare {
  /// The first records of a store that runs queries itself, shown to the schema probe
  /// when the process holds no record of the type: a store that keeps records in process
  /// shows them as it stores or opens them, and a snapshot of an array as it is made.
  static func witness<Element: Record>(_ reader: any StoreQueryReader<Element>) throws {
    guard !_SchemaProbe.hasWitnesses(Element.self) else { return }
    var first: [Element] = []
    let limit = _SchemaProbe.witnessLimit
    try reader.records(StoreQuery(limit: limit)) { record in
      first.append(record)
      return first.count < limit
    }
    _SchemaProbe.witness(contentsOf: first)
  }
}
