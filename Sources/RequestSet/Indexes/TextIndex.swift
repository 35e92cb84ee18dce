/// A store's full-text index: for every word, the slots whose fields at ``keys`` hold it.
///
/// MemoryStore keeps one current on every write (insert, save, delete, and each write of a
/// transaction), with the words `_TextTokenizer` finds, so a lookup answers exactly what
/// the in-process test of a text condition answers: for a query of single words and
/// prefixes the posting lists are the answer; a phrase's words narrow the candidates,
/// each then tested for the phrase. A snapshot takes a copy, shared until the next write.
struct _TextIndex: Sendable {
  /// The indexed keys, as created.
  let keys: [String]
  /// For each word, the live slots holding it in one of ``keys``.
  private(set) var postings: [String: Set<Int>] = [:]
  /// For each live slot with words, how many words its values at ``keys`` hold (every
  /// occurrence): the lengths a relevance sort's statistics need (see TextRelevance.swift).
  private(set) var lengths: [Int: Int] = [:]
  /// The sum of ``lengths``.
  private(set) var totalWords = 0

  init(keys: [String]) { self.keys = keys }

  /// The distinct words of one record's values at ``keys``, and how many words they hold.
  static func words(_ values: [FieldValue]) -> (distinct: Set<String>, count: Int) {
    var fields: [[String]] = []
    for v in values { _textFields(v, into: &fields) }
    var words = Set<String>()
    var count = 0
    for f in fields {
      words.formUnion(f)
      count += f.count
    }
    return (words, count)
  }

  /// Records a slot's change: `old` nil for a new slot, `new` nil for a deleted one.
  mutating func update(slot: Int, old: [FieldValue]?, new: [FieldValue]?) {
    let none: (distinct: Set<String>, count: Int) = ([], 0)
    let before = old.map(Self.words) ?? none
    let after = new.map(Self.words) ?? none
    for word in before.distinct.subtracting(after.distinct) {
      postings[word]?.remove(slot)
      if postings[word]?.isEmpty == true { postings[word] = nil }
    }
    for word in after.distinct.subtracting(before.distinct) { postings[word, default: []].insert(slot) }
    totalWords += after.count - (lengths[slot] ?? 0)
    lengths[slot] = after.count > 0 ? after.count : nil
  }

  /// Renumbers the slots after the store dropped dead ones (`newSlot[old]`, -1 for dropped).
  mutating func renumber(_ newSlot: [Int]) {
    for (word, slots) in postings {
      var moved = Set<Int>(minimumCapacity: slots.count)
      for s in slots where newSlot[s] >= 0 { moved.insert(newSlot[s]) }
      postings[word] = moved.isEmpty ? nil : moved
    }
    var moved: [Int: Int] = [:]
    totalWords = 0
    for (s, n) in lengths where newSlot[s] >= 0 {
      moved[newSlot[s]] = n
      totalWords += n
    }
    lengths = moved
  }

  /// The slots holding a word of the vocabulary `word` matches: itself, or as a prefix
  /// every word starting with it.
  func slots(_ word: String, prefix: Bool) -> Set<Int> {
    guard prefix else { return postings[word] ?? [] }
    var union = Set<Int>()
    for (w, s) in postings where w.unicodeScalars.starts(with: word.unicodeScalars) { union.formUnion(s) }
    return union
  }

  /// Whether the index answers a condition on `keys`: it covers them all.
  func covers(_ searched: [String]) -> Bool { Set(searched).isSubset(of: keys) }

  /// The slots holding every term's words (prefixes expanded over the vocabulary), and
  /// whether they are exactly the condition's matches: they are when the index covers
  /// exactly the condition's keys and every term is one word.
  func candidates(_ c: _TextSearchCondition) -> (slots: Set<Int>, exact: Bool) {
    var result: Set<Int>? = nil
    for term in c.query.terms {
      for (k, word) in term.words.enumerated() {
        let slots = self.slots(word, prefix: term.prefix[k])
        result = result.map { $0.intersection(slots) } ?? slots
        if result!.isEmpty { return ([], true) }
      }
    }
    let exact = Set(c.keys) == Set(keys) && c.query.terms.allSatisfy { $0.words.count == 1 }
    return (result ?? [], exact)
  }
}

/// The error for a second text index on other keys.
func _textIndexExists(_ existing: [String], _ wanted: [String]) -> RequestSetError {
  RequestSetError(
    .invalidIndex,
    "The store already has a text index on \(existing.joined(separator: ", ")), and a store keeps one text index. "
      + "Drop it with dropTextIndex() first to index \(wanted.joined(separator: ", ")), or index all the keys in one."
  )
}

/// The error for a text index with no key.
func _textIndexNeedsKeys() -> RequestSetError {
  RequestSetError(
    .invalidIndex, "A text index needs at least one key: createTextIndex(\"title\", \"body\").")
}

extension _TextIndex {
  /// The text index's entry among a log's index definitions: a key no record can have
  /// (it starts with a NUL), naming the indexed keys. A log keeps its definitions as a
  /// list of keys, so the text index needs no new frame and an older reader of the log
  /// sees an index on a key no record holds.
  static func definition(_ keys: [String]) -> RequestIndex {
    RequestIndex(key: "\u{0}text\u{0}" + keys.joined(separator: "\u{0}"), unique: false)
  }

  /// The indexed keys of a text index's definition, or nil for another index's.
  static func keys(of definition: RequestIndex) -> [String]? {
    guard definition.key.hasPrefix("\u{0}text\u{0}") else { return nil }
    return definition.key.dropFirst(6).split(separator: "\u{0}", omittingEmptySubsequences: false).map(
      String.init)
  }
}
