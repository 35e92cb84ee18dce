import Foundation
import Testing

@testable import RequestSet

/// Filters past the SQL engines' limits give the in-memory answer, never `.storeFailed` or
/// `.connectionFailed`: ORs and ANDs of thousands of conditions (SQLite's expression depth
/// of 1000 and its parser's stack), lists of more values than PostgreSQL's 65,535
/// parameters, filters nested as deep as the engine allows, long LIKE patterns and long
/// values.
///
/// Each answer is checked against plain Swift over the records (the filters are simple
/// enough to state directly), which costs nothing beside the engine's own evaluation of
/// 100,000 conditions. The suite runs on the SQL stores, whose limits these are, and on
/// MemoryStore (the engine's answer for the same set) with `REQUESTSET_SOAK=1`; the
/// in-process stores have no such limits, and every answer is checked against plain Swift
/// anyway. It needs more than 20 s (a minute on a loaded 2-core machine), most of it the
/// engine building and evaluating the 70,000- and 100,000-condition filters in a debug
/// build: the sizes are the point, since each limit lies past tens of thousands of
/// conditions.
@Suite(.ownThreads) struct SQLLimitTests {
  static var kinds: [StoreKind] {
    let engines: [StoreKind] = TestScale.pick(quick: [.sqlite, .indexedSQLite, .postgres], soak: [.memory, .sqlite, .indexedSQLite, .postgres])
    return StoreKind.withSQL.filter(engines.contains)
  }

  /// 300 records: `n` its number, `s` a string, `d` half of `n`, `o.c` `n` mod 7, `b`
  /// whether `n` is even.
  static let records: [DynamicRecord] = (0..<300).map { i in
    DynamicRecord(
      id: .int(i),
      fields: [
        "n": .int(i), "s": .string("name\(i)"), "d": .double(Double(i) / 2),
        "o": .object(["c": .int(i % 7)]), "b": .bool(i % 2 == 0),
      ])
  }

  /// The SQL stores ``queriesBindingMoreThanPostgreSQLTakes(kind:shape:)`` runs on. The quick
  /// form leaves out indexed SQLite: its expression indexes change no bound value and no
  /// limit (the other tests of the suite run on it); REQUESTSET_SOAK=1 runs it.
  static var bindingKinds: [StoreKind] {
    kinds.filter { $0 != .memory && (TestScale.soak || $0 != .indexedSQLite) }
  }

