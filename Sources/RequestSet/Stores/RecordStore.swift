/// A record that RequestSet stores can hold: `Codable` for storage and string keys,
/// `Identifiable` for `save` and `delete`, `Sendable` for concurrent use.
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

  /// The store's current contents, for a query to evaluate.
  func snapshot() throws -> StoreSnapshot<Element>
}
