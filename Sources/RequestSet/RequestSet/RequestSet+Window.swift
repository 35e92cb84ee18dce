extension RequestSet {
  /// Keeps at most `count` records, after filters and sorts.
  ///
  /// ```swift
  /// animals.sortBy(\.age).limit(3)     // the three youngest
  /// ```
  /// A filter or sort added after a limit applies to the records the limit kept, the way
  /// LINQ's `Take(3).Where(…)` does: `animals.limit(3).filter(\.age > 3)` is "of the first
  /// three records, those older than 3". A second limit keeps the smaller of the two.
  ///
  /// A negative count makes the set invalid rather than stopping the program, since a
  /// limit often comes from a request: evaluating it throws ``RequestSetError``
  /// `.invalidWindow`, which ``validated()`` reports before any read.
  /// - Parameter count: 0 or more; `Int.max` means no limit.
  /// - Returns: A new set; the receiver is unchanged.
  public func limit(_ count: Int) -> RequestSet {
    _window("limit", count) { $0.limit(count) }
  }

  /// Skips the first `count` records, after filters and sorts.
  ///
  /// ```swift
  /// animals.sortBy(\.id).offset(20).limit(10)   // page 3 of 10 per page
  /// ```
  /// An offset after a limit skips within the limited records: `limit(10).offset(3)`
  /// keeps records 3 to 9. Offsets add up, saturating at `Int.max`: `offset(Int.max)`
  /// then `offset(1)` skips everything.
  ///
  /// A negative count makes the set invalid (see ``limit(_:)``).
  /// - Parameter count: 0 or more.
  /// - Returns: A new set; the receiver is unchanged.
  public func offset(_ count: Int) -> RequestSet {
    _window("offset", count) { $0.offset(count) }
  }

  /// Applies a window builder, or marks the set invalid when `count` is negative.
  func _window(_ call: String, _ count: Int, _ body: (inout _Query<Element>) -> Void) -> RequestSet {
    guard count >= 0 else {
      return _with { $0.invalidate(.invalidWindow("\(call)(\(count))", count, allowed: "a count of 0 or more")) }
    }
    return _with(body)
  }
}
