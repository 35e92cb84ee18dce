import Foundation
import RequestSet
import Testing
import _RequestSetSQL

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// A record with dates: one always there, one optional.
struct Moment: Record {
  var id: Int
  var name: String
  var at: Date
  var ended: Date?
  var amount: Int
}

/// Date parts (`at.@year`, `filter(\.at, .year, 1990)`) on every store, against a plain
/// Swift reference computed with Foundation's Gregorian calendar in UTC.
@Suite(.ownThreads) struct DatePartTests {
  /// Foundation's answer for a part; from 1582-10-15 on, the proleptic Gregorian calendar
  /// RequestSet uses is Foundation's Gregorian one.
  static func reference(_ part: RequestDatePart, _ date: Date?) -> Int? {
    guard let date else { return nil }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    switch part {
    case .year:
      // Foundation gives the era's year: 1 BC is year 1 of era 0.
      let era = calendar.component(.era, from: date)
      let year = calendar.component(.year, from: date)
      return era == 1 ? year : 1 - year
    case .month: return calendar.component(.month, from: date)
    case .day: return calendar.component(.day, from: date)
    case .weekday: return calendar.component(.weekday, from: date)
    case .isoWeekday: return (calendar.component(.weekday, from: date) + 5) % 7 + 1
    case .hour: return calendar.component(.hour, from: date)
    case .minute: return calendar.component(.minute, from: date)
    case .second: return calendar.component(.second, from: date)
    }
  }

  /// Seconds since 2001 of `year`-`month`-`day` 00:00 UTC.
  static func midnight(_ year: Int, _ month: Int, _ day: Int) -> Double {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar.date(from: DateComponents(year: year, month: month, day: day))!
      .timeIntervalSinceReferenceDate
  }

