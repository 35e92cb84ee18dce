import Foundation
import Synchronization

/// An embedded, in-memory store: the fastest backend, and the one to use in tests.
///
/// Records live in one contiguous array in store order (the order they were first
/// inserted); saving a record with an existing id replaces it in place. String keys read
/// each field straight from the record where the type's stored properties are its Codable
/// keys, which the first records of the type confirm; a field that is not (a renamed key, a
/// custom `encode(to:)`, a class) is read from encoded fields the store keeps for it alone
/// (see ``RequestSet/explain()``). So a query never decodes records, and a write of a
/// plain struct costs about what appending to an array costs.
///
/// ```swift
/// let store = MemoryStore<Animal>()
/// try store.insert(Animal(id: 1, name: "Micky", species: "Mouse", age: 3))
/// try store.save(Animal(id: 1, name: "Mickey", species: "Mouse", age: 4))   // replaces
/// try store.delete(id: 1)
/// RequestSet(store).count   // 0
/// ```
///
/// The store is safe to share between tasks and threads: every write and snapshot takes
/// one lock, and a snapshot is a copy-on-write view that later writes do not disturb.
///
/// Records that are classes are never shared with the caller: the store keeps a copy of
/// each, decoded from its encoded fields, and every read (`fetch(id:)`, a query) hands out
/// a fresh copy, as a ``LogStore`` does. Changing an object you inserted or read changes
/// nothing stored until you `save(_:)` it.
public final class MemoryStore<Element: Record>: RecordStore, _TextIndexedStore {
  private let _state: _Lock<_MemoryState<Element>>
  let _feed = _CommitFeed<Element>()

  /// The store's own threads for its async calls. A memory store never waits on a disk
  /// or a server, but a query over many records (or a slow closure filter) is work that
  /// would hold a thread of Swift's cooperative pool for its whole run: it runs here, so
  /// the pool stays free and a cancelled task stops it between records.
  ///
  /// ```swift
  /// let cows = try await RequestSet(store).filter("species", value: "Cow").async.fetch()
  /// ```
  ///
  /// A lookup by id (`filter(\.id == v)`, nothing else but a window) is answered on the
  /// calling task instead: it is one dictionary read, cheaper than the hop to a thread.
  public let asyncThreads: StoreThreads? = StoreThreads(
    name: "MemoryStore", count: Swift.max(2, ProcessInfo.processInfo.activeProcessorCount), idleTime: 10,
    answersIDLookupsInPlace: true)

  /// Creates an empty store.
  public init() {
    _state = _Lock(_MemoryState())
  }

