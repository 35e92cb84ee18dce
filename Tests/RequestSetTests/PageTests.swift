import Foundation
import RequestSet
import Testing

/// Keyset pages (`page(size:)`, `page(after:size:)`) on every store: a walk of all pages
/// against the plain Swift sort (keys, then id), and walks interleaved with inserts and
/// deletes that must read every record stored for the whole walk exactly once.
@Suite(.ownThreads) struct PageTests {
  /// Animals with many duplicate and nil values, so that ties and nils meet every page
  /// boundary.
  static func animals(count: Int, firstID: Int = 1, _ g: inout SeededRandom) -> [Animal] {
    (firstID..<firstID + count).map { id in
      Animal(
        id: id, name: ["Rex", "rex", "Bella", "Émile", "Zed"].randomElement(using: &g)!,
        species: ["Cow", "Dog", "Cat"].randomElement(using: &g)!, age: Int.random(in: 0...4, using: &g),
        weight: Double(Int.random(in: 0...6, using: &g)) / 2,
        nickname: Bool.random(using: &g) ? nil : ["al", "Bo", "bo"].randomElement(using: &g)!,
        owner: Int.random(in: 0..<3, using: &g) == 0
          ? nil : Owner(name: "O", city: ["Oslo", "oslo", "Bergen"].randomElement(using: &g)!))
    }
  }

  /// The documented page order: the sort keys as the reference sorts them, then id.
  static func referenceOrder(_ records: [Animal], _ keys: [RefSortKey]) -> [Animal] {
    records.sorted { a, b in
      for k in keys {
        var c = refSortOrder(a.ref(k.key), b.ref(k.key), caseInsensitive: k.caseInsensitive)
        if k.order == .descending { c = -c }
        if c != 0 { return c < 0 }
      }
      return a.id < b.id
    }
  }

  /// One to three random sort keys, string-key or typed, mixed directions, some
  /// case-insensitive.
  static func randomSort(_ g: inout SeededRandom) -> [RefSortKey] {
    (0..<Int.random(in: 1...3, using: &g)).flatMap { _ in RefQuery.randomSort(&g).prefix(1) }
  }

