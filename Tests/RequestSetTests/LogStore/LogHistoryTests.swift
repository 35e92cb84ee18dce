import Foundation
import Testing

@testable import RequestSet

/// Reads as of a past commit, differentially: seeded random writes go to a `LogStore` and
/// to a model (contents in store order, per version), and every readable version is read
/// back through several query forms and compared with the model, after reopening, after
/// compaction with each history option, and with the log cut at frame boundaries.
@Suite(.ownThreads) struct LogHistoryTests {
  /// A model of the store: contents in store order (a save keeps its place, a delete
  /// removes, an insert appends), recorded after every commit.
  struct Model {
    var current: [Beast] = []
    /// `states[v]`: the contents at version v; `states[0]` is empty.
    var states: [[Beast]] = [[]]
    /// `changed[v]`: the records commit v changed.
    var changed: [Int] = [0]
    /// `after[v]`: a time read just after commit v returned.
    var after: [Date] = [.distantPast]

    var version: UInt64 { UInt64(states.count - 1) }

    mutating func commit(_ changes: [RecordChange<Beast>]) {
      for change in changes {
        switch change {
        case .insert(let b), .save(let b):
          if let i = current.firstIndex(where: { $0.id == b.id }) { current[i] = b } else { current.append(b) }
        case .delete(let id):
          current.removeAll { $0.id == id }
        }
      }
      states.append(current)
      changed.append(changes.count)
      after.append(Date())
    }
  }

  /// Writes `steps` random commits (inserts, saves, deletes, batches) to `store` and `model`.
  static func write(
    _ steps: Int, to store: LogStore<Beast>, _ model: inout Model, _ rng: inout SeededRandom, nextID: inout Int
  ) throws {
    func beast(_ id: Int) -> Beast {
      Beast(
        id: id, name: "n\(rng.next() % 30)", species: ["Mouse", "Dog", "Cow"][Int(rng.next() % 3)],
        age: Int(rng.next() % 20), owner: rng.next() % 2 == 0 ? .init(city: "c\(rng.next() % 4)") : nil)
    }
    for _ in 0..<steps {
      let ids = model.current.map(\.id)
      func pick() -> Int { ids[Int(rng.next() % UInt64(ids.count))] }
      let roll = ids.isEmpty ? 0 : rng.next() % 6
      let changes: [RecordChange<Beast>]
      switch roll {
      case 0, 1:
        let b = beast(nextID)
        nextID += 1
        try store.insert(b)
        changes = [.insert(b)]
      case 2:
        let b = beast(pick())
        try store.save(b)
        changes = [.save(b)]
      case 3:
        let id = pick()
        try store.delete(id: id)
        changes = [.delete(id: id)]
      case 4:
        let batch = (0..<(1 + Int(rng.next() % 3))).map { beast(nextID + $0) }
        nextID += batch.count
        try store.insert(contentsOf: batch)
        changes = batch.map { .insert($0) }
      default:
        // A batch through apply: an insert, a save and a delete of another record.
        let saved = pick()
        let deleted = ids.first { $0 != saved }
        var batch: [RecordChange<Beast>] = [.insert(beast(nextID)), .save(beast(saved))]
        nextID += 1
        if let deleted { batch.append(.delete(id: deleted)) }
        try store.apply(batch, ifVersion: nil)
        changes = batch
      }
      model.commit(changes)
    }
  }

