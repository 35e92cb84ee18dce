import Foundation
import Testing

@testable import RequestSet

/// The fast paths of small queries: a count that one index answers reads only the index,
/// `first`/`last` by id go straight to the id map, and a `LogStore` keeps the kinds of its
/// fields between queries. Each must answer exactly as the general path does: on every
/// store, with deleted and missing values, windows, sorts, writes between calls, reads of
/// the past and live results.
@Suite(.ownThreads) struct SmallQueryTests {
  /// 200 records with a few deleted on the stores that take writes, and what is left.
  static func population(_ kind: StoreKind) throws -> (set: RequestSet<Animal>, records: [Animal]) {
    var records = Animal.random(count: 200, seed: 71)
    guard kind != .array else { return (RequestSet(records), records) }
    let store = try kind.makeStore()
    try store.insert(contentsOf: records)
    for id in stride(from: 3, through: 200, by: 17) { #expect(try store.delete(id: id)) }
    records.removeAll { ($0.id - 3) % 17 == 0 }
    return (RequestSet(store), records)
  }

  @Test(arguments: StoreKind.allCases)
  func anIndexedCountAnswersAsTheRecordsDo(kind: StoreKind) throws {
    let (set, records) = try Self.population(kind)
    let names = Set(records.map(\.name)).sorted() + ["Nobody"]
    for name in names {
      let expected = records.filter { $0.name == name }.count
      #expect(set.filter(\.name == name).count == expected, "\(kind) name \(name)")
      #expect(set.filter("name", value: name).count == expected, "\(kind) name \(name)")
      #expect(try set.filter(\.name == name).fetchCount() == expected)
      // Windows and sorts count as the records do.
      #expect(set.filter(\.name == name).offset(1).count == max(0, expected - 1))
      #expect(set.filter(\.name == name).limit(2).count == min(2, expected))
      #expect(set.filter(\.name == name).sortBy(\.age).limit(3).count == min(3, expected))
      #expect(set.filter(\.name == name).reversed().count == expected)
    }
    for age in [-1, 0, 7, 20, 99] {
      #expect(set.filter(\.age == age).count == records.filter { $0.age == age }.count)
      #expect(set.filter(\.age > age).count == records.filter { $0.age > age }.count)
      #expect(set.filter("age", .lessThanOrEqual, age).count == records.filter { $0.age <= age }.count)
    }
    #expect(
      set.filter(\.age, in: [1, 4, 4, 9]).count == records.filter { [1, 4, 9].contains($0.age) }.count)
    #expect(set.filter(\.nickname == nil).count == records.filter { $0.nickname == nil }.count)
    #expect(set.filter(\.weight >= 50.0).count == records.filter { $0.weight >= 50 }.count)
    // An id, deleted or not, and an id no record has.
    for id in [3, 4, 1_000] {
      #expect(set.filter(\.id == id).count == records.filter { $0.id == id }.count)
    }
  }

