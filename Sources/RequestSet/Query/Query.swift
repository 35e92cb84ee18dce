/// The internal description of a query: what a ``RequestSet`` accumulates, with no
/// knowledge of how any store runs it.
///
/// A query is a list of stages. Each stage filters, then sorts, then windows what the
/// stage before it produced (the first stage reads the store). Filters and sorts join the
/// current stage until it has a window; a filter or sort written after `limit`/`offset`
/// opens a new stage, so it applies to the rows the window kept, like LINQ's
/// `Take(3).Where(…)`. `limit` and `offset` narrow the current window instead.
@usableFromInline
struct _Query<Element: Sendable>: Sendable {
  var stages: [_Stage<Element>] = [_Stage()]
  /// The first error a builder met (a negative limit, say): evaluating the query throws
  /// it, and `validated()` reports it.
  var invalid: RequestSetError?
  /// Set by `requiringPushdown()`: evaluating throws `.notPushedDown` rather than run any
  /// part in process.
  var requiresPushdown = false
  /// Set on the copy a preparation made (see `resolvingTwins()` in Prepare.swift): every
  /// typed condition's twin, typed sort's store key and predicate's translation has been
  /// decided for the source the query runs on.
  var twinsResolved = false
  /// The graph of stores the set was made from (``RecordGraph/records(_:)``): keys may walk
  /// the relations its types declare, resolved when the query is prepared.
  var graph: RecordGraph?
  /// What resolving relations did, for `explain()` (see RelationResolution.swift).
  var relationNotes: [String] = []

  /// Marks the query invalid; the first error is the one reported.
  mutating func invalidate(_ error: RequestSetError) {
    if invalid == nil { invalid = error }
  }

  /// The stage new clauses join, opening a fresh one when the last has a window.
  private mutating func _openStage() -> Int {
    if stages[stages.count - 1].window.isSet { stages.append(_Stage()) }
    return stages.count - 1
  }

  mutating func addFilter(_ node: _FilterNode<Element>, mode: RequestFilterMode) {
    twinsResolved = false
    let i = _openStage()
    // A relevance sort scores the text conditions of the filter it sorts: they change when
    // a search joins with AND, or an OR makes the searches before it one side of it.
    defer { if (mode == .or || node.andSearches.count > 0) && sortsByRelevance { bindRelevance() } }
    guard let existing = stages[i].filter else {
      stages[i].filter = node
      return
    }
    switch mode {
    case .and: stages[i].filter = existing && node
    // Everything before is one operand, as if in parentheses; an OR before flattens into
    // the new one, which means the same and keeps a chain built in a loop flat.
    case .or: stages[i].filter = existing || node
    }
  }

  @usableFromInline
  mutating func addSort(_ keys: [_SortKey<Element>]) {
    twinsResolved = false
    let i = _openStage()
    stages[i].sort += keys
    if sortsByRelevance { bindRelevance() }
  }

  /// Reads the set so far backwards. A stage reverses before it keeps distinct records,
  /// so a `reversed()` written after `distinct` opens a stage of its own: it must read
  /// the distinct records backwards, not keep the last record of each value.
  mutating func reverse() {
    var i = _openStage()
    if stages[i].distinct != nil {
      stages.append(_Stage())
      i += 1
    }
    stages[i].reversed.toggle()
  }

  @usableFromInline
  mutating func distinct(_ key: _DistinctKey<Element>) {
    let i = _openStage()
    stages[i].distinct = key
  }

  /// - Precondition: `n >= 0` (the builders check it).
  mutating func limit(_ n: Int) {
    let i = stages.count - 1
    stages[i].window.limit = min(stages[i].window.limit ?? n, n)
  }

  /// Offsets add up and saturate at `Int.max`, which skips everything.
  /// - Precondition: `n >= 0` (the builders check it).
  mutating func offset(_ n: Int) {
    let i = stages.count - 1
    let (sum, overflow) = stages[i].window.offset.addingReportingOverflow(n)
    stages[i].window.offset = overflow ? Int.max : sum
    if let limit = stages[i].window.limit { stages[i].window.limit = max(0, limit - n) }
  }
}

/// Filter, then order (sort, or reverse), then keep distinct records, then window.
struct _Stage<Element: Sendable>: Sendable {
  var filter: _FilterNode<Element>?
  var sort: [_SortKey<Element>] = []
  /// The stage's order, sorted or not, read backwards: the exact reverse, ties included.
  var reversed = false
  /// Keep only the first record for each value of this key.
  var distinct: _DistinctKey<Element>?
  var window = _Window()

