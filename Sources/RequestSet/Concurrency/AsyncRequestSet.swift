/// A request set's reads and writes as `async` calls that never hold the calling task's
/// thread while the store works: ``RequestSet/async``.
///
/// Each call runs the request set's synchronous member of the same name on the store's
/// threads (``RecordStore/asyncThreads``: every built-in store owns some; a set over an
/// array uses ``StoreThreads/shared``) and resumes the caller with its result. The set is
/// the same value: a read evaluates it as the synchronous read would, so `count` or
/// iteration afterwards sees the same snapshot. One exception to where it runs, not to
/// what it does: on a ``MemoryStore``, a read of a lookup by id (`filter(\.id == v)`,
/// nothing else but a window) is answered on the calling task, as one dictionary read
/// costs less than the hop to a thread and back.
///
/// ```swift
/// let cows = animals.filter("species", value: "Cow")
/// let records = try await cows.async.fetch()
/// let howMany = try await cows.async.fetchCount()
/// let oldest = try await cows.async.max(\.age)
/// let renamed = try await cows.async.update("name", value: "Daisy")
/// ```
///
/// Cancelling the task stops the query promptly on every store (SQLite interrupts the
/// statement, PostgreSQL sends a cancel request, the in-process engine stops its scan, and
/// a log's decoding, sorting and a write's changes, between records) and the call throws
/// `CancellationError`. A write through the set that has begun
/// commits or rolls back whole; one cancelled before it began writes nothing.
///
/// The names are the synchronous ones, reached through `async` (as `lazy` reaches the
/// lazy algorithms), so code that calls the synchronous members from `async` functions
/// keeps compiling and meaning what it meant.
public struct AsyncRequestSet<Element: Sendable>: Sendable {
  /// The request set the calls read and write.
  public let set: RequestSet<Element>

  /// Runs `body` with the set on the store's threads and returns its result: the way to
  /// run any synchronous member, or several against one snapshot, without blocking.
  ///
  /// ```swift
  /// let (count, names) = try await animals.async.run { set in
  ///   (set.count, set.map(\.name))                        // one evaluation, one snapshot
  /// }
  /// ```
  /// - Throws: What `body` throws, or `CancellationError`.
  public func run<T: Sendable>(_ body: @escaping @Sendable (RequestSet<Element>) throws -> T) async throws -> T {
    try await _run(reading: true, body)
  }

  func _run<T: Sendable>(reading: Bool, _ body: @escaping @Sendable (RequestSet<Element>) throws -> T) async throws
    -> T
  {
    let set = set
    return try await StoreThreads.run(on: set._source.asyncThreads, reading: reading) { try body(set) }
  }

  /// A read of the set's own records (`body` reads nothing but the evaluated set): on the
  /// store's threads as ``run(_:)`` runs it, or, when the store answers a lookup by id in
  /// place (``StoreThreads/answersIDLookupsInPlace``, a ``MemoryStore``) and the set is
  /// one (`filter(\.id == v)`, nothing else but a window), on the calling task: the set is
  /// evaluated from the id map first (at most one record, no scan), then `body` is the
  /// same synchronous member either way, with the same cancellation.
  func _read<T: Sendable>(_ body: @escaping @Sendable (RequestSet<Element>) throws -> T) async throws -> T {
    let set = set
    var threads = set._source.asyncThreads
    // A cancelled call reads nothing, here as on the threads: it throws before evaluating.
    if threads?.answersIDLookupsInPlace == true, !Task.isCancelled,
      set._cache.evaluateFromIDMap(set._source, set._query)
    {
      threads = nil
    }
    return try await StoreThreads.run(on: threads, reading: true) { try body(set) }
  }

  /// The records, in order: ``RequestSet/fetch()`` off the calling thread.
  ///
  /// ```swift
  /// let cows = try await animals.filter("species", value: "Cow").async.fetch()
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query or an unreadable store;
  ///   `CancellationError`.
  public func fetch() async throws -> [Element] { try await _read { try $0.fetch() } }

  /// The number of records: ``RequestSet/fetchCount()`` off the calling thread.
  ///
  /// ```swift
  /// let adults = try await animals.filter(\.age >= 2).async.fetchCount()
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func fetchCount() async throws -> Int { try await _read { try $0.fetchCount() } }

