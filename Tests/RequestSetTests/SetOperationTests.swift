import Foundation
import RequestSet
import Testing

/// `union`, `intersection` and `subtracting` on every store, against plain Swift sets of
/// ids: random operands (random filters, sorts and windows of their own), nested
/// combinations, then filters, sorts and limits, counts, `exists` and aggregates.
@Suite(.ownThreads) struct SetOperationTests {
  enum Operation: CaseIterable { case union, intersection, subtracting }

  /// A combination of random operands, as a RequestSet and as the reference's ids.
  indirect enum Combination: CustomStringConvertible {
    case operand(RefQuery)
    case combined(Operation, Combination, Combination)

    var description: String {
      switch self {
      case .operand(let q): return "{\(q)}"
      case .combined(let op, let a, let b): return "(\(a) \(op) \(b))"
      }
    }

    func set(_ base: RequestSet<Animal>) -> RequestSet<Animal> {
      switch self {
      case .operand(let q): return q.apply(to: base)
      case .combined(.union, let a, let b): return a.set(base).union(b.set(base))
      case .combined(.intersection, let a, let b): return a.set(base).intersection(b.set(base))
      case .combined(.subtracting, let a, let b): return a.set(base).subtracting(b.set(base))
      }
    }

    func ids(_ data: [Animal]) -> Set<Int> {
      switch self {
      case .operand(let q): return Set(q.reference(data).map(\.id))
      case .combined(.union, let a, let b): return a.ids(data).union(b.ids(data))
      case .combined(.intersection, let a, let b): return a.ids(data).intersection(b.ids(data))
      case .combined(.subtracting, let a, let b): return a.ids(data).subtracting(b.ids(data))
      }
    }

    static func random(depth: Int, _ g: inout SeededRandom, _ data: [Animal]) -> Combination {
      if depth > 0 && Int.random(in: 0..<3, using: &g) == 0 {
        return .operand(RefQuery.random(using: &g, data: data))
      }
      return .combined(
        Operation.allCases.randomElement(using: &g)!,
        depth < 1 ? random(depth: depth + 1, &g, data) : .operand(RefQuery.random(using: &g, data: data)),
        .operand(RefQuery.random(using: &g, data: data)))
    }
  }