  /// Creates a store holding `records`.
  ///
  /// ```swift
  /// let store = try MemoryStore([micky, rex])
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` when two records share an id.
  public convenience init(_ records: some Sequence<Element>) throws {
    self.init()
    try insert(contentsOf: records)
  }

  /// The number of records in the store.
  ///
  /// - Complexity: O(1).
  public var count: Int { _state.withLock { $0.liveCount } }

  /// Inserts a record.
  ///
  /// - Throws: ``RequestSetError`` `.duplicateID` when a record with the same id is
  ///   stored; `.encodingFailed` when the record must be encoded and cannot be;
  ///   `.decodingFailed` when a class record's `init(from:)` cannot read its own encoding.
  /// - Complexity: Amortized O(1) for a struct whose fields are all read from the record;
  ///   O(*f*), *f* the number of encoded fields, for one that must be encoded.
  public func insert(_ record: Element) throws {
    try apply([.insert(record)], ifVersion: nil)
  }

  /// Inserts several records, all or none of them.
  ///
  /// Into an empty store, the records of an `Array` or `ContiguousArray` of structs are
  /// kept in the array's own storage, shared until either side changes it.
  ///
  /// ```swift
  /// try store.insert(contentsOf: [micky, rex])
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` when an id is stored already or occurs
  ///   twice in `records`; `.encodingFailed` when a record must be encoded and cannot be.
  ///   Nothing is inserted then.
  public func insert(contentsOf records: some Sequence<Element>) throws {
    var array = ContiguousArray(records)
    guard !array.isEmpty else { return try _state.withLock { try $0.checkOpen() } }
    let observing = _state.withLock { $0.isEmpty ? $0.toObserve : 0 }
    guard observing > 0 else { return try apply(array.map { .insert($0) }, ifVersion: nil) }
    // An empty store takes the array as it is: no change list, no copy of the records.
    let rows = try _prepare(&array, observing: observing)
    let version = try _state.withLock { state -> UInt64? in
      try state.checkOpen()
      guard state.isEmpty else { return nil }
      try state.adopt(array, rows: rows, model: _model)
      state.version &+= 1
      return state.version
    }
    guard let version else { return try apply(array.map { .insert($0) }, ifVersion: nil) }
    if _feed.isObserved { _publish(version, array.map { .insert($0) }) }
  }

  /// The type's field model: which fields string keys read from the record.
  private let _model = _FieldModel.of(Element.self)

  /// Whether snapshots hand out copies of the records (see `_RecordCopy`), worked out
  /// once rather than for every snapshot.
  private let _copiesOut = _RecordCopy.applies(to: Element.self)

  /// Encodes the records a write must encode, and replaces each with the record a store
  /// keeps (see `_RecordCopy`): those of a class, while the type's field model or record
  /// copy rule checks its first records, the first `observing` records of the write (the
  /// schema probe's witnesses), and every record while some field goes through `Codable`.
  /// The rest are not encoded at all.
  ///
  /// - Returns: Per record, its encoded fields, or nil where none were needed.
  private func _prepare(_ records: inout ContiguousArray<Element>, observing: Int) throws -> [_EncodedRow?] {
    var plan = _model.plan
    var copyNeedsRow = _RecordCopy.needsRow(Element.self)
    var rows: [_EncodedRow?] = []
    for i in records.indices {
      guard plan.needsRows || copyNeedsRow || i < observing else {
        if rows.isEmpty { return [] }  // none needed at all: no list of nils
        rows.append(nil)
        continue
      }
      if rows.isEmpty && i > 0 { rows = Array(repeating: nil, count: i) }
      let row = try _FieldEncoder.encodeRow(records[i])
      if copyNeedsRow {
        let kept = try _RecordCopy.kept(records[i], row: row)
        if _RecordCopy.applies(to: Element.self) || _RecordCopy.isLossy(Element.self) { records[i] = kept }
        copyNeedsRow = _RecordCopy.needsRow(Element.self)
      }
      if plan.checking && plan.shape != nil {
        plan = withUnsafePointer(to: records[i]) { _model.check(UnsafeRawPointer($0), row: row) }
      }
      rows.append(row)
    }
    return rows
  }

  /// Applies changes atomically, in order: all of them or none.
  ///
  /// ```swift
  /// try store.apply([.insert(rex), .save(daisy), .delete(id: 3)], ifVersion: nil)
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` for an insert whose id is taken,
  ///   `.conflict` when `expectedVersion` is stale, `.encodingFailed` for a record that
  ///   must be encoded and cannot be, `.decodingFailed` for a class record whose
  ///   `init(from:)` cannot read its own encoding; nothing is applied then.
  public func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    guard !changes.isEmpty else { return try _state.withLock { try $0.checkOpen() } }
    let observing = _state.withLock { $0.toObserve }
    // Encode outside the lock: it is the expensive part, and it can fail. Records are kept
    // as `_RecordCopy` says; commits carry the caller's objects, so the store's copies are
    // never handed out.
    var written = ContiguousArray<Element>()
    var positions: [Int] = []
    for (i, change) in changes.enumerated() {
      switch change {
      case .insert(let r), .save(let r):
        written.append(r)
        positions.append(i)
      case .delete: continue
      }
    }
    let preparedRows = try _prepare(&written, observing: observing)
    var kept: [Element?] = Array(repeating: nil, count: changes.count)
    var rows: [_EncodedRow?] = Array(repeating: nil, count: changes.count)
    for (w, i) in positions.enumerated() {
      kept[i] = written[w]
      if !preparedRows.isEmpty { rows[i] = preparedRows[w] }
    }
    let version = try _state.withLock { state in
      try state.checkOpen()
      if let expectedVersion, expectedVersion != state.version {
        throw _conflict(expected: expectedVersion, found: state.version)
      }
      try _validate(changes) { state.slots[$0] != nil }
      try state.sync(_model.plan)
      // Another store's writes may have moved a field to Codable since the rows were made.
      if state.fieldPlan.needsEncodedRows || state.toObserve > 0 {
        for i in changes.indices where rows[i] == nil {
          if let r = kept[i] { rows[i] = try _FieldEncoder.encodeRow(r) }
        }
      }
      try state.checkUnique(changes, kept, rows)
      state.reserve(changes.count)
      for (i, change) in changes.enumerated() {
        switch change {
        case .insert: state.append(kept[i]!, row: rows[i])
        case .save(let r):
          if let slot = state.slots[r.id] {
            state.replace(slot: slot, with: kept[i]!, row: rows[i])
          } else {
            state.append(kept[i]!, row: rows[i])
          }
        case .delete(let id): _ = state.delete(id: id)
        }
      }
      state.version &+= 1
      return state.version
    }
    _publish(version, changes)
  }

  /// The record with this id, or nil.
  ///
  /// ```swift
  /// let rex = try store.fetch(id: 3)
  /// ```
  /// - Complexity: O(1).
  public func fetch(id: Element.ID) throws -> Element? {
    try _state.withLock { state in
      try state.checkOpen()
      return state.slots[id].map { state.records[$0] }
    }.map { try _RecordCopy.copy($0) }
  }

