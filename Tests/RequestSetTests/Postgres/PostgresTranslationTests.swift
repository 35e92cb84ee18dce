import Foundation
import Testing

@testable import RequestSet
@testable import RequestSetPostgres
import _RequestSetSQL

/// The reader's SQL against the in-memory engine's own test (`StoreCondition.matches`,
/// `StoreSortKey.compare`) over awkward values: an exact answer must be the engine's
/// answer, a superset must hold it.
@Suite(.enabled(if: PostgresServer.testsRun), .ownThreads) struct PostgresTranslationTests {
  /// Field values with traps: nil and absent, 2^53 + 1, kinds mixed, NFC and NFD, ß and
  /// Σ, `%_\*?`, CRLF, collections (-0.0, which jsonb cannot hold, is among the values
  /// that are not plain).
  static let values: [FieldValue?] = [
    nil, .null, .int(0), .int(1), .int(-3), .double(0.1), .double(2.5), .int(9_007_199_254_740_993),
    .double(9_007_199_254_740_992), .double(1e300), .string(""), .string("a"), .string("B"), .string("ß"),
    .string("Σ"), .string("é"), .string("%_\\*?"), .string("a\r\nb"), .bool(true), .bool(false),
    .array([]), .array([.int(1), .string("a")]), .array([.int(2), .int(5)]), .object(["k": .int(1)]),
  ]

  static let operands: [FieldValue] = [
    .null, .int(0), .int(1), .int(2), .double(0.1), .double(-0.0), .double(2.5), .int(9_007_199_254_740_993),
    .string("a"), .string("ß"), .string("e\u{301}"), .string(""), .bool(true), .double(.nan),
  ]

  /// A date part reads the stored value once per row. PostgreSQL pulls a derived table up
  /// into the query around it, writing a column's expression in wherever it is named; the
  /// steps of the date arithmetic name each other two to four times, so, pulled up, the
  /// plan read the stored value 318 times for a year, 702 for a month, 468 for a day and
  /// 3 to 6 for the others (300 rows took 180 ms a query). Each step is fenced with
  /// `OFFSET 0`; the control, without the fences, shows that the plan tells them apart.
  @Test func aDatePartReadsTheStoredValueOncePerRow() throws {
    func plan(_ expression: String) throws -> String {
      try PostgresServer.scalar(
        "EXPLAIN (VERBOSE, FORMAT JSON) SELECT \(expression) AS part FROM generate_series(1, 3) AS rs_in(x)") ?? ""
    }
    func uses(_ text: String) -> Int { text.components(separatedBy: "123.25").count - 1 }
    for part in RequestDatePart.allCases {
      let expression = SQLDateParts.expression(part, seconds: "(rs_in.x * 123.25)", dialect: .postgres)
      let fenced = try plan(expression)
      #expect(uses(fenced) == 1, "\(part): \(uses(fenced)) uses\n\(fenced)")
      let pulledUp = try plan(expression.replacingOccurrences(of: " OFFSET 0", with: ""))
      #expect(uses(pulledUp) >= 3, "\(part): the control, \(uses(pulledUp)) uses")
    }
  }

  func store(_ plainOnly: Bool) throws -> (PostgresStore<DynamicRecord>, [DynamicRecord]) {
    var records: [DynamicRecord] = []
    for (i, value) in Self.values.enumerated() {
      var fields: [String: FieldValue] = ["n": .int(i)]
      if let value { fields["v"] = value; fields["o"] = .object(["w": value]) }
      records.append(DynamicRecord(id: .int(i), fields: fields))
    }
    if !plainOnly {
      records.append(DynamicRecord(id: .int(100), fields: ["v": .double(.nan)]))
      records.append(DynamicRecord(id: .int(101), fields: ["v": .string("e\u{301}")]))
      records.append(DynamicRecord(id: .int(102), fields: ["v": .double(-0.0)]))
    }
    let store = try PostgresStore<DynamicRecord>(url: PostgresServer.url(), table: PostgresServer.freshTable())
    try store.insert(contentsOf: records)
    return (store, records)
  }

  func conditions() throws -> [StoreCondition] {
    var all: [StoreCondition] = []
    for key in ["v", "o.w"] {
      for comparison in RequestComparison.allCases {
        for operand in Self.operands {
          all.append(StoreCondition(_FieldCondition(key: key, comparison: comparison, value: operand, collation: .binary)))
        }
      }
    }
    func make(_ key: String, _ op: _FieldOperator, _ value: FieldValue, _ q: _Quantifier? = nil, count: Bool = false)
      throws -> StoreCondition
    {
      StoreCondition(try _FieldCondition(key: key, op: op, value: value, quantifier: q, countsElements: count))
    }
    all.append(try make("v", .between, .array([.int(0), .double(2.5)])))
    all.append(try make("v", .between, .array([.string("a"), .string("z")])))
    all.append(try make("v", .in, .array([.int(1), .string("a"), .null])))
    all.append(try make("v", .compare(.greaterThan), .int(1), count: true))
    all.append(try make("v", .compare(.equal), .int(0), count: true))
    all.append(try make("v", .compare(.equal), .int(1), .any))
    all.append(try make("v", .compare(.greaterThan), .int(0), .all))
    all.append(try make("v", .compare(.equal), .string("a"), .noElement))
    all.append(try make("v", .compare(.greaterThanOrEqual), .int(2), .any))
    all.append(try make("v", .compare(.equal), .null, .any))
    all.append(try make("v", .text(.contains), .string("a")))
    return all
  }

  @Test(arguments: [true, false])
  func everyConditionAnswersAsTheEngine(plainOnly: Bool) throws {
    let (store, records) = try store(plainOnly)
    let reader = try store.queryReader()
    var exact = 0
    for condition in try conditions() {
      let support = reader.support(for: condition)
      if case .none = support { continue }
      let expected = records.filter { condition.matches($0.value(atKey: condition.key)) }.map(\.id)
      var got: [FieldValue] = []
      try reader.records(StoreQuery(filter: .condition(condition))) { got.append($0.id); return true }
      if support == .exact {
        exact += 1
        #expect(got == expected, "\(condition)")
        var negated: [FieldValue] = []
        try reader.records(StoreQuery(filter: .not(.condition(condition)))) { negated.append($0.id); return true }
        #expect(negated == records.map(\.id).filter { !expected.contains($0) }, "NOT \(condition)")
        #expect(try reader.count(StoreQuery(filter: .condition(condition))) == expected.count)
      } else {
        #expect(Set(expected).isSubset(of: Set(got)), "\(condition)")
      }
    }
    #expect(plainOnly ? exact > 100 : exact == 0)
  }

  @Test func sortsOrderAsTheEngineWithTiesInStoreOrder() throws {
    let (store, records) = try store(true)
    let reader = try store.queryReader()
    for order in [RequestSortOrder.ascending, .descending] {
      // Collections order element by element in memory: the reader declines them.
      #expect(reader.support(for: StoreSortKey("v", order: order)) != .exact)
    }
    let scalars = records.filter {
      switch $0.value(atKey: "v") {
      case .array, .object: return false
      default: return true
      }
    }
    // Integers and doubles beyond 2^53 together stay in process: jsonb would compare the
    // doubles' shortest decimals, not their values.
    let mixedStore = try PostgresStore<DynamicRecord>(url: PostgresServer.url(), table: PostgresServer.freshTable())
    try mixedStore.insert(
      contentsOf: scalars + [
        DynamicRecord(id: .int(-1), fields: ["v": .int((1 << 53) + 1)]),
        DynamicRecord(id: .int(-2), fields: ["v": .double(0x1p60)]),
      ])
    #expect(
      try mixedStore.queryReader().support(for: StoreSortKey("v"))
        == .none(
          reason: "the key v holds integers and doubles beyond 2^53, which jsonb compares by the doubles' shortest "
            + "decimals, not their values"))
    let exactScalars = scalars.filter {
      guard case .double(let d) = $0.value(atKey: "v") else { return true }
      return d.magnitude < 0x1p53
    }
    let scalarStore = try PostgresStore<DynamicRecord>(url: PostgresServer.url(), table: PostgresServer.freshTable())
    try scalarStore.insert(contentsOf: exactScalars)
    let scalarReader = try scalarStore.queryReader()
    for order in [RequestSortOrder.ascending, .descending] {
      let key = StoreSortKey("v", order: order)
      #expect(scalarReader.support(for: key) == .exact)
      var got: [FieldValue] = []
      try scalarReader.records(StoreQuery(sort: [key])) { got.append($0.id); return true }
      let expected = exactScalars.enumerated().sorted { a, b in
        let c = key.compare(a.element.value(atKey: "v"), b.element.value(atKey: "v"))
        return c != 0 ? c < 0 : a.offset < b.offset
      }.map(\.element.id)
      #expect(got == expected, "\(order)")
    }
  }
}

extension DynamicRecord {
  /// The value at a dotted key, nil (`.null`) when absent, as the engine reads it.
  func value(atKey key: String) -> FieldValue {
    var value: FieldValue = .object(fields.merging(["id": id]) { a, _ in a })
    for name in FieldValue.fieldNames(inKey: key) {
      guard case .object(let object) = value, let next = object[name] else { return .null }
      value = next
    }
    return value
  }
}
