import Foundation
import Testing

@testable import RequestSet

/// Every road through the engine, on one seeded random query at a time (issue 35): the
/// synchronous reads, their `.async` forms, a live set's first state, `first`, `last`,
/// `exists`, `count` and `values(_:)` answer alike and as the plain-array reference does,
/// on every store, for plain sets and for a graph's sets whose filters go through
/// relations. And each read sequence on one set plans exactly as often as one read of it
/// (``_PlanCounter``): once for the set, once for each query its relations run on a
/// related store, whatever it begins with.
@Suite(.ownThreads) struct CrossRoadDifferentialTests {
  static let data = Animal.random(count: 120, seed: 0xC205)
  /// 60 plain queries per store in the quick form, 200 with `REQUESTSET_SOAK=1`.
  static let queryCount = TestScale.pick(quick: 60, soak: 200)
  /// 30 queries through relations per store in the quick form, 80 with `REQUESTSET_SOAK=1`.
  static let graphQueryCount = TestScale.pick(quick: 30, soak: 80)
  /// A live set's first state is read for every this-many-th query: each starts a
  /// follower of the store (a set over an array has none: it never changes).
  static let liveEvery = 5
  /// 60 people, 240 pets, 480 visits, 8 vets.
  static let clinic = ClinicData.generate(people: 60, pets: 240, visits: 480, vets: 8, seed: 0xC205)

  @Test(arguments: StoreKind.allCases)
  func everyRoadAgreesOnRandomQueries(kind: StoreKind) async throws {
    let base = try kind.makeSet(Self.data)
    var rng = SeededRandom(seed: 0xC205_0000)
    for i in 0..<Self.queryCount {
      let query = RefQuery.random(using: &rng, data: Self.data)
      let expected = query.reference(Self.data).map(\.id)
      let what = "query \(i) on \(kind): \(query)"
      let once = try await Self.check(
        what, expected: expected, live: kind != .array && i % Self.liveEvery == 0, sequence: i
      ) { query.apply(to: base) }
      // A plain set plans once (a lookup by id, or a set over an array, not at all).
      #expect(once.plans <= 1 && once.relationQueries == 0, "\(what): one read made \(once)")
    }
  }

