import Foundation
import Testing

@testable import RequestSet

/// `distinct` on every backend against the array reference, over values whose equality
/// SQL could get wrong (1 and 1.0, 2^53 + 1 and the double 2^53, a Bool and a number, nil
/// and absent, "1" and 1), and the SQL stores keeping distinct values in SQL where exact.
@Suite(.ownThreads) struct SQLDistinctTests {
  static let values: [FieldValue?] = [
    .int(1), .double(1.0), .int(1 << 53), .int((1 << 53) + 1), .double(9_007_199_254_740_992), .bool(true),
    .int(0), .bool(false), .string("1"), .string("\u{E9}"), nil, .null, .string("a"), .double(-2.5), .int(-3),
  ]

  /// Plain records (NFC strings, finite numbers): seeded picks of the values under `v`,
  /// strings under `w`, a nested `o.c`.
  static func records(seed: UInt64) -> [DynamicRecord] {
    var random = SeededRandom(seed: seed)
    return (0..<50).map { i in
      var fields: [String: FieldValue] = [:]
      if let v = values.randomElement(using: &random)! { fields["v"] = v }
      if Int.random(in: 0..<5, using: &random) > 0 {
        fields["w"] = .string(["b", "a", "\u{E9}", "B", ""].randomElement(using: &random)!)
      }
      if let c = values.randomElement(using: &random)! { fields["o"] = .object(["c": c]) }
      return DynamicRecord(id: .int(i), fields: fields)
    }
  }

  static func answers(_ set: RequestSet<DynamicRecord>) -> [(String, CorpusAnswer)] {
    var out: [(String, CorpusAnswer)] = []
    for key in ["v", "w", "o.c"] {
      out.append(("distinct(\(key))", .of { try set.distinct(key).fetch() }))
      out.append(("distinct(\(key)).fetchCount()", .value { try set.distinct(key).fetchCount() }))
      for sort in ["v", "-v", "-w", "o.c"] {
        out.append(("sortBy(\(sort)).distinct(\(key))", .of { try set.sortBy(sort).distinct(key).fetch() }))
        out.append(
          (
            "filter(w != nil).sortBy(\(sort)).distinct(\(key)).offset(1).limit(3)",
            .of { try set.filter("w != nil").sortBy(sort).distinct(key).offset(1).limit(3).fetch() }
          ))
        out.append(
          (
            "sortBy(\(sort)).distinct(\(key)).limit(4).fetchCount()",
            .value { try set.sortBy(sort).distinct(key).limit(4).fetchCount() }
          ))
      }
    }
    return out
  }

  @Test(arguments: StoreKind.withSQL)
  func distinctKeepsWhatTheArrayReferenceKeeps(kind: StoreKind) throws {
    var mismatches = CorpusMismatches(kind: kind)
    for seed: UInt64 in [1, 2, 3] {
      try mismatches.checkAgainstReference(Self.records(seed: seed), label: "seed \(seed): ", Self.answers)
    }
    mismatches.report()
  }

  static var sqlKinds: [StoreKind] { StoreKind.withSQL.filter { [.sqlite, .indexedSQLite, .postgres].contains($0) } }

  /// On a table of plain scalars the store keeps distinct values itself (nothing runs in
  /// process); arrays or objects under the key, rows that are not plain, or a key no row
  /// holds leave `distinct` to the engine, with the reason.
  @Test(arguments: sqlKinds)
  func theSQLStoresRunDistinctWhereExactAndDeclineTheRest(kind: StoreKind) throws {
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: Self.records(seed: 9))
    let set = RequestSet(store)
    let pushed = try set.sortBy("-w").distinct("v").limit(5).requiringPushdown().fetch()
    #expect(pushed == (try RequestSet(Self.records(seed: 9)).sortBy("-w").distinct("v").limit(5).fetch()))
    let reader = try #require(store as? any QueryPushdownStore<DynamicRecord>).queryReader()
    #expect(reader.support(forDistinct: "o.c") == .exact)
    #expect(reader.support(forDistinct: "o") != .exact)  // objects
    #expect(reader.support(forDistinct: "nope") == .none(reason: "no record holds the key nope"))
    try store.insert(DynamicRecord(id: .int(100), fields: ["v": .string("e\u{301}")]))  // not NFC: not plain
    let after = try #require(store as? any QueryPushdownStore<DynamicRecord>).queryReader()
    #expect(after.support(forDistinct: "v") != .exact)
  }
}
