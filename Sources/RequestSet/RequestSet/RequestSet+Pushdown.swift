extension RequestSet {
  /// The same set, which refuses to run any part of itself in process: evaluating it
  /// throws unless its store runs the whole query.
  ///
  /// Over a ``QueryPushdownStore`` the engine pushes down what the store's reader runs and
  /// runs the rest (closures, key paths with no field, collations only Swift has, stages
  /// after a window, `reversed()`, groups) over the records the store returns. That is
  /// right for small results and wrong for a table of millions, where running a condition
  /// in process means fetching every row. A set made with `requiringPushdown()` throws instead, naming the
  /// first condition, sort key or stage that would run in process and the store's reason.
  /// Over a store that runs no query itself (``MemoryStore``, ``LogStore``, an array),
  /// every evaluation throws.
  ///
  /// ```swift
  /// let adults = RequestSet(sqliteStore).filter("age", .greaterThanOrEqual, 18).requiringPushdown()
  /// try adults.fetch()                                  // one SELECT, nothing in process
  /// try adults.filter { $0.name.count > 3 }.fetch()
  /// // throws .notPushedDown: "requiringPushdown(): { closure } would run in process, not in
  /// // SQLiteStore<Animal> (a closure). …"
  /// ```
  /// The requirement carries over to every set derived from this one. Reads that cannot
  /// throw (`count`, iteration) stop the program with the error's message; use ``fetch()``,
  /// ``fetchCount()`` or ``validated()`` to receive it.
  /// - Returns: A set with the same query that requires the store to run all of it.
  public func requiringPushdown() -> RequestSet {
    _with { $0.requiresPushdown = true }
  }

  /// `explain()` for a set over a ``QueryPushdownStore``: what the store runs (its
  /// statement, bindings and plan), what the engine checks again, and what runs in process
  /// and why.
  func _pushdownExplain(_ runner: _PushdownRunner<Element>) -> [String] {
    var lines: [String] = []
    let reader: _PushdownReader<Element>
    do {
      reader = try runner.open()
    } catch {
      return ["stage 1: the store cannot be read now: \(error)"]
    }
    // The plan a read made, else the one a read would make now (not kept: explaining
    // fixes nothing).
    let prepared = _cache.peekPrepared()
    let resolved = prepared?.query ?? _PreparedQuery.resolved(_query, reader)
    let plan = prepared?.pushdown ?? _PushdownPlan(resolved, reader)
    lines += Self._relationLines(resolved.relationNotes)
    // A relation's subquery is in the store's statement, unless the plan keeps it in
    // process, where it is read as ids.
    let kept = plan.remainder?.stages[0].filter?.relatedSubqueries ?? []
    for related in resolved.stages[0].filter?.relatedSubqueries ?? [] {
      let inProcess = kept.contains { $0.isSame(as: related) }
      lines += Self._relationLines(inProcess ? related.materialized().notes : related.notes)
    }
    // A sort through a relation is in the store's statement, unless the plan sorts in
    // process, where the related values are read.
    lines += Self._relationLines(resolved.relatedSortNotes(pushed: plan.remainder?.stages[0].sort.isEmpty ?? true))
    lines.append("stage 1: pushed to \(runner.storeName): \(plan.query.description)")
    do {
      for line in try reader.explain(plan.query).description.split(separator: "\n") {
        lines.append("  " + line)
      }
    } catch {
      lines.append("  (the store cannot explain it now: \(error))")
    }
    for term in plan.rechecked {
      lines.append("  checked again in process: \(term) (the store's test is looser)")
    }
    for part in plan.inProcess {
      lines.append("  in process: \(part.part) (\(part.why))")
    }
    if plan.earlyStop != nil {
      lines.append("  the store's stream stops once the window is full")
    }
    for (i, stage) in _query.stages.enumerated().dropFirst() {
      lines.append("stage \(i + 1): in process, on the records of stage \(i)")
      if let filter = stage.filter { lines.append("  filter: \(filter.description)") }
      if !stage.sort.isEmpty {
        lines.append("  sort: " + stage.sort.map(\.description).joined(separator: ", "))
      }
      lines.append(contentsOf: stage.explainedTail)
    }
    return lines
  }
}

