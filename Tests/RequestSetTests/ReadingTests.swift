import Foundation
import Testing
@testable import RequestSet

/// first(n), last(n), reversed(), exists, distinct, projections and identity lookups,
/// each against a plain-array computation.
@Suite(.ownThreads) struct ReadingTests {
  static let data = Animal.random(count: 120, seed: 0x0EAD)

  @Test(arguments: StoreKind.allCases)
  func firstLastAndReversedAgreeWithTheArray(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.data)
    let byAge = Self.data.enumerated().sorted {
      $0.element.age != $1.element.age ? $0.element.age < $1.element.age : $0.offset < $1.offset
    }.map(\.element.id)
    #expect(try all.sortBy(\.age).first(5).fetch().map(\.id) == Array(byAge.prefix(5)))
    #expect(try all.sortBy(\.age).last(5).fetch().map(\.id) == Array(byAge.suffix(5)))
    #expect(try all.sortBy(\.age).reversed().fetch().map(\.id) == byAge.reversed())
    #expect(try all.reversed().fetch().map(\.id) == Self.data.map(\.id).reversed())
    #expect(try all.last(3).fetch().map(\.id) == Self.data.suffix(3).map(\.id))
    #expect(try all.sortBy(\.age).reversed().reversed().fetch().map(\.id) == byAge)
    #expect(all.sortBy(\.age).first?.id == byAge.first)
    #expect(all.sortBy(\.age).last?.id == byAge.last)
    #expect(all.reversed().first?.id == Self.data.last?.id)
    // reversed() after a window reverses what the window kept.
    #expect(try all.limit(3).reversed().fetch().map(\.id) == Self.data.prefix(3).map(\.id).reversed())
    #expect(try all.sortBy(\.age).reversed().limit(4).fetch().map(\.id) == Array(byAge.reversed().prefix(4)))
    #expect(type(of: all.reversed()) == RequestSet<Animal>.self)
  }

  @Test(arguments: StoreKind.allCases)
  func existsStopsEarlyAndAgreesWithCount(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.data)
    #expect(all.filter("species", value: "Cow").exists)
    #expect(!all.filter("species", value: "Dodo").exists)
    #expect(try all.filter(\.age > 19).fetchExists() == Self.data.contains { $0.age > 19 })
    if StoreKind.checkingKeys.contains(kind) {
      #expect(throws: RequestSetError.self) { try all.filter("nmae", value: 1).fetchExists() }
    }
  }

  @Test(arguments: StoreKind.allCases)
  func distinctKeepsTheFirstRecordPerValue(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.data)
    let youngestFirst = Self.data.enumerated().sorted {
      $0.element.age != $1.element.age ? $0.element.age < $1.element.age : $0.offset < $1.offset
    }.map(\.element)
    var seen = Set<String>()
    let expected = youngestFirst.filter { seen.insert($0.species).inserted }.map(\.id)
    #expect(try all.sortBy(\.age).distinct(\.species).fetch().map(\.id) == expected)
    #expect(try all.sortBy("age").distinct("species").fetch().map(\.id) == expected)
    #expect(all.distinct("species").count == Set(Self.data.map(\.species)).count)
    #expect(try all.sortBy(\.age).distinct(\.species).limit(2).fetch().map(\.id) == Array(expected.prefix(2)))
    #expect(
      all.distinct("species").explain().contains(
        kind.pushesDown ? "pushed to \(kind.sourceName): DISTINCT species" : "distinct: first record for each species"))
  }

  @Test(arguments: StoreKind.allCases)
  func valuesProjectFieldsByKeyAndKeyPath(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let rows = try all.sortBy("id").values("name", "owner.city")
    #expect(rows.count == 6)
    #expect(rows[0] == ["name": .string("Micky"), "owner.city": .string("Burbank")])
    #expect(rows[2] == ["name": .string("Rex"), "owner.city": .null])
    #expect(try all.sortBy(\.name).values(\.name) == Animal.zoo.map(\.name).sorted())
    let everything = try all.limit(1).values()
    #expect(Set(everything[0].keys) == ["id", "name", "species", "age", "weight", "nickname", "tags", "owner"])
    #expect(throws: RequestSetError.self) { try all.values("nmae") }
    #expect(try all.filter("species", value: "Cow").ids() == [2, 4])
  }

  @Test(arguments: StoreKind.writable)
  func identityLookups(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect(try store.exists(id: 3))
    #expect(try !store.exists(id: 99))
    #expect(try store.fetch(id: 3)?.name == "Rex")
    #expect(try store.fetch(id: 99) == nil)
    let bulk = try store.inBulk([1, 3, 99, 3])
    #expect(bulk.count == 2 && bulk[1]?.name == "Micky" && bulk[3]?.name == "Rex")
  }
}

@Suite(.ownThreads) struct AggregateTests {
  static let data = Animal.random(count: 150, seed: 0xA66)

