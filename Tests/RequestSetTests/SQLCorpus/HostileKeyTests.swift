import Foundation
import Testing

@testable import RequestSet

/// Keys a user can type (through format strings, `values("…")`, sorts and group keys) that
/// would break a store that pasted them into SQL or a JSON path: quotes, statement
/// separators, comments, backslashes, `$`, placeholders, NUL, newlines and a 10 KB key.
/// Every backend answers as the array reference does or throws a ``RequestSetError``,
/// and the store holds the same records afterwards.
@Suite(.ownThreads) struct HostileKeyTests {
  static let keys: [String] = [
    "it's", "say \"hi\"", "x'; DROP TABLE DynamicRecord; --", "x\"); DROP TABLE requestset_tables; --", "a;b",
    "a--b",
    "/*c*/", "*/", "back\\slash", "trail\\", "$dollar", "$.x", "$[0]", "?", "?1", ":name", "@p",
    "nul\u{0}key",
    "new\nline", "cr\r\nlf", "tab\tkey", "]", "[0]", "\"", "'", "''", "`tick`", "%", "_", "*", "e\u{301}",
    String(repeating: "k", count: 10_240), " ", "id ", "SELECT",
  ]

  /// Twelve records, each holding most hostile keys; absent and nil in places.
  static let records: [DynamicRecord] = (0..<12).map { i in
    var fields: [String: FieldValue] = ["plain": .int(i)]
    for (j, key) in keys.enumerated() where (i + j) % 5 != 0 {
      fields[key] =
        (i + j) % 7 == 0 ? .null : (j % 2 == 0 ? .int((i * 3 + j) % 4) : .string("v\((i + j) % 3)"))
    }
    return DynamicRecord(id: .int(i), fields: fields)
  }

  static let reference = RequestSet(records)

  /// Every read a key reaches, for one key, on `set`: each answer named.
  static func answers(_ set: RequestSet<DynamicRecord>, key: String) -> [(String, CorpusAnswer)] {
    func rows(_ body: () throws -> [RequestRow]) -> CorpusAnswer {
      .value { try body().map(\.description) }
    }
    var out: [(String, CorpusAnswer)] = [
      ("filter(key, value: 2)", .of { try set.filter(key, value: 2).fetch() }),
      ("filter(key, value: \"v1\")", .of { try set.filter(key, value: "v1").fetch() }),
      ("filter(key, .greaterThan, 1)", .of { try set.filter(key, .greaterThan, 1).fetch() }),
      ("filter(key, value: nil)", .of { try set.filter(key, value: nil).fetch() }),
      ("filter(\"%K == %@\", key, 2)", .of { try set.filter("%K == %@", key, 2).fetch() }),
      (
        "filter(\"%K BEGINSWITH[c] %@\", key, \"V\")",
        .of { try set.filter("%K BEGINSWITH[c] %@", key, "V").fetch() }
      ),
      ("filter(\"%K != nil\", key)", .of { try set.filter("%K != nil", key).fetch() }),
      ("filter(\"ANY %K == 1\", key)", .of { try set.filter("ANY %K == 1", key).fetch() }),
      // The key pasted into the format text itself: mostly a syntax error, never a crash.
      ("filter(\"\\(key) == 2\")", .of { try set.filter("\(key) == 2").fetch() }),
      ("filter(\"'\\(key)' == 2\")", .of { try set.filter("'\(key)' == 2").fetch() }),
      ("values(key)", rows { try set.values(key) }),
      ("values(key, \"plain\")", rows { try set.values(key, "plain") }),
      ("sortBy(key)", .of { try set.sortBy(key).fetch() }),
      (
        "sortBy(key, .descending, .caseInsensitive)",
        .of {
          try set.sortBy(key, order: .descending, collation: .caseInsensitive).fetch()
        }
      ),
      ("sortBy(\"-\" + key).limit(3)", .of { try set.sortBy("-" + key).limit(3).fetch() }),
      ("distinct(key)", .of { try set.distinct(key).fetch() }),
      (
        "groupBy(key).aggregate(.count, .max(key))",
        rows { try set.groupBy(key).aggregate(.count, .max(key)).fetch() }
      ),
      ("min(key)", .value { try set.min(key) }),
      ("sum(key)", .value { try set.sum(key) }),
    ]
    out.append(("filter(key, value: 2).fetchCount()", .value { try set.filter(key, value: 2).fetchCount() }))
    return out
  }

