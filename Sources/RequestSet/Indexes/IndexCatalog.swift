/// A store's secondary indexes: the definitions, and each index's entries kept current on
/// every write. A snapshot takes a copy (chunks are shared until the store writes), so the
/// planner always sees indexes that agree with the records it reads.
struct _IndexCatalog: Sendable {
  struct Index: Sendable {
    /// The key, or for a composite index its keys joined by ``_CompositeKey/separator``
    /// (the identity the store and the log name it by).
    let key: String
    let unique: Bool
    var entries: _SortedIndex
    /// The keys the index orders by: `[key]`, or a composite index's keys.
    let keys: [String]

    init(key: String, unique: Bool, entries: _SortedIndex) {
      self.key = key
      self.unique = unique
      self.entries = entries
      self.keys = _CompositeKey.keys(of: key)
    }
  }

  private(set) var indexes: [Index] = []

  var isEmpty: Bool { indexes.isEmpty }

  /// Whether any index is on several keys.
  var hasComposite: Bool { indexes.contains { $0.entries.arity > 1 } }

  /// The index on a key, if any.
  func index(for key: String) -> Index? {
    indexes.first { $0.key == key }
  }

  func position(of key: String) -> Int? {
    indexes.firstIndex { $0.key == key }
  }

  /// The public description of every index, in creation order.
  var descriptions: [RequestIndex] {
    indexes.map { RequestIndex(keys: _CompositeKey.keys(of: $0.key), unique: $0.unique) }
  }

  /// Adds an index built from every live slot's value.
  ///
  /// - Parameter checkingExisting: Whether a unique index checks the records it starts
  ///   with (a log rebuilding its indexes keeps a unique index over a salvaged log whose
  ///   records share a value, and checks later writes).
  /// - Throws: `.uniqueViolation` when `unique` and two records share a non-nil value;
  ///   the catalog is unchanged then.
  mutating func add(
    key: String, unique: Bool, entries: [_IndexEntry], typeName: String, checkingExisting: Bool = true
  ) throws {
    let sorted = _SortedIndex(entries: entries, arity: _CompositeKey.keys(of: key).count)
    if unique && checkingExisting {
      // Values match as the index's lookups do: NaN is one value (`_GroupingKey`).
      var seen = Set<_GroupingKey>(minimumCapacity: entries.count)
      for e in entries where !_CompositeKey.isExempt(e.value) && !seen.insert(_GroupingKey(e.value)).inserted
      {
        let name = _CompositeKey.displayName(key)
        throw RequestSetError(
          .uniqueViolation,
          "Cannot create a unique index on \"\(name)\" of \(typeName): more than one record has \(name) == \(e.value). "
            + "Make the values distinct first, or create the index without unique: true.")
      }
    }
    indexes.append(Index(key: key, unique: unique, entries: sorted))
  }

  /// Adds an index whose entries were kept (a log's checkpoint), with no unique check:
  /// they are the entries the store held when it wrote them.
  mutating func add(key: String, unique: Bool, restored entries: _SortedIndex) {
    indexes.append(Index(key: key, unique: unique, entries: entries))
  }

  mutating func remove(key: String) -> Bool {
    guard let i = position(of: key) else { return false }
    indexes.remove(at: i)
    return true
  }

  /// Records one slot's change of value in index `i`: `old` nil for a new slot, `new` nil
  /// for a deleted one.
  @inline(__always)
  mutating func update(_ i: Int, slot: Int, old: FieldValue?, new: FieldValue?) {
    if let old, !indexes[i].entries.remove(old, slot: slot) {
      // The old value was misread (a damaged record): find the slot the slow way, so
      // the index never keeps an entry for a slot that moved on.
      indexes[i].entries.removeSlot(slot)
    }
    if let new { indexes[i].entries.insert(new, slot: slot) }
  }

  /// Renumbers every index's slots after the store dropped dead slots.
  mutating func renumber(_ newSlot: [Int]) {
    for i in indexes.indices { indexes[i].entries.renumber(newSlot) }
  }

  /// Keeps the indexes a migration leaves the values of (renamed to `keys[i]`), with
  /// their slots renumbered, and drops the rest (nil): the store builds those again.
  mutating func keep(_ keys: [String?], renumbering newSlot: [Int]) {
    var kept: [Index] = []
    for (i, index) in indexes.enumerated() {
      guard let key = keys[i] else { continue }
      var entries = index.entries
      entries.renumber(newSlot)
      kept.append(Index(key: key, unique: index.unique, entries: entries))
    }
    indexes = kept
  }

  /// Whether any index is unique: writes skip the unique check otherwise.
  var hasUnique: Bool { indexes.contains { $0.unique } }

