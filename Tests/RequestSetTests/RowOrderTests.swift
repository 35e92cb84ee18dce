import Foundation
import Testing

@testable import RequestSet

/// `values(...)` rows and group rows keep their keys in the order asked, on every store,
/// sync and async, and print the same way every time: seeded random key orders against a
/// plain-array reference, and `RequestRow` itself read and written like a dictionary.
@Suite(.ownThreads) struct RowOrderTests {
  static let animals = Animal.random(count: 90, seed: 0x0D3E)
  /// Scalar keys the reference reads (`Animal.ref`), top-level and nested.
  static let valueKeys = ["id", "name", "species", "age", "weight", "nickname", "owner.city", "owner.name"]
  static let groupKeys = ["species", "nickname", "owner.city", "age"]
  /// Aggregates the reference computes exactly (no floating-point sums).
  static let aggregates: [RequestAggregate] = [
    .count, .sum("age"), .min("name"), .max("age"), .max("nickname"),
  ]

  /// `["name": "Rex", "age": 5]`, as the reference prints a row of `keys`.
  static func referenceText(_ keys: [String], _ values: [RefValue]) -> String {
    keys.isEmpty
      ? "[:]"
      : "[" + zip(keys, values).map { "\(String(reflecting: $0)): \($1)" }.joined(separator: ", ") + "]"
  }

  /// `keys` without repeats, each in its first place.
  static func distinct(_ keys: [String]) -> [String] {
    var seen = Set<String>()
    return keys.filter { seen.insert($0).inserted }
  }

