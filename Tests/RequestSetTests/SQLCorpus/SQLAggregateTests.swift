import Foundation
import Testing

@testable import RequestSet

/// String-key aggregates (`sum`, `min`, `max`, `average`) on every backend against the
/// array reference, over seeded random records, and the SQL stores' readers computing
/// them in SQL where they can be exact (and declining where they cannot).
@Suite(.ownThreads) struct SQLAggregateTests {
  static let strings = ["b", "a", "\u{E9}", "Zo\u{EB}", "\u{DF}", "", "😀", "a b", "B"]

  /// Records with integer (`n`, huge ones in `big`), double (`d`), string (`s`), Bool
  /// (`b`), mixed (`m`: integers and strings) and number (`x`: integers and doubles) keys,
  /// nil and absent throughout.
  static func records(seed: UInt64) -> [DynamicRecord] {
    var random = SeededRandom(seed: seed)
    return (0..<60).map { i in
      var fields: [String: FieldValue] = [:]
      func maybe(_ key: String, _ value: FieldValue) {
        switch Int.random(in: 0..<8, using: &random) {
        case 0: break
        case 1: fields[key] = .null
        default: fields[key] = value
        }
      }
      maybe("n", .int(Int.random(in: -50...50, using: &random)))
      maybe("big", .int(Bool.random(using: &random) ? Int.max - i : Int.min + i))
      maybe("d", .double(Double(Int.random(in: -400...400, using: &random)) / 8))
      maybe("s", .string(strings.randomElement(using: &random)!))
      maybe("b", .bool(Bool.random(using: &random)))
      maybe("m", i % 9 == 4 ? .string("\(i)") : .int(i))
      maybe("x", i % 3 == 0 ? .double(Double(i) + 0.5) : .int(i))
      return DynamicRecord(id: .int(i), fields: fields)
    }
  }

  static let keys = ["n", "big", "d", "s", "b", "m", "x", "nope"]

  /// The sets each aggregate runs over: the whole store, filters (one selecting nothing),
  /// sorts with windows.
  static func queries(_ set: RequestSet<DynamicRecord>) -> [(String, RequestSet<DynamicRecord>)] {
    [
      ("all", set), ("filter(n > 0)", set.filter("n > 0")), ("filter(n < -1000)", set.filter("n < -1000")),
      ("filter(b == true)", set.filter("b == true")), ("filter(m < 30)", set.filter("m < 30")),
      ("sortBy(n).limit(7)", set.sortBy("n").limit(7)),
      ("sortBy(-s).offset(3).limit(5)", set.sortBy("-s").offset(3).limit(5)),
    ]
  }

  static func answers(_ set: RequestSet<DynamicRecord>) -> [(String, CorpusAnswer)] {
    var out: [(String, CorpusAnswer)] = []
    for (name, q) in queries(set) {
      for key in keys {
        out.append(("\(name).sum(\(key))", .value { try q.sum(key) }))
        out.append(("\(name).min(\(key))", .value { try q.min(key) }))
        out.append(("\(name).max(\(key))", .value { try q.max(key) }))
        out.append(("\(name).average(\(key))", .value { try q.average(key).map { "\($0)" } ?? "nil" }))
      }
    }
    return out
  }

  @Test(arguments: StoreKind.withSQL)
  func aggregatesAnswerAsTheArrayReference(kind: StoreKind) throws {
    var mismatches = CorpusMismatches(kind: kind)
    // Three seeded data sets with `REQUESTSET_SOAK=1`, the first in the quick form.
    for seed: UInt64 in TestScale.pick(quick: [1], soak: [1, 2, 3]) {
      try mismatches.checkAgainstReference(Self.records(seed: seed), label: "seed \(seed): ", Self.answers)
    }
    mismatches.report()
  }

  /// The SQL kinds.
  static var sqlKinds: [StoreKind] { StoreKind.withSQL.filter { [.sqlite, .indexedSQLite, .postgres].contains($0) } }