  @Test(arguments: StoreKind.writable)
  func everyRoadAgreesThroughRelations(kind: StoreKind) async throws {
    let graph = try ClinicStores.graph(kind)
    try Self.clinic.insert(into: graph)
    let pets = graph.records(Pet.self)
    var rng = SeededRandom(seed: 0xC205_0001)
    var throughRelations = 0
    for i in 0..<Self.graphQueryCount {
      let query = PetQuery.random(using: &rng, Self.clinic, depth: 1)
      let form = PetQuery.Form.allCases[i % PetQuery.Form.allCases.count]
      let descending = Bool.random(using: &rng)
      let offset = Int.random(in: 0...3, using: &rng)
      let limit: Int? = Bool.random(using: &rng) ? Int.random(in: 1...25, using: &rng) : nil
      var expected = Self.clinic.pets.filter(query.holds).map(\.id)
      if descending { expected.reverse() }
      expected = Array(expected.dropFirst(offset).prefix(limit ?? Int.max))
      let (_, used) = query.apply(to: pets, preferring: form)
      let what =
        "graph query \(i) on \(kind) [\(used)]: \(query.format) id \(descending ? "desc" : "asc") offset \(offset) limit \(limit.map(String.init) ?? "-")"
      let once = try await Self.check(what, expected: expected, live: i % Self.liveEvery == 0, sequence: i) {
        var set = query.apply(to: pets, preferring: form).0.sortBy(
          "id", order: descending ? .descending : .ascending)
        set = set.offset(offset)
        if let limit { set = set.limit(limit) }
        return set
      }
      // The pets plan once, and each query on a related store once, run or planned as a
      // subquery of the pets' statement (PostgreSQL's stores share one database).
      #expect(once.plans == 1 + once.relationQueries + once.subqueries, "\(what): one read made \(once)")
      if once.relationQueries + once.subqueries > 0 { throughRelations += 1 }
    }
    #expect(
      throughRelations > Self.graphQueryCount / 2, "\(throughRelations) queries went through a relation")
  }

  /// The plans and relation queries of some reads of one set.
  struct Planned: Equatable, Sendable, CustomStringConvertible {
    var plans: Int
    var relationQueries: Int
    var subqueries: Int
    var description: String {
      "\(plans) plans, \(relationQueries) relation queries, \(subqueries) subqueries"
    }
  }

  /// Counts the plans and relation queries `body` makes in this thread.
  static func planned<T>(_ body: () throws -> T) rethrows -> (T, Planned) {
    let tally = _PlanCounter.Tally()
    let result = try _PlanCounter.$tally.withValue(tally) { try body() }
    return (result, Planned(plans: tally.count, relationQueries: tally.relationQueries, subqueries: tally.subqueries))
  }

  /// The read sequences on one set, each returning the ids it read last.
  static func sequences<R: Record>(_: R.Type) -> [(String, (RequestSet<R>) throws -> [R.ID])] {
    [
      (
        "first, then iteration",
        {
          _ = $0.first
          return $0.map(\.id)
        }
      ),
      (
        "last, then count and fetch",
        {
          _ = $0.last
          _ = $0.count
          return try $0.fetch().map(\.id)
        }
      ),
      (
        "exists, then first and values",
        {
          _ = $0.exists
          _ = $0.first
          return try $0.values(\.id)
        }
      ),
      (
        "isEmpty, then subscripts",
        { s in
          guard !s.isEmpty else { return [] }
          return (0..<s.count).map { s[$0].id }
        }
      ),
      (
        "count, then first, last and iteration",
        {
          _ = $0.count
          _ = $0.first
          _ = $0.last
          return $0.map(\.id)
        }
      ),
      (
        "fetchExists, last, then fetchCount and fetch",
        {
          _ = try $0.fetchExists()
          _ = $0.last
          _ = try $0.fetchCount()
          return try $0.fetch().map(\.id)
        }
      ),
    ]
  }

  /// Checks every road on fresh sets from `make` against `expected`, and that read
  /// sequence number `sequence` (of ``sequences(_:)``, in turn) plans as one read does,
  /// synchronously and in an `.async` job; returns what one read planned.
  static func check<R: Record>(
    _ what: String, expected: [R.ID], live: Bool, sequence: Int, make: () -> RequestSet<R>
  ) async throws -> Planned {
    // One read, counted: what every sequence must plan.
    let (fetched, once) = try Self.planned { try make().fetch().map(\.id) }
    #expect(fetched == expected, "\(what): fetch")

    // The synchronous roads, each on a fresh set.
    #expect(Array(make()).map(\.id) == expected, "\(what): iteration")
    #expect(try make().fetchCount() == expected.count, "\(what): count")
    #expect(make().first?.id == expected.first, "\(what): first")
    #expect(make().last?.id == expected.last, "\(what): last")
    #expect(make().exists == !expected.isEmpty, "\(what): exists")
    #expect(make().isEmpty == expected.isEmpty, "\(what): isEmpty")
    #expect(try make().values(\.id) == expected, "\(what): values")

    // The same through `.async`.
    #expect(try await make().async.fetch().map(\.id) == expected, "\(what): async fetch")
    #expect(try await make().async.fetchCount() == expected.count, "\(what): async count")
    #expect(try await make().async.fetchFirst()?.id == expected.first, "\(what): async first")
    #expect(try await make().async.fetchLast()?.id == expected.last, "\(what): async last")
    #expect(try await make().async.fetchExists() == !expected.isEmpty, "\(what): async exists")
    #expect(try await make().async.values(\.id) == expected, "\(what): async values")

    // A live set's first state.
    if live {
      var states = make().changes.makeAsyncIterator()
      let first = try await states.next()
      #expect(first?.records.map(\.id) == expected, "\(what): a live set's first state")
      #expect(first?.isInitial == true, "\(what): a live set's first state")
    }

    // One read sequence, synchronously and in an async job: it plans as one read does.
    let all = sequences(R.self)
    let (label, body) = all[sequence % all.count]
    let (ids, sequenced) = try Self.planned { try body(make()) }
    #expect(ids == expected, "\(what): \(label)")
    #expect(sequenced == once, "\(what): \(label) made \(sequenced); one read makes \(once)")
    let next = (sequence + 1) % all.count
    let asyncSequence = all[next]
    let (asyncIDs, asyncPlanned) = try await make().async.run { set in
      try Self.planned { try sequences(R.self)[next].1(set) }
    }
    #expect(asyncIDs == expected, "\(what): async \(asyncSequence.0)")
    #expect(
      asyncPlanned == once, "\(what): async \(asyncSequence.0) made \(asyncPlanned); one read makes \(once)")
    return once
  }
}