  /// Dates from 1600 to 3999: uniform ones, and ones a fraction of a second around the
  /// midnights that end years, February and leap days, before 1970 and after.
  static func randomDate(_ g: inout SeededRandom) -> Date {
    let nudges: [Double] = [0, 0.5, -0.5, 0.001, -0.001, 1e-6, -1e-6, 0.999999, -0.999999, 59.75, -3600.25]
    switch Int.random(in: 0..<3, using: &g) {
    case 0:
      return Date(
        timeIntervalSinceReferenceDate: Double.random(
          in: midnight(1600, 1, 1)...midnight(3999, 12, 31), using: &g))
    case 1:
      let year = [1600, 1700, 1899, 1900, 1969, 1970, 2000, 2001, 2024, 2100, 2400, 3999].randomElement(
        using: &g)!
      return Date(timeIntervalSinceReferenceDate: midnight(year, 1, 1) + nudges.randomElement(using: &g)!)
    default:
      let year = [1604, 1896, 1900, 1964, 1968, 2000, 2004, 2100, 2400, 2800].randomElement(using: &g)!
      let day = [(2, 28), (2, 29), (3, 1)].randomElement(using: &g)!
      let m = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) || day.1 != 29 ? day : (3, 1)
      return Date(timeIntervalSinceReferenceDate: midnight(year, m.0, m.1) + nudges.randomElement(using: &g)!)
    }
  }

  static func moments(count: Int, seed: UInt64) -> [Moment] {
    var g = SeededRandom(seed: seed)
    return (1...count).map { id in
      Moment(
        id: id, name: "m\(id)", at: randomDate(&g), ended: Bool.random(using: &g) ? randomDate(&g) : nil,
        amount: Int.random(in: 1...100, using: &g))
    }
  }

  /// A value of `part` worth asking for, now and then just out of its range.
  static func value(_ part: RequestDatePart, _ g: inout SeededRandom, near dates: [Moment]) -> Int {
    switch part {
    case .year:
      return reference(.year, dates.randomElement(using: &g)!.at)! + Int.random(in: -1...1, using: &g)
    case .month: return Int.random(in: 0...13, using: &g)
    case .day: return Int.random(in: 0...32, using: &g)
    case .weekday, .isoWeekday: return Int.random(in: 0...8, using: &g)
    case .hour: return Int.random(in: -1...24, using: &g)
    case .minute, .second: return Int.random(in: -1...60, using: &g)
    }
  }

  @Test func partsAgreeWithFoundationsCalendar() {
    var g = SeededRandom(seed: 38)
    for _ in 0..<20_000 {
      let date = Self.randomDate(&g)
      for part in RequestDatePart.allCases {
        #expect(
          part.value(of: date) == Self.reference(part, date),
          "\(part) of \(date.timeIntervalSinceReferenceDate)")
      }
    }
    // Before 1582 the calendar stays Gregorian (proleptic), as ISO 8601 and SQL have it.
    let first = Date(timeIntervalSinceReferenceDate: -63_113_904_000)  // 0001-01-01, a Monday
    #expect(RequestDatePart.year.value(of: first) == 1)
    #expect(RequestDatePart.isoWeekday.value(of: first) == 1)
    #expect(RequestDatePart.year.value(of: first.addingTimeInterval(-1)) == 0)
    #expect(RequestDatePart.day.value(of: first.addingTimeInterval(-1)) == 31)
    #expect(RequestDatePart.year.value(of: Date(timeIntervalSinceReferenceDate: 1e15)) == nil)
  }

  @Test(arguments: StoreKind.allCases)
  func randomConditionsMatchTheReference(kind: StoreKind) throws {
    let moments = Self.moments(count: 300, seed: 1990)
    let set = try kind.makeSet(of: moments)
    var g = SeededRandom(seed: 2024)
    let comparisons: [RequestComparison] = [
      .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual,
    ]
    for round in 0..<60 {
      let part = RequestDatePart.allCases.randomElement(using: &g)!
      let key = Bool.random(using: &g) ? "at" : "ended"
      let read: (Moment) -> Date? = key == "at" ? { $0.at } : { $0.ended }
      let comparison = comparisons.randomElement(using: &g)!
      let value = Self.value(part, &g, near: moments)
      let holds: (Int?) -> Bool = { v in
        guard let v else { return comparison == .notEqual }
        return comparison._test(v, value)
      }
      let expected = moments.filter { holds(Self.reference(part, read($0))) }.map(\.id)
      let stringKey = set.filter("\(key).\(part)", comparison, value)
      let format = set.filter("\(key).\(part) \(comparison.rawValue) %d", value)
      let typed =
        key == "at" ? set.filter(\.at, part, comparison, value) : set.filter(\.ended, part, comparison, value)
      let triplet = set.filter(where: ["\(key).\(part)", comparison.rawValue, value])
      for (form, result) in [
        ("string key", stringKey), ("format", format), ("typed", typed), ("triplet", triplet),
      ] {
        #expect(
          try result.fetch().map(\.id) == expected,
          "round \(round) \(form): \(key).\(part) \(comparison) \(value) on \(kind)")
      }
      // BETWEEN and IN, and a test for nil.
      let low = Self.value(part, &g, near: moments)
      let high = low + Int.random(in: 0...3, using: &g)
      let between = moments.filter { Self.reference(part, read($0)).map { low <= $0 && $0 <= high } ?? false }
        .map(\.id)
      #expect(
        try set.filter("\(key).\(part) BETWEEN {%d, %d}", low, high).fetch().map(\.id) == between,
        "round \(round): \(key).\(part) BETWEEN {\(low), \(high)} on \(kind)")
      let list = [low, high, Self.value(part, &g, near: moments)]
      let listed = moments.filter { Self.reference(part, read($0)).map(list.contains) ?? false }.map(\.id)
      #expect(
        try set.filter("\(key).\(part) IN %@", list).fetch().map(\.id) == listed,
        "round \(round): \(key).\(part) IN \(list) on \(kind)")
    }
    let noEnd = moments.filter { $0.ended == nil }.map(\.id)
    #expect(try set.filter("ended.@year == nil").fetch().map(\.id) == noEnd)
    #expect(set.filter("ended.@year", value: nil).count == noEnd.count)
  }

  @Test(arguments: StoreKind.allCases)
  func sortsGroupsAndValuesReadTheSameParts(kind: StoreKind) throws {
    let moments = Self.moments(count: 200, seed: 7)
    let set = try kind.makeSet(of: moments)
    // Sales per month: one row per month, in the reference's counts and sums.
    var perMonth: [Int: (count: Int, sum: Int)] = [:]
    for m in moments { perMonth[Self.reference(.month, m.at)!, default: (0, 0)].count += 1 }
    for m in moments { perMonth[Self.reference(.month, m.at)!]!.sum += m.amount }
    let rows = try set.groupBy("at.@month").aggregate(.count, .sum("amount")).fetch()
    #expect(rows.count == perMonth.count, "\(kind)")
    for row in rows {
      guard case .int(let month) = row["at.@month"], let want = perMonth[month] else {
        Issue.record("unexpected group \(row) on \(kind)")
        continue
      }
      #expect(
        row["count"] == .int(want.count) && row["sum:amount"] == .int(want.sum), "month \(month) on \(kind)")
    }
    // A sort by a date part: nil first, ties in store order, as a stable sort of the array.
    let byHour = moments.enumerated().sorted {
      let a = Self.reference(.hour, $0.element.ended)
      let b = Self.reference(.hour, $1.element.ended)
      if a != b { return a == nil || (b != nil && a! < b!) }
      return $0.offset < $1.offset
    }.map(\.element.id)
    #expect(try set.sortBy("ended.@hour").fetch().map(\.id) == byHour, "\(kind)")
    #expect(try set.sortBy([("ended.@hour", .descending)]).fetch().map(\.id).count == moments.count)
    // values(…) and aggregates read the part too.
    let years = try set.values("id", "at.@year").map { $0["at.@year"] }
    #expect(years == moments.map { .int(Self.reference(.year, $0.at)!) }, "\(kind)")
    #expect(try set.max("at.@year") == .int(moments.map { Self.reference(.year, $0.at)! }.max()!))
  }

  @Test(arguments: StoreKind.allCases)
  func expressionsAndOptionalDatesReadParts(kind: StoreKind) throws {
    let moments = Self.moments(count: 150, seed: 12)
    let set = try kind.makeSet(of: moments)
    let year = Self.reference(.year, moments[0].at)!
    // Arithmetic on a part is computed on each record, with the part read as a key is.
    #expect(
      try set.filter("at.@year + 1 > %d", year).fetch().map(\.id)
        == moments.filter { Self.reference(.year, $0.at)! + 1 > year }.map(\.id), "\(kind)")
    #expect(
      try set.filter("at.@month == ended.@month").fetch().map(\.id)
        == moments.filter { Self.reference(.month, $0.at) == Self.reference(.month, $0.ended) }.map(\.id),
      "\(kind)")
    // A nil date has no part: only != holds, typed or by key.
    let notJune = moments.filter { Self.reference(.month, $0.ended) != 6 }.map(\.id)
    #expect(try set.filter(\.ended, .month, .notEqual, 6).fetch().map(\.id) == notJune, "\(kind)")
    #expect(try set.exclude("ended.@month", value: 6).fetch().map(\.id) == notJune, "\(kind)")
    #expect(try set.filter("ended.@month", .notEqual, 6).fetch().map(\.id) == notJune, "\(kind)")
    #expect(set.filter(\.at, .year, 1990).filter("at.@day", value: 1).explain().contains("at.@day == 1"))
  }

  @Test(arguments: StoreKind.allCases.filter { [.sqlite, .indexedSQLite, .postgres].contains($0) })
  func sqlStoresRunDatePartsThemselves(kind: StoreKind) throws {
    let moments = Self.moments(count: 120, seed: 3)
    let set = try kind.makeSet(of: moments).requiringPushdown()
    let reference = RequestSet(moments)
    // requiringPushdown() throws if any part would run in process.
    let query = { (s: RequestSet<Moment>) in
      s.filter("at.@month BETWEEN {3, 9} AND ended.@weekday IN {1, 7}").filter(\.at, .hour, .lessThan, 12)
        .sortBy("at.@year", "id")
    }
    #expect(try query(set).fetch().map(\.id) == query(reference).fetch().map(\.id))
    let plan = query(set).explain()
    #expect(plan.contains("at.@month BETWEEN {3, 9}"), "\(plan)")
    #expect(!plan.contains("in process"), "\(plan)")
    #expect(
      try set.groupBy("at.@month").aggregate(.count).fetch().count
        == Set(moments.map { Self.reference(.month, $0.at)! }).count)
  }

  /// SQLite computes a date part in a bounded number of steps a row. Its query flattener
  /// pulls a derived table up into the query around it, writing a column's expression in
  /// wherever it is named, and the steps of the date arithmetic name each other two to
  /// four times: pulled up, a month took 35 µs a row against 2.4 µs fenced (100,000 rows).
  /// The year's, month's and day's steps are fenced with `LIMIT -1 OFFSET 0`; the test
  /// counts the virtual machine's steps (`SQLITE_STMTSTATUS_VM_STEP`) over 100 rows with
  /// the fences and without.
  /// (PostgreSQL's side: `PostgresTranslationTests`.)
  @Test func sqliteComputesADatePartOncePerRow() throws {
    var db: OpaquePointer?
    guard sqlite3_open(":memory:", &db) == SQLITE_OK else { throw RequestSetError(.ioFailure, "no database") }
    defer { sqlite3_close(db) }
    #expect(sqlite3_exec(db, "CREATE TABLE t(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) INSERT INTO t SELECT i * 86399.5 FROM n", nil, nil, nil) == SQLITE_OK)
    func steps(_ expression: String) throws -> Int32 {
      var statement: OpaquePointer?
      guard sqlite3_prepare_v2(db, "SELECT \(expression) FROM t AS rs_in", -1, &statement, nil) == SQLITE_OK else {
        throw RequestSetError(.invalidSQL, String(cString: sqlite3_errmsg(db)))
      }
      defer { sqlite3_finalize(statement) }
      while sqlite3_step(statement) == SQLITE_ROW {}
      return sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 0)
    }
    for part in RequestDatePart.allCases {
      let expression = SQLDateParts.expression(part, seconds: "rs_in.x", dialect: .sqlite)
      let fenced = try steps(expression)
      let pulledUp = try steps(expression.replacingOccurrences(of: " LIMIT -1 OFFSET 0", with: ""))
      // Fenced where it pays: the shallow parts' steps cost more as tables of their own.
      if [.year, .month, .day].contains(part) {
        #expect(fenced * 2 < pulledUp, "\(part): \(fenced) steps fenced, \(pulledUp) without")
      } else {
        #expect(fenced == pulledUp, "\(part): not fenced, \(fenced) steps")
      }
    }
  }

  @Test func aStoreThatComputesNoDatePartsGetsNone() throws {
    // PushdownMemoryStore's reader keeps the default support(forDatePart:): .none.
    let set = try StoreKind.pushdownMemory.makeSet(of: Self.moments(count: 40, seed: 5))
    let query = set.filter("at.@year", .greaterThan, 1900).sortBy("at.@month")
    #expect(
      query.explain() == """
        RequestSet<Moment> over PushdownMemoryStore<Moment>
        stage 1: pushed to PushdownMemoryStore<Moment>: all records
          statement: SCAN all records
          plan: scan 40 records
          in process: at.@year > 1900 (the store does not compute date parts (@year))
          in process: sort at.@month ASC (at.@month ASC: the store does not compute date parts (@month))
        """)
    #expect(
      try query.fetch().map(\.id)
        == RequestSet(Self.moments(count: 40, seed: 5)).filter("at.@year", .greaterThan, 1900).sortBy(
          "at.@month"
        ).fetch().map(\.id))
    #expect(throws: RequestSetError.self) { try query.requiringPushdown().fetch() }
  }

  @Test(arguments: StoreKind.allCases)
  func badDatePartsThrowTypedErrors(kind: StoreKind) throws {
    let set = try kind.makeSet(of: Self.moments(count: 10, seed: 1))
    let unknown = try #require(throws: RequestSetError.self) {
      try set.filter("at.@yeer", value: 1990).fetch()
    }
    #expect(unknown.code == .unknownKey)
    #expect(
      unknown.message
        == "Unknown date part \"@yeer\" in \"at.@yeer\" for Moment. Use one of @year, @month, @day, @weekday, "
        + "@isoWeekday, @hour, @minute, @second after a Date field's key, as in \"at.@year\".")
    let format = try #require(throws: RequestSetError.self) {
      try RequestFilter<Moment>(format: "at.@yeer == 1990")
    }
    #expect(format.code == .invalidFormat)
    #expect(format.message.contains("a date part (@year, @month"), "\(format.message)")
    let text = try #require(throws: RequestSetError.self) {
      try set.filter("name.@year", value: 1990).fetch()
    }
    #expect(text.code == .typeMismatch)
    #expect(
      text.message
        == "name.@year reads a date, but name holds a String. Use @year on a Date field (stored as seconds since 2001)."
    )
    let value = try #require(throws: RequestSetError.self) {
      try set.filter("at.@month", value: "May").fetch()
    }
    #expect(value.code == .typeMismatch)
    let group = try #require(throws: RequestSetError.self) { try set.groupBy("name.@month").fetch() }
    #expect(group.code == .typeMismatch)
    let sort = try #require(throws: RequestSetError.self) { try set.sortBy("at.@mnth").fetch() }
    #expect(sort.code == .unknownKey)
  }
}

extension RequestComparison {
  /// The comparison on two integers, for a reference.
  func _test(_ a: Int, _ b: Int) -> Bool {
    switch self {
    case .equal: return a == b
    case .notEqual: return a != b
    case .lessThan: return a < b
    case .lessThanOrEqual: return a <= b
    case .greaterThan: return a > b
    case .greaterThanOrEqual: return a >= b
    }
  }
}