  // MARK: Indexes

  /// Creates a secondary index on a key, which queries then use for equality, `IN`,
  /// ranges, prefixes and sorts on it (see ``RequestSet/explain()``). The store keeps it
  /// current on every write.
  ///
  /// ```swift
  /// try store.createIndex("species")
  /// try store.createIndex("name", unique: true)   // a duplicate name now throws on write
  /// ```
  /// Creating an index that exists with the same `unique` setting does nothing.
  /// - Parameters:
  ///   - key: A Codable key, or a dotted path into a nested value (`"owner.city"`).
  ///   - unique: Whether a write that would give two records the same non-nil value
  ///     throws `.uniqueViolation` (nil values are exempt, as in SQL; every NaN is one
  ///     value, as `groupBy` groups it).
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.uniqueViolation` when `unique` and two records share a value; `.invalidIndex`
  ///   when an index on the key exists with the other `unique` setting.
  /// - Complexity: O(*n* log *n*).
  public func createIndex(_ key: String, unique: Bool = false) throws {
    let key = try _CompositeKey.validated([key], typeName: "\(Element.self)")
    try _state.withLock { state in
      try state.checkOpen()
      try state.createIndex(key, unique: unique)
    }
  }

  /// Creates a secondary index on the field a key path names.
  ///
  /// ```swift
  /// try store.createIndex(\.species)
  /// try store.createIndex(\.name, unique: true)
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex` when the key path is not a chain of
  ///   stored properties (use ``createIndex(_:unique:)-(String,_)`` with the Codable key then), and
  ///   whatever the string-key form throws.
  public func createIndex<Value>(_ keyPath: KeyPath<Element, Value>, unique: Bool = false) throws {
    try createIndex(try _indexKey(keyPath), unique: unique)
  }

  /// Creates a composite index on several keys: its entries are ordered by the first
  /// key's value, then the second's, and so on. A query that holds the first keys equal
  /// reads one run of it: a range on the next key (`species == "cat" AND age > 3`), or a
  /// sort on the next key with a limit, which walks the run in order and stops once the
  /// window is full (see ``RequestSet/explain()``).
  ///
  /// ```swift
  /// try store.createIndex("species", "age")
  /// let youngest = RequestSet(store).filter("species", value: "cat").sortBy("age").limit(10)
  /// youngest.explain()   // stage 1: index order on age ASC within equal species of a composite index, …
  /// ```
  /// Creating an index that exists with the same `unique` setting does nothing; an index
  /// on the same keys in another order is another index.
  /// - Parameters:
  ///   - first: The key the entries are ordered by first: a Codable key, or a dotted path.
  ///   - second: The key that orders entries with the same `first` value.
  ///   - more: Further keys, each ordering the entries the keys before it tie.
  ///   - unique: Whether a write that would give two records the same values of every key
  ///     throws `.uniqueViolation` (a record with nil for any key is exempt, as in SQL).
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.invalidIndex` for a key named twice or an index that exists with the other
  ///   `unique` setting; `.uniqueViolation` when `unique` and two records share values.
  /// - Complexity: O(*n* log *n*).
  public func createIndex(_ first: String, _ second: String, _ more: String..., unique: Bool = false) throws {
    try createIndex(on: [first, second] + more, unique: unique)
  }

  /// Creates an index on the keys a list names: one key, or a composite index on several
  /// (see ``createIndex(_:_:_:unique:)-(String,String,_,_)``), for keys known only at run time.
  ///
  /// ```swift
  /// try store.createIndex(on: ["species", "age"])
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex` for an empty list, and whatever the
  ///   one-key and composite forms throw.
  public func createIndex(on keys: [String], unique: Bool = false) throws {
    let key = try _CompositeKey.validated(keys, typeName: "\(Element.self)")
    try _state.withLock { state in
      try state.checkOpen()
      try state.createIndex(key, unique: unique)
    }
  }

  /// Creates a composite index on the fields key paths name (see
  /// ``createIndex(_:_:_:unique:)-(String,String,_,_)``).
  ///
  /// ```swift
  /// try store.createIndex(\.species, \.age)
  /// try store.createIndex(\.owner, \.name, unique: true)   // one name per owner
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex` when a key path is not a chain of stored
  ///   properties, and whatever the string-key form throws.
  public func createIndex<First, Second, each More>(
    _ first: KeyPath<Element, First>, _ second: KeyPath<Element, Second>,
    _ more: repeat KeyPath<Element, each More>, unique: Bool = false
  ) throws {
    let keys = try _indexKeys(first, second, repeat each more)
    try _state.withLock { state in
      try state.checkOpen()
      try state.createIndex(try _CompositeKey.validated(keys, typeName: "\(Element.self)"), unique: unique)
    }
  }

  /// Drops the index on a key.
  ///
  /// ```swift
  /// store.dropIndex("species")   // true
  /// ```
  /// - Returns: Whether there was one.
  @discardableResult
  public func dropIndex(_ key: String) -> Bool {
    _state.withLock { $0.closed ? false : $0.indexes.remove(key: key) }
  }

