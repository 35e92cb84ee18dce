/// How one query splits between a ``QueryPushdownStore``'s reader and the engine: what the
/// store runs (``query``), what the engine checks again, and what runs in process.
///
/// Only the first stage reaches the store. Its top-level AND terms are pushed when the
/// reader runs them exactly or as a superset, and kept in process otherwise; an OR or NOT
/// is pushed whole when every leaf is exact (an OR may also carry superset leaves). Any
/// superset term means the engine rechecks the stage's whole filter on each record the
/// store returns. The sort is pushed when every key is exact, `distinct` when it is exact
/// and nothing before it runs in process, and the window only when the filter, the sort
/// and `distinct` all are.
struct _PushdownPlan<Element: Sendable>: Sendable {
  /// One part of the query that runs in process, and why.
  struct Part: Sendable {
    var part: String
    var why: String
  }

  /// What the store runs.
  var query: StoreQuery
  /// The superset terms the store ran, which the engine checks again.
  var rechecked: [String] = []
  /// The first stage's parts that run in process, in the order they apply.
  var inProcess: [Part] = []
  /// What runs over the records the store returns (in the order received), or nil when
  /// they are the result.
  var remainder: _Query<Element>?
  /// With a remainder that is only a filter and a window: how many matches fill the
  /// window, so the store's stream can stop there.
  var earlyStop: Int?

  /// Nothing runs in process: the store's answer is the result.
  var isExact: Bool { remainder == nil }

  /// The first part that runs in process, stage by stage, for `requiringPushdown()`.
  func firstInProcess(_ query: _Query<Element>) -> Part? {
    if let first = inProcess.first { return first }
    if query.stages.count > 1 {
      return Part(
        part: "stage 2", why: "a stage after a window runs on the records of the stage before, in process")
    }
    return nil
  }

  /// Splits `query` for `reader`: each top-level AND term is translated once; when the
  /// reader declines the query that makes as a whole (``StoreQueryReader/support(for:)-(StoreQuery)``),
  /// the largest pushed terms (by their number of conditions) run in process, as few as the
  /// reader needs, and as a last resort the whole stage does.
  init(_ query: _Query<Element>, _ reader: _PushdownReader<Element>) {
    _PlanCounter.note()
    let query = query.resolvingTwins()
    var terms: [(node: _FilterNode<Element>, translation: _Translation)] = []
    if let filter = query.stages[0].filter {
      let nodes: [_FilterNode<Element>]
      if case .and(let j) = filter { nodes = j.terms } else { nodes = [filter] }
      terms = nodes.map { ($0, Self._translate($0, reader)) }
    }
    let plan = Self(query, terms, reader, declining: [], why: "")
    guard case .none(let why) = reader.supportQuery(plan.query) else {
      self = plan
      return
    }
    // The pushed terms, largest first; the fewest of them that make the query acceptable
    // run in process (found by doubling, then halving, so a long AND of small terms costs
    // the reader a few dozen answers, not one per term).
    var pushed: [(index: Int, size: Int)] = []
    for (i, term) in terms.enumerated() {
      if case .pushed(let f, _) = term.translation { pushed.append((i, max(1, f.conditions.count))) }
    }
    pushed.sort { $0.size != $1.size ? $0.size > $1.size : $0.index < $1.index }
    func attempt(_ k: Int) -> _PushdownPlan? {
      let candidate = Self(query, terms, reader, declining: Set(pushed.prefix(k).map(\.index)), why: why)
      if case .none = reader.supportQuery(candidate.query) { return nil }
      return candidate
    }
    var low = 0  // declined with `low` terms in process
    var high = 1
    var accepted: _PushdownPlan? = nil
    while high <= pushed.count {
      if let plan = attempt(high) {
        accepted = plan
        break
      }
      low = high
      high = high == pushed.count ? pushed.count + 1 : min(high * 2, pushed.count)
    }
    guard var best = accepted else {
      self = Self(query, terms, reader, declining: Set(terms.indices), why: why, wholeStage: true)
      return
    }
    while high - low > 1 {
      let middle = (low + high) / 2
      if let plan = attempt(middle) {
        best = plan
        high = middle
      } else {
        low = middle
      }
    }
    self = best
  }

