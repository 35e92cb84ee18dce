// Composite indexes: one index on several keys (`createIndex(\.species, \.age)`), its
// entries ordered by the first key's value, then the next's, then store order.
//
// A composite index is a `_SortedIndex` whose `arity` is its number of keys and whose
// entries' values are arrays of one value per key. Arrays order key by key
// (`FieldValue._order`), so one equal prefix of keys is one run of entries, and within it
// the next key's values are in order: `species == "cat" AND age > 3` is one run, and
// `species == "cat"` sorted by age is a walk of one run (see `_CompositeRange` and the
// planner). An entry with an unordered value in any key (NaN, an array, an object) stays
// outside the order, as in a one-key index, and every lookup hands it on to be rechecked.
//
// Stores, catalogs and logs name an index by one string: its key, or for a composite
// index its keys joined by U+001F, which no indexable key holds. A log written with a
// composite index and opened by an older build sees an index on a key no record has: an
// index of nils that no query uses.

/// How a composite index's keys are named as one string, and how its value is read.
enum _CompositeKey {
  /// Joins a composite index's keys in its name: U+001F (INFORMATION SEPARATOR ONE).
  static let separator: Character = "\u{1F}"

  /// The name of an index on `keys`: the key itself for one key.
  static func identity(_ keys: [String]) -> String {
    keys.count == 1 ? keys[0] : keys.joined(separator: String(separator))
  }

  /// The keys an index name stands for.
  static func keys(of identity: String) -> [String] {
    guard identity.contains(separator) else { return [identity] }
    return identity.split(separator: separator, omittingEmptySubsequences: false).map(String.init)
  }

  /// The name as messages and `explain()` show it: `species, age`.
  static func displayName(_ identity: String) -> String {
    keys(of: identity).joined(separator: ", ")
  }

  /// A value a unique index does not check: nil, or for a composite index an array with
  /// a nil in it (as SQL's unique indexes exempt a row with a NULL in any column).
  static func isExempt(_ value: FieldValue) -> Bool {
    if value == .null { return true }
    if case .array(let items) = value { return items.contains(.null) }
    return false
  }

  /// Checks the keys of a new composite index and returns its name.
  ///
  /// - Throws: `.invalidIndex` for no key, a key named twice, or a key holding U+001F.
  static func validated(_ keys: [String], typeName: String) throws -> String {
    guard !keys.isEmpty else {
      throw RequestSetError(
        .invalidIndex,
        "An index on \(typeName) needs at least one key: createIndex(on: [\"species\", \"age\"]).")
    }
    for key in keys where key.contains(separator) {
      throw RequestSetError(
        .invalidIndex,
        "The key \(key.debugDescription.prefix(200)) holds U+001F, which names the keys of a composite index, so "
          + "it cannot be indexed. Rename the field; queries on it still work.")
    }
    guard Set(keys).count == keys.count else {
      throw RequestSetError(
        .invalidIndex,
        "A composite index on \(typeName) names a key twice (\(keys.joined(separator: ", "))). "
          + "Name each key once: createIndex(\"species\", \"age\").")
    }
    return identity(keys)
  }
}

extension _IndexCatalog.Index {
  /// The index's value for a record: the key's value, or an array of each key's value.
  @inline(__always)
  func value(_ read: (String) throws -> FieldValue) rethrows -> FieldValue {
    try _CompositeKey.value(keys, read)
  }
}

extension _CompositeKey {
  /// An index's value for a record, from a way to read one key's value: the key's value,
  /// or for a composite index an array of each key's value.
  @inline(__always)
  static func value(_ keys: [String], _ read: (String) throws -> FieldValue) rethrows -> FieldValue {
    guard keys.count > 1 else { return try read(keys[0]) }
    return .array(try keys.map(read))
  }
}

/// The run of a composite index's entries whose first keys equal `prefix` and whose next
/// key lies in `next` (any value when nil).
struct _CompositeRange {
  var prefix: [FieldValue]
  var next: _IndexRange?

  /// Where the run starts and ends in `index` (whose arity exceeds `prefix.count`, or
  /// equals it when `next` is nil).
  func bounds(in index: _SortedIndex) -> (_SortedIndex.Position, _SortedIndex.Position) {
    let m = prefix.count
    let prefix = self.prefix
    let edges = next?.edges
    // -1, 0 or 1: how an entry's first m values compare with the prefix.
    func comparePrefix(_ items: [FieldValue]) -> Int {
      for k in 0..<m {
        let c = FieldValue._order(items[k], prefix[k], .binary)
        if c != 0 { return c }
      }
      return 0
    }
    // Entries are ordered arrays of `arity` values (unordered ones are kept apart).
    let start = index.partition { v in
      guard case .array(let items) = v else { return false }
      let c = comparePrefix(items)
      if c != 0 { return c < 0 }
      return edges.map { $0.before(items[m]) } ?? false
    }
    let end = index.partition { v in
      guard case .array(let items) = v else { return false }
      let c = comparePrefix(items)
      if c != 0 { return c < 0 }
      return edges.map { $0.within(items[m]) } ?? true
    }
    return (start, max(start, end))
  }
}
