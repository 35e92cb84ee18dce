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
    // A plain loop: the generic `map` costs more than reading one record from an index.
    var records: [Element] = []
    records.reserveCapacity(e.count)
    for i in 0..<e.count {
      try _CancelToken.throwIfCancelled()  // a log decodes each record here
      records.append(try e.element(i))
    }
    return records
  }

  /// The one record the set holds.
  ///
  /// ```swift
  /// let micky = try animals.filter("name", value: "Micky").get()
  /// ```
  /// - Throws: ``RequestSetError`` `.notFound` when the set is empty,
  ///   `.multipleResults` (with the count) when it holds more than one record, or any error
  ///   ``fetch()`` throws.
  /// - Complexity: The set's one evaluation (see ``fetch()``); O(1) by id.
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
  /// Like ``count``, it runs the query once for every later read of the set.
  /// - Complexity: As ``count``: O(*n*) the first time (the index's entries alone when
  ///   one index answers the filter), O(1) after.
  public func fetchCount() throws -> Int {
    try _cache.count(_source, _query)
  }

  /// The same set, evaluated and checked, so that reading it can never stop the program.
  ///
  /// The collection members (`count`, subscripts, `for`-`in`, `first`, `last`, `exists`)
  /// cannot throw, so on a set that cannot run they stop the program with the error's
  /// message. That is right for a query written in code, and wrong for one built from
  /// input: a format string a user typed, a key from a request, a limit from a URL.
  /// `validated()` runs the set once and throws what any read would meet; the set it
  /// returns holds that result, so its reads cannot fail.
  ///
  /// ```swift
  /// let userFilter = try RequestFilter<Animal>(format: userText, arguments: [])
  /// let page = try animals.filter(userFilter).offset(requestOffset).limit(requestLimit).validated()
  /// for animal in page { print(animal.name) }   // cannot trap: every check ran above
  /// ```
  /// It checks everything evaluation checks: keys (`.unknownKey`), values and operators
  /// against what each key holds (`.typeMismatch`), windows (`.invalidWindow` for a
  /// negative `limit`, `offset`, `first(_:)` or `last(_:)`), filters that could not be
  /// built (a value that failed to encode, `.encodingFailed`; nesting too deep,
  /// `.tooComplex`), a `#Predicate` that throws (`.predicateFailed`), and the store (it
  /// must be readable, and a `LogStore` must decode every record of the result).
  ///
  /// The guarantee is for this set and its copies. A set derived from it (another
  /// `filter`, `limit`…) is a new query: validate that one too.
  /// - Returns: This set, evaluated: its reads use the result `validated()` computed.
  /// - Throws: ``RequestSetError``, as ``fetch()`` would.
  /// - Complexity: One evaluation (what the first read would cost), plus decoding each
  ///   record of the result once on a store that keeps records encoded.
  public func validated() throws -> RequestSet {
    let e = try _cache.evaluation(_source, _query)
    if case .external = e.snapshot._storage {
      // Records are decoded on each read: decode them once here, so a record its type can
      // no longer decode throws now rather than stopping a later read.
      for i in 0..<e.count { _ = try e.element(i) }
    }
    return self
  }

  var _filterText: String {
    let parts = _query.stages.compactMap { $0.filter?.summary }
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