  /// The split with the pushed terms at `declining` run in process instead, because the
  /// reader said `why`; with `wholeStage`, the sort and `distinct` run in process too.
  private init(
    _ query: _Query<Element>, _ terms: [(node: _FilterNode<Element>, translation: _Translation)],
    _ reader: _PushdownReader<Element>, declining: Set<Int>, why: String, wholeStage: Bool = false
  ) {
    let stage = query.stages[0]
    var pushed: [StoreFilter] = []
    var kept: [_FilterNode<Element>] = []
    var superset = false
    for (i, (term, translation)) in terms.enumerated() {
      switch translation {
      case .pushed(let f, let isExact) where !declining.contains(i):
        pushed.append(f)
        if !isExact {
          superset = true
          rechecked.append(term.description)
        }
      case .pushed:
        kept.append(term)
        inProcess.append(Part(part: term.description, why: why))
      case .kept(let why):
        kept.append(term)
        inProcess.append(Part(part: term.description, why: why))
      }
    }
    let storeFilter: StoreFilter? = pushed.isEmpty ? nil : (pushed.count == 1 ? pushed[0] : .and(pushed))
    // The filter left in process: everything, when a superset term needs checking again.
    let restFilter: _FilterNode<Element>?
    if superset {
      restFilter = stage.filter
    } else if kept.isEmpty {
      restFilter = nil
    } else {
      restFilter = kept.count == 1 ? kept[0] : .and(kept)
    }
    let filterExact = restFilter == nil

    var sort: [StoreSortKey] = []
    var sortPushed = true
    for key in stage.sort {
      if wholeStage {
        sortPushed = false
        inProcess.append(Part(part: "sort " + stage.sort.map(\.description).joined(separator: ", "), why: why))
        break
      }
      let storeKey: StoreSortKey?
      switch key {
      case .field(let name, let order, let collation):
        storeKey = StoreSortKey(name, order: order, collation: collation)
      case .typed(let t): storeKey = t.related?.storeKey ?? t.fieldKey.map { StoreSortKey($0, order: t.order) }
      case .relevance: storeKey = nil
      }
      let why: String?
      switch storeKey.map(reader.supportSort) {
      case nil where key.isRelevance:
        why = "relevance is scored in process: BM25 over the store's word counts, read with one more query"
      case nil: why = "a key path with no field"
      case .exact?: why = nil
      case .superset?: why = "the store's order is not exact"
      case .none(let reason)?: why = reason
      }
      if let why {
        // The whole sort runs in process: name it, and the key that kept it there.
        sortPushed = false
        let keys = stage.sort.map(\.description).joined(separator: ", ")
        inProcess.append(Part(part: "sort " + keys, why: key.isRelevance ? why : key.description + ": " + why))
        break
      }
      if let storeKey { sort.append(storeKey) }
    }
    if !sortPushed { sort = [] }
    if stage.reversed {
      inProcess.append(Part(part: "reverse", why: "a store has no reversed order of ties"))
    }

    var distinct: String? = nil
    if let key = stage.distinct {
      switch key {
      case .field(let name) where wholeStage:
        inProcess.append(Part(part: "distinct " + name, why: why))
      case .field(let name) where filterExact && sortPushed && !stage.reversed:
        if case .exact = reader.supportDistinct(name) {
          distinct = name
        } else if case .none(let reason) = reader.supportDistinct(name) {
          inProcess.append(Part(part: "distinct " + name, why: reason))
        } else {
          inProcess.append(Part(part: "distinct " + name, why: "the store's distinct is not exact"))
        }
      case .field(let name):
        inProcess.append(Part(part: "distinct " + name, why: "it applies after a part that runs in process"))
      case .typed(let description, _):
        inProcess.append(Part(part: "distinct " + description, why: "a key path with no field"))
      }
    }
    let distinctPushed = stage.distinct == nil || distinct != nil
    let windowPushed = filterExact && sortPushed && distinctPushed && !stage.reversed
    if stage.window.isSet && !windowPushed {
      inProcess.append(Part(part: "window", why: "it applies after a part that runs in process"))
    }
    self.query = StoreQuery(
      filter: storeFilter, sort: sort, distinct: distinct,
      offset: windowPushed ? stage.window.offset : 0, limit: windowPushed ? stage.window.limit : nil)

    var rest = _Stage<Element>()
    rest.filter = restFilter
    rest.sort = sortPushed ? [] : stage.sort
    rest.reversed = stage.reversed
    rest.distinct = distinctPushed ? nil : stage.distinct
    rest.window = windowPushed ? _Window() : stage.window
    let restEmpty =
      rest.filter == nil && rest.sort.isEmpty && !rest.reversed && rest.distinct == nil
      && !rest.window.isSet
    if restEmpty && query.stages.count == 1 && query.invalid == nil {
      remainder = nil
    } else {
      var q = query
      q.stages[0] = rest
      remainder = q
      if query.stages.count == 1, rest.filter != nil, rest.sort.isEmpty, !rest.reversed, rest.distinct == nil,
        let needed = rest.window.needed
      {
        earlyStop = needed
      }
    }
  }

