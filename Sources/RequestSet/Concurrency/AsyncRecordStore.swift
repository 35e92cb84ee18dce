/// A store's writes and reads as `async` calls that run on the store's threads
/// (``RecordStore/asyncThreads``), off Swift's cooperative pool: ``RecordStore/async``.
///
/// A `LogStore`'s `fsync`, SQLite's write transaction and PostgreSQL's round trips then
/// hold a thread the store owns, not one of the few that every task shares.
///
/// ```swift
/// try await store.async.insert(Animal(id: 1, name: "Micky", species: "Cow", age: 3))
/// try await store.async.transaction { tx in
///   tx.save(updatedCow)
///   tx.delete(id: 3)
/// }
/// let micky = try await store.async.fetch(id: 1)
/// ```
///
/// A call cancelled before its work began throws `CancellationError` and changes
/// nothing; a write that has begun commits or rolls back whole, and returns as it would
/// have.
public struct AsyncRecordStore<Element: Record>: Sendable {
  /// The store the calls go to.
  public let store: any RecordStore<Element>

  /// Runs `body` with the store on its threads: several synchronous calls in one hop.
  ///
  /// ```swift
  /// let moved = try await store.async.run { store in
  ///   try store.delete(id: 3)
  ///   try store.save(rex)
  ///   return try store.snapshot().version
  /// }
  /// ```
  /// - Throws: What `body` throws, or `CancellationError` before it began.
  public func run<T: Sendable>(_ body: @escaping @Sendable (any RecordStore<Element>) throws -> T) async throws -> T {
    let store = store
    return try await StoreThreads.run(on: store.asyncThreads, reading: false) { try body(store) }
  }

  /// Inserts a record: ``RecordStore/insert(_:)`` off the calling thread.
  ///
  /// ```swift
  /// try await store.async.insert(calf)
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID`; `CancellationError` before it began.
  public func insert(_ record: Element) async throws { try await run { try $0.insert(record) } }

  /// Inserts several records, all or none of them.
  ///
  /// ```swift
  /// try await store.async.insert(contentsOf: herd)
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID`; `CancellationError` before it began.
  public func insert(contentsOf records: [Element]) async throws {
    try await run { try $0.insert(contentsOf: records) }
  }

  /// Inserts or replaces a record.
  ///
  /// ```swift
  /// try await store.async.save(olderCow)
  /// ```
  /// - Throws: What the store throws; `CancellationError` before it began.
  public func save(_ record: Element) async throws { try await run { try $0.save(record) } }

  /// Deletes the record with this id.
  ///
  /// ```swift
  /// let deleted = try await store.async.delete(id: 3)
  /// ```
  /// - Returns: Whether a record was deleted.
  /// - Throws: What the store throws; `CancellationError` before it began.
  @discardableResult
  public func delete(id: Element.ID) async throws -> Bool { try await run { try $0.delete(id: id) } }

  /// Inserts each record or replaces the stored one with the same key value, in one
  /// commit: `RecordStore.upsert(_:on:merge:)` off the
  /// calling thread.
  ///
  /// ```swift
  /// let result = try await people.async.upsert(batch, on: \.email)
  /// ```
  /// - Returns: How many records were inserted and how many replaced.
  /// - Throws: What the synchronous form throws; `CancellationError` when cancelled before
  ///   it wrote (nothing is written then).
  @discardableResult
  public func upsert<each Value>(
    _ records: [Element], on keyPaths: repeat KeyPath<Element, each Value>,
    merge: (@Sendable (_ stored: Element, _ new: Element) throws -> Element)? = nil
  ) async throws -> UpsertResult {
    let keys = try _upsertKeys(repeat each keyPaths)
    return try await run { try $0._upsert(records, on: keys, merge: merge) }
  }

  /// Inserts each record or replaces the stored one with the same value at string keys,
  /// in one commit, off the calling thread.
  ///
  /// ```swift
  /// try await people.async.upsert(batch, on: "email")
  /// ```
  /// - Returns: How many records were inserted and how many replaced.
  /// - Throws: What the synchronous form throws; `CancellationError` when cancelled before
  ///   it wrote.
  @discardableResult
  public func upsert(
    _ records: [Element], on keys: String...,
    merge: (@Sendable (_ stored: Element, _ new: Element) throws -> Element)? = nil
  ) async throws -> UpsertResult {
    try await run { [keys] in try $0._upsert(records, on: keys, merge: merge) }
  }

  /// Applies changes atomically, in order: ``RecordStore/apply(_:ifVersion:)``.
  ///
  /// ```swift
  /// try await store.async.apply([.insert(calf), .delete(id: 3)])
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` or `.conflict` (nothing applied);
  ///   `CancellationError` before it began.
  public func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64? = nil) async throws {
    try await run { try $0.apply(changes, ifVersion: expectedVersion) }
  }

  /// Collects changes in `body` and applies them together: ``RecordStore/transaction(_:)``.
  ///
  /// ```swift
  /// try await store.async.transaction { tx in
  ///   tx.insert(calf)
  ///   tx.delete(id: 3)
  /// }
  /// ```
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws (nothing applied), ``RequestSetError`` `.duplicateID`;
  ///   `CancellationError` before it began.
  @discardableResult
  public func transaction<Result: Sendable>(
    _ body: @escaping @Sendable (inout RecordTransaction<Element>) throws -> Result
  ) async throws -> Result {
    try await run { try $0.transaction(body) }
  }

  /// The record with this id, or nil.
  ///
  /// ```swift
  /// let micky = try await store.async.fetch(id: 1)
  /// ```
  /// - Throws: What the store throws; `CancellationError`.
  public func fetch(id: Element.ID) async throws -> Element? { try await run { try $0.fetch(id: id) } }
}

extension RecordStore {
  /// The store's writes and reads as `async` calls on its own threads: see
  /// ``AsyncRecordStore``.
  ///
  /// ```swift
  /// try await store.async.insert(calf)
  /// ```
  public var async: AsyncRecordStore<Element> { AsyncRecordStore(store: self) }
}

/// A group query's rows as an `async` call: ``RequestGroups/async``.
///
/// ```swift
/// let rows = try await animals.groupBy("species").aggregate(.count).async.fetch()
/// ```
public struct AsyncRequestGroups<Element: Encodable & Sendable>: Sendable {
  /// The group query.
  public let groups: RequestGroups<Element>

  /// The rows: ``RequestGroups/fetch()`` on the store's threads, group keys then
  /// aggregates in the order given.
  ///
  /// ```swift
  /// let rows = try await animals.groupBy("species").aggregate(.max("age")).async.fetch()
  /// // [["species": "Cat", "max:age": 12], …]
  /// ```
  /// - Throws: ``RequestSetError`` for a bad key or aggregate; `CancellationError`.
  public func fetch() async throws -> [RequestRow] {
    let groups = groups
    return try await StoreThreads.run(on: groups.base._source.asyncThreads, reading: true) { try groups.fetch() }
  }
}

extension RequestGroups {
  /// The rows as an `async` call on the store's threads: see ``AsyncRequestGroups``.
  ///
  /// ```swift
  /// let rows = try await animals.groupBy("species").aggregate(.count).async.fetch()
  /// ```
  public var async: AsyncRequestGroups<Element> { AsyncRequestGroups(groups: self) }
}
