/// One change in an atomic write: what ``RecordStore/apply(_:ifVersion:)``, transactions
/// and writes through a query are made of.
///
/// ```swift
/// try store.apply([.insert(rex), .save(daisy), .delete(id: 3)])   // all or none
/// ```
public enum RecordChange<Element: Record>: Sendable {
  /// Insert a record; its id must not be stored (or inserted earlier in the same batch).
  case insert(Element)
  /// Insert or replace the record with the same id.
  case save(Element)
  /// Delete the record with this id, if there is one.
  case delete(id: Element.ID)

  /// The id the change touches.
  public var id: Element.ID {
    switch self {
    case .insert(let r), .save(let r): return r.id
    case .delete(let id): return id
    }
  }
}

extension RecordStore {
  /// Applies changes atomically: all of them or, when one is refused, none.
  ///
  /// ```swift
  /// try store.apply([.insert(rex), .delete(id: 3)])
  /// ```
  /// - Throws: ``RequestSetError`` `.duplicateID` when an insert's id is taken; nothing is
  ///   applied then.
  public func apply(_ changes: [RecordChange<Element>]) throws {
    try apply(changes, ifVersion: nil)
  }
}

/// Checks a batch against the ids a store holds, in order, before anything is applied.
///
/// - Parameter isStored: whether the store holds an id before the batch.
func _validate<Element: Record>(_ changes: [RecordChange<Element>], isStored: (Element.ID) -> Bool) throws {
  // Only the ids the batch touches are tracked, so a batch costs O(batch), not O(store).
  var present: [Element.ID: Bool] = [:]
  for change in changes {
    let id = change.id
    let exists = present[id] ?? isStored(id)
    switch change {
    case .insert:
      if exists {
        throw present[id] == nil ? _duplicate(id) : _duplicate(id, inBatch: true)
      }
      present[id] = true
    case .save: present[id] = true
    case .delete: present[id] = false
    }
  }
}

func _conflict(expected: UInt64, found: UInt64) -> RequestSetError {
  RequestSetError(
    .conflict,
    "The store changed (version \(found), expected \(expected)) between reading and writing; "
      + "nothing was written. Read again and retry.")
}
