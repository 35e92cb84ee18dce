/// The states of a live request set grouped into sections by a key, with the section and
/// row changes a table or collection view applies: `sectioned(by:)`.
///
/// ```swift
/// for try await state in animals.sortBy("species", "name").sectioned(by: "species") {
///   tableView.performBatchUpdates {
///     tableView.deleteSections(IndexSet(state.deletedSections), with: .fade)
///     tableView.insertSections(IndexSet(state.insertedSections), with: .fade)
///     for move in state.movedSections { tableView.moveSection(move.from, toSection: move.to) }
///     tableView.deleteRows(at: state.deletedRows.map(\.indexPath), with: .fade)
///     tableView.insertRows(at: state.insertedRows.map(\.indexPath), with: .fade)
///     for move in state.movedRows { tableView.moveRow(at: move.from.indexPath, to: move.to.indexPath) }
///   }
///   tableView.reloadRows(at: state.updatedRows.map(\.indexPath), with: .none)
/// }
/// ```
///
/// Sections come in the order of their first record in the set's order, and rows keep
/// the set's order within their section; sort by the section key first (as a fetched
/// results controller asks) to get one section per key value in key order.
public struct RequestSetSections<Element: Record, Key: Hashable & Sendable>: AsyncSequence, Sendable {
  let set: RequestSet<Element>
  let key: @Sendable ([Element]) throws -> [Key]

  /// Reads the sectioned states; cancelling the task ends the iteration.
  public struct AsyncIterator: AsyncIteratorProtocol {
    var states: RequestSetChanges<Element>.AsyncIterator
    let key: @Sendable ([Element]) throws -> [Key]
    var held: [RequestSetSection<Element, Key>]? = nil

    /// The next sectioned state: at first the current sections (all inserted), then one
    /// per state of ``RequestSet/changes`` whose sections or rows changed.
    ///
    /// - Throws: What ``RequestSet/changes`` throws; ``RequestSetError`` `.unknownKey` for
    ///   a section key the records do not have.
    public mutating func next() async throws -> SectionedSnapshot<Element, Key>? {
      while let state = try await states.next() {
        let keys = try key(state.records)
        let sections = _SectionDiff.sections(state.records, keys: keys)
        let updatedIDs = Set(state.updated.map { state.records[$0].id })
        let old = held ?? []
        held = sections
        let diff = _SectionDiff(from: old, to: sections, updated: updatedIDs)
        if !state.isInitial && diff.isEmpty { continue }
        return SectionedSnapshot(sections: sections, version: state.version, isInitial: state.isInitial, diff: diff)
      }
      return nil
    }
  }

  /// Starts following the store, at the first ``AsyncIterator/next()``.
  public func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(states: set.changes.makeAsyncIterator(), key: key)
  }
}

/// One section of a ``SectionedSnapshot``: the key its records share, and the records.
public struct RequestSetSection<Element: Record, Key: Hashable & Sendable>: Sendable {
  /// The value of the section key that every record of the section holds.
  public let key: Key
  /// The section's records, in the set's order.
  public let records: [Element]
}

/// A row's place: its section and its row within the section.
///
/// ```swift
/// let path = state.insertedRows[0]
/// print(path.section, path.row)
/// ```
public struct SectionedRow: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The section's index.
  public var section: Int
  /// The row's index within the section.
  public var row: Int

  /// A row's place.
  public init(section: Int, row: Int) {
    self.section = section
    self.row = row
  }

  /// Orders by section, then row.
  public static func < (a: SectionedRow, b: SectionedRow) -> Bool {
    (a.section, a.row) < (b.section, b.row)
  }

  /// `section.row`, as `[1, 3]` prints an index path.
  public var description: String { "[\(section), \(row)]" }
}

