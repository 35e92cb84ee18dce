import Foundation
import Testing

@testable import RequestSet

/// One preparation per evaluated set (see `Sources/RequestSet/Execution/Prepare.swift`):
/// whatever reads a set (`count`, iteration, subscripts, `explain()`), the engine plans
/// it once, `explain()` describes the plan that ran, and the plan depends on the query
/// and the data, never on what the process read before the query was built.
@Suite(.ownThreads) struct OnePlanTests {
  /// 300 animals; the indexed kinds index species, age, name and more.
  static func populated(_ kind: StoreKind) throws -> RequestSet<Animal> {
    try kind.makeSet(Animal.random(count: 300, seed: 5))
  }

  /// Counts the plans made while `body` runs in this task.
  static func plans(_ body: () throws -> Void) rethrows -> Int {
    let tally = _PlanCounter.Tally()
    try _PlanCounter.$tally.withValue(tally) { try body() }
    return tally.count
  }

  /// Queries that plan in every way: a lookup with a recheck, an ordered walk, a range, a
  /// scan of a typed filter, a sorted count, an OR of equalities.
  static func queries(_ all: RequestSet<Animal>) -> [(String, RequestSet<Animal>)] {
    [
      ("lookup AND typed", all.filter("species", value: "Cow").filter(\.age > 3)),
      ("walk", all.filter(\.age > 3).sortBy(\.age).limit(5)),
      ("range", all.filter(\.age >= 10 && \.age < 30).sortBy(\.name)),
      ("typed scan", all.filter(\.weight > 20)),
      ("sorted lookup", all.filter("species", value: "Dog").sortBy("name", order: .descending)),
      ("OR of equalities", all.filter(\.name == "Rex" || \.name == "Micky" || \.name == "Daisy")),
      ("two stages", all.filter("species", value: "Cat").sortBy(\.age).limit(20).filter(\.age > 5)),
    ]
  }

  @Test(arguments: StoreKind.allCases)
  func countThenIterateThenExplainPlansOnce(kind: StoreKind) throws {
    let all = try Self.populated(kind)
    for (name, set) in Self.queries(all) {
      var seen: [Animal] = []
      var counted = 0
      var explained = ""
      let plans = try Self.plans {
        counted = set.count
        seen = Array(set)
        _ = set.first
        _ = set.isEmpty ? nil : set[0]
        explained = set.explain()
        _ = try set.fetch()
      }
      #expect(counted == seen.count, "\(kind) \(name)")
      // Every store plans exactly once (a store's id map is an index too); a set over an
      // array has no index to weigh, and makes no plan at all.
      let expected = kind == .array ? 0 : 1
      #expect(plans == expected, "\(kind) \(name): \(plans) plans\n\(explained)")
    }
  }

  @Test(arguments: StoreKind.allCases)
  func iterateThenCountThenExplainPlansOnce(kind: StoreKind) throws {
    let all = try Self.populated(kind)
    for (name, set) in Self.queries(all) {
      let plans = Self.plans {
        _ = Array(set)
        _ = set.count
        _ = set.explain()
        _ = set.explain()
      }
      let expected = kind == .array ? 0 : 1
      #expect(plans == expected, "\(kind) \(name): \(plans) plans")
    }
  }

  /// The read sequences that begin with a shortcut (`first`, `last`, `exists`, `isEmpty`)
  /// and go on to iteration, `count` and subscripts.
  static let shortcutSequences: [(String, @Sendable (RequestSet<Animal>) throws -> Void)] = [
    ("first, then iteration and count", { _ = $0.first; _ = Array($0); _ = $0.count }),
    ("last, then iteration", { _ = $0.last; _ = Array($0); _ = $0.first }),
    ("exists, then count and iteration", { _ = $0.exists; _ = $0.count; _ = Array($0) }),
    ("isEmpty, then a subscript and count", { s in if !s.isEmpty { _ = s[0] }; _ = s.count }),
    ("first, last, exists, then fetch", { _ = $0.first; _ = $0.last; _ = try $0.fetchExists(); _ = try $0.fetch() }),
    ("exists, then first and last", { _ = $0.exists; _ = $0.first; _ = $0.last; _ = $0.isEmpty }),
  ]

  /// `first` or `exists` before the result is read plans nothing of its own: the set's one
  /// preparation serves the shortcut and the reads after it, as `count` first does.
  @Test(arguments: StoreKind.allCases)
  func firstOrExistsThenIteratePlansOnce(kind: StoreKind) throws {
    let all = try Self.populated(kind)
    for (label, sequence) in Self.shortcutSequences {
      for (name, set) in Self.queries(all) {
        let plans = try Self.plans { try sequence(set) }
        let expected = kind == .array ? 0 : 1
        #expect(plans == expected, "\(kind) \(name), \(label): \(plans) plans")
      }
    }
  }

