import Foundation
import Testing
@testable import RequestSet

/// A record that is a class: the caller may change an object after storing it.
///
/// `@unchecked Sendable`: each test changes its objects from its own task only, before or
/// after (never while) a store reads them, so no two threads touch one object at once.
final class Gadget: Record, @unchecked Sendable {
  var id: Int
  var size: Int
  var label: String

  init(id: Int, size: Int, label: String) {
    self.id = id
    self.size = size
    self.label = label
  }
}

/// Class records: a store keeps its own copy of each, so a caller who changes an object
/// after writing it, or an object it read, changes nothing stored, and key paths and
/// string keys agree on every store.
@Suite(.ownThreads) struct ClassRecordTests {
  static func gadgets() -> [Gadget] { (0..<6).map { Gadget(id: $0, size: $0, label: "g\($0)") } }

  /// Before, a MemoryStore kept the caller's objects: after `size = 100` the key path saw
  /// every gadget and the string key (the fields written at insert) three.
  @Test(arguments: StoreKind.allCases)
  func changingAnInsertedObjectChangesNoStoredRecord(kind: StoreKind) throws {
    let gadgets = Self.gadgets()
    let set = try kind.makeSet(of: gadgets)
    for g in gadgets { g.size = 100 }
    #expect(try set.filter(\.size > 2).fetch().map(\.id) == [3, 4, 5])
    #expect(try set.filter("size", .greaterThan, 2).fetch().map(\.id) == [3, 4, 5])
    #expect(try set.sortBy(\.size, order: .descending).fetch().map(\.size) == [5, 4, 3, 2, 1, 0])
    #expect(try set.filter(\.size == 100).fetchCount() == 0)
  }

  /// An object a set or `fetch(id:)` hands out is a copy too: changing it changes neither
  /// the store nor the next read.
  @Test(arguments: StoreKind.allCases)
  func changingAnObjectReadFromAStoreChangesNothingStored(kind: StoreKind) throws {
    let set = try kind.makeSet(of: Self.gadgets())
    for g in try set.fetch() { g.size = 100 }
    set.first?.label = "changed"
    #expect(try set.filter(\.size < 100).fetchCount() == 6)
    #expect(try set.filter("size", .lessThan, 100).fetchCount() == 6)
    #expect(try set.refreshed().fetch().map(\.label) == Self.gadgets().map(\.label))
    guard kind != .array else { return }
    let store = try kind.makeStore(of: Gadget.self)
    try store.insert(contentsOf: Self.gadgets())
    try #require(try store.fetch(id: 2)).size = 100
    #expect(try store.fetch(id: 2)?.size == 2)
    #expect(try RequestSet(store).filter(\.size == 2).fetchCount() == 1)
  }

  /// A saved object replaces the stored copy; changing it afterwards does not.
  @Test(arguments: StoreKind.writable)
  func saveKeepsACopyOfTheObject(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Gadget.self)
    try store.insert(contentsOf: Self.gadgets())
    let g = Gadget(id: 1, size: 50, label: "saved")
    try store.save(g)
    g.size = 7
    #expect(try RequestSet(store).filter(\.size == 50).fetch().map(\.id) == [1])
    #expect(try RequestSet(store).filter("size", value: 50).fetch().map(\.id) == [1])
    #expect(try RequestSet(store).filter(\.size == 7).fetchCount() == 0)
  }
}
