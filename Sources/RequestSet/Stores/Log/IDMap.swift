import Foundation

/// A log index's id → slot map: a dictionary, with integer ids of dynamic records kept
/// apart in a `[Int: Int]`.
///
/// A `[FieldValue: Int]` costs 32 bytes a bucket (a 24-byte key, an 8-byte slot), and a
/// million records take 2^21 buckets: 64 MB, and 96 MB while the table doubles. Most
/// dynamic records have integer ids, which here cost 16 bytes a bucket. Any other id
/// type keeps the one dictionary it always had.
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
  /// Ids equal to an integer, by that integer; only used when `ID` is ``FieldValue``.
  private var ints: [Int: Int] = [:]

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

  /// How many ids the map holds.
  var count: Int { general.count + ints.count }

  /// The slot of an id.
  ///
  /// - Complexity: O(1) on average.
  subscript(id: ID) -> Int? {
    get {
      if let k = Self.intKey(id) { return ints[k] }
      return general[id]
    }
    set {
      if let k = Self.intKey(id) { ints[k] = newValue } else { general[id] = newValue }
    }
  }

  /// Sets an id's slot, returning the slot it had.
  @discardableResult
  mutating func updateValue(_ slot: Int, forKey id: ID) -> Int? {
    if let k = Self.intKey(id) { return ints.updateValue(slot, forKey: k) }
    return general.updateValue(slot, forKey: id)
  }

  /// Removes an id, returning the slot it had.
  @discardableResult
  mutating func removeValue(forKey id: ID) -> Int? {
    if let k = Self.intKey(id) { return ints.removeValue(forKey: k) }
    return general.removeValue(forKey: id)
  }

  /// Makes room for `n` ids in all, in the table that holds most (integer ids first, for
  /// dynamic records).
  mutating func reserveCapacity(_ n: Int) {
    if ID.self == FieldValue.self && ints.count >= general.count {
      ints.reserveCapacity(n - general.count)
    } else {
      general.reserveCapacity(n - ints.count)
    }
  }

  /// The map with every slot changed by `transform`.
  func mapValues(_ transform: (Int) throws -> Int) rethrows -> _IDMap {
    var out = _IDMap()
    out.general = try general.mapValues(transform)
    out.ints = try ints.mapValues(transform)
    return out
  }

  /// Every (id, slot), integer ids of dynamic records last, as `.int` values.
  func makeIterator() -> AnyIterator<(key: ID, value: Int)> {
    var g = general.makeIterator()
    var i = ints.makeIterator()
    return AnyIterator {
      if let next = g.next() { return next }
      guard let (k, slot) = i.next() else { return nil }
      return (unsafeBitCast(FieldValue.int(k), to: ID.self), slot)
    }
  }
}
