import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
import Synchronization
import Testing

/// A document for full-text search: two text fields, a list of labels and a number to mix
/// other filters with.
struct Article: Record {
  var id: Int
  var title: String
  var body: String
  var labels: [String]
  var rank: Int
}

/// Full-text search (`filter(matching:in:)`, `MATCHES[fts]`, triplets) on every store,
/// against a reference tokenizer and matcher written here from the documented rules,
/// independently of the library's.
@Suite(.ownThreads) struct TextSearchTests {
  // MARK: The reference

  /// The documented folding: case, then diacritics (combining marks U+0300–U+036F after
  /// canonical decomposition), recomposed.
  static func fold(_ text: String) -> String {
    let decomposed = text.lowercased().decomposedStringWithCanonicalMapping
    var kept = String.UnicodeScalarView()
    for scalar in decomposed.unicodeScalars where !(0x300...0x36F).contains(scalar.value) {
      kept.append(scalar)
    }
    return String(kept).precomposedStringWithCanonicalMapping
  }

  /// Han, Hiragana, Katakana and Hangul: the scripts the test documents use.
  static func isCJK(_ c: Character) -> Bool {
    guard let v = c.unicodeScalars.first?.value else { return false }
    return (0x3040...0x30FF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xAC00...0xD7AF).contains(v)
  }

  /// The documented words of a text: runs of letters and digits; a CJK character alone.
  static func words(_ text: String) -> [String] {
    if let known = wordsOfTexts.withLock({ $0[text] }) { return known }
    let found = tokenize(text)
    wordsOfTexts.withLock { $0[text] = found }
    return found
  }

  /// The words of each text tokenized so far. The random-query tests read every document's
  /// words again for each query: without this, three quarters of `RelevanceTests`' soak
  /// time went to tokenizing the same documents (perf, 2026-12-07).
  private static let wordsOfTexts = Mutex<[String: [String]]>([:])

  /// The reference tokenizer itself; `words(_:)` remembers its answers.
  private static func tokenize(_ text: String) -> [String] {
    var out: [String] = []
    var current = ""
    for c in fold(text) {
      if isCJK(c) {
        if !current.isEmpty { out.append(current) }
        current = ""
        out.append(String(c))
      } else if c.isLetter || c.isNumber {
        current.append(c)
      } else {
        if !current.isEmpty { out.append(current) }
        current = ""
      }
    }
    if !current.isEmpty { out.append(current) }
    return out
  }

  /// A reference term: words in a row, the last one maybe a prefix.
  struct Term {
    var words: [String]
    var lastIsPrefix = false

    func occurs(in field: [String]) -> Bool {
      guard !words.isEmpty, field.count >= words.count else { return false }
      for start in 0...(field.count - words.count) {
        var ok = true
        for (k, w) in words.enumerated() {
          let token = field[start + k]
          let last = k == words.count - 1
          if last && lastIsPrefix ? !token.hasPrefix(w) : token != w {
            ok = false
            break
          }
        }
        if ok { return true }
      }
      return false
    }
  }

  /// Whether `article` matches every term in one of `keys`.
  static func matches(_ article: Article, _ terms: [Term], keys: [String]) -> Bool {
    var fields: [[String]] = []
    for key in keys {
      switch key {
      case "title": fields.append(words(article.title))
      case "body": fields.append(words(article.body))
      case "labels": fields += article.labels.map(words)
      default: Issue.record("no key \(key)")
      }
    }
    return terms.allSatisfy { term in fields.contains { term.occurs(in: $0) } }
  }

  // MARK: Documents and queries

  static let latin = [
    "café", "crème", "naïve", "façade", "über", "señor", "piñata", "résumé", "jalapeño", "déjà", "vu",
    "quick",
    "brown", "fox", "jumps", "lazy", "dog", "Zoë", "Ångström", "smörgåsbord", "coöperate", "élan", "2024",
    "v2",
  ]
  static let cyrillic = [
    "ёлка", "йогурт", "привет", "мир", "Москва", "поиск", "текст", "слово", "быстрый", "лиса", "Ёж", "чай",
    "ещё",
  ]
  static let cjk = ["東京", "京都", "大阪", "日本語", "検索", "ひらがな", "カタカナ", "한국어", "서울", "中文", "全文", "東"]
  static let separators = [" ", " ", " ", ", ", ". ", "-", "! ", " (", ") ", "'", " — ", "\n"]

