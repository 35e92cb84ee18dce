/// Chooses how the first stage of a query reads a snapshot: a full scan, a lookup in one
/// of the store's indexes (or by id), or a walk of an index in sort order that stops once
/// the window is full.
///
/// The planner only narrows which slots the stage looks at. Whatever an index does not
/// answer exactly stays in the plan's `filter` and runs on each candidate, so every plan
/// returns exactly what a full scan returns, in the same order. It picks by a small cost
/// model in records touched: a scan touches every record; a lookup touches its matches
/// (four times that when they must be put back in store order); an ordered walk touches
/// about `(offset + limit) × records ÷ matches`.
enum _Planner {
  static func plan<Element>(_ stage: _Stage<Element>, in snapshot: StoreSnapshot<Element>) -> _AccessPlan<
    Element
  > {
    let n = snapshot.count
    var plan = _AccessPlan<Element>(path: .scan, filter: stage.filter, estimatedRows: n)
    guard let access = snapshot._indexes, n > 0 else { return plan }
    // A plan that weighs indexes: counted, so a test can pin one per evaluated set.
    _PlanCounter.note()

    // The best lookup among the filter's AND-ed parts.
    var parts: [_FilterNode<Element>] = []
    if let filter = stage.filter {
      if case .and(let j) = filter { parts = j.terms } else { parts = [filter] }
    }
    var best: (parts: [Int], lookup: _Lookup)? = nil
    // Indices, not `enumerated()`: this runs once per query, and in the engine's
    // unspecialized code each generic wrapper costs a metadata lookup.
    for i in parts.indices {
      guard let lookup = _lookup(parts[i], access, snapshot) else { continue }
      if best == nil || lookup.estimate < best!.lookup.estimate { best = ([i], lookup) }
    }
    // Bounds on one key AND-ed together (`age >= 30 AND age < 40`) are one range; an
    // exact lookup of at most one record (an id) cannot be beaten.
    if parts.count > 1, !(best.map { $0.lookup.exact && $0.lookup.estimate <= 1 } ?? false) {
      for (parts, lookup) in _ranges(parts, access) where lookup.estimate < (best?.lookup.estimate ?? Int.max)
      {
        best = (parts, lookup)
      }
    }

    // A composite index answers equalities on its first keys, and a range on the next,
    // as one run.
    let runs = parts.isEmpty || !access.catalog.hasComposite ? [] : _compositeRuns(parts, access, snapshot)
    if !runs.isEmpty, !(best.map { $0.lookup.exact && $0.lookup.estimate <= 1 } ?? false) {
      for (parts, lookup) in _compositeLookups(runs)
      where lookup.estimate < (best?.lookup.estimate ?? Int.max)
        || (lookup.estimate == best!.lookup.estimate && lookup.exact && !best!.lookup.exact)
      {
        best = (parts, lookup)
      }
    }

    var lookupCost = Int.max
    if let best { lookupCost = best.lookup.estimate * (best.lookup.inStoreOrder ? 1 : 4) }
    // The cheaper of two ordered walks: a one-key index over every record, or a composite
    // index over the run its equal prefix selects.
    var walk: _IndexWalk? = nil
    var walkCost = Int.max
    let matches = max(1, best?.lookup.estimate ?? n)
    for candidate in [_compositeWalk(stage, runs), _orderedWalk(stage, access)] {
      guard let candidate else { continue }
      var cost = Int.max
      if let limit = stage.window.limit {
        cost = candidate.cost(need: stage.window.needed ?? limit, matches: matches, records: n)
      }
      if walk == nil || cost < walkCost { (walk, walkCost) = (candidate, cost) }
    }
    if let walk, walkCost <= lookupCost, walkCost < n {
      plan.path = .walk(walk)
      plan.estimatedRows = walkCost
      if best != nil { plan.note = "an ordered walk reads fewer records than the lookup" }
      return plan
    }
    if let walk {
      // Weighed now for a narrower window (`first`, `exists`), which reads this plan too.
      plan.narrowerWalk = _AccessPlan.NarrowerWalk(
        walk: walk, filter: stage.filter, matches: matches, otherCost: min(lookupCost, n), records: n)
    }
    guard let best else { return plan }
    guard lookupCost < n else {
      plan.note = "\(best.lookup.name) not used: ~\(best.lookup.estimate) of \(n) records match"
      return plan
    }
    let slots = best.lookup.slots()
    let answered = best.parts.map { parts[$0] }
    plan.path = .lookup(
      best.lookup.name, answers: answered.count == 1 ? answered[0] : .and(answered), exact: best.lookup.exact)
    plan.candidates = slots
    plan.estimatedRows = slots.count
    if best.lookup.exact { for i in best.parts.reversed() { parts.remove(at: i) } }
    plan.filter = parts.isEmpty ? nil : (parts.count == 1 ? parts[0] : .and(parts))
    return plan
  }

