/// One secondary index's entries: every live slot with its value of the indexed key, in
/// order of value, then slot.
///
/// The entries live in sorted chunks of a few hundred (a two-level B-tree): an insert or
/// a removal moves at most one chunk's entries, a lookup is two binary searches, and a
/// store that copies the index into a snapshot and then writes copies the chunk list and
/// one chunk, not every entry.
///
/// Values that have no place in a total order stay outside the chunks, in ``unordered``:
/// NaN (which compares false with everything), arrays and nested objects (whose element
/// order can disagree with the filters' number comparisons). Every lookup hands them to the
/// planner as candidates for the filter to recheck, so an index never loses a record.
struct _SortedIndex: Sendable {
  /// Chunks of entries in ascending order; none is empty.
  private(set) var chunks: [ContiguousArray<_IndexEntry>] = []
  /// Slots whose value is unordered, ascending.
  private(set) var unordered: [Int] = []
  /// The number of entries, ordered or not.
  private(set) var count = 0
  /// The kinds of value ever entered (a superset of those held now).
  private(set) var kinds = _KindSet()
  /// Whether an integer past 2^53 was ever entered: such values can tie with a Double
  /// that orders between them, so runs of equal values may not be in store order.
  private(set) var hasLossyNumbers = false

  /// How many keys the index orders by: 1, or more for a composite index, whose entries'
  /// values are arrays of one value per key (see CompositeIndex.swift).
  private(set) var arity = 1
  /// For a composite index, the kinds of value each key was given (a superset of those
  /// held now); empty for a one-key index, whose kinds are ``kinds``.
  private(set) var componentKinds: [_KindSet] = []

  /// A chunk splits in two past this size.
  static let maxChunk = 512

  /// An empty index on `arity` keys.
  init(arity: Int = 1) {
    self.arity = arity
    if arity > 1 { componentKinds = Array(repeating: _KindSet(), count: arity) }
  }

  /// An index of these entries, sorted once: O(*n* log *n*).
  init(entries: [_IndexEntry], arity: Int = 1) {
    self.init(arity: arity)
    var ordered: [_IndexEntry] = []
    ordered.reserveCapacity(entries.count)
    for e in entries {
      _noteKinds(e.value)
      if isOrdered(e.value) { ordered.append(e) } else { unordered.append(e.slot) }
    }
    unordered.sort()
    ordered.sort { _IndexOrder.less($0, $1) }
    let half = Self.maxChunk / 2
    var start = 0
    while start < ordered.count {
      let end = min(start + half, ordered.count)
      chunks.append(ContiguousArray(ordered[start..<end]))
      start = end
    }
    count = entries.count
  }

  // MARK: Restoring

  /// Appends an entry after every ordered entry held, for an index restored from entries
  /// stored in order (a log's checkpoint): O(1), where ``insert(_:slot:)`` searches.
  ///
  /// - Returns: False, appending nothing, when the value has no place in the order or the
  ///   entry does not sort after the last one (the stored entries were not in order).
  mutating func appendInOrder(_ entry: _IndexEntry) -> Bool {
    let value = entry.value
    guard isOrdered(value) else { return false }
    if let last = chunks.last?.last, !_IndexOrder.less(last, entry) { return false }
    if chunks.isEmpty || chunks[chunks.count - 1].count >= Self.maxChunk / 2 {
      var chunk = ContiguousArray<_IndexEntry>()
      chunk.reserveCapacity(Self.maxChunk / 2)
      chunks.append(chunk)
    }
    chunks[chunks.count - 1].append(entry)
    count += 1
    _noteKinds(value)
    return true
  }

  /// Appends a slot whose value is unordered, after every one held (see ``appendInOrder(_:)``).
  ///
  /// - Returns: False, appending nothing, when `slot` is not above the last one.
  mutating func appendUnordered(_ slot: Int) -> Bool {
    if let last = unordered.last, last >= slot { return false }
    unordered.append(slot)
    count += 1
    return true
  }

  /// Adds kinds of value to those the index was given: a restored index's unordered values
  /// are not read again, so their kinds come with them.
  mutating func formKinds(_ more: _KindSet) {
    kinds.formUnion(more)
  }

