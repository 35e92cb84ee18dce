import Foundation
import Synchronization
import Testing

@testable import RequestSet

/// The engine's side of the pushdown seam, over `PushdownMemoryStore`: what is pushed,
/// rechecked and kept, early stop, one reader per evaluation, `requiringPushdown()`,
/// `explain()`, and writes and aggregates through the store.
@Suite(.ownThreads) struct PushdownTests {
  static let data = Animal.random(count: 120, seed: 0x9D5)

  private func store(_ records: [Animal] = Self.data) throws -> PushdownMemoryStore<Animal> {
    let store = PushdownMemoryStore<Animal>()
    try store.insert(contentsOf: records)
    return store
  }

  private func memory(_ records: [Animal] = Self.data) throws -> RequestSet<Animal> {
    RequestSet(try MemoryStore(records))
  }

  // MARK: The split

  @Test func exactTermsArePushedSupersetTermsRecheckedAndTheRestKept() throws {
    let store = try store()
    func build(_ all: RequestSet<Animal>) -> RequestSet<Animal> {
      all.filter("age", .greaterThan, 3).filter("name CONTAINS[c] %@", "a").filter { $0.weight > 20 }
        .filter("owner.city", value: "Oslo", mode: .or)
    }
    // An OR over everything before: one term, with a closure in it, so nothing is pushed.
    #expect(try build(RequestSet(store)).ids() == build(try memory()).ids())
    let plan = build(RequestSet(store)).explain()
    #expect(plan.contains("stage 1: pushed to PushdownMemoryStore<Animal>: all records"))

    let split = RequestSet(store).filter("age", .greaterThan, 3).filter("name CONTAINS[c] %@", "a")
      .filter { $0.weight > 20 }
    let same = try memory().filter("age", .greaterThan, 3).filter("name CONTAINS[c] %@", "a")
      .filter { $0.weight > 20 }
    #expect(try split.ids() == same.ids())
    #expect(!(try same.ids()).isEmpty)
    #expect(
      split.explain() == """
        RequestSet<Animal> over PushdownMemoryStore<Animal>
        stage 1: pushed to PushdownMemoryStore<Animal>: WHERE age > 3 AND name CONTAINS[c] "a"
          statement: SCAN WHERE age > 3 AND name CONTAINS[c] "a"
          bindings: [3, "a"]
          plan: scan 120 records
          checked again in process: name CONTAINS[c] "a" (the store's test is looser)
          in process: { closure } (a closure)
        """)
  }

  @Test func anOrIsPushedWholeOnlyWhenEveryLeafIsPushedAndANotOnlyWhenExact() throws {
    let store = try store()
    let or = RequestSet(store).filter("species == 'Cow' OR name CONTAINS[c] 'b'")
    #expect(try or.ids() == memory().filter("species == 'Cow' OR name CONTAINS[c] 'b'").ids())
    #expect(
      or.explain().contains(
        #"pushed to PushdownMemoryStore<Animal>: WHERE species == "Cow" OR name CONTAINS[c] "b""#))
    #expect(or.explain().contains(#"checked again in process: species == "Cow" OR name CONTAINS[c] "b""#))

    let not = RequestSet(store).filter("NOT (name CONTAINS[c] 'b')")
    #expect(try not.ids() == memory().filter("NOT (name CONTAINS[c] 'b')").ids())
    #expect(not.explain().contains("pushed to PushdownMemoryStore<Animal>: all records"))
    #expect(not.explain().contains("in process: NOT name CONTAINS[c] \"b\" (a superset condition under NOT)"))

    let exactNot = RequestSet(store).filter("NOT (age > 4 OR species == 'Dog')")
    #expect(try exactNot.ids() == memory().filter("NOT (age > 4 OR species == 'Dog')").ids())
    #expect(exactNot.explain().contains(#"WHERE NOT (age > 4 OR species == "Dog")"#))
    #expect(!exactNot.explain().contains("in process"))
  }

  @Test func typedConditionsWithAFieldTwinAndTranslatedPredicatesArePushed() throws {
    let store = try store()
    let typed = RequestSet(store).filter(\.age >= 6).sortBy(\.name).limit(4)
    #expect(try typed.ids() == memory().filter(\.age >= 6).sortBy(\.name).limit(4).ids())
    #expect(
      typed.explain().contains(
        "pushed to PushdownMemoryStore<Animal>: WHERE age >= 6 ORDER BY name ASC LIMIT 4"))
    let predicate = #Predicate<Animal> { $0.age < 4 && $0.species != "Cow" }
    let translated = RequestSet(store).filter(predicate)
    #expect(try translated.ids() == memory().filter(predicate).ids())
    #expect(translated.explain().contains(#"WHERE age < 4 AND species != "Cow""#))
  }

  // MARK: Early stop

  @Test func theStreamStopsOnceTheWindowIsFull() throws {
    let store = try store()
    let test: @Sendable (Animal) -> Bool = { $0.name.hasPrefix("B") }
    let set = RequestSet(store).sortBy("age").filter(test).limit(3)
    let expected = try memory().sortBy("age").filter(test).limit(3).ids()
    #expect(try set.ids() == expected)
    // A scan in the store's order reads up to the third match, and no further.
    let ordered = try memory().sortBy("age").fetch()
    let third = try #require(ordered.indices.filter { test(ordered[$0]) }.dropFirst(2).first)
    #expect(store.handedOut.load(ordering: .relaxed) == third + 1)
    #expect(third + 1 < Self.data.count)
    #expect(set.explain().contains("the store's stream stops once the window is full"))
  }

  @Test func aWindowWithNothingInProcessIsPushedAndReadsOnlyItsRecords() throws {
    let store = try store()
    let set = RequestSet(store).filter("species", value: "Dog").sortBy("age", order: .descending).offset(2)
      .limit(3)
    #expect(
      try set.ids()
        == memory().filter("species", value: "Dog").sortBy("age", order: .descending).offset(2).limit(3).ids()
    )
    #expect(store.handedOut.load(ordering: .relaxed) == 3)
  }

  // MARK: One reader per evaluation

  @Test func aCountAndALaterIterationSeeOneStateOfTheStore() throws {
    let store = try store()
    for set in [
      RequestSet(store).filter("species", value: "Cow"),  // exact: the reader counts
      RequestSet(store).filter("species", value: "Cow").filter { $0.age >= 0 },  // evaluated
    ] {
      let opened = store.readersOpened.load(ordering: .relaxed)
      let n = set.count
      try store.insert(Animal(id: 1000 + n + opened, name: "New", species: "Cow", age: 1))
      #expect(set.map(\.id).count == n)
      #expect(try set.fetch().count == n)
      #expect(set.first?.species == "Cow")
      #expect(store.readersOpened.load(ordering: .relaxed) == opened + 1)
      #expect(set.refreshed().count == n + 1)
    }
  }

  @Test func firstAsksTheStoreForOneRecordAndKeepsItsReaderForTheRest() throws {
    let store = try store()
    let set = RequestSet(store).filter("species", value: "Cow").sortBy("age")
    let expected = try memory().filter("species", value: "Cow").sortBy("age").ids()
    #expect(set.first?.id == expected.first)
    #expect(store.handedOut.load(ordering: .relaxed) == 1)
    #expect(try set.fetchExists())
    try store.insert(Animal(id: 5000, name: "Calf", species: "Cow", age: 0))
    #expect(set.count == expected.count)
    #expect(try set.ids() == expected)
    #expect(store.readersOpened.load(ordering: .relaxed) == 1)
    #expect(set.refreshed().first?.id == 5000)
  }

  // MARK: requiringPushdown

  @Test func requiringPushdownNamesWhatWouldRunInProcess() throws {
    let all = RequestSet(try store()).requiringPushdown()
    #expect(try all.filter("age", .greaterThan, 3).sortBy("name").limit(2).fetch().count == 2)
    #expect(try all.filter("age", .greaterThan, 3).fetchCount() == Self.data.filter { $0.age > 3 }.count)

    let cases: [(RequestSet<Animal>, String)] = [
      (
        all.filter { $0.age > 3 },
        "{ closure } would run in process, not in PushdownMemoryStore<Animal> (a closure)"
      ),
      (
        all.filter("owner.city", value: "Oslo"),
        #"owner.city == "Oslo" would run in process, not in PushdownMemoryStore<Animal> (PushdownMemoryStore runs no dotted key)"#
      ),
      (
        all.filter("name MATCHES 'B.*'"),
        #"name MATCHES "B.*" would run in process, not in PushdownMemoryStore<Animal> (PushdownMemoryStore runs no MATCHES)"#
      ),
      (
        all.sortBy("name", collation: .caseInsensitive),
        "sort name ASC [caseInsensitive] would run in process, not in PushdownMemoryStore<Animal> "
          + "(name ASC [caseInsensitive]: PushdownMemoryStore sorts binary text on plain keys only)"
      ),
      (
        all.filter("name CONTAINS[c] 'b'").limit(2),
        "window would run in process, not in PushdownMemoryStore<Animal> (it applies after a part that runs in process)"
      ),
      (
        all.limit(5).filter("age", .greaterThan, 3),
        "stage 2 would run in process, not in PushdownMemoryStore<Animal> "
          + "(a stage after a window runs on the records of the stage before, in process)"
      ),
      (
        all.reversed(),
        "reverse would run in process, not in PushdownMemoryStore<Animal> (a store has no reversed order of ties)"
      ),
    ]
    for (set, text) in cases {
      let error = try #require(throws: RequestSetError.self) { try set.fetch() }
      #expect(error.code == .notPushedDown)
      #expect(
        error.message
          == "requiringPushdown(): \(text). Write it with string keys and operators the store runs, "
          + "or drop requiringPushdown() to run it in process.")
      #expect(throws: RequestSetError.self) { try set.fetchCount() }
    }
    let groups = try #require(throws: RequestSetError.self) { try all.groupBy("species").fetch() }
    #expect(
      groups.message
        == "requiringPushdown(): groupBy(species) would run in process, not in PushdownMemoryStore<Animal> "
        + "(it keeps no summary of keys and kinds, StoreQueryReader.fieldKinds(), to check the group keys against). "
        + "Drop requiringPushdown() to group in process, or aggregate with "
        + "sum, min, max or average.")
    #expect(try RequestSet(try store()).groupBy("species").fetch() == memory().groupBy("species").fetch())
    let superset = try #require(throws: RequestSetError.self) {
      try all.filter("name CONTAINS[c] 'b'").limit(2).fetch()
    }
    #expect(superset.code == .notPushedDown)
  }

  @Test func requiringPushdownOverAStoreThatRunsNoQueryThrows() throws {
    let set = try memory().filter("age", .greaterThan, 3).requiringPushdown()
    for read in [{ try set.fetch().count }, { try set.fetchCount() }, { try set.fetchExists() ? 1 : 0 }] {
      let error = try #require(throws: RequestSetError.self) { try read() }
      #expect(
        error.message
          == "requiringPushdown(): the whole query would run in process, not in MemoryStore<Animal> "
          + "(it does not adopt QueryPushdownStore). Query a store that runs queries itself, "
          + "or drop requiringPushdown() to run it in process.")
    }
  }

  // MARK: Writes and aggregates

  @Test func writesThroughAnExactQueryAreOneStoreCall() throws {
    let store = try store()
    let reference = try MemoryStore(Self.data)
    let cows = try RequestSet(reference).filter("species", value: "Cow").update("age", value: 99)
    #expect(try RequestSet(store).filter("species", value: "Cow").update("age", value: 99) == cows)
    let dogs = try RequestSet(reference).filter("species", value: "Dog").filter("age", .lessThan, 3).delete()
    #expect(
      try RequestSet(store).filter("species", value: "Dog").filter("age", .lessThan, 3).delete() == dogs)
    #expect(
      store.pushedWrites.withLock { $0 } == [
        #"update WHERE species == "Cow""#, #"delete WHERE species == "Dog" AND age < 3"#,
      ])
    // A closure, a window: the usual path, with the same answers.
    #expect(try RequestSet(store).filter { $0.age == 99 }.update("name", value: "Old") == cows)
    #expect(try RequestSet(store).sortBy("id").limit(2).delete() == 2)
    #expect(store.pushedWrites.withLock { $0.count } == 2)
    #expect(throws: RequestSetError.self) {
      try RequestSet(store).filter("species", value: "Cow").update("id", value: 1)
    }
    #expect(
      try RequestSet(store).filter("species", value: "Cow").ids()
        == RequestSet(reference).filter("species", value: "Cow").ids())
  }

  @Test func aggregatesOfAnExactQueryAreComputedByTheStore() throws {
    let store = try store()
    let pushed = RequestSet(store).filter("species", value: "Cat")
    let local = try memory().filter("species", value: "Cat")
    #expect(try pushed.sum("age") == local.sum("age"))
    #expect(try pushed.min("name") == local.min("name"))
    #expect(try pushed.max("weight") == local.max("weight"))
    #expect(try pushed.average("age") == local.average("age"))
    #expect(store.pushedWrites.withLock { $0 }.map { $0.prefix(3) } == ["sum", "min", "max", "ave"])
    // Not exact: computed in process over the records the store returned.
    #expect(try pushed.filter { $0.age > 2 }.sum("age") == local.filter { $0.age > 2 }.sum("age"))
    #expect(store.pushedWrites.withLock { $0.count } == 4)
  }
}

extension RequestSet where Element == Animal {
  fileprivate func ids() throws -> [Int] { try fetch().map(\.id) }
}