  /// Drops the composite index on these keys, in this order.
  ///
  /// ```swift
  /// store.dropIndex("species", "age")   // true
  /// ```
  /// - Returns: Whether there was one.
  @discardableResult
  public func dropIndex(_ first: String, _ second: String, _ more: String...) -> Bool {
    dropIndex(on: [first, second] + more)
  }

  /// Drops the index on the keys a list names, in this order.
  ///
  /// ```swift
  /// store.dropIndex(on: ["species", "age"])   // true
  /// ```
  /// - Returns: Whether there was one.
  @discardableResult
  public func dropIndex(on keys: [String]) -> Bool {
    guard !keys.isEmpty else { return false }
    let key = _CompositeKey.identity(keys)
    return _state.withLock { $0.closed ? false : $0.indexes.remove(key: key) }
  }

  /// Creates the store's full-text index on string keys, which text searches
  /// (``RequestSet/filter(matching:in:mode:)``) on those keys then use
  /// (see ``RequestSet/explain()``). The store keeps it current on every write.
  ///
  /// ```swift
  /// try store.createTextIndex(["title", "body"])
  /// try RequestSet(store).filter(matching: "quick fox").fetch()
  /// ```
  /// A store has at most one text index; creating the one it has does nothing. The index
  /// changes no result: a search without it reads each record's text and finds the same
  /// records.
  /// - Parameter keys: Codable keys (or dotted paths) of String or `[String]` fields.
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.invalidIndex` when no key is given, or a text index on other keys exists (drop it
  ///   first with ``dropTextIndex()``).
  /// - Complexity: O(*n*) in the records' text.
  public func createTextIndex(_ keys: [String]) throws {
    try _state.withLock { state in
      try state.checkOpen()
      try state.createTextIndex(keys)
    }
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

  /// Drops the store's full-text index.
  ///
  /// ```swift
  /// store.dropTextIndex()   // true
  /// ```
  /// - Returns: Whether there was one.
  @discardableResult
  public func dropTextIndex() -> Bool {
    _state.withLock { state in
      guard !state.closed, state.textIndex != nil else { return false }
      state.textIndex = nil
      return true
    }
  }

  /// The keys of the store's full-text index, or nil without one.
  ///
  /// ```swift
  /// store.textIndexKeys   // ["title", "body"]
  /// ```
  public var textIndexKeys: [String]? { _state.withLock { $0.textIndex?.keys } }

  /// The keys `filter(matching:)` searches: those of the store's text index.
  public var _textIndexKeys: [String]? { textIndexKeys }

  /// The store's secondary indexes, in the order they were created.
  ///
  /// ```swift
  /// store.indexes.map(\.key)   // ["species", "name"]
  /// ```
  public var indexes: [RequestIndex] { _state.withLock { $0.indexes.descriptions } }

  /// The slot of the record with this id value, when the store is still at `version`.
  private func _slot(for id: FieldValue, at version: UInt64) -> _IDLookup {
    guard let id = _decodeID(id, as: Element.ID.self) else { return .unknown }
    return _state.withLock { state in
      guard state.version == version else { return .unknown }
      return state.slots[id].map { .found($0) } ?? .absent
    }
  }

