/// Keyset pages: "the records after this one in the set's order" as a filter of the query
/// model (see `RequestSet+Pages.swift`).
///
/// A page's order is the set's sort keys, then `id` ascending, so no two records tie. The
/// records after an anchor are those that sort after it on the first key, or tie with it
/// on the first key and sort after it on the second, and so on down to `id`:
///
/// ```
/// (k1 after v1) OR (k1 == v1 AND k2 after v2) OR … OR (k1 == v1 AND … AND id > anchorID)
/// ```
///
/// Each "after" and "==" is an ordinary condition, so every store runs it as it runs any
/// filter (a SQL store in its WHERE clause, an indexed store through its index), and it
/// agrees with the sort because both compare with the same rules: string keys through
/// `FieldValue._order` with the key's collation, nil before every value ascending and
/// after every value descending; typed key paths that have no store key through the sort's
/// own comparison, in process.
enum _Keyset {
  /// The key every page breaks ties by.
  static var idKey: String { "id" }

  /// One sort key of a page, with the anchor's value read for it.
  enum Key<Element: Sendable> {
    /// A store key (a string key, or a typed key path's store key): the anchor's encoded
    /// value, compared by conditions any store runs.
    case field(key: String, order: RequestSortOrder, collation: RequestCollation, value: FieldValue)
    /// A typed sort with no store key (a collation, a `SortDescriptor` on a `String`):
    /// compared with the anchor by the sort's own comparison, in process.
    case typed(_TypedSort<Element>, anchor: Element)
  }

  /// The page keys of `sort`, then `id` ascending, with the anchor's values; nil anchor
  /// reads no values (the first page has no filter), but the keys are still checked.
  ///
  /// - Throws: ``RequestSetError`` `.invalidPage` for a sort key that walks a relation.
  static func keys<Element: Record>(
    _ sort: [_SortKey<Element>], anchor: Element?, graph: RecordGraph?
  ) throws -> [Key<Element>] {
    let relations = graph?.relations(of: Element.self) ?? [:]
    var row: _EncodedRow?
    if let anchor {
      let fields = try FieldValue(encoding: anchor)
      // The anchor is a record of the type: showing it to the probe confirms which key a
      // typed key path's property is stored under, so its sort compares in the store.
      _SchemaProbe.witness(anchor, fields: fields)
      row = _EncodedRow(fields)
    }
    func value(_ key: String) -> FieldValue {
      guard let row else { return .null }
      guard let split = RequestDatePart._split(key) else { return row.value(at: key) }
      return split.part._apply(row.value(at: split.key))
    }
    var keys: [Key<Element>] = []
    for key in sort {
      switch key {
      case .field(let name, let order, let collation):
        let first = String(name.prefix { $0 != "." })
        if relations[first] != nil {
          throw RequestSetError(
            .invalidPage,
            "page(after:size:) cannot page a set sorted by \"\(name)\": the key walks the relation \(first), "
              + "whose values are not stored with \(Element.self). Sort by a field of \(Element.self) itself "
              + "(copy the value into the record), or read the set in windows with offset(_:) and limit(_:).")
        }
        keys.append(.field(key: name, order: order, collation: collation, value: value(name)))
      case .typed(let t):
        if let fieldKey = t.fieldKey ?? t.findFieldKey?() {
          // The store key's encoded values order exactly as the key path's (see
          // `_TypedSort.fieldKey`): the page compares them in the store.
          keys.append(.field(key: fieldKey, order: t.order, collation: .binary, value: value(fieldKey)))
        } else if let anchor {
          keys.append(.typed(t, anchor: anchor))
        }
      case .relevance:
        throw RequestSetError(
          .invalidPage,
          "page(after:size:) cannot page a set sorted by relevance: a record's score depends on the whole "
            + "store, so no stored value marks where a page ends. Read the ranked set in windows with "
            + "offset(_:) and limit(_:).")
      }
    }
    keys.append(.field(key: idKey, order: .ascending, collation: .binary, value: value(idKey)))
    return keys
  }

  /// The records that sort after the anchor under `keys`: the OR-expansion above.
  static func after<Element>(_ keys: [Key<Element>]) -> _FilterNode<Element> {
    var result: _FilterNode<Element> = .constant(false)
    var ties: _FilterNode<Element> = .constant(true)
    for key in keys {
      let after = Self.after(key)
      if case .constant(false) = after {
      } else {
        result = result || (ties && after)
      }
      ties = ties && equal(key)
    }
    return result
  }

  /// The records that tie with the anchor on `key`.
  static func equal<Element>(_ key: Key<Element>) -> _FilterNode<Element> {
    switch key {
    case .field(let name, _, let collation, let value):
      // A comparison with nil needs no collation, and SQL runs it natively without one.
      let collation = value == .null ? .binary : collation
      return .field(_FieldCondition(key: name, comparison: .equal, value: value, collation: collation))
    case .typed(let sort, let anchor):
      let compare = sort.compare
      return .typed(
        _TypedCondition(description: "\(sort.description) == anchor") { record in
          withUnsafePointer(to: anchor) { compare(record, $0) == 0 }
        })
    }
  }

  /// The records that sort strictly after the anchor on `key`, in its direction.
  static func after<Element>(_ key: Key<Element>) -> _FilterNode<Element> {
    switch key {
    case .field(let name, let order, let collation, let value):
      func condition(_ comparison: RequestComparison, _ value: FieldValue) -> _FilterNode<Element> {
        .field(
          _FieldCondition(
            key: name, comparison: comparison, value: value, collation: value == .null ? .binary : collation))
      }
      switch (order, value) {
      // nil sorts first ascending: every value comes after it.
      case (.ascending, .null): return condition(.notEqual, .null)
      case (.ascending, _): return condition(.greaterThan, value)
      // … and last descending: nothing comes after it, and it comes after every value.
      case (.descending, .null): return .constant(false)
      case (.descending, _): return condition(.lessThan, value) || condition(.equal, .null)
      }
    case .typed(let sort, let anchor):
      let compare = sort.compare
      let sign = sort.order == .ascending ? 1 : -1
      return .typed(
        _TypedCondition(description: "\(sort.description) \(sign > 0 ? ">" : "<") anchor") { record in
          withUnsafePointer(to: anchor) { sign * compare(record, $0) > 0 }
        })
    }
  }
}
