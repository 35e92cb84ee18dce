import Foundation
import Testing
@testable import RequestSet

@Suite(.ownThreads) struct SortingTests {
  func names(_ s: RequestSet<Animal>) throws -> [String] { try s.fetch().map(\.name) }

  @Test(arguments: StoreKind.allCases)
  func ascendingIsTheDefault(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    // Swift's String order: uppercase before lowercase.
    #expect(try names(all.sortBy("name")) == ["Bella", "Daisy", "Micky", "Rex", "Zed", "alice"])
    #expect(try names(all.sortBy("name", order: .descending)) == ["alice", "Zed", "Rex", "Micky", "Daisy", "Bella"])
    #expect(try names(all.sortBy(\.name)) == ["Bella", "Daisy", "Micky", "Rex", "Zed", "alice"])
  }

  @Test(arguments: StoreKind.allCases)
  func tiesKeepStoreOrder(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    // Rex (3) and Zed (6) are both 5; Daisy (2) and Bella (4) are both cows.
    #expect(try all.sortBy(\.age).fetch().map(\.id) == [4, 1, 3, 6, 2, 5])
    #expect(try all.sortBy(\.age, order: .descending).fetch().map(\.id) == [5, 2, 3, 6, 1, 4])
    #expect(try all.sortBy("species").fetch().map(\.id) == [5, 2, 4, 3, 6, 1])
  }