  /// One range per indexed key that two or more AND-ed parts bound, with the parts it
  /// covers: it is exact when they all are (string-key conditions), else they are
  /// rechecked.
  private static func _ranges<Element>(
    _ parts: [_FilterNode<Element>], _ access: _IndexAccess
  ) -> [(parts: [Int], lookup: _Lookup)] {
    var byKey: [String: (parts: [Int], range: _IndexRange, exact: Bool)] = [:]
    for (i, part) in parts.enumerated() {
      let c: _FieldCondition
      let exact: Bool
      switch part {
      case .field(let f): (c, exact) = (f, true)
      case .typed(let t):
        guard let twin = t.field, !twin.idOnly else { continue }
        (c, exact) = (twin, false)
      default: continue
      }
      guard let index = access.catalog.index(for: c.key), let (runs, runsExact) = _IndexRange.runs(for: c),
        runs.count == 1, case .between = runs[0]
      else { continue }
      if !exact && !index.entries.kinds.contains(c.value._kind) { continue }
      if let known = byKey[c.key] {
        guard let merged = known.range.intersection(runs[0]) else { continue }
        byKey[c.key] = (known.parts + [i], merged, known.exact && exact && runsExact)
      } else {
        byKey[c.key] = ([i], runs[0], exact && runsExact)
      }
    }
    return byKey.sorted { $0.key < $1.key }.compactMap { key, found in
      guard found.parts.count > 1, let index = access.catalog.index(for: key) else { return nil }
      let entries = index.entries
      let range = found.range
      return (
        found.parts,
        _Lookup(
          name: "index range on \(key)", estimate: range.count(in: entries), exact: found.exact,
          inStoreOrder: false,
          slots: {
            var s = range.slots(in: entries)
            s.sort()
            return s
          })
      )
    }
  }

  /// A way to find the slots one filter part can match.
  struct _Lookup {
    /// `index lookup on species`
    let name: String
    let estimate: Int
    /// The slots hold exactly the part's matches (else the part is rechecked on each).
    let exact: Bool
    /// The slots come out ascending without a sort.
    let inStoreOrder: Bool
    /// The slots, ascending.
    let slots: () -> [Int]
  }