  @Test(arguments: StoreKind.allCases)
  func anIndexedCountThrowsWhatTheQueryThrows(kind: StoreKind) throws {
    let (set, _) = try Self.population(kind)
    let counted = #expect(throws: RequestSetError.self) { try set.filter("age", value: "old").fetchCount() }
    let fetched = #expect(throws: RequestSetError.self) { try set.filter("age", value: "old").fetch() }
    #expect(counted?.code == .typeMismatch)
    #expect(counted?.message == fetched?.message)
    let badSort = #expect(throws: RequestSetError.self) {
      try set.filter(\.name == "Rex").sortBy("nope").fetchCount()
    }
    #expect(badSort?.code == .unknownKey)
    let badWindow = #expect(throws: RequestSetError.self) {
      try set.filter(\.name == "Rex").limit(-1).fetchCount()
    }
    #expect(badWindow?.code == .invalidWindow)
  }

  /// A count fixes the set's snapshot, as every read does: the records read afterwards
  /// are the ones it counted, whatever the store does in between.
  @Test(arguments: StoreKind.writable)
  func anIndexedCountFixesTheSnapshot(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = RequestSet(store).filter(\.species == "Cow")
    let before = Animal.zoo.filter { $0.species == "Cow" }
    #expect(cows.count == before.count)
    try store.insert(Animal(id: 100, name: "Late", species: "Cow", age: 1))
    #expect(try store.delete(id: before[0].id))
    #expect(try cows.fetch() == before)
    #expect(cows.map(\.id) == before.map(\.id))
    #expect(cows.count == before.count)
    #expect(cows.refreshed().count == before.count)  // one in, one out
    #expect(try cows.refreshed().fetch().map(\.id) == before.dropFirst().map(\.id) + [100])
  }

  /// The indexed kinds take the index path; the others must not pretend to.
  @Test(arguments: StoreKind.allCases)
  func theIndexedCountIsTakenWhereAnIndexAnswers(kind: StoreKind) throws {
    let (set, records) = try Self.population(kind)
    let indexed = kind == .indexedMemory || kind == .indexedLog
    for query in [
      set.filter(\.name == "Rex"), set.filter("species", value: "Cow"), set.filter(\.age > 12).limit(5),
    ] {
      let snapshot = try query._cache.snapshot(query._source)
      let counted = try _Executor.indexedCount(query._query, in: snapshot)
      #expect((counted != nil) == indexed, "\(kind): \(query._filterText)")
      if let counted { #expect(counted == (try query.fetch()).count) }
    }
    // A closure, an OR of two keys and a distinct never count from an index.
    for query in [
      set.filter { $0.age > 3 }, set.filter(\.name == "Rex" || \.age == 3),
      set.filter(\.age == 3).distinct(\.name),
    ] {
      let snapshot = try query._cache.snapshot(query._source)
      #expect(try _Executor.indexedCount(query._query, in: snapshot) == nil)
    }
    #expect(
      set.filter(\.name == "Rex" || \.age == 3).count
        == records.filter { $0.name == "Rex" || $0.age == 3 }.count)
  }

  @Test(arguments: StoreKind.allCases)
  func firstAndLastByIDAnswerAsTheGeneralPath(kind: StoreKind) throws {
    let (set, records) = try Self.population(kind)
    for id in [1, 3, 4, 20, 200, 201, -5] {
      let expected = records.first { $0.id == id }
      #expect(set.filter(\.id == id).first == expected, "\(kind) id \(id)")
      #expect(set.filter(\.id == id).last == expected, "\(kind) id \(id)")
      // The same query through the planner (a condition that is always true beside it).
      #expect(set.filter(\.id == id && \.age >= 0).first == expected)
      #expect(set.filter(\.id == id).offset(1).first == nil)
      #expect(set.filter(\.id == id).limit(0).last == nil)
    }
  }

  /// A store whose ids are strings: a string id finds its record or nothing, and a
  /// number where the id holds strings is a type mismatch, not an empty result.
  @Test(arguments: StoreKind.writable)
  func stringIDsFindTheirRecordAndNumbersDoNotMatch(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Tagged.self)
    try store.insert(contentsOf: [Tagged(id: "1", number: 1), Tagged(id: "2", number: 2)])
    let set = RequestSet(store)
    #expect(set.filter(\.id == "2").first?.number == 2)
    #expect(set.filter(\.id == "2").last?.number == 2)
    #expect(set.filter(\.id == "3").first == nil)
    // The number 1 is another record's field, not an id.
    #expect(set.filter(\.number == 1).first?.id == "1")
    let mismatch = #expect(throws: RequestSetError.self) { try set.filter("id", value: 1).fetch() }
    #expect(mismatch?.code == .typeMismatch)
    #expect(set.filter("id", value: "1").count == 1)
  }

  /// `first` by id on a set whose snapshot the store has moved past reads that snapshot.
  @Test(arguments: StoreKind.writable)
  func firstByIDReadsTheSetsSnapshot(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let all = RequestSet(store)
    let rex = all.filter(\.id == 3)
    #expect(rex.exists)
    try store.save(Animal(id: 3, name: "Rex II", species: "Dog", age: 1))
    #expect(rex.first?.name == "Rex")
    #expect(rex.last?.name == "Rex")
    #expect(rex.refreshed().first?.name == "Rex II")
    #expect(try store.delete(id: 3))
    #expect(rex.first?.name == "Rex")
    #expect(rex.refreshed().first == nil)
    #expect(rex.refreshed().count == 0)
  }

  /// Reads of the past have no indexes or id map: they answer from their own records.
  @Test func readsOfThePastAnswerFromThatVersion() throws {
    let store = try StoreKind.indexedLog.makeStore() as! LogStore<Animal>
    try store.insert(contentsOf: Animal.zoo)
    let before = try #require(try store.history().last).version
    try store.save(Animal(id: 3, name: "Rex II", species: "Dog", age: 1))
    try store.insert(Animal(id: 100, name: "Late", species: "Cow", age: 1))
    #expect(try store.delete(id: 2))
    let past = try RequestSet(store, asOf: before)
    #expect(past.filter(\.id == 3).first?.name == "Rex")
    #expect(past.filter(\.id == 2).last?.name == "Daisy")
    #expect(past.filter(\.id == 100).first == nil)
    #expect(past.filter(\.species == "Cow").count == Animal.zoo.filter { $0.species == "Cow" }.count)
    #expect(past.filter(\.name == "Rex II").count == 0)
    #expect(RequestSet(store).filter(\.name == "Rex II").count == 1)
    #expect(
      RequestSet(store).filter(\.species == "Cow").count == Animal.zoo.filter { $0.species == "Cow" }.count)
  }

  /// A live set over an indexed filter reports what its count says, before and after a
  /// write.
  @Test(arguments: StoreKind.writable)
  func liveResultsAgreeWithTheIndexedCount(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = RequestSet(store).filter(\.species == "Cow")
    let reader = StateReader(cows)
    let first = try #require(try await reader.next())
    #expect(first.records.count == cows.count)
    try store.insert(Animal(id: 100, name: "Late", species: "Cow", age: 1))
    let second = try #require(try await reader.next())
    #expect(second.records.count == cows.refreshed().count)
    #expect(second.records.count == first.records.count + 1)
  }

  /// The `LogStore` hands out the kinds it materialized last while nothing changed them,
  /// and new ones once a write adds a kind: a stale answer would call a string in `v` a
  /// type mismatch.
  @Test func aLogStoresFieldKindsFollowItsWrites() throws {
    let store = try LogStore<Loose>(path: TemporaryLogDirectory.freshPath())
    try store.insert(Loose(id: 1, v: .int(1)))
    let set = RequestSet(store)
    #expect(set.filter("v", value: 1).count == 1)
    #expect(set.filter("v", value: 1).count == 1)
    let mismatch = #expect(throws: RequestSetError.self) { try set.filter("v", value: "one").fetchCount() }
    #expect(mismatch?.code == .typeMismatch)
    try store.insert(Loose(id: 2, v: .string("one")))
    #expect(try RequestSet(store).filter("v", value: "one").fetchCount() == 1)
    #expect(try RequestSet(store).filter("v", value: 1).fetchCount() == 1)
    // The set read before the write keeps its snapshot's kinds.
    #expect(set.filter("v", value: 1).count == 1)
  }
}

/// A record whose one field holds values of any kind.
private struct Loose: Record, Equatable {
  var id: Int
  var v: FieldValue
}

/// A record whose id is a string.
private struct Tagged: Record, Equatable {
  var id: String
  var number: Int
}
