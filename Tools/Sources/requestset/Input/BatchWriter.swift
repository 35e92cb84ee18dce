import Foundation
import RequestSet
import Synchronization

/// Writes an import's batches on a thread of its own, so reading and parsing the input
/// (on the calling thread) overlaps with checking ids and encoding and writing records:
/// on two cores an import takes about the longer of the two, not their sum.
///
/// At most ``queueLimit`` batches wait, so memory stays bounded however fast the input is
/// read. Each batch is checked (ids used twice, ids already stored) and written as one
/// commit; after the first bad line, from either thread, nothing more is written.
///
/// `@unchecked Sendable`: every mutable property is read and written only under
/// `condition`'s lock, except `store` and `original`, which are used by the writing thread
/// alone once it starts (LogStore is itself safe to share), and the counts, which the
/// caller reads only after ``finish()`` has joined the thread.
final class BatchWriter: @unchecked Sendable {
  /// One input record with the line it came from.
  typealias Item = (line: Int, record: DynamicRecord)

  /// Batches waiting to be written, at most.
  static let queueLimit = 2

  private let store: LogStore<DynamicRecord>
  private let original: LogStore<DynamicRecord>?
  private let upsert: Bool
  /// The keys an upsert matches on (`--on`); empty to match on the id.
  private let keys: [String]
  private let file: String
  private let condition = NSCondition()
  private var queue: [[Item]] = []
  private var done = false
  private var finished = false
  private var error: (any Error)?
  private let problems: Mutex<[InputProblem]>
  private let problemCount = Atomic<Int>(0)
  /// Records inserted and replaced; read after ``finish()``.
  private(set) var inserted = 0
  private(set) var replaced = 0
  /// How many bad lines are kept to list (the rest are only counted).
  let shownProblems: Int

  init(
    store: LogStore<DynamicRecord>, original: LogStore<DynamicRecord>?, upsert: Bool, on keys: [String] = [],
    file: String, shownProblems: Int
  ) {
    self.keys = keys
    self.store = store
    self.original = original
    self.upsert = upsert
    self.file = file
    self.shownProblems = shownProblems
    problems = Mutex([])
    let thread = Thread { [self] in
      Interrupt.useAlternateSignalStack()
      self.loop()
    }
    thread.stackSize = 1 << 22
    thread.start()
  }

  /// Whether a bad line was found: from then on, nothing is written.
  var failed: Bool { problemCount.load(ordering: .relaxed) > 0 }

  /// Records a bad line.
  func report(_ problem: InputProblem) {
    problemCount.add(1, ordering: .relaxed)
    problems.withLock { if $0.count < shownProblems { $0.append(problem) } }
  }

  /// The bad lines kept to list, sorted by line, and how many there were in all.
  var badLines: (listed: [InputProblem], count: Int) {
    (problems.withLock { $0.sorted { $0.line < $1.line } }, problemCount.load(ordering: .relaxed))
  }

  /// Hands a batch to the writing thread; waits while ``queueLimit`` batches wait.
  func submit(_ batch: [Item]) {
    condition.lock()
    while queue.count >= Self.queueLimit && error == nil { condition.wait() }
    queue.append(batch)
    condition.broadcast()
    condition.unlock()
  }

  /// Waits until every batch is written and the thread ends.
  ///
  /// - Throws: What writing a batch threw (a library error), if anything.
  func finish() throws {
    condition.lock()
    done = true
    condition.broadcast()
    while !finished { condition.wait() }
    let error = self.error
    condition.unlock()
    if let error { throw error }
  }

  private func loop() {
    while true {
      condition.lock()
      while queue.isEmpty && !done { condition.wait() }
      if queue.isEmpty {
        finished = true
        condition.broadcast()
        condition.unlock()
        return
      }
      let batch = queue.removeFirst()
      condition.broadcast()
      let stop = error != nil
      condition.unlock()
      if stop { continue }
      do {
        try write(batch)
      } catch {
        condition.lock()
        self.error = error
        condition.broadcast()
        condition.unlock()
      }
    }
  }

  /// Checks a batch's ids and writes it as one commit (unless a line was bad).
  ///
  /// An insert-only batch is first written as it is: the store refuses it whole, writing
  /// nothing, when an id is stored or occurs twice, and only then are its ids checked one
  /// by one to name the lines. Most batches so cost no lookup per record.
  private func write(_ batch: [Item]) throws {
    if !keys.isEmpty {
      // The library checks the batch (a key value nil or repeated, an inserted id already
      // stored) and writes it as one commit, or throws and writes nothing.
      guard !failed else { return }
      let result = try store.upsert(batch.lazy.map(\.record), on: keys)
      inserted += result.inserted
      replaced += result.updated
      return
    }
    if !upsert && !failed {
      do {
        try store.insert(contentsOf: batch.lazy.map(\.record))
        inserted += batch.count
        return
      } catch let error as RequestSetError where error.code == .duplicateID {
        // Find the lines below.
      }
    }
    var lines: [FieldValue: Int] = [:]
    lines.reserveCapacity(batch.count)
    var changes: [RecordChange<DynamicRecord>] = []
    changes.reserveCapacity(batch.count)
    var replacing = 0
    for (line, record) in batch {
      let id = record.id
      if let earlier = lines.updateValue(line, forKey: id) {
        report(InputProblem(line: line, reason: "its id \(id) is also the id on line \(earlier)"))
        continue
      }
      let stored = try store.exists(id: id)
      if stored && !upsert {
        let before = try original?.exists(id: id) ?? false
        report(
          InputProblem(
            line: line,
            reason: before
              ? "its id \(id) is already stored in \(file) (use --upsert to replace stored records)"
              : "its id \(id) is also the id of an earlier line"))
        continue
      }
      if failed { continue }
      if stored {
        replacing += 1
        changes.append(.save(record))
      } else {
        changes.append(.insert(record))
      }
    }
    guard !failed, !changes.isEmpty else { return }
    if upsert {
      try store.apply(changes, ifVersion: nil)
    } else {
      try store.insert(contentsOf: batch.lazy.map(\.record))
    }
    inserted += changes.count - replacing
    replaced += replacing
  }
}
