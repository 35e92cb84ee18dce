/// A store's full-text index: for every word, the slots whose fields at ``keys`` hold it.
///
/// MemoryStore keeps one current on every write (insert, save, delete, and each write of a
/// transaction), with the words `_TextTokenizer` finds, so a lookup answers exactly what
/// the in-process test of a text condition answers: for a query of single words and
/// prefixes the posting lists are the answer; a phrase's words narrow the candidates,
/// each then tested for the phrase. A snapshot takes a copy, shared until the next write
/// (which then copies the table of lists, and of the lists only those it changes).
///
/// The index is built for its size: a posting list is an ascending array of 32-bit slots
/// (4 bytes a posting, where a `Set<Int>` takes 11 to 21 with its hash table's free room),
/// each word is stored once as its list's key, and the words of a record are found by the
/// tokenizer directly, not through its memo of texts (which would keep every record's
/// words alive a second time).
struct _TextIndex: Sendable {
  /// The indexed keys, as created.
  let keys: [String]
  /// For each word, the live slots holding it in one of ``keys``, ascending.
  private(set) var postings: [String: [UInt32]] = [:]
  /// For each slot, how many words its values at ``keys`` hold (every occurrence; 0 for a
  /// slot without words or without a record): the lengths a relevance sort's statistics
  /// need (see TextRelevance.swift).
  private(set) var lengths: [UInt32] = []
  /// The sum of ``lengths``.
  private(set) var totalWords = 0

  init(keys: [String]) { self.keys = keys }

  /// A slot as a posting. A store's slots fit in 32 bits: each slot of a store holds a
  /// record in memory or a location of one in the log, and 2³² of them would be tens of
  /// gigabytes before the first word is indexed; the conversion traps rather than index
  /// the wrong slot.
  @inline(__always)
  private static func posting(_ slot: Int) -> UInt32 { UInt32(slot) }

  /// The distinct words of one record's values at ``keys``, and how many words they hold,
  /// found by the tokenizer itself (not through its memo: see the type's comment).
  static func words(_ values: [FieldValue]) -> (distinct: Set<String>, count: Int) {
    var words = Set<String>()
    var count = 0
    func add(_ text: String) {
      _TextTokenizer.tokenize(text) { word in
        words.insert(word)
        count += 1
      }
    }
    for value in values {
      switch value {
      case .string(let s): add(s)
      case .array(let items):
        for item in items { if case .string(let s) = item { add(s) } }
      default: break
      }
    }
    return (words, count)
  }

  /// Records a slot's change: `old` nil for a new slot, `new` nil for a deleted one.
  ///
  /// - Complexity: O(*w* · *p*) for a slot whose words change, *p* the longest posting list
  ///   among them (an insert into the middle of a list moves its tail); O(*w*) for a slot
  ///   above every indexed one, as every new record's is.
  mutating func update(slot: Int, old: [FieldValue]?, new: [FieldValue]?) {
    let none: (distinct: Set<String>, count: Int) = ([], 0)
    let before = old.map(Self.words) ?? none
    let after = new.map(Self.words) ?? none
    let posting = Self.posting(slot)
    for word in before.distinct.subtracting(after.distinct) {
      guard var list = postings.removeValue(forKey: word) else { continue }
      let at = Self.firstIndex(notBelow: posting, in: list)
      if at < list.count, list[at] == posting { list.remove(at: at) }
      if !list.isEmpty { postings[word] = list }
    }
    for word in after.distinct.subtracting(before.distinct) {
      postings[word, default: []].insertSorted(posting)
    }
    if slot >= lengths.count {
      guard after.count > 0 else { return }
      lengths.append(contentsOf: repeatElement(0, count: slot - lengths.count + 1))
    }
    totalWords += after.count - Int(lengths[slot])
    lengths[slot] = UInt32(after.count)
  }

  /// Drops the spare capacity the lists grew while a whole store was indexed: an array
  /// grown by appending keeps up to twice the room it needs.
  mutating func trim() {
    for (word, list) in postings where list.capacity > list.count {
      postings[word] = list.withUnsafeBufferPointer { Array($0) }
    }
    lengths = lengths.withUnsafeBufferPointer { Array($0) }
  }