  /// Inserts the record, or replaces the stored record with the same id in place.
  ///
  /// ```swift
  /// var micky = try RequestSet(store).filter(\.name == "Micky").get()
  /// micky.age += 1
  /// try store.save(micky)
  /// ```
  /// - Throws: ``RequestSetError`` `.encodingFailed` when the record must be encoded and
  ///   cannot be; `.decodingFailed` when a class record's `init(from:)` cannot read its
  ///   own encoding.
  public func save(_ record: Element) throws {
    try apply([.save(record)], ifVersion: nil)
  }

  /// Deletes the record with this id.
  ///
  /// - Returns: Whether a record was deleted; deleting an absent id is not an error.
  /// - Complexity: Amortized O(1).
  @discardableResult
  public func delete(id: Element.ID) throws -> Bool {
    let (deleted, version) = try _state.withLock { state in
      try state.checkOpen()
      guard state.delete(id: id) else { return (false, state.version) }
      state.version &+= 1
      return (true, state.version)
    }
    if deleted { _publish(version, [.delete(id: id)]) }
    return deleted
  }

  /// Every commit from now on, as it happens, with its changes.
  ///
  /// ```swift
  /// for await commit in store.commits() { print(commit.version) }
  /// ```
  /// - Parameter interval: Unused: the store reports commits directly.
  public func commits(polling interval: Duration = .zero) -> AsyncStream<StoreCommit<Element>> {
    _feed.subscribe()
  }

  private func _publish(_ version: UInt64, _ changes: [RecordChange<Element>]) {
    if _feed.isObserved { _feed.publish(StoreCommit(version: version, changes: changes)) }
  }

  /// Closes the store: it lets go of its records, reads and writes nothing more, and ends
  /// every ``commits(polling:)`` stream (so live request sets end too).
  ///
  /// Request sets evaluated before keep their records: a snapshot shares the records, it
  /// does not borrow them. Reads and writes afterwards, including evaluating a request set
  /// that was not evaluated yet, throw `.closed`. Closing twice does nothing.
  ///
  /// ```swift
  /// let all = try RequestSet(store).fetch()
  /// store.close()
  /// try store.insert(calf)           // throws .closed
  /// all.count                        // still there
  /// ```
  public func close() {
    let wasOpen = _state.withLock { state in
      guard !state.closed else { return false }
      state = _MemoryState()
      state.closed = true
      return true
    }
    if wasOpen { _feed.finish() }
  }

  /// The store's current contents.
  ///
  /// - Throws: ``RequestSetError`` `.closed` after ``close()``.
  /// - Complexity: O(1): the snapshot shares storage with the store until the next write.
  public func snapshot() throws -> StoreSnapshot<Element> {
    var snapshot = try _state.withLock { state in
      try state.checkOpen()
      var snapshot = StoreSnapshot(
        records: state.records,
        live: state.liveCount == state.records.count ? nil : state.live,
        liveCount: state.liveCount,
        fields: .stored(_StoredFields(plan: state.fieldPlan, table: state.fields)),
        version: state.version, copiesOut: _copiesOut)
      snapshot._indexes = _IndexAccess(catalog: state.indexes)
      snapshot._indexes?.text = state.textIndex
      return snapshot
    }
    snapshot._indexes?.slotForID = { [weak self] id, version in self?._slot(for: id, at: version) ?? .unknown
    }
    return snapshot
  }
}

/// The error of a read or write on a closed store.
func _closedError(_ store: String) -> RequestSetError {
  RequestSetError(
    .closed,
    "The \(store) was closed and reads and writes nothing any more. Request sets evaluated before close() keep "
      + "their records; open a new store to go on.")
}

func _duplicate(_ id: some Hashable, inBatch: Bool = false) -> RequestSetError {
  RequestSetError(
    .duplicateID,
    inBatch
      ? "The batch holds id \(id) twice. Give each record its own id; nothing was inserted."
      : "A record with id \(id) is already stored. Use save(_:) to replace it, or give the new record another id."
  )
}

/// What a ``MemoryStore`` holds; only touched under its lock.
struct _MemoryState<Element: Record>: Sendable {
  var records = ContiguousArray<Element>()
  var live = _Bitset()
  var liveCount = 0
  var slots: [Element.ID: Int] = [:]
  /// The encoded fields of the keys read through `Codable`, and the kinds of every key.
  var fields: _FieldTable
  /// The field model `fields` is kept for.
  var fieldPlan: _FieldPlan
  /// The reflected keys whose kind `fields` has noted.
  var seenKinds: _SeenKinds
  /// What the schema probe learned from the first record (see `_SchemaProbe`).
  var probed: [String: _KindSet] = [:]
  /// Where each indexed key's value comes from, for the current field model.
  private var routes: [String: _FieldPlan.Route] = [:]
  /// Grows by one with every commit (a batch is one commit).
  var version: UInt64 = 0
  /// Secondary indexes, kept current by every write below.
  var indexes = _IndexCatalog()
  /// The full-text index, kept current by every write below (see TextIndex.swift).
  var textIndex: _TextIndex?
  /// Set by `close()`: every read and write throws `.closed`.
  var closed = false

