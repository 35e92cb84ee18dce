import Synchronization

/// An embedded, in-memory store: the fastest backend, and the one to use in tests.
///
/// Records live in one contiguous array in store order (the order they were first
/// inserted); saving a record with an existing id replaces it in place. Each write also
/// records the record's encoded fields, so string-key queries never decode records.
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
public final class MemoryStore<Element: Record>: RecordStore {
  private let _state: _Lock<_MemoryState<Element>>
  let _feed = _CommitFeed<Element>()

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
  ///   stored; `.encodingFailed` when the record cannot be encoded;
  ///   `.decodingFailed` when a class record's `init(from:)` cannot read its own encoding.
  /// - Complexity: Amortized O(*f*), *f* the number of encoded fields.
  public func insert(_ record: Element) throws {
    let fields = try _FieldEncoder.encodeRow(record)
    // A class record is kept as a copy of its own, a struct that loses a stored value
    // through its encoding as it decodes back (see `_RecordCopy`); commits carry the
    // caller's object, so the store's copy is never handed out.
    let kept = try _RecordCopy.kept(record, row: fields)
    let version = try _state.withLock { state in
      try state.checkOpen()
      guard state.slots[record.id] == nil else { throw _duplicate(record.id) }
      try state.checkUnique([.insert(record)], [fields])
      state.append(kept, fields: fields)
      state.version &+= 1
      return state.version
    }
    _publish(version, [.insert(record)])
  }