  /// The `explain()` lines of the stage's reverse, distinct and window, in that order.
  var explainedTail: [String] {
    var lines: [String] = []
    if reversed {
      lines.append("  reverse: " + (sort.isEmpty ? "the order before" : "the sort above"))
    }
    if let distinct {
      lines.append("  distinct: first record for each \(distinct.description)")
    }
    if window.isSet {
      var parts: [String] = []
      if window.offset > 0 { parts.append("offset \(window.offset)") }
      if let limit = window.limit { parts.append("limit \(limit)") }
      lines.append("  window: " + parts.joined(separator: ", "))
    }
    return lines
  }
}

/// The key `distinct` compares records by.
@usableFromInline
enum _DistinctKey<Element: Sendable>: Sendable {
  case field(String)
  case typed(description: String, value: @Sendable (UnsafePointer<Element>) -> AnyHashable)

  var description: String {
    switch self {
    case .field(let key): return key
    case .typed(let description, _): return description
    }
  }
}

/// Rows `offset ..< offset + limit` of what the filter and sort produced.
struct _Window: Sendable, Equatable {
  var offset = 0
  var limit: Int?

  var isSet: Bool { offset != 0 || limit != nil }

  /// How many rows the window needs from the top, `offset + limit` (saturating), or nil
  /// without a limit.
  var needed: Int? {
    limit.map { let (sum, overflow) = offset.addingReportingOverflow($0); return overflow ? Int.max : sum }
  }

  /// The slice of `0..<count` the window keeps.
  func range(in count: Int) -> Range<Int> {
    let start = min(offset, count)
    let end = limit.map { start > count - $0 ? count : start + $0 } ?? count
    return start..<end
  }
}

/// One sort key: a string key or a typed key path, with a direction.
@usableFromInline
enum _SortKey<Element: Sendable>: Sendable {
  case field(key: String, order: RequestSortOrder, collation: RequestCollation)
  case typed(_TypedSort<Element>)
  /// Best match first by the BM25 score of the set's text search (see TextRelevance.swift).
  case relevance(_RelevanceSort)

  var description: String {
    switch self {
    case .relevance(let r): return r.description
    case .field(let key, let order, let collation):
      return "\(key) \(order == .ascending ? "ASC" : "DESC")" + (collation == .binary ? "" : " [\(collation)]")
    case .typed(let t):
      return "\(t.description) \(t.order == .ascending ? "ASC" : "DESC")"
    }
  }
}

/// A typed sort key; its comparison is specialized where the key path was written.
@usableFromInline
struct _TypedSort<Element>: Sendable {
  @usableFromInline let description: String
  @usableFromInline let order: RequestSortOrder
  /// -1, 0 or 1 for ascending order; nil orders before any value.
  @usableFromInline let compare: @Sendable (UnsafePointer<Element>, UnsafePointer<Element>) -> Int
  /// The store key whose encoded values order exactly as `compare` does, when there is
  /// one: the planner may then walk an index on it (see `TypedFieldTwin.swift`). Nil as
  /// built; set when the query is prepared (see ``resolvingFieldKey()``).
  @usableFromInline var fieldKey: String?
  /// How to find ``fieldKey`` when the query is prepared; nil when the key path's values
  /// do not order as their encoded form.
  @usableFromInline let findFieldKey: (@Sendable () -> String?)?
  /// When set, the key's value is a function of one stored key's encoded value, compared
  /// with a collation: a sort through a relation reads the related value of the record's
  /// foreign key (or id). A store whose records are not in memory then reads that field
  /// once per record, where `compare` would decode two records at every comparison.
  @usableFromInline var throughField: _ThroughField?
  /// When set, a sort through a relation whose store may run it (both stores in one
  /// database): ``compare`` and ``throughField`` stand in, and the related values are read
  /// only if the sort runs in process, by ``inProcess()`` (see RelatedSort.swift).
  @usableFromInline var related: _RelatedSort<Element>?

  @inlinable
  init(
    description: String, order: RequestSortOrder, fieldKey: (@Sendable () -> String?)? = nil,
    compare: @escaping @Sendable (UnsafePointer<Element>, UnsafePointer<Element>) -> Int
  ) {
    self.description = description
    self.order = order
    self.throughField = nil
    self.related = nil
    self.fieldKey = nil
    self.findFieldKey = fieldKey
    self.compare = compare
  }