  /// Every page, walked from the first to an empty or short one, equals the reference
  /// sorted the documented way, for random filters, sorts and page sizes.
  @Test(arguments: StoreKind.withSQL)
  func walkingAllPagesEqualsTheSortedReference(kind: StoreKind) throws {
    var g = SeededRandom(seed: 0x9A6E_5EED)
    let rounds = TestScale.pick(quick: 12, soak: 120)
    for round in 0..<rounds {
      let data = Self.animals(count: Int.random(in: 0...60, using: &g), &g)
      let set = try kind.makeSet(data)
      let keys = Self.randomSort(&g)
      let filter = Bool.random(using: &g) ? RefQuery.randomFilter(depth: 1, &g, data) : nil
      let size = Int.random(in: 1...9, using: &g)
      var sorted = applySort(keys, to: set)
      if let filter { sorted = sorted.filter(filter.requestFilter) }
      let expected = Self.referenceOrder(data.filter { filter?.matches($0) ?? true }, keys)
      var walked: [Animal] = []
      var page = try sorted.page(size: size).fetch()
      while true {
        walked += page
        guard page.count == size, let last = page.last else { break }
        page = try sorted.page(after: last, size: size).fetch()
      }
      #expect(
        walked.map(\.id) == expected.map(\.id),
        "round \(round) on \(kind): sortBy(\(keys)) filter \(filter?.description ?? "none") size \(size)")
    }
  }

  /// The issue's judge: random interleavings of page reads, inserts and deletes (the
  /// anchor itself among them). A record stored for the whole walk is read exactly once;
  /// no record is read twice.
  @Test(arguments: StoreKind.writableWithSQL)
  func pagesStayStableUnderInsertsAndDeletes(kind: StoreKind) throws {
    var g = SeededRandom(seed: 0x57AB_1E00 &+ UInt64(kind.rawValue.utf8.count))
    let store = try kind.makeStore()
    var nextID = 1
    var stored = Set<Int>()
    func insert(_ n: Int) throws {
      let records = Self.animals(count: n, firstID: nextID, &g)
      try store.insert(contentsOf: records)
      nextID += n
      stored.formUnion(records.map(\.id))
    }
    try insert(40)
    // One interleaving is one step: a page read, an insert or a delete.
    let steps = TestScale.pick(quick: 1_000, soak: 10_000)
    var step = 0
    var walks = 0
    while step < steps {
      let keys = Self.randomSort(&g)
      let sorted = applySort(keys, to: RequestSet(store))
      let size = Int.random(in: 1...8, using: &g)
      let atStart = stored
      var deleted = Set<Int>()
      var seen: [Int: Int] = [:]
      var last: Animal?
      var finished = false
      walk: while step < steps {
        step += 1
        switch Int.random(in: 0..<10, using: &g) {
        case 0..<5:
          let page = try sorted.page(after: last, size: size).fetch()
          for record in page { seen[record.id, default: 0] += 1 }
          guard page.count == size else {
            finished = true
            break walk
          }
          last = page.last
        case 5..<7:
          try insert(Int.random(in: 1...3, using: &g))
        default:
          // Now and then the anchor itself.
          // Sorted first: a Set's order changes from one process to the next.
          let victim =
            Int.random(in: 0..<4, using: &g) == 0 ? last?.id : stored.sorted().randomElement(using: &g)
          if let victim, stored.contains(victim) {
            try store.delete(id: victim)
            stored.remove(victim)
            deleted.insert(victim)
          }
        }
      }
      walks += 1
      guard finished else { break }  // the steps ran out during the last walk
      let missed = atStart.subtracting(deleted).filter { seen[$0] != 1 }
      let repeated = seen.filter { $0.value > 1 }.keys
      #expect(
        missed.isEmpty, "walk \(walks) on \(kind): sortBy(\(keys)) size \(size) missed \(missed.sorted())")
      #expect(repeated.isEmpty, "walk \(walks) on \(kind): sortBy(\(keys)) repeated \(repeated.sorted())")
      if stored.count > 120 {
        for id in stored.sorted().shuffled(using: &g).prefix(60) { try store.delete(id: id) }
        stored = Set(try RequestSet(store).fetch().map(\.id))
      }
    }
    #expect(walks > 1)
  }

  /// The async form reads the same pages as the sync one.
  @Test(arguments: StoreKind.withSQL)
  func asyncPagesEqualSyncPages(kind: StoreKind) async throws {
    var g = SeededRandom(seed: 0xA5_1C)
    let data = Self.animals(count: 50, &g)
    let set = try kind.makeSet(data).sortBy("species").sortBy(\.age, order: .descending)
    var last: Animal?
    repeat {
      let sync = try set.page(after: last, size: 7).fetch()
      let async = try await set.page(after: last, size: 7).async.fetch()
      #expect(async.map(\.id) == sync.map(\.id))
      last = sync.last
    } while last != nil
  }

  /// The page is a filter, a sort with `id` last and a limit in the query model, so
  /// `explain()` shows it, and the filter is written as the OR-expansion of the keys.
  @Test func explainShowsThePageAsAFilterAndALimit() throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    let set = RequestSet(store).sortBy("species").sortBy("age", order: .descending)
    let anchor = Animal.zoo[2]  // Rex: a Dog of 5
    let text = set.page(after: anchor, size: 2).explain()
    #expect(
      text.contains(
        "filter: species > \"Dog\" OR (species == \"Dog\" AND (age < 5 OR age == nil)) "
          + "OR (species == \"Dog\" AND age == 5 AND id > 3)"),
      "\(text)")
    #expect(text.contains("sort: species ASC, age DESC, id ASC (top-k heap, k = 2)"), "\(text)")
    #expect(text.contains("window: limit 2"), "\(text)")
    #expect(try set.page(after: anchor, size: 2).fetch().map(\.id) == [6, 1])
  }

  /// On a SQL store the page's filter, sort and limit run in the database.
  @Test(arguments: StoreKind.withSQL.filter(\.pushesDown))
  func sqlStoresRunThePageThemselves(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo).sortBy(\.age).sortBy("name", order: .descending)
    let page = set.page(after: Animal.zoo[2], size: 2)
    // Bella 2, Micky 3, Zed 5, Rex 5, Daisy 7, alice 12: after Rex come Daisy and alice.
    #expect(try page.requiringPushdown().fetch().map(\.id) == [2, 5])
    #expect(page.explain().contains("pushed to"), "\(page.explain())")
  }

  /// A nil sort value is before every value ascending and after every value descending,
  /// as the sort puts it, on a page boundary too.
  @Test(arguments: StoreKind.withSQL)
  func nilsPageWhereTheSortPutsThem(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo)
    // Nicknames: 1 Mick, 2 nil, 3 Rexy, 4 nil, 5 Al, 6 nil.
    let ascending = set.sortBy(\.nickname)
    #expect(try ascending.page(after: Animal.zoo[3], size: 3).fetch().map(\.id) == [6, 5, 1])
    let descending = set.sortBy("nickname", order: .descending)
    #expect(try descending.page(after: Animal.zoo[4], size: 3).fetch().map(\.id) == [2, 4, 6])
    #expect(try descending.page(after: Animal.zoo[3], size: 3).fetch().map(\.id) == [6])
  }

  /// A typed sort with a collation compares with the anchor in process, and pages as the
  /// sort orders.
  @Test(arguments: StoreKind.withSQL)
  func typedSortsWithACollationPageInProcess(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo).sortBy(\.name, collation: .caseInsensitive)
    // alice, Bella, Daisy, Micky, Rex, Zed
    #expect(try set.page(after: Animal.zoo[3], size: 2).fetch().map(\.id) == [2, 1])
    #expect(
      set.page(after: Animal.zoo[3], size: 2).explain().contains("\\Animal.name [caseInsensitive] > anchor"))
  }

  /// Bad pages are typed errors that say what to write instead.
  @Test func badPagesThrowTypedErrors() throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    let set = RequestSet(store).sortBy(\.age)
    #expect(throws: RequestSetError.self) { try set.page(size: -1).fetch() }
    do {
      _ = try set.page(size: -1).fetch()
    } catch let error as RequestSetError {
      #expect(error.code == .invalidWindow)
      #expect(error.message.hasPrefix("page(after:size: -1) needs a size of 0 or more, but -1 was given."))
    }
    for (windowed, what) in [
      (set.limit(3), "limit(_:) or offset(_:)"), (set.reversed(), "reversed()"),
      (set.distinct("age"), "distinct"),
    ] {
      do {
        _ = try windowed.page(size: 2).fetch()
        Issue.record("\(what): no error")
      } catch let error as RequestSetError {
        #expect(error.code == .invalidPage)
        #expect(
          error.message
            == "page(after:size:) pages the set's sort, but the set has \(what) after it. "
            + "Call page(after:size:) on the sorted set, then narrow the page it returns.")
      }
    }
    // A page may be narrowed after it is taken.
    #expect(try set.page(size: 4).filter(\.species == "Cow").fetch().map(\.id) == [4])
  }

  /// A sort key that walks a relation cannot be compared in the store: a typed error.
  @Test func sortingThroughARelationThrows() throws {
    let graph = try RelationRulesTests.clinic(.memory)
    let pets = graph.records(Pet.self).sortBy("owner.name")
    do {
      _ = try pets.page(size: 2).fetch()
      Issue.record("no error")
    } catch let error as RequestSetError {
      #expect(error.code == .invalidPage)
      #expect(
        error.message
          == "page(after:size:) cannot page a set sorted by \"owner.name\": the key walks the relation owner, "
          + "whose values are not stored with Pet. Sort by a field of Pet itself (copy the value into the record), "
          + "or read the set in windows with offset(_:) and limit(_:).")
    }
  }

  /// A date part sorts and pages like any key: the walk equals the month order, then id.
  @Test(arguments: StoreKind.writableWithSQL)
  func datePartKeysPage(kind: StoreKind) throws {
    let moments = DatePartTests.moments(count: 40, seed: 12)
    let store = try kind.makeStore(of: Moment.self)
    try store.insert(contentsOf: moments)
    let set = RequestSet(store).sortBy("ended.@month", order: .descending)
    func month(_ m: Moment) -> Int { DatePartTests.reference(.month, m.ended) ?? 0 }
    let expected = moments.sorted { month($0) != month($1) ? month($0) > month($1) : $0.id < $1.id }
    var walked: [Moment] = []
    var last: Moment?
    repeat {
      let page = try set.page(after: last, size: 6).fetch()
      walked += page
      last = page.count == 6 ? page.last : nil
    } while last != nil
    #expect(walked.map(\.id) == expected.map(\.id))
  }

  /// A page after a record that is gone, on a store that is now empty, is empty.
  @Test(arguments: StoreKind.writableWithSQL)
  func aPageAfterADeletedAnchorOfAnEmptyStoreIsEmpty(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let set = RequestSet(store).sortBy(\.age).sortBy("name")
    let first = try set.page(size: 2).fetch()
    for animal in Animal.zoo { try store.delete(id: animal.id) }
    #expect(try set.page(after: first.last!, size: 2).fetch().isEmpty)
  }
}
