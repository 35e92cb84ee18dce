import Foundation
import RequestSet
import Synchronization
import Testing

@testable import RequestSetSQLite

/// `values` through relations (`owner.city`, `visits.@count`, `visits.@sum.cost`,
/// `vets.@count`, `owner.pets.@count`) answer as plain Swift does over seeded random
/// windows and filters, on every store: sets of at most `_RelationColumns.fewIDs` records
/// read the related values of their own ids alone (`key IN {ids}`), larger sets every
/// related record's in one pass; both roads are checked against the reference.
@Suite(.ownThreads) struct RelatedValuesTests {
  static let data = ClinicData.generate(people: 120, pets: 1_500, visits: 3_000, vets: 10, seed: 0x7A_11)
  static let keys = [
    "owner.city", "visits.@count", "visits.@sum.cost", "vets.@count", "owner.pets.@count", "owner",
  ]
  static let windows = TestScale.pick(quick: 16, soak: 40)

  /// What `key` reads for `pet`, as `FieldValue`s compare.
  static func reference(_ key: String, _ pet: Pet) -> FieldValue {
    let d = data
    switch key {
    case "owner.city": return d.owner(pet).map { .string($0.city) } ?? .null
    case "visits.@count": return .int(d.visits(pet).count)
    case "visits.@sum.cost":
      let costs = d.visits(pet).map(\.cost)
      return costs.isEmpty ? .int(0) : .double(costs.reduce(0, +))
    case "vets.@count": return .int(d.vets(pet).count)
    case "owner.pets.@count": return .int(d.owner(pet).map { d.petCountByOwner[$0.id] ?? 0 } ?? 0)
    default: return d.owner(pet).map { _ in .int(pet.ownerID!) } ?? .null
    }
  }

  static func check(_ graph: RecordGraph, _ label: String) throws {
    try data.insert(into: graph)
    let pets = graph.records(Pet.self)
    var rng = SeededRandom(seed: 0x7A_11_0001)
    let byID = Dictionary(uniqueKeysWithValues: data.pets.map { ($0.id, $0) })
    for i in 0..<windows {
      // Small windows (a few parents: `key IN {ids}`) and, every fourth, a large set.
      let species = ClinicData.species.randomElement(using: &rng)!
      var set = pets.sortBy("id")
      if i % 4 == 3 {
        set = set.exclude("species", value: species)
      } else {
        set = set.offset(Int.random(in: 0..<1_400, using: &rng)).limit(Int.random(in: 1...6, using: &rng))
      }
      let ids = try set.ids()
      let key = keys.randomElement(using: &rng)!
      let rows = try set.values(key, "id")
      #expect(rows.count == ids.count, "\(label): \(key)")
      for (row, id) in zip(rows, ids) {
        let expected = reference(key, byID[id]!)
        let found = row[key] ?? .null
        #expect(
          found == expected || (found.doubleValue != nil && found.doubleValue == expected.doubleValue),
          "\(label): \(key) of pet \(id): \(found), expected \(expected)")
      }
    }
  }

  @Test(arguments: StoreKind.writable)
  func valuesThroughRelationsAnswerAsPlainSwift(kind: StoreKind) throws {
    try Self.check(try ClinicStores.graph(kind), "\(kind)")
  }

  @Test func valuesThroughRelationsInOneFileAnswerTheSame() throws {
    try Self.check(try ClinicStores.sharedFileGraph(indexed: true, tables: "relvalues"), "one file")
  }

  /// Two pets' visit counts are one group query on their visits alone (an index on
  /// `petID` serves it), not a read of every visit; every pet's counts group every visit
  /// in the statement, and no visit is read into the process either way. A sum reads the
  /// two pets' visits.
  @Test func aFewRecordsReadTheirOwnRelatedRecordsOnly() throws {
    let graph = try ClinicStores.sharedFileGraph(indexed: true, tables: "fewvalues")
    try Self.data.insert(into: graph)
    let pets = graph.records(Pet.self).sortBy("id")
    func visitStatements(_ body: () throws -> [RequestRow]) throws -> [String] {
      let seen = Mutex<[String]>([])
      _ = try _SQLiteConnection._watchStatements(
        { sql in
          // The hook sees every test's statements: only this test's table counts.
          guard sql.contains("FROM \"fewvalues_visits\""),
            sql.hasPrefix("SELECT body FROM") || sql.contains(" GROUP BY ")
          else { return }
          seen.withLock { $0.append(sql) }
        }, during: body)
      return seen.withLock { $0 }
    }
    let few = try visitStatements { try pets.limit(2).values("visits.@count") }
    #expect(few.count == 1 && few[0].contains("count(*) FROM \"fewvalues_visits\" WHERE"), "\(few)")
    let many = try visitStatements { try pets.values("visits.@count") }
    #expect(many.count == 1 && many[0].contains("count(*) FROM \"fewvalues_visits\" GROUP BY"), "\(many)")
    let sums = try visitStatements { try pets.limit(2).values("visits.@sum.cost") }
    #expect(sums.count == 1 && sums[0].hasPrefix("SELECT body FROM \"fewvalues_visits\" WHERE"), "\(sums)")
  }
}

extension FieldValue {
  /// The value as a Double when it is a number.
  fileprivate var doubleValue: Double? {
    switch self {
    case .int(let n): return Double(n)
    case .uint(let n): return Double(n)
    case .double(let d): return d
    default: return nil
    }
  }
}