  @Test(arguments: StoreKind.allCases)
  func valuesKeepTheKeysInTheOrderAsked(kind: StoreKind) async throws {
    let set = try kind.makeSet(Self.animals).sortBy("id")
    let byID = Self.animals.sorted { $0.id < $1.id }
    var rng = SeededRandom(seed: 0x7A1E)
    for round in 0..<12 {
      // A random order of 1 to 8 keys; every third round repeats one.
      var keys = Array(
        Self.valueKeys.shuffled(using: &rng).prefix(Int.random(in: 1...Self.valueKeys.count, using: &rng)))
      if round % 3 == 2 {
        keys.insert(keys.randomElement(using: &rng)!, at: Int.random(in: 0...keys.count, using: &rng))
      }
      let expectedKeys = Self.distinct(keys)
      let expected = byID.map { a in Self.referenceText(expectedKeys, expectedKeys.map { a.ref($0) }) }
      let rows = try set.values(keys)
      let asyncRows = try await set.async.values(keys)
      #expect(
        rows.allSatisfy { $0.keys == expectedKeys },
        "round \(round): \(keys) on \(kind): \(rows.first.map(\.keys) ?? [])")
      #expect(rows.map(\.description) == expected, "round \(round): \(keys) on \(kind)")
      #expect(asyncRows == rows, "round \(round): async \(keys) on \(kind)")
      #expect("\(rows.prefix(2))" == "[" + expected.prefix(2).joined(separator: ", ") + "]")
    }
    // The variadic form, and a key asked twice keeps its first place.
    let rows = try set.values("owner.city", "name", "owner.city")
    #expect(rows.first?.keys == ["owner.city", "name"])
    // With no keys, every top-level key, alphabetically.
    #expect(
      try set.limit(1).values().first?.keys == [
        "age", "id", "name", "nickname", "owner", "species", "tags", "weight",
      ])
  }

  @Test(arguments: StoreKind.allCases)
  func groupRowsHoldTheGroupKeysThenTheAggregatesInTheOrderGiven(kind: StoreKind) async throws {
    let set = try kind.makeSet(Self.animals)
    var rng = SeededRandom(seed: 0x6409)
    for round in 0..<10 {
      let keys = Array(Self.groupKeys.shuffled(using: &rng).prefix(Int.random(in: 1...2, using: &rng)))
      let aggregates = Array(
        Self.aggregates.shuffled(using: &rng).prefix(Int.random(in: 1...Self.aggregates.count, using: &rng)))
      var groups = set.groupBy(keys)
      for aggregate in aggregates { groups = groups.aggregate(aggregate) }
      let names = keys + aggregates.map(\.name)
      let rows = try groups.fetch()
      #expect(
        rows.allSatisfy { $0.keys == names },
        "round \(round): \(names) on \(kind): \(rows.first.map(\.keys) ?? [])")
      #expect(
        rows.map(\.description) == Self.referenceGroups(keys, aggregates),
        "round \(round): \(names) on \(kind)")
      #expect(try await groups.async.fetch() == rows, "round \(round): async \(names) on \(kind)")
    }
    // The variadic form, pushed down or not; a group key named like an aggregate keeps its
    // first place and takes the aggregate's value, as before.
    let first = try set.groupBy("owner.city", "species").aggregate(.max("age"), .count).fetch().first
    #expect(first?.keys == ["owner.city", "species", "max:age", "count"])
  }

  /// The rows of `groupBy(keys).aggregate(aggregates)` over the animals, as text, computed
  /// over a plain array: ordered by the group keys, nil first.
  static func referenceGroups(_ keys: [String], _ aggregates: [RequestAggregate]) -> [String] {
    var groups: [(key: [RefValue], members: [Animal])] = []
    for a in animals {
      let key = keys.map { a.ref($0) }
      if let g = groups.firstIndex(where: { $0.key == key }) {
        groups[g].members.append(a)
      } else {
        groups.append((key, [a]))
      }
    }
    let ordered = groups.sorted { x, y in
      for (a, b) in zip(x.key, y.key) {
        let c = refSortOrder(a, b, caseInsensitive: false)
        if c != 0 { return c < 0 }
      }
      return false
    }
    return ordered.map { key, members in
      let values = aggregates.map { aggregate -> RefValue in
        switch aggregate.name {
        case "count": return .int(members.count)
        case "sum:age": return .int(members.map(\.age).reduce(0, +))
        case "min:name": return .string(members.map(\.name).min()!)
        case "max:age": return .int(members.map(\.age).max()!)
        case "max:nickname": return members.compactMap(\.nickname).max().map(RefValue.string) ?? .null
        default: fatalError("The reference does not compute \(aggregate.name)")
        }
      }
      return referenceText(keys + aggregates.map(\.name), key + values)
    }
  }

  @Test func aRowReadsLikeADictionaryInOrder() {
    var row: RequestRow = ["name": .string("Rex"), "owner.city": .string("Oslo"), "age": .int(5)]
    #expect(row.keys == ["name", "owner.city", "age"])
    #expect(row.values == [.string("Rex"), .string("Oslo"), .int(5)])
    #expect(row["owner.city"] == .string("Oslo"))
    #expect(row["weight"] == nil)
    #expect(row.count == 3)
    #expect(row.index(forKey: "age") == 2)
    #expect(row.map { $0.key } == ["name", "owner.city", "age"])
    var pairs: [String] = []
    for (key, value) in row { pairs.append("\(key)=\(value)") }
    #expect(pairs == ["name=\"Rex\"", "owner.city=\"Oslo\"", "age=5"])
    #expect(row.description == #"["name": "Rex", "owner.city": "Oslo", "age": 5]"#)
    #expect(String(reflecting: row) == row.description)
    #expect("\([row, [:]])" == #"[["name": "Rex", "owner.city": "Oslo", "age": 5], [:]]"#)
    #expect(row.dictionary == ["age": .int(5), "name": .string("Rex"), "owner.city": .string("Oslo")])
    #expect([String: FieldValue](row) == row.dictionary)

    // Assigning keeps a key's place, appends a new key, and nil removes.
    row["age"] = .int(6)
    row["nickname"] = .null
    #expect(row.description == #"["name": "Rex", "owner.city": "Oslo", "age": 6, "nickname": nil]"#)
    row["name"] = nil
    row["missing"] = nil
    #expect(row.keys == ["owner.city", "age", "nickname"])
    #expect(row["name"] == nil)
    #expect(row["nickname"] == .null)
  }

  @Test func rowsAreEqualWithTheSameKeysInTheSameOrder() {
    let row: RequestRow = ["name": .string("Rex"), "age": .int(5)]
    #expect(row == ["name": .string("Rex"), "age": .double(5)])
    #expect(row != ["age": .int(5), "name": .string("Rex")])
    #expect(row.dictionary == (["age": .int(5), "name": .string("Rex")] as RequestRow).dictionary)
    #expect(row != ["name": .string("Rex")])
    #expect(Set<RequestRow>([row, ["name": .string("Rex"), "age": .int(5)]]).count == 1)
    #expect(row.hashValue == (["name": .string("Rex"), "age": .double(5)] as RequestRow).hashValue)
    // A repeated literal key keeps its first place and takes its last value.
    let twice: RequestRow = ["a": .int(1), "b": .int(2), "a": .int(3)]
    #expect(twice.keys == ["a", "b"])
    #expect(twice["a"] == .int(3))
    let empty: RequestRow = [:]
    #expect(empty.isEmpty)
    #expect(empty.description == "[:]")
  }
}
