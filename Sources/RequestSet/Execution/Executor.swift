/// Runs a query against a snapshot: stage by stage, filter, then sort, then window.
enum _Executor {
  /// The slots of the result, in result order.
  ///
  /// - Parameter firstStageMatches: The first stage's matches in store order, when a count
  ///   already found them (see ``firstStageMatches(_:in:)``): the stage then sorts and
  ///   windows them instead of reading the store again.
  ///   - prepared: The set's preparation over `snapshot`, whose access plan the first
  ///     stage reads (made now if no read made it); nil to plan here.
  static func slots<Element>(
    _ query: _Query<Element>, in snapshot: StoreSnapshot<Element>, firstStageMatches: [Int]? = nil,
    prepared: _PreparedQuery<Element>? = nil
  ) throws -> [Int] {
    if let invalid = query.invalid { throw invalid }
    let query = query.resolvingTwins()
    // `filter(\.id == v)`: the store's id map answers it, with no plan to build.
    if firstStageMatches == nil, let found = _Planner.idSlots(query, in: snapshot) { return found }
    return try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      var current: [Int]? = nil  // nil: every live slot of the snapshot
      for (i, stage) in query.stages.enumerated() {
        if i == 0, let matches = firstStageMatches {
          var rest = stage
          rest.filter = nil
          current = try _run(rest, on: matches, compiler: &compiler)
        } else if i == 0 {
          // The set's one plan; a narrower window than it planned for (`first`) may walk.
          let plan = prepared?.access().narrowed(to: stage) ?? _Planner.plan(stage, in: snapshot)
          if case .walk = plan.path {
            current = try _run(plan, stage, compiler: &compiler)
          } else if stage.sort.isEmpty, stage.distinct == nil, !stage.reversed {
            // A plain filter (what `count` evaluates): compiled here rather than two calls
            // deeper, so a filter nested as deep as a format string may nest still compiles
            // on a small thread stack, as it did when counting compiled it directly.
            var candidates: [Int]? = nil
            var matcher: _Matcher<Element>
            if case .lookup = plan.path {
              // The whole filter is compiled for its checks, unless it has none to make.
              if !_compilesWithoutChecks(stage.filter) { _ = try compiler.compile(stage.filter) }
              candidates = plan.candidates ?? []
              matcher = try compiler.compile(plan.filter)
            } else {
              matcher = try compiler.compile(stage.filter)
            }
            let range = stage.window.range(in: Int.max)
            let found = try _collect(candidates, cursor, matcher, upTo: range.upperBound)
            current = range.lowerBound == 0 ? found : Array(found[min(range.lowerBound, found.count)...])
          } else {
            current = try _run(plan, stage, compiler: &compiler)
          }
        } else {
          current = try _run(stage, on: current, compiler: &compiler)
        }
      }
      return current ?? snapshot._liveSlots()
    }
  }

  /// The first stage's matches in store order, before its sort and window: all a count
  /// of a one-stage sorted set needs, and what ``slots(_:in:firstStageMatches:)`` sorts
  /// later without filtering again. Checks the sort keys as evaluation would.
  ///
  /// - Parameter plan: The stage's access plan when it is a scan or a lookup (the same
  ///   plan as for the stage without its sort and window); nil to plan here.
  static func firstStageMatches<Element>(
    _ query: _Query<Element>, in snapshot: StoreSnapshot<Element>, plan: _AccessPlan<Element>? = nil
  ) throws -> [Int] {
    if let invalid = query.invalid { throw invalid }
    let query = query.resolvingTwins()
    return try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      var bare = query.stages[0]
      // Sort keys do not change which records match, but a bad sort key is still an error.
      _ = try _comparator(bare.sort, compiler: &compiler)
      bare.sort = []
      bare.reversed = false
      bare.window = _Window()
      // An ordered walk serves the sort and window, which the bare stage has not.
      var usable = plan
      if let plan, case .walk = plan.path { usable = nil }
      return try _run(usable ?? _Planner.plan(bare, in: snapshot), bare, compiler: &compiler)
    }
  }

  /// Throws what the stage's sort keys would throw in an evaluation (an unknown string
  /// key, say), without reading any record.
  static func checkSortKeys<Element>(_ stage: _Stage<Element>, in snapshot: StoreSnapshot<Element>) throws {
    guard !stage.sort.isEmpty else { return }
    try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      _ = try _comparator(stage.sort, compiler: &compiler)
    }
  }

  /// Whether compiling `filter` checks nothing, so it cannot throw: one typed condition
  /// or closure (its test was built where it was written). A filter the plan answers
  /// from an index need not then be compiled just for its checks.
  private static func _compilesWithoutChecks<Element>(_ filter: _FilterNode<Element>?) -> Bool {
    switch filter {
    case nil, .constant?, .typed?, .closure?: return true
    default: return false
    }
  }

  /// Runs the first stage the way the planner chose.
  private static func _run<Element>(
    _ plan: _AccessPlan<Element>, _ stage: _Stage<Element>, compiler: inout _FilterCompiler<Element>
  ) throws -> [Int] {
    var narrowed = stage
    narrowed.filter = plan.filter
    switch plan.path {
    case .scan:
      return try _run(stage, on: nil, compiler: &compiler)
    case .lookup:
      // The whole filter is compiled once, for its checks: a bad key or value throws
      // whichever way the records are read.
      if !_compilesWithoutChecks(stage.filter) { _ = try compiler.compile(stage.filter) }
      return try _run(narrowed, on: plan.candidates ?? [], compiler: &compiler)
    case .walk(let walk):
      return try _walk(narrowed, walk, compiler: &compiler)
    }
  }

  /// A sort plus a limit served by walking an index in sort order: records are tested in
  /// that order until the window is full, then the few collected are put in exact order.
  ///
  /// Within one value a one-key index holds slots in store order, which is how a stable
  /// sort breaks ties, so with one sort key the walk stops at the window's last record;
  /// with more keys (or a composite index with keys after the sort key, which order one
  /// value's entries first) it first takes in every record tied with that one, for the
  /// later keys and store order to order. A descending walk reads each run of equal values
  /// forwards, for the same reason.
  private static func _walk<Element>(
    _ stage: _Stage<Element>, _ walk: _IndexWalk, compiler: inout _FilterCompiler<Element>
  ) throws -> [Int] {
    let cursor = compiler.cursor
    let index = walk.index
    let descending = walk.descending
    let test = _test(try compiler.compile(stage.filter), cursor)
    _ = try _comparator(stage.sort, compiler: &compiler)  // checks every sort key
    let rest =
      stage.sort.count > 1 ? try _comparator(Array(stage.sort.dropFirst()), compiler: &compiler) : nil
    guard let need = stage.window.needed, need > 0 else { return [] }
    let takesTies = rest != nil || !walk.tiesInStoreOrder
    let (from, to) = walk.bounds ?? (index.startPosition, index.endPosition)
    var collected: [_IndexEntry] = []
    var done = false
    /// Tests one entry; false once the walk can stop.
    func visit(_ e: _IndexEntry) throws -> Bool {
      if collected.count >= need {
        // Full: with later sort keys, take in the rest of the last value's ties.
        if !takesTies
          || FieldValue._order(walk.value(e), walk.value(collected[collected.count - 1]), .binary) != 0
        {
          done = true
          return false
        }
      }
      if try test(e.slot) { collected.append(e) }
      return true
    }
    if descending {
      var run: [_IndexEntry] = []  // one value's entries, read backwards
      try index.forEachBackward(from: to, to: from) { e in
        if let first = run.first, FieldValue._order(walk.value(e), walk.value(first), .binary) != 0 {
          for r in run.reversed() where try !visit(r) { return false }
          run.removeAll(keepingCapacity: true)
        }
        run.append(e)
        return true
      }
      if !done { for r in run.reversed() where try !visit(r) { break } }
    } else {
      try index.forEach(from: from, to: to, visit)
    }
    let sign = descending ? -1 : 1
    try collected.sort { a, b in
      let c = sign * FieldValue._order(walk.value(a), walk.value(b), .binary)
      if c != 0 { return c < 0 }
      if let rest {
        let r = try rest(a.slot, b.slot)
        if r != 0 { return r < 0 }
      }
      return a.slot < b.slot
    }
    return collected[stage.window.range(in: collected.count)].map(\.slot)
  }

  /// A slot test for a compiled matcher.
  private static func _test<Element>(
    _ matcher: _Matcher<Element>, _ cursor: _RecordCursor<Element>
  ) -> (Int) throws -> Bool {
    switch matcher {
    case .constant(let b): return { _ in b }
    case .typed(let t):
      if let base = cursor.base { return { t(base + $0) } }
      return { t(try cursor.pointer($0)) }
    case .general(let g): return g
    }
  }

  /// The first stage's matches as one bit per slot, and how many there are, for counting a
  /// one-stage set with no sort, window or `distinct` that scans the whole store: the count
  /// keeps one bit per record instead of a list of positions (a word of 64 tests built in a
  /// register, then stored), and a later read turns the bits into positions without testing
  /// any record again. Nil when the set is not of that shape, or an index or the id map
  /// answers it (the result is then small, and `slots` finds it directly).
  ///
  /// - Complexity: O(*n*) tests for *n* slots, and *n* / 64 words.
  static func firstStageMatchBits<Element>(
    _ query: _Query<Element>, in snapshot: StoreSnapshot<Element>, prepared: _PreparedQuery<Element>? = nil
  ) throws -> (bits: [UInt64], count: Int)? {
    if let invalid = query.invalid { throw invalid }
    let query = query.resolvingTwins()
    guard query.stages.count == 1, let stage = query.stages.first, stage.filter != nil, stage.sort.isEmpty,
      stage.distinct == nil, !stage.reversed, !stage.window.isSet,
      _Planner.idSlots(query, in: snapshot) == nil
    else { return nil }
    guard case .scan = (prepared?.access() ?? _Planner.plan(stage, in: snapshot)).path else { return nil }
    return try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      if let base = cursor.base, let fills = try _slotFills(stage.filter, base, &compiler) {
        // Comparisons on stored properties, in memory, by key path or by key: each fills
        // its bits in one loop specialized for its type, the later ones only where the
        // earlier kept a record.
        return _fillBits(snapshot, fills)
      }
      let test: (Int) throws -> Bool
      switch try compiler.compile(stage.filter) {
      case .constant(let b): test = { _ in b }
      case .typed(let t):
        if let base = cursor.base {
          return _matchBits(snapshot) { t(base + $0) }
        }
        test = { t(try cursor.pointer($0)) }
      case .general(let g): test = g
      }
      return try _matchBits(snapshot, test)
    }
  }

  /// The fills of a filter that is one comparison on a stored property, or an AND of
  /// them: a key path read at its offset (see `_fillWords`), or a string key whose field
  /// the records hold as an `Int` or a `String` (see `_DirectFieldAccess.directFill`).
  /// Nil for any other filter, which is then compiled and tested record by record.
  /// String keys are compiled first, so a bad key or value throws as it would there.
  private static func _slotFills<Element>(
    _ filter: _FilterNode<Element>?, _ base: UnsafePointer<Element>,
    _ compiler: inout _FilterCompiler<Element>
  ) throws -> [_SlotFill]? {
    let terms: [_FilterNode<Element>]
    switch filter {
    case .typed?, .field?: terms = [filter!]
    case .and(let j)?: terms = j.terms
    default: return nil
    }
    var fills: [_SlotFill] = []
    var direct: (any _DirectFieldAccess)? = nil
    for term in terms {
      switch term {
      case .typed(let t):
        guard let fill = t.fill else { return nil }
        fills.append { start, count, out, mask in fill(base + start, count, out, mask) }
      case .field(let c):
        if direct == nil {
          guard let fields = try? compiler.fields(), let d = fields as? any _DirectFieldAccess else {
            return nil
          }
          direct = d
        }
        guard let fill = direct?.directFill(c) else { return nil }
        fills.append(fill)
      default:
        return nil
      }
    }
    // Every check compiling makes (an unknown key, a value of the wrong kind) still runs.
    if direct != nil { _ = try compiler.compile(filter) }
    return fills
  }

  /// One bit per slot of `snapshot`, set where the slot is live and every fill's test
  /// holds. The fills run over 4,096 slots at a time, so an AND's later tests read records
  /// the earlier ones just read, still in the cache.
  private static func _fillBits<Element>(
    _ snapshot: StoreSnapshot<Element>, _ fills: [_SlotFill]
  ) -> (bits: [UInt64], count: Int) {
    let slots = snapshot._slotCount
    var words = [UInt64](repeating: 0, count: (slots + 63) / 64)
    words.withUnsafeMutableBufferPointer { out in
      guard let bits = out.baseAddress, let first = fills.first else { return }
      func run(_ live: UnsafePointer<UInt64>?) {
        var start = 0
        while start < slots {
          let n = Swift.min(4096, slots - start)
          let w = start &>> 6
          first(start, n, bits + w, live.map { $0 + w })
          for fill in fills.dropFirst() { fill(start, n, bits + w, UnsafePointer(bits + w)) }
          start &+= n
        }
      }
      if let live = snapshot._live {
        live.words.withUnsafeBufferPointer { run($0.baseAddress) }
      } else {
        run(nil)
      }
    }
    var n = 0
    for w in words { n &+= w.nonzeroBitCount }
    return (words, n)
  }

  /// One bit per slot of `snapshot`, set where the slot is live and `test` holds.
  @inline(__always)
  private static func _matchBits<Element>(
    _ snapshot: StoreSnapshot<Element>, _ test: (Int) throws -> Bool
  ) rethrows -> (bits: [UInt64], count: Int) {
    let slots = snapshot._slotCount
    var words = [UInt64](repeating: 0, count: (slots + 63) / 64)
    var n = 0
    let live = snapshot._live
    try words.withUnsafeMutableBufferPointer { out in
      var start = 0
      while start < slots {
        let end = min(start + 64, slots)
        var word: UInt64 = 0
        // A word of live slots whole (the common case) is tested without a check per slot.
        let liveWord = live?.words[start &>> 6] ?? ~0
        if liveWord == ~0 {
          for s in start..<end where try test(s) { word |= 1 &<< UInt64(s &- start) }
        } else if liveWord != 0 {
          for s in start..<end where liveWord & (1 &<< UInt64(s &- start)) != 0 {
            if try test(s) { word |= 1 &<< UInt64(s &- start) }
          }
        }
        out[start &>> 6] = word
        n &+= word.nonzeroBitCount
        start = end
      }
    }
    return (words, n)
  }

  /// The slots whose bits are set, in order (see ``firstStageMatchBits(_:in:)``).
  static func slots(fromBits bits: [UInt64], count: Int) -> [Int] {
    var slots: [Int] = []
    slots.reserveCapacity(count)
    for (k, word) in bits.enumerated() {
      var w = word
      while w != 0 {
        slots.append(k &<< 6 | w.trailingZeroBitCount)
        w &= w &- 1
      }
    }
    return slots
  }

  /// The number of results when one index answers the query's only filter exactly
  /// (`filter(\.name == k).count`): the index's entries are counted and no record is
  /// read, as a covering index counts in SQL. Nil for any other query, which then runs.
  ///
  /// The filter and sort keys are compiled first, so a bad key or value throws exactly as
  /// evaluating the query would.
  static func indexedCount<Element>(_ query: _Query<Element>, in snapshot: StoreSnapshot<Element>) throws
    -> Int?
  {
    guard query.invalid == nil, query.stages.count == 1, snapshot._indexes != nil else { return nil }
    let query = query.resolvingTwins()
    let stage = query.stages[0]
    guard stage.distinct == nil, let filter = stage.filter else { return nil }
    switch filter {
    case .typed, .field: break
    default: return nil
    }
    let fields: (any _FieldAccess)?
    if stage.sort.isEmpty && _compilesWithoutChecks(filter) {
      // Nothing to check, so no compiler: a typed condition counts from its twin's index.
      fields = snapshot._fieldsAtHand()
    } else {
      fields = try _RecordCursor.with(snapshot) { cursor in
        var compiler = _FilterCompiler(cursor: cursor)
        if !_compilesWithoutChecks(filter) { _ = try compiler.compile(filter) }
        _ = try _comparator(stage.sort, compiler: &compiler)
        return compiler.fieldsAtHand()
      }
    }
    guard let n = _Planner.exactCount(filter, in: snapshot, fields: fields) else { return nil }
    return stage.window.range(in: n).count
  }

  /// The number of results, without building the result when one stage suffices.
  ///
  /// - Parameter prepared: The set's preparation over `snapshot` when `query` is its query
  ///   with a narrower window (`exists` counts to one): its plan serves the first stage
  ///   (a walk in sort order is read as a scan, since counting needs no order); nil to
  ///   plan here.
  static func count<Element>(
    _ query: _Query<Element>, in snapshot: StoreSnapshot<Element>, prepared: _PreparedQuery<Element>? = nil
  ) throws -> Int {
    if let invalid = query.invalid { throw invalid }
    let query = query.resolvingTwins()
    guard query.stages.count == 1, let stage = query.stages.first, stage.distinct == nil else {
      return try slots(query, in: snapshot, prepared: prepared).count
    }
    return try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      // Sort keys do not change the count, but a bad sort key is still an error.
      _ = try _comparator(stage.sort, compiler: &compiler)
      var sorted = stage
      sorted.sort = []
      // A lookup's candidates and residual filter do not depend on the sort; a scan or a
      // walk counts by scanning.
      let plan = prepared?.access() ?? _Planner.plan(sorted, in: snapshot)
      // Compile the whole filter even when an index answers it: a bad key still throws.
      var matcher = try compiler.compile(stage.filter)
      if case .lookup = plan.path { matcher = try compiler.compile(plan.filter) }
      // Counting stops once the window is full (`isEmpty` counts to 1).
      let enough = stage.window.needed ?? Int.max
      var n = 0
      if case .lookup = plan.path, let candidates = plan.candidates {
        if plan.filter == nil {
          n = candidates.count
        } else {
          try _scanWhile(candidates, cursor, matcher) { _ in
            n += 1
            return n < enough
          }
        }
      } else if enough > 0 {
        try _scanWhile(nil, cursor, matcher) { _ in
          n += 1
          return n < enough
        }
      }
      return stage.window.range(in: n).count
    }
  }

  private static func _run<Element>(
    _ stage: _Stage<Element>, on input: [Int]?, compiler: inout _FilterCompiler<Element>
  ) throws -> [Int] {
    let cursor = compiler.cursor
    let matcher = try compiler.compile(stage.filter)
    let compare = try _comparator(stage.sort, compiler: &compiler)
    let distinct = try _distinctKey(stage.distinct, compiler: &compiler)
    if stage.window.limit == 0 { return [] }

    // Fast paths that stop early or keep only the best k: no distinct, which needs to see
    // every record before it can count.
    if distinct == nil && !stage.reversed {
      if compare == nil {
        // No sort: stop once the window is full.
        let range = stage.window.range(in: Int.max)
        let found = try _collect(input, cursor, matcher, upTo: range.upperBound)
        return range.lowerBound == 0 ? found : Array(found[min(range.lowerBound, found.count)...])
      }
    }
    if let compare, let limit = stage.window.limit, distinct == nil {
      // A sort plus a limit keeps the best k in a heap; reversed, the worst k.
      let reversed = stage.reversed
      // `needed` is offset + limit, saturating: `offset(Int.max).limit(1)` must not trap.
      var heap = _TopK(k: stage.window.needed ?? limit) { a, b in
        reversed ? try _less(b, a, compare) : try _less(a, b, compare)
      }
      var rank = 0
      try _scan(input, cursor, matcher) { slot in
        try heap.offer(_Ranked(rank: rank, slot: slot))
        rank += 1
      }
      let best = try heap.sorted()
      return stage.window.range(in: best.count).map { best[$0].slot }
    }

    // Everything else: collect, order, dedupe, window.
    var matched: [_Ranked] = []
    var rank = 0
    try _scan(input, cursor, matcher) { slot in
      matched.append(_Ranked(rank: rank, slot: slot))
      rank += 1
    }
    if let compare {
      if matched.count > 1, let keys = try _sortKeyReaders(stage.sort, compiler: &compiler) {
        let snapshot = compiler.cursor.snapshot
        matched = try _sortByKeys(matched, keys) { snapshot._releaseResidentMemory() }
      } else {
        try matched.sort { try _less($0, $1, compare) }
      }
    }
    var slots = matched.map(\.slot)
    if stage.reversed { slots.reverse() }
    if let distinct {
      var seen = Set<AnyHashable>()
      slots = try slots.filter { seen.insert(try distinct($0)).inserted }
    }
    let range = stage.window.range(in: slots.count)
    return Array(slots[range])
  }

  /// The value `distinct` compares a slot's record by.
  private static func _distinctKey<Element>(
    _ key: _DistinctKey<Element>?, compiler: inout _FilterCompiler<Element>
  ) throws -> ((Int) throws -> AnyHashable)? {
    guard let key else { return nil }
    switch key {
    case .typed(_, let value):
      let cursor = compiler.cursor
      return { _distinctNaN(value(try cursor.pointer($0))) }
    case .field(let name):
      guard let read = try compiler.reader(for: name, value: nil) else { return { _ in AnyHashable(0) } }
      return { _distinctNaN(AnyHashable(try read($0))) }
    }
  }

  /// NaN, which sorts as one value (see `FieldValue._order`), is one value to `distinct`
  /// too, though it is not equal to itself: values holding NaN compare as `_GroupingKey`,
  /// as `groupBy` and sections do; every other value as it is (no allocation).
  private static func _distinctNaN(_ value: AnyHashable) -> AnyHashable {
    switch value.base {
    case let d as Double where d.isNaN: return AnyHashable(_GroupingKey(.double(.nan)))
    case let f as Float where f.isNaN: return AnyHashable(_GroupingKey(.double(.nan)))
    case let v as FieldValue where !_GroupingKey.isPlain(v): return AnyHashable(_GroupingKey(v))
    default: return value
    }
  }

  /// Calls `body` with each matching slot, in input order, until it returns false.
  @inline(__always)
  private static func _scanWhile<Element>(
    _ input: [Int]?, _ cursor: _RecordCursor<Element>, _ matcher: _Matcher<Element>,
    _ body: (Int) throws -> Bool
  ) throws {
    let snapshot = cursor.snapshot
    if case .constant(false) = matcher { return }
    if case .typed(let t) = matcher, let base = cursor.base {
      // The fast path: a typed condition over records in memory.
      if let input {
        for s in input where t(base + s) { if try !body(s) { return } }
      } else if let live = snapshot._live {
        for s in 0..<snapshot._slotCount where live[s] && t(base + s) { if try !body(s) { return } }
      } else {
        for s in 0..<snapshot._slotCount where t(base + s) { if try !body(s) { return } }
      }
      return
    }
    var test: (Int) throws -> Bool
    switch matcher {
    case .constant: test = { _ in true }
    case .typed(let t): test = { t(try cursor.pointer($0)) }
    case .general(let g): test = g
    }
    if snapshot._readsFromOutside {
      // A scan of a log makes its mapped pages resident; let them go every 65,536
      // records, so a scan holds a bounded part of a large file.
      let inner = test
      var scanned = 0
      test = { s in
        scanned &+= 1
        if scanned & 0xFFFF == 0 { snapshot._releaseResidentMemory() }
        return try inner(s)
      }
    }
    if let input {
      for s in input where try test(s) { if try !body(s) { return } }
    } else if let live = snapshot._live {
      for s in 0..<snapshot._slotCount where live[s] { if try test(s), try !body(s) { return } }
    } else {
      for s in 0..<snapshot._slotCount where try test(s) { if try !body(s) { return } }
    }
  }

  /// The first `limit` matching slots of `input` (every live slot when nil), in order.
  ///
  /// The loops append directly, with no closure per match: this is what counting an
  /// unsorted set costs (see `_ResultCache.count`), so it stays as close to a
  /// hand-written loop as the matcher allows.
  private static func _collect<Element>(
    _ input: [Int]?, _ cursor: _RecordCursor<Element>, _ matcher: _Matcher<Element>, upTo limit: Int
  ) throws -> [Int] {
    let snapshot = cursor.snapshot
    var out: [Int] = []
    guard limit > 0 else { return out }
    switch matcher {
    case .constant(false):
      return out
    case .constant(true):
      if let input { return limit >= input.count ? input : Array(input.prefix(limit)) }
      let all = snapshot._liveSlots()
      return limit >= all.count ? all : Array(all.prefix(limit))
    case .typed(let t):
      if let base = cursor.base {
        // The fast path: a typed condition over records in memory.
        if let input {
          for s in input where t(base + s) {
            out.append(s)
            if out.count == limit { break }
          }
        } else if let live = snapshot._live {
          for s in 0..<snapshot._slotCount where live[s] && t(base + s) {
            out.append(s)
            if out.count == limit { break }
          }
        } else {
          for s in 0..<snapshot._slotCount where t(base + s) {
            out.append(s)
            if out.count == limit { break }
          }
        }
        return out
      }
      return try _collect(input, snapshot, upTo: limit) { t(try cursor.pointer($0)) }
    case .general(let g):
      return try _collect(input, snapshot, upTo: limit, g)
    }
  }

  private static func _collect<Element>(
    _ input: [Int]?, _ snapshot: StoreSnapshot<Element>, upTo limit: Int, _ test: (Int) throws -> Bool
  ) throws -> [Int] {
    var out: [Int] = []
    if let input {
      for s in input where try test(s) {
        out.append(s)
        if out.count == limit { break }
      }
    } else if let live = snapshot._live {
      for s in 0..<snapshot._slotCount where live[s] {
        guard try test(s) else { continue }
        out.append(s)
        if out.count == limit { break }
      }
    } else {
      for s in 0..<snapshot._slotCount where try test(s) {
        out.append(s)
        if out.count == limit { break }
      }
    }
    return out
  }

  @inline(__always)
  private static func _scan<Element>(
    _ input: [Int]?, _ cursor: _RecordCursor<Element>, _ matcher: _Matcher<Element>,
    _ body: (Int) throws -> Void
  ) throws {
    try _scanWhile(input, cursor, matcher) { (slot: Int) throws -> Bool in
      try body(slot)
      return true
    }
  }

  /// One sort key read from a slot's record: its value, and how values of it compare.
  struct _KeyReader {
    var read: (Int) throws -> FieldValue
    var descending: Bool
    var collation: RequestCollation
  }

  /// Readers for sort keys that compare by their values alone (string keys, and typed
  /// keys whose encoded values order as the property does), so a sort can read each
  /// record's values once instead of at every comparison; nil when a key compares whole
  /// records (a typed key without such a twin), or the records are in memory (reading a
  /// key costs nothing then).
  private static func _sortKeyReaders<Element>(
    _ keys: [_SortKey<Element>], compiler: inout _FilterCompiler<Element>
  ) throws -> [_KeyReader]? {
    guard compiler.cursor.base == nil else { return nil }
    var readers: [_KeyReader] = []
    for key in keys {
      switch key {
      case .typed(let typed):
        let t = try typed.inProcess()
        if let through = t.throughField {
          readers.append(
            _KeyReader(
              read: try _throughRead(through, compiler: &compiler), descending: t.order != .ascending,
              collation: through.collation))
          continue
        }
        guard let read = try compiler.sortTwin(t) else { return nil }
        readers.append(_KeyReader(read: read, descending: t.order != .ascending, collation: .binary))
      case .field(let name, let order, let collation):
        guard let read = try compiler.reader(for: name, value: nil) else { continue }  // all nil: all equal
        readers.append(_KeyReader(read: read, descending: order != .ascending, collation: collation))
      case .relevance(let r):
        let score = try compiler.relevanceScore(r)
        readers.append(_KeyReader(read: { .double(try score($0)) }, descending: true, collation: .binary))
      }
    }
    return readers
  }

  /// `matched` (in rank order) sorted by the keys, each record's values read once: the
  /// order `_less` with the slot comparator gives (equal keys keep their rank order), in
  /// O(n·k) reads instead of O(n log n · k).
  ///
  /// Inside an async call it throws `CancellationError` once the call is cancelled.
  /// - Parameter release: Called every 65,536 records read (lets a log's pages go).
  private static func _sortByKeys(_ matched: [_Ranked], _ keys: [_KeyReader], release: () -> Void) throws
    -> [_Ranked]
  {
    let k = keys.count
    guard k > 0 else { return matched }
    let token = _CancelToken.current
    var values: [FieldValue] = []
    values.reserveCapacity(matched.count * k)
    for (i, m) in matched.enumerated() {
      if i & 0xFFF == 0, let token, token.isCancelled { throw CancellationError() }
      if i & 0xFFFF == 0xFFFF { release() }
      for key in keys { values.append(try key.read(m.slot)) }
    }
    var order = Array(0..<matched.count)
    values.withUnsafeBufferPointer { v in
      order.sort { a, b in
        for (j, key) in keys.enumerated() {
          let c = FieldValue._order(v[a &* k &+ j], v[b &* k &+ j], key.collation)
          if c != 0 { return key.descending ? c > 0 : c < 0 }
        }
        return a < b
      }
    }
    if let token, token.isCancelled { throw CancellationError() }
    return order.map { matched[$0] }
  }

  /// A slot-level three-way comparison for the sort keys, or nil when there are none.
  ///
  /// Inside an async call (see `StoreThreads`) it throws `CancellationError` once the call
  /// is cancelled, so a sort stops as a scan does (a log's sort reads or decodes records).
  private static func _comparator<Element>(
    _ keys: [_SortKey<Element>], compiler: inout _FilterCompiler<Element>
  ) throws -> ((Int, Int) throws -> Int)? {
    guard let compare = try _comparatorParts(keys, compiler: &compiler) else { return nil }
    guard let token = _CancelToken.current else { return compare }
    return { a, b in
      if token.isCancelled { throw CancellationError() }
      return try compare(a, b)
    }
  }

  /// A slot's sort value through a relation (`_TypedSort.throughField`): its stored key
  /// read, then mapped to the related value.
  private static func _throughRead<Element>(_ through: _ThroughField, compiler: inout _FilterCompiler<Element>) throws
    -> (Int) throws -> FieldValue
  {
    let value = through.value
    guard let read = try compiler.reader(for: through.key, value: nil) else { return { _ in value(.null) } }
    return { value(try read($0)) }
  }

  private static func _comparatorParts<Element>(
    _ keys: [_SortKey<Element>], compiler: inout _FilterCompiler<Element>
  ) throws -> ((Int, Int) throws -> Int)? {
    guard !keys.isEmpty else { return nil }
    var parts: [(Int, Int) throws -> Int] = []
    for key in keys {
      switch key {
      case .typed(let typed):
        // A sort through a relation a store could have run reads its values now.
        let t = try typed.inProcess()
        let cmp = t.compare
        if let base = compiler.cursor.base {
          parts.append(t.order == .ascending ? { cmp(base + $0, base + $1) } : { cmp(base + $1, base + $0) })
        } else if let through = t.throughField {
          // A value through a relation: the record's one field read, mapped, not two records.
          let (read, collation) = (try _throughRead(through, compiler: &compiler), through.collation)
          parts.append(
            t.order == .ascending
              ? { FieldValue._order(try read($0), try read($1), collation) }
              : { FieldValue._order(try read($1), try read($0), collation) })
        } else if let read = try compiler.sortTwin(t) {
          // The key's encoded values order as the property does: read one field, not two records.
          parts.append(
            t.order == .ascending
              ? { FieldValue._order(try read($0), try read($1), .binary) }
              : { FieldValue._order(try read($1), try read($0), .binary) })
        } else {
          // Two records at once: the cursor holds one, so the other is decoded here.
          let snapshot = compiler.snapshot
          let sign = t.order == .ascending ? 1 : -1
          parts.append { a, b in
            var (ra, rb) = (try snapshot._record(at: a), try snapshot._record(at: b))
            return sign
              * withUnsafePointer(to: &ra) { pa in withUnsafePointer(to: &rb) { pb in cmp(pa, pb) } }
          }
        }
      case .field(let name, let order, let collation):
        guard let read = try compiler.reader(for: name, value: nil) else { continue }  // all nil: all equal
        parts.append(
          order == .ascending
            ? { FieldValue._order(try read($0), try read($1), collation) }
            : { FieldValue._order(try read($1), try read($0), collation) })
      case .relevance(let r):
        // Best first; each record's score is computed once (see `relevanceScore`).
        let score = try compiler.relevanceScore(r)
        parts.append { a, b in _three(try score(b), try score(a)) }
      }
    }
    if parts.count == 1 { return parts[0] }
    return { a, b in
      for p in parts {
        let c = try p(a, b)
        if c != 0 { return c }
      }
      return 0
    }
  }
}

