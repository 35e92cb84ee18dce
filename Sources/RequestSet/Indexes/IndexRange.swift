/// The run of an index's entries that one condition can match.
///
/// Each bound is a test that holds for a prefix of the entries (see ``_IndexOrder``), so
/// finding a run is two binary searches.
enum _IndexRange: Sendable {
  /// `key == value`: the entries equal to an ordered value.
  case equal(FieldValue)
  /// Values of one kind between optional bounds: `key > 3`, `key BETWEEN {"a", "m"}`.
  case between(
    lower: FieldValue?, lowerInclusive: Bool, upper: FieldValue?, upperInclusive: Bool, kind: _FieldKind)
  /// Strings starting with a prefix; a superset, which the filter rechecks.
  case prefix(String)
  /// Nothing can match (`key < nil`, or BETWEEN bounds of two kinds).
  case empty

  /// The runs a string-key condition can match, when the index can answer it: plain
  /// comparisons (but `!=`), BETWEEN and IN without options or collations, and BEGINSWITH.
  /// Returns nil for anything else. `exact` is false when the run is a superset.
  static func runs(for c: _FieldCondition) -> (runs: [_IndexRange], exact: Bool)? {
    guard c.quantifier == nil, !c.countsElements, c.datePart == nil, c.options.isEmpty, c.collation == .binary
    else { return nil }
    switch c.op {
    case .compare(let comparison):
      return compare(comparison, c.value).map { ([$0], true) }
    case .between:
      guard case .array(let bounds) = c.value, bounds.count == 2 else { return nil }
      let (lo, hi) = (bounds[0], bounds[1])
      guard _IndexOrder.isOrdered(lo), _IndexOrder.isOrdered(hi) else { return nil }
      if lo == .null || hi == .null || lo._kind != hi._kind { return ([.empty], true) }
      return (
        [.between(lower: lo, lowerInclusive: true, upper: hi, upperInclusive: true, kind: lo._kind)], true
      )
    case .in:
      guard case .array(let items) = c.value, items.allSatisfy(_IndexOrder.isOrdered) else { return nil }
      return (Set(items).map { .equal($0) }, true)
    case .text(.beginsWith):
      guard case .string(let p) = c.value else { return nil }
      return ([.prefix(p)], false)
    case .text:
      return nil
    }
  }

  /// The run for `key <comparison> value`, or nil for `!=` and unordered values.
  static func compare(_ comparison: RequestComparison, _ value: FieldValue) -> _IndexRange? {
    guard _IndexOrder.isOrdered(value) else {
      // NaN orders with nothing; arrays and objects stay out of indexes.
      if _Numbers.isNaN(value), comparison != .notEqual { return .empty }
      return nil
    }
    switch comparison {
    case .equal: return .equal(value)
    case .notEqual: return nil
    case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
      // An ordering with nil is false, as in SQL.
      if value == .null { return .empty }
      let inclusive = comparison == .lessThanOrEqual || comparison == .greaterThanOrEqual
      if comparison == .lessThan || comparison == .lessThanOrEqual {
        return .between(
          lower: nil, lowerInclusive: true, upper: value, upperInclusive: inclusive, kind: value._kind)
      }
      return .between(
        lower: value, lowerInclusive: inclusive, upper: nil, upperInclusive: true, kind: value._kind)
    }
  }

