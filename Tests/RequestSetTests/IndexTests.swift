import Foundation
import Synchronization
import Testing

@testable import RequestSet

/// The two built-in stores, as far as indexes go.
protocol IndexableStore: RecordStore where Element == Animal {
  func createIndex(_ key: String, unique: Bool) throws
  var indexes: [RequestIndex] { get }
}
extension MemoryStore: IndexableStore where Element == Animal {}
extension LogStore: IndexableStore where Element == Animal {}

/// The stores that keep indexes.
enum IndexedKind: String, CaseIterable, CustomStringConvertible, Sendable {
  case memory, log
  var description: String { rawValue }
  var sourceName: String { self == .memory ? "MemoryStore<Animal>" : "LogStore<Animal>" }

  func makeStore(path: String = TemporaryLogDirectory.freshPath()) throws -> any IndexableStore {
    switch self {
    case .memory: return MemoryStore<Animal>()
    case .log: return try LogStore<Animal>(path: path)
    }
  }
}

/// 1,000 animals whose index estimates are easy to count by hand: age is `id % 100`,
/// species cycles through 8, names are `n<id>`, a third have no nickname.
func gradedAnimals(_ n: Int = 1000) -> [Animal] {
  let species = ["Cow", "Dog", "Cat", "Mouse", "Horse", "Sheep", "Goat", "Pig"]
  let cities = ["Oslo", "Bergen", "Paris", "Lyon", "Rome"]
  return (0..<n).map { i in
    Animal(
      id: i, name: "n\(i)", species: species[i % 8], age: i % 100, weight: Double(i % 50) / 2,
      nickname: i % 3 == 0 ? nil : "k\(i % 7)", tags: i % 2 == 0 ? ["farm"] : [],
      owner: i % 4 == 0 ? nil : Owner(name: "o", city: cities[i % 5]))
  }
}

private func ids(_ set: RequestSet<Animal>) throws -> [Int] { try set.fetch().map(\.id) }

@Suite(.ownThreads) struct IndexPlanTests {
  func indexedSet(_ kind: IndexedKind) throws -> RequestSet<Animal> {
    let store = try kind.makeStore()
    try store.insert(contentsOf: gradedAnimals())
    for key in ["species", "age", "name"] { try store.createIndex(key, unique: key == "name") }
    return RequestSet(store)
  }