  /// Where the answer is exact, the reader computes it in SQL (a non-nil answer, equal to
  /// the reference); where it cannot be sure, it returns nil and the engine computes it.
  @Test(arguments: sqlKinds)
  func theSQLReadersComputeWhatTheyCanAndDeclineTheRest(kind: StoreKind) throws {
    let records = Self.records(seed: 7)
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: records)
    let pushdown = try #require(store as? any QueryPushdownStore<DynamicRecord>)
    let reader = try pushdown.queryReader()
    let reference = RequestSet(records)
    let positive = StoreQuery(filter: .condition(try StoreCondition("n", .greaterThan, 0)))
    let pushed: [(StoreAggregate, String, StoreQuery, FieldValue)] = [
      (.sum, "n", StoreQuery(), try reference.sum("n")),
      (.sum, "n", positive, try reference.filter("n > 0").sum("n")),
      (.min, "n", StoreQuery(), try reference.min("n")),
      (.max, "n", positive, try reference.filter("n > 0").max("n")),
      (.average, "n", StoreQuery(), try reference.average("n").map(FieldValue.double) ?? .null),
      (.min, "s", StoreQuery(), try reference.min("s")),
      (.max, "s", StoreQuery(sort: [StoreSortKey("n")], limit: 9), try reference.sortBy("n").limit(9).max("s")),
      (.min, "b", StoreQuery(), try reference.min("b")),
      (.max, "b", StoreQuery(), try reference.max("b")),
      (.max, "d", StoreQuery(), try reference.max("d")),
      (.sum, "n", StoreQuery(filter: .constant(false)), .int(0)),
      (.min, "n", StoreQuery(filter: .constant(false)), .null),
      (.average, "n", StoreQuery(filter: .constant(false)), .null),
    ]
    for (function, key, query, expected) in pushed {
      let got = try reader.aggregate(function, of: key, query)
      #expect(got?.description == expected.description, "\(function)(\(key)) \(query) on \(kind)")
    }
    let declined: [(StoreAggregate, String)] = [
      (.sum, "d"),  // doubles: the sum depends on the order of the terms
      (.average, "d"), (.sum, "m"),  // strings among the values: the engine throws
      (.min, "m"), (.min, "x"),  // integers and doubles together
      (.sum, "s"), (.sum, "nope"),  // no row holds the key
    ]
    for (function, key) in declined {
      #expect(try reader.aggregate(function, of: key, StoreQuery()) == nil, "\(function)(\(key)) on \(kind)")
    }
  }

  /// An integer sum is exact whatever the order of its terms, and one beyond `Int` is the
  /// engine's `.overflow`, never a wrapped or rounded number.
  @Test(arguments: sqlKinds)
  func integerSumsAreExactOrLeftToTheEngine(kind: StoreKind) throws {
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: [Int.max, 1, -1, Int.max, Int.min].enumerated().map {
      DynamicRecord(id: .int($0.offset), fields: ["n": .int($0.element)])
    })
    let reader = try #require(store as? any QueryPushdownStore<DynamicRecord>).queryReader()
    let firstThree = StoreQuery(filter: .condition(try StoreCondition("id", .lessThan, 3)))
    #expect(try reader.aggregate(.sum, of: "n", firstThree) == .int(.max))
    #expect(try reader.aggregate(.sum, of: "n", StoreQuery()) == .int(.max - 1))
    let firstTwo = StoreQuery(filter: .condition(try StoreCondition("id", .lessThan, 2)))
    #expect(try reader.aggregate(.sum, of: "n", firstTwo) == nil)
    #expect(try reader.aggregate(.average, of: "n", firstTwo) == .double(Double(Int128(Int.max) + 1) / 2))
    let error = try #require(throws: RequestSetError.self) { try RequestSet(store).filter("id < 2").sum("n") }
    #expect(error.code == .overflow)
  }
}
