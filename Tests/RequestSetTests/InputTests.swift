import Foundation
import Testing

@testable import RequestSet

/// Issue 12, "crashes on input": filters built in a loop, typed `IN`, windows and sums at
/// the limits of `Int`, and `validated()`. What could crash runs in the `AdversaryWorker`
/// child (`Tests/AdversaryWorker/Scenarios+Input.swift`), so a regression fails a test
/// instead of ending the run.
///
/// More than 20 s (about 21 s on a 2-core machine): nine child processes each build
/// 100,000 chained filters (the count the README promises stays flat) in a debug build,
/// and the odd-value scenarios run in three more.
@Suite(.ownThreads) struct InputTests {
  // MARK: Filters built in a loop (in a child process)

  /// 100,000 terms built the way programs build them, each read on a thread with a 512 KiB
  /// stack: they answer as `filter(\.id, in:)` does (the `in` line).
  @Test(arguments: [
    ("keyPathOr", "1000", "read 1000 0 true 1000"),
    ("stringOr", "1000", "read 1000 0 true 1000"),
    ("keyPathAnd", "2000", "read 2000 1 true 2000"),
    ("exclude", "2000", "read 2000 1 true 2000"),
    ("not", "1", "read 1 3 true 1"),
    ("format", "63", "read 63 0 true 63"),
  ])
  func filtersChainedInALoopRunOnASmallStack(shape: String, count: String, read: String) throws {
    let result = try AdversaryChild.run("input.filterChain", shape, "100000", "memory", "smallStack")
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.contains("count \(count)"), "\(result)")
    #expect(result.lines.contains("in \(count)"), "\(result)")
    #expect(result.lines.contains(read), "\(result)")
    #expect(result.lines.contains("firstOrInsert \(shape == "not" ? "ran" : "tooComplex")") || shape == "not", "\(result)")
  }

  @Test(arguments: [("keyPathOr", "log"), ("stringOr", "log"), ("keyPathOr", "array")])
  func chainedORsAnswerAsINOnEveryStore(shape: String, store: String) throws {
    let result = try AdversaryChild.run("input.filterChain", shape, "100000", store)
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.contains("count 1000") && result.lines.contains("in 1000"), "\(result)")
  }

  /// ANDs and ORs that alternate cannot be flattened: up to `maxDepth` levels they run,
  /// on a small stack, beyond it the filter is invalid with `.tooComplex`.
  @Test func alternatingNestingRunsUpToTheCapAndIsAnErrorBeyond() throws {
    for store in ["memory", "log", "array"] {
      let atCap = try AdversaryChild.run("input.filterChain", "alternating", "100", store, "smallStack")
      #expect(atCap.exitedNormally, "\(atCap)")
      #expect(atCap.lines.contains("count 50") && atCap.lines.contains("in 50"), "\(atCap)")
    }
    for (shape, terms) in [("alternating", "101"), ("alternatingChain", "101"), ("alternating", "100000")] {
      let beyond = try AdversaryChild.run("input.filterChain", shape, terms, "memory", "smallStack")
      #expect(beyond.exitedNormally, "\(beyond)")
      #expect(beyond.lines.contains("error tooComplex"), "\(beyond)")
    }
  }

  // MARK: Flattening, in process

  /// A key of 40,000 dotted names, as a format string and as a key-value filter, answers
  /// in one pass over the key: each prefix was once joined anew to look for an array in
  /// it (about 80 s for this key). The bound is generous for a busy machine; the answer
  /// takes well under a second.
  @Test func aKeyOfFortyThousandNamesAnswersInOnePass() throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    let key = Array(repeating: "owner", count: 40_000).joined(separator: ".")
    let start = ContinuousClock.now
    _ = try? RequestSet(store).filter(key + " == 1").fetchCount()
    _ = try? RequestSet(store).filter(key, value: 1).fetchCount()
    #expect(ContinuousClock.now - start < .seconds(20))
  }

  @Test func chainsFlattenAndDoubleNegationsCancel() {
    var f: RequestFilter<Animal> = .none
    for age in 1...3 { f = f || (\.age == age) }
    #expect(f.description == #"\Animal.age == 1 OR \Animal.age == 2 OR \Animal.age == 3"#)
    var g: RequestFilter<Animal> = .all
    for age in 1...3 { g = g && (\.age != age) }
    #expect(g.description == #"\Animal.age != 1 AND \Animal.age != 2 AND \Animal.age != 3"#)
    #expect((!(!(\Animal.age > 1))).description == #"\Animal.age > 1"#)
    #expect((!(\Animal.age > 1)).description == #"NOT \Animal.age > 1"#)
    // An OR inside an AND stays one operand.
    #expect(((\Animal.age == 1 || \Animal.age == 2) && \Animal.name == "Rex").description
      == #"(\Animal.age == 1 OR \Animal.age == 2) AND \Animal.name == "Rex""#)
  }

  /// A junction appended to by two filters at once keeps each one's own operands.
  @Test func appendingToAnOlderFilterDoesNotChangeTheNewerOne() {
    let base: RequestFilter<Animal> = \.age == 1 || \.age == 2
    let a = base || (\.age == 3)
    let b = base || (\.age == 4)
    #expect(base.description == #"\Animal.age == 1 OR \Animal.age == 2"#)
    #expect(a.description == #"\Animal.age == 1 OR \Animal.age == 2 OR \Animal.age == 3"#)
    #expect(b.description == #"\Animal.age == 1 OR \Animal.age == 2 OR \Animal.age == 4"#)
  }

  /// Threads appending to one shared filter at once each get exactly their own operands.
  @Test func concurrentAppendsToOneFilterKeepEachResultApart() async {
    let base: RequestFilter<Animal> = \.age == -1 || \.age == -2
    let descriptions = await withTaskGroup(of: (Int, String).self) { group in
      for i in 0..<64 {
        group.addTask {
          var f = base
          for j in 0..<20 { f = f || (\.age == i * 100 + j) }
          return (i, f.description)
        }
      }
      var all: [Int: String] = [:]
      for await (i, text) in group { all[i] = text }
      return all
    }
    for i in 0..<64 {
      let expected = ([-1, -2] + (0..<20).map { i * 100 + $0 }).map { "\\Animal.age == \($0)" }.joined(separator: " OR ")
      #expect(descriptions[i] == expected)
    }
  }

  @Test(arguments: StoreKind.allCases)
  func chainedModeORIsOneFlatOR(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    var s = all.filter("name", value: "Rex")
    for name in ["Zed", "Bella"] { s = s.filter("name", value: name, mode: .or) }
    #expect(s.explain().contains(#"name == "Rex" OR name == "Zed" OR name == "Bella""#), "\(s.explain())")
    #expect(try s.fetch().map(\.id) == [3, 4, 6])
  }

  @Test func nestingPastTheCapIsATypedError() throws {
    var f: RequestFilter<Animal> = \.age == 0
    for i in 0..<(_FilterNode<Animal>.maxDepth + 1) { f = i % 2 == 0 ? f || (\.age == i) : f && (\.id > 0) }
    let error = try #require(throws: RequestSetError.self) { try RequestSet(Animal.zoo).filter(f).fetch() }
    #expect(error.code == .tooComplex)
    #expect(
      error.message
        == "The filter nests ANDs, ORs and NOTs 101 levels deep; at most 100 are allowed. Join conditions of one "
        + #"kind in one list (a || b || c, or filter(\.key, in: values)) instead of nesting each new condition "#
        + "inside the last.")
  }

  // MARK: Many equalities, one set lookup

  /// ORs of equalities (and ANDs of inequalities) on one key, past the merge threshold and
  /// mixed with other conditions, answer as the conditions one by one do.
  @Test(arguments: StoreKind.allCases)
  func manyEqualitiesOnOneKeyAnswerAsTheirReference(kind: StoreKind) throws {
    let animals = Animal.random(count: 200, seed: 12)
    let all = try kind.makeSet(animals)
    let picked = Array(stride(from: 1, through: 250, by: 7))
    let pickedSet = Set(picked)

    var typedOr: RequestFilter<Animal> = \.name == "Rex"
    for id in picked { typedOr = typedOr || (\.id == id) }
    typedOr = typedOr || (\.age > 18)
    let expectedOr = animals.filter { pickedSet.contains($0.id) || $0.name == "Rex" || $0.age > 18 }.map(\.id)
    #expect(try all.filter(typedOr).fetch().map(\.id) == expectedOr)

    var keyOr = all.filter("name", value: "Rex")
    for id in picked { keyOr = keyOr.filter("id", value: id, mode: .or) }
    #expect(try keyOr.fetch().map(\.id) == animals.filter { pickedSet.contains($0.id) || $0.name == "Rex" }.map(\.id))

    var typedAnd: RequestFilter<Animal> = \.age >= 3
    for id in picked { typedAnd = typedAnd && (\.id != id) }
    var excluded = all.filter(typedAnd)
    for id in picked.prefix(10) { excluded = excluded.exclude("id", value: id + 1) }
    let skipped = Set(picked.prefix(10).map { $0 + 1 })
    let expectedAnd = animals.filter { $0.age >= 3 && !pickedSet.contains($0.id) && !skipped.contains($0.id) }
    #expect(try excluded.fetch().map(\.id) == expectedAnd.map(\.id))

    var nicknames: RequestFilter<Animal> = .none
    for name in Animal.namePool.map({ $0.lowercased() }) + ["nobody"] { nicknames = nicknames || (\.nickname == name) }
    nicknames = nicknames || (\.nickname == nil)
    #expect(try all.filter(nicknames).fetchCount() == animals.count)
  }

  // MARK: filter(_:in:)

  @Test(arguments: StoreKind.allCases)
  func filterInAnswersAsTheFormatStringsIN(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try all.filter(\.id, in: [5, 1, 99, 1]).fetch().map(\.id) == [1, 5])
    #expect(try all.filter(\.id, in: [5, 1, 99]).fetch().map(\.id) == all.filter("id IN %@", [5, 1, 99]).fetch().map(\.id))
    #expect(try all.filter(\.species, in: ["Cow", "Dog"]).fetch().map(\.id) == [2, 3, 4, 6])
    #expect(try all.filter(\.nickname, in: [nil, "Al"]).fetch().map(\.id) == [2, 4, 5, 6])
    #expect(try all.filter(\.id, in: [Int]()).fetch().isEmpty)
    #expect(try all.filter(\.name == "Rex").filter(\.id, in: [1], mode: .or).fetch().map(\.id) == [1, 3])
    #expect(try all.exclude(RequestFilter(\.id, in: 2...5)).fetch().map(\.id) == [1, 6])
    #expect(RequestFilter<Animal>(\.id, in: [1, 3]).description == #"\Animal.id IN {1, 3}"#)
  }

  @Test(arguments: [StoreKind.memory, .log, .indexedMemory, .indexedLog])
  func filterInIsServedByIdAndIndexLookups(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.random(count: 300, seed: 3))
    let plan = all.filter(\.id, in: [4, 8, 15]).explain()
    #expect(plan.contains("stage 1: id lookup (~3 of 300 records)"), "\(plan)")
    #expect(plan.contains(#"index answers: \Animal.id IN {4, 8, 15}"#), "\(plan)")
    if kind == .indexedMemory || kind == .indexedLog {
      let names = all.filter(\.name, in: ["Rex", "Max"])
      #expect(names.explain().contains("stage 1: index lookup on name"), "\(names.explain())")
      #expect(try names.fetch().allSatisfy { $0.name == "Rex" || $0.name == "Max" } && names.count > 0)
    }
  }

  // MARK: Windows

  /// In a child: windows at `Int.min`, -1 and `Int.max` on every kind of source.
  @Test(arguments: ["memory", "log", "array"])
  func windowsAtTheLimitsOfIntSaturateOrAreInvalid(store: String) throws {
    let result = try AdversaryChild.run("input.windows", store)
    #expect(result.exitedNormally, "\(result)")
    #expect(
      result.lines == [
        "offset(Int.max).offset(1): 0 0 0 -1",
        "sortBy.offset(Int.max).limit(1): 0 0 0 -1",
        "sortBy.limit(Int.max).offset(Int.max): 0 0 0 -1",
        "sortBy.offset(Int.max).limit(Int.max): 0 0 0 -1",
        "limit(Int.max).offset(5): 2995 2995 2995 5",
        "last(Int.max): 3000 3000 3000 0",
        "first(Int.max).reversed: 2 2 2 2999",
        "limit(-1): invalidWindow",
        "offset(-1): invalidWindow",
        "offset(Int.min): invalidWindow",
        "first(-1): invalidWindow",
        "last(-1): invalidWindow",
        "limit(Int.min).limit(3): invalidWindow",
        "done",
      ])
  }

  @Test(arguments: StoreKind.allCases)
  func aNegativeWindowSaysWhatWasGivenAndWhatIsAllowed(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let error = try #require(throws: RequestSetError.self) { try all.sortBy(\.age).limit(-1).fetch() }
    #expect(error.code == .invalidWindow)
    #expect(
      error.message
        == "limit(-1) needs a count of 0 or more, but -1 was given. A count from a request or a user must be "
        + "checked first: reject it, or clamp it (max(0, n)) before building the set.")
    let last = try #require(throws: RequestSetError.self) { try all.last(-2).fetchCount() }
    #expect(last.message.hasPrefix("last(-2) needs a count of 0 or more, but -2 was given."))
    // The first bad window is the one reported, whatever follows it.
    let first = try #require(throws: RequestSetError.self) { try all.offset(-3).limit(-4).filter(\.age > 1).fetch() }
    #expect(first.message.hasPrefix("offset(-3) needs"))
    #expect(all.limit(-1).explain().contains("invalid: limit(-1) needs a count of 0 or more"))
    #expect(
      all.sortBy(\.age).offset(Int.max).limit(1).explain().contains(
        kind.pushesDown ? "ORDER BY age ASC OFFSET \(Int.max) LIMIT 1" : "top-k heap, k = \(Int.max)"))
  }

  @Test func aStreamBatchBelowOneThrows() async throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    var zero = RequestSet(store).stream(batchSize: 0).makeAsyncIterator()
    let error = await #expect(throws: RequestSetError.self) { _ = try await zero.next() }
    #expect(error?.code == .invalidWindow)
    #expect(error?.message.hasPrefix("stream(batchSize: 0) needs a batch size of 1 or more, but 0 was given.") == true)
    var ids: [Int] = []
    for try await animal in RequestSet(store).stream(batchSize: Int.max) { ids.append(animal.id) }
    #expect(ids == [1, 2, 3, 4, 5, 6])
  }

  // MARK: Sums

  @Test(arguments: ["memory", "log", "array"])
  func integerSumsAreExactOrThrowOverflowTypedAndByKeyAlike(store: String) throws {
    let result = try AdversaryChild.run("input.sums", store)
    #expect(result.exitedNormally, "\(result)")
    #expect(
      result.lines == [
        "typed all: \(Int.max)",
        "key all: \(Int.max)",
        "typed first two: overflow",
        "key first two: overflow",
        "typed Int8: overflow",
        "typed Int8 all: 100",
        "groups: overflow",
        "average: true",
        "done",
      ])
  }

  @Test func anOverflowingSumSaysHowToFixIt() throws {
    let big = RequestSet([Animal(id: 1, name: "a", species: "x", age: .max), Animal(id: 2, name: "b", species: "x", age: 1)])
    let typed = try #require(throws: RequestSetError.self) { try big.sum(\.age) }
    #expect(typed.code == .overflow)
    #expect(
      typed.message
        == #"The sum of \Animal.age does not fit in Int (it passes Int's largest or smallest value). "#
        + "Sum a Double key path or convert to Double first, or narrow the set.")
    let keyed = try #require(throws: RequestSetError.self) { try big.sum("age") }
    #expect(keyed.code == .overflow)
    #expect(keyed.message.hasPrefix(#"The sum of Animal's "age" values does not fit in Int"#))
    #expect(try big.sum("weight") == .double(20))
  }

  // MARK: Odd values

  /// NaN, infinities, `Int.min`/`Int.max` as values, empty and odd keys, Unicode twins
  /// and huge IN lists: none stops the program, and the answers are pinned. Integer
  /// averages come from the exact sum (`Int.min`, `Int.max`, 0, -1 and 1 average to
  /// -0.2, not 0.0); `min` and `max` skip NaN, typed and by key alike, wherever it stands;
  /// `distinct` keeps one NaN, as the sort order ties NaN with NaN (and as SQL's DISTINCT
  /// does), and `groupBy` makes one NaN group; a NaN equals nothing in a filter, as in Swift.
  @Test(arguments: ["memory", "log", "array"])
  func oddValuesNeverStopTheProgram(store: String) throws {
    let result = try AdversaryChild.run("input.odd", store)
    #expect(result.exitedNormally, "\(result)")
    #expect(
      result.lines == [
        "distinct typed NaN: [1, 3, 4, 5]",
        "distinct key NaN: [1, 3, 4, 5]",
        "sort typed NaN: 5",
        "sort key NaN: 5",
        "sort key NaN limit: 2",
        "== NaN typed: 0",
        "== NaN key: 0",
        "> -inf key: 2",
        "min/max key NaN: -inf inf",
        "min/max typed NaN: -inf inf",
        "min/max NaN last: -inf -inf",
        "sum typed w: nan",
        "sum key w: nan",
        "average typed w: nan",
        "average typed n: -0.2",
        "average key n: -0.2",
        "sum key n: -1",
        "group w: 4",
        "Int.min key: 1",
        "Int.max >=: 1",
        "UInt64.max: 5",
        "empty key: unknownKey",
        "dots key: unknownKey",
        "empty sort key: unknownKey",
        "empty text: 1",
        "unicode twins typed: 2",
        "unicode twins key: 2",
        "unicode twins IN: 2",
        "huge IN: 5",
        "huge IN key: 5",
        "sortBy prefix: unknownKey",
        "done"
      ])
  }

  // MARK: validated()

  /// Every kind of set that would stop the program is caught by `validated()`, with the
  /// code evaluation throws; a validated set reads through every collection member.
  @Test(arguments: ["memory", "log", "array"])
  func validatedCatchesEveryKindOfInvalidSet(store: String) throws {
    let result = try AdversaryChild.run("input.validated", store)
    #expect(result.exitedNormally, "\(result)")
    #expect(
      result.lines == [
        "unknown key: unknownKey",
        "type mismatch: typeMismatch",
        "operator mismatch: typeMismatch",
        "format arguments: argumentCount",
        "format syntax: invalidFormat",
        "unencodable value: encodingFailed",
        "too deep: tooComplex",
        "negative limit: invalidWindow",
        "negative offset after a filter: invalidWindow",
        "throwing predicate: predicateFailed",
        "unknown sort key: unknownKey",
        "unknown distinct key: unknownKey",
        "valid: 3 [17, 24, 31] 17 17 31 true false",
        "done",
      ])
  }

  @Test(arguments: StoreKind.writable)
  func aValidatedSetKeepsTheResultItChecked(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let cows = try RequestSet(store).filter("species", value: "Cow").validated()
    try store.insert(Animal(id: 9, name: "Clara", species: "Cow", age: 1))
    #expect(cows.map(\.name) == ["Daisy", "Bella"])
    #expect(cows.count == 2 && cows.first?.id == 2 && cows.last?.id == 4 && cows.exists)
    #expect(cows.refreshed().count == 3)
  }
}