  @Test(arguments: IndexedKind.allCases)
  func thePlanTextOfTheMainShapes(kind: IndexedKind) throws {
    let all = try indexedSet(kind)
    let head = "RequestSet<Animal> over \(kind.sourceName)\n"

    #expect(
      all.filter("species", value: "Cow").sortBy("weight").limit(5).explain() == head + """
        stage 1: index lookup on species (~125 of 1000 records)
          index answers: species == "Cow"
          sort: weight ASC (top-k heap, k = 5)
          window: limit 5
        """)
    #expect(
      all.filter(\.age == 5).filter(\.species == "Dog").explain() == head
        + (kind == .memory
          ? """
          stage 1: index lookup on age (~10 of 1000 records)
            index narrows to: \\Animal.age == 5 (rechecked on each record)
            filter: \\Animal.age == 5 AND \\Animal.species == "Dog"
          """
          // On the log the typed condition runs as its field twin, which the index answers.
          : """
          stage 1: index lookup on age (~10 of 1000 records)
            index answers: \\Animal.age == 5
            filter: \\Animal.species == "Dog"
          """))
    #expect(
      all.filter("name IN %@", ["n1", "n7", "n1"]).explain() == head + """
        stage 1: index lookup on name (~2 of 1000 records)
          index answers: name IN {"n1", "n7", "n1"}
        """)
    // A quarter of the records: sorting the slots back costs more than a scan.
    #expect(
      all.filter("species IN %@", ["Cow", "Cat"]).explain() == head + """
        stage 1: scan all records (~1000 records)
          index not used: index lookup on species not used: ~250 of 1000 records match
          filter: species IN {"Cow", "Cat"}
        """)
    #expect(
      all.filter("age", .greaterThanOrEqual, 95).explain() == head + """
        stage 1: index range on age (~50 of 1000 records)
          index answers: age >= 95
        """)
    #expect(
      all.filter("age", .greaterThanOrEqual, 40).filter("age", .lessThan, 42).filter(\.weight > 1).explain() == head + """
        stage 1: index range on age (~20 of 1000 records)
          index answers: age >= 40 AND age < 42
          filter: \\Animal.weight > 1.0
        """)
    #expect(
      all.filter("age", value: 5).filter("age", value: 7, mode: .or).explain() == head + """
        stage 1: index lookup on age (~20 of 1000 records)
          index answers: age == 5 OR age == 7
        """)
    #expect(
      all.filter("name BEGINSWITH %@", "n99").explain() == head + """
        stage 1: index prefix range on name (~11 of 1000 records)
          index narrows to: name BEGINSWITH "n99" (rechecked on each record)
          filter: name BEGINSWITH "n99"
        """)
    #expect(
      all.filter(#Predicate<Animal> { $0.name == "n5" || $0.age == 7 }).explain() == head
        + (kind == .memory
          ? """
          stage 1: index lookup on age + index lookup on name (~11 of 1000 records)
            index narrows to: #Predicate<Animal>(name == "n5" OR age == 7) (rechecked on each record)
            filter: #Predicate<Animal>(name == "n5" OR age == 7)
          """
          // On the log the predicate runs as its translation, which the indexes answer.
          : """
          stage 1: index lookup on age + index lookup on name (~11 of 1000 records)
            index answers: #Predicate<Animal>(name == "n5" OR age == 7)
          """))
    #expect(
      all.filter(\.id == 42).explain() == head + """
        stage 1: id lookup (~1 of 1000 records)
          index answers: \\Animal.id == 42
        """)
    #expect(
      all.sortBy(\.age).limit(5).explain() == head + """
        stage 1: index order on age ASC, stopping once the window is full (~5 of 1000 records)
          sort: \\Animal.age ASC (index order)
          window: limit 5
        """)
    #expect(
      all.filter("species", value: "Cow").sortBy("age", order: .descending).limit(3).explain() == head + """
        stage 1: index order on age DESC, stopping once the window is full (~24 of 1000 records)
          an ordered walk reads fewer records than the lookup
          filter: species == "Cow"
          sort: age DESC (index order)
          window: limit 3
        """)
    #expect(
      all.filter("age", .greaterThan, 10).explain() == head + """
        stage 1: scan all records (~1000 records)
          index not used: index range on age not used: ~890 of 1000 records match
          filter: age > 10
        """)
    #expect(
      all.filter { $0.age == 3 }.sortBy(\.weight).limit(2).explain() == head + """
        stage 1: scan all records (~1000 records)
          filter: { closure }\(kind == .log ? "\n  decodes each record for: { closure }" : "")
          sort: \\Animal.weight ASC (top-k heap, k = 2)
          window: limit 2
        """)
  }

  @Test(arguments: IndexedKind.allCases)
  func lookupsAndWalksReadOnlyWhatTheyNeed(kind: IndexedKind) throws {
    let all = try indexedSet(kind)
    let calls = Atomic<Int>(0)
    let counted = all.filter { _ in calls.add(1, ordering: .relaxed); return true }
    // A lookup runs the rest of the filter on its candidates only.
    #expect(try counted.filter("species", value: "Cow").fetch().count == 125)
    #expect(calls.load(ordering: .relaxed) == 125)
    // An ordered walk stops once the window is full: ten animals are 0 years old, and
    // the first three in store order are the answer.
    calls.store(0, ordering: .relaxed)
    #expect(try ids(counted.sortBy(\.age).limit(3)) == [0, 100, 200])
    #expect(calls.load(ordering: .relaxed) == 3)
    // Descending, a run of equal values is read in store order too.
    calls.store(0, ordering: .relaxed)
    #expect(try ids(counted.sortBy(\.age, order: .descending).limit(3)) == [99, 199, 299])
    #expect(calls.load(ordering: .relaxed) == 3)
    // With a second sort key, the walk takes in the last value's ties for it to order.
    calls.store(0, ordering: .relaxed)
    #expect(try ids(counted.sortBy(\.age).sortBy(\.id, order: .descending).limit(3)) == [900, 800, 700])
    #expect(calls.load(ordering: .relaxed) == 10)
    // count stops at the window too: isEmpty reads one record.
    calls.store(0, ordering: .relaxed)
    #expect(!counted.isEmpty)
    #expect(calls.load(ordering: .relaxed) == 1)
  }
}

