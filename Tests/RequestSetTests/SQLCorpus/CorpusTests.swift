import Foundation
import Testing

@testable import RequestSet

/// The awkward corpus through every operator of the format grammar, every sort and
/// collation, `distinct`, projections and aggregates, on every backend, each answer compared
/// with the same query over a plain array.
///
/// More than 20 s (about 35 s serial on a 2-core machine): about 2,600 format-string
/// queries, each a statement on the SQL stores, where even a third of them (the quick form,
/// see `TestScale.checks`) is most of the time; the in-process stores check all of them in
/// a few seconds each.
@Suite(.ownThreads) struct CorpusTests {
  static let reference = RequestSet(Corpus.records)

  /// The reference's answer to each corpus query (nil for a format that does not parse):
  /// the queries are the same for every store, so the array answers each once.
  static let referenceAnswers: [CorpusAnswer?] = Corpus.queries.map { query in
    guard let filter = try? RequestFilter<DynamicRecord>(format: query.format, arguments: query.arguments) else {
      return nil
    }
    return CorpusAnswer.of { try reference.filter(filter).fetch() }
  }

  @Test(arguments: StoreKind.withSQL)
  func everyOperatorAnswersAsTheArrayReference(kind: StoreKind) throws {
    let set = try Corpus.makeSet(kind)
    var mismatches = CorpusMismatches(kind: kind)
    var rowsBetween = 0
    // The quick form checks a third of the corpus on the stores that pay a statement per
    // query (see TestScale.checks); REQUESTSET_SOAK=1 checks all of it everywhere.
    let queries = Corpus.queries.enumerated().filter { TestScale.checks($0.offset, on: kind) }
    var unparsed: [String] = []
    for (index, query) in queries {
      // A format that does not parse fails the same way everywhere; the corpus must parse.
      guard let filter = try? RequestFilter<DynamicRecord>(format: query.format, arguments: query.arguments),
        let want = Self.referenceAnswers[index]
      else {
        unparsed.append(query.description)
        continue
      }
      mismatches.check(query.description, store: .of { try set.filter(filter).fetch() }, reference: want)
      // The count path of every third query (the stores count without fetching).
      if mismatches.checked % 3 == 0 {
        mismatches.check(
          "\(query).fetchCount()", store: .value { try set.filter(filter).fetchCount() },
          reference: .value { try Self.reference.filter(filter).fetchCount() })
      }
      if case .ids(let ids) = want, !ids.isEmpty, ids.count < Corpus.records.count { rowsBetween += 1 }
    }
    #expect(unparsed.isEmpty, "\(unparsed.count) corpus formats do not parse: \(unparsed.prefix(10))")
    mismatches.report()
    // The corpus proves little unless most queries select some records and not others.
    #expect(
      rowsBetween > queries.count / 3, "\(rowsBetween) of \(queries.count) queries select a strict subset")
  }

  @Test(arguments: StoreKind.withSQL)
  func everySortAndCollationOrdersAsTheArrayReference(kind: StoreKind) throws {
    let set = try Corpus.makeSet(kind)
    var mismatches = CorpusMismatches(kind: kind)
    for key in Corpus.keys + ["o.city", "o", "id"] {
      for order in [RequestSortOrder.ascending, .descending] {
        for collation in Corpus.collations {
          let name = "sortBy(\(key.debugDescription), \(order), \(collation))"
          let want = CorpusAnswer.of {
            try Self.reference.sortBy(key, order: order, collation: collation).fetch()
          }
          mismatches.check(
            name, store: .of { try set.sortBy(key, order: order, collation: collation).fetch() },
            reference: want)
          // The top-k path (a limit after the sort) and a window past the first rows.
          mismatches.check(
            name + ".limit(5)",
            store: .of { try set.sortBy(key, order: order, collation: collation).limit(5).fetch() },
            reference: .of {
              try Self.reference.sortBy(key, order: order, collation: collation).limit(5).fetch()
            })
          mismatches.check(
            name + ".offset(7).limit(9)",
            store: .of { try set.sortBy(key, order: order, collation: collation).offset(7).limit(9).fetch() },
            reference: .of {
              try Self.reference.sortBy(key, order: order, collation: collation).offset(7).limit(9).fetch()
            })
        }
      }
    }
    for keys in [
      ["v", "-s"], ["-o.k", "s"], ["desc[cd]:s", "v"], ["asc[c]:o.city", "-v"], ["desc[n]:s", "a"],
    ] {
      mismatches.check(
        "sortBy(\(keys))", store: .of { try set.sortBy(keys).fetch() },
        reference: .of { try Self.reference.sortBy(keys).fetch() })
    }
    mismatches.report()
  }

  @Test(arguments: StoreKind.withSQL)
  func distinctKeepsTheRecordsTheArrayReferenceKeeps(kind: StoreKind) throws {
    let set = try Corpus.makeSet(kind)
    var mismatches = CorpusMismatches(kind: kind)
    for key in Corpus.keys + ["o", "o.city"] {
      mismatches.check(
        "distinct(\(key.debugDescription))", store: .of { try set.distinct(key).fetch() },
        reference: .of { try Self.reference.distinct(key).fetch() })
      for sort in ["v", "-s", "desc[cd]:s", "o.k"] {
        mismatches.check(
          "sortBy(\(sort.debugDescription)).distinct(\(key.debugDescription))",
          store: .of { try set.sortBy(sort).distinct(key).fetch() },
          reference: .of { try Self.reference.sortBy(sort).distinct(key).fetch() })
        mismatches.check(
          "filter(s != nil).sortBy(\(sort.debugDescription)).distinct(\(key.debugDescription)).limit(4)",
          store: .of { try set.filter("s != nil").sortBy(sort).distinct(key).limit(4).fetch() },
          reference: .of { try Self.reference.filter("s != nil").sortBy(sort).distinct(key).limit(4).fetch() }
        )
      }
    }
    mismatches.report()
  }

  @Test(arguments: StoreKind.withSQL)
  func projectionsAndAggregatesAnswerAsTheArrayReference(kind: StoreKind) throws {
    let set = try Corpus.makeSet(kind)
    var mismatches = CorpusMismatches(kind: kind)
    /// Rows as text, keys in the row's order, so NaN compares with NaN and a row's key order
    /// must match too.
    func rows(_ body: () throws -> [RequestRow]) -> CorpusAnswer {
      .value { try body().map(\.description) }
    }
    for key in Corpus.keys + ["o", "o.city"] {
      mismatches.check(
        "values(\(key.debugDescription))", store: rows { try set.values(key) },
        reference: rows { try Self.reference.values(key) })
      mismatches.check(
        "sortBy(\"-v\").values(\(key.debugDescription), \"id\")",
        store: rows { try set.sortBy("-v").values(key, "id") },
        reference: rows { try Self.reference.sortBy("-v").values(key, "id") })
      for (name, aggregate) in [
        ("min", RequestSet<DynamicRecord>.min), ("max", RequestSet<DynamicRecord>.max),
      ] {
        mismatches.check(
          "\(name)(\(key.debugDescription))", store: .value { try aggregate(set)(key) },
          reference: .value { try aggregate(Self.reference)(key) })
      }
      mismatches.check(
        "sum(\(key.debugDescription))", store: .value { try set.sum(key) },
        reference: .value { try Self.reference.sum(key) })
      mismatches.check(
        "average(\(key.debugDescription))", store: .value { try set.average(key) },
        reference: .value { try Self.reference.average(key) })
      mismatches.check(
        "filter(v > 0).sum(\(key.debugDescription))", store: .value { try set.filter("v > 0").sum(key) },
        reference: .value { try Self.reference.filter("v > 0").sum(key) })
      mismatches.check(
        "groupBy(\(key.debugDescription)).aggregate(.count, .min(v), .max(s))",
        store: rows { try set.groupBy(key).aggregate(.count, .min("v"), .max("s")).fetch() },
        reference: rows { try Self.reference.groupBy(key).aggregate(.count, .min("v"), .max("s")).fetch() })
      mismatches.check(
        "groupBy(\(key.debugDescription)).aggregate(.count).having(count > 1)",
        store: rows { try set.groupBy(key).aggregate(.count).having("count", .greaterThan, 1).fetch() },
        reference: rows {
          try Self.reference.groupBy(key).aggregate(.count).having("count", .greaterThan, 1).fetch()
        })
    }
    mismatches.report()
  }

  /// The reference itself, against plain Swift for the rules every store must keep: nil
  /// and absent keys equal nil, `!=` is true against nil, NaN equals nothing, numbers
  /// compare exactly across kinds (2^53 + 1 is not the double 2^53), strings of different
  /// kinds never equal numbers, NFC and NFD spellings of "é" are equal.
  @Test func theArrayReferenceKeepsTheEqualityRulesOfPlainSwift() throws {
    // `v` and `o.k` hold every kind; a key of one kind (`s`) throws `.typeMismatch` for a
    // value of another, so it is checked with strings and nil only.
    for key in ["v", "s", "o.k"] {
      for value in Corpus.operands {
        if key == "s", value != .null, value._kind != .string { continue }
        let expected = Corpus.records.filter { ($0[key] ?? .null) == value }.map(\.id)
        #expect(
          try Self.reference.filter("%K == %@", key, value).fetch().map(\.id) == expected,
          "\(key) == \(value)")
        let others = Corpus.records.filter { !(($0[key] ?? .null) == value) }.map(\.id)
        #expect(
          try Self.reference.filter("%K != %@", key, value).fetch().map(\.id) == others, "\(key) != \(value)")
      }
    }
    #expect(try Self.reference.filter("v == %@", FieldValue.double(.nan)).fetch().isEmpty)
    let twoTo53 = try Self.reference.filter("v == %@", FieldValue.double(9_007_199_254_740_992)).fetch()
    #expect(twoTo53.map { $0["v"] } == [.int(1 << 53), .double(9_007_199_254_740_992)])
    let nfd = try Self.reference.filter("s == %@", Corpus.nfd).fetch().map(\.id)
    #expect(!nfd.isEmpty)
    #expect(try Self.reference.filter("s == %@", Corpus.nfc).fetch().map(\.id) == nfd)
  }
}
