/// Records grouped by one or more keys, with aggregates per group: KEYShadow's select
/// with group-by and the DAO layer's projections of functions.
///
/// Like a request set, a group query is lazy: ``fetch()`` runs it. Each row is a
/// ``RequestRow``: the group keys in the order given to `groupBy`, then the aggregates in
/// the order given to ``aggregate(_:)``, on every store.
///
/// ```swift
/// let rows = try animals
///   .groupBy("species")
///   .aggregate(.count, .max("age"), .average("weight"))
///   .having("count", .greaterThan, 1)
///   .fetch()
/// // [["species": "Cow", "count": 2, "max:age": 7, "avg:weight": 525.0],
/// //  ["species": "Dog", "count": 2, "max:age": 5, "avg:weight": 27.5]]
/// ```
///
/// Rows are ordered by ``sortBy(_:order:)``'s keys, then by the group keys, ascending. A group key must hold values that compare (numbers, strings, Bools or nil).
/// Every NaN falls into one group, as sorts and `distinct` tie NaN with NaN.
public struct RequestGroups<Element: Encodable & Sendable>: Sendable {
  let base: RequestSet<Element>
  let keys: [String]
  var aggregates: [RequestAggregate] = []
  var having: [(name: String, comparison: RequestComparison, value: FieldValue)] = []
  var order: [(name: String, order: RequestSortOrder)] = []
  var invalid: RequestSetError?

  /// Adds aggregates, computed per group; each appears in the rows under its
  /// ``RequestAggregate/name`` (`count`, `max:age`, …).
  ///
  /// ```swift
  /// animals.groupBy("species").aggregate(.count, .sum("weight"))
  /// ```
  public func aggregate(_ aggregates: RequestAggregate...) -> RequestGroups {
    var copy = self
    copy.aggregates += aggregates
    return copy
  }

  /// Keeps the groups whose row value `name` (a group key or an aggregate's name)
  /// compares with `value` as `comparison` says; several `having`s must all hold.
  ///
  /// ```swift
  /// animals.groupBy("species").aggregate(.count).having("count", .greaterThanOrEqual, 2)
  /// ```
  public func having(
    _ name: String, _ comparison: RequestComparison, _ value: (any Encodable & Sendable)?
  ) -> RequestGroups {
    var copy = self
    do {
      copy.having.append((name, comparison, try value.map { try FieldValue(encoding: $0) } ?? .null))
    } catch let error as RequestSetError {
      copy.invalid = error
    } catch {
      copy.invalid = RequestSetError(.encodingFailed, "Could not encode the having value for \"\(name)\".", underlying: error)
    }
    return copy
  }

  /// Orders the rows by a group key or an aggregate's name; repeated calls add keys, and
  /// the group keys order what they leave tied.
  ///
  /// ```swift
  /// animals.groupBy("species").aggregate(.count).sortBy("count", order: .descending)
  /// ```
  public func sortBy(_ name: String, order: RequestSortOrder = .ascending) -> RequestGroups {
    var copy = self
    copy.order.append((name, order))
    return copy
  }

  /// Runs the group query: one row per group, keyed by group key and aggregate name.
  ///
  /// ```swift
  /// try animals.groupBy("species", "owner.city").aggregate(.max("age"), .count).fetch()
  /// // [["species": "Cat", "owner.city": nil, "max:age": 12, "count": 1], …]
  /// ```
  /// Each row holds the group keys in the order given to `groupBy`, then the aggregates
  /// in the order given to ``aggregate(_:)``, on every store. A group key named like an
  /// aggregate (`groupBy("count")` with `.count`) appears once, in its first place, with
  /// the aggregate's value.
  ///
  /// - Returns: One row per group, ordered by ``sortBy(_:order:)``'s keys, then by the
  ///   group keys, ascending.
  /// - Throws: ``RequestSetError`` `.unknownKey` for a group, aggregate or having key
  ///   that does not exist; `.typeMismatch` for a group key whose values do not compare,
  ///   or an aggregate over values it cannot take (`sum` of strings); `.notPushedDown` on a
  ///   set made with ``RequestSet/requiringPushdown()`` when the groups would be formed in
  ///   process (the store does not form them, or not exactly; see
  ///   ``StoreQueryReader/groups(_:)``).
  ///
  /// Over a ``QueryPushdownStore`` whose reader forms groups (`SQLiteStore`, `PostgresStore`),
  /// a set that is one filter the store runs exactly is grouped by the store: one
  /// statement, no record read in process; `having` and the order apply to its rows.
  public func fetch() throws -> [RequestRow] {
    if let invalid { throw invalid }
    let pushed = try base._pushdownGroups(keys, aggregates, validate: _validate)
    if let rows = pushed.rows {
      return try _havingAndOrder(_RowLayout.rows(keys + aggregates.map(\.name), rows))
    }
    if base._query.requiresPushdown {
      throw RequestSetError(
        .notPushedDown,
        "requiringPushdown(): groupBy(\(keys.joined(separator: ", "))) would run in process, not in "
          + "\(base._source.name) (\(pushed.why)). "
          + "Drop requiringPushdown() to group in process, or aggregate with sum, min, max or average.")
    }
    return try _havingAndOrder(try _groupInProcess())
  }