@Suite(.ownThreads) struct IndexDifferentialTests {
  /// Random index-friendly queries (equality, IN, ranges, prefixes, OR, AND with
  /// unindexed parts, sorts on indexed and unindexed keys with windows, both directions)
  /// on indexed stores, against the same query over a plain array, which always scans.
  @Test(arguments: IndexedKind.allCases)
  func everyPlanReturnsWhatAFullScanReturns(kind: IndexedKind) throws {
    var rng = SeededRandom(seed: 0x1DE5)
    var animals = Animal.random(count: 400, seed: 77)
    // Values an index must keep out of its order, and mixed number kinds.
    animals[3].weight = .nan
    animals[10].weight = 5
    let store = try kind.makeStore()
    try store.insert(contentsOf: animals)
    for key in ["species", "age", "name", "weight", "nickname", "owner.city", "tags"] { try store.createIndex(key, unique: false) }
    let indexed = RequestSet(store)
    let scanned = RequestSet(animals)
    var usedIndex = 0
    for _ in 0..<500 {
      var a = indexed, b = scanned
      for _ in 0..<Int.random(in: 1...3, using: &rng) {
        let mode: RequestFilterMode = Int.random(in: 0..<4, using: &rng) == 0 ? .or : .and
        switch Int.random(in: 0..<10, using: &rng) {
        case 0:
          let s = Animal.speciesPool.randomElement(using: &rng)!
          (a, b) = (a.filter("species", value: s, mode: mode), b.filter("species", value: s, mode: mode))
        case 1:
          let v = Int.random(in: -1...21, using: &rng)
          (a, b) = (a.filter(\.age == v, mode: mode), b.filter(\.age == v, mode: mode))
        case 2:
          let v = Int.random(in: 0...20, using: &rng)
          let op = RequestComparison.allCases.randomElement(using: &rng)!
          (a, b) = (a.filter("age", op, v, mode: mode), b.filter("age", op, v, mode: mode))
        case 3:
          let lo = Double(Int.random(in: 0...100, using: &rng)), hi = lo + Double(Int.random(in: 0...10, using: &rng))
          (a, b) = (
            a.filter("weight BETWEEN %@", [lo, hi]), b.filter("weight BETWEEN %@", [lo, hi])
          )
        case 4:
          let names = Array(Animal.namePool.shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng)))
          (a, b) = (a.filter("name IN %@", names), b.filter("name IN %@", names))
        case 5:
          let p = ["B", "b", "M", "Ma", "É", "", "Z"].randomElement(using: &rng)!
          (a, b) = (a.filter("name BEGINSWITH %@", p), b.filter("name BEGINSWITH %@", p))
        case 6:
          let v: String? = Bool.random(using: &rng) ? nil : Animal.namePool.randomElement(using: &rng)!.lowercased()
          (a, b) = (a.filter(\.nickname == v, mode: mode), b.filter(\.nickname == v, mode: mode))
        case 7:
          let c = Animal.cityPool.randomElement(using: &rng)!
          (a, b) = (a.filter("owner.city", .lessThan, c, mode: mode), b.filter("owner.city", .lessThan, c, mode: mode))
        case 8:
          let v = Double(Int.random(in: 0...100, using: &rng))
          if Bool.random(using: &rng) {
            (a, b) = (a.filter(\.weight > v, mode: mode), b.filter(\.weight > v, mode: mode))
          } else {
            (a, b) = (a.filter(\.weight <= v, mode: mode), b.filter(\.weight <= v, mode: mode))
          }
        default:
          let id = Int.random(in: 0...420, using: &rng)
          (a, b) = (a.filter(\.id == id, mode: mode), b.filter(\.id == id, mode: mode))
        }
      }
      if Bool.random(using: &rng) {
        let order: RequestSortOrder = Bool.random(using: &rng) ? .ascending : .descending
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: (a, b) = (a.sortBy(\.age, order: order), b.sortBy(\.age, order: order))
        case 1: (a, b) = (a.sortBy("name", order: order), b.sortBy("name", order: order))
        case 2: (a, b) = (a.sortBy(\.nickname, order: order), b.sortBy(\.nickname, order: order))
        default: (a, b) = (a.sortBy("weight", order: order), b.sortBy("weight", order: order))
        }
        if Bool.random(using: &rng) { (a, b) = (a.sortBy(\.id), b.sortBy(\.id)) }
      }
      if Bool.random(using: &rng) {
        let offset = Int.random(in: 0...5, using: &rng), limit = Int.random(in: 0...12, using: &rng)
        (a, b) = (a.offset(offset).limit(limit), b.offset(offset).limit(limit))
      }
      let plan = a.explain()
      if plan.contains("stage 1: index") || plan.contains("stage 1: id lookup") { usedIndex += 1 }
      #expect(try ids(a) == ids(b), "\(plan)")
      #expect(try a.fetchCount() == b.fetchCount(), "\(plan)")
    }
    // The queries exercise the index paths, not just scans.
    #expect(usedIndex > 150)
  }
}