  @Test(arguments: StoreKind.allCases)
  func aggregatesMatchTheArray(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.data)
    let cows = Self.data.filter { $0.species == "Cow" }
    let cowSet = all.filter("species", value: "Cow")
    #expect(try cowSet.sum(\.age) == cows.map(\.age).reduce(0, +))
    #expect(try cowSet.sum("age") == .int(cows.map(\.age).reduce(0, +)))
    #expect(try cowSet.sum(\.weight) == cows.map(\.weight).reduce(0, +))
    #expect(try cowSet.min(\.age) == cows.map(\.age).min())
    #expect(try cowSet.max(\.age) == cows.map(\.age).max())
    #expect(try cowSet.min("age") == .int(cows.map(\.age).min()!))
    #expect(try cowSet.max("name") == .string(cows.map(\.name).max()!))
    let meanAge = Double(cows.map(\.age).reduce(0, +)) / Double(cows.count)
    #expect(try abs(cowSet.average(\.age)! - meanAge) < 1e-9)
    #expect(try abs(cowSet.average("age")! - meanAge) < 1e-9)
    // nil values are skipped, as in SQL.
    let nicknames = Self.data.compactMap(\.nickname)
    #expect(try all.min("nickname") == .string(nicknames.min()!))
    // An empty set.
    let none = all.filter("species", value: "Dodo")
    #expect(try none.sum("age") == .int(0))
    #expect(try none.min("age") == .null)
    #expect(try none.average("age") == nil)
    #expect(try none.max(\.age) == nil)
    #expect(try none.average(\.weight) == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func aggregatesRejectFieldsTheyCannotUse(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let sum = try #require(throws: RequestSetError.self) { try all.sum("name") }
    #expect(sum.code == .typeMismatch)
    #expect(sum.message == #"sum needs numbers, but key "name" of Animal holds String values. Aggregate a numeric key."#)
    let max = try #require(throws: RequestSetError.self) { try all.max("tags") }
    #expect(
      max.message
        == #"max needs values that compare, but key "tags" of Animal holds array values. Use a key holding numbers, strings or Bools."#
    )
    #expect(throws: RequestSetError.self) { try all.average("nmae") }
  }

  @Test(arguments: StoreKind.allCases)
  func groupByWithAggregatesAndHaving(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.data)
    let rows = try all.groupBy("species")
      .aggregate(.count, .max("age"), .sum("weight"), .average("age"), .min("nickname"))
      .having("count", .greaterThan, 25)
      .fetch()
    let groups = Dictionary(grouping: Self.data, by: \.species).filter { $0.value.count > 25 }
    #expect(rows.map { $0["species"] } == groups.keys.sorted().map { FieldValue.string($0) })
    for row in rows {
      guard case .string(let species) = row["species"], let members = groups[species] else {
        Issue.record("unexpected row \(row)")
        continue
      }
      #expect(row["count"] == .int(members.count))
      #expect(row["max:age"] == .int(members.map(\.age).max()!))
      #expect(row["sum:weight"] == .double(members.map(\.weight).reduce(0, +)))
      #expect(row["avg:age"] == .double(Double(members.map(\.age).reduce(0, +)) / Double(members.count)))
      #expect(row["min:nickname"] == (members.compactMap(\.nickname).min().map(FieldValue.string) ?? .null))
    }
  }

  @Test(arguments: StoreKind.allCases)
  func groupByTwoKeysOrderedByAnAggregate(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let rows = try all.groupBy("species", "owner.city").aggregate(.count).sortBy("count", order: .descending).fetch()
    #expect(rows.first == ["species": .string("Cow"), "owner.city": .string("Oslo"), "count": .int(2)])
    #expect(rows.count == 5)
    // Ties keep group-key order: Cat/nil, Dog/nil, Dog/Bergen, Mouse/Burbank.
    #expect(rows.dropFirst().map { $0["species"] } == [.string("Cat"), .string("Dog"), .string("Dog"), .string("Mouse")])
  }

  /// Every NaN falls into one group, as sorts and `distinct` tie NaN with NaN; before,
  /// each NaN made a group of its own, as NaN equals nothing.
  @Test(arguments: StoreKind.allCases)
  func groupByPutsEveryNaNInOneGroup(kind: StoreKind) throws {
    let weights: [Double] = [.nan, 2, .nan, 2, .nan, -.nan]
    let records = weights.enumerated().map { Animal(id: $0.offset, name: "a\($0.offset)", species: "Cat", age: 1, weight: $0.element) }
    let rows = try kind.makeSet(records).groupBy("weight").aggregate(.count).fetch()
    #expect(rows.count == 2)
    #expect(rows.first?["weight"] == .double(2))
    #expect(rows.first?["count"] == .int(2))
    let nan = try #require(rows.last)
    #expect(nan["count"] == .int(4))
    guard case .double(let w) = nan["weight"] else { return #expect(Bool(false), "NaN group key: \(nan)") }
    #expect(w.isNaN)
  }

  @Test(arguments: StoreKind.allCases)
  func groupByErrors(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let tags = try #require(throws: RequestSetError.self) { try all.groupBy("tags").aggregate(.count).fetch() }
    #expect(tags.code == .typeMismatch)
    #expect(
      tags.message
        == #"Cannot group by "tags" of Animal: it holds array values, which do not compare. Group by a key holding numbers, strings or Bools."#
    )
    let having = try #require(throws: RequestSetError.self) {
      try all.groupBy("species").having("total", .greaterThan, 1).fetch()
    }
    #expect(
      having.message
        == #"Unknown row key "total" in having or sortBy. The rows hold: species. Add the aggregate with aggregate(…) first."#
    )
    #expect(throws: RequestSetError.self) { try all.groupBy("nmae").fetch() }
    #expect(throws: RequestSetError.self) { try all.groupBy("species").aggregate(.sum("name")).fetch() }
  }
}
