import Foundation

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
    if text == "@relevance" { return .relevance(_RelevanceSort()) }
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

extension RequestSet {
  /// Sorts by a Foundation `SortDescriptor`, as SwiftData's `FetchDescriptor` and
  /// `Array.sorted(using:)` take one.
  ///
  /// The descriptor compares records as it does anywhere else (a `String` key path
  /// compares with its descriptor's comparator, `.localizedStandard` unless you chose
  /// another); `.reverse` sorts descending. Repeated calls add keys in call order, and ties
  /// keep the order the records had before. When the key path names a stored property of
  /// a type whose field orders as the Swift value does (a number, a `Date`), the sort
  /// reads the same resolved field a string-key sort reads, so an index on it can serve a
  /// sort with a limit, and a ``LogStore`` compares the field without decoding records.
  ///
  /// ```swift
  /// animals.sortBy(SortDescriptor(\.age, order: .reverse))
  /// // sort: \Animal.age DESC
  /// ```
  /// - Parameter descriptor: The sort descriptor.
  /// - Returns: The set, sorted by the descriptor after any sort keys it had.
  /// - Complexity: O(1) to build; evaluation sorts the *m* matches in O(*m* log *m*).
  public func sortBy(_ descriptor: SortDescriptor<Element>) -> RequestSet {
    sortBy([descriptor])
  }

  /// Sorts by a list of Foundation `SortDescriptor`s, the first most significant.
  ///
  /// ```swift
  /// animals.sortBy([SortDescriptor(\.species), SortDescriptor(\.age, order: .reverse)])
  /// // sort: \Animal.species ASC, \Animal.age DESC
  /// ```
  /// - Parameter descriptors: The sort descriptors, the first most significant.
  /// - Returns: The set, sorted by the descriptors after any sort keys it had.
  /// - Complexity: O(1) to build; evaluation sorts the *m* matches in O(*m* log *m*).
  public func sortBy(_ descriptors: [SortDescriptor<Element>]) -> RequestSet {
    _with { $0.addSort(descriptors.map { .typed(_TypedSort.make($0)) }) }
  }
}

extension _TypedSort {
  /// A sort by a Foundation `SortDescriptor`: its own comparison, made ascending, with the
  /// descriptor's direction as the key's order.
  static func make(_ descriptor: SortDescriptor<Element>) -> _TypedSort {
    let order: RequestSortOrder = descriptor.order == .reverse ? .descending : .ascending
    var description = "SortDescriptor<\(Element.self)>"
    var fieldKey: (@Sendable () -> String?)?
    if let keyPath = descriptor.keyPath {
      description = "\(keyPath)"
      // Strings compare with the descriptor's comparator, not byte by byte as the field.
      let valueType = type(of: keyPath).valueType
      if valueType != String.self && valueType != String?.self && _isTwinType(valueType, ordered: true) {
        let key = _KeyPathKey(keyPath: keyPath)
        fieldKey = { _ResolvedField.named(by: key.keyPath, root: Element.self)?.key }
      }
    }
    // The descriptor's own comparison includes its direction: undo it, so that `compare`
    // is ascending and `order` carries the direction, as for every typed sort.
    let sign = order == .descending ? -1 : 1
    return _TypedSort(description: description, order: order, fieldKey: fieldKey) { a, b in
      switch descriptor.compare(a.pointee, b.pointee) {
      case .orderedAscending: return -sign
      case .orderedSame: return 0
      case .orderedDescending: return sign
      }
    }
  }
}