@Suite(.ownThreads) struct IndexMaintenanceTests {
  /// Random inserts, saves, deletes and batches, with MemoryStore's slot compaction and
  /// LogStore's compact() and reopen; after every step, indexed queries agree with the
  /// model array.
  @Test(arguments: IndexedKind.allCases)
  func indexesFollowEveryWrite(kind: IndexedKind) throws {
    var rng = SeededRandom(seed: 0xAB1E)
    let path = TemporaryLogDirectory.freshPath()
    var store = try kind.makeStore(path: path)
    for key in ["species", "age", "nickname", "owner.city"] { try store.createIndex(key, unique: false) }
    var model: [Animal] = []
    var nextID = 1
    func check(_ step: Int) throws {
      let set = RequestSet(store), ref = RequestSet(model)
      for s in Animal.speciesPool.prefix(2) {
        #expect(try ids(set.filter("species", value: s)) == ids(ref.filter("species", value: s)), "step \(step)")
      }
      let age = Int.random(in: 0...20, using: &rng)
      #expect(try ids(set.filter(\.age == age)) == ids(ref.filter(\.age == age)), "step \(step)")
      #expect(try ids(set.filter("age", .lessThan, age)) == ids(ref.filter("age", .lessThan, age)), "step \(step)")
      #expect(try ids(set.sortBy(\.age).limit(7)) == ids(ref.sortBy(\.age).limit(7)), "step \(step)")
      #expect(try ids(set.filter(\.nickname == nil)) == ids(ref.filter(\.nickname == nil)), "step \(step)")
      #expect(
        try ids(set.filter("owner.city", value: "Oslo")) == ids(ref.filter("owner.city", value: "Oslo")), "step \(step)")
      if let some = model.randomElement(using: &rng) {
        #expect(try ids(set.filter(\.id == some.id)) == [some.id], "step \(step)")
      }
    }
    for step in 0..<120 {
      switch Int.random(in: 0..<10, using: &rng) {
      case 0..<3:
        let batch = Animal.random(count: Int.random(in: 1...40, using: &rng), seed: rng.next()).map {
          var a = $0
          a.id = nextID
          nextID += 1
          return a
        }
        try store.insert(contentsOf: batch)
        model += batch
      case 3..<5:
        guard !model.isEmpty else { continue }
        let i = Int.random(in: 0..<model.count, using: &rng)
        var changed = Animal.random(count: 1, seed: rng.next())[0]
        changed.id = model[i].id
        try store.save(changed)
        model[i] = changed
      case 5..<7:
        for _ in 0..<Int.random(in: 1...30, using: &rng) where !model.isEmpty {
          let i = Int.random(in: 0..<model.count, using: &rng)
          try store.delete(id: model[i].id)
          model.remove(at: i)
        }
      case 7:
        // One batch that saves, deletes and re-inserts the same ids.
        guard model.count > 2 else { continue }
        var first = model[0]
        first.age = 99
        let second = model[1]
        try store.apply([.save(first), .delete(id: second.id), .insert(second), .delete(id: first.id)], ifVersion: nil)
        model.remove(at: 0)
        model.remove(at: 0)
        model.append(second)
      case 8:
        if let log = store as? LogStore<Animal> {
          try log.compact()
        } else {
          // Enough deletes to make MemoryStore drop its dead slots.
          let extra = Animal.random(count: 1200, seed: rng.next()).map {
            var a = $0
            a.id = nextID
            nextID += 1
            return a
          }
          try store.insert(contentsOf: extra)
          for a in extra { try store.delete(id: a.id) }
        }
      default:
        // Reopen the log: the definitions come back from the file, the entries are rebuilt.
        if kind == .log {
          store = MemoryStore<Animal>()  // releases the log's write lock
          store = try LogStore<Animal>(path: path)
          #expect(store.indexes.map(\.key) == ["species", "age", "nickname", "owner.city"])
        }
      }
      try check(step)
    }
  }
}

