import Testing
@testable import RequestSet

/// `filter(\.id == v)` is answered from the store's id map without a planning pass: the
/// answers must be exactly what a scan gives, windows, misses, deletes and later writes
/// included.
@Suite(.ownThreads) struct IDMapLookupTests {
  @Test(arguments: StoreKind.allCases)
  func anIDLookupAnswersAsAScanWould(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo)
    #expect(set.filter(\.id == 3).first?.name == "Rex")
    #expect(try set.filter(\.id == 3).fetch().map(\.name) == ["Rex"])
    #expect(set.filter(\.id == 3).count == 1)
    #expect(set.filter(\.id == 42).first == nil)
    #expect(set.filter(\.id == 42).isEmpty)
    #expect(set.filter(\.id == 3).limit(0).count == 0)
    #expect(set.filter(\.id == 3).offset(1).first == nil)
    #expect(set.filter(\.id == 3).limit(5).map(\.id) == [3])
    // Anything more than the id goes through the planner and still agrees.
    #expect(set.filter(\.id == 3 && \.age > 10).first == nil)
    #expect(set.filter(\.id == 3).sortBy(\.age).map(\.id) == [3])
  }

  @Test(arguments: StoreKind.writable)
  func anIDLookupSeesDeletesAndKeepsItsSnapshot(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let all = RequestSet(store)
    #expect(try store.delete(id: 3))
    #expect(all.filter(\.id == 3).first == nil)
    let before = all.filter(\.id == 5)
    #expect(before.count == 1)
    #expect(try store.delete(id: 5))
    // The set read its snapshot before the delete: it still holds the record.
    #expect(before.first?.name == "alice")
    // A set whose snapshot is older than the store: the id map no longer describes
    // that snapshot, so the query scans it, and agrees.
    let late = RequestSet(store).filter(\.id == 9)
    #expect(!late.exists)
    try store.insert(Animal(id: 9, name: "Late", species: "Cow", age: 1))
    #expect(late.first == nil)
    #expect(late.refreshed().first?.name == "Late")
    #expect(RequestSet(store).filter(\.id == 9).first?.name == "Late")
  }
}