  /// The split of `query` (the query this plan split) with `limit(1)` added, derived
  /// from this one without asking the reader again, so that `first` plans once: the store
  /// runs the narrower window when it runs the whole stage, and a remainder that is only
  /// a filter (and a window) stops the store's stream at its first match. Nil when the
  /// first record needs the whole result (a sort, `reversed()`, `distinct` or a later
  /// stage in process).
  func narrowedToFirst(_ query: _Query<Element>, _ reader: _PushdownReader<Element>) -> (
    query: _Query<Element>, plan: _PushdownPlan
  )? {
    guard query.stages.count == 1 else { return nil }
    var one = query
    one.limit(1)
    var plan = self
    guard var rest = remainder else {
      // The store runs the whole stage, its window included (if it takes the narrower
      // window: a statement binds one more value).
      plan.query.limit = Swift.min(plan.query.limit ?? 1, 1)
      if case .none = reader.supportQuery(plan.query) { return nil }
      return (one, plan)
    }
    guard rest.stages.count == 1, rest.stages[0].filter != nil, rest.stages[0].sort.isEmpty, !rest.stages[0].reversed,
      rest.stages[0].distinct == nil
    else { return nil }
    // The window is in process (a filter runs there), so the store streams every match.
    rest.limit(1)
    plan.remainder = rest
    plan.earlyStop = rest.stages[0].window.needed
    return (one, plan)
  }

  /// A filter node as the store would run it.
  enum _Translation {
    /// Pushed: exactly, or as a superset the engine checks again.
    case pushed(StoreFilter, exact: Bool)
    /// Kept in process, and why.
    case kept(String)
  }

  /// Translates `node`: string-key conditions, typed conditions with a field twin and
  /// translated predicates become store conditions; an OR or NOT is pushed whole only
  /// when each leaf is (NOT only exact ones). Recursion is bounded by the filter's depth
  /// (see `_FilterNode.maxDepth`).
  static func _translate(_ node: _FilterNode<Element>, _ reader: _PushdownReader<Element>) -> _Translation {
    switch node {
    case .constant(let b):
      return .pushed(.constant(b), exact: true)
    case .field(let c):
      return _leaf(c, reader)
    case .typed(let t):
      guard let twin = t.field, !twin.idOnly else { return .kept("a key path with no field") }
      return _leaf(twin, reader)
    case .predicate(let p):
      guard let translated = p.translated else { return .kept("a Predicate with no translation to fields") }
      return _translate(translated, reader)
    case .closure:
      return .kept("a closure")
    case .expression:
      return .kept("computed on each record")
    case .search(let c):
      let search = StoreTextSearch(c)
      switch reader.supportSearch(search) {
      case .exact: return .pushed(.search(search), exact: true)
      case .superset: return .pushed(.search(search), exact: false)
      case .none(let reason): return .kept(reason)
      }
    case .invalid:
      return .kept("a filter that could not be built")
    case .ids:
      return .kept("a set operation's operand not read yet")
    case .related(let r):
      switch reader.supportSubquery(r.subquery) {
      case .exact: return .pushed(.subquery(r.subquery), exact: true)
      case .superset: return .kept("the store's subquery is not exact")
      case .none(let reason): return .kept(reason)
      }
    case .not(let inner):
      switch _translate(inner, reader) {
      case .pushed(let f, true): return .pushed(.not(f), exact: true)
      case .pushed: return .kept("a superset condition under NOT")
      case .kept(let why): return .kept(why)
      }
    case .or(let j), .and(let j):
      var parts: [StoreFilter] = []
      var exact = true
      for term in j.terms {
        switch _translate(term, reader) {
        case .pushed(let f, let isExact):
          parts.append(f)
          exact = exact && isExact
        case .kept(let why):
          return .kept(term.description + ": " + why)
        }
      }
      if case .or = node { return .pushed(.or(parts), exact: exact) }
      return .pushed(.and(parts), exact: exact)
    }
  }

  private static func _leaf(_ c: _FieldCondition, _ reader: _PushdownReader<Element>) -> _Translation {
    let condition = StoreCondition(c)
    switch reader.supportCondition(condition) {
    case .exact: return .pushed(.condition(condition), exact: true)
    case .superset: return .pushed(.condition(condition), exact: false)
    case .none(let reason): return .kept(reason)
    }
  }
}
