import Testing
@testable import RequestSet

/// Records read in place: closures and typed filters get the record where the snapshot
/// keeps it, not a copy made for each call.
@Suite(.ownThreads) struct InPlaceTests {
  /// The matcher a filter compiles to over the zoo in memory, with the slots it keeps.
  static func compiled(_ filter: RequestFilter<Animal>) throws -> (typed: Bool, kept: [Int]) {
    let snapshot = StoreSnapshot(records: Animal.zoo)
    return try _RecordCursor.with(snapshot) { cursor in
      var compiler = _FilterCompiler(cursor: cursor)
      let matcher = try compiler.compile(filter._node)
      guard case .typed(let test) = matcher, let base = cursor.base else { return (false, []) }
      return (true, Animal.zoo.indices.filter { test(base + $0) })
    }
  }

  @Test func aClosureTestsTheRecordWhereItLies() throws {
    let (typed, kept) = try Self.compiled(RequestFilter { $0.age > 4 })
    #expect(typed, "a closure over records in memory must compile to a test of the record's address")
    #expect(kept == Animal.zoo.indices.filter { Animal.zoo[$0].age > 4 })
  }

  @Test func aClosureAndATypedConditionAreOneTestInPlace() throws {
    let (typed, kept) = try Self.compiled(RequestFilter { $0.weight > 20 } && \.species == "Cow")
    #expect(typed, "an AND of closures and typed conditions must stay one test of the record's address")
    #expect(kept == Animal.zoo.indices.filter { Animal.zoo[$0].weight > 20 && Animal.zoo[$0].species == "Cow" })
  }
}