  /// - Parameters:
  ///   - twins: The node is a translated predicate, whose fields are key paths' twins
  ///     (looked up as typed conditions are).
  ///   - depth: Levels of AND and OR above the node. Below ``_maxLookupDepth`` the node
  ///     is scanned instead: a lookup that deep would rarely pay, and the walk's frames
  ///     stay few on a small thread stack.
  private static func _lookup<Element>(
    _ node: _FilterNode<Element>, _ access: _IndexAccess, _ snapshot: StoreSnapshot<Element>,
    twins: Bool = false,
    depth: Int = 0
  ) -> _Lookup? {
    guard depth < _maxLookupDepth else { return nil }
    switch node {
    case .field(let c):
      return twins ? _twinLookup(c, access, snapshot) : _lookup(c, exact: true, access, snapshot)
    case .typed(let t):
      guard let twin = t.field else { return nil }
      return _twinLookup(twin, access, snapshot)
    case .predicate(let p):
      // A translated #Predicate is a tree of twins, looked up as typed conditions are; the
      // predicate runs on each candidate unless every lookup it used is exact.
      guard let translated = p.translated else { return nil }
      return _lookup(translated, access, snapshot, twins: true)
    case .or(let j):
      // Many equalities on one key are one IN: one lookup, not one per value.
      let merged = _FilterCompiler<Element>._mergingEqualities(node)
      if case .or(let m) = merged, m.count == j.count {
      } else {
        return _lookup(merged, access, snapshot, twins: twins, depth: depth)
      }
      var lookups: [_Lookup] = []
      for branch in j.terms {
        guard let l = _lookup(branch, access, snapshot, twins: twins, depth: depth + 1) else { return nil }
        lookups.append(l)
      }
      return _union(lookups, exact: lookups.allSatisfy(\.exact))
    case .search(let c):
      // The text index's posting lists: exact for single words and prefixes on exactly
      // its keys; a phrase, or keys the index covers among others, is rechecked.
      guard let text = access.text, text.covers(c.keys) else { return nil }
      let (found, exact) = text.candidates(c)
      return _Lookup(
        name: "text index lookup on " + text.keys.joined(separator: ", "), estimate: found.count,
        exact: exact,
        inStoreOrder: false, slots: { found })
    case .and(let j):
      // The most selective part; never exact, since the other parts are not looked at.
      return j.terms.compactMap { _lookup($0, access, snapshot, twins: twins, depth: depth + 1) }.min {
        $0.estimate < $1.estimate
      }.map {
        _Lookup(
          name: $0.name, estimate: $0.estimate, exact: false, inStoreOrder: $0.inStoreOrder, slots: $0.slots)
      }
    default:
      return nil
    }
  }

  /// A lookup for a typed condition's field twin, which names a property by its key
  /// path: it agrees with the typed test when the key holds the value's kind (see
  /// TypedFieldTwin.swift). In memory the typed test still runs on each candidate (it is
  /// cheap there); on a store that would decode records the compiler runs the typed test
  /// as that same twin, so the index answers it exactly.
  private static func _twinLookup<Element>(
    _ twin: _FieldCondition, _ access: _IndexAccess, _ snapshot: StoreSnapshot<Element>
  ) -> _Lookup? {
    // A twin keyed "id" names the record's `id` property itself, the Identifiable id,
    // whatever key Codable stores it under: the store finds it by id, exactly (ids are
    // unique, and the value is the property's own).
    if twin.key == "id", let found = _idLookup(twin, access, snapshot) {
      return _Lookup(
        name: "id lookup", estimate: found.count, exact: true, inStoreOrder: true, slots: { found })
    }
    guard !twin.idOnly, let index = access.catalog.index(for: twin.key) else { return nil }
    // Every value compared must be of a kind the index holds (an IN compares each item).
    var values = [twin.value]
    if case .in = twin.op, case .array(let items) = twin.value { values = items }
    guard values.allSatisfy({ $0 == .null || index.entries.kinds.contains($0._kind) }) else { return nil }
    var exact = false
    if case .external = snapshot._storage, let fields = try? snapshot._fields() {
      exact = _FilterCompiler<Element>.holdsKinds(of: .field(twin), in: fields)
    }
    return _lookup(twin, exact: exact, access, snapshot)
  }