  static func set(_ kind: StoreKind) throws -> RequestSet<DynamicRecord> {
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: records)
    return RequestSet(store)
  }

  /// Checks that `set` selects exactly the numbers `want` (in that order), counts them,
  /// and throws nothing.
  static func check(
    _ label: String, _ set: RequestSet<DynamicRecord>, _ want: [Int], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    do {
      let got = try set.fetch().map(\.id)
      #expect(got == want.map { FieldValue.int($0) }, "\(label)", sourceLocation: sourceLocation)
      #expect(try set.fetchCount() == want.count, "\(label): count", sourceLocation: sourceLocation)
    } catch {
      Issue.record("\(label) threw \(error)", sourceLocation: sourceLocation)
    }
  }

  /// Every third number below `n`, the odd ones moved beyond the records' range.
  static func picked(_ n: Int) -> [Int] { stride(from: 0, to: n, by: 3).map { $0 % 2 == 0 ? $0 : $0 + 1_000 } }

  @Test(arguments: kinds)
  func thousandsOfEqualitiesOredOnOneKey(kind: StoreKind) throws {
    let set = try Self.set(kind)
    for n in [1_000, 5_000] {
      let values = Self.picked(n * 3)
      var filter = RequestFilter<DynamicRecord>("n", value: -1)
      for i in values { filter = filter || RequestFilter("n", value: i) }
      Self.check("a loop of || (\(n))", set.filter(filter).sortBy("n"), (0..<300).filter(Set(values).contains))
      var chained = set.filter("s", value: "none")
      for i in values { chained = chained.filter("s", value: "name\(i)", mode: .or) }
      Self.check(
        "chained filter(mode: .or) (\(n))", chained.sortBy("-n").limit(50),
        Array((0..<300).filter(Set(values).contains).reversed().prefix(50)))
    }
    Self.check(
      "a format string with 5,000 ORs", set.filter((0..<5_000).map { "n == \($0 * 2)" }.joined(separator: " OR ")),
      Array(stride(from: 0, to: 300, by: 2)))
    var mixed = RequestFilter<DynamicRecord>("n", value: nil) || RequestFilter("b", value: true)
    for i in 0..<2_500 {
      mixed = mixed || RequestFilter("d", value: Double(i) * 1.5) || RequestFilter("o.c", value: i % 3 == 0 ? 6 : -i)
    }
    Self.check(
      "5,000 ORs of equalities on two keys, nil and a Boolean among them", set.filter(mixed),
      (0..<300).filter { $0 % 2 == 0 || $0 % 3 == 0 || $0 % 7 == 6 })
  }

  @Test(arguments: kinds)
  func aHundredThousandOrsAndAnInOfAHundredThousandValues(kind: StoreKind) throws {
    let set = try Self.set(kind)
    // 40,000 in the quick form (past SQLite's 32,766 bound values and its expression
    // depth either way), the README's 100,000 with `REQUESTSET_SOAK=1`.
    let n = TestScale.pick(quick: 40_000, soak: 100_000)
    let values = Array(Self.picked(3 * n).prefix(n))
    let valueSet = Set(values)
    let expected = (0..<300).filter(valueSet.contains)
    var filter = RequestFilter<DynamicRecord>("n", value: -1)
    for i in values { filter = filter || RequestFilter("n", value: i) }
    Self.check("\(n) ORs", set.filter(filter), expected)
    Self.check("IN of \(n) values", set.filter("n IN %@", values), expected)
    Self.check(
      "NOT IN of \(n) strings", set.exclude("s IN %@", values.map { "name\($0)" }),
      (0..<300).filter { !valueSet.contains($0) })
  }

  @Test(arguments: kinds)
  func longChainsOfOtherConditions(kind: StoreKind) throws {
    let set = try Self.set(kind)
    var ranges = RequestFilter<DynamicRecord>("n", .lessThan, -5)
    for i in 0..<1_200 { ranges = ranges || (RequestFilter("n", .greaterThan, i * 7) && RequestFilter("n", .lessThan, i * 7 + 2)) }
    Self.check("1,200 ranges ORed", set.filter(ranges).sortBy("-d"), (0..<300).filter { $0 % 7 == 1 }.reversed())
    var inequalities = RequestFilter<DynamicRecord>("n", .notEqual, -1)
    for i in 0..<1_500 { inequalities = inequalities && RequestFilter("s", .notEqual, "name\(i * 5)") }
    Self.check(
      "1,500 inequalities ANDed", set.filter(inequalities).offset(3).limit(40),
      Array((0..<300).filter { $0 % 5 != 0 }.dropFirst(3).prefix(40)))
    Self.check(
      "2,000 ORs of nested keys and text operators",
      set.filter((0..<2_000).map { $0 % 2 == 0 ? "o.c == \($0 % 5)" : "s BEGINSWITH 'name2\($0 % 10)'" }.joined(separator: " OR ")),
      (0..<300).filter { n in n % 7 < 5 || [1, 3, 5, 7, 9].contains { "name\(n)".hasPrefix("name2\($0)") } })
  }

  /// More conditions than PostgreSQL has parameters (65,535): an OR of one comparison on
  /// one key binds one array there (`> ANY`); SQLite runs more than 10,000 bound values
  /// through `rs_filter`. Conditions of other shapes past the limit run in process on
  /// PostgreSQL (its reader declines the query, see `queriesBindingMoreThanPostgreSQLTakes`).
  @Test(arguments: kinds)
  func moreConditionsThanPostgreSQLHasParameters(kind: StoreKind) throws {
    let set = try Self.set(kind)
    var filter = RequestFilter<DynamicRecord>("n", .lessThan, -5)
    for i in 0..<70_000 { filter = filter || RequestFilter("n", .greaterThan, 100_000 + i) }
    for i in [5, 50, 250] { filter = filter || RequestFilter("n", value: i) }
    Self.check("70,000 ranges ORed", set.filter(filter).sortBy("-n"), [250, 50, 5])
  }

  /// The shapes of filter that bind a value per condition, for
  /// ``queriesBindingMoreThanPostgreSQLTakes(kind:shape:)``: each is built only by the case
  /// that runs it (tens of thousands of conditions take seconds to build in a debug build).
  enum BindingShape: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case pairs, lists, ranges, mixed, inequalities

    var testDescription: String { rawValue }

    typealias Filter = RequestFilter<DynamicRecord>

    /// Pairs (n > a AND s == "nameB"): two values each, 66,002 with the keys' paths.
    static func pairsFilter() -> Filter {
      var pairs = Filter("n", .lessThan, -5)
      for i in 0..<33_000 { pairs = pairs || (Filter("n", .greaterThan, 50 + i % 5) && Filter("s", value: "name\(i % 400)")) }
      return pairs
    }

    /// IN lists: one array each.
    static func listsFilter() throws -> Filter {
      var lists = Filter("n", value: -1)
      for i in 0..<66_000 {
        lists = lists || (try Filter(format: "n IN %@", [i % 997 + 60, (i * 7) % 1_500 + 60, i % 9_000 == 0 ? i % 50 : -3]))
      }
      return lists
    }

    /// What the shape's query is, and the query itself.
    func query() throws -> (label: String, build: @Sendable (RequestSet<DynamicRecord>) -> RequestSet<DynamicRecord>) {
      switch self {
      case .pairs:
        let pairs = Self.pairsFilter()
        return ("33,000 ORed pairs", { $0.filter(pairs) })
      case .lists:
        let lists = try Self.listsFilter()
        return ("66,000 ORed IN lists", { $0.filter(lists).sortBy("-s") })
      case .ranges:
        // BETWEENs on two keys: two values each.
        var ranges = Filter("n", value: -1)
        for i in 0..<33_000 {
          ranges =
            ranges
            || (i % 2 == 0
              ? try Filter(format: "n BETWEEN %@", [100 + i, 101 + i])
              : try Filter(format: "d BETWEEN %@", [Double(i % 20) * 3, Double(i % 20) * 3 + 0.5]))
        }
        let built = ranges
        return ("33,000 ORed BETWEENs on two keys", { $0.filter(built).sortBy("d") })
      case .mixed:
        // Equalities on a nested key (one list), IN lists, pairs and BETWEENs, ORed.
        var mixed = Filter("o.c", value: 3)
        for i in 0..<40_000 {
          switch i % 3 {
          case 0: mixed = mixed || (try Filter(format: "n IN %@", [i + 500, i % 280 == 0 ? 1 : -1]))
          case 1: mixed = mixed || (Filter("b", value: true) && Filter("n", .lessThan, i % 40))
          default:
            mixed =
              mixed || Filter("o.c", value: 9 + i)
              || (try Filter(format: "d BETWEEN %@", [20.0 + Double(i % 9), 20.0 + Double(i % 9)]))
          }
        }
        let built = mixed
        return ("40,000 mixed ORed terms, ANDed with a small term, sorted, windowed", {
          $0.filter(built).filter("n", .lessThan, 55).sortBy("-d").offset(2).limit(30)
        })
      case .inequalities:
        return ("66,000 inequalities ANDed", { set in
          var set = set
          for i in 0..<66_000 { set = set.filter("n", .notEqual, i % 2 == 0 ? i / 2 * 3 : 10_000 + i) }
          return set
        })
      }
    }
  }

  /// Queries whose statements would bind more values than PostgreSQL takes (65,535), in
  /// each shape that binds a value per condition: ORed pairs of conditions, ORed `IN`
  /// lists, ORed `BETWEEN`s on two keys, a mix of those with equalities under a sort and a
  /// window, and a long AND of inequalities. Each gives MemoryStore's answer (records and
  /// count; for the pairs an aggregate and groups too, for the lists a delete through the
  /// query): on PostgreSQL the largest terms run in process (`explain()` says why), on
  /// SQLite past `SQLITE_MAX_VARIABLE_NUMBER` (32,766) through `rs_filter`. A case per SQL
  /// store and shape, each with MemoryStore's answers of its own: as one test over every
  /// store it ran alone for over seven minutes at the end of `swift test`, and as one case
  /// per store, PostgreSQL's took 165 s. 60 records keep the engine's evaluation of 66,000
  /// conditions per record affordable in a debug build.
  @Test(arguments: bindingKinds, BindingShape.allCases)
  func queriesBindingMoreThanPostgreSQLTakes(kind: StoreKind, shape: BindingShape) throws {
    let records = Array(Self.records.prefix(60))
    let (label, build) = try shape.query()
    let memory = RequestSet(try MemoryStore(records))
    let answer = try build(memory).fetch().map(\.id)
    #expect(!answer.isEmpty && answer.count < records.count, "\(label): \(answer.count) records prove little")
    let store = try kind.makeStore(of: DynamicRecord.self)
    try store.insert(contentsOf: records)
    let set = RequestSet(store)
    #expect(try build(set).fetch().map(\.id) == answer, "\(kind): \(label)")
    #expect(try build(set).fetchCount() == answer.count, "\(kind): \(label): count")
    switch shape {
    case .pairs:
      let pairs = BindingShape.pairsFilter()
      let groups = { (set: RequestSet<DynamicRecord>) in
        try set.groupBy("b").aggregate(.count).fetch().map { row in
          row.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        }.sorted()
      }
      #expect(try groups(set.filter(pairs)) == (try groups(memory.filter(pairs))), "\(kind): groups")
      #expect(try set.filter(pairs).sum("n") == (try memory.filter(pairs).sum("n")), "\(kind): sum")
      if kind == .postgres {
        let explained = set.filter(pairs).explain()
        #expect(explained.contains("values; PostgreSQL takes at most 65535"), "\(explained.prefix(2_000))")
      }
    case .lists:
      let lists = try BindingShape.listsFilter()
      let memoryDeleted = try memory.filter(lists).delete()
      #expect(try set.filter(lists).delete() == memoryDeleted, "\(kind): delete")
      #expect(try set.fetch().map(\.id) == (try memory.fetch().map(\.id)), "\(kind): what the delete left")
    case .ranges, .mixed, .inequalities:
      break
    }
  }

  /// A filter nested as deep as the engine allows (ANDs inside NOTs inside ORs, 99 levels),
  /// and a format string nested 60 levels (its limit is 64): SQLite's parser holds about 90 open
  /// parentheses, and fewer nested `NOT`s.
  @Test(arguments: kinds)
  func filtersNestedAsDeepAsTheEngineAllows(kind: StoreKind) throws {
    let set = try Self.set(kind)
    var filter = RequestFilter<DynamicRecord>("n", .greaterThan, 150)
    var test: @Sendable (Int) -> Bool = { $0 > 150 }
    for level in 0..<99 {
      let inner = test
      switch level % 3 {
      case 0:
        filter = filter && RequestFilter("n", .notEqual, level)
        test = { inner($0) && $0 != level }
      case 1:
        filter = !filter
        test = { !inner($0) }
      default:
        filter = filter || RequestFilter("o.c", value: level % 7)
        test = { inner($0) || $0 % 7 == level % 7 }
      }
    }
    Self.check("alternating AND, NOT and OR, 99 levels", set.filter(filter).sortBy("n"), (0..<300).filter(test))
    var format = "n > 10"
    var formatTest: @Sendable (Int) -> Bool = { $0 > 10 }
    for level in 0..<40 {
      let inner = formatTest
      if level % 2 == 0 {
        format = "NOT (\(format) AND n != \(level))"
        formatTest = { !(inner($0) && $0 != level) }
      } else {
        format = "(\(format) OR o.c == 3)"
        formatTest = { inner($0) || $0 % 7 == 3 }
      }
    }
    Self.check("40 nested parentheses and 20 NOTs in a format string", set.filter(format), (0..<300).filter(formatTest))
  }

  /// SQLite caps a LIKE pattern at 50,000 bytes; the stores bind values and run text
  /// operators through the engine's test or in process, so no pattern or value is too long.
  @Test(arguments: kinds)
  func longPatternsAndValues(kind: StoreKind) throws {
    let set = try Self.set(kind)
    let long = String(repeating: "ab", count: 40_000)
    Self.check("a LIKE pattern of 80,002 characters", set.filter("s LIKE %@", "*" + long + "*"), [])
    Self.check(
      "a 2 MB string value", set.filter("s", value: String(repeating: "x", count: 2 << 20)).filter("n", .lessThan, 3, mode: .or),
      [0, 1, 2])
    var strings = RequestFilter<DynamicRecord>("s", value: "name7")
    for i in 0..<4_000 { strings = strings || RequestFilter("s", value: String(repeating: "q", count: 300) + "\(i)") }
    Self.check("4,000 long strings ORed", set.filter(strings), [7])
  }
}
