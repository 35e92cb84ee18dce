extension RequestSet {
  /// Keeps at most `count` records, after filters and sorts.
  ///
  /// ```swift
  /// animals.sortBy(\.age).limit(3)     // the three youngest
  /// ```
  /// A filter or sort added after a limit applies to the records the limit kept, the way
  /// LINQ's `Take(3).Where(…)` does: `animals.limit(3).filter(\.age > 3)` is "of the first
  /// three records, those older than 3". A second limit keeps the smaller of the two.
  /// - Precondition: `count >= 0`.
  public func limit(_ count: Int) -> RequestSet {
    precondition(count >= 0, "limit(\(count)) needs a count of 0 or more.")
    return _with { $0.limit(count) }
  }

  /// Skips the first `count` records, after filters and sorts.
  ///
  /// ```swift
  /// animals.sortBy(\.id).offset(20).limit(10)   // page 3 of 10 per page
  /// ```
  /// An offset after a limit skips within the limited records: `limit(10).offset(3)`
  /// keeps records 3 to 9.
  /// - Precondition: `count >= 0`.
  public func offset(_ count: Int) -> RequestSet {
    precondition(count >= 0, "offset(\(count)) needs a count of 0 or more.")
    return _with { $0.offset(count) }
  }
}