  private static func _lookup<Element>(
    _ c: _FieldCondition, exact: Bool, _ access: _IndexAccess, _ snapshot: StoreSnapshot<Element>
  ) -> _Lookup? {
    guard let index = access.catalog.index(for: c.key), let (runs, runsExact) = _IndexRange.runs(for: c)
    else {
      return nil
    }
    let entries = index.entries
    // Each run's ends are searched for once: the estimate counts between them, and the
    // slots are read between the same ends.
    let bounds = runs.map { $0.bounds(in: entries) }
    let estimate = bounds.reduce(0) { $0 + entries.distance(from: $1.0, to: $1.1) }
    let inOrder = runs.count == 1 && runs[0].isInStoreOrder
    let kind = runs.count == 1 ? runs[0].lookupName : "lookup"
    return _Lookup(
      name: "index \(kind) on \(c.key)", estimate: estimate, exact: exact && runsExact, inStoreOrder: inOrder,
      slots: {
        if inOrder { return _IndexRange.slots(in: entries, between: bounds[0]) }
        return _union(
          bounds.map {
            var s = _IndexRange.slots(in: entries, between: $0)
            s.sort()
            return s
          })
      })
  }

  /// The result of a query that is one typed `\.id == v` and nothing else (no sort,
  /// `distinct` or `reversed()`; a window is fine), straight from the store's id map:
  /// nil when the query is anything else, or the store cannot tell.
  ///
  /// This is what `plan` would choose (an exact id lookup, nothing left to test), without
  /// building the plan: a lookup by id costs a dictionary lookup, not a planning pass.
  static func idSlots<Element>(_ query: _Query<Element>, in snapshot: StoreSnapshot<Element>) -> [Int]? {
    guard let t = _idCondition(query), let access = snapshot._indexes else { return nil }
    let stage = query.stages[0]
    let found: [Int]
    if let twin = t.field {
      guard twin.key == "id", case .compare(.equal) = twin.op, let slots = _idLookup(twin, access, snapshot)
      else {
        return nil
      }
      found = slots
    } else {
      // Not prepared yet: the id needs no twin decided, only the key path's name.
      guard let id = t.twin?.idEquality(), let slots = _idSlots(of: id, access, snapshot) else { return nil }
      found = slots
    }
    let range = stage.window.range(in: found.count)
    return range.count == found.count ? found : Array(found[range])
  }

  /// The one condition of a query that is a typed `\.id == v` and nothing else but a
  /// window (no sort, `distinct` or `reversed()`): the shape ``idSlots(_:in:)`` answers
  /// from a store's id map. Nil for any other query; checked without a snapshot.
  static func _idCondition<Element>(_ query: _Query<Element>) -> _TypedCondition<Element>? {
    guard query.invalid == nil, query.stages.count == 1 else { return nil }
    let stage = query.stages[0]
    guard stage.sort.isEmpty, !stage.reversed, stage.distinct == nil, case .typed(let t)? = stage.filter
    else { return nil }
    return t
  }

  /// Whether a query is one that ``idSlots(_:in:)`` may answer from an id map (at most one
  /// record), checked without a snapshot: a typed `\.id == v`, nothing else but a window.
  static func isIDLookup<Element>(_ query: _Query<Element>) -> Bool {
    guard let t = _idCondition(query) else { return false }
    if let twin = t.field {
      guard twin.key == "id", case .compare(.equal) = twin.op else { return false }
      return true
    }
    return t.twin?.idEquality() != nil
  }

  /// The slot of one id, in a list (empty when no live record has it); nil when the store
  /// cannot tell.
  @inline(__always)
  private static func _idSlots<Element>(
    of id: FieldValue, _ access: _IndexAccess, _ snapshot: StoreSnapshot<Element>
  ) -> [Int]? {
    guard let slotForID = access.slotForID else { return nil }
    switch slotForID(id, snapshot.version) {
    case .found(let s): return s < snapshot._slotCount && snapshot._isLive(s) ? [s] : []
    case .absent: return []
    case .unknown: return nil
    }
  }