  /// The single record: ``RequestSet/get()`` off the calling thread.
  ///
  /// ```swift
  /// let micky = try await animals.filter(\.name == "Micky").async.get()
  /// ```
  /// - Throws: ``RequestSetError`` `.notFound` or `.multipleResults`; `CancellationError`.
  public func get() async throws -> Element { try await _read { try $0.get() } }

  /// Whether any record matches: ``RequestSet/fetchExists()`` off the calling thread.
  ///
  /// ```swift
  /// if try await animals.filter("species", value: "Yak").async.fetchExists() { … }
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func fetchExists() async throws -> Bool { try await _read { try $0.fetchExists() } }

  /// The first record, or nil: `first` off the calling thread, with the query's error
  /// thrown rather than trapping.
  ///
  /// ```swift
  /// let youngest = try await animals.sortBy(\.age).async.fetchFirst()
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func fetchFirst() async throws -> Element? {
    try await _read { try $0.validated().first }
  }

  /// The last record, or nil: `last` off the calling thread, with the query's error
  /// thrown rather than trapping.
  ///
  /// ```swift
  /// let oldest = try await animals.sortBy(\.age).async.fetchLast()
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func fetchLast() async throws -> Element? {
    try await _read { try $0.validated().last }
  }

  /// The values at a key path, in order: `values(_:)`
  /// off the calling thread.
  ///
  /// ```swift
  /// let names = try await animals.sortBy(\.name).async.values(\.name)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func values<Value: Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable) async throws -> [Value] {
    try await _read { try $0.values(keyPath) }
  }

  /// The sum at a key path: `sum(_:)` off
  /// the calling thread.
  ///
  /// ```swift
  /// let total = try await animals.async.sum(\.weight)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func sum<Value: AdditiveArithmetic & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable) async throws
    -> Value
  {
    try await _read { try $0.sum(keyPath) }
  }

  /// The smallest value at a key path, or nil for no records.
  ///
  /// ```swift
  /// let youngest = try await animals.async.min(\.age)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func min<Value: Comparable & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable) async throws -> Value? {
    try await _read { try $0.min(keyPath) }
  }

  /// The largest value at a key path, or nil for no records.
  ///
  /// ```swift
  /// let oldest = try await animals.async.max(\.age)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func max<Value: Comparable & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable) async throws -> Value? {
    try await _read { try $0.max(keyPath) }
  }

  /// The mean of integer values at a key path, or nil for no records.
  ///
  /// ```swift
  /// let meanAge = try await animals.async.average(\.age)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func average<Value: BinaryInteger & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable) async throws
    -> Double?
  {
    try await _read { try $0.average(keyPath) }
  }

  /// The mean of floating-point values at a key path, or nil for no records.
  ///
  /// ```swift
  /// let meanWeight = try await animals.async.average(\.weight)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func average<Value: BinaryFloatingPoint & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable)
    async throws -> Double?
  {
    try await _read { try $0.average(keyPath) }
  }
}

extension AsyncRequestSet where Element: Encodable {
  /// The values of string keys, one ``RequestRow`` per record, keys in the order given.
  ///
  /// ```swift
  /// let rows = try await animals.async.values("name", "owner.city")
  /// // [["name": "Micky", "owner.city": "Burbank"], …]
  /// ```
  /// - Throws: ``RequestSetError`` `.unknownKey` and other query errors; `CancellationError`.
  public func values(_ keys: String...) async throws -> [RequestRow] {
    try await run { try $0.values(keys) }
  }

  /// The values of string keys, one ``RequestRow`` per record, keys in the order given.
  ///
  /// ```swift
  /// let rows = try await animals.async.values(["name", "age"])   // [["name": "Micky", "age": 3], …]
  /// ```
  /// - Throws: ``RequestSetError`` `.unknownKey` and other query errors; `CancellationError`.
  public func values(_ keys: [String]) async throws -> [RequestRow] {
    try await run { try $0.values(keys) }
  }

  /// The sum of a string key's values.
  ///
  /// ```swift
  /// let total = try await animals.async.sum("weight")    // .double(…) or .int(…)
  /// ```
  /// - Throws: ``RequestSetError`` for a bad key; `CancellationError`.
  public func sum(_ key: String) async throws -> FieldValue { try await run { try $0.sum(key) } }

  /// The smallest of a string key's values (`.null` for none).
  ///
  /// ```swift
  /// let youngest = try await animals.async.min("age")
  /// ```
  /// - Throws: ``RequestSetError`` for a bad key; `CancellationError`.
  public func min(_ key: String) async throws -> FieldValue { try await run { try $0.min(key) } }

