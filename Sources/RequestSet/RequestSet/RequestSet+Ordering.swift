extension RequestSet {
  /// Sorts by a key path. Repeated calls add keys in call order; ties keep the order the
  /// records had before (store order, at first).
  ///
  /// ```swift
  /// animals.sortBy(\.species).sortBy(\.age, order: .descending)
  /// ```
  /// - Complexity: O(1) to build; evaluation sorts the *m* matches in O(*m* log *m*), or
  ///   keeps the best *k* in O(*m* log *k*) when a limit follows.
  @inlinable
  public func sortBy<Value: Comparable & Sendable>(
    _ keyPath: KeyPath<Element, Value> & Sendable, order: RequestSortOrder = .ascending
  ) -> RequestSet {
    _with { $0.addSort([.typed(.make(keyPath, order: order))]) }
  }

  /// Sorts by an optional key path; `nil` sorts before any value in ascending order.
  ///
  /// ```swift
  /// animals.sortBy(\.nickname)
  /// ```
  @inlinable
  public func sortBy<Value: Comparable & Sendable>(
    _ keyPath: KeyPath<Element, Value?> & Sendable, order: RequestSortOrder = .ascending
  ) -> RequestSet {
    _with { $0.addSort([.typed(.make(keyPath, order: order))]) }
  }

  /// Sorts by a string key path with a collation.
  ///
  /// ```swift
  /// animals.sortBy(\.name, collation: .localizedStandard)
  /// ```
  public func sortBy(
    _ keyPath: KeyPath<Element, String> & Sendable, order: RequestSortOrder = .ascending,
    collation: RequestCollation
  ) -> RequestSet {
    _with { $0.addSort([.typed(.make(keyPath, order: order, collation: collation))]) }
  }

  /// Sorts by an optional string key path with a collation; `nil` sorts first.
  ///
  /// ```swift
  /// animals.sortBy(\.nickname, collation: .caseInsensitive)
  /// ```
  public func sortBy(
    _ keyPath: KeyPath<Element, String?> & Sendable, order: RequestSortOrder = .ascending,
    collation: RequestCollation
  ) -> RequestSet {
    _with { $0.addSort([.typed(.make(keyPath, order: order, collation: collation))]) }
  }
}

extension RequestSet where Element: Encodable {
  /// Sorts by the field at a string key, ascending by default.
  ///
  /// ```swift
  /// animals.sortBy("name")
  /// animals.sortBy("name", order: .descending, collation: .caseInsensitive)
  /// ```
  /// Values of one kind compare naturally; `nil` sorts first in ascending order; values
  /// of different kinds order as nil < Bool < number < String < array < object.
  public func sortBy(
    _ key: String, order: RequestSortOrder = .ascending, collation: RequestCollation = .binary
  ) -> RequestSet {
    _with { $0.addSort([.field(key: key, order: order, collation: collation)]) }
  }

  /// Sorts by several string keys at once, the first key most significant.
  ///
  /// ```swift
  /// animals.sortBy([("species", .descending), ("name", .ascending)])
  /// ```
  public func sortBy(_ keys: [(String, RequestSortOrder)]) -> RequestSet {
    _with { $0.addSort(keys.map { .field(key: $0.0, order: $0.1, collation: .binary) }) }
  }
}
