/// One state of a live request set: its records, and how they differ from the state
/// yielded before.
///
/// ```swift
/// for try await snapshot in animals.filter("species", value: "Cow").changes {
///   print(snapshot.records.map(\.name))
///   tableView.apply(deleting: snapshot.deleted, inserting: snapshot.inserted, reloading: snapshot.updated)
/// }
/// ```
public struct RequestSetSnapshot<Element: Record>: Sendable {
  /// The evaluated result, in order.
  public let records: [Element]
  /// The store version the result was read at.
  public let version: UInt64
  /// Positions in ``records`` of records that were not in the previous state.
  public let inserted: [Int]
  /// Positions in the previous state's records of records that are gone.
  public let deleted: [Int]
  /// Positions in ``records`` of records that were there before and changed.
  public let updated: [Int]
  /// Whether this is the first state, yielded as the sequence starts.
  public let isInitial: Bool

  /// The ids of ``records``, in order.
  public var ids: [Element.ID] { records.map(\.id) }
}

extension RequestSetSnapshot {
  /// The difference from `old` to `new`, by id; `changedIDs` are ids known to have been
  /// rewritten (nil: unknown, so records present in both are compared by their fields).
  static func diff(
    from old: [Element], to new: [Element], version: UInt64, changedIDs: Set<Element.ID>?
  ) -> RequestSetSnapshot? {
    var oldPosition: [Element.ID: Int] = [:]
    for (i, r) in old.enumerated() { oldPosition[r.id] = i }
    var newIDs = Set<Element.ID>()
    var inserted: [Int] = []
    var updated: [Int] = []
    for (i, r) in new.enumerated() {
      newIDs.insert(r.id)
      guard let o = oldPosition[r.id] else {
        inserted.append(i)
        continue
      }
      let changed: Bool
      if let changedIDs {
        changed = changedIDs.contains(r.id)
      } else {
        changed = (try? FieldValue(encoding: r)) != (try? FieldValue(encoding: old[o]))
      }
      if changed { updated.append(i) }
    }
    let deleted = old.indices.filter { !newIDs.contains(old[$0].id) }
    let sameOrder = inserted.isEmpty && deleted.isEmpty && old.map(\.id) == new.map(\.id)
    if sameOrder && updated.isEmpty { return nil }  // nothing the observer can see changed
    return RequestSetSnapshot(
      records: new, version: version, inserted: inserted, deleted: deleted, updated: updated, isInitial: false)
  }
}
