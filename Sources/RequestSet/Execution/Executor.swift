/// Runs a query against a snapshot: stage by stage, filter, then sort, then window.
enum _Executor {
  /// The slots of the result, in result order.
  static func slots<Element>(_ query: _Query<Element>, in snapshot: StoreSnapshot<Element>) throws -> [Int] {
    try snapshot._records.withUnsafeBufferPointer { buffer in
      guard let base = buffer.baseAddress else {
        // No records: still compile every stage, so a bad key is reported on an empty store.
        try _validate(query, snapshot)
        return []
      }
      var compiler = _FilterCompiler(base: base, snapshot: snapshot)
      var current: [Int]? = nil  // nil: every live slot of the snapshot
      for stage in query.stages {
        current = try _run(stage, on: current, compiler: &compiler)
      }
      return current ?? snapshot._liveSlots()
    }
  }

  /// The number of results, without building the result when one stage suffices.
  static func count<Element>(_ query: _Query<Element>, in snapshot: StoreSnapshot<Element>) throws -> Int {
    guard query.stages.count == 1, let stage = query.stages.first else {
      return try slots(query, in: snapshot).count
    }
    return try snapshot._records.withUnsafeBufferPointer { buffer in
      guard let base = buffer.baseAddress else {
        try _validate(query, snapshot)
        return 0
      }
      var compiler = _FilterCompiler(base: base, snapshot: snapshot)
      // Sort keys do not change the count, but a bad sort key is still an error.
      _ = try _comparator(stage.sort, base: base, compiler: &compiler)
      let matcher = try compiler.compile(stage.filter)
      var n = 0
      try _scan(nil, snapshot, base, matcher) { _ in n += 1 }
      return stage.window.range(in: n).count
    }
  }

  private static func _validate<Element>(_ query: _Query<Element>, _ snapshot: StoreSnapshot<Element>) throws {
    var dummy = Element?.none
    try withUnsafePointer(to: &dummy) { pointer in
      // Never dereferenced: there are no slots to test.
      let base = UnsafeRawPointer(pointer).assumingMemoryBound(to: Element.self)
      var compiler = _FilterCompiler(base: base, snapshot: snapshot)
      for stage in query.stages {
        _ = try compiler.compile(stage.filter)
        _ = try _comparator(stage.sort, base: base, compiler: &compiler)
      }
    }
  }

  private static func _run<Element>(
    _ stage: _Stage<Element>, on input: [Int]?, compiler: inout _FilterCompiler<Element>
  ) throws -> [Int] {
    let snapshot = compiler.snapshot
    let base = compiler.base
    let matcher = try compiler.compile(stage.filter)
    guard let compare = try _comparator(stage.sort, base: base, compiler: &compiler) else {
      // No sort: stop once the window is full.
      let range = stage.window.range(in: Int.max)
      var out: [Int] = []
      var seen = 0
      if range.isEmpty { return [] }
      try _scanWhile(input, snapshot, base, matcher) { slot in
        if seen >= range.lowerBound { out.append(slot) }
        seen += 1
        return seen < range.upperBound
      }
      return out
    }
    // A sort: rank is the position in the input, so ties keep the order before the sort.
    let k = stage.window.limit.map { stage.window.offset + $0 }
    if let k, k == 0 { return [] }
    if let k {
      var heap = _TopK(k: k, compare: compare)
      var rank = 0
      try _scan(input, snapshot, base, matcher) { slot in
        heap.offer(_Ranked(rank: rank, slot: slot))
        rank += 1
      }
      let best = heap.sorted()
      return stage.window.range(in: best.count).map { best[$0].slot }
    }
    var matched: [_Ranked] = []
    var rank = 0
    try _scan(input, snapshot, base, matcher) { slot in
      matched.append(_Ranked(rank: rank, slot: slot))
      rank += 1
    }
    matched.sort { _less($0, $1, compare) }
    return stage.window.range(in: matched.count).map { matched[$0].slot }
  }

