import Foundation
import RequestSet
import Testing

/// `SUBQUERY(visits, $v, P).@count <op> k` whose `P` reads only the visit runs as the
/// `@count` of the visits `P` selects (RelationSubqueries.swift): one query on the visits'
/// store, or a grouped subquery in the pets' statement. Seeded random predicates answer
/// as plain Swift does and as the road beside it does: the same SUBQUERY with a term that
/// reads the pet (`id >= 0`, always true), which keeps it computed on each pet over the
/// visits materialized.
@Suite(.ownThreads) struct SubqueryCountTests {
  static let data = ClinicData.generate(people: 80, pets: 300, visits: 900, vets: 12, seed: 0x5B_C0)
  static let queries = TestScale.pick(quick: 24, soak: 60)

  /// A random predicate on a visit, in the grammar's `$v.` form, and its answer.
  static func predicate(_ rng: inout SeededRandom, depth: Int = 2) -> (
    text: String, holds: @Sendable (Visit) -> Bool
  ) {
    let d = data
    let roll = Int.random(in: 0..<(depth > 0 ? 8 : 5), using: &rng)
    switch roll {
    case 0:
      let x = Double(Int.random(in: 0...400, using: &rng)) / 4
      let c = Cmp.allCases.randomElement(using: &rng)!
      return ("$v.cost \(c.symbol) \(x)", { c.holds($0.cost, x) })
    case 1:
      let n = Int.random(in: 0...60, using: &rng)
      let c = Cmp.allCases.randomElement(using: &rng)!
      // The constant on the left: mirrored as the parser mirrors a key's comparison.
      if Bool.random(using: &rng) { return ("\(n) \(c.mirrored.symbol) $v.day", { c.holds($0.day, n) }) }
      return ("$v.day \(c.symbol) \(n)", { c.holds($0.day, n) })
    case 2:
      let clinic = ClinicData.clinics.randomElement(using: &rng)!
      return ("$v.vet.clinic == '\(clinic)'", { d.vet($0)?.clinic == clinic })
    case 3:
      return Bool.random(using: &rng)
        ? ("$v.vetID == nil", { $0.vetID == nil }) : ("$v.vet.name != nil", { d.vet($0) != nil })
    case 4:
      let name = ClinicData.vetNames.randomElement(using: &rng)!
      return (
        "$v.vet.name BEGINSWITH[c] '\(name.prefix(2).lowercased())'",
        {
          d.vet($0)?.name.lowercased().hasPrefix(name.prefix(2).lowercased()) == true
        }
      )
    case 5:
      let inner = predicate(&rng, depth: depth - 1)
      return ("NOT (\(inner.text))", { !inner.holds($0) })
    default:
      let a = predicate(&rng, depth: depth - 1)
      let b = predicate(&rng, depth: depth - 1)
      if roll == 6 { return ("(\(a.text) AND \(b.text))", { a.holds($0) && b.holds($0) }) }
      return ("(\(a.text) OR \(b.text))", { a.holds($0) || b.holds($0) })
    }
  }

  /// Random counted SUBQUERYs: their format, the same forced onto the materialized road,
  /// and the pets' ids they select in plain Swift.
  static func cases() -> [(format: String, materialized: String, ids: [Int])] {
    var rng = SeededRandom(seed: 0x5B_C0_0001)
    return (0..<queries).map { _ in
      let p = predicate(&rng)
      let k = Int.random(in: 0...3, using: &rng)
      let c = Cmp.allCases.randomElement(using: &rng)!
      let size = Bool.random(using: &rng) ? ".@count" : "[SIZE]"
      let format = "SUBQUERY(visits, $v, \(p.text))\(size) \(c.symbol) \(k)"
      let materialized = "SUBQUERY(visits, $v, (\(p.text)) AND id >= 0)\(size) \(c.symbol) \(k)"
      let ids = data.pets.filter { pet in c.holds(data.visits(pet).filter(p.holds).count, k) }.map(\.id)
      return (format, materialized, ids)
    }
  }

  static func check(_ graph: RecordGraph, _ label: String) throws {
    try data.insert(into: graph)
    let pets = graph.records(Pet.self)
    for (format, materialized, ids) in cases() {
      let counted = pets.filter(format).sortBy("id")
      #expect(try counted.fetch().map(\.id) == ids, "\(label): \(format)")
      #expect(try pets.filter(format).fetchCount() == ids.count, "\(label): count of \(format)")
      #expect(!counted.explain().contains("materialized"), "\(label): \(format) runs as a count")
      let beside = pets.filter(materialized).sortBy("id")
      #expect(try beside.fetch().map(\.id) == ids, "\(label): \(materialized)")
      #expect(beside.explain().contains("materialized"), "\(label): \(materialized) is computed on each pet")
    }
  }

  @Test(arguments: StoreKind.writable)
  func countedSubqueriesAnswerAsPlainSwiftAndTheMaterializedRoad(kind: StoreKind) throws {
    try Self.check(try ClinicStores.graph(kind), "\(kind)")
  }

  @Test func countedSubqueriesInOneFileAnswerTheSame() throws {
    try Self.check(try ClinicStores.sharedFileGraph(indexed: true, tables: "subq"), "one file")
  }

  @Test(.enabled(if: PostgresServer.testsRun))
  func countedSubqueriesInOneDatabaseAnswerTheSame() throws {
    try Self.check(try ClinicStores.sharedDatabaseGraph(indexed: false), "one database")
  }

  /// What stays on the materialized road: a bare key, `SELF`, the visit's relation
  /// itself, a to-many further on, a nested SUBQUERY, a count compared with a key.
  @Test func subqueriesThatReadMoreThanTheChildStayComputedOnEachRecord() throws {
    let graph = try ClinicStores.graph(.memory)
    try Self.data.insert(into: graph)
    let pets = graph.records(Pet.self)
    let d = Self.data
    let cases: [(String, @Sendable (Pet) -> Bool)] = [
      (
        "SUBQUERY(visits, $v, $v.day <= age * 3).@count > 0",
        { p in d.visits(p).contains { $0.day <= p.age * 3 } }
      ),
      (
        "SUBQUERY(visits, $v, $v.vet.visits.@count > 5).@count > 0",
        { p in
          d.visits(p).contains { v in
            v.vetID.map { id in d.visits.filter { $0.vetID == id }.count > 5 } ?? false
          }
        }
      ),
      (
        "SUBQUERY(visits, $v, $v.cost > 50).@count >= age",
        { p in d.visits(p).filter { $0.cost > 50 }.count >= p.age }
      ),
    ]
    for (format, holds) in cases {
      let set = pets.filter(format).sortBy("id")
      #expect(try set.fetch().map(\.id) == d.pets.filter(holds).map(\.id), "\(format)")
      #expect(set.explain().contains("materialized"), "\(format)")
    }
  }
}

extension Cmp {
  /// The comparison with its sides swapped: `3 < x` is `x > 3`.
  var mirrored: Cmp {
    switch self {
    case .lt: return .gt
    case .le: return .ge
    case .gt: return .lt
    case .ge: return .le
    default: return self
    }
  }
}