@Suite(.ownThreads) struct UniqueIndexTests {
  @Test(arguments: IndexedKind.allCases)
  func aDuplicateValueThrowsAndWritesNothing(kind: IndexedKind) throws {
    let path = TemporaryLogDirectory.freshPath()
    var store: any IndexableStore = try kind.makeStore(path: path)
    try store.insert(contentsOf: Animal.zoo)
    try store.createIndex("name", unique: true)
    try store.createIndex("nickname", unique: true)
    let before = try RequestSet(store).fetch()

    func expectViolation(_ body: () throws -> Void) {
      #expect {
        try body()
      } throws: { error in
        guard let e = error as? RequestSetError, e.code == .uniqueViolation else { return false }
        return e.message.contains("the index on \"name\" is unique") && e.message.contains("nothing was written")
      }
    }
    let clash = Animal(id: 10, name: "Rex", species: "Dog", age: 1)
    expectViolation { try store.insert(clash) }
    expectViolation { try store.insert(contentsOf: [Animal(id: 11, name: "New", species: "Cat", age: 1), clash]) }
    var renamed = Animal.zoo[0]
    renamed.name = "Daisy"
    expectViolation { try store.save(renamed) }
    // Two new records with one name, in one batch.
    expectViolation {
      try store.apply(
        [.insert(Animal(id: 12, name: "Twin", species: "Cat", age: 1)),
         .insert(Animal(id: 13, name: "Twin", species: "Cat", age: 1))], ifVersion: nil)
    }
    #expect(try RequestSet(store).fetch() == before)

    // In order: a name freed earlier in the batch can be taken later in it.
    var daisy = Animal.zoo[1]
    daisy.name = "Daisy II"
    var micky = Animal.zoo[0]
    micky.name = "Daisy"
    try store.apply([.save(daisy), .save(micky), .delete(id: 3), .insert(Animal(id: 20, name: "Rex", species: "Dog", age: 2))], ifVersion: nil)
    #expect(try RequestSet(store).filter("name", value: "Daisy").fetch().map(\.id) == [1])
    #expect(try RequestSet(store).filter("name", value: "Rex").fetch().map(\.id) == [20])
    // nil is exempt, as in SQL: several records have no nickname.
    try store.insert(Animal(id: 30, name: "Nobody", species: "Cat", age: 1, nickname: nil))
    #expect(try RequestSet(store).filter(\.nickname == nil).fetchCount() >= 2)
    // Saving a record with its own value is no clash.
    try store.save(Animal(id: 20, name: "Rex", species: "Dog", age: 3))

    if kind == .log {
      // The unique check comes back with the index on reopen.
      store = MemoryStore<Animal>()
      store = try LogStore<Animal>(path: path)
      #expect(store.indexes == [RequestIndex(key: "name", unique: true), RequestIndex(key: "nickname", unique: true)])
      expectViolation { try store.insert(Animal(id: 40, name: "Rex", species: "Dog", age: 1)) }
    }
  }

  @Test(arguments: IndexedKind.allCases)
  func creatingIndexesChecksKeysValuesAndSettings(kind: IndexedKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    #expect { try store.createIndex("species", unique: true) } throws: {
      ($0 as? RequestSetError)?.code == .uniqueViolation
        && ($0 as? RequestSetError)?.message.contains("more than one record has species == \"Cow\"") == true
    }
    #expect(store.indexes.isEmpty)
    #expect { try store.createIndex("nmae", unique: false) } throws: {
      ($0 as? RequestSetError)?.code == .unknownKey && "\($0)".contains("Known keys:")
    }
    try store.createIndex("species", unique: false)
    try store.createIndex("species", unique: false)  // again: nothing to do
    #expect(store.indexes == [RequestIndex(key: "species", unique: false)])
    #expect { try store.createIndex("species", unique: true) } throws: {
      ($0 as? RequestSetError)?.code == .invalidIndex && "\($0)".contains("dropIndex(\"species\")")
    }
    if let memory = store as? MemoryStore<Animal> {
      try memory.createIndex(\.owner?.city)
      #expect { try memory.createIndex(\.tags[0]) } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
      #expect(memory.dropIndex("species"))
      #expect(!memory.dropIndex("species"))
      #expect(memory.indexes.map(\.key) == ["owner.city"])
    }
    if let log = store as? LogStore<Animal> {
      try log.createIndex(\.owner?.city)
      #expect { try log.createIndex(\.tags[0]) } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
      #expect(try log.dropIndex("species"))
      #expect(log.indexes.map(\.key) == ["owner.city"])
    }
  }
}

