import Foundation

// Relevance ranking for full-text search: one BM25 score, the same on every store.
//
// The score of a record for a text condition is the BM25 sum SQLite FTS5's `bm25()` computes
// (k1 = 1.2, b = 0.75, its IDF with its floor), over the condition's terms as written:
//
//   score(D) = Σ_t IDF(t) · tf(t, D) · (k1 + 1) / (tf(t, D) + k1 · (1 − b + b · |D| / avgdl))
//   IDF(t)   = ln((N − n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when that is not positive
//
// - D is the record's words at the condition's keys (all fields together); |D| counts them.
// - tf(t, D) counts the term's occurrences in D: a word, each equal word; a prefix, each word
//   starting with it; a phrase, each position where its words start one after the other
//   within one field.
// - N is the number of records in the store, avgdl their mean |D|, and n(t) the number of
//   records where t occurs: over the whole store, whatever else the set filters.
// - A query's terms are summed as written (a repeated term counts twice), and several text
//   conditions joined with AND add their scores.
//
// The engine computes the score in process on every store, from the words the tokenizer
// finds (see `_TextTokenizer`), so every store ranks alike.

/// The constants of the score.
enum _BM25 {
  static let k1 = 1.2
  static let b = 0.75

  /// FTS5's IDF: ln((N − n + 0.5) / (n + 0.5)), or 1e-6 when that is not positive.
  static func idf(records: Int, containing n: Int) -> Double {
    let value = log((Double(records) - Double(n) + 0.5) / (Double(n) + 0.5))
    return value > 0 ? value : 1e-6
  }

  /// One term's part of the score.
  static func part(idf: Double, tf: Int, length: Int, averageLength: Double) -> Double {
    guard tf > 0 else { return 0 }
    let f = Double(tf)
    let norm = averageLength > 0 ? Double(length) / averageLength : 0
    return idf * f * (k1 + 1) / (f + k1 * (1 - b + b * norm))
  }
}

/// What the score of one text condition needs from the whole store: how many records it
/// holds, how many words they hold at the condition's keys, and in how many records each
/// term occurs.
struct _TextCorpusStatistics: Sendable, Equatable {
  /// N: the records of the store.
  var records = 0
  /// The words of all records at the condition's keys.
  var words = 0
  /// n(t) for each term of the condition's query, in order.
  var containing: [Int]

  init(terms: Int) { containing = Array(repeating: 0, count: terms) }

  /// avgdl: the mean number of words of a record (0 for an empty store).
  var averageLength: Double { records > 0 ? Double(words) / Double(records) : 0 }

  /// Counts one record whose fields (each a list of words) are `fields`.
  mutating func add(_ fields: [[String]], _ query: _TextQuery) {
    records += 1
    for f in fields { words += f.count }
    for (i, term) in query.terms.enumerated() where fields.contains(where: { term.occurs(in: $0) }) {
      containing[i] += 1
    }
  }

  /// The statistics of `condition` over records whose values at its keys `values` reads.
  static func over(
    _ count: Int, _ condition: _TextSearchCondition, values: (Int) throws -> [FieldValue]
  ) rethrows -> _TextCorpusStatistics {
    var stats = _TextCorpusStatistics(terms: condition.query.terms.count)
    for i in 0..<count {
      var fields: [[String]] = []
      for v in try values(i) { _textFields(v, into: &fields) }
      stats.add(fields, condition.query)
    }
    return stats
  }

