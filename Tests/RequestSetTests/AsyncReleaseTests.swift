import Foundation
import RequestSet
import RequestSetSQLite
import Synchronization
import Testing

@testable import RequestSet

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// A finished async call keeps nothing alive: the store's threads let go of each job, and
/// of what it captured (a request set, its evaluation, a store's read transaction), before
/// the caller resumes. (PostgreSQL's side is `PostgresPoolTests`.)
@Suite(.ownThreads) struct AsyncReleaseTests {
  /// Says when the ``Captured`` that holds it is released.
  final class ReleaseFlag: Sendable {
    let released = Atomic<Bool>(false)
  }

  /// Something a job captures.
  final class Captured: Sendable {
    let flag: ReleaseFlag
    init(_ flag: ReleaseFlag) { self.flag = flag }
    deinit { flag.released.store(true, ordering: .releasing) }
  }

  /// Before, the threads' queue kept every job it had run until it next compacted (after
  /// 64 jobs), so what a job captured lived on after its call returned.
  @Test func aJobIsReleasedBeforeItsCallReturns() async throws {
    let threads = StoreThreads(name: "ReleaseTest", count: 2)
    for i in 0..<10 {
      let flag = ReleaseFlag()
      #expect(try await Self.run(i, capturing: flag, on: threads) == i)
      let released = flag.released.load(ordering: .acquiring)
      #expect(released, "job \(i) is still held")
    }
  }

  /// Runs a job on `threads` that captures a new ``Captured`` holding `flag`.
  private static func run(_ i: Int, capturing flag: ReleaseFlag, on threads: StoreThreads) async throws -> Int {
    let captured = Captured(flag)
    return try await threads.run { [captured] in captured.flag === flag ? i : -1 }
  }

  /// 150 async counts on SQLite, each on a new set, leave no read transaction open: a
  /// checkpoint from another connection then copies the whole log back and truncates it.
  /// Before, the finished jobs kept their sets' read transactions, so the checkpoint was
  /// refused (busy) and the log could not be reset.
  @Test func finishedAsyncReadsLetSQLiteCheckpoint() async throws {
    let path = TemporaryLogDirectory.freshPath("release.sqlite")
    let store = try SQLiteStore<Animal>(path: path, table: "animals")
    defer { store.close() }
    let herd = Animal.random(count: 300, seed: 150)
    try store.insert(contentsOf: herd)
    for i in 0..<150 {
      let n = try await RequestSet(store).filter(\.age >= i % 7).async.fetchCount()
      #expect(n == herd.filter { $0.age >= i % 7 }.count)
    }
    let (busy, log, copied) = try Self.checkpoint(path)
    #expect(busy == 0, "a read transaction is still open")
    #expect(log == copied)
    let walSize = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
    #expect(walSize == 0)
  }

  /// `PRAGMA wal_checkpoint(TRUNCATE)` on a connection of its own, which waits for no
  /// reader: whether a reader held it back, the log's frames, and the frames copied.
  static func checkpoint(_ path: String) throws -> (busy: Int, log: Int, copied: Int) {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw RequestSetError(.ioFailure, "cannot open \(path)") }
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &statement, nil) == SQLITE_OK else {
      throw RequestSetError(.ioFailure, String(cString: sqlite3_errmsg(db)))
    }
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW else {
      throw RequestSetError(.ioFailure, String(cString: sqlite3_errmsg(db)))
    }
    return (
      Int(sqlite3_column_int64(statement, 0)), Int(sqlite3_column_int64(statement, 1)),
      Int(sqlite3_column_int64(statement, 2))
    )
  }
}
