import Foundation

// The typed form of a date-part condition: a key path to a `Date` (or `Date?`), a part and
// an integer. In memory it reads the date from the record; its twin is the string-key
// condition `born.@year == 1990` (see TypedFieldTwin.swift), decided when the query is
// prepared, so a SQL store runs it in SQL as it runs the string form.

extension RequestFilter {
  /// A filter keeping records whose date at `keyPath` has `part` comparing with `value`
  /// as `comparison` says, in UTC (see ``RequestDatePart``).
  ///
  /// ```swift
  /// RequestFilter<Person>(\.born, .year, .lessThan, 2000)   // born.@year < 2000
  /// ```
  /// - Parameters:
  ///   - keyPath: A `Date` property.
  ///   - part: The part of the date to compare.
  ///   - comparison: How the part compares with `value`.
  ///   - value: The year, month (1–12), day (1–31), weekday (1 = Sunday), hour (0–23), …
  public init(
    _ keyPath: KeyPath<Element, Date> & Sendable, _ part: RequestDatePart, _ comparison: RequestComparison,
    _ value: Int
  ) {
    self.init(_datePart: keyPath, part, comparison, value) { part.value(of: $0.pointee[keyPath: keyPath]) }
  }

  /// A filter on a part of an optional date: a nil date has no part, so it matches only
  /// `.notEqual`, as a nil value does everywhere.
  ///
  /// ```swift
  /// RequestFilter<Person>(\.died, .month, .equal, 12)
  /// ```
  /// - Parameters:
  ///   - keyPath: A `Date?` property.
  ///   - part: The part of the date to compare.
  ///   - comparison: How the part compares with `value`.
  ///   - value: The value of the part.
  public init(
    _ keyPath: KeyPath<Element, Date?> & Sendable, _ part: RequestDatePart, _ comparison: RequestComparison,
    _ value: Int
  ) {
    self.init(_datePart: keyPath, part, comparison, value) {
      $0.pointee[keyPath: keyPath].flatMap(part.value(of:))
    }
  }

  private init(
    _datePart keyPath: AnyKeyPath & Sendable, _ part: RequestDatePart, _ comparison: RequestComparison,
    _ value: Int,
    read: @escaping @Sendable (UnsafePointer<Element>) -> Int?
  ) {
    let twin = _DeferredTwin(namesID: { false }) {
      _fieldKey(keyPath, root: Element.self).map {
        _FieldCondition(key: part.key($0), comparison: comparison, value: .int(value), collation: .binary)
      }
    }
    self.init(
      _node: .typed(
        _TypedCondition(
          describe: { "\(keyPath).\(part) \(comparison.rawValue) \(value)" }, twin: twin, keyPath: keyPath
        ) {
          // A date with no part (nil) compares as nil does: only != holds.
          guard let v = read($0) else { return comparison == .notEqual }
          return comparison._holds(order: v < value ? -1 : (v == value ? 0 : 1))
        }))
  }
}

extension RequestSet {
  /// Keeps the records whose date at `keyPath` has `part` equal to `value`, in UTC.
  ///
  /// ```swift
  /// people.filter(\.born, .year, 1990)           // born in 1990
  /// people.filter(\.born, .weekday, 1)           // born on a Sunday
  /// ```
  /// Over a SQL store the condition runs in SQL, as `filter("born.@year", value: 1990)` does.
  /// - Parameters:
  ///   - keyPath: A `Date` property.
  ///   - part: The part of the date (see ``RequestDatePart``).
  ///   - value: The value of the part.
  ///   - mode: How the condition joins the filters before it.
  /// - Returns: The narrowed set; nothing runs until it is read.
  public func filter(
    _ keyPath: KeyPath<Element, Date> & Sendable, _ part: RequestDatePart, _ value: Int,
    mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(keyPath, part, .equal, value), mode: mode)
  }

  /// Keeps the records whose date at `keyPath` has `part` comparing with `value` as
  /// `comparison` says, in UTC.
  ///
  /// ```swift
  /// people.filter(\.born, .hour, .greaterThanOrEqual, 18)   // born in the evening, UTC
  /// ```
  /// - Parameters:
  ///   - keyPath: A `Date` property.
  ///   - part: The part of the date (see ``RequestDatePart``).
  ///   - comparison: How the part compares with `value`.
  ///   - value: The value of the part.
  ///   - mode: How the condition joins the filters before it.
  /// - Returns: The narrowed set; nothing runs until it is read.
  public func filter(
    _ keyPath: KeyPath<Element, Date> & Sendable, _ part: RequestDatePart, _ comparison: RequestComparison,
    _ value: Int, mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(keyPath, part, comparison, value), mode: mode)
  }

  /// Keeps the records whose optional date at `keyPath` has `part` equal to `value`, in
  /// UTC; a nil date matches no part.
  ///
  /// ```swift
  /// people.filter(\.died, .year, 2020)
  /// ```
  /// - Parameters:
  ///   - keyPath: A `Date?` property.
  ///   - part: The part of the date (see ``RequestDatePart``).
  ///   - value: The value of the part.
  ///   - mode: How the condition joins the filters before it.
  /// - Returns: The narrowed set; nothing runs until it is read.
  public func filter(
    _ keyPath: KeyPath<Element, Date?> & Sendable, _ part: RequestDatePart, _ value: Int,
    mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(keyPath, part, .equal, value), mode: mode)
  }

  /// Keeps the records whose optional date at `keyPath` has `part` comparing with `value`
  /// as `comparison` says, in UTC; a nil date matches only `.notEqual`.
  ///
  /// ```swift
  /// people.filter(\.died, .year, .lessThan, 2000)
  /// ```
  /// - Parameters:
  ///   - keyPath: A `Date?` property.
  ///   - part: The part of the date (see ``RequestDatePart``).
  ///   - comparison: How the part compares with `value`.
  ///   - value: The value of the part.
  ///   - mode: How the condition joins the filters before it.
  /// - Returns: The narrowed set; nothing runs until it is read.
  public func filter(
    _ keyPath: KeyPath<Element, Date?> & Sendable, _ part: RequestDatePart, _ comparison: RequestComparison,
    _ value: Int, mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(keyPath, part, comparison, value), mode: mode)
  }
}
