/// A fixed-width set of slot numbers: which slots of a store hold a live record.
struct _Bitset: Sendable, Equatable {
  private(set) var words: [UInt64] = []
  private(set) var capacity = 0

  init() {}

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
