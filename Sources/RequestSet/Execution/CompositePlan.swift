/// An ordered walk the planner can choose: an index read in order of its key until the
/// window is full, over every entry (a one-key index) or over the run a composite index's
/// equal prefix selects, in order of the next key.
struct _IndexWalk: Sendable {
  let index: _SortedIndex
  /// The sort key the walk serves (as `explain()` names it).
  let key: String
  let descending: Bool
  /// The run walked; nil for the whole index.
  var bounds: (_SortedIndex.Position, _SortedIndex.Position)? = nil
  /// The entries in `bounds`, when set.
  var span: Int? = nil
  /// For a composite index, which of each entry's values is the sort key's.
  var component: Int? = nil
  /// The keys held equal, for `explain()` (`species`).
  var prefixKeys: [String] = []

  /// The sort key's value in an entry.
  @inline(__always)
  func value(_ e: _IndexEntry) -> FieldValue {
    guard let component else { return e.value }
    guard case .array(let items) = e.value else { return e.value }
    return items[component]
  }

  /// Whether entries with one sort-key value come out in store order: true unless a
  /// composite index has keys after the sort key, which order those entries first.
  var tiesInStoreOrder: Bool { component.map { $0 == index.arity - 1 } ?? true }

  /// Records touched to fill a window of `need` when `matches` records of `records` match:
  /// about `need × span ÷ matches`, where the span is the records the walk can read.
  func cost(need: Int, matches: Int, records: Int) -> Int {
    let span = self.span ?? records
    let m = max(1, min(matches, span))
    if m >= span { return min(need, span) }
    return Int(min(Double(span), Double(need) * Double(span) / Double(m)))
  }
}

/// The run of one composite index that a stage's AND-ed parts select, found once per
/// plan and weighed both as a lookup and as a walk.
struct _CompositeRun {
  let index: _IndexCatalog.Index
  let range: _CompositeRange
  /// The parts the run answers, ascending.
  let parts: [Int]
  /// Whether the run holds exactly the parts' matches (among ordered entries).
  let exact: Bool
  let bounds: (_SortedIndex.Position, _SortedIndex.Position)
  /// The entries in the run.
  let span: Int
}

extension _Planner {
  /// The run each composite index selects for the AND-ed parts, if any.
  static func _compositeRuns<Element>(
    _ parts: [_FilterNode<Element>], _ access: _IndexAccess, _ snapshot: StoreSnapshot<Element>
  ) -> [_CompositeRun] {
    var runs: [_CompositeRun] = []
    let keyRuns = _keyRuns(parts, snapshot)
    guard !keyRuns.isEmpty else { return [] }
    for index in access.catalog.indexes where index.entries.arity > 1 {
      guard let bound = _compositeBound(index, keyRuns), !bound.parts.isEmpty else { continue }
      let bounds = bound.range.bounds(in: index.entries)
      runs.append(
        _CompositeRun(
          index: index, range: bound.range, parts: bound.parts, exact: bound.exact, bounds: bounds,
          span: index.entries.distance(from: bounds.0, to: bounds.1)))
    }
    return runs
  }

  /// Each run as one lookup. Entries whose values have no place in the order are
  /// candidates too, so the lookup never loses a record.
  static func _compositeLookups(_ runs: [_CompositeRun]) -> [(parts: [Int], lookup: _Lookup)] {
    runs.map { run in
      let entries = run.index.entries
      let bounds = run.bounds
      let inOrder = run.range.prefix.count == entries.arity && entries.unordered.isEmpty
      let name =
        "composite index \(run.range.next == nil ? "lookup" : "range") on \(run.index.keys.joined(separator: ", "))"
      return (
        run.parts,
        _Lookup(
          name: name, estimate: run.span + entries.unordered.count,
          exact: run.exact && entries.unordered.isEmpty,
          inStoreOrder: inOrder,
          slots: {
            var s = _IndexRange.slots(in: entries, between: bounds)
            if inOrder { return s }
            s += entries.unordered
            s.sort()
            return s
          })
      )
    }
  }