@Suite(.ownThreads) struct LogIndexRecoveryTests {
  /// Definitions written by createIndex and dropIndex come back on reopen, through a
  /// compaction too, and the rebuilt entries serve queries.
  @Test func definitionsOutliveTheStore() throws {
    let path = TemporaryLogDirectory.freshPath()
    do {
      let store = try LogStore<Animal>(path: path)
      try store.insert(contentsOf: Animal.zoo)
      try store.createIndex("species")
      try store.createIndex("name", unique: true)
      try store.createIndex("age")
      #expect(try store.dropIndex("age"))
    }
    do {
      let store = try LogStore<Animal>(path: path)
      #expect(store.indexes == [RequestIndex(key: "species", unique: false), RequestIndex(key: "name", unique: true)])
      try store.compact()
      #expect { try store.insert(Animal(id: 9, name: "Rex", species: "Dog", age: 1)) } throws: {
        ($0 as? RequestSetError)?.code == .uniqueViolation
      }
    }
    let store = try LogStore<Animal>(path: path)
    #expect(store.indexes.map(\.key) == ["species", "name"])
    let cows = RequestSet(store).filter("species", value: "Cow")
    #expect(cows.explain().contains("stage 1: index lookup on species"))
    #expect(try cows.fetch().map(\.id) == [2, 4])
  }

  /// A log with index definitions, cut at every byte offset: it always opens, holds the
  /// definitions its complete frames gave, and every indexed query returns what a scan of
  /// the recovered records returns.
  @Test func anIndexedLogCutAnywhereOpensAndAgreesWithAScan() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    do {
      let store = try LogStore<Animal>(path: path)
      try store.insert(contentsOf: Array(Animal.zoo.prefix(3)))
      try store.createIndex("species", unique: false)
      try store.insert(Animal.zoo[3])
      try store.createIndex("age", unique: false)
      try store.save(Animal(id: 2, name: "Daisy", species: "Dog", age: 9))
      try store.delete(id: 1)
      try store.insert(contentsOf: Array(Animal.zoo.suffix(2)))
    }
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    var sawDefinitions = Set<[String]>()
    for cut in 0...bytes.count {
      let copy = dir.file("cut.rslog")
      try? FileManager.default.removeItem(atPath: copy)
      try? FileManager.default.removeItem(atPath: copy + ".lock")
      try bytes.prefix(cut).write(to: URL(fileURLWithPath: copy))
      guard let store = try? LogStore<Animal>(path: copy) else {
        // Only a cut inside the header may refuse to open.
        #expect(cut < 32, "cut at \(cut)")
        continue
      }
      sawDefinitions.insert(store.indexes.map(\.key))
      let set = RequestSet(store)
      let records = try set.fetch()
      let scan = RequestSet(records)
      for s in ["Cow", "Dog", "Cat"] {
        #expect(try set.filter("species", value: s).fetch() == scan.filter("species", value: s).fetch(), "cut \(cut)")
      }
      #expect(try set.filter("age", .greaterThan, 4).fetch() == scan.filter("age", .greaterThan, 4).fetch(), "cut \(cut)")
      #expect(try set.sortBy(\.age).limit(2).fetch() == scan.sortBy(\.age).limit(2).fetch(), "cut \(cut)")
    }
    #expect(sawDefinitions == [[], ["species"], ["species", "age"]])
  }
}

/// A record whose id is stored under another key, and whose "id" key holds something else.
private struct Relabeled: Record, Equatable {
  var id: Int
  var other: Int
  enum CodingKeys: String, CodingKey {
    case id = "identifier"
    case other = "id"
  }
}