  /// The number of records one condition matches, counted from an index without reading
  /// a record or building the list of matches: nil unless `node` is a single string-key
  /// condition, or a typed condition with a field twin, that one index (or the id map)
  /// answers exactly.
  ///
  /// A typed condition counts from its twin's index when the key holds the value's kind
  /// (see `TypedFieldTwin.swift`): that is when a lookup through the twin is exact, the
  /// same rule a store that decodes records uses to run the typed test as its twin.
  ///
  /// - Parameter fields: The snapshot's fields, for the typed case; nil when they are not
  ///   at hand without a pass over the records.
  static func exactCount<Element>(
    _ node: _FilterNode<Element>, in snapshot: StoreSnapshot<Element>, fields: (any _FieldAccess)?
  ) -> Int? {
    guard let access = snapshot._indexes, !access.catalog.isEmpty || access.slotForID != nil else {
      return nil
    }
    let condition: _FieldCondition
    switch node {
    case .field(let c):
      condition = c
    case .typed(let t):
      guard let twin = t.field else { return nil }
      if twin.key == "id", let found = _idLookup(twin, access, snapshot) { return found.count }
      guard !twin.idOnly, let fields, _FilterCompiler<Element>.holdsKinds(of: .field(twin), in: fields) else {
        return nil
      }
      condition = twin
    default:
      return nil
    }
    guard let index = access.catalog.index(for: condition.key),
      let (runs, exact) = _IndexRange.runs(for: condition),
      exact
    else { return nil }
    if case .typed = node {
      // As `_twinLookup` requires: every value compared is of a kind the index holds.
      let kinds = index.entries.kinds
      func held(_ v: FieldValue) -> Bool { v == .null || kinds.contains(v._kind) }
      if case .in = condition.op, case .array(let items) = condition.value {
        guard items.allSatisfy(held) else { return nil }
      } else {
        guard held(condition.value) else { return nil }
      }
    }
    return runs.reduce(0) { $0 + $1.count(in: index.entries) }
  }

  /// The slots of `id == v` or `id IN {…}`, ascending; nil when the store cannot tell.
  private static func _idLookup<Element>(
    _ c: _FieldCondition, _ access: _IndexAccess, _ snapshot: StoreSnapshot<Element>
  ) -> [Int]? {
    guard let slotForID = access.slotForID, c.quantifier == nil, !c.countsElements, c.datePart == nil,
      c.options.isEmpty,
      c.collation == .binary
    else { return nil }
    let values: [FieldValue]
    switch c.op {
    case .compare(.equal):
      // One id, the usual case: no arrays to build.
      switch slotForID(c.value, snapshot.version) {
      case .found(let s): return s < snapshot._slotCount && snapshot._isLive(s) ? [s] : []
      case .absent: return []
      case .unknown: return nil
      }
    case .in:
      guard case .array(let items) = c.value else { return nil }
      values = items
    default: return nil
    }
    var slots: [Int] = []
    for v in values {
      switch slotForID(v, snapshot.version) {
      case .found(let s): if s < snapshot._slotCount && snapshot._isLive(s) { slots.append(s) }
      case .absent: continue
      case .unknown: return nil
      }
    }
    slots.sort()
    var unique: [Int] = []
    for s in slots where unique.last != s { unique.append(s) }
    return unique
  }

  /// The index that can serve the stage's sort by walking in order, if any (the walk
  /// needs a window, which the caller checks: a narrower window may read the plan too).
  private static func _orderedWalk<Element>(
    _ stage: _Stage<Element>, _ access: _IndexAccess
  ) -> _IndexWalk? {
    guard !stage.reversed, stage.distinct == nil, let first = stage.sort.first else {
      return nil
    }
    let key: String
    let descending: Bool
    switch first {
    case .field(let k, let order, let collation):
      guard collation == .binary else { return nil }
      key = k
      descending = order == .descending
    case .typed(let t):
      guard let k = t.fieldKey else { return nil }
      key = k
      descending = t.order == .descending
    case .relevance:
      return nil
    }
    guard let index = access.catalog.index(for: key), index.entries.unordered.isEmpty,
      !index.entries.hasLossyNumbers
    else { return nil }
    if case .typed = first {
      // A typed sort agrees with the index when the key holds one kind of value (and nil).
      var kinds = index.entries.kinds
      kinds.bits &= ~(1 << UInt8(_FieldKind.null.rawValue))
      guard kinds.nonNull.count <= 1 else { return nil }
    }
    return _IndexWalk(index: index.entries, key: key, descending: descending)
  }