  /// The run both ranges select, for two `between` runs; nil for other shapes. Bounds
  /// compare as the filters compare them, since the run's ends are found that way.
  func intersection(_ other: _IndexRange) -> _IndexRange? {
    guard case .between(let lo1, let li1, let hi1, let ui1, let kind) = self,
      case .between(let lo2, let li2, let hi2, let ui2, let kind2) = other
    else { return nil }
    guard kind == kind2 else { return .empty }
    var lower = lo1
    var lowerInclusive = li1
    if let l2 = lo2 {
      if let l1 = lo1 {
        let c = FieldValue._order(l1, l2, .binary)
        if c < 0 || (c == 0 && li1 && !li2) { (lower, lowerInclusive) = (l2, li2) }
      } else {
        (lower, lowerInclusive) = (l2, li2)
      }
    }
    var upper = hi1
    var upperInclusive = ui1
    if let h2 = hi2 {
      if let h1 = hi1 {
        let c = FieldValue._order(h1, h2, .binary)
        if c > 0 || (c == 0 && ui1 && !ui2) { (upper, upperInclusive) = (h2, ui2) }
      } else {
        (upper, upperInclusive) = (h2, ui2)
      }
    }
    return .between(
      lower: lower, lowerInclusive: lowerInclusive, upper: upper, upperInclusive: upperInclusive, kind: kind)
  }

  /// Where the run starts and ends in `index`.
  func bounds(in index: _SortedIndex) -> (_SortedIndex.Position, _SortedIndex.Position) {
    let (before, within) = edges
    let start = index.partition(before)
    return (start, max(start, index.partition(within)))
  }

  /// The run as two tests on an entry's value, each holding for a prefix of the entries:
  /// `before` while the entry lies before the run, `within` while it lies before the run's
  /// end. A composite index applies them to one key's value after an equal prefix (see
  /// ``_CompositeRange``).
  var edges: (before: (FieldValue) -> Bool, within: (FieldValue) -> Bool) {
    switch self {
    case .empty:
      return ({ _ in false }, { _ in false })
    case .equal(let v):
      return ({ FieldValue._order($0, v, .binary) < 0 }, { FieldValue._order($0, v, .binary) <= 0 })
    case .between(let lower, let lowerInclusive, let upper, let upperInclusive, let kind):
      let before: (FieldValue) -> Bool =
        lower.map { lo in
          {
            lowerInclusive ? FieldValue._order($0, lo, .binary) < 0 : FieldValue._order($0, lo, .binary) <= 0
          }
        } ?? { $0._kind < kind }
      let within: (FieldValue) -> Bool =
        upper.map { hi in
          {
            upperInclusive ? FieldValue._order($0, hi, .binary) <= 0 : FieldValue._order($0, hi, .binary) < 0
          }
        } ?? { $0._kind <= kind }
      return (before, within)
    case .prefix(let p):
      // Every string with the prefix sorts at or after it and before the prefix followed
      // by the last scalar; the filter rechecks what lies between.
      let limit = p + "\u{10FFFF}"
      return (
        { FieldValue._order($0, .string(p), .binary) < 0 },
        {
          if case .string(let s) = $0 { return s < limit }
          return $0._kind < .string
        }
      )
    }
  }

  /// The number of entries in the run.
  func count(in index: _SortedIndex) -> Int {
    let (a, b) = bounds(in: index)
    return index.distance(from: a, to: b)
  }

  /// The run's slots, in index order (store order within one value).
  func slots(in index: _SortedIndex) -> [Int] {
    Self.slots(in: index, between: bounds(in: index))
  }

  /// The slots between two positions of `index` (see ``bounds(in:)``), in index order:
  /// a caller that counted the run first does not search for it again.
  static func slots(in index: _SortedIndex, between bounds: (_SortedIndex.Position, _SortedIndex.Position))
    -> [Int]
  {
    let (a, b) = bounds
    var out: [Int] = []
    out.reserveCapacity(index.distance(from: a, to: b))
    index.forEach(from: a, to: b) {
      out.append($0.slot)
      return true
    }
    return out
  }

  /// Whether the run's slots come out in store order: one value's entries are.
  var isInStoreOrder: Bool {
    switch self {
    case .equal, .empty: return true
    case .between, .prefix: return false
    }
  }

  /// Whether the run is one value's entries (`key == value`).
  var isEquality: Bool {
    if case .equal = self { return true }
    return false
  }

  /// How `explain()` names the lookup.
  var lookupName: String {
    switch self {
    case .equal, .empty: return "lookup"
    case .between: return "range"
    case .prefix: return "prefix range"
    }
  }
}