  /// A word in a random case: as written, upper-cased or capitalized.
  static func cased(_ word: String, _ g: inout SeededRandom) -> String {
    switch Int.random(in: 0..<4, using: &g) {
    case 0: return word.uppercased()
    case 1: return word.prefix(1).uppercased() + word.dropFirst()
    default: return word
    }
  }

  static func randomWord(_ g: inout SeededRandom) -> String {
    switch Int.random(in: 0..<10, using: &g) {
    case 0..<5: return latin.randomElement(using: &g)!
    case 5..<8: return cyrillic.randomElement(using: &g)!
    default: return cjk.randomElement(using: &g)!
    }
  }

  /// Text of `count` words in the three scripts, joined by punctuation, CJK words now and
  /// then with nothing between them and the next word.
  static func text(_ count: Int, _ g: inout SeededRandom) -> String {
    var out = ""
    var previousCJK = false
    for i in 0..<count {
      let word = cased(randomWord(&g), &g)
      let isCJK = word.first.map(Self.isCJK) ?? false
      if i > 0 {
        out += (isCJK || previousCJK) && Bool.random(using: &g) ? "" : separators.randomElement(using: &g)!
      }
      out += word
      previousCJK = isCJK
    }
    return out
  }

  static func articles(count: Int, seed: UInt64) -> [Article] {
    var g = SeededRandom(seed: seed)
    return (1...count).map { id in
      Article(
        id: id, title: text(Int.random(in: 1...5, using: &g), &g),
        body: text(Int.random(in: 3...20, using: &g), &g),
        labels: (0..<Int.random(in: 0...2, using: &g)).map { _ in text(Int.random(in: 1...2, using: &g), &g)
        },
        rank: Int.random(in: 0..<10, using: &g))
    }
  }

  /// A random query (its text, and its terms for the reference): single words, several,
  /// phrases taken from a document, prefixes, words written without their diacritics or
  /// in another case, and words no document holds.
  static func query(_ g: inout SeededRandom, docs: [Article]) -> (text: String, terms: [Term]) {
    var parts: [String] = []
    var terms: [Term] = []
    for _ in 0..<Int.random(in: 1...3, using: &g) {
      switch Int.random(in: 0..<6, using: &g) {
      case 0, 1:
        let w = cased(randomWord(&g), &g)
        parts.append(w)
        terms.append(Term(words: words(w)))
      case 2:
        // Without diacritics: folding makes them equal.
        let w = fold(randomWord(&g))
        parts.append(w)
        terms.append(Term(words: words(w)))
      case 3:
        // A phrase of two or three words in a row from some document's body.
        let doc = words(docs.randomElement(using: &g)!.body)
        let n = min(doc.count, Int.random(in: 2...3, using: &g))
        let start = Int.random(in: 0...(doc.count - n), using: &g)
        let phrase = Array(doc[start..<(start + n)])
        parts.append("\"" + phrase.joined(separator: " ") + "\"")
        terms.append(Term(words: phrase))
      case 4:
        // A prefix of a Latin or Cyrillic word.
        let w = fold(
          Bool.random(using: &g) ? latin.randomElement(using: &g)! : cyrillic.randomElement(using: &g)!)
        let p = String(w.prefix(Int.random(in: 1...3, using: &g)))
        parts.append(p + "*")
        terms.append(Term(words: words(p), lastIsPrefix: true))
      default:
        let w = ["zebra", "кот", "猫", "missing"].randomElement(using: &g)!
        parts.append(w)
        terms.append(Term(words: words(w)))
      }
    }
    return (parts.joined(separator: " "), terms)
  }

  /// A store of `kind` holding `docs`, with a text index on title and body where the kind
  /// indexes; or the array set.
  static func makeSet(_ kind: StoreKind, _ docs: [Article]) throws -> RequestSet<Article> {
    if kind == .array { return RequestSet(docs) }
    let store = try kind.makeStore(of: Article.self)
    try store.insert(contentsOf: docs)
    if [.indexedMemory, .indexedLog, .indexedSQLite, .postgres].contains(kind) {
      try createTextIndex(store, ["title", "body"])
    }
    return RequestSet(store)
  }

