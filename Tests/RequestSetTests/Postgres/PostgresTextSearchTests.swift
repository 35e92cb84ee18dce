import Foundation
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// PostgreSQL's text index: a `tsvector` column of the engine's words, searched with a
/// `tsquery` (see PostgresStore+TextIndex.swift), kept current on every write path and
/// exact whatever another program writes. The random differential on every store is
/// `TextSearchTests.randomQueriesMatchTheReference`.
@Suite(.enabled(if: PostgresServer.testsRun), .ownThreads) struct PostgresTextSearchTests {
  typealias Term = TextSearchTests.Term

  func fresh(table: String? = nil, migrations: Migrator = Migrator()) throws -> PostgresStore<Article> {
    try PostgresStore<Article>(
      url: PostgresServer.url(), table: table ?? PostgresServer.freshTable(), migrations: migrations)
  }

  /// Every fixed query's records on `store` equal the reference's over `docs`.
  func check(_ store: PostgresStore<Article>, _ docs: [Article], _ when: String) throws {
    for text in ["zebra", "caf*", "\"quick brown\"", "東京", "ёлка ещё"] {
      let expected = docs.filter {
        TextSearchTests.matches($0, TextSearchTests.queryTerms(text), keys: ["title", "body"])
      }.map(\.id).sorted()
      let found = try RequestSet(store).filter(matching: text, in: ["title", "body"]).ids().sorted()
      #expect(found == expected, "\(when): \(text)")
    }
  }

  /// How many rows have no words.
  func unfilled(_ store: PostgresStore<Article>) throws -> String? {
    try postgresSQL("SELECT count(*) FROM \(store._quoted) WHERE words IS NULL")[0][0]
  }

  @Test func theSearchRunsAsATsqueryKeptCurrentOnEveryWrite() throws {
    var docs = TextSearchTests.articles(count: 300, seed: 19)
    let store = try fresh()
    try store.insert(contentsOf: docs.prefix(100))
    let plain = RequestSet(store).filter(matching: "zebra", in: ["title", "body"])
    #expect(
      plain.explain().contains(
        "in process: (title, body) MATCHES[fts] \"zebra\" (the table has no text index"),
      "\(plain.explain())")
    try store.createTextIndex("title", "body")
    try store.createTextIndex("title", "body")  // the same index again: nothing to do
    #expect(try store.textIndexKeys() == ["title", "body"])
    try store.insert(contentsOf: docs.dropFirst(100))
    let indexed = RequestSet(store).filter(matching: "zebra", in: ["title", "body"])
    #expect(indexed.explain().contains("words @@ $1::tsquery"), "\(indexed.explain())")
    // A key the index lacks runs in process.
    let labels = RequestSet(store).filter(matching: "zebra", in: ["labels"]).explain()
    #expect(
      labels.contains(
        "in process: (labels) MATCHES[fts] \"zebra\" (the text index covers title, body, not labels)"),
      "\(labels)")
    var g = SeededRandom(seed: 20)
    for step in 0..<45 {
      let i = Int.random(in: docs.indices, using: &g)
      switch step % 5 {
      case 0:
        _ = try store.delete(id: docs[i].id)
        docs.remove(at: i)
      case 1:
        docs[i].body = "zebra " + TextSearchTests.text(3, &g)
        try store.save(docs[i])
      case 2:
        docs[i].title = "Café zebra"
        try store.upsert([docs[i]], on: \.id)
      case 3:
        let doc = Article(id: 1000 + step, title: "東京 zebra", body: "quick brown", labels: [], rank: 9)
        try store.apply([.insert(doc), .save(doc)], ifVersion: nil)
        docs.append(doc)
      default:
        docs[i].rank = 7  // a change that leaves the text as it was
        try store.save(docs[i])
      }
    }
    // A write through a query runs as one SQL UPDATE: the trigger clears the words, the
    // write fills them again.
    _ = try RequestSet(store).filter(\.rank == 3).update("title", value: "ёлка ещё")
    for d in docs.indices where docs[d].rank == 3 { docs[d].title = "ёлка ещё" }
    // A delete through a query holding a search.
    let zebras = Set(
      try RequestSet(store).filter(matching: "zebra", in: ["title", "body"]).filter(\.rank == 7).ids())
    #expect(
      try RequestSet(store).filter(matching: "zebra", in: ["title", "body"]).filter(\.rank == 7).delete()
        == zebras.count)
    docs.removeAll { zebras.contains($0.id) }
    #expect(try unfilled(store) == "0")
    try check(store, docs, "written")
    #expect(try store.dropTextIndex())
    #expect(try !store.dropTextIndex())
    #expect(try store.textIndexKeys() == nil)
    try check(store, docs, "dropped")
  }

  @Test func insertsWriteTheirWordsWithTheRowAndSavesOfUnchangedTextAreFilled() throws {
    let store = try fresh()
    try store.createTextIndex("title", "body")
    var docs = TextSearchTests.articles(count: 10, seed: 29)
    try store.insert(contentsOf: docs.prefix(8))
    try store.insert(docs[8])
    try store.apply([.save(docs[9])], ifVersion: nil)
    // Each row was written once, with its words: the n-th row is still the n-th tuple of
    // the table's first page (a row filled afterwards would have a second version).
    let inPlace = try postgresSQL("SELECT bool_and(ctid::text = '(0,' || seq || ')') FROM \(store._quoted)")
    #expect(inPlace[0][0] == "t")
    #expect(try unfilled(store) == "0")
    // A save whose text is unchanged writes the same words: the trigger clears them, the
    // write fills them again.
    docs[3].rank += 1
    try store.save(docs[3])
    docs[4].title = "zebra"
    try store.save(docs[4])
    #expect(try unfilled(store) == "0")
    try check(store, docs, "saved")
  }

  @Test func rowsAnotherProgramWritesAreRecheckedUntilTheStoreWrites() throws {
    var docs = TextSearchTests.articles(count: 200, seed: 21)
    let store = try fresh()
    try store.insert(contentsOf: docs)
    try store.createTextIndex("title", "body")
    let exact = RequestSet(store).filter(matching: "zebra", in: ["title", "body"]).explain()
    #expect(exact.contains("words @@ $1::tsquery") && !exact.contains("checked again in process"), "\(exact)")
    // Behind the store's back: a new row without words, and a changed body whose words
    // the trigger clears.
    let table = store._quoted
    try PostgresServer.execute(
      """
      INSERT INTO \(table) (id, body, plain) VALUES ('5000', \
      '{"id": 5000, "title": "Zebra crossing", "body": "東京", "labels": [], "rank": 1}', true);
      UPDATE \(table) SET body = jsonb_set(body, '{title}', '"caffeine zebra"') WHERE id = '1';
      """)
    docs.append(Article(id: 5000, title: "Zebra crossing", body: "東京", labels: [], rank: 1))
    docs[0].title = "caffeine zebra"
    #expect(try unfilled(store) == "2")
    let rechecked = RequestSet(store).filter(matching: "zebra", in: ["title", "body"]).explain()
    #expect(
      rechecked.contains(
        "checked again in process: (title, body) MATCHES[fts] \"zebra\" (the store's test is looser)"),
      "\(rechecked)")
    try check(store, docs, "written by another program")
    // The store's next write fills every row's words.
    docs[5].body = "zebra"
    try store.save(docs[5])
    #expect(try unfilled(store) == "0")
    try check(store, docs, "after the store's write")
  }

  @Test func theIndexSurvivesReopeningAndMigrations() throws {
    let table = PostgresServer.freshTable()
    var docs = TextSearchTests.articles(count: 150, seed: 23)
    do {
      let store = try fresh(table: table)
      try store.insert(contentsOf: docs)
      try store.createTextIndex(["title", "body"])
      store.close()
    }
    // A migration rewrites every body in SQL: the trigger clears the words, the migration
    // fills them again.
    let migrations = Migrator([Migration("add-extra", .add("extra", default: .int(1)))])
    let reopened = try fresh(table: table, migrations: migrations)
    #expect(try reopened.textIndexKeys() == ["title", "body"])
    #expect(try unfilled(reopened) == "0")
    #expect(RequestSet(reopened).filter(matching: "zebra").explain().contains("words @@"))
    try check(reopened, docs, "reopened")
    docs[0].title = "zebra"
    try reopened.save(docs[0])
    try check(reopened, docs, "written after reopening")
    // Another index on other keys is refused.
    let other = #expect(throws: RequestSetError.self) { try reopened.createTextIndex("labels") }
    #expect(other?.code == .invalidIndex)
    let none = #expect(throws: RequestSetError.self) { try reopened.createTextIndex([]) }
    #expect(none?.code == .invalidIndex)
  }

  @Test func exactWhereTheWordsTellAndRecheckedWhereTheyDoNot() throws {
    let store = try fresh()
    try store.insert(contentsOf: TextSearchTests.articles(count: 50, seed: 25))
    try store.createTextIndex("title", "body")
    func support(_ text: String, _ keys: [String]) throws -> PushdownSupport {
      let reader = try #require(try store.queryReader() as? _PostgresReader<Article>)
      return reader.support(
        for: StoreTextSearch(try _TextSearchCondition(keys: keys, query: _TextQuery(text))))
    }
    #expect(try support("quick fox*", ["title", "body"]) == .exact)
    #expect(try support("\"quick brown\" fox", ["body", "title"]) == .exact)
    // The words of the title would let records through.
    #expect(try support("quick", ["body"]) == .superset)
    #expect(try support("quick", ["labels"]) != .exact)
    #expect(try support(String(repeating: "a", count: 2001), ["title", "body"]) != .exact)
    #expect(try support((0..<300).map { "w\($0)" }.joined(separator: " "), ["title", "body"]) != .exact)
    // A row too long for positions: phrases are rechecked, words are still exact.
    let long = (0..<9000).map { $0 % 2 == 0 ? "quick" : "brown" }.joined(separator: " ")
    try store.insert(Article(id: 999, title: "", body: long, labels: [], rank: 0))
    #expect(try support("\"quick brown\"", ["title", "body"]) == .superset)
    #expect(try support("quick", ["title", "body"]) == .exact)
    #expect(
      try RequestSet(store).filter(matching: "\"brown quick\"", in: "title", "body").ids().contains(999))
    #expect(
      try !RequestSet(store).filter(matching: "\"quick quick\"", in: "title", "body").ids().contains(999))
  }

  @Test func wordsBecomeALiteralWithFieldsApart() {
    #expect(_PGTextWords.vector([.string("Quick fox"), .string("fox")]) == "'quick':1 'fox':2,4")
    #expect(_PGTextWords.vector([.array([.string("a b"), .string("c")]), .null]) == "'a':1 'b':2 'c':4")
    #expect(_PGTextWords.quoted("it's\\") == "'it''s\\\\'")
    let long = String(repeating: "é", count: 1500)
    let stored = _PGTextWords.stored(long)
    #expect(stored.utf8.count == 2003 && stored.hasSuffix("\u{2026}"))
    let search = StoreTextSearch(
      _TextSearchCondition(keys: ["body"], query: try! _TextQuery("quick \"brown fox\" jump*")))
    #expect(
      _PGTextWords.query(search)
        == "('quick') & (('brown' <-> 'fox') | ('brown' & 'fox' & '#unpositioned')) & ('jump':*)")
  }

  /// Hostile queries: PostgreSQL's records equal the in-memory engine's, or both throw the
  /// same typed error; never a SQL error.
  @Test func hostileQueriesGetTheEnginesAnswer() throws {
    var docs = TextSearchTests.articles(count: 200, seed: 27)
    docs[0].body = "it's a back\\slash & pipe | bang ! paren ( colon : star * arrow <-> quote \" end"
    docs[1].title = String(repeating: "longword", count: 400)
    let store = try fresh()
    try store.insert(contentsOf: docs)
    try store.createTextIndex("title", "body")
    let memory = MemoryStore<Article>()
    try memory.insert(contentsOf: docs)
    let hostile = [
      "'", "''", "it's", "\\", "back\\slash", "a & b", "fox | dog", "!fox", "(fox)", "fox:*", "fox:A",
      "<->", "quick <-> brown", "\"quick <-> brown\"", "a:*b", "\u{0}", "fox\u{0}dog", "caf\u{0}*",
      "' OR 1=1 --", "'); DROP TABLE x; --", "$1", "::tsquery", "***", "*fox", "fo*x*",
      String(repeating: "longword", count: 400), String(repeating: "longword", count: 300) + "*",
      String(repeating: "longword", count: 200) + "*", String(repeating: "longword", count: 250),
      (0..<400).map { "w\($0)" }.joined(separator: " "), String(repeating: "a ", count: 5000),
      String(repeating: "\"", count: 7) + "quick",
    ]
    for text in hostile {
      let want = Result {
        try RequestSet(memory).filter(matching: text, in: ["title", "body"]).sortBy(\.id).ids()
      }
      let got = Result {
        try RequestSet(store).filter(matching: text, in: ["title", "body"]).sortBy(\.id).ids()
      }
      switch (want, got) {
      case (.success(let a), .success(let b)): #expect(a == b, "\(text.prefix(40))")
      case (.failure(let a as RequestSetError), .failure(let b as RequestSetError)):
        #expect(a.code == b.code && a.message == b.message, "\(text.prefix(40))")
      default: Issue.record("\(text.prefix(40)): memory \(want), PostgreSQL \(got)")
      }
    }
  }
}