@Suite(.ownThreads) struct IDLookupTests {
  @Test(arguments: IndexedKind.allCases)
  func theIDLookupFollowsThePropertyNotTheKey(kind: IndexedKind) throws {
    let store: any RecordStore<Relabeled> =
      kind == .memory ? MemoryStore<Relabeled>() : try LogStore<Relabeled>(path: TemporaryLogDirectory.freshPath())
    try store.insert(contentsOf: (1...20).map { Relabeled(id: $0, other: 21 - $0) })
    let set = RequestSet(store)
    #expect(set.filter(\.id == 3).explain().contains("stage 1: id lookup"))
    // The string key "id" is the other field: no id lookup for it.
    #expect(try set.filter("id", value: 3).fetch() == [Relabeled(id: 18, other: 3)])
    #expect(set.filter("id", value: 3).explain().contains("stage 1: scan all records"))
    #expect(try set.filter(\.id == 99).fetch().isEmpty)
    #expect(try set.filter(\.id == 3).fetch() == [Relabeled(id: 3, other: 18)])
    // CodingKeys that swap two names of one kind: the typed condition on `other` must not
    // read the field named "other" (which holds the id), on either store.
    #expect(try set.filter(\.other == 3).fetch() == [Relabeled(id: 18, other: 3)])
    #expect(try set.filter(\.other > 18).sortBy(\.other).fetch().map(\.id) == [2, 1])
    // A snapshot the store has moved past scans instead of asking the store.
    let pinned = set.filter(\.id == 5)
    #expect(pinned.count == 1)
    try store.delete(id: 5)
    try store.insert(Relabeled(id: 5, other: 0))
    #expect(try pinned.fetch() == [Relabeled(id: 5, other: 16)])
    #expect(try set.filter(\.id == 5).fetch() == [Relabeled(id: 5, other: 0)])
  }
}

@Suite(.ownThreads) struct ExternalSortTests {
  /// On a store that keeps records outside memory, a typed sort on a stored property reads
  /// the field, not two records per comparison: only the records returned are decoded.
  @Test func typedSortsOnAnExternalStoreReadFieldsNotRecords() throws {
    let animals = Animal.random(count: 300, seed: 12)
    let source = CountingRecords(animals)
    let snapshot = source.snapshot()
    let all = RequestSet(_source: _Source(describe: { "counting" }, snapshot: { snapshot }), _query: _Query())
    let reference = RequestSet(animals)
    for (set, ref) in [
      (all.sortBy(\.age).limit(5), reference.sortBy(\.age).limit(5)),
      (all.sortBy(\.nickname, order: .descending).limit(7), reference.sortBy(\.nickname, order: .descending).limit(7)),
      (all.sortBy(\.weight).sortBy(\.name).offset(3).limit(4), reference.sortBy(\.weight).sortBy(\.name).offset(3).limit(4)),
    ] {
      source.reads.store(0, ordering: .relaxed)
      let got = try set.fetch()
      #expect(got == (try ref.fetch()))
      #expect(source.reads.load(ordering: .relaxed) == got.count)
    }
  }
}

/// Two properties of one kind stored under each other's names.
private struct Swapped: Record, Equatable {
  var id: Int
  var a: Int
  var b: Int
  enum CodingKeys: String, CodingKey {
    case id
    case a = "b"
    case b = "a"
  }
}

@Suite(.ownThreads) struct SwappedKeyTests {
  /// A typed condition, sort, predicate or index on `a` must read `a`, although the field
  /// named "a" holds `b` and has the same kind: a store reading fields by the property's
  /// name would answer for `b`.
  @Test(arguments: IndexedKind.allCases)
  func keyPathsAreCheckedAgainstTheCodableKeys(kind: IndexedKind) throws {
    let store: any RecordStore<Swapped> =
      kind == .memory ? MemoryStore<Swapped>() : try LogStore<Swapped>(path: TemporaryLogDirectory.freshPath())
    let records = (1...30).map { Swapped(id: $0, a: $0 % 5, b: $0 % 7) }
    try store.insert(contentsOf: records)
    let set = RequestSet(store)
    #expect(try set.filter(\.a == 2).fetch() == records.filter { $0.a == 2 })
    #expect(try set.filter(\.b > 4).sortBy(\.a).limit(4).fetch() == Array(records.filter { $0.b > 4 }.sorted { $0.a < $1.a }.prefix(4)))
    #expect(try set.filter(#Predicate<Swapped> { $0.a == 3 }).fetch() == records.filter { $0.a == 3 })
    // The string key is the stored name: "a" holds b.
    #expect(try set.filter("a", value: 2).fetch() == records.filter { $0.b == 2 })
    // An index by key path cannot be made on a name that is not the property's key.
    #expect { try _indexKey(\Swapped.a) } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
  }
}