  @Test(arguments: StoreKind.allCases)
  func repeatedSortByAddsKeysInCallOrder(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try all.sortBy("species").sortBy(\.age, order: .descending).fetch().map(\.id) == [5, 2, 4, 3, 6, 1])
    #expect(try all.sortBy("species").sortBy("name").fetch().map(\.id) == [5, 4, 2, 3, 6, 1])
    #expect(
      try all.sortBy([("species", .descending), ("name", .ascending)]).fetch().map(\.id) == [1, 3, 6, 4, 2, 5])
  }

  @Test(arguments: StoreKind.allCases)
  func foundationSortDescriptorsSortAsTheyDoOnAnArray(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let byAge = SortDescriptor(\Animal.age, order: .reverse)
    #expect(try all.sortBy(byAge).fetch().map(\.id) == [5, 2, 3, 6, 1, 4])
    #expect(try all.sortBy(byAge).fetch().map(\.id) == Animal.zoo.sorted(using: byAge).map(\.id))
    let list = [SortDescriptor(\Animal.species), SortDescriptor(\Animal.age, order: .reverse)]
    #expect(try all.sortBy(list).fetch().map(\.id) == Animal.zoo.sorted(using: list).map(\.id))
    // A String key path compares with the descriptor's own comparator.
    let byName = SortDescriptor(\Animal.name)
    #expect(try names(all.sortBy(byName)) == Animal.zoo.sorted(using: byName).map(\.name))
    #expect(try all.sortBy(SortDescriptor(\Animal.nickname)).filter(\.age > 2).fetch().map(\.id)
      == Animal.zoo.filter { $0.age > 2 }.sorted(using: SortDescriptor(\Animal.nickname)).map(\.id))
    #expect(try all.sortBy(byAge).limit(2).fetch().map(\.id) == [5, 2])
    if kind.pushesDown {
      #expect(all.sortBy(byAge).explain().contains("stage 1: pushed to \(kind.sourceName): ORDER BY age DESC"))
    } else {
      #expect(all.sortBy(byAge).explain().hasSuffix("  sort: \\Animal.age DESC (stable sort)"))
    }
  }

  /// An index on the descriptor's key serves a sort with a limit, as it serves `sortBy(\.age)`.
  @Test func aSortDescriptorWalksAnIndexOnItsKey() throws {
    let store = try MemoryStore(Animal.zoo)
    try store.createIndex("age")
    let set = RequestSet(store).sortBy(SortDescriptor(\Animal.age)).limit(2)
    #expect(set.explain().contains("stage 1: index order on age ASC"))
    #expect(try set.fetch().map(\.id) == [4, 1])
  }

  @Test(arguments: StoreKind.allCases)
  func nilSortsFirstAscendingAndLastDescending(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    // Nicknames: Mick (1), nil (2), Rexy (3), nil (4), Al (5), nil (6).
    #expect(try all.sortBy("nickname").fetch().map(\.id) == [2, 4, 6, 5, 1, 3])
    #expect(try all.sortBy(\.nickname).fetch().map(\.id) == [2, 4, 6, 5, 1, 3])
    #expect(try all.sortBy("nickname", order: .descending).fetch().map(\.id) == [3, 1, 5, 2, 4, 6])
    #expect(try all.sortBy("owner.city").fetch().map(\.id) == [3, 5, 6, 1, 2, 4])
    #expect(try all.sortBy(\Animal.owner?.city).fetch().map(\.id) == [3, 5, 6, 1, 2, 4])
  }

  @Test(arguments: StoreKind.allCases)
  func collations(kind: StoreKind) throws {
    let all = try kind.makeSet([
      Animal(id: 1, name: "file10", species: "x", age: 1), Animal(id: 2, name: "File2", species: "x", age: 1),
      Animal(id: 3, name: "file1", species: "x", age: 1), Animal(id: 4, name: "écho", species: "x", age: 1),
      Animal(id: 5, name: "Echo", species: "x", age: 1),
    ])
    #expect(try names(all.sortBy("name")) == ["Echo", "File2", "file1", "file10", "écho"])
    #expect(try names(all.sortBy("name", collation: .caseInsensitive)) == ["Echo", "écho", "file1", "file10", "File2"])
    #expect(try names(all.sortBy(\.name, collation: .localizedStandard)) == ["Echo", "écho", "file1", "File2", "file10"])
    // Case- and diacritic-insensitive: "écho" equals "Echo", so they keep store order.
    #expect(
      try names(all.sortBy("name", collation: .caseDiacriticInsensitive)) == ["écho", "Echo", "file1", "file10", "File2"])
    #expect(try all.filter("name", .equal, "ECHO", collation: .caseInsensitive).fetch().map(\.id) == [5])
    #expect(try all.filter("name", .equal, "ECHO", collation: .caseDiacriticInsensitive).fetch().map(\.id) == [4, 5])
  }

  @Test(arguments: StoreKind.allCases)
  func numbersSortAcrossIntAndDouble(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try all.sortBy("weight").fetch().map(\.id) == [1, 5, 6, 3, 4, 2])
  }

  /// A store that reads records from disk sorts by each record's key values read once
  /// (not at every comparison): the same order as an in-memory sort, ties, nils, mixed
  /// numbers, collations and descending keys included.
  @Test(arguments: [StoreKind.log, .indexedLog])
  func aSortReadingKeysOnceAgreesWithTheArray(kind: StoreKind) throws {
    var generator = SystemRandomNumberGenerator()
    let species = ["Cow", "cow", "Dog", "Ému", "emu", "Mouse"]
    let animals = (1...400).map { i in
      Animal(
        id: i, name: "n\(Int.random(in: 0..<50, using: &generator))", species: species.randomElement(using: &generator)!,
        age: Int.random(in: 0..<8, using: &generator), weight: i % 3 == 0 ? 2.5 : Double(i % 7),
        nickname: i % 4 == 0 ? nil : "k\(i % 9)", owner: i % 5 == 0 ? nil : Owner(name: "o", city: "c\(i % 3)"))
    }
    let disk = try kind.makeSet(animals)
    let memory = RequestSet(animals)
    let sorts: [(RequestSet<Animal>) -> RequestSet<Animal>] = [
      { $0.sortBy("species") },
      { $0.sortBy("species", order: .descending).sortBy("age") },
      { $0.sortBy("weight").sortBy("nickname", order: .descending) },
      { $0.sortBy("owner.city").sortBy("name") },
      { $0.sortBy("species", collation: .caseDiacriticInsensitive).sortBy(\.age, order: .descending) },
      { $0.filter("age > 2").sortBy("nickname").offset(7) },
    ]
    for sort in sorts {
      #expect(try sort(disk).fetch().map(\.id) == sort(memory).fetch().map(\.id))
    }
  }

  @Test func sortingPlainValuesByKeyPath() {
    #expect(Array(RequestSet([3, 1, 2]).sortBy(\.self)) == [1, 2, 3])
    #expect(RequestSet([3, 1, 2]).sortBy(\.self, order: .descending).first == 3)
  }
}