  /// Calls `body` with each matching slot, in input order, until it returns false.
  @inline(__always)
  private static func _scanWhile<Element>(
    _ input: [Int]?, _ snapshot: StoreSnapshot<Element>, _ base: UnsafePointer<Element>,
    _ matcher: _Matcher<Element>, _ body: (Int) throws -> Bool
  ) throws {
    if let input {
      switch matcher {
      case .constant(false): return
      case .constant(true): for s in input where try !body(s) { return }
      case .typed(let t): for s in input where t(base + s) { if try !body(s) { return } }
      case .general(let g): for s in input where try g(s) { if try !body(s) { return } }
      }
      return
    }
    let n = snapshot._slotCount
    if let live = snapshot._live {
      switch matcher {
      case .constant(false): return
      case .constant(true): for s in 0..<n where live[s] { if try !body(s) { return } }
      case .typed(let t): for s in 0..<n where live[s] && t(base + s) { if try !body(s) { return } }
      case .general(let g): for s in 0..<n where live[s] { if try g(s), try !body(s) { return } }
      }
      return
    }
    switch matcher {
    case .constant(false): return
    case .constant(true): for s in 0..<n where try !body(s) { return }
    case .typed(let t): for s in 0..<n where t(base + s) { if try !body(s) { return } }
    case .general(let g): for s in 0..<n where try g(s) { if try !body(s) { return } }
    }
  }

  @inline(__always)
  private static func _scan<Element>(
    _ input: [Int]?, _ snapshot: StoreSnapshot<Element>, _ base: UnsafePointer<Element>,
    _ matcher: _Matcher<Element>, _ body: (Int) throws -> Void
  ) throws {
    try _scanWhile(input, snapshot, base, matcher) { (slot: Int) throws -> Bool in
      try body(slot)
      return true
    }
  }

  /// A slot-level three-way comparison for the sort keys, or nil when there are none.
  private static func _comparator<Element>(
    _ keys: [_SortKey<Element>], base: UnsafePointer<Element>, compiler: inout _FilterCompiler<Element>
  ) throws -> ((Int, Int) -> Int)? {
    guard !keys.isEmpty else { return nil }
    var parts: [(Int, Int) -> Int] = []
    for key in keys {
      switch key {
      case .typed(let t):
        let cmp = t.compare
        parts.append(t.order == .ascending ? { cmp(base + $0, base + $1) } : { cmp(base + $1, base + $0) })
      case .field(let name, let order, let collation):
        let table = try compiler.fields()
        try _FilterCompiler<Element>.validate(name, value: nil, in: table)
        guard let column = table.column(name) else { continue }  // never set: all nil, all equal
        parts.append(
          order == .ascending
            ? { FieldValue._order(column[$0], column[$1], collation) }
            : { FieldValue._order(column[$1], column[$0], collation) })
      }
    }
    if parts.count == 1 { return parts[0] }
    return { a, b in
      for p in parts {
        let c = p(a, b)
        if c != 0 { return c }
      }
      return 0
    }
  }
}

/// A candidate with its position in the stage's input, the tie-breaker that makes every
/// sort stable.
struct _Ranked {
  var rank: Int
  var slot: Int
}

@inline(__always)
func _less(_ a: _Ranked, _ b: _Ranked, _ compare: (Int, Int) -> Int) -> Bool {
  let c = compare(a.slot, b.slot)
  return c != 0 ? c < 0 : a.rank < b.rank
}

/// The k smallest candidates seen so far, in a max-heap: O(n log k) for a sort plus limit.
struct _TopK {
  let k: Int
  let compare: (Int, Int) -> Int
  private var heap: [_Ranked] = []

  init(k: Int, compare: @escaping (Int, Int) -> Int) {
    self.k = k
    self.compare = compare
    heap.reserveCapacity(min(k, 1 << 16))
  }

  mutating func offer(_ item: _Ranked) {
    if heap.count < k {
      heap.append(item)
      var i = heap.count - 1
      while i > 0 {
        let parent = (i - 1) / 2
        guard _less(heap[parent], heap[i], compare) else { break }
        heap.swapAt(parent, i)
        i = parent
      }
    } else if _less(item, heap[0], compare) {
      heap[0] = item
      var i = 0
      while true {
        let l = 2 * i + 1, r = l + 1
        var largest = i
        if l < heap.count && _less(heap[largest], heap[l], compare) { largest = l }
        if r < heap.count && _less(heap[largest], heap[r], compare) { largest = r }
        if largest == i { break }
        heap.swapAt(i, largest)
        i = largest
      }
    }
  }

  func sorted() -> [_Ranked] { heap.sorted { _less($0, $1, compare) } }
}
