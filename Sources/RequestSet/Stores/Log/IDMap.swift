import Foundation

/// A log index's id → slot map: a dictionary, with integer ids of dynamic records kept
/// apart in a `[Int: Int]`.
///
/// A `[FieldValue: Int]` costs 32 bytes a bucket (a 24-byte key, an 8-byte slot), and a
/// million records take 2^21 buckets: 64 MB, and 96 MB while the table doubles. Most
/// dynamic records have integer ids, which here cost 16 bytes a bucket. Any other id
/// type keeps the one dictionary it always had.
///
/// Integer ids that come one after another at slots that do too (an import numbered 1,
/// 2, 3, …, or its replay) are kept as a run, three integers, and cost nothing a record;
/// a change to an id of the run (a replace or a delete) moves the run into the table.
///
/// Ids compare as ``FieldValue`` compares them: a number equal to an integer (`.double(3)`,
/// `.uint(3)`, `.decimal(3)`) is that integer's key, so `map[.double(3)]` finds the slot
/// stored under `.int(3)`, as it did in one dictionary. Iteration gives such an id back as
/// `.int(3)`, which is equal to the id stored.
///
/// ```swift
/// var slots = _IDMap<FieldValue>()
/// slots[.int(7)] = 0          // in the integer table
/// slots[.string("k")] = 1     // in the dictionary
/// slots[.double(7)]           // 0
/// ```
struct _IDMap<ID: Hashable & Sendable>: Sendable, Sequence {
  private var general: [ID: Int] = [:]
  /// Ids equal to an integer, by that integer, outside the run; only when `ID` is
  /// ``FieldValue``.
  private var ints: [Int: Int] = [:]
  /// The run: ids `runBase + i` at slots `runSlot + i`, for `i` in `0..<runCount`. No id
  /// of the run is in ``ints``.
  private var runBase = 0
  private var runSlot = 0
  private var runCount = 0
  /// No key of ``ints`` is above this (it may be stale high after removals).
  private var intsMax = Int.min

  init() {}

  /// The integer an id equals, when `ID` is ``FieldValue`` and there is one.
  @inline(__always)
  private static func intKey(_ id: ID) -> Int? {
    guard ID.self == FieldValue.self else { return nil }
    switch unsafeBitCast(id, to: FieldValue.self) {
    case .int(let i): return i
    case .uint(let u): return Int(exactly: u)
    case .double(let d): return Int(exactly: d)
    case .decimal(let d):
      guard !d.isNaN, d.isFinite else { return nil }
      let candidate = NSDecimalNumber(decimal: d).int64Value
      guard let i = Int(exactly: candidate), _Numbers.compare(.decimal(d), .int(i)) == 0 else { return nil }
      return i
    default: return nil
    }
  }

  /// The run's slot for `k`, when `k` is in the run.
  @inline(__always)
  private func runSlot(of k: Int) -> Int? {
    let offset = UInt(bitPattern: k &- runBase)
    return offset < UInt(bitPattern: runCount) ? runSlot + Int(offset) : nil
  }

  @inline(__always)
  private func intSlot(_ k: Int) -> Int? {
    if let s = runSlot(of: k) { return s }
    return ints.isEmpty ? nil : ints[k]
  }

  /// Moves the run into ``ints``, before a change to one of its ids.
  private mutating func dissolveRun() {
    guard runCount > 0 else { return }
    ints.reserveCapacity(ints.count + runCount)
    for i in 0..<runCount { ints[runBase + i] = runSlot + i }
    intsMax = Swift.max(intsMax, runBase + runCount - 1)
    runCount = 0
  }

  @inline(__always)
  private mutating func setInt(_ k: Int, _ slot: Int?) {
    if runSlot(of: k) != nil { dissolveRun() }
    if let slot {
      ints[k] = slot
      intsMax = Swift.max(intsMax, k)
    } else {
      ints[k] = nil
    }
  }

  /// How many ids the map holds.
  var count: Int { general.count + ints.count + runCount }