@Suite(.ownThreads) struct WindowTests {
  func ids(_ s: RequestSet<Animal>) throws -> [Int] { try s.fetch().map(\.id) }

  @Test(arguments: StoreKind.allCases)
  func limitAndOffsetApplyAfterFiltersAndSorts(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.sortBy(\.age).limit(3)) == [4, 1, 3])
    #expect(try ids(all.sortBy(\.age).offset(2)) == [3, 6, 2, 5])
    #expect(try ids(all.sortBy(\.age).offset(1).limit(2)) == [1, 3])
    // A sort after a limit sorts the records the limit kept (1, 2, 3 by age).
    #expect(try ids(all.limit(3).sortBy(\.age)) == [1, 3, 2])
    #expect(try ids(all.filter(\.age > 2).sortBy(\.name).limit(2)) == [2, 1])
    #expect(try ids(all.limit(0)) == [])
    #expect(try ids(all.offset(10)) == [])
    #expect(all.offset(4).count == 2)
    #expect(all.sortBy(\.age).offset(1).limit(100).count == 5)
  }

  @Test(arguments: StoreKind.allCases)
  func aFilterAfterALimitAppliesToTheRecordsTheLimitKept(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    // Of the first three records (1, 2, 3), those older than 3.
    #expect(try ids(all.limit(3).filter(\.age > 3)) == [2, 3])
    // Not the first three of those older than 3 (which would be 2, 3, 5).
    #expect(try ids(all.filter(\.age > 3).limit(3)) == [2, 3, 5])
    // An OR filter after a window starts a new stage: nothing before it in that stage.
    #expect(try ids(all.filter(\.id == 6).limit(1).filter(\.age > 100, mode: .or)) == [])
    // A sort after a limit sorts the kept records.
    #expect(try ids(all.limit(3).sortBy(\.age, order: .descending)) == [2, 3, 1])
    let plan = all.limit(3).filter(\.age > 3).explain()
    if kind.pushesDown {
      #expect(plan.hasPrefix("RequestSet<Animal> over \(kind.sourceName)\nstage 1: pushed to \(kind.sourceName): LIMIT 3\n"))
      #expect(plan.hasSuffix("\nstage 2: in process, on the records of stage 1\n  filter: \\Animal.age > 3"))
    }
    if kind == .pushdownMemory {
      #expect(plan == """
        RequestSet<Animal> over PushdownMemoryStore<Animal>
        stage 1: pushed to PushdownMemoryStore<Animal>: LIMIT 3
          statement: SCAN LIMIT 3
          plan: scan 6 records
        stage 2: in process, on the records of stage 1
          filter: \\Animal.age > 3
        """)
    }
    if kind == .sqlite || kind == .indexedSQLite {
      #expect(plan == """
        RequestSet<Animal> over SQLiteStore<Animal>
        stage 1: pushed to SQLiteStore<Animal>: LIMIT 3
          statement: SELECT body FROM "Animal" ORDER BY seq LIMIT ? OFFSET ?
          bindings: [3, 0]
          plan: SCAN Animal
        stage 2: in process, on the records of stage 1
          filter: \\Animal.age > 3
        """)
      return
    }
    if kind.pushesDown { return }
    #expect(plan == """
      RequestSet<Animal> over \(kind.sourceName)
      stage 1: scan all records (~6 records)
        window: limit 3
      stage 2: the records of stage 1
        filter: \\Animal.age > 3
      """)
  }

  @Test(arguments: StoreKind.allCases)
  func limitsNarrowAndOffsetsSkipWithinTheWindow(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.limit(4).limit(2)) == [1, 2])
    #expect(try ids(all.limit(2).limit(4)) == [1, 2])
    #expect(try ids(all.limit(4).offset(1)) == [2, 3, 4])
    #expect(try ids(all.offset(1).offset(2)) == [4, 5, 6])
    #expect(try ids(all.limit(2).offset(5)) == [])
    #expect(all.offset(1).limit(Int.max).count == 5)
  }
}
