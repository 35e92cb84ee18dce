import Synchronization

@testable import RequestSet

/// A test store adopting the pushdown seam over a `MemoryStore`, with a partial capability,
/// so every shared suite runs through pushdown plus an in-process remainder without SQL:
/// - conditions: `.exact` for plain comparisons (binary collation, no `[c]`/`[d]`), IN and
///   BETWEEN on keys without dots; `.superset` for `[c]` CONTAINS/BEGINSWITH/ENDSWITH/LIKE
///   on such keys, answered with a looser test (any string or array matches); `.none` for
///   the rest, and for a key or value the engine would reject (so it raises its error);
/// - sorts exact for the binary collation on keys without dots; distinct exact on such keys.
///
/// Its reader evaluates over one snapshot with `StoreCondition.matches` and
/// `StoreSortKey.compare` (ties by store order) and counts what it hands out.
final class PushdownMemoryStore<Element: Record>: QueryPushdownStore, _CommitPublishing {
  let base = MemoryStore<Element>()
  /// Records every reader has handed out.
  let handedOut = Atomic<Int>(0)
  /// Readers opened.
  let readersOpened = Atomic<Int>(0)
  /// The queries `update(matching:set:)`, `delete(matching:)` and `aggregate` ran.
  let pushedWrites = Mutex<[String]>([])

  init() {}

  func queryReader() throws -> any StoreQueryReader<Element> {
    readersOpened.add(1, ordering: .relaxed)
    return try Reader(self, try base.snapshot())
  }

  func update(matching query: StoreQuery, set assignments: [(key: String, value: FieldValue)]) throws -> Int?
  {
    let snapshot = try base.snapshot()
    let fields = try snapshot._fields()
    for (key, value) in assignments { try _FilterCompiler<Element>.validate(key, value: value, in: fields) }
    let reader = try Reader(self, snapshot, counting: false)
    var changes: [RecordChange<Element>] = []
    try reader.records(query) { record in
      var tree = try FieldValue(encoding: record)
      for (key, value) in assignments { tree = tree._setting(value, at: key[...]) }
      changes.append(
        .save(
          try _decodeRecord(
            Element.self, from: tree, purpose: "update", alternative: "update { … } with a closure")))
      return true
    }
    pushedWrites.withLock { $0.append("update \(query)") }
    if !changes.isEmpty { try base.apply(changes, ifVersion: snapshot.version) }
    return changes.count
  }

  func delete(matching query: StoreQuery) throws -> Int? {
    let snapshot = try base.snapshot()
    let reader = try Reader(self, snapshot, counting: false)
    var changes: [RecordChange<Element>] = []
    try reader.records(query) {
      changes.append(.delete(id: $0.id))
      return true
    }
    pushedWrites.withLock { $0.append("delete \(query)") }
    if !changes.isEmpty { try base.apply(changes, ifVersion: snapshot.version) }
    return changes.count
  }

  // RecordStore, forwarded.
  func insert(_ record: Element) throws { try base.insert(record) }
  func insert(contentsOf records: some Sequence<Element>) throws { try base.insert(contentsOf: records) }
  func save(_ record: Element) throws { try base.save(record) }
  @discardableResult func delete(id: Element.ID) throws -> Bool { try base.delete(id: id) }
  func apply(_ changes: [RecordChange<Element>], ifVersion expectedVersion: UInt64?) throws {
    try base.apply(changes, ifVersion: expectedVersion)
  }
  func fetch(id: Element.ID) throws -> Element? { try base.fetch(id: id) }
  func snapshot() throws -> StoreSnapshot<Element> { try base.snapshot() }
  func commits(polling interval: Duration) -> AsyncStream<StoreCommit<Element>> {
    base.commits(polling: interval)
  }
  func close() { base.close() }
  var _liveFeed: AnyObject? { base._liveFeed }

  /// One snapshot of the store, read for one evaluation.
  final class Reader: StoreQueryReader {
    let store: PushdownMemoryStore<Element>
    let snapshot: StoreSnapshot<Element>
    let counting: Bool
    /// The snapshot's fields (`_FieldAccess` is not `Sendable`, so not kept; the snapshot
    /// builds them once).
    var fields: any _FieldAccess { get throws { try snapshot._fields() } }

    init(_ store: PushdownMemoryStore<Element>, _ snapshot: StoreSnapshot<Element>, counting: Bool = true)
      throws
    {
      self.store = store
      self.snapshot = snapshot
      self.counting = counting
    }

    var version: UInt64 { snapshot.version }

    private static func plainKey(_ key: String) -> Bool { !key.contains(".") && !key.contains("\\") }

    func support(for condition: StoreCondition) -> PushdownSupport {
      guard Self.plainKey(condition.key) else {
        return .none(reason: "PushdownMemoryStore runs no dotted key")
      }
      do {
        try _FilterCompiler<Element>.validate(condition._condition, in: try fields)
      } catch {
        return .none(reason: "the engine checks \(condition.key)")
      }
      guard condition.quantifier == nil, !condition.countsElements else {
        return .none(reason: "PushdownMemoryStore runs no ANY, ALL, NONE or @count")
      }
      let folds = condition.caseInsensitive || condition.diacriticInsensitive
      switch condition.operator {
      case .compare, .between, .in:
        return !folds && condition.collation == .binary
          ? .exact : .none(reason: "PushdownMemoryStore compares binary text only")
      case .contains, .beginsWith, .endsWith, .like:
        return Self.isSuperset(condition)
          ? .superset : .none(reason: "PushdownMemoryStore runs \(condition.operator) only with [c]")
      case .matches:
        return .none(reason: "PushdownMemoryStore runs no MATCHES")
      }
    }