  /// Renumbers the slots after the store dropped dead ones (`newSlot[old]`, -1 for dropped).
  mutating func renumber(_ newSlot: [Int]) {
    for (word, slots) in postings {
      var moved: [UInt32] = []
      moved.reserveCapacity(slots.count)
      for s in slots where newSlot[Int(s)] >= 0 { moved.append(Self.posting(newSlot[Int(s)])) }
      // A compaction keeps the slots' order; sort in case a store ever does not.
      if !moved.isSorted { moved.sort() }
      postings[word] = moved.isEmpty ? nil : moved
    }
    var lengths: [UInt32] = []
    totalWords = 0
    for (s, n) in self.lengths.enumerated() where n > 0 && s < newSlot.count && newSlot[s] >= 0 {
      let to = newSlot[s]
      if to >= lengths.count { lengths.append(contentsOf: repeatElement(0, count: to - lengths.count + 1)) }
      lengths[to] = n
      totalWords += Int(n)
    }
    self.lengths = lengths
  }

  /// The slots holding a word of the vocabulary `word` matches: itself, or as a prefix
  /// every word starting with it; ascending.
  func slots(_ word: String, prefix: Bool) -> [Int] {
    guard prefix else { return (postings[word] ?? []).map { Int($0) } }
    var union: [UInt32] = []
    for (w, s) in postings where w.unicodeScalars.starts(with: word.unicodeScalars) { union += s }
    union.sort()
    var out: [Int] = []
    out.reserveCapacity(union.count)
    for s in union where out.last != Int(s) { out.append(Int(s)) }
    return out
  }

  /// Whether the index answers a condition on `keys`: it covers them all.
  func covers(_ searched: [String]) -> Bool { Set(searched).isSubset(of: keys) }

  /// The slots holding every term's words (prefixes expanded over the vocabulary),
  /// ascending, and whether they are exactly the condition's matches: they are when the
  /// index covers exactly the condition's keys and every term is one word.
  func candidates(_ c: _TextSearchCondition) -> (slots: [Int], exact: Bool) {
    var result: [Int]? = nil
    for term in c.query.terms {
      for (k, word) in term.words.enumerated() {
        let slots = self.slots(word, prefix: term.prefix[k])
        result = result.map { _intersectSorted($0, slots) } ?? slots
        if result!.isEmpty { return ([], true) }
      }
    }
    let exact = Set(c.keys) == Set(keys) && c.query.terms.allSatisfy { $0.words.count == 1 }
    return (result ?? [], exact)
  }

  /// The first position of `list` (ascending) whose posting is `posting` or above.
  static func firstIndex(notBelow posting: UInt32, in list: [UInt32]) -> Int {
    var low = 0
    var high = list.count
    while low < high {
      let mid = (low + high) / 2
      if list[mid] < posting { low = mid + 1 } else { high = mid }
    }
    return low
  }
}

/// The values both ascending lists hold, ascending.
func _intersectSorted(_ a: [Int], _ b: [Int]) -> [Int] {
  var out: [Int] = []
  var i = 0
  var j = 0
  while i < a.count && j < b.count {
    if a[i] < b[j] {
      i += 1
    } else if a[i] > b[j] {
      j += 1
    } else {
      out.append(a[i])
      i += 1
      j += 1
    }
  }
  return out
}

extension Array where Element == UInt32 {
  /// Inserts `value` into this ascending list unless it holds it: an append for a value
  /// above every other.
  fileprivate mutating func insertSorted(_ value: UInt32) {
    if let last, last < value {
      append(value)
      return
    }
    let at = _TextIndex.firstIndex(notBelow: value, in: self)
    if at < count, self[at] == value { return }
    insert(value, at: at)
  }

  /// Whether the list is ascending.
  fileprivate var isSorted: Bool { zip(self, dropFirst()).allSatisfy { $0 < $1 } }
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