  /// `first` through the one plan still answers as the array does, and still walks an
  /// index in sort order when that reads fewer records than the set's plan (a sorted set
  /// with no window plans a scan; its first record walks the index).
  @Test(arguments: StoreKind.allCases)
  func firstLastAndExistsThroughThePlanAnswerAsTheArrayDoes(kind: StoreKind) throws {
    let records = Animal.random(count: 300, seed: 5)
    let all = try kind.makeSet(records)
    let cases: [(RequestSet<Animal>, [Animal])] = [
      (all.sortBy(\.age), records.stableSorted { $0.age < $1.age }),
      (all.sortBy("name", order: .descending), records.stableSorted { $0.name > $1.name }),
      (all.filter(\.age > 3).sortBy(\.age).limit(5), Array(records.filter { $0.age > 3 }.stableSorted { $0.age < $1.age }.prefix(5))),
      (all.filter("species", value: "Cow").sortBy(\.age).offset(2), Array(records.filter { $0.species == "Cow" }.stableSorted { $0.age < $1.age }.dropFirst(2))),
      (all.filter(\.age >= 10 && \.age < 30).sortBy(\.name).reversed(), records.filter { $0.age >= 10 && $0.age < 30 }.stableSorted { $0.name < $1.name }.reversed()),
      (all.filter(\.age > 1000), []),
    ]
    for (set, expected) in cases {
      let what = "\(kind): \(set.explain())"
      #expect(set.refreshed().first?.id == expected.first?.id, "\(what)")
      #expect(set.refreshed().last?.id == expected.last?.id, "\(what)")
      #expect(set.refreshed().exists == !expected.isEmpty, "\(what)")
      let shortcut = set.refreshed()
      #expect(shortcut.first?.id == expected.first?.id, "\(what)")
      #expect(shortcut.map(\.id) == expected.map(\.id), "\(what)")
      #expect(shortcut.count == expected.count, "\(what)")
    }
  }

  /// `first` on a sorted set with no window still walks the sort key's index: the set's
  /// plan (a scan, with no window to stop a walk) weighed that walk for a narrower
  /// window, and the window of one takes it, planning nothing again.
  @Test func firstOfASortedSetWalksTheIndexThePlanWeighed() throws {
    let set = try StoreKind.indexedMemory.makeSet(Animal.random(count: 300, seed: 5)).sortBy(\.age)
    let plans = Self.plans { _ = set.first }
    #expect(plans == 1)
    let prepared = try #require(set._cache.peekPrepared())
    let plan = prepared.access()
    guard case .scan = plan.path else {
      Issue.record("the set's plan: \(plan.path)")
      return
    }
    var one = prepared.query.stages[0]
    one.window.limit = 1
    guard case .walk(let walk) = plan.narrowed(to: one).path, !walk.descending else {
      Issue.record("first: \(plan.narrowed(to: one).path)")
      return
    }
    #expect(walk.key == "age")
    // A reversed stage (`last`) reads the plan as it is.
    one.reversed = true
    guard case .scan = plan.narrowed(to: one).path else {
      Issue.record("last: \(plan.narrowed(to: one).path)")
      return
    }
  }