  /// The slot of an id.
  ///
  /// - Complexity: O(1) on average.
  subscript(id: ID) -> Int? {
    get {
      if let k = Self.intKey(id) { return intSlot(k) }
      return general[id]
    }
    set {
      if let k = Self.intKey(id) { setInt(k, newValue) } else { general[id] = newValue }
    }
  }

  /// The slot an id has; when it has none, gives it `slot` and returns nil.
  ///
  /// A new integer id that follows the run, at the slot that follows the run's, extends
  /// the run without hashing: what every record of an import numbered 1, 2, 3, … does.
  ///
  /// - Complexity: O(1) on average; one hash for an id outside the run.
  mutating func insertIfAbsent(_ slot: Int, forKey id: ID) -> Int? {
    guard let k = Self.intKey(id) else {
      guard let old = general.updateValue(slot, forKey: id) else { return nil }
      general[id] = old
      return old
    }
    if let s = runSlot(of: k) { return s }
    // Whether `k` may be in `ints`: only when it is not above every key there.
    let mayBeInInts = !ints.isEmpty && k <= intsMax
    let (next, overflow) = runBase.addingReportingOverflow(runCount)
    if runCount == 0 || (!overflow && k == next && slot == runSlot + runCount) {
      if !mayBeInInts || ints[k] == nil {
        if runCount == 0 {
          runBase = k
          runSlot = slot
        }
        runCount += 1
        return nil
      }
    }
    if let old = ints.updateValue(slot, forKey: k) {
      ints[k] = old
      return old
    }
    intsMax = Swift.max(intsMax, k)
    return nil
  }

  /// Sets an id's slot, returning the slot it had.
  @discardableResult
  mutating func updateValue(_ slot: Int, forKey id: ID) -> Int? {
    guard let k = Self.intKey(id) else { return general.updateValue(slot, forKey: id) }
    let old = intSlot(k)
    setInt(k, slot)
    return old
  }

  /// Removes an id, returning the slot it had.
  @discardableResult
  mutating func removeValue(forKey id: ID) -> Int? {
    guard let k = Self.intKey(id) else { return general.removeValue(forKey: id) }
    if let s = runSlot(of: k), k == runBase + runCount - 1 {
      runCount -= 1  // the run's last id: the run just gets shorter
      return s
    }
    let old = intSlot(k)
    if old != nil { setInt(k, nil) }
    return old
  }

  /// Makes room for `n` ids in all, in the table that holds most. Integer ids that
  /// extend the run need no room, so a map that holds only a run reserves nothing.
  mutating func reserveCapacity(_ n: Int) {
    let more = n - count
    guard more > 0 else { return }
    if ID.self == FieldValue.self {
      if general.isEmpty && ints.isEmpty { return }  // a run, or nothing yet: wait and see
      if ints.count >= general.count {
        ints.reserveCapacity(ints.count + more)
        return
      }
    }
    general.reserveCapacity(general.count + more)
  }

  /// The map with every slot changed by `transform` (the run goes into the table).
  func mapValues(_ transform: (Int) throws -> Int) rethrows -> _IDMap {
    var out = _IDMap()
    out.general = try general.mapValues(transform)
    out.ints = try ints.mapValues(transform)
    out.intsMax = intsMax
    if runCount > 0 {
      out.ints.reserveCapacity(out.ints.count + runCount)
      for i in 0..<runCount { out.ints[runBase + i] = try transform(runSlot + i) }
      out.intsMax = Swift.max(intsMax, runBase + runCount - 1)
    }
    return out
  }

  /// Every (id, slot): other ids first, then integer ids of dynamic records as `.int`
  /// values.
  func makeIterator() -> AnyIterator<(key: ID, value: Int)> {
    var g = general.makeIterator()
    var i = ints.makeIterator()
    var r = 0
    let (base, slot, n) = (runBase, runSlot, runCount)
    return AnyIterator {
      if let next = g.next() { return next }
      if let (k, s) = i.next() { return (unsafeBitCast(FieldValue.int(k), to: ID.self), s) }
      guard r < n else { return nil }
      defer { r += 1 }
      return (unsafeBitCast(FieldValue.int(base + r), to: ID.self), slot + r)
    }
  }
}