  /// Inserts several records, all or none of them.
  ///
  /// ```swift
  /// try store.insert(contentsOf: [micky, rex])
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` when an id is stored already or occurs
  ///   twice in `records`; `.encodingFailed` when a record cannot be encoded. Nothing is
  ///   inserted then.
  public func insert(contentsOf records: some Sequence<Element>) throws {
    try apply(records.map { .insert($0) }, ifVersion: nil)
  }

  /// Applies changes atomically, in order: all of them or none.
  ///
  /// ```swift
  /// try store.apply([.insert(rex), .save(daisy), .delete(id: 3)], ifVersion: nil)
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` for an insert whose id is taken,
  ///   `.conflict` when `expectedVersion` is stale, `.encodingFailed` for a record that
  ///   cannot be encoded, `.decodingFailed` for a class record whose `init(from:)` cannot
  ///   read its own encoding; nothing is applied then.
  public func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    guard !changes.isEmpty else { return try _state.withLock { try $0.checkOpen() } }
    // Encode outside the lock: it is the expensive part, and it can fail.
    let fields: [_EncodedRow?] = try changes.map { change in
      switch change {
      case .insert(let r), .save(let r): return try _FieldEncoder.encodeRow(r)
      case .delete: return nil
      }
    }
    // Records are kept as `insert(_:)` keeps them (see `_RecordCopy`); commits carry the
    // caller's objects, so the store's copies are never handed out.
    let kept = try zip(changes, fields).map { (change, row) -> RecordChange<Element> in
      switch change {
      case .insert(let r): return .insert(try _RecordCopy.kept(r, row: row!))
      case .save(let r): return .save(try _RecordCopy.kept(r, row: row!))
      case .delete: return change
      }
    }
    let version = try _state.withLock { state in
      try state.checkOpen()
      if let expectedVersion, expectedVersion != state.version {
        throw _conflict(expected: expectedVersion, found: state.version)
      }
      try _validate(changes) { state.slots[$0] != nil }
      try state.checkUnique(changes, fields)
      state.reserve(changes.count)
      for (change, f) in zip(kept, fields) {
        switch change {
        case .insert(let r): state.append(r, fields: f!)
        case .save(let r):
          if let slot = state.slots[r.id] { state.replace(slot: slot, with: r, fields: f!) } else { state.append(r, fields: f!) }
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
  ///     throws `.uniqueViolation` (nil values are exempt, as in SQL).
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key no record can hold;
  ///   `.uniqueViolation` when `unique` and two records share a value; `.invalidIndex`
  ///   when an index on the key exists with the other `unique` setting.
  /// - Complexity: O(*n* log *n*).
  public func createIndex(_ key: String, unique: Bool = false) throws {
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
  /// - Throws: ``RequestSetError`` `.encodingFailed` when the record cannot be encoded;
  ///   `.decodingFailed` when a class record's `init(from:)` cannot read its own encoding.
  public func save(_ record: Element) throws {
    let fields = try _FieldEncoder.encodeRow(record)
    let kept = try _RecordCopy.kept(record, row: fields)
    let version = try _state.withLock { state in
      try state.checkOpen()
      try state.checkUnique([.save(record)], [fields])
      if let slot = state.slots[record.id] {
        state.replace(slot: slot, with: kept, fields: fields)
      } else {
        state.append(kept, fields: fields)
      }
      state.version &+= 1
      return state.version
    }
    _publish(version, [.save(record)])
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
        fields: .table(state.fields),
        version: state.version)
      snapshot._indexes = _IndexAccess(catalog: state.indexes)
      return snapshot
    }
    snapshot._indexes?.slotForID = { [weak self] id, version in self?._slot(for: id, at: version) ?? .unknown }
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
      : "A record with id \(id) is already stored. Use save(_:) to replace it, or give the new record another id.")
}

/// What a ``MemoryStore`` holds; only touched under its lock.
struct _MemoryState<Element: Record>: Sendable {
  var records = ContiguousArray<Element>()
  var live = _Bitset()
  var liveCount = 0
  var slots: [Element.ID: Int] = [:]
  var fields: _FieldTable
  /// Grows by one with every commit (a batch is one commit).
  var version: UInt64 = 0
  /// Secondary indexes, kept current by every write below.
  var indexes = _IndexCatalog()
  /// Set by `close()`: every read and write throws `.closed`.
  var closed = false

  func checkOpen() throws {
    if closed { throw _closedError("MemoryStore<\(Element.self)>") }
  }

  /// How many more written records to show the schema probe (see `_SchemaProbe`).
  private var toObserve = _SchemaProbe.witnessLimit

  init() {
    fields = _FieldTable(probedKinds: [:])
  }

  /// Learns the type's keys from the first record written, and keeps the first few as
  /// witnesses for key paths (see `_SchemaProbe`).
  private mutating func _observe(_ record: Element, _ row: _EncodedRow) {
    let value = row.object
    if toObserve == _SchemaProbe.witnessLimit { fields.addProbed(_SchemaProbe.learn(Element.self, from: value)) }
    toObserve -= 1
    if _SchemaProbe.wantsWitness(Element.self) { _SchemaProbe.witness(record, fields: value) }
  }

  mutating func reserve(_ n: Int) {
    records.reserveCapacity(records.count + n)
    slots.reserveCapacity(slots.count + n)
  }

  mutating func append(_ record: Element, fields value: _EncodedRow) {
    let slot = records.count
    slots[record.id] = slot
    records.append(record)
    live.append(true)
    liveCount += 1
    fields.append(value)
    if toObserve > 0 { _observe(record, value) }
    for (i, index) in indexes.indexes.enumerated() {
      indexes.update(i, slot: slot, old: nil, new: fields.value(index.key, row: slot))
    }
  }

  mutating func replace(slot: Int, with record: Element, fields value: _EncodedRow) {
    let old = indexes.indexes.map { fields.value($0.key, row: slot) }
    records[slot] = record
    fields.replace(row: slot, with: value)
    if toObserve > 0 { _observe(record, value) }
    for (i, index) in indexes.indexes.enumerated() {
      indexes.update(i, slot: slot, old: old[i], new: fields.value(index.key, row: slot))
    }
  }

  /// Throws `.uniqueViolation` when the changes would give two records one value of a
  /// unique index; `rows` are the changed records' fields (nil for deletes).
  func checkUnique(_ changes: [RecordChange<Element>], _ rows: [_EncodedRow?]) throws {
    guard indexes.hasUnique else { return }
    let keys = indexes.indexes.map(\.key)
    let list: [(id: Element.ID, values: [FieldValue]?)] = zip(changes, rows).map { change, row in
      switch change {
      case .insert(let r), .save(let r): return (r.id, keys.map { row?.value(at: $0) ?? .null })
      case .delete(let id): return (id, nil)
      }
    }
    try indexes.checkUnique(
      list, typeName: "\(Element.self)", slotOf: { slots[$0] }, storedValue: { fields.value(keys[$1], row: $0) })
  }

  mutating func createIndex(_ key: String, unique: Bool) throws {
    if let existing = indexes.index(for: key) {
      if existing.unique == unique { return }
      throw _indexExists(key, unique: existing.unique)
    }
    // A store that has held no record knows no keys yet (see `_SchemaProbe`).
    guard fields.kinds[key] != nil || fields.kinds.isEmpty else {
      throw RequestSetError.unknownKey(key, type: Element.self, known: fields.knownKeys)
    }
    var entries: [_IndexEntry] = []
    entries.reserveCapacity(liveCount)
    for s in 0..<records.count where live[s] { entries.append(_IndexEntry(value: fields.value(key, row: s), slot: s)) }
    try indexes.add(key: key, unique: unique, entries: entries, typeName: "\(Element.self)")
  }

  mutating func delete(id: Element.ID) -> Bool {
    guard let slot = slots.removeValue(forKey: id) else { return false }
    for (i, index) in indexes.indexes.enumerated() {
      indexes.update(i, slot: slot, old: fields.value(index.key, row: slot), new: nil)
    }
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
    if !indexes.isEmpty {
      var newSlot = [Int](repeating: -1, count: records.count)
      for (new, old) in kept.enumerated() { newSlot[old] = new }
      indexes.renumber(newSlot)
    }
    records = newRecords
    live = newLive
  }
}
