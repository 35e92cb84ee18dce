import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
import Testing

/// Composite indexes (`createIndex("species", "age")`): queries that hold a prefix of the
/// keys equal and bound or sort by the next, checked against the array reference on every
/// store, with writes between queries; the planner's choice in `explain()`; unique
/// composite indexes; a log's definitions across reopening and compaction; bad keys.
@Suite(.ownThreads) struct CompositeIndexTests {
  /// The composite indexes the differential creates: two keys, three keys, a Double key
  /// (NaN, -0.0), an optional key first.
  static let composites: [[String]] = [
    ["species", "age"], ["owner.city", "age", "name"], ["species", "weight"], ["nickname", "id"],
  ]

  /// Creates a composite index on `keys` on any store that has them.
  static func createIndex(_ keys: [String], on store: any RecordStore<Animal>, unique: Bool = false) throws {
    switch store {
    case let s as MemoryStore<Animal>: try s.createIndex(on: keys, unique: unique)
    case let s as LogStore<Animal>: try s.createIndex(on: keys, unique: unique)
    case let s as SQLiteStore<Animal>: try s.createIndex(on: keys, unique: unique)
    case let s as PostgresStore<Animal>: try s.createIndex(on: keys, unique: unique)
    default: break  // a store without indexes still answers every query
    }
  }

  /// Animals with runs of equal species and ages, -0.0 and 0 weights now and then (NaN,
  /// which the array reference does not model, has its own test).
  static func animals(count: Int, firstID: Int = 1, seed: UInt64) -> [Animal] {
    var rng = SeededRandom(seed: seed)
    return Animal.random(count: count, seed: seed).enumerated().map { i, a in
      var a = a
      a.id = firstID + i
      a.age = Int.random(in: 0...6, using: &rng)
      switch Int.random(in: 0..<20, using: &rng) {
      case 0: a.weight = -0.0
      case 1: a.weight = 0
      default: break
      }
      return a
    }
  }

  /// A condition on `key` with a value some record holds (or a little off it).
  static func condition(_ key: String, _ op: RequestComparison, _ rng: inout SeededRandom, _ data: [Animal])
    -> RefStep
  {
    var value = data.randomElement(using: &rng)!.ref(key)
    if case .int(let i) = value, Int.random(in: 0..<4, using: &rng) == 0 { value = .double(Double(i) + 0.5) }
    if Int.random(in: 0..<15, using: &rng) == 0 { value = .null }
    let forms: [RefForm] = [.keyValue, .comparison, .typed, .predicate, .format, .typed, .comparison]
    let form =
      op == .equal
      ? forms.randomElement(using: &rng)! : forms.filter { $0 != .keyValue }.randomElement(using: &rng)!
    return .filter(.leaf(RefCondition(key: key, op: op, value: value), form), .and)
  }

  /// A query shaped for a composite index: equalities on a prefix of one index's keys,
  /// bounds on the next, a sort on it (and maybe another key), a window; now and then an
  /// extra condition, an OR, or a key out of the index's order.
  static func randomQuery(_ rng: inout SeededRandom, _ data: [Animal]) -> RefQuery {
    let keys = composites.randomElement(using: &rng)!
    var steps: [RefStep] = []
    let prefix = keys.count == 3 && Bool.random(using: &rng) ? 2 : 1
    for k in 0..<prefix { steps.append(condition(keys[k], .equal, &rng, data)) }
    let next = keys[prefix]
    let ranges: [RequestComparison] = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
    for _ in 0..<Int.random(in: 0...2, using: &rng) {
      steps.append(condition(next, ranges.randomElement(using: &rng)!, &rng, data))
    }
    switch Int.random(in: 0..<10, using: &rng) {
    case 0: steps.append(condition("weight", ranges.randomElement(using: &rng)!, &rng, data))
    case 1: steps.insert(condition(keys[0], .notEqual, &rng, data), at: 0)
    case 2: steps.append(.filter(.leaf(RefCondition(key: "age", op: .equal, value: .int(3)), .keyValue), .or))
    default: break
    }
    if Int.random(in: 0..<4, using: &rng) > 0 {
      var sort = [
        RefSortKey(
          key: next, order: Bool.random(using: &rng) ? .ascending : .descending,
          typed: Bool.random(using: &rng))
      ]
      if Bool.random(using: &rng) {
        sort.append(
          RefSortKey(key: ["name", "id", "weight"].randomElement(using: &rng)!, order: .descending))
      }
      steps.append(.sort(sort))
    }
    if Int.random(in: 0..<3, using: &rng) > 0 { steps.append(.limit(Int.random(in: 0...12, using: &rng))) }
    if Int.random(in: 0..<5, using: &rng) == 0 { steps.append(.offset(Int.random(in: 0...5, using: &rng))) }
    return RefQuery(steps: steps)
  }

