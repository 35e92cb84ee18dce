import Synchronization

/// A lazy, chainable query over a store's records: Django's QuerySet for Swift.
///
/// A request set accumulates filters, sorts, limits and offsets, and runs nothing until
/// you read it: the first `count`, subscript, iteration, `first`, `last`, ``fetch()`` or
/// ``get()`` evaluates it against a snapshot of the store, and from then on every read of
/// that request set sees that same snapshot. Every builder returns a new request set and
/// leaves the receiver as it was.
///
/// ```swift
/// let store = MemoryStore<Animal>()
/// try store.insert(contentsOf: zoo)
///
/// let animals = RequestSet(store)
/// let oldest = animals
///   .filter(\.species == "Cow")
///   .filter("name", value: "Rex", mode: .or)      // (species == "Cow") OR name == "Rex"
///   .sortBy(\.age, order: .descending)
///   .limit(3)
///
/// for animal in oldest { print(animal.name) }      // evaluates here, once
/// oldest.count                                     // same snapshot, no new query
/// ```
///
/// `RequestSet` is a `RandomAccessCollection` with `Int` indices, so it works with
/// `for`-`in`, subscripts and every collection algorithm. Errors in a query (an unknown
/// key, a value that cannot match its field) are thrown by ``fetch()`` and ``get()``; the
/// collection members cannot throw, so they stop the program with the same message.
public struct RequestSet<Element: Sendable>: Sendable {
  let _source: _Source<Element>
  @usableFromInline var _query: _Query<Element>
  /// Shared by copies of this value, never by a derived request set.
  let _cache: _ResultCache<Element>

  init(_source: _Source<Element>, _query: _Query<Element>) {
    self._source = _source
    self._query = _query
    self._cache = _ResultCache()
  }

  /// Every record of a store, in store order.
  ///
  /// ```swift
  /// let animals = RequestSet(store)
  /// ```
  /// - Complexity: O(1); nothing is read until the set is evaluated.
  public init<Store: RecordStore>(_ store: Store) where Store.Element == Element {
    self.init(
      _source: _Source(
        describe: { "\(type(of: store))" }, snapshot: { try store.snapshot() }, store: store,
        pushdown: _PushdownRunner(store), threads: store.asyncThreads),
      _query: _Query())
  }

  /// A read-only request set over a fixed array.
  ///
  /// ```swift
  /// let fixed = RequestSet([micky, rex, daisy])
  /// fixed.filter("species", value: "Cow").count   // 1
  /// ```
  /// String keys encode each element once, on the first query that uses them.
  public init(_ elements: some Sequence<Element>) where Element: Encodable {
    let snapshot = StoreSnapshot(records: elements)
    self.init(_source: _Source(describe: { "Array<\(Element.self)>" }, snapshot: { snapshot }), _query: _Query())
  }

  /// A read-only request set over a fixed array of elements that are not `Encodable`;
  /// filter and sort them with key paths and closures.
  ///
  /// ```swift
  /// RequestSet([3, 1, 2]).sortBy(\.self).first   // 1
  /// ```
  public init(_ elements: some Sequence<Element>) {
    let snapshot = StoreSnapshot(records: elements)
    self.init(_source: _Source(describe: { "Array<\(Element.self)>" }, snapshot: { snapshot }), _query: _Query())
  }

  /// Returns a copy with `body` applied to its query and a fresh, unevaluated result.
  @usableFromInline
  func _with(_ body: (inout _Query<Element>) -> Void) -> RequestSet {
    var query = _query
    body(&query)
    return RequestSet(_source: _source, _query: query)
  }

  /// The same query, unevaluated: reading it takes a new snapshot and sees writes made
  /// since this set was evaluated.
  ///
  /// ```swift
  /// let all = RequestSet(store)
  /// all.count              // 3
  /// try store.insert(rex)
  /// all.count              // still 3: one snapshot
  /// all.refreshed().count  // 4
  /// ```
  public func refreshed() -> RequestSet {
    RequestSet(_source: _source, _query: _query)
  }
}

/// Where a request set's records come from.
struct _Source<Element: Sendable>: Sendable {
  /// How explain() names the source; written on demand, since naming a type costs more
  /// than an indexed lookup.
  let describe: @Sendable () -> String
  var name: String { describe() }
  let snapshot: @Sendable () throws -> StoreSnapshot<Element>
  /// The store, for writes through the query; nil for a plain array.
  var store: (any Sendable)? = nil
  /// The store's pushdown seam, when it adopts ``QueryPushdownStore``: evaluation then
  /// runs through one of its readers (see `_Pushdown`).
  var pushdown: _PushdownRunner<Element>? = nil
  /// The version a read of a store's past reads (see `RequestSet(_:asOf:)`): such a set
  /// cannot write.
  var pastVersion: UInt64? = nil
  /// The store's ``RecordStore/asyncThreads``.
  var threads: StoreThreads? = nil

  /// Where the async API runs the set's reads: the store's threads (nil: on the calling
  /// task, as the store asks), the threads a read-only source names, or the shared ones
  /// for a set over an array.
  var asyncThreads: StoreThreads? {
    store == nil && pastVersion == nil ? threads ?? StoreThreads.shared : threads
  }
}