  func checkOpen() throws {
    if closed { throw _closedError("MemoryStore<\(Element.self)>") }
  }

  /// How many more written records to show the schema probe (see `_SchemaProbe`).
  private(set) var toObserve = _SchemaProbe.witnessLimit

  /// Whether the store has never held a record in any slot.
  var isEmpty: Bool { records.isEmpty }

  init() {
    fields = _FieldTable(probedKinds: [:])
    fieldPlan = _FieldModel.of(Element.self).plan
    seenKinds = _SeenKinds(fieldPlan)
  }

  /// Learns the type's keys from the first record written, and keeps the first few as
  /// witnesses for key paths (see `_SchemaProbe`).
  private mutating func _observe(_ record: Element, _ row: _EncodedRow) {
    let value = row.object
    if toObserve == _SchemaProbe.witnessLimit {
      probed = _SchemaProbe.learn(Element.self, from: value)
      fields.addProbed(probed)
    }
    toObserve -= 1
    if _SchemaProbe.wantsWitness(Element.self) { _SchemaProbe.witness(record, fields: value) }
  }

  /// Moves to the type's current field model when it changed since the store's encoded
  /// fields were made (a field another write found differing from its encoding): encodes
  /// the stored records again for the fields now read through `Codable`.
  ///
  /// - Throws: ``RequestSetError`` `.encodingFailed` when a stored record cannot be encoded.
  mutating func sync(_ plan: _FieldPlan) throws {
    guard plan.generation != fieldPlan.generation else {
      fieldPlan = plan  // the same fields; `checking` may have ended
      return
    }
    var table = _FieldTable(probedKinds: probed)
    var seen = _SeenKinds(plan)
    if plan.needsEncodedRows {
      for s in records.indices {
        table.append(live[s] ? plan.kept(try _FieldEncoder.encodeRow(records[s])) : _EncodedRow(fields: []))
      }
    } else {
      table.appendEmptyRows(records.count)
    }
    records.withUnsafeBufferPointer { buffer in
      for s in buffer.indices where live[s] && !seen.isComplete {
        seen.observe(UnsafeRawPointer(buffer.baseAddress! + s), plan, into: &table)
      }
    }
    fields = table
    fieldPlan = plan
    seenKinds = seen
    _cacheRoutes()
  }

  /// A key's value in a stored slot.
  func value(_ key: String, slot: Int) -> FieldValue {
    value(key, route: route(key), slot: slot)
  }

  /// A key's value in a stored slot, by a route resolved once for many slots.
  func value(_ key: String, route: _FieldPlan.Route, slot: Int) -> FieldValue {
    switch route {
    case .reflected(let read, _, _):
      return records.withUnsafeBufferPointer { read(UnsafeRawPointer($0.baseAddress! + slot)) }
    case .encoded: return fields.value(key, row: slot)
    }
  }

  /// A key's value in a record about to be written, with its encoded fields.
  func value(_ key: String, of record: Element, row: _EncodedRow?) -> FieldValue {
    switch route(key) {
    case .reflected(let read, _, _): return withUnsafePointer(to: record) { read(UnsafeRawPointer($0)) }
    case .encoded: return row?.value(at: key) ?? .null
    }
  }

  private func route(_ key: String) -> _FieldPlan.Route {
    routes[key] ?? fieldPlan.route(key)
  }

  /// Resolves the indexed keys' routes once, for the writes that follow.
  private mutating func _cacheRoutes() {
    routes = [:]
    for index in indexes.indexes { for key in index.keys { routes[key] = fieldPlan.route(key) } }
  }

  mutating func reserve(_ n: Int) {
    records.reserveCapacity(records.count + n)
    slots.reserveCapacity(slots.count + n)
  }

  /// Notes the kinds of the reflected keys a newly written slot holds, until every key
  /// has been seen.
  private mutating func _noteKinds(slot: Int) {
    guard !seenKinds.isComplete else { return }
    let plan = fieldPlan
    records.withUnsafeBufferPointer { buffer in
      seenKinds.observe(UnsafeRawPointer(buffer.baseAddress! + slot), plan, into: &fields)
    }
  }

