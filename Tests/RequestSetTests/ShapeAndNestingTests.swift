import Foundation
import Testing
@testable import RequestSet

/// A category tree: a record type that nests itself, as comment threads, org charts and
/// category trees do.
struct Category: Codable, Sendable, Hashable {
  var name: String
  var children: [Category]
}

/// Two types that nest each other.
struct Squad: Codable, Sendable, Hashable {
  var lead: String
  var members: [Squaddie]
}
struct Squaddie: Codable, Sendable, Hashable {
  var name: String
  var squads: [Squad]?
}

/// A record holding a tree, a mutual recursion and a self-reference through an optional.
struct Catalog: Record, Hashable {
  var id: Int
  var title: String
  var rank: Int
  var root: Category
  var team: Squad?
  var thread: Thread?

  struct Thread: Codable, Sendable, Hashable {
    var text: String
    var replies: [Thread]
  }
}

/// A record with a value of any shape: how a program builds a value from input.
struct DeepDoc: Record, Hashable {
  var id: Int
  var body: FieldValue
}

/// Issue 27 rows 0, 1, 4 and 5: a record type that nests a tree works on every store; the
/// distinct set read backwards is exactly that; one nesting limit for every store.
@Suite(.ownThreads) struct ShapeAndNestingTests {
  static func catalog(_ count: Int) -> [Catalog] {
    (0..<count).map { i in
      let leaf = Category(name: "leaf \(i % 3)", children: [])
      let mid = Category(name: "mid \(i % 2)", children: [leaf, leaf])
      return Catalog(
        id: i, title: "catalog \(i % 4)", rank: (i * 7) % 11,
        root: Category(name: i % 2 == 0 ? "A" : "B", children: [mid]),
        team: i % 3 == 0 ? nil : Squad(lead: "lead \(i % 2)", members: [Squaddie(name: "m", squads: [])]),
        thread: Catalog.Thread(text: "t\(i % 5)", replies: [Catalog.Thread(text: "r", replies: [])]))
    }
  }

  static func makeSet<R: Record>(_ kind: StoreKind, _ records: [R]) throws -> RequestSet<R> {
    if kind == .array { return RequestSet(records) }
    let store = try kind.makeStore(of: R.self)
    try store.insert(contentsOf: records)
    return RequestSet(store)
  }

  // MARK: Row 0: a tree-shaped record type

