extension RequestSet {
  /// Evaluates the set and returns its records.
  ///
  /// ```swift
  /// let cows: [Animal] = try animals.filter("species", value: "Cow").fetch()
  /// ```
  /// This is the throwing way to evaluate: where the collection members would stop the
  /// program on a bad query, `fetch()` throws.
  /// - Throws: ``RequestSetError``: `.unknownKey` or `.typeMismatch` for a string key
  ///   that cannot work, `.predicateFailed` when a `Predicate` throws, or the store's error.
  /// - Complexity: O(*n*) for *n* records in the store, plus O(*m* log *m*) to sort *m*
  ///   matches (O(*m* log *k*) with a limit *k*).
  public func fetch() throws -> [Element] {
    let e = try _cache.evaluation(_source, _query)
    return try (0..<e.count).map { try e.element($0) }
  }

  /// The one record the set holds.
  ///
  /// ```swift
  /// let micky = try animals.filter("name", value: "Micky").get()
  /// ```
  /// - Throws: ``RequestSetError`` `.notFound` when the set is empty,
  ///   `.multipleResults` (with the count) when it holds more than one record, or any error
  ///   ``fetch()`` throws.
  public func get() throws -> Element {
    let e = try _cache.evaluation(_source, _query)
    switch e.count {
    case 1: return try e.element(0)
    case 0:
      throw RequestSetError(
        .notFound, "get() found no \(Element.self) matching \(_filterText). Check the filters, or use first.")
    default:
      throw RequestSetError(
        .multipleResults,
        "get() expects exactly one \(Element.self) but \(e.count) match \(_filterText). "
          + "Add filters that single one out, or use first.")
    }
  }

  /// The number of records, throwing instead of stopping on a bad query.
  ///
  /// ```swift
  /// let n = try animals.filter("age", .greaterThan, 3).fetchCount()
  /// ```
  /// Like ``count``, it does not build the result when it can avoid it.
  public func fetchCount() throws -> Int {
    try _cache.count(_source, _query)
  }

  var _filterText: String {
    let parts = _query.stages.compactMap { $0.filter?.description }
    return parts.isEmpty ? "(no filter)" : parts.joined(separator: " THEN ")
  }

  /// The evaluation, or a stop with the error's message: the collection members cannot
  /// throw and must never pass off an empty result for an error.
  var _evaluated: _Evaluation<Element> {
    do {
      return try _cache.evaluation(_source, _query)
    } catch {
      fatalError("\(error)")
    }
  }
}
