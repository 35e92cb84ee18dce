import Foundation
import Testing

@testable import RequestSet

/// One preparation per evaluated set (see `Sources/RequestSet/Execution/Prepare.swift`):
/// whatever reads a set (`count`, iteration, subscripts, `explain()`), the engine plans
/// it once, `explain()` describes the plan that ran, and the plan depends on the query
/// and the data, never on what the process read before the query was built.
@Suite struct OnePlanTests {
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