  /// The largest of a string key's values (`.null` for none).
  ///
  /// ```swift
  /// let oldest = try await animals.async.max("age")
  /// ```
  /// - Throws: ``RequestSetError`` for a bad key; `CancellationError`.
  public func max(_ key: String) async throws -> FieldValue { try await run { try $0.max(key) } }

  /// The mean of a string key's numeric values, or nil for none.
  ///
  /// ```swift
  /// let meanAge = try await animals.async.average("age")
  /// ```
  /// - Throws: ``RequestSetError`` for a bad key; `CancellationError`.
  public func average(_ key: String) async throws -> Double? { try await run { try $0.average(key) } }
}

extension AsyncRequestSet where Element: Record {
  /// The ids of the records, in order.
  ///
  /// ```swift
  /// let ids = try await animals.filter(\.age > 3).async.ids()
  /// ```
  /// - Throws: ``RequestSetError`` for a bad query; `CancellationError`.
  public func ids() async throws -> [Element.ID] { try await _read { try $0.ids() } }

  /// Changes every matching record with `transform` and saves them together:
  /// `update(_:)` off the calling thread.
  ///
  /// ```swift
  /// let n = try await animals.filter(\.species == "Cow").async.update { $0.age += 1 }
  /// ```
  /// - Returns: The number of records changed.
  /// - Throws: What the synchronous `update` throws; `CancellationError` before it began
  ///   (nothing written).
  @discardableResult
  public func update(_ transform: @escaping @Sendable (inout Element) throws -> Void) async throws -> Int {
    try await _run(reading: false) { try $0.update(transform) }
  }

  /// Sets a key to a value in every matching record.
  ///
  /// ```swift
  /// let n = try await animals.filter(\.age > 10).async.update("nickname", value: "Old")
  /// ```
  /// - Returns: The number of records changed.
  /// - Throws: What the synchronous `update` throws; `CancellationError`.
  @discardableResult
  public func update(_ key: String, value: (any Encodable & Sendable)?) async throws -> Int {
    try await _run(reading: false) { try $0.update(key, value: value) }
  }

  /// Sets several keys in every matching record.
  ///
  /// ```swift
  /// let n = try await animals.async.update([("age", 1), ("nickname", nil)])
  /// ```
  /// - Returns: The number of records changed.
  /// - Throws: What the synchronous `update` throws; `CancellationError`.
  @discardableResult
  public func update(_ pairs: [(String, (any Encodable & Sendable)?)]) async throws -> Int {
    let pairs = _SendablePairs(pairs)
    return try await _run(reading: false) { try $0.update(pairs.pairs) }
  }

  /// Deletes every matching record.
  ///
  /// ```swift
  /// let gone = try await animals.filter(\.age > 20).async.delete()
  /// ```
  /// - Returns: The number of records deleted.
  /// - Throws: What the synchronous `delete()` throws; `CancellationError`.
  @discardableResult
  public func delete() async throws -> Int { try await _run(reading: false) { try $0.delete() } }

  /// The first matching record, or the one `makeRecord` makes, inserted.
  ///
  /// ```swift
  /// let rex = try await animals.filter(\.name == "Rex").async.firstOrInsert {
  ///   Animal(id: 9, name: "Rex", species: "Dog", age: 1)
  /// }
  /// ```
  /// - Throws: What the synchronous `firstOrInsert(_:)` throws; `CancellationError`.
  public func firstOrInsert(_ makeRecord: @escaping @Sendable () throws -> Element) async throws -> Element {
    try await _run(reading: false) { try $0.firstOrInsert(makeRecord) }
  }
}

extension RequestSet {
  /// The set's reads and writes as `async` calls that run on the store's threads, off
  /// Swift's cooperative pool: see ``AsyncRequestSet``.
  ///
  /// ```swift
  /// let cows = try await animals.filter("species", value: "Cow").async.fetch()
  /// let count = try await animals.async.fetchCount()
  /// ```
  public var async: AsyncRequestSet<Element> { AsyncRequestSet(set: self) }
}

/// Key and value pairs, whose values are `Sendable` (the tuple type is not, as Swift
/// sees it).
struct _SendablePairs: Sendable {
  let pairs: [(String, (any Encodable & Sendable)?)]
  init(_ pairs: [(String, (any Encodable & Sendable)?)]) { self.pairs = pairs }
}
