extension RequestSet: RandomAccessCollection {
  /// An index into the evaluated result.
  public typealias Index = Int
  /// The result's indices, `0 ..< count`.
  public typealias Indices = Range<Int>

  /// Always 0.
  public var startIndex: Int { 0 }

  /// The number of records; reading it evaluates the set.
  public var endIndex: Int { count }

  /// The number of records in the set.
  ///
  /// ```swift
  /// animals.filter(\.age > 3).count
  /// ```
  /// Counting runs the query once for every read of the set: it keeps which records match
  /// (one bit per record when it scans the whole store, their positions otherwise; never
  /// copies of the records), and iteration, subscripts, `first` and
  /// `last` read those without running the query again. Counting a sorted set does not
  /// sort; the first read that needs the order sorts the matches the count found. When
  /// one index answers the set's only filter exactly (`filter(\.name == k)` with an index
  /// on `name`), counting reads the index alone, and the first read of the records looks
  /// them up in that index.
  /// A bad query stops the program; ``fetchCount()`` throws instead, and a set returned
  /// by ``validated()`` never stops.
  /// - Complexity: O(*n*) the first time (O(log *n*) from an index), O(1) after.
  public var count: Int {
    do {
      return try _cache.count(_source, _query)
    } catch {
      fatalError("\(error)")
    }
  }

  /// Whether the set holds no records; it stops at the first match (see ``exists``).
  /// - Complexity: O(1) by id; otherwise up to O(*n*) until the first match, O(1) once
  ///   the set is counted or evaluated.
  public var isEmpty: Bool { !exists }

  /// The record at `position` in the evaluated result.
  ///
  /// ```swift
  /// let youngest = animals.sortBy(\.age)[0]
  /// ```
  /// A position outside `0..<count` is a programming error: the program stops with a
  /// message that names the position and the count, in debug and release builds alike.
  /// - Complexity: The set's one evaluation the first time (see ``fetch()``), O(1) after.
  public subscript(position: Int) -> Element {
    let e = _evaluated
    // fatalError, not precondition: an optimized build (an app's release build) drops a
    // precondition's message, and this one says which index and how many records.
    guard position >= 0 && position < e.count else {
      fatalError("Index \(position) is out of range: the RequestSet holds \(e.count) records.")
    }
    return e[position]
  }

  /// The first record, or nil when the set is empty.
  ///
  /// On an unevaluated set this does not build the result: an unsorted set stops at the
  /// first match, a sorted one keeps the best record in one pass. It reads the set's
  /// snapshot, so it agrees with any later read of the set.
  /// - Complexity: O(1) for `filter(\.id == v)` (the id map, with no plan); O(*n*) for an
  ///   unsorted scan at worst (it stops at the first match), O(*n*) for a sorted set (one
  ///   pass, no sort), O(1) once the set is evaluated.
  public var first: Element? {
    do {
      return try _fetchFirst()
    } catch {
      fatalError("\(error)")
    }
  }

  /// The last record, or nil when the set is empty; like ``first``, it does not build
  /// the result.
  /// - Complexity: As ``first``.
  public var last: Element? {
    do {
      return try _fetchLast()
    } catch {
      fatalError("\(error)")
    }
  }

  /// Iterates over the evaluated result, evaluating the set first if needed.
  public struct Iterator: IteratorProtocol {
    let _evaluation: _Evaluation<Element>
    var _next = 0

    /// The next record, or nil at the end.
    public mutating func next() -> Element? {
      guard _next < _evaluation.count else { return nil }
      defer { _next += 1 }
      return _evaluation[_next]
    }
  }

  /// Returns an iterator over the records.
  public func makeIterator() -> Iterator { Iterator(_evaluation: _evaluated) }

  /// The number of records: iteration knows it before the first element.
  ///
  /// It evaluates the set, so `Array(set)` runs the query once and then copies the result.
  public var underestimatedCount: Int { _evaluated.count }
}