  static let queryCount = TestScale.pick(quick: 160, soak: 320)

  /// Seeded queries shaped for the indexes, with inserts, in-place saves and deletes
  /// between them, against the array reference: every store, and the composite index's
  /// lookups and walks on the stores that keep one.
  @Test(arguments: StoreKind.writableWithSQL)
  func queriesThroughCompositeIndexesMatchTheArrayReference(kind: StoreKind) throws {
    var data = Self.animals(count: 300, seed: 0xC0_4051)
    let store = try kind.makeStore()
    try store.insert(contentsOf: data)
    for keys in Self.composites { try Self.createIndex(keys, on: store) }
    var rng = SeededRandom(seed: 0xC0_4052)
    var nextID = data.count + 1
    var checked = 0
    for i in 0..<Self.queryCount {
      if i % 20 == 19 {
        // Writes the indexes must follow: a saved record keeps its place, a new one comes last.
        for _ in 0..<5 {
          let at = Int.random(in: 0..<data.count, using: &rng)
          var changed = Self.animals(count: 1, firstID: data[at].id, seed: rng.next())[0]
          changed.name = data[at].name
          data[at] = changed
          try store.save(changed)
        }
        let gone = data.remove(at: Int.random(in: 0..<data.count, using: &rng)).id
        _ = try store.delete(id: gone)
        let added = Self.animals(count: 2, firstID: nextID, seed: rng.next())
        nextID += 2
        data += added
        try store.insert(contentsOf: added)
      }
      let query = Self.randomQuery(&rng, data)
      guard TestScale.checks(i, on: kind) else { continue }
      let set = query.apply(to: RequestSet(store))
      let expected = query.reference(data).map(\.id)
      #expect(try set.fetch().map(\.id) == expected, "query \(i) on \(kind): \(query)")
      #expect(set.count == expected.count, "query \(i) on \(kind): \(query)")
      #expect(set.first?.id == expected.first, "query \(i) on \(kind): \(query)")
      checked += 1
    }
    #expect(checked > 0)
  }

  /// The generator reaches both of the planner's composite paths on a MemoryStore: a
  /// lookup of a run, and a walk of a run in sort order.
  @Test func theQueriesReachTheCompositeLookupAndWalk() throws {
    let data = Self.animals(count: 300, seed: 0xC0_4051)
    let store = try MemoryStore(data)
    for keys in Self.composites { try Self.createIndex(keys, on: store) }
    var rng = SeededRandom(seed: 0xC0_4052)
    var lookups = 0
    var walks = 0
    for _ in 0..<Self.queryCount {
      let plan = Self.randomQuery(&rng, data).apply(to: RequestSet(store)).explain()
      if plan.contains("stage 1: composite index") { lookups += 1 }
      if plan.contains("of a composite index") { walks += 1 }
    }
    #expect(lookups > Self.queryCount / 10)
    #expect(walks > Self.queryCount / 20)
  }

