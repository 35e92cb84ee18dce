import Foundation

extension RequestSet {
  /// Keeps the records that match `filter`, joined with the filters before by `mode`.
  ///
  /// With `.and` (the default) a record must also match the filters before; with `.or`,
  /// the filters before count as one parenthesized operand:
  ///
  /// ```swift
  /// animals.filter(\.age > 3).filter(\.name == "Rex", mode: .or)
  /// // filter: \Animal.age > 3 OR \Animal.name == "Rex"
  /// let adult: RequestFilter<Animal> = \.age >= 18 && \.nickname != nil
  /// animals.filter(adult)
  /// ```
  /// With no filter before it, `mode` makes no difference. After a `limit` or `offset`,
  /// the filter applies to the records the window kept (see ``limit(_:)``).
  /// - Complexity: O(1); nothing runs until the set is read.
  public func filter(_ filter: RequestFilter<Element>, mode: RequestFilterMode = .and) -> RequestSet {
    _with { $0.addFilter(filter._node, mode: mode) }
  }

  /// Keeps the records that match a Foundation predicate.
  ///
  /// ```swift
  /// animals.filter(#Predicate<Animal> { $0.age > 3 && $0.species == "Cow" })
  /// // explain(): filter: #Predicate<Animal>(age > 3 AND species == "Cow")
  /// ```
  /// Comparisons of stored properties with constants, joined with `&&`, `||` and `!`, run
  /// as field conditions where the store's fields answer them exactly (``explain()`` shows
  /// them in parentheses); any other predicate is evaluated record by record. A predicate
  /// that throws while evaluating makes ``fetch()`` throw `.predicateFailed`.
  public func filter(_ predicate: Predicate<Element>, mode: RequestFilterMode = .and) -> RequestSet {
    filter(RequestFilter(predicate), mode: mode)
  }

  /// Keeps the records for which `isIncluded` returns true: a `RequestSet`, never an
  /// `Array`, so the chain stays lazy.
  ///
  /// ```swift
  /// let even: RequestSet<Animal> = animals.filter { $0.id % 2 == 0 }
  /// ```
  /// The closure reads each record where the store keeps it: on a `MemoryStore` or an
  /// array, a record is not copied for the call.
  @inlinable
  public func filter(
    mode: RequestFilterMode = .and, _ isIncluded: @escaping @Sendable (Element) -> Bool
  ) -> RequestSet {
    filter(RequestFilter(isIncluded), mode: mode)
  }

  /// Keeps records whose field at `keyPath` equals one of `values`: SQL's `IN`.
  ///
  /// The typed form of `filter("key IN %@", values)`: each record costs one set lookup
  /// however many values there are, and with an index on the field (or on the `id`) the
  /// planner looks each value up instead of scanning. An empty list keeps no record.
  ///
  /// ```swift
  /// let picked = animals.filter(\.id, in: [1, 3, 7])
  /// // explain(): stage 1: id lookup (~2 of 6 records)
  /// //              index answers: \Animal.id IN {1, 3, 7}
  /// ```
  /// - Parameters:
  ///   - keyPath: The field to test.
  ///   - values: The values to keep; duplicates do not matter.
  ///   - mode: How the new filter joins the filters before it.
  /// - Returns: A new set; the receiver is unchanged.
  /// - Complexity: O(*v*) to build for *v* values; evaluation tests each candidate once.
  public func filter<Value: Hashable & Sendable>(
    _ keyPath: KeyPath<Element, Value> & Sendable, in values: some Sequence<Value>, mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(keyPath, in: values), mode: mode)
  }

  /// Drops the records that match `filter`: a negated filter joined with AND.
  ///
  /// ```swift
  /// animals.exclude(\.species == "Cow")
  /// ```
  public func exclude(_ filter: RequestFilter<Element>) -> RequestSet {
    self.filter(!filter)
  }

  /// Drops the records that match a Foundation predicate.
  ///
  /// ```swift
  /// animals.exclude(#Predicate<Animal> { $0.age < 1 })
  /// ```
  public func exclude(_ predicate: Predicate<Element>) -> RequestSet {
    exclude(RequestFilter(predicate))
  }

  /// Drops the records for which `isExcluded` returns true.
  ///
  /// ```swift
  /// animals.exclude { $0.tags.isEmpty }
  /// ```
  public func exclude(_ isExcluded: @escaping @Sendable (Element) -> Bool) -> RequestSet {
    exclude(RequestFilter(isExcluded))
  }
}

extension RequestSet where Element: Encodable {
  /// Keeps the records whose field at `key` equals `value`.
  ///
  /// The key is the record's `Codable` key; dots reach nested values. `nil` matches
  /// records whose field is nil; numbers compare across `Int` and `Double`.
  ///
  /// ```swift
  /// animals.filter("name", value: "Micky")
  /// animals.filter("owner.city", value: "Oslo")
  /// animals.filter("nickname", value: nil)
  /// ```
  /// An unknown key, or a value that can never match the field (a string for `age`),
  /// makes ``fetch()`` throw `.unknownKey` or `.typeMismatch`, naming the key and listing
  /// the keys that exist.
  /// - Complexity: O(1) to build. Evaluation reads the store's encoded fields; it never
  ///   decodes records.
  public func filter(
    _ key: String, value: (any Encodable & Sendable)?, mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(key, .equal, value: value), mode: mode)
  }

  /// Keeps the records whose field at `key` compares with `value` as `comparison` says.
  ///
  /// ```swift
  /// animals.filter("age", .greaterThanOrEqual, 18)
  /// animals.filter("name", .equal, "micky", collation: .caseInsensitive)
  /// ```
  public func filter(
    _ key: String, _ comparison: RequestComparison, _ value: (any Encodable & Sendable)?,
    collation: RequestCollation = .binary, mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(key, comparison, value: value, collation: collation), mode: mode)
  }

  /// Keeps the records matching a list of key-value pairs, which combine with each other
  /// by `mode` and join the filters before with AND.
  ///
  /// ```swift
  /// animals.filter([("name", "Micky"), ("species", "Mouse")])           // both
  /// animals.filter([("name", "Micky"), ("name", "Rex")], mode: .or)     // either
  ///   .filter("species", value: "Dog")   // (name == "Micky" OR name == "Rex") AND species == "Dog"
  /// ```
  /// An empty list with `.and` keeps everything; with `.or` it keeps nothing.
  public func filter(
    _ pairs: [(String, (any Encodable & Sendable)?)], mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(pairs, mode: mode), mode: .and)
  }

  /// Drops the records whose field at `key` equals `value`.
  ///
  /// ```swift
  /// animals.exclude("name", value: "Micky")
  /// ```
  public func exclude(_ key: String, value: (any Encodable & Sendable)?) -> RequestSet {
    exclude(RequestFilter(key, .equal, value: value))
  }

  /// Drops the records matching a list of key-value pairs combined by `mode`.
  ///
  /// ```swift
  /// animals.exclude([("species", "Cow"), ("species", "Dog")], mode: .or)
  /// ```
  public func exclude(_ pairs: [(String, (any Encodable & Sendable)?)], mode: RequestFilterMode = .and) -> RequestSet {
    exclude(RequestFilter(pairs, mode: mode))
  }
}
