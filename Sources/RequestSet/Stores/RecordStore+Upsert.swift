/// What an upsert wrote: how many records it inserted and how many stored records it
/// replaced.
///
/// ```swift
/// let result = try store.upsert(people, on: \.email)
/// print(result.inserted, result.updated)   // → 5000 5000
/// ```
public struct UpsertResult: Sendable, Hashable, CustomStringConvertible {
  /// How many records of the batch had no stored match and were inserted.
  public var inserted: Int
  /// How many stored records a record of the batch replaced.
  public var updated: Int
  /// How many SQL statements wrote the batch: one per batch of rows on a SQL store that
  /// ran it as `INSERT … ON CONFLICT … DO UPDATE`, 0 when the engine wrote it through
  /// ``RecordStore/apply(_:ifVersion:)``. For tests and benchmarks.
  public var _statements: Int

  /// A result; a ``QueryPushdownStore`` that runs upserts itself returns one.
  ///
  /// ```swift
  /// return UpsertResult(inserted: 3, updated: 1, _statements: 1)
  /// ```
  public init(inserted: Int, updated: Int, _statements: Int = 0) {
    self.inserted = inserted
    self.updated = updated
    self._statements = _statements
  }

  /// `3 inserted, 1 updated`.
  public var description: String { "\(inserted) inserted, \(updated) updated" }
}

extension RecordStore {
  /// Inserts each record, or replaces the stored record with the same value of `keyPath`
  /// (or of several key paths, together), all in one atomic commit.
  ///
  /// A record matches the stored record whose values at the key paths equal its own. A
  /// matched stored record is replaced by the new record (or by what `merge` returns)
  /// **with the stored record's id**, in place; an unmatched record is inserted with its
  /// own id, after the stored records. A unique index on the key
  /// (`createIndex(\.email, unique: true)`) is not required, but it makes the match a
  /// lookup, and on a SQL store it lets the whole batch run as one
  /// `INSERT … ON CONFLICT (…) DO UPDATE` statement; without one (or with `merge`) the
  /// engine reads the matches and applies the batch through ``apply(_:ifVersion:)``, in
  /// one transaction that retries when another writer came first.
  ///
  /// ```swift
  /// try people.createIndex(\.email, unique: true)
  /// let result = try people.upsert(batch, on: \.email)         // → 5000 inserted, 5000 updated
  /// try orders.upsert(lines, on: \.orderID, \.line)           // a composite key
  /// try people.upsert(batch, on: \.email) { stored, new in     // merge with the stored record
  ///   var merged = new
  ///   merged.visits = stored.visits + new.visits
  ///   return merged
  /// }
  /// ```
  /// - Parameters:
  ///   - records: The records, in the order inserted ones take in the store.
  ///   - keyPaths: One key path, or several that match together; each names a stored field.
  ///   - merge: The record to store for a match, given the stored record and the new
  ///     one; nil stores the new one. Its id is replaced by the stored record's. It may
  ///     run more than once per record when another writer changes the store meanwhile;
  ///     keep it free of side effects.
  /// - Returns: How many records were inserted and how many replaced.
  /// - Throws: ``RequestSetError`` `.invalidUpsert` when a record's key value is nil, two
  ///   records of the batch share a key value, or several stored records share one;
  ///   `.unknownKey`; `.duplicateID` when an inserted record's id is taken;
  ///   `.uniqueViolation` when a stored value of another unique index would repeat;
  ///   what `merge` throws. Nothing is written then.
  /// - Complexity: O(*b*) lookups for a batch of *b* records with a unique index on the
  ///   (first) key; O(*n*) for a store of *n* records without one.
  @discardableResult
  public func upsert<each Value>(
    _ records: some Sequence<Element>, on keyPaths: repeat KeyPath<Element, each Value>,
    merge: ((_ stored: Element, _ new: Element) throws -> Element)? = nil
  ) throws -> UpsertResult {
    try _upsert(Array(records), on: try _upsertKeys(repeat each keyPaths), merge: merge)
  }

