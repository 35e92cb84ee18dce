import Foundation
import RequestSet
import Testing

/// `sortBy(.relevance)`: full-text matches ranked by BM25 on every store, against a
/// reference BM25 written here from the documented definition over a plain array.
@Suite(.ownThreads) struct RelevanceTests {
  typealias Term = TextSearchTests.Term

  // MARK: The reference

  /// How many times a reference term occurs in a field: each start of its words in a row.
  static func occurrences(_ term: Term, in field: [String]) -> Int {
    guard !term.words.isEmpty, field.count >= term.words.count else { return 0 }
    var found = 0
    for start in 0...(field.count - term.words.count) {
      var ok = true
      for (k, w) in term.words.enumerated() {
        let token = field[start + k]
        let last = k == term.words.count - 1
        if last && term.lastIsPrefix ? !token.hasPrefix(w) : token != w {
          ok = false
          break
        }
      }
      if ok { found += 1 }
    }
    return found
  }

  /// The documented BM25 of every document of `docs` for a query's terms at `keys`
  /// (k1 = 1.2, b = 0.75, FTS5's IDF with its 1e-6 floor; statistics over all of `docs`),
  /// and whether it matches.
  static func scores(_ docs: [Article], _ terms: [Term], keys: [String]) -> [(score: Double, matches: Bool)] {
    let fields: [[[String]]] = docs.map { a in
      var f: [[String]] = []
      if keys.contains("title") { f.append(TextSearchTests.words(a.title)) }
      if keys.contains("body") { f.append(TextSearchTests.words(a.body)) }
      if keys.contains("labels") { f += a.labels.map(TextSearchTests.words) }
      return f
    }
    let n = Double(docs.count)
    let lengths = fields.map { $0.reduce(0) { $0 + $1.count } }
    let avgdl = Double(lengths.reduce(0, +)) / n
    let counts = fields.map { f in terms.map { t in f.reduce(0) { $0 + occurrences(t, in: $1) } } }
    let idf = terms.indices.map { t -> Double in
      let containing = Double(counts.filter { $0[t] > 0 }.count)
      let v = log((n - containing + 0.5) / (containing + 0.5))
      return v > 0 ? v : 1e-6
    }
    return docs.indices.map { d in
      var score = 0.0
      for t in terms.indices where counts[d][t] > 0 {
        let tf = Double(counts[d][t])
        score += idf[t] * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * Double(lengths[d]) / avgdl))
      }
      return (score, counts[d].allSatisfy { $0 > 0 })
    }
  }

  /// Whether two scores are equal but for rounding.
  static func near(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 1e-9 * max(1, abs(a), abs(b)) }

  /// Checks that `found` (ids) is a ranking of the reference: the same scores, position by
  /// position, as the reference's best-first order with ties in id order, windowed; so
  /// records whose scores differ only by rounding may trade places.
  static func expectRanked(
    _ found: [Int], _ reference: [(score: Double, matches: Bool)], window: Range<Int>? = nil,
    _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let ranked = reference.indices.filter { reference[$0].matches }.sorted {
      reference[$0].score != reference[$1].score ? reference[$0].score > reference[$1].score : $0 < $1
    }
    let range = window.map { $0.clamped(to: 0..<ranked.count) } ?? 0..<ranked.count
    let want = Array(ranked[range])
    #expect(found.count == want.count, comment, sourceLocation: sourceLocation)
    for (f, w) in zip(found, want) where !near(reference[f - 1].score, reference[w].score) {
      Issue.record(
        "\(comment): id \(f) scored \(reference[f - 1].score), wanted \(reference[w].score) (id \(w + 1))",
        sourceLocation: sourceLocation)
      return
    }
    for f in found where !reference[f - 1].matches {
      Issue.record("\(comment): id \(f) does not match", sourceLocation: sourceLocation)
    }
  }

  // MARK: Tests

  @Test func theReferenceFollowsTheDefinition() {
    // Two documents, one word each "fox" / "dog": N = 2, avgdl = 1, n(fox) = 1, so
    // IDF = ln(1.5 / 1.5) = 0 → 1e-6, and the score is 1e-6 · 2.2 / 2.2.
    let docs = [
      Article(id: 1, title: "", body: "fox", labels: [], rank: 0),
      Article(id: 2, title: "", body: "dog", labels: [], rank: 0),
    ]
    let s = Self.scores(docs, [Term(words: ["fox"])], keys: ["body"])
    #expect(Self.near(s[0].score, 1e-6) && s[0].matches && !s[1].matches)
    #expect(Self.occurrences(Term(words: ["a", "b"]), in: ["a", "b", "a", "b"]) == 2)
    #expect(Self.occurrences(Term(words: ["qu"], lastIsPrefix: true), in: ["quick", "quack", "q"]) == 2)
  }

  @Test(arguments: StoreKind.withSQL)
  func randomQueriesRankAsTheReference(_ kind: StoreKind) async throws {
    // REQUESTSET_SOAK=1: 1,500 documents (3,000 took as long as the searches' own soak).
    let docs = TextSearchTests.articles(count: TestScale.pick(quick: 300, soak: 1_500), seed: 3801)
    let set = try TextSearchTests.makeSet(kind, docs)
    var g = SeededRandom(seed: 38_038)
    var (checked, ranked) = (0, 0)
    for i in 0..<TestScale.pick(quick: 40, soak: 200) {
      let (text, terms) = TextSearchTests.query(&g, docs: docs)
      let keys = Bool.random(using: &g) ? ["title", "body"] : ["body"]
      let offset = Int.random(in: 0..<4, using: &g)
      let limit = Int.random(in: 1..<12, using: &g)
      guard TestScale.checks(i, on: kind) else { continue }
      let reference = Self.scores(docs, terms, keys: keys)
      checked += 1
      if reference.filter(\.matches).count > 1 { ranked += 1 }
      let all = set.filter(matching: text, in: keys).sortBy(.relevance)
      Self.expectRanked(try all.ids(), reference, "\(kind): \(text) in \(keys)")
      Self.expectRanked(
        try all.offset(offset).limit(limit).ids(), reference, window: offset..<(offset + limit),
        "\(kind): \(text) in \(keys), offset \(offset) limit \(limit)")
      if i % 4 == 0 {
        #expect(try await all.async.ids() == (try all.ids()), "\(kind): \(text)")
        // Another filter joined with AND keeps the store's statistics.
        let filtered = try set.filter(\.rank >= 5).filter(matching: text, in: keys).sortBy(.relevance).ids()
        let kept = Set(docs.filter { $0.rank >= 5 }.map(\.id))
        Self.expectRanked(
          filtered, reference.enumerated().map { ($1.score, $1.matches && kept.contains($0 + 1)) },
          "\(kind): \(text) with rank >= 5")
      }
    }
    // Enough queries rank several records to tell a ranking from store order.
    #expect(ranked * 3 > checked, "\(ranked) of \(checked) queries ranked several records")
  }

  @Test(arguments: StoreKind.writableWithSQL)
  func theStatisticsFollowWrites(_ kind: StoreKind) throws {
    // MemoryStore's and LogStore's text index keeps each record's number of words for the
    // statistics: saves, deletes and a log's compaction must keep them exact.
    var docs = TextSearchTests.articles(count: 150, seed: 3805)
    let store = try kind.makeStore(of: Article.self)
    try store.insert(contentsOf: docs)
    try TextSearchTests.createTextIndex(store, ["title", "body"])
    var g = SeededRandom(seed: 3806)
    for round in 0..<6 {
      for _ in 0..<20 {
        let i = Int.random(in: 0..<docs.count, using: &g)
        if Bool.random(using: &g) {
          docs[i].body = TextSearchTests.text(Int.random(in: 0...12, using: &g), &g)
          try store.save(docs[i])
        } else if docs.count > 20 {
          _ = try store.delete(id: docs[i].id)
          docs.remove(at: i)
        }
      }
      if round == 3, let log = store as? LogStore<Article> { try log.compact() }
      let set = RequestSet(store)
      for _ in 0..<4 {
        let (text, terms) = TextSearchTests.query(&g, docs: docs)
        let reference = Self.scores(docs, terms, keys: ["title", "body"])
        let found = try set.filter(matching: text, in: ["title", "body"]).sortBy(.relevance).ids()
        // The reference numbers documents by position; the store's ids are not positions now.
        let position = Dictionary(uniqueKeysWithValues: docs.enumerated().map { ($1.id, $0 + 1) })
        Self.expectRanked(found.map { position[$0]! }, reference, "\(kind) round \(round): \(text)")
      }
    }
  }

  @Test func aLiveRankingReadsAgainOnEveryWrite() async throws {
    // A write changes the statistics every score reads: merging an insert into the held
    // result alone would score it over those records only. Over the whole store (avgdl
    // 27) the record with "fox" twice ranks first; over the held records and the insert
    // alone (avgdl 8/3) it would rank last.
    let store = MemoryStore<Article>()
    let filler = Array(repeating: "cat", count: 100).joined(separator: " ")
    try store.insert(contentsOf: [
      Article(id: 1, title: "", body: "fox", labels: [], rank: 0),
      Article(id: 2, title: "", body: "fox fox w w w w", labels: [], rank: 0),
      Article(id: 3, title: "", body: filler, labels: [], rank: 0),
    ])
    let reader = StateReader(RequestSet(store).filter(matching: "fox", in: ["body"]).sortBy(.relevance))
    #expect(try await reader.next()?.ids == [2, 1])
    try store.insert(Article(id: 4, title: "", body: "fox", labels: [], rank: 0))
    #expect(try await reader.next()?.ids == [2, 1, 4])
  }

  @Test(arguments: StoreKind.withSQL)
  func labelsPhrasesAndCJKRankAsTheReference(_ kind: StoreKind) throws {
    var docs = TextSearchTests.articles(count: 120, seed: 3802)
    // Repeated words: term frequency matters.
    docs[0].body = "fox fox fox dog"
    docs[1].body = "fox dog"
    docs[2].labels = ["quick fox", "quick", "fox quick"]
    docs[3].body = "東京 東京 大阪"
    let set = try TextSearchTests.makeSet(kind, docs)
    let queries: [(String, [Term])] = [
      ("fox", [Term(words: ["fox"])]),
      ("fox dog", [Term(words: ["fox"]), Term(words: ["dog"])]),
      ("\"quick fox\"", [Term(words: ["quick", "fox"])]),
      ("qu*", [Term(words: ["qu"], lastIsPrefix: true)]),
      ("東京", [Term(words: ["東", "京"])]),
      ("CAFÉ cafe", [Term(words: ["cafe"]), Term(words: ["cafe"])]),
    ]
    for (text, terms) in queries {
      for keys in [["body"], ["title", "body", "labels"], ["labels"]] {
        let found = try set.filter(matching: text, in: keys).sortBy(.relevance).ids()
        Self.expectRanked(found, Self.scores(docs, terms, keys: keys), "\(kind): \(text) in \(keys)")
      }
    }
  }

  @Test(arguments: StoreKind.withSQL)
  func laterSortKeysBreakTies(_ kind: StoreKind) throws {
    // Records 1…6 hold the same text, so they score alike; rank then id order them.
    let docs = (1...8).map { id in
      Article(
        id: id, title: "", body: id <= 6 ? "quick brown fox" : "slow dog", labels: [],
        rank: [3, 1, 3, 2, 1, 3, 0, 0][id - 1])
    }
    let set = try TextSearchTests.makeSet(kind, docs)
    let ranked = set.filter(matching: "fox", in: ["body"]).sortBy(.relevance)
    #expect(try ranked.ids() == [1, 2, 3, 4, 5, 6], "\(kind): ties keep store order")
    #expect(try ranked.sortBy(\.rank, order: .descending).ids() == [1, 3, 6, 4, 2, 5], "\(kind)")
    #expect(try ranked.sortBy(\.rank).limit(3).ids() == [2, 5, 4], "\(kind)")
    // The string form.
    #expect(
      try set.filter(matching: "fox", in: ["body"]).sortBy("@relevance", "-rank").ids() == [1, 3, 6, 4, 2, 5])
    // A record with more of the query ranks above.
    let store = try kind == .array ? nil : kind.makeStore(of: Article.self)
    if let store {
      try store.insert(contentsOf: docs)
      try store.insert(Article(id: 9, title: "", body: "fox fox", labels: [], rank: 0))
      #expect(try RequestSet(store).filter(matching: "fox", in: ["body"]).sortBy(.relevance).ids().first == 9)
    }
  }

  @Test(arguments: StoreKind.withSQL)
  func aSetWithNoSearchToScoreThrows(_ kind: StoreKind) async throws {
    let set = try TextSearchTests.makeSet(kind, TextSearchTests.articles(count: 20, seed: 3803))
    let cases: [RequestSet<Article>] = [
      set.sortBy(.relevance),
      set.filter(\.rank > 2).sortBy(.relevance),
      set.filter(.matching("fox", in: ["body"]) || \.rank == 2).sortBy(.relevance),
      set.filter(!.matching("fox", in: ["body"])).sortBy(.relevance),
      // An OR written after the sort makes the search one side of it.
      set.filter(matching: "fox", in: ["body"]).sortBy(.relevance).filter(\.rank == 2, mode: .or),
    ]
    for ranked in cases {
      let error = #expect(throws: RequestSetError.self, "\(kind)") { try ranked.fetch() }
      #expect(error?.code == .invalidSort)
      #expect(
        error?.message
          == "sortBy(.relevance) ranks records by the full-text search they matched, and this set has none "
          + "joined with AND (a search under OR or NOT gives no score to the records the other side keeps). "
          + "Add filter(matching:) before sortBy(.relevance), or sort by a key.")
      await #expect(throws: RequestSetError.self) { try await ranked.async.fetch() }
    }
    // A ranking has no stored value to page after: read it in windows instead.
    if kind != .array {
      let paged = set.filter(matching: "fox", in: ["body"]).sortBy(.relevance).page(after: nil, size: 5)
      let pageError = #expect(throws: RequestSetError.self, "\(kind)") { try paged.fetch() }
      #expect(pageError?.code == .invalidPage)
    }
    // A search written after the sort, or in a stage before, is scored.
    _ = try set.sortBy(.relevance).filter(matching: "fox", in: ["body"]).fetch()
    _ = try set.filter(matching: "fox", in: ["body"]).limit(5).sortBy(.relevance).fetch()
  }

  @Test func explainNamesTheScore() throws {
    let store = MemoryStore<Article>()
    try store.insert(contentsOf: TextSearchTests.articles(count: 20, seed: 3804))
    try store.createTextIndex("title", "body")
    let set = RequestSet(store).filter(matching: "quick fox").sortBy(.relevance).sortBy("title").limit(10)
    #expect(
      set.explain().contains(
        #"sort: relevance DESC (BM25 of "quick fox" in title, body), title ASC (top-k heap, k = 10)"#),
      "\(set.explain())")
    let sqlite = try StoreKind.indexedSQLite.makeStore(of: Article.self)
    let pushed = RequestSet(sqlite).filter(matching: "fox", in: ["body"]).sortBy(.relevance).limit(3)
    #expect(
      pushed.explain().contains(
        #"in process: sort relevance DESC (BM25 of "fox" in body) (relevance is scored in process: BM25 over the store's word counts, read with one more query)"#
      ), "\(pushed.explain())")
  }
}