  /// Reads `past` through many query forms and compares each answer with the model's
  /// records and with a `MemoryStore` holding them in the same order.
  static func expectSameAnswers(_ past: RequestSet<Beast>, _ state: [Beast], _ context: String) throws {
    let memory = MemoryStore<Beast>()
    try memory.insert(contentsOf: state)
    let reference = RequestSet(memory)
    let c = Comment(rawValue: context)
    #expect(try past.fetch() == state, c)
    #expect(past.count == state.count, c)
    #expect(try past.ids() == state.map(\.id), c)
    #expect(try past.filter("species", value: "Dog").fetch() == state.filter { $0.species == "Dog" }, c)
    #expect(try past.filter(\.age > 10).fetch() == state.filter { $0.age > 10 }, c)
    #expect(try past.filter { $0.name.hasSuffix("1") }.fetch() == state.filter { $0.name.hasSuffix("1") }, c)
    #expect(
      try past.filter("age >= %@ AND species != 'Cow'", 5).fetch()
        == state.filter { $0.age >= 5 && $0.species != "Cow" }, c)
    #expect(try past.filter("owner.city", value: "c1").fetch() == state.filter { $0.owner?.city == "c1" }, c)
    // Sorts: ties keep store order.
    let byAgeThenName = state.enumerated().sorted {
      ($0.element.age, $1.element.name, $0.offset) < ($1.element.age, $0.element.name, $1.offset)
    }.map(\.element)
    #expect(try past.sortBy("age", "-name").fetch() == byAgeThenName, c)
    #expect(try past.sortBy(\.age).offset(2).limit(3).fetch() == (try reference.sortBy(\.age).offset(2).limit(3).fetch()), c)
    #expect(try past.sum("age") == .int(state.map(\.age).reduce(0, +)), c)
    #expect(try past.max(\.age) == state.map(\.age).max(), c)
    #expect(try past.values("name", "owner.city") == (try reference.values("name", "owner.city")), c)
    #expect(
      try past.groupBy("species").aggregate(.count, .max("age")).fetch()
        == (try reference.groupBy("species").aggregate(.count, .max("age")).fetch()), c)
    if let one = state.last {
      #expect(try past.filter(\.id == one.id).get() == one, c)
    }
  }

  /// The versions compaction keeps, given the oldest kept so far and the current one.
  static func oldestKept(after option: LogHistoryRetention, oldest: UInt64, current: UInt64) -> UInt64 {
    switch option {
    case .none: return current
    case .versions(let n): return Swift.max(oldest, current >= UInt64(n) ? current - UInt64(n) + 1 : 1)
    case .all: return oldest
    case .since: preconditionFailure("not used here")
    }
  }

  /// Checks history and every version against the model: the kept ones read as the model
  /// was, the others throw `.versionUnavailable` naming the range.
  static func expectHistory(
    _ store: LogStore<Beast>, _ model: Model, oldest: UInt64, compacted: Bool, _ context: String
  ) throws {
    let history = try store.history()
    #expect(history.map(\.version) == Array(oldest...model.version), "\(context)")
    #expect(try store.snapshot().version == model.version, "\(context)")
    for commit in history {
      let v = Int(commit.version)
      // The oldest commit of a compacted log stands for everything before it: its records.
      let changed = compacted && commit == history.first ? model.states[v].count : model.changed[v]
      #expect(commit.recordsChanged == changed, "\(context), version \(v)")
      #expect(commit.hasTime && commit.time <= model.after[v], "\(context), version \(v)")
      try expectSameAnswers(try RequestSet(store, asOf: commit.version), model.states[v], "\(context), version \(v)")
    }
    for v in [0, oldest - 1, model.version + 1] where v < oldest || v > model.version {
      let error = #expect(throws: RequestSetError.self, "\(context), version \(v)") { try RequestSet(store, asOf: v) }
      #expect(error?.code == .versionUnavailable)
      #expect(
        error?.message
          == "Version \(v) of the LogStore at \(store.path) is not readable: the log keeps versions \(oldest) through "
          + "\(model.version). Compaction drops older versions (keep more with LogStoreOptions.keepHistory); pick a "
          + "version from store.history().", "\(context)")
    }
  }

  @Test(arguments: [LogHistoryRetention.none, .versions(7), .all])
  func everyKeptVersionReadsAsTheModelWas(keep: LogHistoryRetention) throws {
    let seed = testSeed("everyKeptVersionReadsAsTheModelWas(\(keep))")
    var rng = SeededRandom(seed: seed)
    let dir = try LogTempDir()
    let options = LogStoreOptions(autoCompactDeadRatio: nil, keepHistory: keep)
    var store = try LogStore<Beast>(path: dir.file(), options: options)
    var model = Model()
    var nextID = 1
    var oldest: UInt64 = 1
    for round in 0..<4 {
      try Self.write(25, to: store, &model, &rng, nextID: &nextID)
      try Self.expectHistory(store, model, oldest: oldest, compacted: round > 0, "seed \(seed), \(keep), round \(round)")
      if round % 2 == 1 {
        store.close()
        store = try LogStore<Beast>(path: dir.file(), options: options)
        try Self.expectHistory(
          store, model, oldest: oldest, compacted: round > 0, "seed \(seed), \(keep), reopened in round \(round)")
      }
      try store.compact()
      oldest = Self.oldestKept(after: keep, oldest: oldest, current: model.version)
      try Self.expectHistory(
        store, model, oldest: oldest, compacted: true, "seed \(seed), \(keep), compacted in round \(round)")
    }
    store.close()
    let reader = try LogStore<Beast>(path: dir.file(), options: .init(readOnly: true))
    try Self.expectHistory(reader, model, oldest: oldest, compacted: true, "seed \(seed), \(keep), read-only")
  }
}
