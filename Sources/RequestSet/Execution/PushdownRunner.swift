/// A ``QueryPushdownStore`` seen from a request set whose element type need not be a
/// `Record`: the store's calls as closures, made once when the set is created.
struct _PushdownRunner<Element: Sendable>: Sendable {
  /// How `explain()` and errors name the store.
  let storeName: String
  /// Opens one reader: one consistent state of the store for one evaluation.
  let open: @Sendable () throws -> _PushdownReader<Element>
  /// The store's `update(matching:set:)`.
  let update: @Sendable (StoreQuery, [(key: String, value: FieldValue)]) throws -> Int?
  /// The store's `delete(matching:)`.
  let delete: @Sendable (StoreQuery) throws -> Int?
}

extension _PushdownRunner where Element: Record {
  /// The runner of `store`, or nil when it adopts only ``RecordStore``.
  ///
  /// A plain store pays one conformance check of its type (which the runtime caches); only
  /// a pushdown store pays for the cast to the constrained existential.
  init?<Store: RecordStore>(_ store: Store) where Store.Element == Element {
    guard Store.self is any QueryPushdownStore.Type, let pushdown = store as? any QueryPushdownStore<Element>
    else {
      return nil
    }
    self.init(pushdown)
  }

  private init(_ store: any QueryPushdownStore<Element>) {
    storeName = "\(type(of: store))"
    let threads = store.asyncThreads
    open = { _PushdownReader(try store.queryReader(), releasingOn: threads) }
    update = { try store.update(matching: $0, set: $1) }
    delete = { try store.delete(matching: $0) }
  }
}

/// One open ``StoreQueryReader``, its calls as closures; releasing this releases the
/// reader (its read transaction, its connection).
///
/// Releasing a store's reader blocks (SQLite's `ROLLBACK`, PostgreSQL's `COMMIT` round
/// trip, maybe closing a connection), and the last holder of a counted set is often a task:
/// dropped on a thread of Swift's cooperative pool, the reader is released on the store's
/// threads instead (``RecordStore/asyncThreads``), so no task's thread waits for it.
final class _PushdownReader<Element: Sendable>: Sendable {
  let version: UInt64
  let supportCondition: @Sendable (StoreCondition) -> PushdownSupport
  let supportSort: @Sendable (StoreSortKey) -> PushdownSupport
  let supportDistinct: @Sendable (String) -> PushdownSupport
  let count: @Sendable (StoreQuery) throws -> Int
  let records: @Sendable (StoreQuery, (Element) throws -> Bool) throws -> Void
  let explain: @Sendable (StoreQuery) throws -> StoreExplanation
  let aggregate: @Sendable (StoreAggregate, String, StoreQuery) throws -> FieldValue?
  let groups: @Sendable (StoreGroupQuery) throws -> [[FieldValue]]?
  /// Shows the store's first records to the schema probe when the process holds none of
  /// the type (see `_Prepare.witness`).
  let witness: @Sendable () throws -> Void
  /// A snapshot of records the reader returned, in the order received, at its version,
  /// knowing the store's keys and kinds.
  let snapshot: @Sendable ([Element]) -> StoreSnapshot<Element>
  /// The store's keys and kinds (see ``StoreQueryReader/fieldKinds()``), read once.
  private let _kinds: _StoreKinds
  /// Lets the store's reader go (see `_HeldReader.release()`).
  private let _release: @Sendable () -> Void
  /// Where to release the store's reader when this is dropped inside a task.
  private let _threads: StoreThreads?

  /// - Parameter threads: The store's ``RecordStore/asyncThreads``.
  init(_ reader: any StoreQueryReader<Element>, releasingOn threads: StoreThreads?) where Element: Record {
    let version = reader.version
    self.version = version
    // Every call goes through `held`, never holding the reader itself, so that
    // `_release` lets the reader go wherever it runs.
    let held = _HeldReader(reader)
    supportCondition = { (try? held.reader().support(for: $0)) ?? .none(reason: "the reader was released") }
    supportSort = { (try? held.reader().support(for: $0)) ?? .none(reason: "the reader was released") }
    supportDistinct = { (try? held.reader().support(forDistinct: $0)) ?? .none(reason: "the reader was released") }
    count = { try held.reader().count($0) }
    records = { try held.reader().records($0, $1) }
    explain = { try held.reader().explain($0) }
    aggregate = { try held.reader().aggregate($0, of: $1, $2) }
    groups = { try held.reader().groups($0) }
    witness = { try _Prepare.witness(try held.reader()) }
    let kinds = _StoreKinds { try held.reader().fieldKinds() }
    _kinds = kinds
    snapshot = { StoreSnapshot(records: $0, version: version, storeKinds: try? kinds.get()) }
    _release = { held.release() }
    _threads = threads
  }

  deinit {
    // Inside a task: this thread is the cooperative pool's (see the type's discussion).
    guard let threads = _threads, withUnsafeCurrentTask(body: { $0 != nil }) else { return }
    threads.enqueue(_release)
  }

  /// The store's keys and kinds as the engine's checks read them, or nil when the store
  /// keeps none; read from the store once per reader.
  func kinds() throws -> [String: _KindSet]? { try _kinds.get() }
}

/// A store's reader, which ``release()`` lets go on the thread that calls it.
private final class _HeldReader<Element: Record>: Sendable {
  private let state: _Lock<(any StoreQueryReader<Element>)?>

  init(_ reader: any StoreQueryReader<Element>) { state = _Lock(reader) }

  func reader() throws -> any StoreQueryReader<Element> {
    guard let reader = state.withLock({ $0 }) else {
      throw RequestSetError(.closed, "The store's reader was released. Read the set again (refreshed()).")
    }
    return reader
  }

  /// Drops the reader: its transaction ends here, unless a call still runs with it.
  func release() {
    let reader = state.withLock { r -> (any StoreQueryReader<Element>)? in
      defer { r = nil }
      return r
    }
    withExtendedLifetime(reader) {}
  }
}

/// A reader's keys and kinds, read from the store on first use and kept.
private final class _StoreKinds: Sendable {
  private let read: @Sendable () throws -> StoreFieldKinds?
  private let state = _Lock<Result<[String: _KindSet]?, any Error>?>(nil)

  init(_ read: @escaping @Sendable () throws -> StoreFieldKinds?) { self.read = read }

  func get() throws -> [String: _KindSet]? {
    if let known = state.withLock({ $0 }) { return try known.get() }
    let result = Result { try read()?._kindSets }
    state.withLock { $0 = result }
    return try result.get()
  }
}
