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

  init(keys: [String]) { self.keys = keys }

  /// The distinct words of one record's values at ``keys``.
  static func words(_ values: [FieldValue]) -> Set<String> {
    var fields: [[String]] = []
    for v in values { _textFields(v, into: &fields) }
    var words = Set<String>()
    for f in fields { words.formUnion(f) }
    return words
  }

  /// Records a slot's change: `old` nil for a new slot, `new` nil for a deleted one.
  mutating func update(slot: Int, old: [FieldValue]?, new: [FieldValue]?) {
    let before = old.map(Self.words) ?? []
    let after = new.map(Self.words) ?? []
    for word in before.subtracting(after) {
      postings[word]?.remove(slot)
      if postings[word]?.isEmpty == true { postings[word] = nil }
    }
    for word in after.subtracting(before) { postings[word, default: []].insert(slot) }
  }

  /// Renumbers the slots after the store dropped dead ones (`newSlot[old]`, -1 for dropped).
  mutating func renumber(_ newSlot: [Int]) {
    for (word, slots) in postings {
      var moved = Set<Int>(minimumCapacity: slots.count)
      for s in slots where newSlot[s] >= 0 { moved.insert(newSlot[s]) }
      postings[word] = moved.isEmpty ? nil : moved
    }
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
        let slots: Set<Int>
        if term.prefix[k] {
          var union = Set<Int>()
          for (w, s) in postings where w.unicodeScalars.starts(with: word.unicodeScalars) {
            union.formUnion(s)
          }
          slots = union
        } else {
          slots = postings[word] ?? []
        }
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
