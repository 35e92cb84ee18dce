import Foundation
import Testing
@testable import RequestSet

@Suite(.ownThreads) struct KeyTests {
  func ids(_ s: RequestSet<Animal>) throws -> [Int] { try s.fetch().map(\.id) }

  @Test(arguments: StoreKind.allCases)
  func dottedKeysReachNestedValues(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.filter("owner.city", value: "Oslo")) == [2, 4])
    #expect(try ids(all.filter("owner.name", value: "Bo")) == [6])
    #expect(try ids(all.filter("owner", value: nil)) == [3, 5])
    #expect(try ids(all.exclude("owner", value: nil)) == [1, 2, 4, 6])
    #expect(try ids(all.filter("owner", value: Owner(name: "Ann", city: "Oslo"))) == [2, 4])
    #expect(try ids(all.filter("tags", value: ["farm"])) == [3])
    #expect(try ids(all.filter("owner.city", value: nil)) == [3, 5])
  }

  @Test(arguments: StoreKind.allCases)
  func nilMatchesNil(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.filter("nickname", value: nil)) == [2, 4, 6])
    #expect(try ids(all.filter("nickname", .notEqual, nil)) == [1, 3, 5])
    // Ordering comparisons never match nil, as in SQL.
    #expect(try ids(all.filter("nickname", .lessThan, "Z")) == [1, 3, 5])
    #expect(try ids(all.filter("nickname", .greaterThan, nil)) == [])
  }

  @Test(arguments: StoreKind.allCases)
  func numbersCompareAcrossIntAndDouble(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.filter("weight", value: 30)) == [3])
    #expect(try ids(all.filter("age", value: 5.0)) == [3, 6])
    #expect(try ids(all.filter("age", .greaterThan, 4.5)) == [2, 3, 5, 6])
    #expect(try ids(all.filter("weight", .lessThanOrEqual, 25)) == [1, 5, 6])
    #expect(try ids(all.filter("age", value: Int32(7))) == [2])
    #expect(try ids(all.filter("age", value: 5.5)) == [])
  }

  @Test(arguments: StoreKind.allCases)
  func keysAreCodableKeys(kind: StoreKind) throws {
    struct Renamed: Record {
      var id: Int
      var displayName: String
      enum CodingKeys: String, CodingKey {
        case id
        case displayName = "display_name"
      }
    }
    let set: RequestSet<Renamed>
    let records = [Renamed(id: 1, displayName: "A"), Renamed(id: 2, displayName: "B")]
    if kind == .array { set = RequestSet(records) } else { set = RequestSet(try MemoryStore(records)) }
    #expect(try set.filter("display_name", value: "B").fetch().map(\.id) == [2])
    #expect(throws: RequestSetError.self) { try set.filter("displayName", value: "B").fetch() }
  }

  @Test(arguments: StoreKind.checkingKeys)
  func anUnknownKeyNamesTheKeyAndListsTheKeysThatExist(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let error = try #require(throws: RequestSetError.self) { try all.filter("nmae", value: "Micky").fetch() }
    #expect(error.code == .unknownKey)
    #expect(
      error.message == """
        Unknown key "nmae" for Animal. Known keys: age, id, name, nickname, owner, owner.city, owner.name, \
        species, tags, weight. Use one of them, or a dotted path into a nested value.
        """)
    // Sorts and fetchCount report the same error.
    #expect(throws: RequestSetError.self) { try all.sortBy("nmae").fetch() }
    #expect(throws: RequestSetError.self) { try all.sortBy("nmae").fetchCount() }
    #expect(throws: RequestSetError.self) { try all.limit(1).filter("nmae", value: 1).fetchCount() }
  }

  @Test(arguments: StoreKind.checkingKeys)
  func keysAreKnownEvenWhenEveryRecordLeavesThemOut(kind: StoreKind) throws {
    // No record has a nickname or an owner, so encoding never shows those keys; decoding
    // the first record through the type's Decodable conformance does.
    let plain = [Animal(id: 1, name: "A", species: "Cow", age: 1)]
    let all = try kind.makeSet(plain)
    #expect(try all.filter("nickname", value: nil).fetch().count == 1)
    #expect(try all.filter("owner.city", value: "Oslo").fetch().isEmpty)
    #expect(try all.sortBy("owner.city").fetch().count == 1)
    #expect(throws: RequestSetError.self) { try all.filter("nmae", value: 1).fetch() }
    // Under `owner`, nil in every record, any key is accepted until an owner is stored;
    // under a key that holds a String, none is.
    #expect(throws: RequestSetError.self) { try all.filter("name.first", value: 1).fetch() }
  }

  /// A store learns its keys from its records (its type's decoder is never fed made-up
  /// values, see `_SchemaProbe`): before the first, any key is accepted and matches
  /// nothing; from the first on, a bad key is an error.
  @Test(arguments: StoreKind.checkingKeys)
  func anEmptyStoreAcceptsAnyKeyUntilItHoldsARecord(kind: StoreKind) throws {
    let empty = try kind.makeSet([])
    #expect(try empty.filter("nmae", value: 1).fetch().isEmpty)
    #expect(empty.filter("name", value: "x").count == 0)
    guard kind != .array else { return }
    let store = try kind.makeStore()
    #expect(try RequestSet(store).filter("nmae", value: 1).fetch().isEmpty)
    try store.insert(Animal(id: 1, name: "A", species: "Cow", age: 1))
    #expect(throws: RequestSetError.self) { try RequestSet(store).filter("nmae", value: 1).fetch() }
    #expect(try RequestSet(store).filter("nickname", value: nil).fetch().count == 1)
  }

  @Test(arguments: StoreKind.checkingKeys)
  func aValueThatCannotMatchItsFieldIsAnError(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let error = try #require(throws: RequestSetError.self) { try all.filter("age", value: "three").fetch() }
    #expect(error.code == .typeMismatch)
    #expect(
      error.message == """
        Key "age" of Animal holds number values, so it can never match "three", which is a String. \
        Pass a number or nil.
        """)
    #expect(throws: RequestSetError.self) { try all.filter("name", .greaterThan, 3).fetch() }
    #expect(throws: RequestSetError.self) { try all.filter([("name", "Rex"), ("age", true)]).fetch() }
  }

  @Test func encodedValuesMatchHowRecordsEncode() throws {
    struct Event: Record {
      enum Kind: String, Codable, Sendable, CaseIterable { case birth, death }
      var id: UUID
      var at: Date
      var kind: Kind
    }
    let a = Event(id: UUID(), at: Date(timeIntervalSinceReferenceDate: 100), kind: .birth)
    let b = Event(id: UUID(), at: Date(timeIntervalSinceReferenceDate: 200), kind: .death)
    let store = try MemoryStore([a, b])
    let events = RequestSet(store)
    #expect(try events.filter("id", value: b.id).get().id == b.id)
    #expect(try events.filter("at", .greaterThan, Date(timeIntervalSinceReferenceDate: 150)).get().id == b.id)
    #expect(try events.filter("kind", value: Event.Kind.birth).get().id == a.id)
    #expect(try events.sortBy("at", order: .descending).fetch().map(\.id) == [b.id, a.id])
  }
}