extension RequestSet where Element: Record {
  /// Runs a write through the query as one statement of the store, when the set is one
  /// stage with no window that the store runs exactly; nil to take the usual path.
  ///
  /// `validate` checks what the write sets against the store's keys and kinds, when the
  /// store keeps them (``StoreQueryReader/fieldKinds()``).
  func _pushdownWrite(
    validate: ((any _FieldAccess) throws -> Void)? = nil,
    _ body: (_PushdownRunner<Element>, StoreQuery) throws -> Int?
  ) throws -> Int? {
    guard let runner = _source.pushdown, _source.pastVersion == nil, _query.invalid == nil,
      _query.stages.count == 1, !_query.stages[0].window.isSet
    else { return nil }
    _ = try _writableStore()  // refuses a write the store cannot take (.migrationPending, .readOnly)
    let query: StoreQuery
    do {
      // The reader is released before the write: a store may not write while it reads.
      let reader = try runner.open()
      let plan = try _PreparedQuery<Element>.split(_query, reader)
      // A store that keeps no keys and kinds checks the write itself (see
      // `QueryPushdownStore.update(matching:set:)`).
      if let validate, let kinds = try reader.kinds() {
        try validate(_KindsOnly<Element>(kinds: kinds))
      }
      guard plan.isExact else { return nil }
      query = plan.query
    }
    return try body(runner, query)
  }
}

extension RequestSet where Element: Encodable {
  /// A string-key aggregate computed by the store, when it runs the whole query exactly
  /// and can compute the function exactly; nil to compute it in process.
  func _pushdownAggregate(_ function: RequestAggregate.Function, _ key: String) throws -> FieldValue? {
    // An aggregate of a date part (`max("born.@year")`) is computed in process.
    guard let runner = _source.pushdown, _query.invalid == nil, RequestDatePart._split(key) == nil else { return nil }
    let storeFunction: StoreAggregate
    switch function {
    case .sum: storeFunction = .sum
    case .min: storeFunction = .min
    case .max: storeFunction = .max
    case .avg: storeFunction = .average
    case .count: return nil
    }
    let reader = try runner.open()
    let plan = try _PreparedQuery<Element>.split(_query, reader)
    if let kinds = try reader.kinds() {
      // A key the store does not know, or sum/average over values that are not numbers:
      // computed in process, which throws as over a MemoryStore.
      guard let held = kinds[key] else { return nil }
      if storeFunction == .sum || storeFunction == .average,
        held.nonNull.contains(where: { $0 != .number })
      {
        return nil
      }
    }
    guard plan.isExact else { return nil }
    return try reader.aggregate(storeFunction, key, plan.query)
  }
}

extension RequestSet where Element: Encodable {
  /// Groups formed by the store: one row per group (key values, then the aggregates), or
  /// nil and why not, when the set is not one stage the store runs exactly with no sort,
  /// distinct or window, or the store declines. Keys are checked first, against the
  /// store's keys and kinds, by `validate`.
  func _pushdownGroups(
    _ keys: [String], _ aggregates: [RequestAggregate], validate: (any _FieldAccess) throws -> Void
  ) throws -> (rows: [[FieldValue]]?, why: String) {
    guard let runner = _source.pushdown else { return (nil, "it forms no groups: it does not adopt QueryPushdownStore") }
    guard _source.pastVersion == nil, _query.invalid == nil, _query.stages.count == 1 else {
      return (nil, "groups of a past version or of a later stage are formed in process")
    }
    let stage = _query.stages[0]
    guard stage.sort.isEmpty, !stage.reversed, stage.distinct == nil, !stage.window.isSet else {
      return (nil, "groups of a sorted, reversed, distinct or windowed set are formed in process")
    }
    let reader = try runner.open()
    let plan = try _PreparedQuery<Element>.split(_query, reader)
    guard let kinds = try reader.kinds() else {
      return (nil, "it keeps no summary of keys and kinds, StoreQueryReader.fieldKinds(), to check the group keys against")
    }
    try validate(_KindsOnly<Element>(kinds: kinds))
    guard plan.isExact else {
      return (nil, "part of the filter runs in process: " + (plan.inProcess.first.map { $0.part } ?? "a rechecked term"))
    }
    let columns = aggregates.map { aggregate -> StoreGroupQuery.Column in
      switch (aggregate.function, aggregate.key) {
      case (.sum, let key?): return .aggregate(.sum, key: key)
      case (.min, let key?): return .aggregate(.min, key: key)
      case (.max, let key?): return .aggregate(.max, key: key)
      case (.avg, let key?): return .aggregate(.average, key: key)
      default: return .count
      }
    }
    guard let rows = try reader.groups(StoreGroupQuery(query: plan.query, keys: keys, columns: columns)) else {
      return (nil, "\(runner.storeName) cannot form these groups exactly")
    }
    let width = keys.count + columns.count
    if let bad = rows.first(where: { $0.count != width }) {
      throw RequestSetError(
        .storeFailed,
        "\(runner.storeName) returned a group row of \(bad.count) values for \(width) columns "
          + "(\(keys.count) keys, \(columns.count) aggregates). Fix the store's groups(_:).")
    }
    return (rows, "")
  }
}