  /// Takes `array` as the records of a store that has never held one, sharing its storage.
  ///
  /// - Parameter rows: Per record, its encoded fields, or nil; empty when none were made.
  /// - Throws: ``RequestSetError`` `.duplicateID` when two records share an id (nothing
  ///   is taken then), `.encodingFailed` when a record must be encoded and cannot be.
  mutating func adopt(_ array: ContiguousArray<Element>, rows: [_EncodedRow?], model: _FieldModel) throws {
    var newSlots: [Element.ID: Int] = Dictionary(minimumCapacity: array.count)
    for (s, r) in array.enumerated() {
      guard newSlots.updateValue(s, forKey: r.id) == nil else { throw _duplicate(r.id, inBatch: true) }
    }
    try sync(model.plan)
    var rows = rows
    if fieldPlan.needsEncodedRows {
      if rows.isEmpty { rows = Array(repeating: nil, count: array.count) }
      for s in array.indices where rows[s] == nil { rows[s] = try _FieldEncoder.encodeRow(array[s]) }
    }
    var newIndexes = indexes
    if indexes.hasUnique {
      let list: [(id: Element.ID, values: [FieldValue]?)] = array.enumerated().map { s, r in
        (r.id, indexes.indexes.map { $0.value { value($0, of: r, row: rows.isEmpty ? nil : rows[s]) } })
      }
      try newIndexes.checkUnique(
        list, typeName: "\(Element.self)", slotOf: { _ in nil }, storedValue: { _, _ in .null })
    }
    records = array
    slots = newSlots
    for _ in array.indices { live.append(true) }
    liveCount = array.count
    if rows.isEmpty {
      fields.appendEmptyRows(array.count)
    } else {
      for s in array.indices { fields.append(fieldPlan.kept(rows[s] ?? _EncodedRow(fields: []))) }
    }
    for s in array.indices {
      if toObserve > 0, !rows.isEmpty, let row = rows[s] { _observe(array[s], row) }
      _noteKinds(slot: s)
      if seenKinds.isComplete && toObserve == 0 { break }
    }
    for (i, index) in indexes.indexes.enumerated() {
      for s in array.indices {
        newIndexes.update(i, slot: s, old: nil, new: index.value { value($0, slot: s) })
      }
    }
    indexes = newIndexes
    for s in array.indices { _updateText(slot: s, old: nil, new: true) }
  }

  mutating func append(_ record: Element, row: _EncodedRow?) {
    let slot = records.count
    slots[record.id] = slot
    records.append(record)
    live.append(true)
    liveCount += 1
    fields.append(row.map(fieldPlan.kept) ?? _EncodedRow(fields: []))
    if toObserve > 0, let row { _observe(record, row) }
    _noteKinds(slot: slot)
    for (i, index) in indexes.indexes.enumerated() {
      let new = index.value { value($0, slot: slot) }
      indexes.update(i, slot: slot, old: nil, new: new)
    }
    _updateText(slot: slot, old: nil, new: true)
  }

  /// The text index's values of a slot.
  private func _textValues(slot: Int) -> [FieldValue]? {
    textIndex.map { $0.keys.map { value($0, slot: slot) } }
  }

  /// Records a slot's change in the text index: `old` the values before (nil for a new
  /// slot), `new` whether the slot holds a record now.
  private mutating func _updateText(slot: Int, old: [FieldValue]?, new: Bool) {
    guard textIndex != nil else { return }
    let values = new ? _textValues(slot: slot) : nil
    textIndex!.update(slot: slot, old: old, new: values)
  }

  /// Creates the full-text index on `keys`.
  ///
  /// - Throws: `.unknownKey` for a key no record can hold; `.invalidIndex` when a text
  ///   index on other keys exists, or no key is given.
  mutating func createTextIndex(_ keys: [String]) throws {
    if let existing = textIndex {
      if existing.keys == keys { return }
      throw _textIndexExists(existing.keys, keys)
    }
    guard !keys.isEmpty else { throw _textIndexNeedsKeys() }
    for key in keys where fields.kinds[key] == nil && !fields.kinds.isEmpty {
      throw RequestSetError.unknownKey(key, type: Element.self, known: fields.knownKeys)
    }
    textIndex = _TextIndex(keys: keys)
    for s in 0..<records.count where live[s] { _updateText(slot: s, old: nil, new: true) }
    textIndex!.trim()
  }