  /// `createTextIndex` on whichever store it is.
  static func createTextIndex(_ store: any RecordStore<Article>, _ keys: [String]) throws {
    if let s = store as? MemoryStore<Article> { try s.createTextIndex(keys) }
    if let s = store as? LogStore<Article> { try s.createTextIndex(keys) }
    if let s = store as? SQLiteStore<Article> { try s.createTextIndex(keys) }
    if let s = store as? PostgresStore<Article> { try s.createTextIndex(keys) }
  }

  // MARK: Tests

  @Test func referenceWordsFollowTheRules() {
    #expect(Self.words("Café au LAIT, déjà-vu!") == ["cafe", "au", "lait", "deja", "vu"])
    #expect(Self.words("Ёлка йогурт") == ["елка", "иогурт"])
    #expect(Self.words("東京タワー") == ["東", "京", "タ", "ワ", "ー"])
  }

  /// Searches without a text index, on six threads at once over one store, each find what
  /// the reference finds: every thread splits the texts into words with a memo of its own,
  /// and more texts than one memo keeps (``memoLimit``) make each forget and split again.
  @Test func searchesOnManyThreadsAtOnceAnswerAsTheReference() throws {
    let docs = Self.articles(count: 500, seed: 0x7E17)
    let store = MemoryStore<Article>()
    try store.insert(contentsOf: docs)
    let fields = docs.map { (title: Self.words($0.title), body: Self.words($0.body)) }
    var g = SeededRandom(seed: 0x7E18)
    let queries = (0..<12).map { _ in Self.query(&g, docs: docs) }
    let wanted = queries.map { q in
      docs.indices.filter { i in
        q.terms.allSatisfy { $0.occurs(in: fields[i].title) || $0.occurs(in: fields[i].body) }
      }.map { docs[$0].id }
    }
    // Distinct texts enough to fill a thread's memo more than once between the searches.
    let filler = (0..<17_000).map { "filler \($0) text" }
    let found = _Locked(Array(repeating: [[Int]](), count: 6))
    DispatchQueue.concurrentPerform(iterations: 6) { thread in
      var answers: [[Int]] = []
      for (n, q) in queries.enumerated() {
        if n == 6 && thread < 2 {
          _ = try? RequestSet(filler.enumerated().map { Article(id: $0, title: $1, body: "", labels: [], rank: 0) })
            .filter(matching: "text", in: ["title"]).fetch().count
        }
        answers.append((try? RequestSet(store).filter(matching: q.text, in: ["title", "body"]).sortBy(\.id).fetch().map(\.id)) ?? [-1])
      }
      found.withLock { $0[thread] = answers }
    }
    for (thread, answers) in found.withLock({ $0 }).enumerated() {
      #expect(answers == wanted, "thread \(thread)")
    }
    #expect(wanted.filter { !$0.isEmpty }.count > 4, "the queries find records")
  }

