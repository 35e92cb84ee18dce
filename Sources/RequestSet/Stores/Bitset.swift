/// A fixed-width set of slot numbers: which slots of a store hold a live record.
struct _Bitset: Sendable, Equatable {
  private(set) var words: [UInt64] = []
  private(set) var capacity = 0

  init() {}

  /// The set whose bits are `words` (bit *i* of word *i* / 64), `count` of them; nil when a
  /// bit past `count` is set or the words do not fit `count`.
  init?(words: [UInt64], count: Int) {
    guard words.count == (count + 63) / 64 else { return nil }
    if count % 64 != 0, let last = words.last, last >> UInt64(count % 64) != 0 { return nil }
    self.words = words
    capacity = count
  }

  /// The number of bits set.
  var popCount: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

  /// Appends one bit.
  mutating func append(_ value: Bool) {
    if capacity % 64 == 0 { words.append(0) }
    if value { words[capacity / 64] |= 1 << UInt64(capacity % 64) }
    capacity += 1
  }

  subscript(_ i: Int) -> Bool {
    get { words[i &>> 6] & (1 &<< UInt64(i & 63)) != 0 }
    set {
      if newValue { words[i >> 6] |= 1 << UInt64(i & 63) } else { words[i >> 6] &= ~(1 << UInt64(i & 63)) }
    }
  }
}
