/// A record that RequestSet stores can hold: `Codable` for storage and string keys,
/// `Identifiable` for `save` and `delete`, `Sendable` for concurrent use.
///
/// A record is usually a struct. It may be a `final class`: a store never shares the
/// caller's object then. It keeps its own copy, decoded from what `encode(to:)` writes,
/// and hands out a fresh copy on every read, so changing an object after inserting it, or
/// one a query returned, changes nothing stored (write the change with `save(_:)`), and
/// key-path and string-key filters see the same values. A request set over an array of
/// class records copies them when it is created.
///
/// A stored property left out of `CodingKeys` is not stored: a store holds what the
/// record's encoding keeps. Once a type's first records show that decoding their fields
/// loses such a value, every store keeps the type's records as they decode back (the
/// property holds what `init(from:)` gives it, as when a ``LogStore`` reads it), so key
/// paths to it, and to computed properties that read it, answer alike on every store.
///
/// ```swift
/// struct Animal: Record {
///   var id: Int
///   var name: String
///   var age: Int
/// }
/// ```
public protocol Record: Codable, Sendable, Identifiable where ID: Codable & Hashable & Sendable {}

/// A backend that RequestSet queries: it holds records by id and hands out snapshots.
///
/// ``MemoryStore`` is the built-in one. A backend needs only to write records and to
/// return a ``StoreSnapshot`` of its current contents; the query engine does the rest.
///
/// ```swift
/// let store = MemoryStore<Animal>()
/// try store.insert(Animal(id: 1, name: "Micky", age: 3))
/// let animals = RequestSet(store)    // works the same with any RecordStore
/// ```
public protocol RecordStore<Element>: AnyObject, Sendable {
  /// The type of record the store holds.
  associatedtype Element: Record

  /// Inserts a record.
  ///
  /// - Throws: ``RequestSetError`` `.duplicateID` when a record with the same id is stored.
  func insert(_ record: Element) throws

  /// Inserts several records, all or none of them.
  ///
  /// - Throws: ``RequestSetError`` `.duplicateID` when any id is stored already or occurs
  ///   twice in `records`; nothing is inserted then.
  func insert(contentsOf records: some Sequence<Element>) throws

  /// Inserts the record, or replaces the stored record with the same id (which keeps its
  /// place in store order).
  func save(_ record: Element) throws

  /// Deletes the record with this id.
  ///
  /// - Returns: Whether a record was deleted.
  @discardableResult
  func delete(id: Element.ID) throws -> Bool

  /// Applies changes atomically, in order: all of them or none.
  ///
  /// - Parameters:
  ///   - changes: The inserts, saves and deletes to apply, in order.
  ///   - expectedVersion: When not nil, the store applies nothing and throws `.conflict`
  ///     unless its version (``StoreSnapshot/version``) is still this one: the optimistic
  ///     check that `update` and `delete` through a query rely on.
  /// - Throws: ``RequestSetError`` `.duplicateID` for an insert whose id is taken,
  ///   `.conflict` for a stale `expectedVersion`; nothing is applied then.
  func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws

  /// The record with this id, or nil.
  func fetch(id: Element.ID) throws -> Element?

  /// The store's current contents, for a query to evaluate.
  func snapshot() throws -> StoreSnapshot<Element>

  /// The store's commits from now on, in order, each with the changes it applied: what
  /// live request sets (``RequestSet/changes``) follow. A default polls ``snapshot()``.
  func commits(polling interval: Duration) -> AsyncStream<StoreCommit<Element>>

  /// Closes the store: it releases what it holds (a file, its lock, its records), and
  /// reads and writes afterwards throw `.closed`.
  ///
  /// Request sets evaluated before keep their records. Closing twice does nothing. The
  /// default does nothing, so stores written before `close()` existed keep compiling; a
  /// store that holds a resource implements it.
  ///
  /// ```swift
  /// let store = try LogStore<Animal>(path: "animals.rslog")
  /// defer { store.close() }   // releases the write lock at once, whoever still holds the store
  /// ```
  func close()

  /// The threads the async API (``AsyncRecordStore``, ``AsyncRequestSet``) runs this
  /// store's work on, or nil to run it on the calling task (for a store whose every call
  /// is quick: it then holds a thread of Swift's cooperative pool while it runs).
  ///
  /// The default is ``StoreThreads/shared``: a backend written outside RequestSet may
  /// block. ``MemoryStore``, ``LogStore`` and the SQL stores own threads.
  ///
  /// ```swift
  /// let cows = try await RequestSet(store).filter("species", value: "Cow").async.fetch()
  /// // runs on store.asyncThreads, not on the task's thread
  /// ```
  var asyncThreads: StoreThreads? { get }

  /// Throws when the store cannot take a write now: closed, opened read-only, or waiting
  /// for a migration (`.closed`, `.readOnly`, `.migrationPending`). Writes through a query
  /// (`update`, `delete`, `firstOrInsert`) ask before they read, so they throw the error a
  /// direct write would rather than one from reading records an unrun migration has not
  /// yet reshaped. The default accepts every write; ``apply(_:ifVersion:)`` still checks.
  ///
  /// ```swift
  /// try store._checkWritable()   // .migrationPending until store.migrate() runs
  /// ```
  func _checkWritable() throws
}

extension RecordStore {
  /// Accepts every write: a store whose writes can be refused says so in `apply`.
  public func _checkWritable() throws {}
}

extension RecordStore {
  /// ``StoreThreads/shared``: a store that declares no threads of its own may block.
  public var asyncThreads: StoreThreads? { StoreThreads.shared }
}

extension RecordStore {
  /// Does nothing: a store with nothing to release need not implement ``close()``.
  public func close() {}
}

extension RecordStore {
  /// The record with this id, or nil: the default reads a snapshot in O(*n*); stores
  /// with an index by id answer in O(1).
  ///
  /// ```swift
  /// let rex = try store.fetch(id: 3)
  /// ```
  public func fetch(id: Element.ID) throws -> Element? {
    let snapshot = try snapshot()
    for slot in snapshot._liveSlots() {
      let record = try snapshot._record(at: slot)
      if record.id == id { return record }
    }
    return nil
  }
}