  /// The statistics of `condition` from a text index on exactly its keys, or nil when the
  /// index is on other keys: N is the snapshot's live records, the words the index's
  /// lengths, and n(t) a posting list's size for a word, the union of the vocabulary's
  /// for a prefix; a phrase's records are those holding all its words in which
  /// `fields(slot)` (the record's words) shows the phrase.
  static func from(
    _ index: _TextIndex, records: Int, _ condition: _TextSearchCondition, fields: (Int) throws -> [[String]]
  ) rethrows -> _TextCorpusStatistics? {
    guard Set(condition.keys) == Set(index.keys), Set(condition.keys).count == condition.keys.count else {
      return nil
    }
    var stats = _TextCorpusStatistics(terms: condition.query.terms.count)
    stats.records = records
    stats.words = index.totalWords
    for (i, term) in condition.query.terms.enumerated() {
      var slots: [Int]? = nil
      for (k, word) in term.words.enumerated() {
        let found = index.slots(word, prefix: term.prefix[k])
        slots = slots.map { _intersectSorted($0, found) } ?? found
      }
      guard let slots else { continue }
      if term.words.count == 1 {
        stats.containing[i] = slots.count
      } else {
        for slot in slots where try fields(slot).contains(where: { term.occurs(in: $0) }) {
          stats.containing[i] += 1
        }
      }
    }
    return stats
  }

  /// The BM25 score of a record whose fields are `fields` (see the top of this file).
  func score(_ fields: [[String]], _ query: _TextQuery) -> Double {
    var length = 0
    for f in fields { length += f.count }
    var score = 0.0
    for (i, term) in query.terms.enumerated() {
      var tf = 0
      for f in fields { tf += term.occurrences(in: f) }
      score += _BM25.part(
        idf: _BM25.idf(records: records, containing: containing[i]), tf: tf, length: length,
        averageLength: averageLength)
    }
    return score
  }
}

/// The relevance sort key: the text conditions whose BM25 scores it adds, found in the
/// query's filters when the set is built, and the store's statistics when a store ran
/// the filter and only its matches are at hand.
@usableFromInline
struct _RelevanceSort: Sendable {
  /// The text conditions of the top-level AND of this stage's filter and the stages
  /// before it: those every record of the stage matched.
  var conditions: [_TextSearchCondition] = []
  /// The whole store's statistics, one per condition, read when the records sorted are
  /// not the whole store (a pushdown store's matches); nil to count them over the
  /// snapshot sorted.
  var statistics: [_TextCorpusStatistics]?

  @usableFromInline init() {}

  /// `relevance DESC (BM25 of "quick fox" in title, body)`; conditions joined by ` + `.
  var description: String {
    guard !conditions.isEmpty else { return "relevance DESC (no text search to score)" }
    return "relevance DESC ("
      + conditions.map { "BM25 of \(FieldValue.string($0.query.text)) in \($0.keys.joined(separator: ", "))" }
      .joined(separator: " + ") + ")"
  }

  /// The error for a relevance sort with no text condition to score.
  static var noSearch: RequestSetError {
    RequestSetError(
      .invalidSort,
      "sortBy(.relevance) ranks records by the full-text search they matched, and this set has none "
        + "joined with AND (a search under OR or NOT gives no score to the records the other side keeps). "
        + "Add filter(matching:) before sortBy(.relevance), or sort by a key.")
  }
}

extension _Stage {
  /// The text conditions of the filter's top-level AND (or the filter itself).
  var andSearches: [_TextSearchCondition] { filter?.andSearches ?? [] }
}

extension _FilterNode {
  /// The text conditions of the node's top-level AND (or the node itself).
  var andSearches: [_TextSearchCondition] {
    let terms: [_FilterNode]
    if case .and(let j) = self { terms = j.terms } else { terms = [self] }
    return terms.compactMap { if case .search(let c) = $0 { return c } else { return nil } }
  }
}

extension _Query {
  /// Points every relevance sort key at the text conditions it scores: the top-level AND
  /// searches of its stage and the stages before (a stage reads only what they kept).
  /// Called by each builder that changes filters or sorts, so the keys carry their
  /// conditions wherever the query later runs (a pushdown store's remainder has lost the
  /// filter the store ran).
  mutating func bindRelevance() {
    var searches: [_TextSearchCondition] = []
    for i in stages.indices {
      searches += stages[i].andSearches
      guard stages[i].sort.contains(where: \.isRelevance) else { continue }
      for j in stages[i].sort.indices {
        guard case .relevance(var r) = stages[i].sort[j] else { continue }
        r.conditions = searches
        r.statistics = nil
        stages[i].sort[j] = .relevance(r)
      }
    }
  }

