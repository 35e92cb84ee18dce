/// The evaluated result: the snapshot and the slots of the result in order.
struct _Evaluation<Element: Sendable>: Sendable {
  let snapshot: StoreSnapshot<Element>
  let slots: [Int]

  var count: Int { slots.count }

  /// The record at a position of the result; throws only for an external store that
  /// fails to read it.
  @inline(__always)
  func element(_ i: Int) throws -> Element { try snapshot._record(at: slots[i]) }

  /// See ``StoreSnapshot/_releaseResidentMemory()``.
  func releaseResidentMemory() { snapshot._releaseResidentMemory() }

  /// The record at a position, or a stop with the store's error (the collection path).
  @inline(__always)
  subscript(_ i: Int) -> Element {
    do {
      return try element(i)
    } catch {
      fatalError("\(error)")
    }
  }
}

/// The lazily computed result of one request set, shared by its copies.
///
/// The snapshot is fixed by the first read of any kind, so a count taken first and the
/// records read later come from the same moment of the store. The query is prepared once
/// (``_PreparedQuery``: twins decided, plan made) and runs once: `count` keeps the matches
/// (as bits, for a plain filtered scan) that iteration, subscripts, `first` and `last`
/// then read without testing a record again, and `explain()` describes that same plan.
/// Counting a sorted set keeps the first stage's matches in store order instead of
/// sorting them; the result, when a read needs it, sorts those without filtering again.
final class _ResultCache<Element: Sendable>: Sendable {
  struct State: Sendable {
    var snapshot: StoreSnapshot<Element>?
    /// The one preparation of the query for this set's source.
    var prepared: _PreparedQuery<Element>?
    var count: Int?
    var evaluation: _Evaluation<Element>?
    /// The first stage's matches, in store order, before its sort and window: what
    /// counting a sorted set computed (see ``count(_:_:)``).
    var matched: [Int]?
    /// The matches as one bit per slot, and how many: what counting a plain filtered scan
    /// computed (see `_Executor.firstStageMatchBits`).
    var matchedBits: (bits: [UInt64], count: Int)?
    /// The reader a pushdown count used, kept until the evaluation is built, so that both
    /// see one state of the store; released once the result is materialized.
    var reader: _PushdownReader<Element>?
  }
  private let state = _Lock(State())

  func snapshot(_ source: _Source<Element>) throws -> StoreSnapshot<Element> {
    if let s = state.withLock({ $0.snapshot }) { return s }
    return try _fixSnapshot(source)
  }

  /// Takes a snapshot of the source and keeps it, unless another read kept one first.
  private func _fixSnapshot(_ source: _Source<Element>) throws -> StoreSnapshot<Element> {
    let fresh = try source.snapshot()
    return state.withLock { st in
      if let s = st.snapshot { return s }
      st.snapshot = fresh
      return fresh
    }
  }

  /// The set's preparation over its snapshot (a store that runs no query itself), made on
  /// the first read and kept.
  ///
  /// - Parameter snapshot: The set's snapshot, when the caller has it at hand already.
  func prepared(
    _ source: _Source<Element>, _ query: _Query<Element>, snapshot known: StoreSnapshot<Element>? = nil
  ) throws -> _PreparedQuery<Element> {
    if let p = state.withLock({ $0.prepared }) { return p }
    let fresh = _PreparedQuery(query, snapshot: try known ?? snapshot(source))
    return state.withLock { st in
      if let p = st.prepared { return p }
      st.prepared = fresh
      return fresh
    }
  }

  /// The set's preparation for a store's reader, with that reader: the one a count or
  /// `first` kept, or a new one, kept until the evaluation is built. The caller's use of
  /// the reader ends with its `pause()` (see ``StoreQueryReader/pause()``).
  private func _preparedPushdown(
    _ runner: _PushdownRunner<Element>, _ query: _Query<Element>
  ) throws -> (_PushdownReader<Element>, _PreparedQuery<Element>, _PushdownPlan<Element>) {
    let (kept, known) = state.withLock { ($0.reader, $0.prepared) }
    kept?.resume()
    if let kept, let known, let plan = known.pushdown { return (kept, known, plan) }
    let reader = try kept ?? runner.open()
    let prepared: _PreparedQuery<Element>
    do {
      prepared = try _PreparedQuery(query, reader: reader, storeName: runner.storeName)
    } catch {
      reader.pause()
      throw error
    }
    state.withLock { st in
      guard st.evaluation == nil else { return }
      st.reader = reader
      st.prepared = prepared
    }
    // `pushdown` is set by the reader's initializer.
    return (reader, prepared, prepared.pushdown ?? _PushdownPlan(prepared.query, reader))
  }