    /// Full-text conditions on plain keys, with the engine's own matcher.
    func support(for search: StoreTextSearch) -> PushdownSupport {
      for key in search.keys {
        guard Self.plainKey(key) else { return .none(reason: "PushdownMemoryStore runs no dotted key") }
        guard (try? _FilterCompiler<Element>.validate(key, value: nil, in: try fields)) != nil else {
          return .none(reason: "the engine checks \(key)")
        }
      }
      return .exact
    }

    /// The conditions this store answers with a looser test.
    private static func isSuperset(_ c: StoreCondition) -> Bool {
      switch c.operator {
      case .contains, .beginsWith, .endsWith, .like: return c.caseInsensitive && !c.diacriticInsensitive
      default: return false
      }
    }

    func support(for sort: StoreSortKey) -> PushdownSupport {
      guard Self.plainKey(sort.key), sort.collation == .binary else {
        return .none(reason: "PushdownMemoryStore sorts binary text on plain keys only")
      }
      do {
        try _FilterCompiler<Element>.validate(sort.key, value: nil, in: try fields)
      } catch {
        return .none(reason: "the engine checks \(sort.key)")
      }
      return .exact
    }

    func support(forDistinct key: String) -> PushdownSupport {
      guard Self.plainKey(key),
        (try? _FilterCompiler<Element>.validate(key, value: nil, in: try fields)) != nil
      else {
        return .none(reason: "PushdownMemoryStore keeps distinct values of plain keys only")
      }
      return .exact
    }

    /// The field a key reads in a slot (nil when absent).
    private func value(_ key: String, _ slot: Int, _ fields: any _FieldAccess) throws -> FieldValue {
      try fields.reader(for: key).map { try $0(slot) } ?? .null
    }

    /// The store's own test: exact conditions as the engine's, superset ones looser.
    private func matches(_ filter: StoreFilter, _ slot: Int, _ fields: any _FieldAccess) throws -> Bool {
      switch filter {
      case .constant(let b): return b
      case .condition(let c):
        let field = try value(c.key, slot, fields)
        if c.matches(field) { return true }
        if Self.isSuperset(c) {
          switch field {
          case .string, .array: return true
          default: return false
          }
        }
        return false
      case .and(let terms): return try terms.allSatisfy { try matches($0, slot, fields) }
      case .or(let terms): return try terms.contains { try matches($0, slot, fields) }
      case .not(let inner): return try !matches(inner, slot, fields)
      case .search(let s): return s.matches(try s.keys.map { try value($0, slot, fields) })
      case .subquery: return false  // never received: the reader supports none
      }
    }

    /// The slots `query` selects, in order.
    private func slots(_ query: StoreQuery) throws -> [Int] {
      let fields = try self.fields
      var slots = snapshot._liveSlots()
      if let filter = query.filter { slots = try slots.filter { slot in try matches(filter, slot, fields) } }
      if !query.sort.isEmpty {
        var keyed: [(slot: Int, values: [FieldValue])] = []
        for slot in slots {
          keyed.append((slot, try query.sort.map { key in try value(key.key, slot, fields) }))
        }
        keyed.sort { a, b in
          for (i, key) in query.sort.enumerated() {
            let c = key.compare(a.values[i], b.values[i])
            if c != 0 { return c < 0 }
          }
          return a.slot < b.slot
        }
        slots = keyed.map { $0.slot }
      }
      if let key = query.distinct {
        // Values compare as the engine's `distinct` compares them: NaN ties with NaN, at any
        // depth (an array's `==` alone ties two [NaN]s only when they share storage).
        var seen = Set<_GroupingKey>()
        slots = try slots.filter { slot in seen.insert(_GroupingKey(try value(key, slot, fields))).inserted }
      }
      let start = min(query.offset, slots.count)
      let end = query.limit.map { min(slots.count, start + min($0, slots.count)) } ?? slots.count
      return Array(slots[start..<end])
    }

    func count(_ query: StoreQuery) throws -> Int { try slots(query).count }

    func records(_ query: StoreQuery, _ body: (Element) throws -> Bool) throws {
      for slot in try slots(query) {
        if counting { store.handedOut.add(1, ordering: .relaxed) }
        if try !body(try snapshot._record(at: slot)) { return }
      }
    }

    func explain(_ query: StoreQuery) throws -> StoreExplanation {
      StoreExplanation(
        statement: "SCAN \(query)", bindings: query.filter?.conditions.map(\.value.description) ?? [],
        plan: ["scan \(snapshot.count) records"])
    }

    func aggregate(_ function: StoreAggregate, of key: String, _ query: StoreQuery) throws -> FieldValue? {
      store.pushedWrites.withLock { $0.append("\(function.rawValue)(\(key)) \(query)") }
      // The engine checks the kinds a key holds in the whole store, not in the records
      // selected: a key holding a string anywhere has no sum, whatever the filter.
      let fields = try self.fields
      try _FilterCompiler<Element>.validate(key, value: nil, in: fields)
      let engineFunction: RequestAggregate.Function =
        switch function {
        case .sum: .sum
        case .min: .min
        case .max: .max
        case .average: .avg
        }
      try _Accumulator.check(engineFunction, key: key, kinds: fields.kinds[key] ?? _KindSet(), type: Element.self)
      let matched = try slots(query).map { try snapshot._record(at: $0) }
      let set = RequestSet(matched)
      switch function {
      case .sum: return try set.sum(key)
      case .min: return try set.min(key)
      case .max: return try set.max(key)
      case .average: return try set.average(key).map(FieldValue.double) ?? .null
      }
    }
  }
}
