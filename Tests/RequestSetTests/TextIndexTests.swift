import Foundation
import Testing

@testable import RequestSet

/// The in-process text index (MemoryStore's and LogStore's): kept current through any
/// sequence of writes, it holds what an index built again from the records holds, and the
/// stores' searches and rankings over it stay those of the reference.
@Suite(.ownThreads) struct TextIndexTests {
  typealias Term = TextSearchTests.Term

  /// The values an index on title, body and labels reads of an article.
  static func values(_ a: Article) -> [FieldValue] {
    [.string(a.title), .string(a.body), .array(a.labels.map(FieldValue.string))]
  }

  /// The index built at once from `records` (slot to values), slots ascending.
  static func rebuilt(_ records: [Int: [FieldValue]]) -> _TextIndex {
    var index = _TextIndex(keys: ["title", "body", "labels"])
    for slot in records.keys.sorted() { index.update(slot: slot, old: nil, new: records[slot]) }
    index.trim()
    return index
  }

  /// A slot's word count, with the slots past the last that holds words left out.
  static func lengths(_ index: _TextIndex) -> [UInt32] {
    var lengths = index.lengths
    while lengths.last == 0 { lengths.removeLast() }
    return lengths
  }

  @Test func anIndexKeptThroughRandomWritesEqualsOneBuiltAgain() throws {
    var g = SeededRandom(seed: 3811)
    var records: [Int: [FieldValue]] = [:]
    var next = 0
    var index = _TextIndex(keys: ["title", "body", "labels"])
    let articles = TextSearchTests.articles(count: 400, seed: 3812)
    var used = 0
    func fresh() -> [FieldValue] {
      used += 1
      // Now and then a record without a word (its length is 0, it is in no list).
      if Int.random(in: 0..<8, using: &g) == 0 { return [.string("—"), .int(3), .array([])] }
      return Self.values(articles[used % articles.count])
    }
    var checks = 0
    for step in 0..<1_000 {
      switch Int.random(in: 0..<10, using: &g) {
      case 0..<4:
        // A new record, at the slot after every other (what a store's insert does).
        let values = fresh()
        index.update(slot: next, old: nil, new: values)
        records[next] = values
        next += 1
      case 4..<7:
        // A save: the record's words change in place.
        guard let slot = records.keys.randomElement(using: &g) else { break }
        let values = fresh()
        index.update(slot: slot, old: records[slot], new: values)
        records[slot] = values
      case 7, 8:
        guard let slot = records.keys.randomElement(using: &g) else { break }
        index.update(slot: slot, old: records[slot], new: nil)
        records[slot] = nil
      default:
        // A compaction: the dead slots dropped, the live ones renumbered in order.
        guard step % 3 == 0 else { break }
        var newSlot = [Int](repeating: -1, count: next)
        var moved: [Int: [FieldValue]] = [:]
        for (new, old) in records.keys.sorted().enumerated() {
          newSlot[old] = new
          moved[new] = records[old]
        }
        index.renumber(newSlot)
        records = moved
        next = records.count
      }
      if step % 50 == 49 {
        checks += 1
        let again = Self.rebuilt(records)
        #expect(index.postings == again.postings, "step \(step)")
        #expect(Self.lengths(index) == Self.lengths(again), "step \(step)")
        #expect(index.totalWords == again.totalWords, "step \(step)")
        // Every list ascending without repeats: the lookups intersect them by merging.
        for (word, list) in index.postings {
          #expect(
            !list.isEmpty && zip(list, list.dropFirst()).allSatisfy { $0 < $1 }, "step \(step): \(word)")
        }
        // A query of single words and prefixes: the lookup is exactly the records' test.
        for text in ["cafe", "caf*", "ёлка ещё", "東", "quick fox", "zebra", "m*"] {
          let condition = _TextSearchCondition(
            keys: ["title", "body", "labels"], query: try _TextQuery(text))
          let (slots, exact) = index.candidates(condition)
          #expect(exact)
          let expected = records.keys.sorted().filter { condition.matches(records[$0]!) }
          #expect(slots == expected, "step \(step): \(text)")
        }
      }
    }
    #expect(checks == 20)
    #expect(records.count > 100, "\(records.count) records at the end")
  }

  @Test(arguments: [StoreKind.memory, .log])
  func searchesAndRankingsStayRightThroughWritesAndCompaction(_ kind: StoreKind) throws {
    // Enough deletes at once for MemoryStore to compact (over 1,024 dead slots, more than
    // the live ones), and a LogStore's compact(), between saves, inserts and transactions.
    let keys = ["title", "body", "labels"]
    var docs = TextSearchTests.articles(count: 1_600, seed: 3813)
    let store = try kind.makeStore(of: Article.self)
    try store.insert(contentsOf: docs.prefix(400))
    try TextSearchTests.createTextIndex(store, keys)
    try store.insert(contentsOf: docs.dropFirst(400))
    var g = SeededRandom(seed: 3814)
    var nextID = 10_000
    func check(_ when: String) throws {
      let rebuilt = MemoryStore<Article>()
      try rebuilt.insert(contentsOf: docs)
      try rebuilt.createTextIndex(keys)
      let position = Dictionary(uniqueKeysWithValues: docs.enumerated().map { ($1.id, $0 + 1) })
      for _ in 0..<6 {
        let (text, terms) = TextSearchTests.query(&g, docs: docs)
        let expected = docs.filter { TextSearchTests.matches($0, terms, keys: keys) }.map(\.id).sorted()
        let found = RequestSet(store).filter(matching: text)
        #expect(found.explain().contains("text index lookup on title, body, labels"), "\(found.explain())")
        #expect(try found.ids().sorted() == expected, "\(kind) \(when): \(text)")
        #expect(try RequestSet(rebuilt).filter(matching: text).ids().sorted() == expected, "rebuilt: \(text)")
        let ranked = try found.sortBy(.relevance).ids()
        RelevanceTests.expectRanked(
          ranked.map { position[$0]! }, RelevanceTests.scores(docs, terms, keys: keys),
          "\(kind) \(when): \(text)")
      }
    }
    try check("after the inserts")
    for round in 0..<4 {
      for _ in 0..<40 {
        let i = Int.random(in: docs.indices, using: &g)
        switch Int.random(in: 0..<3, using: &g) {
        case 0:
          docs[i].title = TextSearchTests.text(Int.random(in: 0...4, using: &g), &g)
          docs[i].labels = [TextSearchTests.text(1, &g)]
          try store.save(docs[i])
        case 1:
          _ = try store.delete(id: docs[i].id)
          docs.remove(at: i)
        default:
          let doc = Article(
            id: nextID, title: TextSearchTests.text(3, &g), body: TextSearchTests.text(8, &g), labels: [],
            rank: 0)
          nextID += 1
          try store.insert(doc)
          docs.append(doc)
        }
      }
      try store.transaction { tx in
        tx.insert(Article(id: nextID, title: "zebra crossing", body: "東京", labels: ["café"], rank: 1))
        tx.save(Article(id: nextID, title: "zebra café", body: "東京 ёлка ещё", labels: [], rank: 1))
      }
      docs.append(Article(id: nextID, title: "zebra café", body: "東京 ёлка ещё", labels: [], rank: 1))
      nextID += 1
      if round == 1 {
        // Most records at once: MemoryStore drops its dead slots and renumbers the rest.
        let gone = Set(docs.prefix(1_150).map(\.id))
        try store.transaction { tx in for id in gone { tx.delete(id: id) } }
        docs.removeAll { gone.contains($0.id) }
      }
      if round == 2, let log = store as? LogStore<Article> { try log.compact() }
      try check("round \(round)")
    }
  }
}