  /// Inserts each record, or replaces the stored record with the same value at a string
  /// key (or at several keys, together), all in one atomic commit: see
  /// the key-path form of `upsert(_:on:merge:)`.
  ///
  /// ```swift
  /// try people.upsert(batch, on: "email")
  /// try orders.upsert(lines, on: "orderID", "line")
  /// ```
  /// - Parameters:
  ///   - records: The records, in the order inserted ones take in the store.
  ///   - keys: One string key, or several that match together; dots reach nested values.
  ///   - merge: The record to store for a match, given the stored and the new record.
  /// - Returns: How many records were inserted and how many replaced.
  /// - Throws: As the key-path form.
  @discardableResult
  public func upsert(
    _ records: some Sequence<Element>, on keys: String...,
    merge: ((_ stored: Element, _ new: Element) throws -> Element)? = nil
  ) throws -> UpsertResult {
    try _upsert(Array(records), on: keys, merge: merge)
  }

  /// Inserts each record, or replaces the stored record with the same values at `keys`
  /// (all of them together), in one atomic commit: the variadic form, for keys chosen at
  /// run time (a command-line option, a configuration).
  ///
  /// ```swift
  /// let keys = ["orderID", "line"]
  /// try orders.upsert(lines, on: keys)
  /// ```
  /// - Parameters:
  ///   - records: The records, in the order inserted ones take in the store.
  ///   - keys: The string keys that match together; at least one.
  ///   - merge: The record to store for a match, given the stored and the new record.
  /// - Returns: How many records were inserted and how many replaced.
  /// - Throws: As the key-path form; `.invalidUpsert` for an empty `keys`.
  @discardableResult
  public func upsert(
    _ records: some Sequence<Element>, on keys: [String],
    merge: ((_ stored: Element, _ new: Element) throws -> Element)? = nil
  ) throws -> UpsertResult {
    try _upsert(Array(records), on: keys, merge: merge)
  }

  /// The one road of every upsert: check the batch, let a store that runs it as one
  /// statement do so, otherwise read the matches and apply inserts and saves in one commit.
  func _upsert(
    _ records: [Element], on keys: [String], merge: ((Element, Element) throws -> Element)?
  ) throws -> UpsertResult {
    guard !keys.isEmpty else {
      throw RequestSetError(
        .invalidUpsert, "upsert was given no key. Name the key to match on: upsert(records, on: \"email\").")
    }
    try _checkWritable()
    let batch = try _UpsertBatch(records, keys: keys)
    if records.isEmpty { return UpsertResult(inserted: 0, updated: 0) }
    let set = RequestSet(self)
    // An unknown key is reported as such, before the nil values it gives every record.
    let checkKeys = { (fields: any _FieldAccess) throws in
      for key in keys { try _FilterCompiler<Element>.validate(key, value: nil, in: fields) }
      try batch.checkValues()
    }
    // A nil key value left here is reported by the engine's road, after it checks the keys
    // against the records (a store whose reader keeps no keys and kinds cannot).
    if merge == nil, batch.firstNil == nil, let pushdown = self as? any QueryPushdownStore<Element> {
      var result: UpsertResult?
      _ = try set._pushdownWrite(validate: checkKeys) { _, _ in
        result = try pushdown.upsert(records, fields: batch.fields, on: keys)
        return result?.inserted
      }
      if let result { return result }
    }
    // Only stored records whose first key value is one of the batch's can match: an IN
    // condition the planner answers from an index on that key.
    let firstValues = FieldValue.array(batch.keyValues.map { $0[0].value }.filter { $0 != .null })
    let candidates = set.filter(
      RequestFilter(_node: .field(try _FieldCondition(key: keys[0], op: .in, value: firstValues))))
    var result = UpsertResult(inserted: 0, updated: 0)
    _ = try candidates._write { snapshot, slots in
      try checkKeys(try snapshot._fields())
      try batch.checkValues()
      var stored: [[_GroupingKey]: Element] = [:]
      for slot in slots {
        let record = try snapshot._record(at: slot)
        let values = try FieldValue(encoding: record)
        let key = keys.map { _GroupingKey(values[path: $0] ?? .null) }
        guard stored.updateValue(record, forKey: key) == nil else {
          throw RequestSetError(
            .invalidUpsert,
            "More than one stored \(Element.self) has \(batch.describe(key)), so upsert cannot tell which to replace. "
              + "Make the stored values distinct and create a unique index on \(keys.joined(separator: ", ")); "
              + "nothing was written.")
        }
      }
      result = UpsertResult(inserted: 0, updated: 0)
      var changes: [RecordChange<Element>] = []
      changes.reserveCapacity(records.count)
      for (i, record) in records.enumerated() {
        try _CancelToken.throwIfCancelled()
        guard let match = stored[batch.keyValues[i]] else {
          changes.append(.insert(record))
          result.inserted += 1
          continue
        }
        let replacement = try merge?(match, record) ?? record
        changes.append(.save(try replacement._upsertReplacing(id: match.id)))
        result.updated += 1
      }
      return changes
    }
    return result
  }
}

