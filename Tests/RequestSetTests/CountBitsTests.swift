import Synchronization
import Testing

@testable import RequestSet

/// Counting a plain filtered scan keeps its matches as one bit per record (see
/// `_Executor.firstStageMatchBits`): no list of positions, and a later read tests no
/// record again.
@Suite struct CountBitsTests {
  static let animals = Animal.random(count: 700, seed: 0xB175)

  @Test(arguments: StoreKind.allCases)
  func countingAPlainScanKeepsBitsAndReadsTestNothingAgain(kind: StoreKind) throws {
    let tests = Atomic<Int>(0)
    let set = try kind.makeSet(Self.animals).filter {
      tests.add(1, ordering: .relaxed)
      return $0.age > 3 && $0.species != "Dog"
    }
    let expected = Self.animals.filter { $0.age > 3 && $0.species != "Dog" }.map(\.id)
    #expect(expected.count > 100 && expected.count < Self.animals.count)
    #expect(set.count == expected.count)
    #expect(tests.load(ordering: .relaxed) == Self.animals.count)
    // The count kept bits, not an evaluated result (a pushdown store's evaluation runs the
    // closure over the records its reader returned, and keeps that result).
    if !kind.pushesDown {
      #expect(set._cache.peekEvaluation() == nil)
      #expect(set._cache.hasRun())
    }
    #expect(set.map(\.id) == expected)
    #expect(set.last?.id == expected.last)
    #expect(tests.load(ordering: .relaxed) == Self.animals.count)
  }

  @Test(arguments: StoreKind.allCases)
  func typedAndStringKeyCountsMatchTheArray(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.animals)
    let typed = all.filter(\.age > 4 && \.species == "Cow")
    let keyed = all.filter("age", value: 5)
    #expect(typed.count == Self.animals.filter { $0.age > 4 && $0.species == "Cow" }.count)
    #expect(keyed.count == Self.animals.filter { $0.age == 5 }.count)
    #expect(typed.map(\.id) == Self.animals.filter { $0.age > 4 && $0.species == "Cow" }.map(\.id))
    #expect(keyed.map(\.id) == Self.animals.filter { $0.age == 5 }.map(\.id))
    // With a window, a sort or an id condition the count is not a plain scan.
    #expect(all.filter(\.age > 4).limit(3).count == 3)
    #expect(all.filter(\.id == 9).count == 1)
  }

  /// Deleted records leave slots that are not live: whole words of them, words with some,
  /// and words with none.
  @Test(arguments: StoreKind.writable)
  func countingSkipsDeletedRecords(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Self.animals)
    let gone = Self.animals.filter { ($0.id >= 64 && $0.id < 192) || $0.id % 7 == 0 }.map(\.id)
    for id in gone { _ = try store.delete(id: id) }
    let left = Self.animals.filter { !gone.contains($0.id) }
    let set = RequestSet(store).filter { $0.age > 3 }
    #expect(set.count == left.filter { $0.age > 3 }.count)
    #expect(set.map(\.id) == left.filter { $0.age > 3 }.map(\.id))
    #expect(RequestSet(store).filter("age", value: 5).count == left.filter { $0.age == 5 }.count)
  }

  @Test func bitsTurnBackIntoTheSlotsTheyHold() {
    let bits: [UInt64] = [0b1011, 0, 1 << 63, 1]
    #expect(_Executor.slots(fromBits: bits, count: 5) == [0, 1, 3, 191, 192])
    #expect(_Executor.slots(fromBits: [], count: 0) == [])
  }
}