  /// Random combinations, then a random filter, a sort with id last and a limit, equal the
  /// reference; so do count, exists and the sum and max of ages.
  @Test(arguments: StoreKind.writableWithSQL)
  func combinationsEqualTheReference(kind: StoreKind) throws {
    var g = SeededRandom(seed: 0x5E7_0BE5)
    let data = Animal.random(count: 80, seed: 0x5E7)
    let base = try kind.makeSet(data)
    let rounds = TestScale.pick(quick: 30, soak: 150)
    for round in 0..<rounds where TestScale.checks(round, on: kind) || round < 4 {
      let combination = Combination.random(depth: 0, &g, data)
      let combined = combination.set(base)
      let ids = combination.ids(data)
      let context = "round \(round) on \(kind): \(combination)"
      #expect(Set(try combined.fetch().map(\.id)) == ids, "\(context)")
      #expect(try combined.fetchCount() == ids.count, "\(context)")
      #expect(try combined.fetchExists() == !ids.isEmpty, "\(context)")
      let members = data.filter { ids.contains($0.id) }
      #expect(try combined.sum(\.age) == members.reduce(0) { $0 + $1.age }, "\(context)")
      #expect(try combined.max(\.age) == members.map(\.age).max(), "\(context)")

      // Then a filter, a sort (id last, for one order) and a limit.
      let filter = RefQuery.randomFilter(depth: 1, &g, data)
      let keys = RefQuery.randomSort(&g)
      let limit = Int.random(in: 0...20, using: &g)
      let after = applySort(keys, to: combined.filter(filter.requestFilter)).sortBy("id").limit(limit)
      let expected = PageTests.referenceOrder(members.filter(filter.matches), keys).prefix(limit)
      #expect(
        try after.fetch().map(\.id) == expected.map(\.id),
        "\(context) .filter(\(filter)).sortBy(\(keys)).limit(\(limit))")
    }
  }

  /// The union of two filtered sets is the OR of their filters: the same records, and a
  /// SQL store runs it in one statement.
  @Test(arguments: StoreKind.writableWithSQL)
  func unionOfFilteredSetsIsTheOrFilter(kind: StoreKind) throws {
    let animals = try kind.makeSet(Animal.zoo)
    let union = animals.filter(\.species == "Cow").union(animals.filter("age", .greaterThan, 6))
    let or = animals.filter(\.species == "Cow" || \.age > 6)
    #expect(Set(try union.fetch().map(\.id)) == Set(try or.fetch().map(\.id)))
    #expect(Set(try union.fetch().map(\.id)) == [2, 4, 5])
    if kind.pushesDown {
      #expect(try union.requiringPushdown().fetchCount() == 3)
    }
    // Intersection and subtraction too.
    let cows = animals.filter(\.species == "Cow")
    #expect(try cows.intersection(animals.filter("age", .greaterThan, 6)).fetch().map(\.id) == [2])
    #expect(try cows.subtracting(animals.filter("age", .greaterThan, 6)).fetch().map(\.id) == [4])
  }

  /// An operand's own window applies first: the three youngest, whatever the other set.
  @Test(arguments: StoreKind.writableWithSQL)
  func anOperandsWindowAppliesFirst(kind: StoreKind) throws {
    let animals = try kind.makeSet(Animal.zoo)
    // Ages: 1 Micky 3, 2 Daisy 7, 3 Rex 5, 4 Bella 2, 5 alice 12, 6 Zed 5.
    let youngest = animals.sortBy(\.age).limit(3)  // Bella, Micky, then Rex (store order breaks the tie)
    let dogs = animals.filter(\.species == "Dog")
    #expect(try youngest.intersection(dogs).fetch().map(\.id) == [3])
    #expect(try youngest.union(dogs).sortBy("id").fetch().map(\.id) == [1, 3, 4, 6])
    #expect(try dogs.subtracting(youngest).fetch().map(\.id) == [6])
    #expect(youngest.union(dogs).explain().contains("id IN"))
    if [.sqlite, .indexedSQLite, .postgres].contains(kind) {
      // The windowed operand's ids reach the SQL store as an IN list: nothing runs in process.
      #expect(try youngest.union(dogs).requiringPushdown().fetchCount() == 4)
    }
  }

  /// Writes through a combined set change exactly its records.
  @Test(arguments: StoreKind.writableWithSQL)
  func writesThroughACombinedSet(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let animals = RequestSet(store)
    let oldest = animals.sortBy(\.age, order: .descending).limit(2)  // alice, Daisy
    let renamed = try animals.filter(\.species == "Dog").union(oldest).update { $0.name += "!" }
    #expect(renamed == 4)
    #expect(try animals.filter("name LIKE '*!'").sortBy("id").fetch().map(\.id) == [2, 3, 5, 6])
    #expect(try animals.filter(\.species == "Cow").subtracting(oldest).delete() == 1)
    #expect(try animals.sortBy("id").fetch().map(\.id) == [1, 2, 3, 5, 6])
  }

  /// The async form reads what the sync one reads.
  @Test(arguments: StoreKind.writableWithSQL)
  func asyncEqualsSync(kind: StoreKind) async throws {
    let animals = try kind.makeSet(Animal.random(count: 40, seed: 7))
    let set = animals.filter(\.age < 8).union(animals.sortBy(\.weight).limit(5)).sortBy("name").sortBy("id")
    #expect(try await set.async.fetch().map(\.id) == set.fetch().map(\.id))
    #expect(try await set.async.fetchCount() == set.fetchCount())
  }

  /// Sets over different stores, or arrays, are a typed error that says what to do.
  @Test func differentStoresThrow() throws {
    let one = MemoryStore<Animal>()
    let two = MemoryStore<Animal>()
    let union = RequestSet(one).union(RequestSet(two))
    do {
      _ = try union.fetch()
      Issue.record("no error")
    } catch let error as RequestSetError {
      #expect(error.code == .mismatchedSets)
      #expect(
        error.message
          == "union(_:) combines sets that read different stores (MemoryStore<Animal> and MemoryStore<Animal>). "
          + "Combine sets made from one store, with RequestSet(store) or graph.records(_:).")
    }
    do {
      _ = try RequestSet(Animal.zoo).intersection(RequestSet(Animal.zoo)).fetch()
      Issue.record("no error")
    } catch let error as RequestSetError {
      #expect(error.code == .mismatchedSets)
      #expect(error.message.hasPrefix("intersection(_:) combines sets that read arrays, not a store."))
    }
  }

  /// An error in an operand is the combined set's error.
  @Test(arguments: [StoreKind.memory, .sqlite])
  func anOperandsErrorIsThrown(kind: StoreKind) throws {
    let animals = try kind.makeSet(Animal.zoo)
    let bad = animals.filter("colour", value: "red").limit(2)
    #expect(throws: RequestSetError.self) { try animals.union(bad).fetch() }
    #expect(throws: RequestSetError.self) { try animals.union(animals.limit(-1)).fetch() }
  }
}