/// The stored keys key paths name, for an upsert.
func _upsertKeys<Element, each Value>(_ keyPaths: repeat KeyPath<Element, each Value>) throws -> [String] {
  var keys: [String] = []
  for keyPath in repeat each keyPaths {
    do {
      keys.append(try _indexKey(keyPath))
    } catch {
      throw RequestSetError(
        .unknownKey,
        "upsert on \(keyPath): it is not a chain of stored properties, so it names no stored field to match on. "
          + "Pass the field's Codable key instead: upsert(records, on: \"key\").")
    }
  }
  return keys
}

/// A batch's key values, checked: none repeated (on creation), none nil (``checkValues()``,
/// once the keys are known to exist).
struct _UpsertBatch<Element: Record> {
  let keys: [String]
  /// The first record with a nil value at a key, and the key.
  let firstNil: (id: Element.ID, key: String)?
  /// Each record's encoded fields, in batch order.
  let fields: [FieldValue]
  /// Each record's values at the keys, in batch order.
  let keyValues: [[_GroupingKey]]

  init(_ records: [Element], keys: [String]) throws {
    self.keys = keys
    var fields: [FieldValue] = []
    var keyValues: [[_GroupingKey]] = []
    fields.reserveCapacity(records.count)
    keyValues.reserveCapacity(records.count)
    var seen: [[_GroupingKey]: Element.ID] = [:]
    seen.reserveCapacity(records.count)
    var firstNil: (id: Element.ID, key: String)?
    for record in records {
      let tree = try FieldValue(encoding: record)
      var values: [_GroupingKey] = []
      for key in keys {
        let value = tree[path: key] ?? .null
        if value == .null && firstNil == nil { firstNil = (record.id, key) }
        values.append(_GroupingKey(value))
      }
      if !values.contains(_GroupingKey(.null)), let other = seen.updateValue(record.id, forKey: values) {
        throw RequestSetError(
          .invalidUpsert,
          "The batch holds two records with \(Self.describe(values, keys: keys)) (ids \(other) and \(record.id)). "
            + "Give each record its own key value, or merge them before upserting; nothing was written.")
      }
      fields.append(tree)
      keyValues.append(values)
    }
    self.fields = fields
    self.keyValues = keyValues
    self.firstNil = firstNil
  }

  /// Throws when a record has no value at a key: nothing could match it.
  func checkValues() throws {
    guard let (id, key) = firstNil else { return }
    throw RequestSetError(
      .invalidUpsert,
      "The \(Element.self) with id \(id) has no value at \"\(key)\" (nil), so upsert cannot match it. "
        + "Give it a value, or insert it with insert(_:); nothing was written.")
  }

  func describe(_ values: [_GroupingKey]) -> String { Self.describe(values, keys: keys) }

  static func describe(_ values: [_GroupingKey], keys: [String]) -> String {
    zip(keys, values).map { "\($0) == \($1.value)" }.joined(separator: " and ")
  }

}

extension Record {
  /// The record with its id set to `id`: what an upsert stores for a match, which keeps
  /// the stored record's id. Stores that run upserts themselves use it too.
  ///
  /// ```swift
  /// let stored = try new._upsertReplacing(id: existing.id)
  /// ```
  /// - Parameter fields: The record's encoded fields, when the caller has them.
  /// - Throws: ``RequestSetError`` `.decodingFailed` when the record cannot be made with that id.
  public func _upsertReplacing(id: ID, fields: FieldValue? = nil) throws -> Self {
    if self.id == id { return self }
    let tree = try (fields ?? FieldValue(encoding: self))._setting(
      try FieldValue(encoding: id), at: "id"[...])
    return try _decodeRecord(Self.self, from: tree, purpose: "upsert", alternative: "a merge closure")
  }
}