  func evaluation(_ source: _Source<Element>, _ query: _Query<Element>) throws -> _Evaluation<Element> {
    let (known, matched, bits) = state.withLock { ($0.evaluation, $0.matched, $0.matchedBits) }
    if let known { return known }
    if let runner = source.pushdown { return try _pushdownEvaluation(runner, query) }
    try _Pushdown.refuseUnpushed(query, storeName: source.name)
    let slots: [Int]
    let snapshot = try self.snapshot(source)
    if bits == nil, matched == nil, let found = _Planner.idSlots(query, in: snapshot) {
      // `filter(\.id == v)`: the id map answers it; nothing to prepare or plan.
      slots = found
    } else {
      slots = try _slots(try prepared(source, query, snapshot: snapshot), snapshot, matched, bits)
    }
    return state.withLock { st in
      if let e = st.evaluation { return e }
      let e = _Evaluation(snapshot: snapshot, slots: slots)
      st.evaluation = e
      st.count = e.count
      st.matched = nil
      st.matchedBits = nil
      return e
    }
  }

  /// The result's slots from what a count kept (bits or matches), or from running the
  /// prepared query.
  private func _slots(
    _ prepared: _PreparedQuery<Element>, _ snapshot: StoreSnapshot<Element>, _ matched: [Int]?,
    _ bits: (bits: [UInt64], count: Int)?
  ) throws -> [Int] {
    let slots: [Int]
    if let bits {
      // A count found exactly the result: no sort, window or distinct to apply.
      slots = _Executor.slots(fromBits: bits.bits, count: bits.count)
    } else {
      slots = try _Executor.slots(prepared.query, in: snapshot, firstStageMatches: matched, prepared: prepared)
    }
    return slots
  }

  /// Evaluates the set from its snapshot's id map when that alone answers it (a typed
  /// `filter(\.id == v)`, see `_Planner.idSlots`): true when the set is evaluated, now or
  /// by an earlier read. Nothing else runs here, no scan and no plan: false leaves the
  /// set to be evaluated as any read evaluates it (its snapshot may be fixed already).
  ///
  /// The async API's in-place step (`AsyncRequestSet`): a lookup that costs a dictionary
  /// read is answered on the calling task, where handing it to a store thread would cost
  /// more than the lookup.
  func evaluateFromIDMap(_ source: _Source<Element>, _ query: _Query<Element>) -> Bool {
    guard source.pushdown == nil, query.graph == nil, !query.requiresPushdown, _Planner.isIDLookup(query) else {
      return false
    }
    let kept = state.withLock { st -> Bool? in
      if st.evaluation != nil { return true }
      if st.matched != nil || st.matchedBits != nil { return false }
      return nil
    }
    if let kept { return kept }
    guard let snapshot = try? self.snapshot(source), let found = _Planner.idSlots(query, in: snapshot) else {
      return false
    }
    state.withLock { st in
      guard st.evaluation == nil else { return }
      st.evaluation = _Evaluation(snapshot: snapshot, slots: found)
      st.count = found.count
    }
    return true
  }

  /// Evaluates through the store's reader: the one a count kept, or a new one, released
  /// once the result is built.
  private func _pushdownEvaluation(
    _ runner: _PushdownRunner<Element>, _ query: _Query<Element>
  ) throws -> _Evaluation<Element> {
    let (reader, prepared, plan) = try _preparedPushdown(runner, query)
    defer { reader.pause() }
    let e = try _Pushdown.evaluate(prepared.query, plan, reader)
    return state.withLock { st in
      st.reader = nil
      if let known = st.evaluation { return known }
      st.evaluation = e
      st.count = e.count
      return e
    }
  }

