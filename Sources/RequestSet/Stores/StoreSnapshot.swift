import Synchronization

/// An immutable view of a store's records at one moment: what a ``RequestSet`` evaluates.
///
/// A store hands the query engine a snapshot; the engine filters, sorts and windows it.
/// Snapshots are cheap copies (the store's arrays are shared until the store writes
/// again), so an evaluated request set keeps seeing the records it saw, whatever the store
/// does afterwards.
///
/// A backend written outside this package builds its snapshot from its records in store
/// order, and gets the whole query engine for free:
///
/// ```swift
/// final class ArchiveStore: RecordStore {
///   func snapshot() throws -> StoreSnapshot<Animal> {
///     StoreSnapshot(records: try loadEverything())
///   }
///   // insert, save, delete ...
/// }
/// ```
public struct StoreSnapshot<Element: Sendable>: Sendable {
  /// Where the records are: in memory, or read on demand by a backend.
  let _storage: _SnapshotStorage<Element>
  /// Which slots hold a live record; nil when every slot is live.
  let _live: _Bitset?
  /// The number of slots, live or not.
  let _slotCount: Int
  /// The number of live slots.
  let _liveCount: Int
  /// The store's write counter when the snapshot was taken.
  let _version: UInt64
  /// The store's secondary indexes and id lookup as of this snapshot, for the planner.
  var _indexes: _IndexAccess?
  /// Whether `_record(at:)` hands out a fresh copy of an in-memory record: for class
  /// records, so a caller who changes a record it read cannot change the store's (see
  /// `_RecordCopy`).
  let _copiesOut: Bool

  /// - Parameter copiesOut: ``_copiesOut``, when the caller knows it already (a store
  ///   works it out once): finding out costs a few dynamic casts per snapshot.
  init(
    storage: _SnapshotStorage<Element>, slotCount: Int, live: _Bitset?, liveCount: Int, version: UInt64,
    copiesOut: Bool? = nil
  ) {
    _storage = storage
    _slotCount = slotCount
    _live = live
    _liveCount = liveCount
    _version = version
    _copiesOut = copiesOut ?? _RecordCopy.applies(to: Element.self)
  }

  init(
    records: ContiguousArray<Element>, live: _Bitset?, liveCount: Int, fields: _FieldSource, version: UInt64,
    copiesOut: Bool? = nil
  ) {
    self.init(
      storage: .contiguous(records, fields), slotCount: records.count, live: live, liveCount: liveCount,
      version: version, copiesOut: copiesOut)
  }

  /// A snapshot of records that string keys cannot reach (the element is not `Encodable`).
  ///
  /// - Parameters:
  ///   - records: The records, in store order.
  ///   - version: The store's write counter (see ``version``); 0 for plain records.
  /// - Complexity: O(*n*) to copy the records.
  public init(records: some Sequence<Element>, version: UInt64 = 0) {
    let array = ContiguousArray(records)
    self.init(records: array, live: nil, liveCount: array.count, fields: .unavailable, version: version)
  }

  /// A snapshot of `Encodable` records; string-key filters read each field straight from
  /// the records where the type's stored properties are its Codable keys, and encode the
  /// records once, on the first query that needs them, only for the fields that are not
  /// (see "Choosing a store" in the documentation).
  ///
  /// A store written outside the package passes its write counter as `version`: live
  /// request sets over it then see its commits by polling, and writes through a query
  /// check it (see ``RecordStore/apply(_:ifVersion:)``).
  ///
  /// ```swift
  /// StoreSnapshot(records: state.records, version: state.version)
  /// ```
  /// - Parameters:
  ///   - records: The records, in store order.
  ///   - version: The store's write counter (see ``version``); 0 for plain records.
  /// - Complexity: O(*n*) to copy the records.
  public init(records: some Sequence<Element>, version: UInt64 = 0) where Element: Encodable {
    self.init(records: records, version: version, storeKinds: nil)
  }

