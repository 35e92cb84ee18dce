/// Runs a query through a ``QueryPushdownStore``'s reader: the store runs what the plan
/// pushes, the executor runs the rest over the records the store returns.
enum _Pushdown {
  /// The evaluated result: the records the store returned, in the order received, and
  /// the slots of the in-process remainder over them.
  ///
  /// - Parameters:
  ///   - query: The prepared query (see ``_PreparedQuery``), checked and split as `plan`.
  ///   - plan: Its split between the store and the process.
  static func evaluate<Element>(
    _ query: _Query<Element>, _ plan: _PushdownPlan<Element>, _ reader: _PushdownReader<Element>
  ) throws -> _Evaluation<Element> {
    guard let remainder = plan.remainder else {
      var records: [Element] = []
      try reader.records(plan.query) {
        records.append($0)
        return true
      }
      return _Evaluation(snapshot: reader.snapshot(records), slots: Array(records.indices))
    }
    if let needed = plan.earlyStop {
      return try _untilFull(plan, remainder, needed, reader)
    }
    var records: [Element] = []
    try reader.records(plan.query) {
      records.append($0)
      return true
    }
    let snapshot = reader.snapshot(records)
    var rest = remainder
    if rest.sortsByRelevance {
      // The store's records are read once, for every condition's statistics.
      var whole: StoreSnapshot<Element>? = nil
      rest = try rest.withRelevanceStatistics { condition in
        let all = try whole ?? _wholeStore(reader)
        whole = all
        return try _statistics(condition, in: all)
      }
    }
    return _Evaluation(snapshot: snapshot, slots: try _Executor.slots(rest, in: snapshot))
  }

  /// Every record of the store, for a relevance sort's statistics.
  static func _wholeStore<Element>(_ reader: _PushdownReader<Element>) throws -> StoreSnapshot<Element> {
    var all: [Element] = []
    try reader.records(StoreQuery()) {
      all.append($0)
      return true
    }
    return reader.snapshot(all)
  }

  /// A text condition's statistics over `snapshot`, every record of the store, for a
  /// relevance sort of the matches the store returned.
  static func _statistics<Element>(
    _ condition: _TextSearchCondition, in snapshot: StoreSnapshot<Element>
  ) throws -> _TextCorpusStatistics {
    try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      let readers = try compiler.searchReaders(condition)
      let live = snapshot._liveSlots()
      return try _TextCorpusStatistics.over(live.count, condition) { i in try readers.map { try $0(live[i]) }
      }
    }
  }

  /// A remainder that is only a filter and a window: records are tested as they come, in
  /// batches no larger than the matches still needed, and the store's stream stops once
  /// the window is full, so the store hands out no record a scan in order would not read.
  private static func _untilFull<Element>(
    _ plan: _PushdownPlan<Element>, _ remainder: _Query<Element>, _ needed: Int,
    _ reader: _PushdownReader<Element>
  ) throws -> _Evaluation<Element> {
    let window = remainder.stages[0].window
    var filterOnly = remainder
    filterOnly.stages[0].window = _Window()
    var kept: [Element] = []
    var batch: [Element] = []
    func flush() throws {
      let snapshot = reader.snapshot(batch)
      for slot in try _Executor.slots(filterOnly, in: snapshot) {
        kept.append(try snapshot._record(at: slot))
      }
      batch.removeAll(keepingCapacity: true)
    }
    if needed > 0 {
      try reader.records(plan.query) { record in
        batch.append(record)
        guard batch.count >= needed - kept.count else { return true }
        try flush()
        return kept.count < needed
      }
    }
    // Flushed even when empty: a bad key in the remainder throws as a scan would.
    try flush()
    return _Evaluation(snapshot: reader.snapshot(kept), slots: Array(window.range(in: kept.count)))
  }

  /// Checks `query` as evaluating it in memory would, before the store runs any of it:
  /// against the store's keys and kinds (``StoreQueryReader/fieldKinds()``), with no
  /// record read, so a key the store's records never hold throws `.unknownKey` and a value
  /// of a kind its key never holds throws `.typeMismatch`. A store that keeps no such
  /// summary is not checked.
  static func check<Element>(_ query: _Query<Element>, _ reader: _PushdownReader<Element>) throws {
    if let invalid = query.invalid { throw invalid }
    guard let kinds = try reader.kinds() else { return }
    let none = StoreSnapshot<Element>(
      storage: .external(_KindsOnly<Element>(kinds: kinds)), slotCount: 0, live: nil, liveCount: 0,
      version: reader.version, copiesOut: false)
    // A relation's subquery was checked against the related store's keys when it was made;
    // compiling it here would read its ids, which the store may never need.
    var checked = query
    for i in checked.stages.indices {
      if let filter = checked.stages[i].filter,
        let neutral = filter.replacingRelated({ _ in .closure(_ClosureCondition { _ in true }) })
      {
        checked.stages[i].filter = neutral
      }
      // So was a sort through a relation a store may run: comparing with it here would
      // read the related values (see RelatedSort.swift).
      checked.stages[i].sort.removeAll {
        if case .typed(let t) = $0 { return t.related != nil }
        return false
      }
    }
    _ = try _Executor.slots(checked, in: none)
  }

  /// Throws `.notPushedDown` for a set made with `requiringPushdown()` when part of it
  /// would run in process.
  static func refuse<Element>(_ plan: _PushdownPlan<Element>, _ query: _Query<Element>, storeName: String)
    throws
  {
    guard query.requiresPushdown, let part = plan.firstInProcess(query) else { return }
    throw RequestSetError(
      .notPushedDown,
      "requiringPushdown(): \(part.part) would run in process, not in \(storeName) (\(part.why)). "
        + "Write it with string keys and operators the store runs, or drop requiringPushdown() to run it in process."
    )
  }

  /// Throws `.notPushedDown` for a set made with `requiringPushdown()` over a store that
  /// runs no query itself.
  static func refuseUnpushed<Element>(_ query: _Query<Element>, storeName: String) throws {
    guard query.requiresPushdown else { return }
    throw RequestSetError(
      .notPushedDown,
      "requiringPushdown(): the whole query would run in process, not in \(storeName) "
        + "(it does not adopt QueryPushdownStore). Query a store that runs queries itself, "
        + "or drop requiringPushdown() to run it in process.")
  }
}

/// A store's keys and kinds with no records: what ``_Pushdown/check(_:_:)`` compiles a
/// query against.
struct _KindsOnly<Element: Sendable>: _ExternalRecords, _FieldAccess {
  let kinds: [String: _KindSet]

  func record(at slot: Int) throws -> Element {
    throw RequestSetError(.storeFailed, "Internal: a query check read record \(slot) of a store with none.")
  }

  func fields() throws -> any _FieldAccess { self }

  /// A reader for every key the store knows (none is ever called: there are no slots),
  /// so the compiler folds no condition to a constant and checks every one.
  func reader(for key: String) -> ((Int) throws -> FieldValue)? {
    guard kinds[key] != nil else { return nil }
    return { slot in
      _ = try record(at: slot)
      return .null
    }
  }
}
