import Foundation

/// A part of a date read from a `Date` field: its year, month, day, weekday, hour, minute
/// or second, in the proleptic Gregorian calendar and in UTC.
///
/// A date part is a modifier of a key, written `key.@part` wherever a string key is taken
/// (filters, format strings, triplets, `sortBy`, `groupBy`, `values`), and with a key path
/// in the typed form. Every consumer and every store computes it the same way, so a SQL
/// store runs it in its own SQL (`explain()` shows it) and answers as memory does.
///
/// ```swift
/// people.filter(\.born, .year, 1990)                   // typed
/// people.filter("born.@year", value: 1990)             // string key
/// people.filter("born.@month BETWEEN {6, 8}")          // format string
/// people.groupBy("born.@month").aggregate(.count)      // births per month
/// ```
///
/// The rules, the same on every store:
/// - A `Date` is stored as its seconds since 2001-01-01 00:00:00 UTC (its
///   `timeIntervalSinceReferenceDate`); the part is that of the whole second at or before
///   the instant (23:59:59.999 is still the same day, and -0.5 s is 2000-12-31 23:59:59).
/// - The calendar is the proleptic Gregorian one of ISO 8601 and of SQL engines, with no
///   switch to the Julian calendar in 1582 (Foundation's `Calendar(identifier: .gregorian)`
///   agrees from 1582-10-15 on); the time zone is UTC.
/// - ``weekday`` numbers days as Foundation's `Calendar` and Django's `week_day` do,
///   1 = Sunday … 7 = Saturday; ``isoWeekday`` as ISO 8601 does, 1 = Monday … 7 = Sunday.
/// - A date part of nil, of an absent key, or of a value that is not a number is nil; so is
///   that of a date more than 10^14 seconds (about three million years) from 2001. A key
///   known to hold something else than numbers (text, say) is a `.typeMismatch`.
public enum RequestDatePart: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// The year, such as 1990 (0 is 1 BC, -1 is 2 BC).
  case year
  /// The month, 1 (January) to 12.
  case month
  /// The day of the month, 1 to 31.
  case day
  /// The day of the week, 1 (Sunday) to 7 (Saturday), as `Calendar.component(.weekday, from:)`.
  case weekday
  /// The ISO 8601 day of the week, 1 (Monday) to 7 (Sunday).
  case isoWeekday
  /// The hour, 0 to 23.
  case hour
  /// The minute, 0 to 59.
  case minute
  /// The second, 0 to 59 (whole seconds, rounded down).
  case second

  /// The part as a key modifier: `"@year"`.
  ///
  /// ```swift
  /// RequestDatePart.isoWeekday.description   // "@isoWeekday"
  /// ```
  public var description: String { "@" + rawValue }

  /// The key that reads this part of the date under `key`: `"born.@year"`.
  ///
  /// ```swift
  /// people.sortBy(RequestDatePart.month.key("born"))   // sortBy("born.@month")
  /// ```
  /// - Parameter key: The string key of a `Date` field.
  /// - Returns: The key with the part appended.
  public func key(_ key: String) -> String { key + "." + description }

  /// The part of `date`, as every store computes it.
  ///
  /// ```swift
  /// RequestDatePart.weekday.value(of: Date(timeIntervalSinceReferenceDate: 0))   // 2: a Monday
  /// ```
  /// - Parameter date: A date.
  /// - Returns: The part, or nil for a date more than 10^14 seconds from 2001.
  /// - Complexity: O(1).
  public func value(of date: Date) -> Int? { _value(seconds: date.timeIntervalSinceReferenceDate) }

  /// The largest distance from 2001, in seconds, that has date parts: every second up to
  /// it is an exact `Double` and an exact 64-bit integer, in Swift and in SQL.
  static var _maxSeconds: Double { 1e14 }

  /// The part of the date `seconds` after 2001-01-01 00:00:00 UTC.
  func _value(seconds: Double) -> Int? {
    guard seconds.isFinite, Swift.abs(seconds) <= Self._maxSeconds else { return nil }
    let t = Int(seconds.rounded(.down))
    let days = Self._floorDiv(t, 86_400)
    let ofDay = t - days * 86_400
    switch self {
    case .hour: return ofDay / 3600
    case .minute: return ofDay % 3600 / 60
    case .second: return ofDay % 60
    // 2001-01-01 was a Monday.
    case .isoWeekday: return Self._floorMod(days, 7) + 1
    case .weekday: return (Self._floorMod(days, 7) + 1) % 7 + 1
    case .year, .month, .day:
      let (y, m, d) = Self._civil(daysSince2001: days)
      return self == .year ? y : (self == .month ? m : d)
    }
  }

  /// Year, month and day of a day number: Howard Hinnant's `civil_from_days`, in integer
  /// arithmetic only, which the SQL stores spell the same way (see `SQLDateParts`).
  static func _civil(daysSince2001 days: Int) -> (year: Int, month: Int, day: Int) {
    // Days from 0000-03-01: 2001-01-01 is 730,791 days after it.
    let z = days + 730_791
    let era = _floorDiv(z, 146_097)
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }

  private static func _floorDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
  private static func _floorMod(_ a: Int, _ b: Int) -> Int { a - _floorDiv(a, b) * b }

  /// The part of a stored field value: a number is seconds since 2001 (as `Date` encodes);
  /// nil and every other kind read nil, as in SQL.
  func _apply(_ value: FieldValue) -> FieldValue {
    let seconds: Double
    switch value {
    case .int(let i): seconds = Double(i)
    case .uint(let u): seconds = Double(u)
    case .double(let d): seconds = d
    case .decimal(let d): seconds = _Numbers.nearestDouble(d)
    default: return .null
    }
    return _value(seconds: seconds).map(FieldValue.int) ?? .null
  }

  /// The part a key modifier names (`"@year"`, any case), or nil.
  static func _named(_ modifier: some StringProtocol) -> RequestDatePart? {
    guard modifier.hasPrefix("@") else { return nil }
    let name = modifier.dropFirst().lowercased()
    return allCases.first { $0.rawValue.lowercased() == name }
  }

  /// Splits a key that ends in a date part into the date's key and the part: what a
  /// store's translation of ``StoreGroupQuery`` keys and aggregate keys reads.
  ///
  /// ```swift
  /// RequestDatePart.split("born.@month")   // ("born", .month)
  /// RequestDatePart.split("born")          // nil
  /// ```
  /// - Parameter key: A string key.
  /// - Returns: The date's key and the part, or nil for a key with no date part.
  public static func split(_ key: String) -> (key: String, part: RequestDatePart)? { _split(key) }

  /// Splits `born.@year` into the key `born` and the part; nil for a key with no date part.
  static func _split(_ key: String) -> (key: String, part: RequestDatePart)? {
    guard let dot = key.lastIndex(of: "."), key[key.index(after: dot)...].hasPrefix("@"),
      let part = _named(key[key.index(after: dot)...])
    else { return nil }
    return (String(key[..<dot]), part)
  }

  /// The names, for messages: `@year, @month, …`.
  static var _names: String { allCases.map(\.description).joined(separator: ", ") }
}