  /// Checks every read of every hostile key on `set` against the array reference.
  /// The reference's answers for each of ``keys``: the same for every store, so the array
  /// answers them once.
  static let referenceAnswers: [[(String, CorpusAnswer)]] = keys.map { answers(reference, key: $0) }

  static func check(
    _ set: RequestSet<DynamicRecord>, _ mismatches: inout CorpusMismatches, _ label: String, kind: StoreKind = .array
  ) {
    // The quick form checks a third of the keys on the stores that pay a statement per
    // query (see TestScale.checks); REQUESTSET_SOAK=1 checks every key everywhere.
    for (index, key) in keys.enumerated() where TestScale.checks(index, on: kind) {
      let shown = key.count > 40 ? "<\(key.count)-character key>" : key.debugDescription
      for ((name, got), (_, want)) in zip(answers(set, key: key), referenceAnswers[index]) {
        if case .otherError = got {
          mismatches.check(
            "\(label) \(name) with key \(shown): not a RequestSetError", store: got, reference: .ids([]))
        }
        mismatches.check("\(label) \(name) with key \(shown)", store: got, reference: want)
      }
    }
  }

  @Test(arguments: StoreKind.withSQL)
  func hostileKeysAnswerAsTheArrayReferenceOrThrow(kind: StoreKind) throws {
    var mismatches = CorpusMismatches(kind: kind)
    if kind == .array {
      Self.check(Self.reference, &mismatches, "")
      mismatches.report()
      return
    }
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: Self.records)
    Self.check(RequestSet(store), &mismatches, "", kind: kind)

    // Indexes on every hostile key: made, or refused with a typed error; either way the
    // answers stay the reference's.
    if let indexable = store as? any CorpusIndexable {
      for key in Self.keys {
        do {
          try indexable.createIndex(key, unique: false)
        } catch let error as RequestSetError {
          #expect(
            [.invalidIndex, .invalidFormat, .unknownKey, .typeMismatch].contains(error.code),
            "createIndex(\(key.prefix(40).debugDescription)) on \(kind): \(error)")
        }
      }
      Self.check(RequestSet(store), &mismatches, "indexed:", kind: kind)
    }
    mismatches.report()

    // The store is intact: the same records, in the same order, and still writable.
    let after = try RequestSet(store).fetch()
    #expect(after == Self.records, "the records on \(kind) changed")
    #expect(try RequestSet(store).fetchCount() == Self.records.count)
    let extra = DynamicRecord(id: .int(100), fields: ["plain": .int(100), Self.keys[2]: .int(1)])
    try store.insert(extra)
    #expect(try RequestSet(store).filter(Self.keys[2], value: 1).fetch().contains(extra))
  }

  @Test(arguments: StoreKind.writableWithSQL)
  func updatesThroughHostileKeysWriteWhatTheArrayReferenceWouldRead(kind: StoreKind) throws {
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: Self.records)
    var expected = Self.records
    // Keys with a dot or a backslash are paths (`a.b`, `a\\.b`); the rest name one field.
    for (j, key) in Self.keys.enumerated() where j % 2 == 0 && !key.contains(".") && !key.contains("\\") {
      let set = RequestSet(store).filter(key, value: 1)
      let matched = try Self.reference.filter(key, value: 1).fetch().map(\.id)
      let changed = try set.update(key, value: 100 + j)
      #expect(changed == matched.count, "update(\(key.prefix(40).debugDescription)) on \(kind)")
      for i in expected.indices where matched.contains(expected[i].id) {
        expected[i].fields[key] = .int(100 + j)
      }
    }
    #expect(try RequestSet(store).fetch() == expected)
  }
}
