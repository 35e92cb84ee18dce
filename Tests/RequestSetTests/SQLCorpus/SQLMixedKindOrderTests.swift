import Foundation
import Testing

@testable import RequestSet

/// Sorts, windows and `distinct` over keys that hold values of several kinds, on every
/// backend against the array reference: integers beside doubles beyond 2^53 (near 2^63,
/// where a double's shortest decimal is not its value, so SQL comparing the stored decimal
/// would misorder it against an integer), Booleans beside numbers, strings beside numbers.
@Suite(.ownThreads) struct SQLMixedKindOrderTests {
  /// Numbers whose order SQL could get wrong, and values of other kinds beside them.
  static let values: [FieldValue?] = [
    .int(9_223_372_036_854_774_800), .double(9_223_372_036_854_774_784.0), .int(9_223_372_036_854_774_783),
    .int(9_223_372_036_854_774_785), .int(Int.max), .double(0x1p63), .int(Int.min), .double(-0x1p63),
    .int(-9_223_372_036_854_774_800), .double(-9_223_372_036_854_774_784.0), .int((1 << 53) + 1),
    .double(0x1p53), .double(0x1p53 + 2), .int((1 << 53) + 3), .int(1), .double(1.0), .double(0.1),
    .bool(true), .bool(false), .string("1"), .string("9223372036854774800"), .string("a"), nil, .null,
  ]

  /// The records of the issue: ids 1, 2, 3 whose ranks are an integer just above a double
  /// near 2^63, that double, and a third integer between them.
  static let issueRecords: [DynamicRecord] = [
    DynamicRecord(id: .int(1), fields: ["rank": .int(9_223_372_036_854_774_800)]),
    DynamicRecord(id: .int(2), fields: ["rank": .double(9_223_372_036_854_774_784.0)]),
    DynamicRecord(id: .int(3), fields: ["rank": .int(9_223_372_036_854_774_790)]),
  ]

  /// Seeded picks of the values under `v` and under the nested `o.c`.
  static func records(seed: UInt64) -> [DynamicRecord] {
    var random = SeededRandom(seed: seed)
    return (0..<40).map { i in
      var fields: [String: FieldValue] = [:]
      if let v = values.randomElement(using: &random)! { fields["v"] = v }
      if let c = values.randomElement(using: &random)! { fields["o"] = .object(["c": c]) }
      fields["n"] = .int(i % 3)
      return DynamicRecord(id: .int(i), fields: fields)
    }
  }

  static func answers(_ set: RequestSet<DynamicRecord>) -> [(String, CorpusAnswer)] {
    var out: [(String, CorpusAnswer)] = []
    for key in ["v", "o.c", "rank"] {
      for sort in [key, "-" + key] {
        out.append(("sortBy(\(sort))", .of { try set.sortBy(sort).fetch() }))
        out.append(("sortBy(\(sort)).offset(1).limit(3)", .of { try set.sortBy(sort).offset(1).limit(3).fetch() }))
        out.append(("sortBy(n, \(sort)).limit(5)", .of { try set.sortBy("n", sort).limit(5).fetch() }))
        out.append(("sortBy(\(sort)).distinct(\(key))", .of { try set.sortBy(sort).distinct(key).fetch() }))
        out.append(
          (
            "sortBy(\(sort)).distinct(\(key)).limit(4).fetchCount()",
            .value { try set.sortBy(sort).distinct(key).limit(4).fetchCount() }
          ))
      }
      out.append(("distinct(\(key))", .of { try set.distinct(key).fetch() }))
      out.append(("sortBy(-n).distinct(\(key))", .of { try set.sortBy("-n").distinct(key).fetch() }))
    }
    return out
  }

  /// The issue's three records: MemoryStore's order is [2, 3, 1] ascending (the double
  /// 9223372036854774784 is below both integers; PostgreSQL compared the decimal it keeps,
  /// 9223372036854775000, and answered [3, 1, 2]), on every store.
  @Test(arguments: StoreKind.withSQL)
  func anIntegerBesideADoubleNear2To63SortsAsInMemory(kind: StoreKind) throws {
    let set = try Self.set(Self.issueRecords, kind)
    #expect(try set.sortBy("rank").fetch().map(\.id) == [.int(2), .int(3), .int(1)])
    #expect(try set.sortBy("-rank").fetch().map(\.id) == [.int(1), .int(3), .int(2)])
    #expect(try set.sortBy("rank").offset(1).limit(1).fetch().map(\.id) == [.int(3)])
    #expect(try set.sortBy("rank").distinct("rank").fetch().map(\.id) == [.int(2), .int(3), .int(1)])
    #expect(try set.sortBy("-rank").limit(2).fetchCount() == 2)
  }

  @Test(arguments: StoreKind.withSQL)
  func mixedKindsSortWindowAndDistinctAsTheArrayReference(kind: StoreKind) throws {
    var mismatches = CorpusMismatches(kind: kind)
    try mismatches.checkAgainstReference(Self.issueRecords, label: "issue: ", Self.answers)
    for seed: UInt64 in [1, 2, 3, 4] {
      try mismatches.checkAgainstReference(Self.records(seed: seed), label: "seed \(seed): ", Self.answers)
    }
    mismatches.report()
  }

  static func set(_ records: [DynamicRecord], _ kind: StoreKind) throws -> RequestSet<DynamicRecord> {
    if kind == .array { return RequestSet(records) }
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: records)
    return RequestSet(store)
  }
}
