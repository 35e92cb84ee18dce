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
  /// animals.sortBy("desc:age")        // KEYShadow's prefix; "-age" (Django's) is the same
  /// ```
  /// Values of one kind compare naturally; `nil` sorts first in ascending order; values
  /// of different kinds order as nil < Bool < number < String < array < object.
  ///
  /// A key may carry a prefix: `"desc:"` or `"-"` sorts descending whatever `order` says,
  /// `"asc:"` ascending; `"desc[n]:"`/`"asc[n]:"` compare strings numerically-aware
  /// (``RequestCollation/localizedStandard``), `[c]` case-insensitively, `[cd]` also
  /// ignoring diacritics; a prefix's collation replaces `collation`.
  public func sortBy(
    _ key: String, order: RequestSortOrder = .ascending, collation: RequestCollation = .binary
  ) -> RequestSet {
    _with { $0.addSort([_SortKey.parse(key, order: order, collation: collation)]) }
  }

  /// Sorts by several string keys, the first most significant, each with an optional
  /// `"desc:"`, `"desc[n]:"`, `"asc:"` or `"-"` prefix.
  ///
  /// ```swift
  /// animals.sortBy("species", "desc:age", "-weight")
  /// // sort: species ASC, age DESC, weight DESC
  /// ```
  public func sortBy(_ first: String, _ second: String, _ more: String...) -> RequestSet {
    sortBy([first, second] + more)
  }

  /// Sorts by a list of string keys, the first most significant, each with an optional
  /// `"desc:"`, `"desc[n]:"`, `"asc:"` or `"-"` prefix.
  ///
  /// ```swift
  /// animals.sortBy(["desc[n]:name", "age"])
  /// // sort: name DESC [localizedStandard], age ASC
  /// ```
  public func sortBy(_ keys: [String]) -> RequestSet {
    _with { $0.addSort(keys.map { _SortKey.parse($0, order: .ascending, collation: .binary) }) }
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

extension _SortKey {
  /// A string sort key with its optional prefix: `desc:`, `asc:`, `desc[n]:`, `-`.
  static func parse(_ text: String, order: RequestSortOrder, collation: RequestCollation) -> _SortKey {
    if text.hasPrefix("-"), text.count > 1 {
      return .field(key: String(text.dropFirst()), order: .descending, collation: collation)
    }
    guard let colon = text.firstIndex(of: ":") else { return .field(key: text, order: order, collation: collation) }
    let prefix = text[..<colon].lowercased()
    let key = String(text[text.index(after: colon)...])
    let direction: RequestSortOrder
    let rest: Substring
    if prefix.hasPrefix("desc") {
      direction = .descending
      rest = prefix.dropFirst(4)
    } else if prefix.hasPrefix("asc") {
      direction = .ascending
      rest = prefix.dropFirst(3)
    } else {
      return .field(key: text, order: order, collation: collation)
    }
    switch rest {
    case "": return .field(key: key, order: direction, collation: collation)
    case "[n]": return .field(key: key, order: direction, collation: .localizedStandard)
    case "[c]": return .field(key: key, order: direction, collation: .caseInsensitive)
    case "[cd]", "[dc]": return .field(key: key, order: direction, collation: .caseDiacriticInsensitive)
    default: return .field(key: text, order: order, collation: collation)
    }
  }
}