  @Test(arguments: StoreKind.withSQL)
  func randomQueriesMatchTheReference(_ kind: StoreKind) async throws {
    // REQUESTSET_SOAK=1 runs 2,000 documents and 300 queries per store. (5,000 took 250 to
    // 300 s per store in a debug build, the most of any suite in CI, where the stores
    // without a text index split and compare every document's words for every query; the
    // issue's 10,000 documents take far longer. The number of queries is the issue's.)
    let docs = Self.articles(count: TestScale.pick(quick: 400, soak: 2_000), seed: 38)
    let set = try Self.makeSet(kind, docs)
    // The reference's words of each document, found once.
    let fields = docs.map { (title: Self.words($0.title), body: Self.words($0.body)) }
    func expected(_ terms: [Term], _ keys: [String], also: (Article) -> Bool = { _ in false }) -> [Int] {
      docs.indices.filter { i in
        also(docs[i])
          || terms.allSatisfy { term in
            term.occurs(in: fields[i].body) || (keys.contains("title") && term.occurs(in: fields[i].title))
          }
      }.map { docs[$0].id }
    }
    var g = SeededRandom(seed: 3838)
    let queries = TestScale.pick(quick: 60, soak: 300)
    var (checked, nonEmpty) = (0, 0)
    for i in 0..<queries {
      let (text, terms) = Self.query(&g, docs: docs)
      let keys = Bool.random(using: &g) ? ["title", "body"] : ["body"]
      let rank = Int.random(in: 0..<10, using: &g)
      guard TestScale.checks(i, on: kind) else { continue }
      let want = expected(terms, keys)
      checked += 1
      if !want.isEmpty { nonEmpty += 1 }
      let found = try set.filter(matching: text, in: keys).sortBy(\.id).fetch().map(\.id)
      #expect(found == want, "\(kind): \(text) in \(keys)")
      // With another filter, joined by AND and by OR (every fifth query at the soak's scale).
      guard !TestScale.soak || i % 5 == 0 else { continue }
      let anded = try set.filter(matching: text, in: keys).filter(\.rank >= rank).sortBy(\.id).fetch().map(
        \.id)
      let wanted = Set(want)
      #expect(
        anded == docs.filter { $0.rank >= rank && wanted.contains($0.id) }.map(\.id), "\(kind): \(text)")
      let ored = try set.filter(.matching(text, in: keys) || \.rank == rank).sortBy(\.id).fetch().map(\.id)
      #expect(ored == expected(terms, keys, also: { $0.rank == rank }), "\(kind): \(text)")
      if i % 10 == 0 {
        let count = try await set.filter(matching: text, in: keys).async.fetchCount()
        #expect(count == want.count)
      }
    }
    // The queries find something often enough to tell the stores apart.
    #expect(nonEmpty * 3 > checked, "\(nonEmpty) of \(checked) queries found records")
  }

  @Test(arguments: StoreKind.withSQL)
  func formatStringAndTripletsAgreeWithTheFilter(_ kind: StoreKind) throws {
    let docs = Self.articles(count: 200, seed: 7)
    let set = try Self.makeSet(kind, docs)
    for text in ["café", "CAFE lait", "\"quick brown\"", "jal*", "東京", "ёлка"] {
      let expected = try set.filter(matching: text, in: ["body"]).sortBy(\.id).fetch().map(\.id)
      let formatted = try set.filter("body MATCHES[fts] %@", text).sortBy(\.id).fetch().map(\.id)
      #expect(formatted == expected, "\(kind) \(text)")
      let triplets = try set.filter(where: ["body", "matches[fts]", text]).sortBy(\.id).fetch().map(\.id)
      #expect(triplets == expected, "\(kind) \(text)")
    }
    let combined = try set.filter("body MATCHES[fts] 'cafe' OR rank == 3").sortBy(\.id).fetch().map(\.id)
    #expect(
      combined
        == docs.filter { $0.rank == 3 || Self.matches($0, [Term(words: ["cafe"])], keys: ["body"]) }.map(\.id)
    )
  }

  @Test func arraysOfStringsAreSearchedElementByElement() throws {
    let docs = [
      Article(id: 1, title: "", body: "", labels: ["quick", "fox"], rank: 0),
      Article(id: 2, title: "", body: "", labels: ["quick fox"], rank: 0),
    ]
    for kind in StoreKind.withSQL {
      let set = try Self.makeSet(kind, docs)
      #expect(try set.filter(matching: "quick fox", in: "labels").ids() == [1, 2], "\(kind)")
      #expect(try set.filter(matching: "\"quick fox\"", in: "labels").ids() == [2], "\(kind)")
    }
  }

  @Test(arguments: StoreKind.withSQL)
  func badQueriesThrowATypedError(_ kind: StoreKind) throws {
    let set = try Self.makeSet(kind, Self.articles(count: 20, seed: 1))
    for text in ["", "   ", "!!! ,,, --", "\"\"", "*"] {
      let error = #expect(throws: RequestSetError.self) {
        try set.filter(matching: text, in: ["body"]).fetch()
      }
      #expect(error?.code == .invalidFormat)
      #expect(error?.message.contains("has no word to search for") == true)
    }
    // An unclosed quote runs to the end of the query.
    let open = try set.filter(matching: "\"quick brown", in: ["body"]).sortBy(\.id).fetch().map(\.id)
    #expect(
      open == (try set.filter(matching: "\"quick brown\"", in: ["body"]).sortBy(\.id).fetch().map(\.id)))
    let formatError = #expect(throws: RequestSetError.self) {
      try set.filter("body MATCHES[fts] '?!'").fetch()
    }
    #expect(formatError?.code == .invalidFormat)
    let unknown = #expect(throws: RequestSetError.self) {
      try set.filter(matching: "fox", in: ["nope"]).fetch()
    }
    #expect(unknown?.code == .unknownKey)
  }

  @Test func formatStringMistakesSayWhatAndHow() throws {
    let set = RequestSet(Self.articles(count: 5, seed: 2))
    let cases: [(String, String)] = [
      (
        "title ==[fts] 'fox'",
        #"[fts] goes only after MATCHES, with no other option or quantifier at offset 6, near "title ==[fts] 'fox'". Write title MATCHES[fts] 'quick fox'."#
      ),
      (
        "title MATCHES[fts] 5",
        #"MATCHES[fts] needs the words to search for as text but found "5" at offset 19, near "title MATCHES[fts] 5". Quote the words, as in title MATCHES[fts] 'quick fox', or pass a String with %@."#
      ),
      (
        "title MATCHES[fts] '--'",
        #"The text query "--" has no word to search for at offset 19, near "title MATCHES[fts] '--'". Search for at least one word (letters or digits; punctuation separates words)."#
      ),
    ]
    for (format, message) in cases {
      let error = #expect(throws: RequestSetError.self) { try set.filter(format).fetch() }
      #expect(error?.code == .invalidFormat)
      #expect(error?.message == message, "\(format)")
    }
    // The key must be the record's own: a SUBQUERY's variable is not one.
    let error = #expect(throws: RequestSetError.self) {
      try set.filter("SUBQUERY(labels, $l, $l MATCHES[fts] 'zebra').@count > 0").fetch()
    }
    #expect(error?.code == .invalidFormat)
  }

  @Test func aSetWithoutKeysSearchesTheTextIndex() throws {
    let docs = Self.articles(count: 100, seed: 5)
    let store = MemoryStore<Article>()
    try store.insert(contentsOf: docs)
    let none = #expect(throws: RequestSetError.self) {
      try RequestSet(store).filter(matching: "cafe").fetch()
    }
    #expect(none?.code == .invalidIndex)
    try store.createTextIndex(\.title, \.body)
    #expect(store.textIndexKeys == ["title", "body"])
    let expected = docs.filter { Self.matches($0, [Term(words: ["cafe"])], keys: ["title", "body"]) }.map(
      \.id)
    #expect(try RequestSet(store).filter(matching: "cafe").ids() == expected)
    let other = #expect(throws: RequestSetError.self) { try store.createTextIndex("title") }
    #expect(other?.code == .invalidIndex)
    #expect(store.dropTextIndex())
    #expect(store.textIndexKeys == nil)
  }

  @Test(arguments: StoreKind.withSQL.filter { [.log, .sqlite, .postgres].contains($0) })
  func aSetWithoutKeysSearchesTheTextIndexOfEveryStore(_ kind: StoreKind) throws {
    let docs = Self.articles(count: 100, seed: 6)
    let store = try kind.makeStore(of: Article.self)
    try store.insert(contentsOf: docs)
    let none = #expect(throws: RequestSetError.self) {
      try RequestSet(store).filter(matching: "cafe").fetch()
    }
    #expect(none?.code == .invalidIndex)
    try Self.createTextIndex(store, ["title", "body"])
    let expected = docs.filter { Self.matches($0, [Term(words: ["cafe"])], keys: ["title", "body"]) }.map(
      \.id)
    #expect(try RequestSet(store).filter(matching: "cafe").ids() == expected)
  }

  @Test func theMemoryIndexIsUsedAndKeptCurrent() throws {
    var docs = Self.articles(count: 300, seed: 11)
    let store = MemoryStore<Article>()
    try store.createTextIndex("title", "body")
    try store.insert(contentsOf: docs)
    let set = RequestSet(store).filter(matching: "zebra", in: ["title", "body"])
    #expect(try set.fetchCount() == 0)
    #expect(set.explain().contains("text index lookup on title, body"), "\(set.explain())")
    var g = SeededRandom(seed: 12)
    for step in 0..<200 {
      switch Int.random(in: 0..<3, using: &g) {
      case 0:
        let i = Int.random(in: docs.indices, using: &g)
        docs[i].body = Self.text(Int.random(in: 1...6, using: &g), &g) + (step % 4 == 0 ? " zebra" : "")
        try store.save(docs[i])
      case 1:
        let i = Int.random(in: docs.indices, using: &g)
        _ = try store.delete(id: docs[i].id)
        docs.remove(at: i)
      default:
        let doc = Article(
          id: 1000 + step, title: "Zebra " + Self.text(2, &g), body: Self.text(4, &g), labels: [], rank: 0)
        try store.insert(doc)
        docs.append(doc)
      }
      if step % 20 == 0 {
        for text in ["zebra", "caf*", "\"quick brown\"", "東京", "ёлка ещё"] {
          let expected = docs.filter {
            Self.matches($0, Self.queryTerms(text), keys: ["title", "body"])
          }.map(\.id).sorted()
          let found = try RequestSet(store).filter(matching: text, in: ["title", "body"]).ids().sorted()
          #expect(found == expected, "step \(step): \(text)")
        }
      }
    }
  }

  @Test func theLogIndexIsKeptCurrentAndSurvivesReopening() throws {
    let path = TemporaryLogDirectory.freshPath()
    var docs = Self.articles(count: 300, seed: 13)
    let queries = ["zebra", "caf*", "\"quick brown\"", "東京", "ёлка ещё"]
    func check(_ store: LogStore<Article>, _ when: String) throws {
      for text in queries {
        let expected = docs.filter { Self.matches($0, Self.queryTerms(text), keys: ["title", "body"]) }.map(
          \.id
        ).sorted()
        let set = RequestSet(store).filter(matching: text, in: ["title", "body"])
        #expect(try set.ids().sorted() == expected, "\(when): \(text)")
      }
    }
    do {
      let store = try LogStore<Article>(path: path)
      try store.insert(contentsOf: docs.prefix(150))
      try store.createTextIndex("title", "body")
      try store.createIndex("rank")  // rewrites the definitions: the text index's stays
      try store.insert(contentsOf: docs.dropFirst(150))
      var g = SeededRandom(seed: 14)
      for step in 0..<100 {
        let i = Int.random(in: docs.indices, using: &g)
        if step % 3 == 0 {
          _ = try store.delete(id: docs[i].id)
          docs.remove(at: i)
        } else {
          docs[i].title = "Zebra " + Self.text(2, &g)
          try store.save(docs[i])
        }
      }
      try store.transaction { tx in
        tx.insert(Article(id: 5000, title: "zebra crossing", body: "東京", labels: [], rank: 1))
        tx.save(Article(id: 5000, title: "zebra café", body: "東京 ёлка ещё", labels: [], rank: 1))
      }
      docs.append(Article(id: 5000, title: "zebra café", body: "東京 ёлка ещё", labels: [], rank: 1))
      try check(store, "written")
      #expect(
        RequestSet(store).filter(matching: "zebra").explain().contains("text index lookup on title, body"))
      #expect(store.indexes.map(\.key) == ["rank"])
      try store.compact()
      try check(store, "compacted")
      store.close()
    }
    let reopened = try LogStore<Article>(path: path)
    #expect(reopened.textIndexKeys == ["title", "body"])
    #expect(reopened.indexes.map(\.key) == ["rank"])
    try check(reopened, "reopened")
    #expect(try reopened.dropTextIndex())
    reopened.close()
    let again = try LogStore<Article>(path: path)
    #expect(again.textIndexKeys == nil)
    try check(again, "without the index")
  }

  @Test func sqliteRunsTheSearchAsAnFTS5MatchKeptCurrentByTriggers() throws {
    var docs = Self.articles(count: 300, seed: 17)
    let store = try SQLiteStore<Article>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    try store.insert(contentsOf: docs.prefix(100))
    let plain = RequestSet(store).filter(matching: "zebra", in: ["title", "body"])
    #expect(plain.explain().contains("rs_filter"), "\(plain.explain())")
    try store.createTextIndex("title", "body")
    #expect(try store.textIndexKeys() == ["title", "body"])
    try store.insert(contentsOf: docs.dropFirst(100))
    let indexed = RequestSet(store).filter(matching: "zebra", in: ["title", "body"])
    #expect(indexed.explain().contains("\"Article_requestset_text\" MATCH ?"), "\(indexed.explain())")
    // A key the index lacks: each row is tested by the engine's matcher in SQLite.
    #expect(RequestSet(store).filter(matching: "zebra", in: ["labels"]).explain().contains("rs_filter"))
    var g = SeededRandom(seed: 18)
    for step in 0..<60 {
      let i = Int.random(in: docs.indices, using: &g)
      switch step % 3 {
      case 0:
        _ = try store.delete(id: docs[i].id)
        docs.remove(at: i)
      case 1:
        docs[i].body = "zebra " + Self.text(3, &g)
        try store.save(docs[i])
      default:
        docs[i].title = "Café zebra"
        try store.upsert([docs[i]], on: \.id)
      }
    }
    // A write through a query runs as one SQL UPDATE: the trigger keeps the index current.
    _ = try RequestSet(store).filter(\.rank == 3).update("title", value: "ёлка ещё")
    for d in docs.indices where docs[d].rank == 3 { docs[d].title = "ёлка ещё" }
    for text in ["zebra", "caf*", "\"quick brown\"", "東京", "ёлка ещё"] {
      let expected = docs.filter { Self.matches($0, Self.queryTerms(text), keys: ["title", "body"]) }.map(
        \.id
      ).sorted()
      #expect(
        try RequestSet(store).filter(matching: text, in: ["title", "body"]).ids().sorted() == expected,
        "\(text)")
    }
    #expect(try store.dropTextIndex())
    #expect(try store.textIndexKeys() == nil)
    let expected = docs.filter { Self.matches($0, [Term(words: ["zebra"])], keys: ["title", "body"]) }.map(
      \.id
    ).sorted()
    #expect(
      try RequestSet(store).filter(matching: "zebra", in: ["title", "body"]).ids().sorted() == expected)
  }

  /// A search on every key of the SQLite text index runs its MATCH with no column filter
  /// (FTS5 then reads no column of each position); one on some of the keys keeps the
  /// filter. Either way the records are the reference's.
  @Test func sqliteFiltersColumnsOnlyForASearchOnSomeOfTheIndexedKeys() throws {
    let docs = Self.articles(count: 300, seed: 31)
    let store = try SQLiteStore<Article>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    defer { store.close() }
    try store.insert(contentsOf: docs)
    try store.createTextIndex("title", "body")
    let every = RequestSet(store).filter(matching: "caf* zebra")
    #expect(every.explain().contains(#"bindings: [(("636166" *) AND ("7a65627261"))]"#), "\(every.explain())")
    let title = RequestSet(store).filter(matching: "caf* zebra", in: ["title"])
    #expect(
      title.explain().contains(#"bindings: [{k_7469746c65} : (("636166" *) AND ("7a65627261"))]"#),
      "\(title.explain())")
    var g = SeededRandom(seed: 32)
    for _ in 0..<40 {
      let (text, terms) = Self.query(&g, docs: docs)
      for keys in [["title", "body"], ["body", "title"], ["title"], ["body"]] {
        let expected = docs.filter { Self.matches($0, terms, keys: keys) }.map(\.id).sorted()
        #expect(try RequestSet(store).filter(matching: text, in: keys).ids().sorted() == expected, "\(text) \(keys)")
      }
    }
  }

  /// The reference terms of the fixed queries the index test asks.
  static func queryTerms(_ text: String) -> [Term] {
    switch text {
    case "caf*": return [Term(words: ["caf"], lastIsPrefix: true)]
    case "\"quick brown\"": return [Term(words: ["quick", "brown"])]
    case "ёлка ещё": return [Term(words: ["елка"]), Term(words: ["еще"])]
    default: return [Term(words: words(text))]
    }
  }
}
