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
    open = { _PushdownReader(try store.queryReader()) }
    update = { try store.update(matching: $0, set: $1) }
    delete = { try store.delete(matching: $0) }
  }
}

/// One open ``StoreQueryReader``, its calls as closures; releasing this releases the
/// reader (its read transaction, its connection).
final class _PushdownReader<Element: Sendable>: Sendable {
  let version: UInt64
  let supportCondition: @Sendable (StoreCondition) -> PushdownSupport
  let supportSort: @Sendable (StoreSortKey) -> PushdownSupport
  let supportDistinct: @Sendable (String) -> PushdownSupport
  let supportSearch: @Sendable (StoreTextSearch) -> PushdownSupport
  let supportSubquery: @Sendable (StoreSubquery) -> PushdownSupport
  let supportQuery: @Sendable (StoreQuery) -> PushdownSupport
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
  /// Ends one use of the reader (see ``StoreQueryReader/pause()``).
  let pause: @Sendable () -> Void
  /// Begins another use of a reader kept after ``pause`` (see ``StoreQueryReader/resume()``).
  let resume: @Sendable () -> Void
  /// The store's keys and kinds (see ``StoreQueryReader/fieldKinds()``), read once.
  private let _kinds: _StoreKinds

  init(_ reader: any StoreQueryReader<Element>) where Element: Record {
    let version = reader.version
    self.version = version
    // A date part reaches only a store that says it computes it (see
    // `StoreQueryReader.support(forDatePart:)`).
    supportCondition = { condition in
      if let part = condition.datePart, case .none(let reason) = reader.support(forDatePart: part) {
        return .none(reason: reason)
      }
      return reader.support(for: condition)
    }
    supportSort = { sort in
      // A value through a relation reaches only a reader that says it sorts by one.
      if sort.related != nil { return reader.support(forRelatedSort: sort) }
      if let part = sort.datePart, case .none(let reason) = reader.support(forDatePart: part) {
        return .none(reason: reason)
      }
      return reader.support(for: sort)
    }
    supportDistinct = { key in
      // Keeping one record per month of a date runs in process on every store.
      guard RequestDatePart._split(key) == nil else { return .none(reason: "distinct by a date part runs in process") }
      return reader.support(forDistinct: key)
    }
    supportQuery = { reader.support(for: $0) }
    supportSearch = { reader.support(for: $0) }
    supportSubquery = { reader.support(for: $0) }
    count = { try reader.count($0) }
    records = { try reader.records($0, $1) }
    explain = { try reader.explain($0) }
    aggregate = { try reader.aggregate($0, of: $1, $2) }
    groups = { query in
      for key in query.keys + query.columns.compactMap(\.key) {
        if let part = RequestDatePart._split(key)?.part, case .none = reader.support(forDatePart: part) { return nil }
      }
      return try reader.groups(query)
    }
    witness = { try _Prepare.witness(reader) }
    pause = { reader.pause() }
    resume = { reader.resume() }
    let kinds = _StoreKinds { try reader.fieldKinds() }
    _kinds = kinds
    snapshot = { StoreSnapshot(records: $0, version: version, storeKinds: try? kinds.get()) }
  }

  /// The store's keys and kinds as the engine's checks read them, or nil when the store
  /// keeps none; read from the store once per reader.
  func kinds() throws -> [String: _KindSet]? { try _kinds.get() }
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