  /// A snapshot of `Encodable` records a ``QueryPushdownStore`` returned: string keys
  /// know the keys and kinds of the whole store (`storeKinds`), not only those of the
  /// records returned, so a key the store holds elsewhere is no unknown key here.
  init(records: some Sequence<Element>, version: UInt64, storeKinds: [String: _KindSet]?) where Element: Encodable {
    var array = ContiguousArray(records)
    // Records are kept as a store keeps them (see `_RecordCopy`): a class record is copied,
    // so the caller's later changes to its objects cannot make key paths and string keys
    // disagree; a struct that loses a stored value through its encoding is kept as it
    // decodes back. A record whose init(from:) cannot read its own encoding stays as given.
    if Element.self is any Decodable.Type {
      for i in array.indices {
        if i >= _RecordCopy.checkLimit && !_RecordCopy.applies(to: Element.self) && !_RecordCopy.isLossy(Element.self) {
          break
        }
        guard let row = try? _FieldEncoder.encodeRow(array[i]) else { break }
        array[i] = (try? _RecordCopy.kept(array[i], row: row)) ?? array[i]
      }
    }
    _SchemaProbe.witness(contentsOf: array)
    self.init(
      records: array, live: nil, liveCount: array.count,
      fields: .lazy(_LazyFields(array, storeKinds: storeKinds ?? [:])), version: version)
  }

  /// The number of live records.
  public var count: Int { _liveCount }

  /// The store's write counter when the snapshot was taken: it grows with every write, so
  /// a store can tell whether anything changed since (0 for snapshots of plain records).
  public var version: UInt64 { _version }

  @inline(__always)
  func _isLive(_ slot: Int) -> Bool { _live?[slot] ?? true }

  /// The live slots in store order.
  func _liveSlots() -> [Int] {
    guard let live = _live else { return Array(0..<_slotCount) }
    var slots: [Int] = []
    slots.reserveCapacity(_liveCount)
    for s in 0..<_slotCount where live[s] { slots.append(s) }
    return slots
  }

  /// The record in a slot.
  @inline(__always)
  func _record(at slot: Int) throws -> Element {
    switch _storage {
    case .contiguous(let records, _): return _copiesOut ? try _RecordCopy.copy(records[slot]) : records[slot]
    case .external(let source): return try source.record(at: slot)
    }
  }

  /// Whether the records are read from outside memory (a file) as they are needed.
  var _readsFromOutside: Bool {
    if case .external = _storage { return true }
    return false
  }

  /// Shows the first live records of a snapshot that reads them from outside memory to
  /// the schema probe, when the process holds no record of the type yet (at most
  /// `_SchemaProbe.witnessLimit` records read): the step 1 of preparing a query
  /// (`Prepare.swift`) that a store's reader and an array take already, so that a typed
  /// condition's twin is decided by the data, not by whether the process stored a record
  /// of the type before. A record that cannot be read is skipped.
  func _witnessFirstRecords() {
    guard case .external = _storage, !_SchemaProbe.hasWitnesses(Element.self) else { return }
    var shown = 0
    for slot in 0..<_slotCount where _isLive(slot) {
      if shown == _SchemaProbe.witnessLimit { return }
      guard let record = try? _record(at: slot) else { continue }
      guard let encodable = record as? any Encodable else { return }
      Self._witness(encodable)
      shown += 1
    }
  }

  /// `record` is an `Element`, opened as `Encodable`: its type is `Sendable`.
  private static func _witness<T: Encodable>(_ record: T) {
    guard let fields = try? _FieldEncoder.encode(record) else { return }
    _SchemaProbe.witness(record, fields: fields)
  }

  /// Lets go of the memory a long walk over the records made resident (a log's mapped
  /// pages): they are read again from the file, or the page cache, when next needed.
  func _releaseResidentMemory() {
    if case .external(let source) = _storage { source.releaseResidentMemory() }
  }

  /// What string keys can reach in this snapshot.
  func _fields() throws -> any _FieldAccess {
    switch _storage {
    case .contiguous(let records, .stored(let stored)): return _RecordFields(records: records, stored: stored)
    case .contiguous(let records, .lazy(let box)): return _RecordFields(records: records, stored: try box.fields())
    case .contiguous(_, .unavailable):
      throw RequestSetError(
        .storeUnavailable,
        "\(Element.self) is not Encodable, so its fields cannot be reached by string keys. "
          + "Filter with key paths or closures instead.")
    case .external(let source): return try source.fields()
    }
  }