  /// The first record of the set (the last, with `fromEnd`), read through the set's one
  /// preparation without building the result: the query prepared and planned as every
  /// other read of the set prepares it (a graph set's relation queries run here, once),
  /// then run with a window of one. Once a read has run the query (a `count`, say), the
  /// record comes from that result. `filter(\.id == v)` reads the id map, with nothing
  /// to prepare.
  func first(_ source: _Source<Element>, _ query: _Query<Element>, fromEnd: Bool = false) throws -> Element? {
    if let runner = source.pushdown, !fromEnd, !query.requiresPushdown {
      return try _pushdownFirst(runner, source, query)
    }
    guard !query.requiresPushdown, let snapshot = try snapshotUnlessRun(source) else {
      let e = try evaluation(source, query)
      return e.count == 0 ? nil : try e.element(fromEnd ? e.count - 1 : 0)
    }
    if let found = _Planner.idSlots(query, in: snapshot) {
      return try (fromEnd ? found.last : found.first).map { try snapshot._record(at: $0) }
    }
    let prepared = try self.prepared(source, query, snapshot: snapshot)
    var one = prepared.query
    if fromEnd { one.reverse() }
    one.limit(1)
    let slots = try _Executor.slots(one, in: snapshot, prepared: prepared)
    return try slots.first.map { try snapshot._record(at: $0) }
  }

  /// Whether the set holds a record, read through the set's one preparation: counting
  /// stops at the first match.
  func exists(_ source: _Source<Element>, _ query: _Query<Element>) throws -> Bool {
    if let n = peekCount() { return n > 0 }
    if source.pushdown != nil { return try first(source, query) != nil }
    if query.requiresPushdown || hasRun() { return try count(source, query) > 0 }
    let snapshot = try self.snapshot(source)
    let prepared = try self.prepared(source, query, snapshot: snapshot)
    var one = prepared.query
    one.limit(1)
    return try _Executor.count(one, in: snapshot, prepared: prepared) > 0
  }

  /// The first record through the store's reader, asking it for one record when the
  /// set's split allows (see ``_PushdownPlan/narrowedToFirst(_:_:)``): the reader and the
  /// preparation are the ones the evaluation that may follow reads, so both see one state
  /// of the store and the query is planned once.
  private func _pushdownFirst(
    _ runner: _PushdownRunner<Element>, _ source: _Source<Element>, _ query: _Query<Element>
  ) throws -> Element? {
    if let e = state.withLock({ $0.evaluation }) { return e.count == 0 ? nil : try e.element(0) }
    let (reader, prepared, plan) = try _preparedPushdown(runner, query)
    guard let (one, narrowed) = plan.narrowedToFirst(prepared.query, reader) else {
      // The first record needs the whole result (a sort that runs in process, say).
      reader.pause()
      let e = try evaluation(source, query)
      return e.count == 0 ? nil : try e.element(0)
    }
    // Paused once read: the kept reader may lend its connection until the records are read.
    defer { reader.pause() }
    let e = try _Pushdown.evaluate(one, narrowed, reader)
    return e.count == 0 ? nil : try e.element(0)
  }

  /// Counts through the store's reader when it runs the whole query exactly, keeping the
  /// reader and the plan for the evaluation that usually follows; otherwise evaluates.
  private func _pushdownCount(
    _ runner: _PushdownRunner<Element>, _ source: _Source<Element>, _ query: _Query<Element>
  ) throws -> Int {
    let (reader, _, plan) = try _preparedPushdown(runner, query)
    // Paused once counted: a kept reader may lend what it holds until the records are read.
    defer { reader.pause() }
    guard plan.isExact else { return try evaluation(source, query).count }
    let n = try reader.count(plan.query)
    return state.withLock { st in
      if let known = st.count { return known }
      st.count = n
      return n
    }
  }

  /// The snapshot, when a read has already fixed it.
  func peekSnapshot() -> StoreSnapshot<Element>? { state.withLock { $0.snapshot } }

  /// The preparation, when a read has already made it.
  func peekPrepared() -> _PreparedQuery<Element>? { state.withLock { $0.prepared } }

