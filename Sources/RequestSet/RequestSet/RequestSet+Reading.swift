extension RequestSet {
  /// The first `n` records, as a lazy request set: the same as `limit(n)`.
  ///
  /// ```swift
  /// animals.sortBy(\.age).first(3)    // the three youngest
  /// ```
  /// A negative `n` makes the set invalid (see ``limit(_:)``).
  /// - Returns: A new set; the receiver is unchanged.
  public func first(_ n: Int) -> RequestSet {
    _window("first", n) { $0.limit(n) }
  }

  /// The last `n` records, in the set's order, as a lazy request set.
  ///
  /// ```swift
  /// animals.sortBy(\.age).last(3)     // the three oldest, oldest last
  /// ```
  /// A negative `n` makes the set invalid (see ``limit(_:)``).
  /// - Returns: A new set; the receiver is unchanged.
  /// - Complexity: Evaluation keeps the last *n* in a heap when the set is sorted.
  public func last(_ n: Int) -> RequestSet {
    guard n >= 0 else { return _window("last", n) { _ in } }
    return reversed().limit(n).reversed()
  }

  /// The set in reverse order, as a lazy request set (never an array).
  ///
  /// A sorted set flips its sort, ties included, so `reversed()` is exactly the records
  /// read backwards; an unsorted set reads store order backwards.
  ///
  /// ```swift
  /// animals.sortBy(\.name).reversed()   // Z to A
  /// animals.reversed().first            // the record inserted last
  /// ```
  /// Like a filter, `reversed()` after `limit` or `offset` applies to the records the
  /// window kept, and `reversed()` after `distinct` reads the distinct records backwards
  /// (so do `last(_:)` and ``last``):
  ///
  /// ```swift
  /// animals.sortBy(\.age).distinct(\.species).reversed()   // the youngest of each species, oldest of them first
  /// animals.sortBy(\.age).reversed().distinct(\.species)   // the oldest of each species
  /// ```
  public func reversed() -> RequestSet {
    _with { $0.reverse() }
  }

  /// Whether the set holds any record, found without building the result: evaluation
  /// stops at the first match.
  ///
  /// ```swift
  /// if animals.filter("name", value: "Rex").exists { … }
  /// ```
  /// A bad query stops the program; ``fetchExists()`` throws instead, and a set returned
  /// by ``validated()`` never stops.
  public var exists: Bool {
    do {
      return try fetchExists()
    } catch {
      fatalError("\(error)")
    }
  }

  /// Whether the set holds any record, throwing instead of stopping on a bad query.
  ///
  /// ```swift
  /// let any = try animals.filter("age", .greaterThan, 10).fetchExists()
  /// ```
  public func fetchExists() throws -> Bool {
    // The set's own snapshot and preparation, so a later read agrees with the answer and
    // plans nothing again.
    try _cache.exists(_source, _query)
  }

  /// The first record without building the whole result: a sorted set keeps the best one
  /// in a single pass, an unsorted one stops at the first match. Once a read has run the
  /// query (a `count`, say), it reads that result instead.
  func _fetchFirst() throws -> Element? {
    try _cache.first(_source, _query)
  }

  /// The last record without building the whole result, or from the result once a read
  /// has run the query.
  func _fetchLast() throws -> Element? {
    try _cache.first(_source, _query, fromEnd: true)
  }

  /// Keeps the first record (in the set's order) for each value of a key path.
  ///
  /// ```swift
  /// animals.sortBy(\.age).distinct(\.species)   // the youngest of each species
  /// ```
  @inlinable
  public func distinct<Value: Hashable & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable) -> RequestSet {
    _with {
      $0.distinct(.typed(description: "\(keyPath)") { AnyHashable($0.pointee[keyPath: keyPath]) })
    }
  }
}

extension RequestSet where Element: Encodable {
  /// Keeps the first record (in the set's order) for each value of a string key.
  ///
  /// ```swift
  /// animals.sortBy("age").distinct("species")   // the youngest of each species
  /// ```
  public func distinct(_ key: String) -> RequestSet {
    _with { $0.distinct(.field(key)) }
  }
}