  mutating func replace(slot: Int, with record: Element, row: _EncodedRow?) {
    var old: [FieldValue] = []
    for index in indexes.indexes { old.append(index.value { value($0, slot: slot) }) }
    let oldText = _textValues(slot: slot)
    records[slot] = record
    fields.replace(row: slot, with: row.map(fieldPlan.kept) ?? _EncodedRow(fields: []))
    if toObserve > 0, let row { _observe(record, row) }
    _noteKinds(slot: slot)
    for (i, index) in indexes.indexes.enumerated() {
      let new = index.value { value($0, slot: slot) }
      indexes.update(i, slot: slot, old: old[i], new: new)
    }
    _updateText(slot: slot, old: oldText, new: true)
  }

  /// Throws `.uniqueViolation` when the changes would give two records one value of a
  /// unique index; `kept` and `rows` are the written records and their encoded fields
  /// (nil for deletes; a row is nil where none was needed).
  mutating func checkUnique(_ changes: [RecordChange<Element>], _ kept: [Element?], _ rows: [_EncodedRow?])
    throws
  {
    guard indexes.hasUnique else { return }
    let all = indexes.indexes
    var list: [(id: Element.ID, values: [FieldValue]?)] = []
    for (i, change) in changes.enumerated() {
      switch change {
      case .insert(let r), .save(let r):
        list.append((r.id, all.map { $0.value { value($0, of: kept[i] ?? r, row: rows[i]) } }))
      case .delete(let id): list.append((id, nil))
      }
    }
    try indexes.checkUnique(
      list, typeName: "\(Element.self)", slotOf: { slots[$0] },
      storedValue: { slot, u in all[u].value { value($0, slot: slot) } })
  }

  /// Creates an index on `key`, or for a composite index on every key its name joins
  /// (see `_CompositeKey`).
  mutating func createIndex(_ key: String, unique: Bool) throws {
    if let existing = indexes.index(for: key) {
      if existing.unique == unique { return }
      throw _indexExists(key, unique: existing.unique)
    }
    // A store that has held no record knows no keys yet (see `_SchemaProbe`).
    for k in _CompositeKey.keys(of: key) {
      guard fields.kinds[k] != nil || fields.kinds.isEmpty else {
        throw RequestSetError.unknownKey(k, type: Element.self, known: fields.knownKeys)
      }
    }
    let keys = _CompositeKey.keys(of: key)
    // Each key's route once: resolving one costs as much as reading thousands of values.
    var keyRoutes: [String: _FieldPlan.Route] = [:]
    for k in keys { keyRoutes[k] = route(k) }
    var entries: [_IndexEntry] = []
    entries.reserveCapacity(liveCount)
    for s in 0..<records.count where live[s] {
      entries.append(
        _IndexEntry(value: _CompositeKey.value(keys) { value($0, route: keyRoutes[$0]!, slot: s) }, slot: s))
    }
    try indexes.add(key: key, unique: unique, entries: entries, typeName: "\(Element.self)")
    _cacheRoutes()
  }

  mutating func delete(id: Element.ID) -> Bool {
    guard let slot = slots.removeValue(forKey: id) else { return false }
    for (i, index) in indexes.indexes.enumerated() {
      let old = index.value { value($0, slot: slot) }
      indexes.update(i, slot: slot, old: old, new: nil)
    }
    _updateText(slot: slot, old: _textValues(slot: slot), new: false)
    live[slot] = false
    liveCount -= 1
    let dead = records.count - liveCount
    if dead > 1024 && dead > liveCount { compact() }
    return true
  }

  /// Drops dead slots once they outnumber live ones, so deletes stay amortized O(1) and
  /// deleted records do not pin memory forever.
  private mutating func compact() {
    var kept: [Int] = []
    kept.reserveCapacity(liveCount)
    for s in 0..<records.count where live[s] { kept.append(s) }
    var newRecords = ContiguousArray<Element>()
    newRecords.reserveCapacity(kept.count)
    var newLive = _Bitset()
    slots.removeAll(keepingCapacity: true)
    for s in kept {
      slots[records[s].id] = newRecords.count
      newRecords.append(records[s])
      newLive.append(true)
    }
    fields.retain(rows: kept)
    if !indexes.isEmpty || textIndex != nil {
      var newSlot = [Int](repeating: -1, count: records.count)
      for (new, old) in kept.enumerated() { newSlot[old] = new }
      indexes.renumber(newSlot)
      textIndex?.renumber(newSlot)
    }
    records = newRecords
    live = newLive
  }
}
