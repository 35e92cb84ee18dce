extension RequestSet where Element: Encodable {
  /// A read-only request set whose records `read` gives each time the set is evaluated:
  /// nothing runs until the set is counted, iterated or subscripted, and a set made
  /// from it by ``refreshed()`` calls `read` again.
  ///
  /// This is how the SQL stores' raw SQL escape hatch (`SQLiteStore.records(sql:arguments:)`,
  /// `PostgresStore.records(sql:arguments:)`) becomes a set: the statement runs when the
  /// set is read, and every filter, sort and window after it runs in process on what it
  /// returned. Use it for any source of records that is not a store: a web service's
  /// answer, a file read on demand.
  ///
  /// ```swift
  /// let remote = RequestSet(named: "the zoo's web service") { try fetchAnimalsFromServer() }
  /// let old = remote.filter(\.age > 10).sortBy(\.name)   // nothing fetched yet
  /// print(old.count)                                      // fetches, then filters
  /// ```
  ///
  /// Writes through such a set (`update`, `delete`, `firstOrInsert`) throw `.readOnly`:
  /// it has no store to write to.
  /// - Parameters:
  ///   - name: What ``explain()`` and error messages call the source.
  ///   - threads: Where the async API (``async``) runs `read`; by default
  ///     ``StoreThreads/shared``, off Swift's cooperative pool, since `read` may block.
  ///   - read: Returns the records, in the order the set keeps before any sort. What it
  ///     throws, evaluating the set throws.
  /// - Complexity: O(1); `read` runs once per evaluation.
  public init(
    named name: String, threads: StoreThreads? = nil, reading read: @escaping @Sendable () throws -> [Element]
  ) {
    self.init(
      _source: _Source(
        describe: { name }, snapshot: { StoreSnapshot(records: try read()) }, threads: threads),
      _query: _Query())
  }
}
