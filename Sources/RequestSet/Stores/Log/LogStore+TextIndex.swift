extension LogStore {
  /// Creates the store's full-text index on string keys, and writes its definition to the
  /// log. Text searches
  /// (``RequestSet/filter(matching:in:mode:)``) on those keys then use
  /// it (see ``RequestSet/explain()``); the store keeps it current on every write and
  /// builds it again from the records whenever it opens the log.
  ///
  /// ```swift
  /// let store = try LogStore<Post>(path: "posts.rslog")
  /// try store.createTextIndex(["title", "body"])
  /// try RequestSet(store).filter(matching: "quick fox").fetch()
  /// ```
  /// A store has at most one text index; creating the one it has does nothing. The index
  /// changes no result: a search without it reads each record's text and finds the same
  /// records.
  /// - Parameter keys: Codable keys (or dotted paths) of String or `[String]` fields.
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.invalidIndex` when no key is given, or a text index on other keys exists (drop it
  ///   first with ``dropTextIndex()``); `.readOnly`; `.ioFailure`.
  /// - Complexity: O(*n*) in the records' text.
  public func createTextIndex(_ keys: [String]) throws {
    try _state.withLock { try $0.createTextIndex(keys) }
  }

  /// Creates the store's full-text index: the variadic form of
  /// ``createTextIndex(_:)-([String])``.
  ///
  /// ```swift
  /// try store.createTextIndex("title", "body")
  /// ```
  /// - Throws: What ``createTextIndex(_:)-([String])`` throws.
  public func createTextIndex(_ first: String, _ more: String...) throws {
    try createTextIndex([first] + more)
  }

  /// Creates the store's full-text index on the fields key paths name.
  ///
  /// ```swift
  /// try store.createTextIndex(\.title, \.body)
  /// ```
  /// - Throws: `.invalidIndex` when a key path is not a chain of stored properties, and
  ///   what ``createTextIndex(_:)-([String])`` throws.
  public func createTextIndex(_ keyPaths: PartialKeyPath<Element>...) throws {
    try createTextIndex(try keyPaths.map { try _textKey($0, root: Element.self) })
  }

  /// Drops the store's full-text index, and its definition from the log.
  ///
  /// ```swift
  /// try store.dropTextIndex()   // true
  /// ```
  /// - Returns: Whether there was one.
  /// - Throws: ``RequestSetError`` `.readOnly`; `.ioFailure`.
  @discardableResult
  public func dropTextIndex() throws -> Bool {
    try _state.withLock { try $0.dropTextIndex() }
  }

  /// The keys of the store's full-text index, or nil without one.
  ///
  /// ```swift
  /// store.textIndexKeys   // ["title", "body"]
  /// ```
  public var textIndexKeys: [String]? { _state.withLock { $0.textIndex?.keys } }

  /// The keys `filter(matching:)` searches: those of the store's text index.
  public var _textIndexKeys: [String]? { textIndexKeys }
}