  /// Whether a value has a place in this index's order: an ordered value (see
  /// ``_IndexOrder/isOrdered(_:)``), or for a composite index an array of `arity` of them,
  /// ordered key by key.
  @inline(__always)
  func isOrdered(_ value: FieldValue) -> Bool {
    guard arity > 1 else { return _IndexOrder.isOrdered(value) }
    guard case .array(let items) = value, items.count == arity else { return false }
    return items.allSatisfy(_IndexOrder.isOrdered)
  }

  /// Notes the kinds of an entered value (per key, for a composite index) and whether it
  /// holds an integer past 2^53.
  @inline(__always)
  private mutating func _noteKinds(_ value: FieldValue) {
    kinds.insert(value._kind)
    if arity > 1, case .array(let items) = value, items.count == arity {
      for (k, item) in items.enumerated() {
        componentKinds[k].insert(item._kind)
        if case .int(let i) = item, i.magnitude > 1 << 53 { hasLossyNumbers = true }
      }
    } else if case .int(let i) = value, i.magnitude > 1 << 53 {
      hasLossyNumbers = true
    }
  }

  /// Calls `body` with every ordered entry, in order.
  func forEachOrdered(_ body: (_IndexEntry) throws -> Void) rethrows {
    for chunk in chunks { for e in chunk { try body(e) } }
  }

  // MARK: Writing

  mutating func insert(_ value: FieldValue, slot: Int) {
    count += 1
    _noteKinds(value)
    guard isOrdered(value) else {
      let at = _lowerBound(unordered, slot)
      unordered.insert(slot, at: at)
      return
    }
    let entry = _IndexEntry(value: value, slot: slot)
    guard !chunks.isEmpty else {
      chunks.append([entry])
      return
    }
    // The first chunk whose last entry is not below the new one, or the last chunk.
    var lo = 0
    var hi = chunks.count - 1
    while lo < hi {
      let mid = (lo + hi) / 2
      if _IndexOrder.less(chunks[mid][chunks[mid].count - 1], entry) { lo = mid + 1 } else { hi = mid }
    }
    let c = lo
    let at = Self._position(in: chunks[c]) { _IndexOrder.less($0, entry) }
    chunks[c].insert(entry, at: at)
    if chunks[c].count > Self.maxChunk {
      let half = chunks[c].count / 2
      let tail = ContiguousArray(chunks[c][half...])
      chunks[c].removeSubrange(half...)
      chunks.insert(tail, at: c + 1)
    }
  }

  /// Removes the entry for `slot`, whose value is `value`; false when there is none.
  @discardableResult
  mutating func remove(_ value: FieldValue, slot: Int) -> Bool {
    guard isOrdered(value) else {
      let at = _lowerBound(unordered, slot)
      guard at < unordered.count, unordered[at] == slot else { return false }
      unordered.remove(at: at)
      count -= 1
      return true
    }
    let entry = _IndexEntry(value: value, slot: slot)
    var lo = 0
    var hi = chunks.count
    while lo < hi {
      let mid = (lo + hi) / 2
      if _IndexOrder.less(chunks[mid][chunks[mid].count - 1], entry) { lo = mid + 1 } else { hi = mid }
    }
    guard lo < chunks.count else { return false }
    let c = lo
    let at = Self._position(in: chunks[c]) { _IndexOrder.less($0, entry) }
    guard at < chunks[c].count, chunks[c][at].slot == slot else { return false }
    chunks[c].remove(at: at)
    if chunks[c].isEmpty { chunks.remove(at: c) }
    count -= 1
    return true
  }

  /// Removes the entry for `slot` whatever its value: O(*n*), for when the value is unknown.
  mutating func removeSlot(_ slot: Int) {
    if let at = unordered.firstIndex(of: slot) {
      unordered.remove(at: at)
      count -= 1
      return
    }
    for c in chunks.indices {
      if let at = chunks[c].firstIndex(where: { $0.slot == slot }) {
        chunks[c].remove(at: at)
        if chunks[c].isEmpty { chunks.remove(at: c) }
        count -= 1
        return
      }
    }
  }

