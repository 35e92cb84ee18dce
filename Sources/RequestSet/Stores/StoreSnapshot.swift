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
  /// The records, by slot. Slots whose bit in `_live` is clear hold a deleted record.
  let _records: ContiguousArray<Element>
  /// Nil when every slot is live.
  let _live: _Bitset?
  /// The number of live slots.
  let _liveCount: Int
  let _fields: _FieldSource
  /// The store's write counter when the snapshot was taken.
  let _version: UInt64

  init(records: ContiguousArray<Element>, live: _Bitset?, liveCount: Int, fields: _FieldSource, version: UInt64) {
    _records = records
    _live = live
    _liveCount = liveCount
    _fields = fields
    _version = version
  }

  /// A snapshot of records that string keys cannot reach (the element is not `Encodable`).
  ///
  /// - Complexity: O(*n*) to copy the records.
  public init(records: some Sequence<Element>) {
    let array = ContiguousArray(records)
    self.init(records: array, live: nil, liveCount: array.count, fields: .unavailable, version: 0)
  }

  /// A snapshot of `Encodable` records; string-key filters encode each record once, on the
  /// first query that needs them.
  ///
  /// - Complexity: O(*n*) to copy the records.
  public init(records: some Sequence<Element>) where Element: Encodable {
    let array = ContiguousArray(records)
    self.init(
      records: array, live: nil, liveCount: array.count,
      fields: .lazy(_LazyFieldTable(array)), version: 0)
  }

  /// The number of live records.
  public var count: Int { _liveCount }

  /// The number of slots, live or not.
  var _slotCount: Int { _records.count }

  @inline(__always)
  func _isLive(_ slot: Int) -> Bool { _live?[slot] ?? true }

  /// The live slots in store order.
  func _liveSlots() -> [Int] {
    guard let live = _live else { return Array(0..<_records.count) }
    var slots: [Int] = []
    slots.reserveCapacity(_liveCount)
    for s in 0..<_records.count where live[s] { slots.append(s) }
    return slots
  }

  func _fieldTable() throws -> _FieldTable {
    switch _fields {
    case .table(let t): return t
    case .lazy(let box): return try box.table()
    case .unavailable:
      throw RequestSetError(
        .storeUnavailable,
        "\(Element.self) is not Encodable, so its fields cannot be reached by string keys. "
          + "Filter with key paths or closures instead.")
    }
  }
}

/// Where a snapshot's encoded fields come from.
enum _FieldSource: Sendable {
  /// Kept current by the store on every write.
  case table(_FieldTable)
  /// Built on first use from an array of records, then shared by every query on it.
  case lazy(_LazyFieldTable)
  /// The element type is not `Encodable`.
  case unavailable
}

/// A field table built on first use, once, for a fixed array of records.
final class _LazyFieldTable: Sendable {
  private let build: @Sendable () throws -> _FieldTable
  private let state = Mutex<_FieldTable?>(nil)

  init<Element: Encodable & Sendable>(_ records: ContiguousArray<Element>) {
    build = {
      var table = _FieldTable(probedKinds: _probeKinds(Element.self))
      for r in records { table.append(try _FieldEncoder.encode(r)) }
      return table
    }
  }

  func table() throws -> _FieldTable {
    if let t = state.withLock({ $0 }) { return t }
    let t = try build()
    return state.withLock { current in
      if let current { return current }
      current = t
      return t
    }
  }
}

/// The keys a type's `Decodable` conformance reveals, or none for a type that is only
/// `Encodable`.
func _probeKinds<T>(_ type: T.Type) -> [String: _KindSet] {
  guard let decodable = type as? any Decodable.Type else { return [:] }
  return _SchemaProbe.probe(decodable)
}
