import Foundation
import Testing

@testable import RequestSet

/// Filters that fold to a constant (`FALSEPREDICATE`, a literal compared with a literal,
/// an empty IN list) select what the array reference selects on every backend, on a table
/// of plain rows and on one holding a row SQL cannot compare (where conditions are
/// answered as a superset, which must not let a constant through).
@Suite(.ownThreads) struct FoldedFilterTests {
  static let formats = [
    "FALSEPREDICATE", "TRUEPREDICATE", "'text' == 2", "'text' != 2", "n IN {}", "NOT (n IN {})",
    "n > 1 AND FALSEPREDICATE", "n > 1 OR FALSEPREDICATE", "NOT TRUEPREDICATE", "n IN {} OR n == 2",
  ]

  static func records(plain: Bool) -> [DynamicRecord] {
    (0..<6).map { i in
      var fields: [String: FieldValue] = ["n": .int(i)]
      if !plain && i == 3 { fields["x"] = .double(.nan) }
      return DynamicRecord(id: .int(i), fields: fields)
    }
  }

  @Test(arguments: StoreKind.withSQL, [true, false])
  func filtersThatFoldToAConstantSelectWhatTheReferenceSelects(kind: StoreKind, plain: Bool) throws {
    let records = Self.records(plain: plain)
    let reference = RequestSet(records)
    let set: RequestSet<DynamicRecord>
    if kind == .array {
      set = reference
    } else {
      let store = try kind.makeStore(of: DynamicRecord.self)
      try store.insert(contentsOf: records)
      set = RequestSet(store)
    }
    var mismatches = CorpusMismatches(kind: kind)
    for format in Self.formats {
      // Every format parses and runs: an error on both sides would prove nothing.
      #expect((try? reference.filter(format).fetch()) != nil, "\(format) does not run on the reference")
      mismatches.check(
        "filter(\(format.debugDescription)) plain: \(plain)", store: .of { try set.filter(format).fetch() },
        reference: .of { try reference.filter(format).fetch() })
      mismatches.check(
        "filter(\(format.debugDescription)).fetchCount() plain: \(plain)",
        store: .value { try set.filter(format).fetchCount() },
        reference: .value { try reference.filter(format).fetchCount() })
    }
    mismatches.report()
  }
}