  /// Renumbers slots after a store dropped its dead slots: `newSlot[old]` for each live
  /// one. The order is kept, because renumbering keeps the slots' relative order.
  mutating func renumber(_ newSlot: [Int]) {
    for c in chunks.indices {
      for i in chunks[c].indices { chunks[c][i].slot = newSlot[chunks[c][i].slot] }
    }
    for i in unordered.indices { unordered[i] = newSlot[unordered[i]] }
  }

  // MARK: Reading

  /// A place between entries: chunk `chunk`, before entry `offset`.
  struct Position: Equatable, Comparable {
    var chunk: Int
    var offset: Int
    static func < (a: Position, b: Position) -> Bool { (a.chunk, a.offset) < (b.chunk, b.offset) }
  }

  var startPosition: Position { Position(chunk: 0, offset: 0) }
  var endPosition: Position { Position(chunk: chunks.count, offset: 0) }

  /// The first position whose entry does not satisfy `isBefore`, which must hold for a
  /// prefix of the entries (true, then false).
  func partition(_ isBefore: (FieldValue) -> Bool) -> Position {
    var lo = 0
    var hi = chunks.count
    while lo < hi {
      let mid = (lo + hi) / 2
      if isBefore(chunks[mid][chunks[mid].count - 1].value) { lo = mid + 1 } else { hi = mid }
    }
    guard lo < chunks.count else { return endPosition }
    let at = Self._position(in: chunks[lo]) { isBefore($0.value) }
    return Position(chunk: lo, offset: at)
  }

  /// The number of entries between two positions.
  func distance(from a: Position, to b: Position) -> Int {
    guard a < b else { return 0 }
    if a.chunk == b.chunk { return b.offset - a.offset }
    var n = chunks[a.chunk].count - a.offset
    for c in (a.chunk + 1)..<b.chunk { n += chunks[c].count }
    if b.chunk < chunks.count { n += b.offset }
    return n
  }

  /// Calls `body` with each entry from `a` up to `b`, in order, until it returns false.
  func forEach(from a: Position, to b: Position, _ body: (_IndexEntry) throws -> Bool) rethrows {
    var c = a.chunk
    var i = a.offset
    while c < b.chunk || (c == b.chunk && i < b.offset) {
      guard c < chunks.count else { return }
      let chunk = chunks[c]
      let end = c == b.chunk ? b.offset : chunk.count
      while i < end {
        if try !body(chunk[i]) { return }
        i += 1
      }
      c += 1
      i = 0
    }
  }

  /// Calls `body` with each entry from `b` back down to `a`, until it returns false.
  func forEachBackward(from b: Position, to a: Position, _ body: (_IndexEntry) throws -> Bool) rethrows {
    var c = b.chunk
    var i = b.offset
    while c > a.chunk || (c == a.chunk && i > a.offset) {
      if i == 0 {
        c -= 1
        i = chunks[c].count
        continue
      }
      i -= 1
      if c == a.chunk && i < a.offset { return }
      if try !body(chunks[c][i]) { return }
    }
  }

  /// The first index in `chunk` whose entry does not satisfy `isBefore`.
  @inline(__always)
  private static func _position(
    in chunk: ContiguousArray<_IndexEntry>, _ isBefore: (_IndexEntry) -> Bool
  ) -> Int {
    var lo = 0
    var hi = chunk.count
    while lo < hi {
      let mid = (lo + hi) / 2
      if isBefore(chunk[mid]) { lo = mid + 1 } else { hi = mid }
    }
    return lo
  }
}

/// A slot and its value of an indexed key, in 24 bytes.
///
/// An index holds one entry per record, so its size is most of what an index costs: a
/// ``FieldValue`` and an `Int` take 32 bytes, while the values an index orders (nil, Bool,
/// numbers, strings) fit a 17-byte ``_IndexedValue`` and a slot fits 40 bits in what would be
/// padding. At 10,000,000 records that is 80 MB less per index.
struct _IndexEntry: Sendable {
  private var key: _IndexedValue
  private var slotHigh: UInt8
  private var slotLow: UInt32

  /// The most slots an entry can name: 2^40, beyond what any store can hold in memory
  /// (its per-slot tables alone would take terabytes).
  static let slotLimit = 1 << 40