  @Test func explainShowsTheRunAndTheWalk() throws {
    let animals = Self.animals(count: 2_000, seed: 7)
    let store = try MemoryStore(animals)
    try store.createIndex(\.species, \.age)
    let range = RequestSet(store).filter("species", value: "Cow").filter("age", .greaterThan, 3)
    let plan = range.explain()
    #expect(plan.contains("stage 1: composite index range on species, age"), "\(plan)")
    #expect(plan.contains("index answers: species == \"Cow\" AND age > 3"), "\(plan)")
    let youngest = RequestSet(store).filter(\.species == "Cow").sortBy(\.age).limit(10)
    let walk = youngest.explain()
    #expect(
      walk.contains("stage 1: index order on age ASC within equal species of a composite index"), "\(walk)")
    #expect(walk.contains("(~10 of 2000 records)"), "\(walk)")
    let expected = animals.filter { $0.species == "Cow" }.sorted { $0.age < $1.age }.prefix(10).map(\.id)
    #expect(try youngest.fetch().map(\.id) == Array(expected))
  }

  /// A walk reads each run of one sort value whole when keys follow the sort key in the
  /// index: those keys order the run, not store order, which breaks the sort's ties.
  @Test func aWalkWithKeysAfterTheSortKeyKeepsStoreOrderForTies() throws {
    let cats = (1...40).map { Animal(id: $0, name: $0 % 2 == 0 ? "Zed" : "Abe", species: "Cat", age: $0 % 3) }
    for kind in [StoreKind.memory, .log] {
      let store = try kind.makeStore()
      try store.insert(contentsOf: cats)
      try Self.createIndex(["species", "age", "name"], on: store)
      for descending in [false, true] {
        for limit in [1, 5, 14, 15, 27] {
          let set = RequestSet(store).filter(\.species == "Cat").sortBy(
            \.age, order: descending ? .descending : .ascending
          )
          .limit(limit)
          let expected = cats.enumerated().sorted {
            $0.element.age != $1.element.age
              ? (descending ? $0.element.age > $1.element.age : $0.element.age < $1.element.age)
              : $0.offset < $1.offset
          }.prefix(limit).map(\.element.id)
          #expect(set.explain().contains("of a composite index"))
          #expect(try set.fetch().map(\.id) == Array(expected), "\(kind) \(descending) \(limit)")
        }
      }
    }
  }

  @Test(arguments: [StoreKind.memory, .log, .sqlite, .postgres].filter(StoreKind.writableWithSQL.contains))
  func aUniqueCompositeIndexRefusesARepeatAndExemptsNil(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: [
      Animal(id: 1, name: "Rex", species: "Dog", age: 3, owner: Owner(name: "Ann", city: "Oslo")),
      Animal(id: 2, name: "Rex", species: "Dog", age: 4, owner: Owner(name: "Bo", city: "Oslo")),
      Animal(id: 3, name: "Rex", species: "Cat", age: 3),
    ])
    try Self.createIndex(["species", "name", "age"], on: store, unique: true)
    #expect(throws: RequestSetError.self) {
      try store.insert(Animal(id: 4, name: "Rex", species: "Dog", age: 3))
    }
    #expect(try RequestSet(store).fetch().map(\.id) == [1, 2, 3], "nothing was written")
    // Another age, or another species: a new combination.
    try store.insert(Animal(id: 5, name: "Rex", species: "Dog", age: 5))
    try store.save(Animal(id: 1, name: "Rex", species: "Dog", age: 6))
    try store.insert(Animal(id: 6, name: "Rex", species: "Dog", age: 3))  // 1 moved to age 6
    // A nil in any key exempts the record, as SQL's unique indexes do.
    try Self.createIndex(["nickname", "species"], on: store, unique: true)
    try store.insert(Animal(id: 7, name: "Max", species: "Dog", age: 1))
    try store.insert(Animal(id: 8, name: "Max", species: "Dog", age: 2))  // both (nil, "Dog")
    #expect(throws: RequestSetError.self) {
      try store.insert(contentsOf: [
        Animal(id: 9, name: "A", species: "Dog", age: 1, nickname: "x"),
        Animal(id: 10, name: "B", species: "Dog", age: 2, nickname: "x"),
      ])
    }
    #expect(RequestSet(store).count == 7)
  }

  @Test(arguments: [StoreKind.memory, .log, .sqlite].filter(StoreKind.writableWithSQL.contains))
  func aUniqueCompositeIndexOverRepeatsIsNotCreated(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: [
      Animal(id: 1, name: "Rex", species: "Dog", age: 3), Animal(id: 2, name: "Rex", species: "Dog", age: 3),
    ])
    do {
      try Self.createIndex(["species", "age"], on: store, unique: true)
      Issue.record("a unique index over repeated values was created on \(kind)")
    } catch let error as RequestSetError {
      #expect(error.code == .uniqueViolation)
      #expect(error.message.contains("species, age"), "\(error.message)")
    }
    // Not half-made: a record with the repeated values is still accepted.
    try store.insert(Animal(id: 3, name: "Rex", species: "Dog", age: 3))
    if let memory = store as? MemoryStore<Animal> { #expect(memory.indexes.isEmpty) }
    if let log = store as? LogStore<Animal> { #expect(log.indexes.isEmpty) }
  }

  @Test func badKeysAreTypedErrors() throws {
    let store = try MemoryStore(Animal.zoo)
    #expect {
      try store.createIndex("species", "species")
    } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
    #expect {
      try store.createIndex("species", "colour")
    } throws: { ($0 as? RequestSetError)?.code == .unknownKey }
    #expect {
      try store.createIndex("species", "a\u{1F}b")
    } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
    #expect {
      try store.createIndex("a\u{1F}b")
    } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
    #expect {
      try store.createIndex(on: [])
    } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
    let sqlite = try SQLiteStore<Animal>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    #expect {
      try sqlite.createIndex(on: [])
    } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
    #expect {
      try sqlite.createIndex("age", "age")
    } throws: { ($0 as? RequestSetError)?.code == .invalidIndex }
    #expect(store.indexes.isEmpty)
    try store.createIndex("species", "age")
    #expect {
      try store.createIndex("species", "age", unique: true)
    } throws: {
      ($0 as? RequestSetError)?.code == .invalidIndex
        && ($0 as? RequestSetError)?.message.contains("dropIndex(\"species\", \"age\")") == true
    }
    try store.createIndex("species", "age")  // the same index again: nothing happens
    try store.createIndex("age", "species")  // another order is another index
    #expect(
      store.indexes == [
        RequestIndex(keys: ["species", "age"], unique: false),
        RequestIndex(keys: ["age", "species"], unique: false),
      ])
    #expect(store.indexes.map(\.description) == ["index on species, age", "index on age, species"])
    #expect(store.dropIndex("species", "age"))
    #expect(!store.dropIndex("species", "age"))
    #expect(store.indexes.map(\.keys) == [["age", "species"]])
  }

  /// A log keeps its composite indexes' definitions: reopened from its checkpoint, by
  /// replay, and after compaction, the index is there and answers.
  @Test func aLogKeepsItsCompositeIndexes() throws {
    let path = TemporaryLogDirectory.freshPath()
    let data = Self.animals(count: 500, seed: 11)
    let options = LogStoreOptions(checkpointMinimumBytes: 0)
    do {
      let store = try LogStore<Animal>(path: path, options: options)
      try store.insert(contentsOf: data)
      try store.createIndex(\.species, \.age, unique: false)
      try store.createIndex("owner.city", "age", "name")
      store.close()
    }
    let expected = data.filter { $0.species == "Dog" && $0.age >= 2 }.sorted { $0.age > $1.age }.prefix(7)
      .map(\.id)
    for reopen in 0..<3 {
      let store = try LogStore<Animal>(path: path, options: options)
      // The first reopen reads the checkpoint's index entries; the second, without it, replays.
      if reopen < 2 {
        #expect(store.recoveryReport.openedFromCheckpoint == (reopen == 0), "reopen \(reopen)")
      }
      #expect(
        store.indexes == [
          RequestIndex(keys: ["species", "age"], unique: false),
          RequestIndex(keys: ["owner.city", "age", "name"], unique: false),
        ])
      let set = RequestSet(store).filter(\.species == "Dog").filter(\.age >= 2).sortBy(
        \.age, order: .descending
      ).limit(7)
      #expect(set.explain().contains("composite index"), "reopen \(reopen): \(set.explain())")
      #expect(try set.fetch().map(\.id) == Array(expected), "reopen \(reopen)")
      if reopen == 1 { try store.compact() }
      store.close()
      if reopen == 0 {
        // Without the checkpoint, the store replays the log and builds the index again.
        try? FileManager.default.removeItem(atPath: path + ".checkpoint")
      }
    }
  }

  /// A migration that renames a key of a log's composite index moves the index to the
  /// new key; one that removes a key drops the index.
  @Test func aLogMigrationFollowsACompositeIndex() throws {
    struct Tally: Record {
      var id: Int
      var kind: String
      var n: Int
      var x: Int
    }
    struct TallyV2: Record {
      var id: Int
      var kind: String
      var m: Int
    }
    let path = TemporaryLogDirectory.freshPath()
    do {
      let store = try LogStore<Tally>(path: path)
      try store.insert(
        contentsOf: (1...50).map { Tally(id: $0, kind: $0 % 2 == 0 ? "a" : "b", n: $0 % 7, x: $0) })
      try store.createIndex("kind", "n")
      try store.createIndex("kind", "x")
      store.close()
    }
    let migrations = Migrator([Migration("rename-n", .rename("n", to: "m"), .remove("x"))])
    let store = try LogStore<TallyV2>(path: path, options: LogStoreOptions(migrations: migrations))
    #expect(store.indexes == [RequestIndex(keys: ["kind", "m"], unique: false)])
    let set = RequestSet(store).filter("kind", value: "a").sortBy("m").limit(3)
    #expect(set.explain().contains("of a composite index"), "\(set.explain())")
    let expected = (1...50).filter { $0 % 2 == 0 }.sorted { ($0 % 7, $0) < ($1 % 7, $1) }.prefix(3)
    #expect(try set.fetch().map(\.id) == Array(expected))
  }

  /// SQLite runs the filter through the composite expression index (its own plan, in
  /// `explain()`).
  @Test func sqliteUsesTheCompositeExpressionIndex() throws {
    let store = try SQLiteStore<Animal>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    try store.insert(contentsOf: Animal.random(count: 300, seed: 3))
    try store.createIndex("species", "age")
    let set = RequestSet(store).filter("species", value: "Dog").filter("age", .greaterThan, 2)
    #expect(set.explain().contains("USING INDEX"), "\(set.explain())")
    // A sort on the next key with a limit: SQLite walks the index and needs no sort of its
    // own, since age holds numbers only and orders by its value.
    let youngest = RequestSet(store).filter("species", value: "Dog").sortBy("age").limit(3)
    let plan = youngest.explain()
    #expect(plan.contains("USING INDEX") && !plan.contains("TEMP B-TREE"), "\(plan)")
    let expected = try RequestSet(Array(RequestSet(store))).filter("species", value: "Dog").sortBy("age")
      .limit(3)
      .fetch().map(\.id)
    #expect(try youngest.fetch().map(\.id) == expected)
    try store.dropIndex("species", "age")
    #expect(!set.explain().contains("USING INDEX"), "\(set.explain())")
  }

  /// A key that holds a Bool somewhere keeps the full ORDER BY (kind first), so SQLite's
  /// sort agrees with the engine's though its index cannot serve it.
  @Test func sqliteKeepsTheKindOrderForAKeyOfSeveralKinds() throws {
    let store = try SQLiteStore<DynamicRecord>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    let values: [FieldValue] = [
      .int(2), .bool(true), .string("a"), .null, .int(1), .bool(false), .double(1.5),
    ]
    try store.insert(
      contentsOf: values.enumerated().map {
        DynamicRecord(id: .int($0.offset), fields: ["k": $0.element, "g": .int(1)])
      })
    try store.createIndex("g", "k")
    for order in [RequestSortOrder.ascending, .descending] {
      let set = RequestSet(store).filter("g", value: 1).sortBy([("k", order)]).limit(10)
      let inProcess = try RequestSet(Array(RequestSet(store))).filter("g", value: 1).sortBy([("k", order)])
        .limit(10)
        .fetch().map(\.id)
      #expect(try set.fetch().map(\.id) == inProcess, "\(order)")
    }
  }
}