  /// A set of a graph whose filter goes through a relation: its preparation runs the
  /// related store's query (a semi-join, an aggregate, a materialization) once, however
  /// the set is read, `first` and `exists` included, and the set plans once besides.
  @Test(arguments: StoreKind.writable)
  func firstOrExistsThenIterateOnAGraphSetRunsEachRelationQueryOnce(kind: StoreKind) throws {
    let graph = try ClinicStores.graph(kind)
    try ClinicData.generate(people: 40, pets: 150, visits: 300, vets: 6, seed: 0x0E).insert(into: graph)
    let pets = graph.records(Pet.self)
    let sets: [(String, () -> RequestSet<Pet>)] = [
      ("to-one semi-join", { pets.filter("owner.city", value: "Oslo") }),
      ("to-many semi-join, sorted", { pets.filter("ANY visits.cost > 50").sortBy("name") }),
      ("to-one and to-many, windowed", { pets.filter("owner.age > 30 AND ANY visits.vet.clinic == 'North'").sortBy("age").limit(7) }),
      ("an aggregate", { pets.filter("visits.@sum.cost > 100") }),
      ("an expression", { pets.filter("owner.age + age > 40").sortBy("id") }),
    ]
    for (name, make) in sets {
      let once = _PlanCounter.Tally()
      let expected = try _PlanCounter.$tally.withValue(once) { try make().fetch().map(\.id) }
      // On stores in one database (PostgreSQL's) a relation may be a subquery, planned on
      // the related store and run in the pets' statement.
      #expect(once.relationQueries + once.subqueries >= 1, "\(kind) \(name)")
      for (label, sequence) in Self.graphSequences {
        let set = make()
        let tally = _PlanCounter.Tally()
        let ids = try _PlanCounter.$tally.withValue(tally) { try sequence(set) }
        #expect(ids == expected, "\(kind) \(name), \(label)")
        #expect(
          tally.relationQueries == once.relationQueries,
          "\(kind) \(name), \(label): \(tally.relationQueries) relation queries, one read runs \(once.relationQueries)")
        #expect(tally.count == once.count, "\(kind) \(name), \(label): \(tally.count) plans, one read makes \(once.count)")
        #expect(tally.subqueries == once.subqueries, "\(kind) \(name), \(label): \(tally.subqueries) subqueries")
      }
    }
  }

  /// Read sequences on a graph set, each ending with the records' ids.
  static let graphSequences: [(String, @Sendable (RequestSet<Pet>) throws -> [Int])] = [
    ("first, then iteration", { _ = $0.first; return $0.map(\.id) }),
    ("exists, then count and iteration", { _ = $0.exists; _ = $0.count; return $0.map(\.id) }),
    ("last, then fetch", { _ = $0.last; return try $0.fetch().map(\.id) }),
    ("isEmpty, first, last, then a subscript each", { s in
      _ = s.isEmpty; _ = s.first; _ = s.last
      return (0..<s.count).map { s[$0].id }
    }),
  ]

  /// `explain()` after a read prints the plan the read used; before any read it prints
  /// the plan a read would make, fixing nothing.
  @Test(arguments: StoreKind.allCases)
  func explainBeforeAndAfterAReadAgree(kind: StoreKind) throws {
    let all = try Self.populated(kind)
    for (name, set) in Self.queries(all) {
      let before = set.explain()
      _ = set.count
      let after = set.explain()
      #expect(before == after, "\(kind) \(name)")
      // A copy built afresh explains the same way.
      #expect(set.refreshed().explain() == after, "\(kind) \(name)")
    }
  }

  /// Explaining fixes no snapshot: a write after `explain()` is seen by the first read.
  @Test(arguments: StoreKind.writable)
  func explainFixesNoSnapshot(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = RequestSet(store).filter("species", value: "Cow")
    let n = Animal.zoo.filter { $0.species == "Cow" }.count
    _ = cows.explain()
    try store.insert(Animal(id: 900, name: "Late", species: "Cow", age: 2))
    #expect(cows.count == n + 1)
  }

  /// The plan made once is the one every read uses: a count on an indexed set of sorted
  /// records and the iteration that follows agree with the array reference.
  @Test(arguments: StoreKind.allCases)
  func onePlanAnswersAsTheArrayDoes(kind: StoreKind) throws {
    let records = Animal.random(count: 300, seed: 5)
    let all = try kind.makeSet(records)
    let sets: [(RequestSet<Animal>, [Animal])] = [
      (all.filter(\.age > 3).sortBy(\.age).limit(5), Array(records.filter { $0.age > 3 }.stableSorted { $0.age < $1.age }.prefix(5))),
      (all.filter("species", value: "Cow").filter(\.age > 3), records.filter { $0.species == "Cow" && $0.age > 3 }),
      (all.filter(\.age >= 10 && \.age < 30).sortBy(\.name), records.filter { $0.age >= 10 && $0.age < 30 }.stableSorted { $0.name < $1.name }),
    ]
    for (set, expected) in sets {
      #expect(set.count == expected.count, "\(kind) \(set.explain())")
      #expect(set.map(\.id) == expected.map(\.id), "\(kind) \(set.explain())")
    }
  }

  /// A query built before a store's records were ever read and the same query built
  /// after: the same `explain()` text, the same plan and the same records, in a process
  /// that has seen no record of the type before (a `SQLWorker` child: the schema probe is
  /// process-wide, so this process's own reads would decide it).
  @Test(arguments: SharedSQLDatabase.engines)
  func aQueryBuiltBeforeAnyReadPlansAsOneBuiltAfter(engine: SharedSQLDatabase.Engine) throws {
    let database = try SharedSQLDatabase.fresh(engine)
    let fill = try database.child("plans", "fill")
    #expect(fill.wait(timeout: .seconds(300)) == 0, "\(fill)")
    let child = try database.child("plans", "explain")
    #expect(child.wait(timeout: .seconds(300)) == 0, "\(child)")
    let lines = child.output
    func block(_ label: String) -> String {
      lines.filter { $0.hasPrefix(label + " ") }.map { String($0.dropFirst(label.count + 1)) }.joined(separator: "\n")
    }
    for query in ["typed", "predicate"] {
      let before = block("\(query)-before")
      let after = block("\(query)-after")
      #expect(!before.isEmpty, "\(child)")
      #expect(before == after, "\(engine) \(query): built before any read\n\(before)\nbuilt after one\n\(after)")
      // Everything reaches the engine: nothing runs in process.
      #expect(!before.contains("in process"), "\(engine) \(query)\n\(before)")
      #expect(block("\(query)-records-before") == block("\(query)-records-after"))
      #expect(!block("\(query)-records-before").isEmpty)
    }
  }
}

extension Array {
  /// A stable sort, as the engine's sorts are.
  func stableSorted(by less: (Element, Element) -> Bool) -> [Element] {
    enumerated().sorted { a, b in
      less(a.element, b.element) || (!less(b.element, a.element) && a.offset < b.offset)
    }.map(\.element)
  }
}