  /// Checks the group and aggregate keys against what string keys reach: they must exist,
  /// group keys must hold values that compare, aggregates values they take.
  private func _validate(_ fields: any _FieldAccess) throws {
    for key in keys {
      try _FilterCompiler<Element>.validate(key, value: nil, in: fields)
      let held = fields.kinds[key]?.nonNull ?? []
      if held.contains(where: { $0 == .array || $0 == .object }) {
        throw RequestSetError(
          .typeMismatch,
          "Cannot group by \"\(key)\" of \(Element.self): it holds \(held.map(\.description).joined(separator: " or ")) "
            + "values, which do not compare. Group by a key holding numbers, strings or Bools.")
      }
    }
    for aggregate in aggregates {
      guard let key = aggregate.key else { continue }
      try _FilterCompiler<Element>.validate(key, value: nil, in: fields)
      try _Accumulator.check(aggregate.function, key: key, kinds: fields.kinds[key] ?? _KindSet(), type: Element.self)
    }
  }

  /// The rows, one per group, formed in process over the evaluated set.
  private func _groupInProcess() throws -> [RequestRow] {
    let e = try base._cache.evaluation(base._source, base._query)
    let fields = try e.snapshot._fields()
    try _validate(fields)
    let groupReaders = try keys.map { try fields.readerWithDateParts(for: $0) }
    let aggregateReaders = try aggregates.map { aggregate in try aggregate.key.flatMap { try fields.readerWithDateParts(for: $0) } }

    // Fold every record into its group, keeping groups in first-seen order. NaN equals
    // nothing, not even itself, yet sorts and `distinct` tie NaN with NaN (see
    // `FieldValue._order`): the lookup key is `_GroupingKey`, so all NaNs make one group,
    // inside arrays and objects too.
    var groupIndex: [[_GroupingKey]: Int] = [:]
    var groupKeys: [[FieldValue]] = []
    var accumulators: [[_Accumulator]] = []
    for slot in e.slots {
      let groupKey = try groupReaders.map { try $0?(slot) ?? .null }
      let lookup = groupKey.map(_GroupingKey.init)
      let g: Int
      if let existing = groupIndex[lookup] {
        g = existing
      } else {
        g = groupKeys.count
        groupIndex[lookup] = g
        groupKeys.append(groupKey)
        accumulators.append(aggregates.map { _Accumulator($0.function) })
      }
      for (i, read) in aggregateReaders.enumerated() {
        // `count` counts records; a key no record holds reads as nil everywhere.
        accumulators[g][i].add(aggregates[i].key == nil ? .int(1) : try read?(slot) ?? .null)
      }
    }

    // The same rows a store's groups give: key values, then aggregates, in one order.
    return _RowLayout.rows(
      keys + aggregates.map(\.name),
      try zip(groupKeys, accumulators).map { key, accs in
        try key
          + zip(aggregates, accs).map { aggregate, acc in try acc.result(type: Element.self, key: aggregate.key) }
      })
  }

  /// Keeps the rows `having` accepts, in the order `sortBy` and the group keys give.
  private func _havingAndOrder(_ rows: [RequestRow]) throws -> [RequestRow] {
    var rows = rows

    let rowNames = keys + aggregates.map(\.name)
    for name in having.map(\.name) + order.map(\.name) where !rowNames.contains(name) {
      throw RequestSetError(
        .unknownKey,
        "Unknown row key \"\(name)\" in having or sortBy. The rows hold: \(rowNames.joined(separator: ", ")). "
          + "Add the aggregate with aggregate(…) first.")
    }
    for condition in having {
      let test = _FieldCondition(key: condition.name, comparison: condition.comparison, value: condition.value, collation: .binary)
      rows = rows.filter { test.matches($0[condition.name] ?? .null) }
    }
    // Group keys, ascending, order what the requested keys leave tied.
    let sortKeys = order + keys.map { ($0, RequestSortOrder.ascending) }
    rows = rows.enumerated().sorted { a, b in
      for (name, direction) in sortKeys {
        let c = FieldValue._order(a.element[name] ?? .null, b.element[name] ?? .null, .binary)
        if c != 0 { return direction == .ascending ? c < 0 : c > 0 }
      }
      return a.offset < b.offset
    }.map(\.element)
    return rows
  }
}

extension RequestSet where Element: Encodable {
  /// Groups the set's records by one or more keys; add aggregates with
  /// ``RequestGroups/aggregate(_:)`` and run with ``RequestGroups/fetch()``.
  ///
  /// ```swift
  /// try animals.groupBy("species", "owner.city").aggregate(.count).fetch()
  /// // [["species": "Cat", "owner.city": nil, "count": 1], …]
  /// ```
  /// - Parameter keys: The keys whose values form a group, in the order its rows hold them.
  public func groupBy(_ keys: String...) -> RequestGroups<Element> {
    RequestGroups(base: self, keys: keys)
  }

  /// Groups the set's records by keys chosen at run time; see ``groupBy(_:)-(String...)``.
  ///
  /// ```swift
  /// let keys = ["owner.city", "species"]   // say, from a command line
  /// try animals.groupBy(keys).aggregate(.count).fetch()
  /// // [["owner.city": nil, "species": "Cat", "count": 1], …]
  /// ```
  /// - Parameter keys: The keys whose values form a group, in the order its rows hold them.
  public func groupBy(_ keys: [String]) -> RequestGroups<Element> {
    RequestGroups(base: self, keys: keys)
  }
}