  /// The sort key with its store key decided now.
  func resolvingFieldKey() -> _TypedSort {
    guard let findFieldKey else { return self }
    var resolved = self
    resolved.fieldKey = findFieldKey()
    return resolved
  }
}

/// A sort key's value read off one stored key (see `_TypedSort.throughField`).
@usableFromInline
struct _ThroughField: Sendable {
  /// The record's stored key.
  let key: String
  /// How the values compare.
  let collation: RequestCollation
  /// The sort value for the key's encoded value (nil for a record without it).
  let value: @Sendable (FieldValue) -> FieldValue
}

/// The direction of a sort key.
///
/// ```swift
/// animals.sortBy("name", order: .descending)
/// ```
public enum RequestSortOrder: Sendable, Hashable {
  /// Smallest first; `nil` sorts before any value (the default).
  case ascending
  /// Largest first; `nil` sorts after every value.
  case descending
}

/// -1, 0 or 1 as `a` sorts before, with or after `b`: a total order even for values that
/// are not equal to themselves (NaN), which sort after every other value and tie with
/// each other, as string-key sorts order them (see `FieldValue._order`).
@inlinable
func _three<V: Comparable>(_ a: V, _ b: V) -> Int {
  if a < b { return -1 }
  if a == b { return 0 }
  if b < a { return 1 }
  let aUnordered = a != a, bUnordered = b != b
  return aUnordered == bUnordered ? 0 : (aUnordered ? 1 : -1)
}

@inlinable
func _three<V: Comparable>(_ a: V?, _ b: V?) -> Int {
  switch (a, b) {
  case (nil, nil): return 0
  case (nil, _): return -1
  case (_, nil): return 1
  case (let x?, let y?): return _three(x, y)
  }
}

extension _TypedSort {
  /// A sort on a `Comparable` key path, read at its stored offset when there is one.
  @inlinable
  static func make<V: Comparable & Sendable>(_ keyPath: KeyPath<Element, V> & Sendable, order: RequestSortOrder) -> _TypedSort {
    let key = _sortFieldKey(keyPath, Element.self, V.self)
    if let offset = MemoryLayout<Element>.offset(of: keyPath) {
      return _TypedSort(description: "\(keyPath)", order: order, fieldKey: key) {
        _three(
          _borrowedField($0, offset, V.self).pointee,
          _borrowedField($1, offset, V.self).pointee)
      }
    }
    return _TypedSort(description: "\(keyPath)", order: order, fieldKey: key) {
      _three($0.pointee[keyPath: keyPath], $1.pointee[keyPath: keyPath])
    }
  }

  /// A sort on an optional `Comparable` key path; nil orders first.
  @inlinable
  static func make<V: Comparable & Sendable>(_ keyPath: KeyPath<Element, V?> & Sendable, order: RequestSortOrder) -> _TypedSort {
    let key = _sortFieldKey(keyPath, Element.self, V?.self)
    if let offset = MemoryLayout<Element>.offset(of: keyPath) {
      return _TypedSort(description: "\(keyPath)", order: order, fieldKey: key) {
        _three(
          _borrowedField($0, offset, V?.self).pointee,
          _borrowedField($1, offset, V?.self).pointee)
      }
    }
    return _TypedSort(description: "\(keyPath)", order: order, fieldKey: key) {
      _three($0.pointee[keyPath: keyPath], $1.pointee[keyPath: keyPath])
    }
  }

  /// A sort on a string key path with a collation.
  static func make(
    _ keyPath: KeyPath<Element, String> & Sendable, order: RequestSortOrder, collation: RequestCollation
  ) -> _TypedSort {
    _TypedSort(description: "\(keyPath) [\(collation)]", order: order) {
      collation._compare($0.pointee[keyPath: keyPath], $1.pointee[keyPath: keyPath])
    }
  }

  /// A sort on an optional string key path with a collation; nil orders first.
  static func make(
    _ keyPath: KeyPath<Element, String?> & Sendable, order: RequestSortOrder, collation: RequestCollation
  ) -> _TypedSort {
    _TypedSort(description: "\(keyPath) [\(collation)]", order: order) {
      switch ($0.pointee[keyPath: keyPath], $1.pointee[keyPath: keyPath]) {
      case (nil, nil): return 0
      case (nil, _): return -1
      case (_, nil): return 1
      case (let a?, let b?): return collation._compare(a, b)
      }
    }
  }
}