  /// How deep in ANDs and ORs the planner looks for lookups.
  private static var _maxLookupDepth: Int { 8 }

  /// The lookup for an OR of lookups: every branch's slots.
  private static func _union(_ lookups: [_Lookup], exact: Bool) -> _Lookup? {
    guard !lookups.isEmpty else { return nil }
    let names = Set(lookups.map(\.name)).sorted()
    return _Lookup(
      name: names.count == 1 ? names[0] : names.joined(separator: " + "),
      estimate: lookups.reduce(0) { $0 + $1.estimate }, exact: exact, inStoreOrder: false,
      slots: { _union(lookups.map { $0.slots() }) })
  }

  /// Sorted, deduplicated union of sorted slot lists.
  static func _union(_ lists: [[Int]]) -> [Int] {
    if lists.count == 1 { return lists[0] }
    var all = lists.flatMap { $0 }
    all.sort()
    var out: [Int] = []
    out.reserveCapacity(all.count)
    for s in all where out.last != s { out.append(s) }
    return out
  }
}

/// How the first stage reads its snapshot, as the planner chose it.
struct _AccessPlan<Element: Sendable>: Sendable {
  enum Path: Sendable {
    /// Every live record, in store order.
    case scan
    /// The candidates of an index (or id) lookup, in store order.
    case lookup(String, answers: _FilterNode<Element>, exact: Bool)
    /// An index in sort order, until the window is full.
    case walk(_IndexWalk)
  }

  var path: Path
  /// The slots a lookup found, ascending.
  var candidates: [Int]?
  /// What each record read still has to pass.
  var filter: _FilterNode<Element>?
  /// Records the plan expects to read.
  var estimatedRows: Int
  /// Why an index was passed over, for `explain()`.
  var note: String?

  /// An ordered walk the planner weighed and passed over for the planned window, with
  /// what it weighed it against: a narrower window of the same stage (`first` reads one
  /// record) may walk instead, decided by ``narrowed(to:)`` without planning again.
  var narrowerWalk: NarrowerWalk?

  struct NarrowerWalk: Sendable {
    let walk: _IndexWalk
    /// The stage's whole filter, which a walk tests on every record it reads.
    let filter: _FilterNode<Element>?
    /// The planner's estimate of the stage's matches.
    let matches: Int
    /// What the plan's own path costs, in records touched.
    let otherCost: Int
    /// The snapshot's records.
    let records: Int
  }

  init(path: Path, filter: _FilterNode<Element>?, estimatedRows: Int) {
    self.path = path
    self.filter = filter
    self.estimatedRows = estimatedRows
  }

  /// The plan for `stage`: the planned stage itself, or the same stage with a narrower
  /// window (a `limit(1)` for `first`, added after the query was planned), which walks the
  /// index the planner weighed when that costs fewer records than this plan's path. The
  /// same cost model as ``_Planner/plan(_:in:)``; no index is weighed again.
  func narrowed(to stage: _Stage<Element>) -> _AccessPlan {
    guard let walk = narrowerWalk, let limit = stage.window.limit, !stage.reversed, stage.distinct == nil
    else {
      return self
    }
    let need = stage.window.needed ?? limit
    let n = walk.records
    let cost = walk.walk.cost(need: need, matches: walk.matches, records: n)
    guard cost <= walk.otherCost, cost < n else { return self }
    var plan = _AccessPlan(path: .walk(walk.walk), filter: walk.filter, estimatedRows: cost)
    plan.note = "an ordered walk reads fewer records for the window read"
    return plan
  }
}