  /// A walk of a composite index that serves the stage's first sort key: the run of the
  /// entries whose first keys the filter holds equal (and whose sort key it bounds), in
  /// order of the sort key. The walk tests the whole filter on every record it reads.
  static func _compositeWalk<Element>(_ stage: _Stage<Element>, _ runs: [_CompositeRun]) -> _IndexWalk? {
    guard !runs.isEmpty, !stage.reversed, stage.distinct == nil, let first = stage.sort.first else {
      return nil
    }
    let key: String
    let descending: Bool
    var typed = false
    switch first {
    case .field(let k, let order, let collation):
      guard collation == .binary else { return nil }
      (key, descending) = (k, order == .descending)
    case .typed(let t):
      guard let k = t.fieldKey else { return nil }
      (key, descending, typed) = (k, t.order == .descending, true)
    case .relevance:
      return nil
    }
    var best: _CompositeRun? = nil
    for run in runs {
      let entries = run.index.entries
      let m = run.range.prefix.count
      guard entries.unordered.isEmpty, !entries.hasLossyNumbers, m > 0, m < entries.arity,
        run.index.keys[m] == key
      else { continue }
      if typed {
        // A typed sort agrees with the index when the key holds one kind of value (and nil).
        var kinds = entries.componentKinds[m]
        kinds.bits &= ~(1 << UInt8(_FieldKind.null.rawValue))
        guard kinds.nonNull.count <= 1 else { continue }
      }
      if best == nil || run.span < best!.span { best = run }
    }
    guard let best else { return nil }
    let m = best.range.prefix.count
    return _IndexWalk(
      index: best.index.entries, key: key, descending: descending, bounds: best.bounds, span: best.span,
      component: m,
      prefixKeys: Array(best.index.keys.prefix(m)))
  }

  /// Each AND-ed part that one index's run could answer: an equality, a range or a
  /// prefix on one key. Read once per plan, for every composite index.
  private static func _keyRuns<Element>(_ parts: [_FilterNode<Element>], _ snapshot: StoreSnapshot<Element>)
    -> [_KeyRun]
  {
    var runs: [_KeyRun] = []
    // Indices, not `enumerated()`: in the engine's unspecialized code each generic wrapper
    // costs a metadata lookup (see `_Planner.plan`).
    for i in parts.indices {
      let c: _FieldCondition
      var exact: Bool
      var typed = false
      switch parts[i] {
      case .field(let f): (c, exact) = (f, true)
      case .typed(let t):
        guard let twin = t.field, !twin.idOnly else { continue }
        c = twin
        exact = false
        typed = true
        if case .external = snapshot._storage, let fields = try? snapshot._fields() {
          exact = _FilterCompiler<Element>.holdsKinds(of: .field(twin), in: fields)
        }
      default: continue
      }
      guard let (found, runExact) = _IndexRange.runs(for: c), found.count == 1 else { continue }
      runs.append(
        _KeyRun(
          part: i, key: c.key, run: found[0], exact: exact && runExact, typedKind: typed ? c.value : nil))
    }
    return runs
  }

  /// The run of a composite index that AND-ed parts select: an equality on each of its
  /// first keys (as many as the parts give, in order), then a range on the next key if
  /// the parts bound it; with the parts used and whether they are answered exactly.
  private static func _compositeBound(
    _ index: _IndexCatalog.Index, _ keyRuns: [_KeyRun]
  ) -> (range: _CompositeRange, parts: [Int], exact: Bool)? {
    let keys = index.keys
    let entries = index.entries
    /// Whether a part's run may narrow key `k` of this index: a typed condition's twin
    /// agrees with the typed test only when the key holds the value's kind.
    func usable(_ r: _KeyRun, _ k: Int) -> Bool {
      guard let value = r.typedKind else { return true }
      return value == .null || entries.componentKinds[k].contains(value._kind)
    }
    var prefix: [FieldValue] = []
    var used: [Int] = []
    var exact = true
    for k in keys.indices {
      var found: (part: Int, value: FieldValue, exact: Bool)? = nil
      for r in keyRuns where r.key == keys[k] && usable(r, k) {
        if case .equal(let v) = r.run {
          found = (r.part, v, r.exact)
          break
        }
      }
      guard let found else { break }
      prefix.append(found.value)
      used.append(found.part)
      exact = exact && found.exact
    }
    var next: _IndexRange? = nil
    if prefix.count < keys.count {
      let k = prefix.count
      for r in keyRuns where r.key == keys[k] && usable(r, k) {
        switch r.run {
        case .between, .prefix:
          if let known = next {
            // Two bounds on one key are one range; a prefix with anything stays apart.
            guard let merged = known.intersection(r.run) else { continue }
            next = merged
          } else {
            next = r.run
          }
          used.append(r.part)
          exact = exact && r.exact
        case .empty:
          next = .empty
          used.append(r.part)
        case .equal:
          continue
        }
      }
    }
    if prefix.isEmpty && next == nil { return nil }
    used.sort()
    return (_CompositeRange(prefix: prefix, next: next), used, exact)
  }
}

/// One AND-ed part as one run of an index on its key (see `_Planner._compositeRuns`).
struct _KeyRun {
  let part: Int
  let key: String
  let run: _IndexRange
  /// Whether the run holds exactly the part's matches.
  let exact: Bool
  /// For a typed condition, the value whose kind the key must hold; nil for a string-key one.
  let typedKind: FieldValue?
}