extension _FieldAccess {
  /// A reader of `key`'s value by slot that also reads date parts (`born.@year` reads
  /// `born` and takes its year): the reader sorts, groups, projections and expressions use.
  ///
  /// - Throws: `.typeMismatch` when the key under a date part is known to hold something
  ///   else than numbers.
  func readerWithDateParts(for key: String) throws -> ((Int) throws -> FieldValue)? {
    guard kinds[key] == nil, let (base, part) = RequestDatePart._split(key) else { return reader(for: key) }
    try RequestDatePart._validate(base: base, part: part, in: self)
    guard let read = reader(for: base) else { return nil }
    return { part._apply(try read($0)) }
  }
}

extension RequestDatePart {
  /// Checks that `base` may hold dates: a known key whose values are numbers (or nil).
  static func _validate(base: String, part: RequestDatePart, in fields: any _FieldAccess) throws {
    guard let kinds = fields.kinds[base], !kinds.isUnknown else { return }
    let others = kinds.nonNull.filter { $0 != .number }
    guard !others.isEmpty else { return }
    throw RequestSetError(
      .typeMismatch,
      "\(base).\(part) reads a date, but \(base) holds "
        + others.map { _withArticle($0.description) }.joined(separator: " and ")
        + ". Use \(part) on a Date field (stored as seconds since 2001).")
  }
}
