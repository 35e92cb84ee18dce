import Foundation
import RequestSet
import Synchronization
import Testing

@testable import RequestSetSQLite

/// A cancel that comes between two statements of a write through a query stops the next
/// one, and the write writes nothing.
///
/// `sqlite3_interrupt` reaches only statements that are running: SQLite forgets it when
/// none is, and a statement that starts on a connection with none running clears it. A
/// full test run once lost a cancel that way (the write never returned, and its time
/// limit failed `aCancelledSQLiteWriteThroughAQueryWritesNothing`); each connection now
/// also has a progress handler that stops any statement of a cancelled call.
///
/// Here the cancel comes at that moment every time: from the statement hook, as the
/// write prepares its UPDATE or DELETE. A trigger makes that statement run for ever
/// unless it is stopped. On this SQLite the interrupt alone also stops it whenever an
/// earlier statement of the connection is still open (a cached statement not yet reset),
/// so the test passes without the handler as well; it pins the outcome, the handler
/// covers the connection whose statements have all ended.
@Suite(.ownThreads) struct SQLiteCancellationGapTests {
  @Test(.timeLimit(.minutes(10)), arguments: ["update", "delete"])
  func aCancelBetweenTwoStatementsOfAWriteStopsTheNextOne(write: String) throws {
    let path = TemporaryLogDirectory.freshPath("gap.sqlite")
    let table = "gap_\(write)"
    let store = try SQLiteStore<Animal>(path: path, table: table)
    defer { store.close() }
    let herd = Animal.random(count: 50, seed: 51)
    try store.insert(contentsOf: herd)
    try StoreFieldKindsTests.sqlite(
      path,
      """
      CREATE TRIGGER slow BEFORE \(write.uppercased()) ON \(table) BEGIN
        SELECT (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000000) SELECT count(*) FROM c);
      END;
      """)
    let set = RequestSet(store).filter("age", .greaterThanOrEqual, 0)
    let shared = Shared()
    let done = DispatchSemaphore(value: 0)
    _SQLiteConnection._watchStatements({ sql in
      // The write's own statement, about to be prepared: the statements before it in the
      // transaction have run to their end.
      guard sql.hasPrefix(write.uppercased()), sql.contains(table), !shared.cancelled.load(ordering: .relaxed)
      else { return }
      while true {
        if let running = shared.task.withLock({ $0 }) {
          shared.cancelled.store(true, ordering: .relaxed)
          running.cancel()
          return
        }
        usleep(1_000)
      }
    }) {
      shared.task.withLock {
        $0 = Task {
          defer { done.signal() }
          do {
            let count = write == "update" ? try await set.async.update("age", value: -1) : try await set.async.delete()
            shared.outcome.withLock { $0 = .success(count) }
            return count
          } catch {
            shared.outcome.withLock { $0 = .failure(error) }
            throw error
          }
        }
      }
      done.wait()
    }
    let cancelledBetween = shared.cancelled.load(ordering: .relaxed)
    #expect(cancelledBetween, "the hook cancelled the write between its statements")
    let result = try #require(shared.outcome.withLock { $0 })
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(try RequestSet(store).sortBy(\.id).fetch() == herd.sorted { $0.id < $1.id }, "\(write) wrote nothing")
  }

  /// What the hook, the write's task and the test share.
  final class Shared: Sendable {
    let task = Mutex<Task<Int, any Error>?>(nil)
    let cancelled = Atomic<Bool>(false)
    let outcome = Mutex<Result<Int, any Error>?>(nil)
  }
}
