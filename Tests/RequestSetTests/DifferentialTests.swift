import Foundation
import Testing
@testable import RequestSet

/// Seeded random queries, every filter form, sorts and windows, against the array
/// reference, on every backend.
@Suite(.ownThreads) struct DifferentialTests {
  static let data = Animal.random(count: 160, seed: 0xD1FF)
  /// 300 seeded queries in the quick form (about 15 s over every store on two cores), 600
  /// with `REQUESTSET_SOAK=1`.
  static let queryCount = TestScale.pick(quick: 300, soak: 600)

  @Test(arguments: StoreKind.allCases)
  func randomQueriesMatchTheArrayReference(kind: StoreKind) throws {
    let base = try kind.makeSet(Self.data)
    var rng = SeededRandom(seed: 0x5EED_0000 &+ UInt64(Self.queryCount))
    var checked = 0
    for i in 0..<Self.queryCount {
      let query = RefQuery.random(using: &rng, data: Self.data)
      let expected = query.reference(Self.data).map(\.id)
      // Three fresh evaluations: the count path, the throwing path, and iteration.
      let counted = query.apply(to: base).count
      let fetched = try query.apply(to: base).fetch().map(\.id)
      let iterated = query.apply(to: base).map(\.id)
      #expect(fetched == expected, "query \(i) on \(kind): \(query)")
      #expect(iterated == expected, "query \(i) on \(kind): \(query)")
      #expect(counted == expected.count, "query \(i) on \(kind): \(query)")
      checked += 1
    }
    #expect(checked == Self.queryCount)
  }

  /// The generator must produce queries that select a real spread of results, or the
  /// differential test proves little.
  @Test func generatedQueriesAreNotTrivial() {
    var rng = SeededRandom(seed: 0x5EED_0000 &+ UInt64(Self.queryCount))
    var empty = 0, everything = 0, between = 0
    for _ in 0..<Self.queryCount {
      let n = RefQuery.random(using: &rng, data: Self.data).reference(Self.data).count
      if n == 0 { empty += 1 } else if n == Self.data.count { everything += 1 } else { between += 1 }
    }
    #expect(between > Self.queryCount / 2)
    #expect(empty > 0 && everything > 0)
  }
}