  init(value: FieldValue, slot: Int) {
    precondition(
      slot >= 0 && slot < Self.slotLimit, "a slot past 2^40: the store's tables cannot be that large")
    key = _IndexedValue(value)
    slotHigh = UInt8(truncatingIfNeeded: slot >> 32)
    slotLow = UInt32(truncatingIfNeeded: slot)
  }

  var value: FieldValue { key.value }

  var slot: Int {
    get { Int(slotHigh) << 32 | Int(slotLow) }
    set {
      precondition(newValue >= 0 && newValue < Self.slotLimit, "a slot past 2^40")
      slotHigh = UInt8(truncatingIfNeeded: newValue >> 32)
      slotLow = UInt32(truncatingIfNeeded: newValue)
    }
  }

  /// -1, 0 or 1 by value alone; only for ordered values. The common kinds compare without
  /// building a ``FieldValue``.
  @inline(__always)
  static func compareValues(_ a: _IndexEntry, _ b: _IndexEntry) -> Int {
    switch (a.key, b.key) {
    case (.int(let x), .int(let y)): return x < y ? -1 : (x == y ? 0 : 1)
    case (.string(let x), .string(let y)): return x < y ? -1 : (x == y ? 0 : 1)
    case (.double(let x), .double(let y)): return x < y ? -1 : (x == y ? 0 : 1)
    default: return FieldValue._order(a.value, b.value, .binary)
    }
  }
}

/// A ``FieldValue`` as an index entry keeps it: the kinds an index orders inline (17
/// bytes), anything else (a `Decimal`, which alone would make every entry 4 bytes
/// larger, and the unordered values the index never sorts) in a box.
enum _IndexedValue: Sendable {
  case null
  case bool(Bool)
  case int(Int)
  case uint(UInt64)
  case double(Double)
  case string(String)
  case boxed(_Boxed)

  /// A value that is neither inline nor worth a wider entry for.
  final class _Boxed: Sendable {
    let value: FieldValue
    init(_ value: FieldValue) { self.value = value }
  }

  @inline(__always)
  init(_ value: FieldValue) {
    switch value {
    case .null: self = .null
    case .bool(let b): self = .bool(b)
    case .int(let i): self = .int(i)
    case .uint(let u): self = .uint(u)
    case .double(let d): self = .double(d)
    case .string(let s): self = .string(s)
    case .decimal, .array, .object: self = .boxed(_Boxed(value))
    }
  }

  @inline(__always)
  var value: FieldValue {
    switch self {
    case .null: return .null
    case .bool(let b): return .bool(b)
    case .int(let i): return .int(i)
    case .uint(let u): return .uint(u)
    case .double(let d): return .double(d)
    case .string(let s): return .string(s)
    case .boxed(let box): return box.value
    }
  }
}

@inline(__always)
private func _lowerBound(_ sorted: [Int], _ x: Int) -> Int {
  var lo = 0
  var hi = sorted.count
  while lo < hi {
    let mid = (lo + hi) / 2
    if sorted[mid] < x { lo = mid + 1 } else { hi = mid }
  }
  return lo
}

/// The total order index entries are kept in.
///
/// Kinds order as filters order them (nil < Bool < number < String); within a kind the
/// order is the filters' own: numbers compare exactly across `Int`, `UInt64`, `Double` and
/// `Decimal` (see `_Numbers`), so every filter bound cuts the entries into one run before
/// and one after (see ``_IndexRange``).
enum _IndexOrder {
  /// Whether the value has a place in the order (not NaN, not an array or an object).
  @inline(__always)
  static func isOrdered(_ value: FieldValue) -> Bool {
    switch value {
    case .null, .bool, .int, .uint, .string: return true
    case .double(let d): return !d.isNaN
    case .decimal(let d): return !d.isNaN
    case .array, .object: return false
    }
  }

  @inline(__always)
  static func less(_ a: _IndexEntry, _ b: _IndexEntry) -> Bool {
    let c = _IndexEntry.compareValues(a, b)
    return c != 0 ? c < 0 : a.slot < b.slot
  }
}
