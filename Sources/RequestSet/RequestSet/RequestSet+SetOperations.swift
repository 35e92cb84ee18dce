extension RequestSet where Element: Record {
  /// The records in this set, in `other`, or in both, each once: LINQ's `Union`, Django's
  /// `union`.
  ///
  /// The result is a lazy set over the same store, and filters, sorts and windows written
  /// after it apply to the combined records. Its order is unspecified until you sort it.
  ///
  /// ```swift
  /// let cows = animals.filter(\.species == "Cow")
  /// let old = animals.filter(\.age > 10)
  /// try cows.union(old).sortBy(\.name).limit(5).fetch()
  /// // the same records as animals.filter(\.species == "Cow" || \.age > 10)
  /// ```
  ///
  /// Each operand keeps its own window: `a.sortBy(\.age).limit(3).union(b)` combines the
  /// three youngest of `a` with `b` (LINQ and Django do the same). An operand without a
  /// window is its filter, so the union of two filtered sets is the OR of their filters,
  /// and a SQL store runs it in one statement; an operand with a window (or `distinct`) is
  /// read first, in a read of its own when the combined set is evaluated, and combined
  /// as `id IN {…}`.
  ///
  /// - Parameter other: A set made from the same store.
  /// - Returns: A lazy set of the records of either set. Evaluating it throws
  ///   ``RequestSetError`` `.mismatchedSets` when the sets read different stores, a
  ///   store's past, or arrays.
  /// - Complexity: O(1) to build; evaluation reads each windowed operand once.
  public func union(_ other: RequestSet) -> RequestSet {
    _combined(with: other, "union") { $0 || $1 }
  }

  /// The records in both this set and `other`: LINQ's `Intersect`, Django's
  /// `intersection`.
  ///
  /// ```swift
  /// let cows = animals.filter(\.species == "Cow")
  /// let heaviest = animals.sortBy(\.weight, order: .descending).limit(10)
  /// try cows.intersection(heaviest).count   // cows among the ten heaviest animals
  /// ```
  /// Operands keep their own windows, and the result's order is unspecified until
  /// sorted, as for ``union(_:)``.
  ///
  /// - Parameter other: A set made from the same store.
  /// - Returns: A lazy set of the records of both sets; see ``union(_:)`` for its errors.
  /// - Complexity: O(1) to build; evaluation reads each windowed operand once.
  public func intersection(_ other: RequestSet) -> RequestSet {
    _combined(with: other, "intersection") { $0 && $1 }
  }

  /// The records in this set that are not in `other`: LINQ's `Except`, Django's
  /// `difference`.
  ///
  /// ```swift
  /// let dogs = animals.filter(\.species == "Dog")
  /// let named = animals.filter(\.nickname != nil)
  /// try dogs.subtracting(named).fetch()   // dogs without a nickname
  /// ```
  /// Operands keep their own windows, and the result's order is unspecified until
  /// sorted, as for ``union(_:)``.
  ///
  /// - Parameter other: A set made from the same store.
  /// - Returns: A lazy set of the records of this set not in `other`; see ``union(_:)``
  ///   for its errors.
  /// - Complexity: O(1) to build; evaluation reads each windowed operand once.
  public func subtracting(_ other: RequestSet) -> RequestSet {
    _combined(with: other, "subtracting") { $0 && !$1 }
  }

  /// A set over this set's store whose filter combines the two operands' conditions.
  private func _combined(
    with other: RequestSet, _ name: String,
    _ combine: (_FilterNode<Element>, _FilterNode<Element>) -> _FilterNode<Element>
  ) -> RequestSet {
    var query = _Query<Element>()
    query.graph = _query.graph
    if let error = _query.invalid ?? other._query.invalid {
      query.invalidate(error)
    } else if let problem = _mismatch(other) {
      query.invalidate(
        RequestSetError(
          .mismatchedSets,
          "\(name)(_:) combines sets that \(problem). Combine sets made from one store, "
            + "with RequestSet(store) or graph.records(_:)."))
    } else {
      query.addFilter(combine(_operandFilter(), other._operandFilter()), mode: .and)
    }
    return RequestSet(_source: _source, _query: query)
  }

  /// Why this set and `other` cannot be combined, or nil when they read the same store.
  private func _mismatch(_ other: RequestSet) -> String? {
    guard let mine = _source.store.map({ $0 as AnyObject }),
      let theirs = other._source.store.map({ $0 as AnyObject })
    else { return "read arrays, not a store" }
    guard mine === theirs else { return "read different stores (\(_source.name) and \(other._source.name))" }
    guard _source.pastVersion == other._source.pastVersion else {
      return "read different versions of the store"
    }
    guard _query.graph === other._query.graph else { return "were made from different record graphs" }
    return nil
  }

  /// This set as a condition on the records of its store: its filter when it is one stage
  /// with no window (its sort does not change which records it holds), else `id IN` its
  /// ids, read when the combined set is prepared.
  private func _operandFilter() -> _FilterNode<Element> {
    if _query.stages.count == 1 {
      let stage = _query.stages[0]
      if !stage.window.isSet && stage.distinct == nil {
        return stage.filter ?? .constant(true)
      }
    }
    let operand = self
    return .ids(
      _IDSubquery(description: "id IN (the ids of a set with its own window)") {
        try operand.refreshed().values(\.id).map { try FieldValue(encoding: $0) }
      })
  }
}
