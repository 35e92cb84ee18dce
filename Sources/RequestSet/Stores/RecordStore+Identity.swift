extension RecordStore {
  /// Whether a record with this id is stored.
  ///
  /// ```swift
  /// if try store.exists(id: 3) { … }
  /// ```
  /// - Complexity: O(1) on stores with an index by id (both built-in stores).
  public func exists(id: Element.ID) throws -> Bool {
    try fetch(id: id) != nil
  }

  /// The stored records with these ids, by id; absent ids are left out.
  ///
  /// ```swift
  /// let byID = try store.inBulk([1, 3, 99])   // [1: micky, 3: rex]
  /// ```
  public func inBulk(_ ids: some Sequence<Element.ID>) throws -> [Element.ID: Element] {
    var found: [Element.ID: Element] = [:]
    for id in ids where found[id] == nil {
      if let record = try fetch(id: id) { found[id] = record }
    }
    return found
  }

  /// The record with this id, or a new one made by `makeRecord` and inserted.
  ///
  /// ```swift
  /// let rex = try store.fetchOrInsert(id: 3) { id in Animal(id: id, name: "Rex", species: "Dog", age: 0) }
  /// ```
  /// - Throws: ``RequestSetError`` `.invalidUpdate` when `makeRecord` returns a record
  ///   with another id; `.duplicateID` when another writer inserted the id meanwhile.
  public func fetchOrInsert(id: Element.ID, _ makeRecord: (Element.ID) throws -> Element) throws -> Element {
    if let existing = try fetch(id: id) { return existing }
    let record = try makeRecord(id)
    guard record.id == id else {
      throw RequestSetError(
        .invalidUpdate,
        "fetchOrInsert(id: \(id)) was given a record with id \(record.id). Return a record with id \(id).")
    }
    try insert(record)
    return record
  }

  /// The record with this id, or a new one whose only set field is its id and inserted:
  /// for records whose other fields are optional or have defaults in `init(from:)`.
  ///
  /// ```swift
  /// let profile = try profiles.fetchOrInsert(id: userID)
  /// ```
  /// - Throws: ``RequestSetError`` `.decodingFailed`, naming the missing field, when the
  ///   record cannot be made from its id alone; use ``fetchOrInsert(id:_:)`` then.
  public func fetchOrInsert(id: Element.ID) throws -> Element {
    try fetchOrInsert(id: id) { id in
      let fields = FieldValue.object(["id": try FieldValue(encoding: id)])
      return try _decodeRecord(Element.self, from: fields, purpose: "fetchOrInsert(id: \(id))", alternative: "fetchOrInsert(id:_:)")
    }
  }

  /// Runs `body`, then applies every insert, save and delete it made at once: all of them,
  /// or none when `body` throws or a change is refused.
  ///
  /// SugarRecord's unit of work. Nothing is visible to readers until the transaction
  /// commits; `body` runs outside the store's lock, so it may read the store freely.
  ///
  /// ```swift
  /// try store.transaction { tx in
  ///   tx.insert(calf)
  ///   tx.save(updatedCow)
  ///   tx.delete(id: 3)
  /// }
  /// ```
  /// - Returns: What `body` returns.
  /// - Throws: What `body` throws (nothing is applied), or ``RequestSetError``
  ///   `.duplicateID` when an insert's id is taken at commit (nothing is applied).
  @discardableResult
  public func transaction<Result>(_ body: (inout RecordTransaction<Element>) throws -> Result) throws -> Result {
    var tx = RecordTransaction<Element>()
    let result = try body(&tx)
    try apply(tx.changes, ifVersion: nil)
    return result
  }
}

/// The changes a ``RecordStore/transaction(_:)`` collects, applied together at its end.
///
/// ```swift
/// try store.transaction { tx in
///   tx.insert(calf)
///   tx.delete(id: 3)
/// }
/// ```
public struct RecordTransaction<Element: Record>: Sendable {
  /// The changes so far, in order.
  public private(set) var changes: [RecordChange<Element>] = []

  /// Queues an insert; the id must be free when the transaction commits.
  public mutating func insert(_ record: Element) { changes.append(.insert(record)) }

  /// Queues several inserts.
  public mutating func insert(contentsOf records: some Sequence<Element>) {
    changes += records.map { .insert($0) }
  }

  /// Queues an insert-or-replace.
  public mutating func save(_ record: Element) { changes.append(.save(record)) }

  /// Queues a delete.
  public mutating func delete(id: Element.ID) { changes.append(.delete(id: id)) }

  /// Drops every queued change: the transaction commits nothing (unless more follow).
  public mutating func rollback() { changes.removeAll() }
}

/// Decodes a record from field values, with an error that says what is missing.
func _decodeRecord<Element: Decodable>(
  _ type: Element.Type, from fields: FieldValue, purpose: String, alternative: String
) throws -> Element {
  do {
    return try _FieldDecoder.decode(Element.self, from: fields)
  } catch {
    var detail = ""
    if case DecodingError.keyNotFound(let key, let context) = error {
      detail = " Field \"\((context.codingPath + [key]).map(\.stringValue).joined(separator: "."))\" has no value."
    } else if case DecodingError.typeMismatch(_, let context) = error {
      detail = " Field \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\": \(context.debugDescription)."
    }
    throw RequestSetError(
      .decodingFailed,
      "\(purpose) cannot make \(_withArticle(Element.self)) from \(fields).\(detail) Use \(alternative) to supply the other fields.",
      underlying: error)
  }
}