  /// What string keys can reach, when that costs no more than a look-up: nil for records
  /// in an array whose fields no query has needed yet (learning their kinds, or encoding
  /// the fields read through `Codable`, takes a pass over the records), and for records
  /// that are not `Encodable`.
  func _fieldsAtHand() -> (any _FieldAccess)? {
    switch _storage {
    case .contiguous(let records, .stored(let stored)): return _RecordFields(records: records, stored: stored)
    case .contiguous(let records, .lazy(let box)): return box.built.map { _RecordFields(records: records, stored: $0) }
    case .contiguous(_, .unavailable): return nil
    case .external(let source): return try? source.fields()
    }
  }
}

/// Where a snapshot's records live.
enum _SnapshotStorage<Element: Sendable>: Sendable {
  /// In memory, by slot, with the fields string keys reach.
  case contiguous(ContiguousArray<Element>, _FieldSource)
  /// Read (and decoded) on demand by a backend such as a file-backed store.
  case external(any _ExternalRecords<Element>)
}

/// A backend's records, read on demand: the engine asks for a record only when a typed
/// filter, a closure, a predicate or the caller needs it, and reads string-key fields
/// through ``fields()`` without decoding records at all.
protocol _ExternalRecords<Element>: Sendable {
  associatedtype Element: Sendable
  /// Decodes the record in a live slot.
  func record(at slot: Int) throws -> Element
  /// Field access by string key for this snapshot.
  func fields() throws -> any _FieldAccess
  /// Lets go of memory that reading records made resident and that can be read again
  /// (a file's mapped pages); nothing by default.
  func releaseResidentMemory()
}

extension _ExternalRecords {
  func releaseResidentMemory() {}
}

/// Reads records' fields by string key: the store's side of a string-key filter or sort.
protocol _FieldAccess {
  /// Every key a string filter may name, with the kinds of value seen there (merged with
  /// what the type probe said).
  var kinds: [String: _KindSet] { get }
  /// A reader of one key's value by slot, or nil when no record holds the key (every
  /// record reads as nil). Called once per key per evaluation; the reader runs per record.
  func reader(for key: String) -> ((Int) throws -> FieldValue)?
  /// A test of `condition` by slot that the store runs on its own representation without
  /// building the field's value (a `LogStore` compares a string's bytes in place), or nil
  /// to read values with `reader(for:)`. Must answer as `condition.matches` would.
  func matcher(for condition: _FieldCondition) -> ((Int) throws -> Bool)?
}

extension _FieldAccess {
  /// Every key, sorted, for error messages.
  var knownKeys: [String] { kinds.keys.sorted() }

  /// `key` cut after as many dotted names as the deepest known key has, plus one: no
  /// longer prefix of it can be a known key. Code that looks up a key's prefixes starts
  /// from here, so a key of thousands of names (typed in, or fuzzed) costs one pass over
  /// the known keys instead of a lookup, each hashing the prefix, per name (quadratic).
  ///
  /// With known keys `owner` and `owner.city`, `a.b.c.d` becomes `a.b.c`.
  func _prefixesWorthLookingUp(_ key: String) -> Substring {
    let deepest = kinds.keys.reduce(0) { Swift.max($0, $1.utf8.reduce(1) { $1 == 0x2E ? $0 + 1 : $0 }) }
    var names = 1
    for i in key.utf8.indices where key.utf8[i] == 0x2E {
      names += 1
      if names > deepest + 1 { return key[..<i] }
    }
    return key[...]
  }

  func matcher(for condition: _FieldCondition) -> ((Int) throws -> Bool)? { nil }
}

extension _FieldTable: _FieldAccess {
  func reader(for key: String) -> ((Int) throws -> FieldValue)? {
    guard let column = column(key) else { return nil }
    return { column[$0] }
  }
}

/// Where a snapshot's in-memory fields come from.
enum _FieldSource: Sendable {
  /// Kept current by the store on every write.
  case stored(_StoredFields)
  /// Built on first use from an array of records, then shared by every query on it.
  case lazy(_LazyFields)
  /// The element type is not `Encodable`.
  case unavailable
}