  @Test(arguments: StoreKind.allCases)
  func aRecordTypeThatNestsATreeIsQueriedOnEveryStore(kind: StoreKind) throws {
    let data = Self.catalog(40)
    let set = try Self.makeSet(kind, data)
    #expect(set.count == 40)
    #expect(try set.filter("title", value: "catalog 1").fetch().map(\.id) == data.filter { $0.title == "catalog 1" }.map(\.id))
    #expect(try set.filter(\.rank > 5).fetch().map(\.id) == data.filter { $0.rank > 5 }.map(\.id))
    #expect(set.filter("root.name", value: "A").count == data.filter { $0.root.name == "A" }.count)
    #expect(try set.filter("team.lead", value: "lead 1").fetch().map(\.id) == data.filter { $0.team?.lead == "lead 1" }.map(\.id))
    #expect(try set.filter("thread.text", value: "t2").fetch().map(\.id) == data.filter { $0.thread?.text == "t2" }.map(\.id))
    let sorted = data.enumerated().sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }.map(\.element.id)
    #expect(try set.sortBy("rank").fetch().map(\.id) == sorted)
    // The trees read back whole.
    #expect(try set.sortBy("id").fetch() == data)
    #expect(try set.filter(\.id == 7).get() == data[7])
    #expect(set.filter("title", value: "catalog 1").explain().isEmpty == false)
  }

  @Test func aTreeTypeHasNoShapeButItsRecordReadsTheRestFromMemory() {
    #expect(_FieldShape.of(Category.self) == nil)
    #expect(_FieldShape.of([Category].self) == nil)
    #expect(_FieldShape.of(Squad.self) == nil)
    #expect(_FieldShape.of(Catalog.Thread?.self) == nil)
    // A type that merely repeats a type on two branches is not a tree: it keeps its shape.
    struct Pair: Codable, Sendable { var a: [Int]; var b: [Int]; var c: Int?; var d: Int? }
    #expect(_FieldShape.of(Pair.self) != nil)
    let record = _FieldShape.ofRecord(Catalog.self)
    #expect(record?.fields.map(\.name) == ["id", "title", "rank"])
  }

  // MARK: Row 1: distinct, then read backwards

  @Test(arguments: StoreKind.allCases)
  func theDistinctSetReadBackwardsIsExactlyThat(kind: StoreKind) throws {
    let data = Animal.random(count: 90, seed: 0xD15)
    let set = try kind.makeSet(data)
    let byAge = data.enumerated().sorted { ($0.element.age, $0.offset) < ($1.element.age, $1.offset) }.map(\.element)
    var seen = Set<String>()
    let distinct = byAge.filter { seen.insert($0.species).inserted }.map(\.id)
    #expect(distinct.count > 2)
    for forward in [set.sortBy("age").distinct("species"), set.sortBy(\.age).distinct(\.species)] {
      #expect(try forward.fetch().map(\.id) == distinct)
      #expect(try forward.reversed().fetch().map(\.id) == distinct.reversed())
      #expect(try forward.last(2).fetch().map(\.id) == Array(distinct.suffix(2)))
      #expect(forward.last?.id == distinct.last)
      #expect(forward.reversed().first?.id == distinct.last)
      #expect(forward.reversed().last?.id == distinct.first)
      #expect(try forward.reversed().reversed().fetch().map(\.id) == distinct)
      #expect(try forward.reversed().limit(2).fetch().map(\.id) == Array(distinct.reversed().prefix(2)))
      #expect(forward.reversed().count == distinct.count)
    }
    // Unsorted: store order, first of each species, read backwards.
    var seenInOrder = Set<String>()
    let firstEach = data.filter { seenInOrder.insert($0.species).inserted }.map(\.id)
    #expect(try set.distinct("species").reversed().fetch().map(\.id) == firstEach.reversed())
    #expect(set.distinct("species").last?.id == firstEach.last)
    // Reversing before distinct still keeps the first of each in the reversed order.
    var seenBackwards = Set<String>()
    let lastEach = byAge.reversed().filter { seenBackwards.insert($0.species).inserted }.map(\.id)
    #expect(try set.sortBy("age").reversed().distinct("species").fetch().map(\.id) == lastEach)
  }

  // MARK: Rows 4 and 5: one nesting limit

  /// `.array` wrapped `k` times around a scalar: as a record's field, its deepest value is
  /// at level `k + 2` (the record is level 1).
  static func nested(_ k: Int) -> FieldValue {
    var value = FieldValue.int(k)
    for _ in 0..<k { value = .array([value]) }
    return value
  }

  @Test(arguments: StoreKind.writable)
  func everyStoreAcceptsAndReadsBackTheDeepestValueTheLimitAllows(kind: StoreKind) throws {
    let store = try kind.makeStore(of: DeepDoc.self)
    let deepest = DeepDoc(id: 1, body: Self.nested(FieldValue.maxNestingDepth - 2))
    try store.insert(deepest)
    try store.insert(DeepDoc(id: 2, body: .object(["a": .object(["b": Self.nested(FieldValue.maxNestingDepth - 4)])])))
    let back = try RequestSet(store).sortBy("id").fetch()
    #expect(back.count == 2)
    #expect(back.first == deepest)
    #expect(try RequestSet(store).filter("id", value: 2).get().body == .object(["a": .object(["b": Self.nested(FieldValue.maxNestingDepth - 4)])]))
  }

  @Test(arguments: StoreKind.writable, [1, 5_000])
  func aValuePastTheLimitIsRefusedBeforeAnythingIsWritten(kind: StoreKind, past: Int) throws {
    let store = try kind.makeStore(of: DeepDoc.self)
    try store.insert(DeepDoc(id: 1, body: .string("first")))
    let tooDeep = DeepDoc(id: 2, body: Self.nested(FieldValue.maxNestingDepth - 2 + past))
    let error = #expect(throws: RequestSetError.self) { try store.insert(tooDeep) }
    #expect(error?.code == .encodingFailed)
    #expect(error?.message.contains("at most \(FieldValue.maxNestingDepth)") == true, "\(String(describing: error))")
    // Nothing of the refused write, alone or in a batch, is written.
    #expect(throws: RequestSetError.self) { try store.insert(contentsOf: [DeepDoc(id: 3, body: .int(3)), tooDeep]) }
    #expect(throws: RequestSetError.self) { try store.save(DeepDoc(id: 1, body: Self.nested(300))) }
    let all = try RequestSet(store).fetch()
    #expect(all == [DeepDoc(id: 1, body: .string("first"))])
    // The store goes on.
    try store.insert(DeepDoc(id: 4, body: .array([.int(4)])))
    #expect(RequestSet(store).count == 2)
  }

  @Test(arguments: StoreKind.writable)
  func aSwiftTypeNestedPastTheLimitIsRefusedOnEveryStore(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Catalog.self)
    var deep = Category(name: "leaf", children: [])
    for i in 0..<400 { deep = Category(name: "level \(i)", children: [deep]) }
    var record = Self.catalog(1)[0]
    record.root = deep
    let error = #expect(throws: RequestSetError.self) { try store.insert(record) }
    #expect(error?.code == .encodingFailed)
    #expect(RequestSet(store).count == 0)
    // A tree within the limit goes in and reads back.
    var fits = Category(name: "leaf", children: [])
    for i in 0..<100 { fits = Category(name: "level \(i)", children: [fits]) }
    record.root = fits
    try store.insert(record)
    #expect(try RequestSet(store).get() == record)
  }

  @Test func aFilterValuePastTheLimitMakesTheSetInvalid() throws {
    let set = RequestSet([DeepDoc(id: 1, body: .int(1))])
    #expect(throws: RequestSetError.self) { try set.filter("body", value: Self.nested(5_000)).fetch() }
    #expect(throws: RequestSetError.self) { try FieldValue(encoding: Self.nested(300)) }
    #expect(try FieldValue(encoding: Self.nested(200)) == Self.nested(200))
  }
}

/// The same in a child process, where a crash fails the test instead of ending the run:
/// a value 30,000 levels deep (MemoryStore's field table and the SQL stores' JSON writer
/// followed it until the stack ran out), and a tree-shaped record type (the field shape's
/// reflection followed the type into itself).
@Suite(.ownThreads) struct NestingChildProcessTests {
  @Test(arguments: ["memory", "log"])
  func aValueThirtyThousandLevelsDeepIsATypedErrorInAStore(store: String) throws {
    let result = try AdversaryChild.run("nesting.deep", store, "30000")
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.dropLast() == ["insert encodingFailed", "insert encodingFailed", "count 1", "filter encodingFailed"])
  }

  @Test func aValueThirtyThousandLevelsDeepIsATypedErrorInAnArraySet() throws {
    let result = try AdversaryChild.run("nesting.deep", "array", "30000")
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.dropLast() == ["read encodingFailed", "filter encodingFailed"])
  }

  @Test(arguments: ["memory", "log", "array"])
  func aTreeShapedRecordTypeIsQueried(store: String) throws {
    let result = try AdversaryChild.run("nesting.tree", store)
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.dropLast() == ["B 10", "typed 10", "same true"])
  }
}
