extension RequestSet where Element: Record {
  /// The first page of the set in keyset order: at most `size` records, in the set's sort
  /// order with ties broken by `id`.
  ///
  /// Read the next page with ``page(after:size:)``, passing the last record of this one.
  ///
  /// ```swift
  /// let byAge = RequestSet(store).sortBy(\.age, order: .descending)
  /// var page = try byAge.page(size: 50).fetch()
  /// while let last = page.last {
  ///   show(page)
  ///   page = try byAge.page(after: last, size: 50).fetch()
  /// }
  /// ```
  /// - Parameter size: The most records a page holds: 0 or more.
  /// - Returns: A lazy set of at most `size` records; see ``page(after:size:)``.
  /// - Complexity: O(1) to build; see ``page(after:size:)``.
  public func page(size: Int) -> RequestSet {
    page(after: nil, size: size)
  }

  /// The page of at most `size` records that follows `anchor` in the set's order, with
  /// ties broken by `id`: keyset (cursor) pagination, as Django REST's `CursorPagination`.
  ///
  /// The page's order is the sort the set already has, then `id` ascending, so records
  /// never tie and pages follow each other without gap or overlap. A page is "the records
  /// after the anchor" — a filter on the anchor's sort-key values, not an offset — so
  /// records inserted or deleted between two pages move nothing: a walk from
  /// `page(size:)` to the last page reads every record that was stored for the whole walk
  /// exactly once (records written during the walk appear, or not, by where they sort).
  /// The anchor need not be stored any more: the page reads only its values.
  ///
  /// The page is an ordinary set, lazy and evaluated once: count it, read it `.async`, or
  /// `explain()` it. The filter is ordinary conditions, so SQL stores run it in their
  /// `WHERE` clause:
  ///
  /// ```swift
  /// let bySpecies = RequestSet(store).sortBy("species").sortBy(\.age, order: .descending)
  /// print(bySpecies.page(after: rex, size: 50).explain())   // rex: a Dog of 5, id 3
  /// // filter: species > "Dog" OR (species == "Dog" AND (age < 5 OR age == nil))
  /// //   OR (species == "Dog" AND age == 5 AND id > 3)
  /// // sort: species ASC, \Animal.age DESC, id ASC
  /// // window: limit 50
  /// ```
  ///
  /// Each key compares as the sort does: nil before every value ascending and after every
  /// value descending, strings with the key's collation. A typed key path whose property
  /// is stored under a key compares in the store; one that has none (a sort with a
  /// collation, a `SortDescriptor` on a `String`) compares with the sort's own comparison,
  /// in process. A key must hold values of one kind (numbers, strings, Bools…, or nil),
  /// as a property of a `Codable` struct does, and no NaN: a record whose value is of
  /// another kind than the anchor's, or NaN, is left out of the pages after the anchor.
  ///
  /// - Parameters:
  ///   - anchor: The last record of the page before, or nil for the first page.
  ///   - size: The most records a page holds: 0 or more.
  /// - Returns: A lazy set of at most `size` records. Evaluating it throws
  ///   ``RequestSetError`` `.invalidWindow` for a negative `size`, and `.invalidPage` when
  ///   the set has a window, `reversed()` or `distinct` after its sort (page first, then
  ///   narrow the page), or sorts by a key that walks a relation (sort by a field of the
  ///   record itself instead).
  /// - Complexity: O(*k*²) to build for *k* sort keys; evaluation costs what any filtered,
  ///   sorted set with a limit costs (a top-*k* sort in process, `ORDER BY … LIMIT` in SQL).
  public func page(after anchor: Element?, size: Int) -> RequestSet {
    guard size >= 0 else {
      return _with {
        $0.invalidate(.invalidWindow("page(after:size: \(size))", size, allowed: "a size of 0 or more"))
      }
    }
    return _with { query in
      let stage = query.stages[query.stages.count - 1]
      guard !stage.window.isSet, !stage.reversed, stage.distinct == nil else {
        let what = stage.window.isSet ? "limit(_:) or offset(_:)" : stage.reversed ? "reversed()" : "distinct"
        query.invalidate(
          RequestSetError(
            .invalidPage,
            "page(after:size:) pages the set's sort, but the set has \(what) after it. "
              + "Call page(after:size:) on the sorted set, then narrow the page it returns."))
        return
      }
      do {
        let keys = try _Keyset.keys(stage.sort, anchor: anchor, graph: query.graph)
        if anchor != nil { query.addFilter(_Keyset.after(keys), mode: .and) }
        query.addSort([.field(key: _Keyset.idKey, order: .ascending, collation: .binary)])
        query.limit(size)
      } catch let error as RequestSetError {
        query.invalidate(error)
      } catch {
        query.invalidate(
          RequestSetError(.encodingFailed, "page(after:size:) could not encode its anchor: \(error)"))
      }
    }
  }
}
