/// An order computed from a set's filter rather than read from a field: see
/// ``RequestSet/sortBy(_:)-(RequestRanking)``.
///
/// ```swift
/// posts.filter(matching: "quick fox").sortBy(.relevance).limit(10)
/// ```
public enum RequestRanking: Sendable, Hashable {
  /// Best match first, by the BM25 score of the set's full-text search: the score SQLite
  /// FTS5's `bm25()` computes, the same on every store.
  case relevance
}

extension RequestSet {
  /// Sorts by relevance to the set's full-text search, best match first.
  ///
  /// The score is BM25 with k1 = 1.2 and b = 0.75, as SQLite FTS5's `bm25()` defines it
  /// (FTS5 returns it negated), summed over the query's terms as written:
  /// `IDF(t) · tf · 2.2 / (tf + 1.2 · (0.25 + 0.75 · |D| / avgdl))` with
  /// `IDF(t) = ln((N − n(t) + 0.5) / (n(t) + 0.5))` (1e-6 when not positive), where `|D|`
  /// is the record's number of words at the searched keys, `tf` the term's occurrences
  /// there (a prefix counts each word it matches, a phrase each place it occurs), and `N`,
  /// `avgdl` and `n(t)` are counted over every record of the store. Several searches
  /// joined with AND add their scores. Every store computes the same score, in process,
  /// from the engine's words.
  ///
  /// Repeated sort calls add tie-breakers (equal scores otherwise keep store order), and a
  /// window after it keeps the top *k*:
  ///
  /// ```swift
  /// try posts.filter(matching: "quick fox").sortBy(.relevance).sortBy("title").limit(10).fetch()
  /// // explain(): sort: relevance DESC (BM25 of "quick fox" in title, body), title ASC (top-k heap, k = 10)
  /// ```
  /// The string key `"@relevance"` is the same sort: `sortBy("@relevance", "title")`.
  ///
  /// - Parameter ranking: ``RequestRanking/relevance``.
  /// - Returns: A new set; evaluating it throws ``RequestSetError`` `.invalidSort` when the
  ///   set has no `filter(matching:)` joined with AND in this stage or a stage before (a
  ///   search only under OR or NOT scores nothing).
  /// - Complexity: O(1) to build. Evaluation finds the statistics in a MemoryStore's or
  ///   LogStore's text index on exactly the searched keys, and otherwise reads the text of
  ///   every record of the store once (a SQL store's records are read once more); then it
  ///   scores the *m* matches and sorts them in O(*m* log *m*), or O(*m* log *k*) with a
  ///   limit.
  public func sortBy(_ ranking: RequestRanking) -> RequestSet {
    _with { $0.addSort([.relevance(_RelevanceSort())]) }
  }
}