  /// Checks that applying `changes` in order leaves no two live records with one non-nil
  /// value of a unique index.
  ///
  /// - Parameters:
  ///   - changes: Per change, the record's id and its values of every index (catalog
  ///     order), or nil values for a delete.
  ///   - slotOf: The stored slot of an id, if stored.
  ///   - storedValue: The stored value of index `i` for a slot.
  /// - Throws: `.uniqueViolation`, naming the key and the value.
  func checkUnique<ID: Hashable>(
    _ changes: [(id: ID, values: [FieldValue]?)], typeName: String,
    slotOf: (ID) -> Int?, storedValue: (_ slot: Int, _ index: Int) -> FieldValue
  ) throws {
    for (u, index) in indexes.enumerated() where index.unique {
      var current: [ID: FieldValue] = [:]  // an id's value after the changes so far
      var claims: [_GroupingKey: ID] = [:]  // values taken by the changes so far (NaN is one value)
      var replaced = Set<Int>()  // stored slots whose stored value no longer counts
      for change in changes {
        let slot = slotOf(change.id)
        let previous = current[change.id] ?? slot.map { storedValue($0, u) }
        if let slot { replaced.insert(slot) }
        if let previous, claims[_GroupingKey(previous)] == change.id { claims[_GroupingKey(previous)] = nil }
        guard let values = change.values else {
          current[change.id] = .null
          continue
        }
        let value = values[u]
        current[change.id] = value
        if _CompositeKey.isExempt(value) { continue }
        var taken = claims[_GroupingKey(value)].map { $0 != change.id } ?? false
        if !taken {
          for holder in _IndexRange.equal(value).slots(in: index.entries) where !replaced.contains(holder) {
            taken = true
            break
          }
        }
        if taken {
          let name = _CompositeKey.displayName(index.key)
          throw RequestSetError(
            .uniqueViolation,
            "Another \(typeName) already has \(name) == \(value), and the index on \"\(name)\" is unique "
              + "(the record with id \(change.id) would be a second one). Give it another value, or change the "
              + "other record first; nothing was written.")
        }
        claims[_GroupingKey(value)] = change.id
      }
    }
  }
}

/// An index a store keeps, as ``MemoryStore/indexes`` and ``LogStore/indexes`` list them:
/// on one key, or a composite index on several, ordered by the first, then the next.
///
/// ```swift
/// try store.createIndex(\.species)
/// try store.createIndex(\.species, \.age)
/// store.indexes   // [index on species, index on species, age]
/// ```
public struct RequestIndex: Sendable, Hashable, CustomStringConvertible {
  /// The record's keys the index orders by, in order: Codable keys, or dotted paths into
  /// nested values. One key for most indexes.
  ///
  /// ```swift
  /// RequestIndex(keys: ["species", "age"], unique: false).keys   // ["species", "age"]
  /// ```
  public let keys: [String]
  /// Whether a write that would give two records the same non-nil value throws (for a
  /// composite index: the same values of every key, none of them nil).
  public let unique: Bool

  /// The key the index orders by; for a composite index, its keys joined by ", ".
  ///
  /// ```swift
  /// RequestIndex(key: "name", unique: true).key                 // "name"
  /// RequestIndex(keys: ["species", "age"], unique: false).key   // "species, age"
  /// ```
  public var key: String { keys.count == 1 ? keys[0] : keys.joined(separator: ", ") }

  /// Describes an index on one key; stores create them with `createIndex`.
  ///
  /// ```swift
  /// RequestIndex(key: "name", unique: true).description   // "unique index on name"
  /// ```
  public init(key: String, unique: Bool) {
    self.keys = [key]
    self.unique = unique
  }

  /// Describes an index on several keys (a composite index); stores create them with
  /// `createIndex(_:_:_:unique:)`.
  ///
  /// ```swift
  /// RequestIndex(keys: ["species", "age"], unique: false).description   // "index on species, age"
  /// ```
  public init(keys: [String], unique: Bool) {
    self.keys = keys
    self.unique = unique
  }

  /// Checks that a store can create this index on records of `type`: no key named twice,
  /// none holding U+001F (which joins a composite index's keys in the name stores and logs
  /// keep). A backend calls it before creating the index.
  ///
  /// ```swift
  /// try RequestIndex(keys: ["species", "age"], unique: false).checkKeys(for: Animal.self)   // fine
  /// try RequestIndex(keys: ["age", "age"], unique: false).checkKeys(for: Animal.self)       // throws .invalidIndex
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidIndex`, saying which key and why.
  public func checkKeys<Record>(for type: Record.Type) throws {
    _ = try _CompositeKey.validated(keys, typeName: "\(type)")
  }

  /// How a store names the index inside: the key, or the keys joined by
  /// ``_CompositeKey/separator``.
  var _identity: String { _CompositeKey.identity(keys) }

  /// `index on species`, or `unique index on name`, or `index on species, age`.
  public var description: String { (unique ? "unique index on " : "index on ") + key }
}