/// A candidate with its position in the stage's input, the tie-breaker that makes every
/// sort stable.
struct _Ranked {
  var rank: Int
  var slot: Int
}

@inline(__always)
func _less(_ a: _Ranked, _ b: _Ranked, _ compare: (Int, Int) throws -> Int) rethrows -> Bool {
  let c = try compare(a.slot, b.slot)
  return c != 0 ? c < 0 : a.rank < b.rank
}

/// The k smallest candidates seen so far, in a max-heap: O(n log k) for a sort plus limit.
struct _TopK {
  let k: Int
  /// A strict total order (ties broken by rank).
  let less: (_Ranked, _Ranked) throws -> Bool
  private var heap: [_Ranked] = []

  init(k: Int, less: @escaping (_Ranked, _Ranked) throws -> Bool) {
    self.k = k
    self.less = less
    heap.reserveCapacity(min(k, 1 << 16))
  }

  mutating func offer(_ item: _Ranked) throws {
    if heap.count < k {
      heap.append(item)
      var i = heap.count - 1
      while i > 0 {
        let parent = (i - 1) / 2
        guard try less(heap[parent], heap[i]) else { break }
        heap.swapAt(parent, i)
        i = parent
      }
    } else if try less(item, heap[0]) {
      heap[0] = item
      var i = 0
      while true {
        let l = 2 * i + 1
        let r = l + 1
        var largest = i
        if try l < heap.count && less(heap[largest], heap[l]) { largest = l }
        if try r < heap.count && less(heap[largest], heap[r]) { largest = r }
        if largest == i { break }
        heap.swapAt(i, largest)
        i = largest
      }
    }
  }

  func sorted() throws -> [_Ranked] { try heap.sorted { try less($0, $1) } }
}