  /// The evaluation, when a read has already computed it.
  func peekEvaluation() -> _Evaluation<Element>? { state.withLock { $0.evaluation } }

  /// The count, when a read has already computed it.
  func peekCount() -> Int? { state.withLock { $0.count } }

  /// Whether a count has run the query: the result then costs no further scan.
  func hasRun() -> Bool { state.withLock { $0.evaluation != nil || $0.matched != nil || $0.matchedBits != nil } }

  /// The snapshot, fixed now if no read has fixed it; nil once a read (a count, say) has
  /// run the query, whose result then costs no further scan. One look under the lock
  /// where asking both apart takes two: `first` on a fresh set is a whole small query.
  private func snapshotUnlessRun(_ source: _Source<Element>) throws -> StoreSnapshot<Element>? {
    // A pushdown store's records are read through the one evaluation.
    if source.pushdown != nil { return nil }
    // Only a number comes out of the lock: in this unspecialized code, copying an optional
    // snapshot out (or a tuple) costs more than a second look when one is kept already.
    let progress = state.withLock { st -> Int in
      if st.evaluation != nil || st.matched != nil || st.matchedBits != nil { return 2 }
      if case .none = st.snapshot { return 0 }
      return 1
    }
    switch progress {
    case 0: return try _fixSnapshot(source)
    case 1: return try snapshot(source)
    default: return nil
    }
  }

  /// The number of results, from the one run of the query that every read shares.
  ///
  /// A set whose only filter one index answers exactly counts that index's entries and
  /// reads no record (see `_Executor.indexedCount`); the first read of the records then
  /// runs the query. A set with no sort (and no `reversed()`) that scans the whole store
  /// keeps its matches as one bit per record (see `_Executor.firstStageMatchBits`):
  /// counting collects no positions, and the iteration that usually follows turns the bits
  /// into positions without testing a record again. Any other set with no sort is
  /// evaluated: its result is exactly the matches in store order, so counting costs the
  /// scan it would cost anyway. A one-stage sorted set keeps its matches unsorted instead,
  /// since its count does not depend on the order, unless its plan walks an index in sort
  /// order (which reads only what the window needs): that set is evaluated.
  func count(_ source: _Source<Element>, _ query: _Query<Element>) throws -> Int {
    if let n = state.withLock({ $0.count }) { return n }
    if let runner = source.pushdown { return try _pushdownCount(runner, source, query) }
    if query.requiresPushdown { try _Pushdown.refuseUnpushed(query, storeName: source.name) }
    let prepared = try prepared(source, query)
    let query = prepared.query
    let snapshot = try prepared.snapshot ?? self.snapshot(source)
    if query.invalid == nil, query.stages.count == 1, query.stages[0].filter != nil {
      // One condition an index answers exactly: count its entries, read no record.
      if let n = try _Executor.indexedCount(query, in: snapshot) {
        state.withLock { st in if st.count == nil { st.count = n } }
        return n
      }
    }
    // A plain filtered scan: count its matches as bits, collecting no positions.
    if query.invalid == nil, let found = try _Executor.firstStageMatchBits(query, in: snapshot, prepared: prepared) {
      state.withLock { st in
        guard st.evaluation == nil else { return }
        st.matchedBits = found
        st.count = found.count
      }
      return found.count
    }
    guard query.invalid == nil, query.stages.count == 1, let stage = query.stages.first, stage.distinct == nil,
      !stage.sort.isEmpty || stage.reversed || stage.filter == nil
    else {
      return try evaluation(source, query).count
    }
    if stage.filter == nil {
      // Nothing to test: the snapshot knows how many records it holds. A bad sort key is
      // still an error.
      try _Executor.checkSortKeys(stage, in: snapshot)
      let n = stage.window.range(in: snapshot.count).count
      state.withLock { $0.count = n }
      return n
    }
    let access = prepared.access()
    if case .walk = access.path { return try evaluation(source, query).count }
    let matched = try _Executor.firstStageMatches(query, in: snapshot, plan: access)
    let n = stage.window.range(in: matched.count).count
    state.withLock { st in
      guard st.evaluation == nil else { return }
      st.matched = matched
      st.count = n
    }
    return n
  }
}