/// One state of a sectioned live set: its sections, and how they differ from the state
/// read before, in the form a table view's batch update takes.
///
/// The changes follow `performBatchUpdates`: ``deletedSections``, ``deletedRows`` and the
/// `from` of moves are positions in the previous state; ``insertedSections``,
/// ``insertedRows`` and the `to` of moves are positions in this one. Rows in a deleted
/// or inserted section are not listed row by row (the section's change covers them); a
/// row that stays in a moved section, in its order, is not listed either.
/// ``updatedRows`` (positions in this state) are records that were there before and
/// changed, moved or not. Applying the deletes (and move sources) to the previous
/// sections, then the inserts (and move targets) in ascending order, gives ``sections``.
public struct SectionedSnapshot<Element: Record, Key: Hashable & Sendable>: Sendable {
  /// A section's move: its index in the previous state and in this one.
  public struct SectionMove: Hashable, Sendable {
    /// The index in the previous state.
    public let from: Int
    /// The index in this state.
    public let to: Int
  }
  /// A row's move: its place in the previous state and in this one.
  public struct RowMove: Hashable, Sendable {
    /// The place in the previous state.
    public let from: SectionedRow
    /// The place in this state.
    public let to: SectionedRow
  }

  /// The sections, in order.
  public let sections: [RequestSetSection<Element, Key>]
  /// The store version the records were read at.
  public let version: UInt64
  /// Whether this is the first state (every section is inserted).
  public let isInitial: Bool
  /// Indexes, in the previous state, of sections that are gone; ascending.
  public let deletedSections: [Int]
  /// Indexes, in this state, of sections that are new; ascending.
  public let insertedSections: [Int]
  /// Sections that were there before and changed their place among the others.
  public let movedSections: [SectionMove]
  /// Places, in the previous state, of rows removed from sections that remain; ascending.
  public let deletedRows: [SectionedRow]
  /// Places, in this state, of rows added to sections that were there before; ascending.
  public let insertedRows: [SectionedRow]
  /// Rows that changed section, or their order within a section, between sections that
  /// remain.
  public let movedRows: [RowMove]
  /// Places, in this state, of records that were there before and changed.
  public let updatedRows: [SectionedRow]

  init(sections: [RequestSetSection<Element, Key>], version: UInt64, isInitial: Bool, diff: _SectionDiff) {
    self.sections = sections
    self.version = version
    self.isInitial = isInitial
    deletedSections = diff.deletedSections
    insertedSections = diff.insertedSections
    movedSections = diff.movedSections.map { SectionMove(from: $0.from, to: $0.to) }
    deletedRows = diff.deletedRows
    insertedRows = diff.insertedRows
    movedRows = diff.movedRows.map { RowMove(from: $0.from, to: $0.to) }
    updatedRows = diff.updatedRows
  }

  /// Every record, section after section.
  public var records: [Element] { sections.flatMap(\.records) }
}

extension RequestSet where Element: Record {
  /// The live set grouped into sections by a string key's value, with per-section and
  /// per-row changes: what a results controller gives a table view, on every store.
  ///
  /// ```swift
  /// for try await state in animals.sortBy("species", "name").sectioned(by: "species") {
  ///   for section in state.sections { print(section.key, section.records.map(\.name)) }
  ///   print(state.insertedRows, state.deletedRows, state.movedRows, state.updatedRows)
  /// }
  /// ```
  /// Sections are in the order of their first record; sort by the key first for one
  /// section per value. A record without the key (or with nil) falls in the `.null` section.
  /// Keys match as ``RequestSet/groupBy(_:)-(String...)`` groups them: every NaN is one section, `-0.0`
  /// is `0`, and `1` is `1.0`; a section's key is its first record's.
  /// - Parameter key: A string key, dotted for nested fields (`"owner.city"`).
  /// - Throws: From the iterator: ``RequestSetError`` `.unknownKey` for a key no record
  ///   holds, and what ``changes`` throws.
  public func sectioned(by key: String) -> RequestSetSections<Element, FieldValue> {
    RequestSetSections(set: self) { records in
      try RequestSet<Element>(records).values([key]).map { $0[key] ?? .null }
    }
  }

  /// The live set grouped into sections by the value at a key path; see
  /// `sectioned(by:)` with a string key. Keys match as they do there: a `Double` key
  /// makes one section of every NaN.
  ///
  /// ```swift
  /// for try await state in animals.sortBy(\.species).sectioned(by: \.species) {
  ///   print(state.sections.map(\.key))          // ["Cow", "Dog"]
  /// }
  /// ```
  public func sectioned<Key: Hashable & Sendable>(by keyPath: KeyPath<Element, Key> & Sendable)
    -> RequestSetSections<Element, Key>
  {
    RequestSetSections(set: self) { records in records.map { $0[keyPath: keyPath] } }
  }
}