  /// Whether a stage sorts by relevance.
  var sortsByRelevance: Bool { stages.contains { $0.sort.contains(where: \.isRelevance) } }

  /// The query with every relevance key given the statistics `statistics` finds for a
  /// condition: a pushdown store's whole contents, not the matches it returned.
  func withRelevanceStatistics(
    _ statistics: (_TextSearchCondition) throws -> _TextCorpusStatistics
  ) throws -> _Query {
    var q = self
    for i in q.stages.indices {
      for j in q.stages[i].sort.indices {
        guard case .relevance(var r) = q.stages[i].sort[j], r.statistics == nil else { continue }
        r.statistics = try r.conditions.map(statistics)
        q.stages[i].sort[j] = .relevance(r)
      }
    }
    return q
  }
}

extension _SortKey {
  var isRelevance: Bool { if case .relevance = self { return true } else { return false } }
}

extension _FilterCompiler {
  /// The readers of a text condition's keys by slot, checked as the condition's test
  /// checks them.
  mutating func searchReaders(_ c: _TextSearchCondition) throws -> [(Int) throws -> FieldValue] {
    let fields = try fields()
    var readers: [(Int) throws -> FieldValue] = []
    for key in c.keys {
      if fields.kinds[key] == nil,
        let read = _ExpressionCompiler<Element>(fields: fields).arrayPathReader(key)
      {
        // `members.name` over an array of structs: every element's value, as a condition reads it.
        readers.append(read)
        continue
      }
      try Self.validate(key, value: nil, in: fields)
      readers.append(fields.reader(for: key) ?? { _ in .null })
    }
    return readers
  }

  /// The relevance score of a slot: the BM25 scores of the key's conditions, added. The
  /// statistics are counted over every live record of the snapshot on the first score
  /// asked for, unless the key carries the store's; scores are kept per slot.
  mutating func relevanceScore(_ r: _RelevanceSort) throws -> (Int) throws -> Double {
    guard !r.conditions.isEmpty else { throw _RelevanceSort.noSearch }
    let parts = try r.conditions.map { c in (c, try searchReaders(c)) }
    let snapshot = self.snapshot
    let memo = _RelevanceMemo()
    memo.statistics = r.statistics
    func fields(_ readers: [(Int) throws -> FieldValue], _ slot: Int) throws -> [[String]] {
      var fields: [[String]] = []
      for read in readers { _textFields(try read(slot), into: &fields) }
      return fields
    }
    return { slot in
      if let known = memo.scores[slot] { return known }
      let statistics: [_TextCorpusStatistics]
      if let s = memo.statistics {
        statistics = s
      } else {
        // From the text index when it is on exactly the keys, else from every record.
        let text = snapshot._indexes?.text
        var live: [Int]?
        statistics = try parts.map { c, readers in
          if let text,
            let found = try _TextCorpusStatistics.from(
              text, records: snapshot._liveCount, c, fields: { try fields(readers, $0) })
          {
            return found
          }
          let slots = live ?? snapshot._liveSlots()
          live = slots
          return try _TextCorpusStatistics.over(slots.count, c) { i in try readers.map { try $0(slots[i]) } }
        }
        memo.statistics = statistics
      }
      var score = 0.0
      for (k, (c, readers)) in parts.enumerated() {
        score += statistics[k].score(try fields(readers, slot), c.query)
      }
      memo.scores[slot] = score
      return score
    }
  }
}

/// The statistics and scores one relevance comparison has computed, shared by its calls.
final class _RelevanceMemo {
  var statistics: [_TextCorpusStatistics]?
  var scores: [Int: Double] = [:]
}
