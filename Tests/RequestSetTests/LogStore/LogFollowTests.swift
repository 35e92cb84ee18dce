import Foundation
import Testing
@testable import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A read-only LogStore in this process follows a writer in another one.
///
/// No wall-clock time limit: in a parallel run on a loaded machine the suite's tasks can
/// wait a long time for a thread of the pool that synchronous tests hold (in two full runs
/// at once on two busy cores, this test's writer ran for over 40 minutes while both
/// threads stayed in CorpusTests and the follower's polls waited for one). Each awaited
/// state has its own limit, in time the test could run (``eventLimit``).
@Suite(.serialized, .ownThreads(servedFirst: true)) struct LogFollowTests {
  @Test func aReadOnlyStoreFollowsAWriterInAnotherProcess() async throws {
    let path = TemporaryLogDirectory.freshPath()
    // The worker inserts, saves, deletes, batches and compacts until it is killed, pausing
    // 1 ms after each write: still about 400 writes and several compactions a second on a
    // loaded machine, without spending a core for as long as this test waits for a thread.
    let (child, pipe) = try CrashWorker.start(["crash", path, "11", "1000"])
    defer {
      kill(child.processIdentifier, SIGKILL)
      child.waitForEnd()
    }
    _ = CrashWorker.readUntil(pipe) { $0 == "ack" }
    // Keep draining what the child prints, so it never blocks on a full pipe: a thread that
    // holds the pipe and reads it to its end (no dispatch source: see `SQLWorkerChild`).
    CrashWorker.drain(pipe)

    let reader = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))
    let states = StateReader(RequestSet(reader).sortBy(\.id))
    var versions: [UInt64] = []
    for _ in 0..<4 {
      // A loaded machine may keep the writer or the follower's polling from running for
      // minutes: the limit is ``eventLimit``'s, not a guess at how fast either runs.
      let state = try #require(try await states.next(), "no new state from the writer")
      // Each state is a complete, consistent prefix of the writer's commits.
      #expect(Set(state.ids).count == state.records.count)
      #expect(state.ids == state.ids.sorted())
      versions.append(state.version)
    }
    #expect(versions == versions.sorted() && Set(versions).count == versions.count)

    // Once the writer is gone, the follower holds exactly what a fresh open finds.
    kill(child.processIdentifier, SIGKILL)
    child.waitForEnd()
    let fresh = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))
    #expect(try RequestSet(reader).sortBy(\.id).fetch() == RequestSet(fresh).sortBy(\.id).fetch())
  }

  /// The follower across compactions, with no timing in it: it looks after a compaction
  /// and enough writes to grow the new file past the end the follower knew of the old one,
  /// then after random runs of one to six writes and compactions (several compactions in a
  /// row among them). Each time it holds exactly what the writer holds, and its version
  /// never goes back.
  @Test(arguments: [1, 2, 3])
  func aReadOnlyStoreHoldsTheWritersRecordsAcrossEveryCompaction(seed: Int) throws {
    var rng = SeededRandom(seed: UInt64(seed))
    let path = TemporaryLogDirectory.freshPath()
    let writer = try LogStore<CrashRecord>(path: path)
    try writer.createIndex("n")
    let reader = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))

    // What a follower that compared only sizes would miss: a compaction, then writes that
    // grow the new file past the end the follower knew of the old one.
    try writer.insert(contentsOf: (0..<60).map { CrashRecord(id: $0, name: "first", n: $0) })
    for id in 0..<60 { try writer.save(CrashRecord(id: id, name: "again", n: id)) }
    #expect(try RequestSet(reader).sortBy(\.id).fetch() == RequestSet(writer).sortBy(\.id).fetch())
    let known = writer.fileSize
    try writer.compact()
    var k = 0
    while writer.fileSize <= known {
      try writer.save(CrashRecord(id: k % 60, name: "grown", n: k))
      k += 1
    }
    #expect(try RequestSet(reader).sortBy(\.id).fetch() == RequestSet(writer).sortBy(\.id).fetch())

    var version = try reader.snapshot().version
    for round in 0..<300 {
      // Between two looks: up to six steps, each a write or a compaction.
      for _ in 0..<Int.random(in: 1...6, using: &rng) {
        let id = Int.random(in: 0..<60, using: &rng)
        let record = CrashRecord(id: id, name: "r\(round)", n: Int.random(in: 0..<1_000, using: &rng))
        switch Int.random(in: 0..<6, using: &rng) {
        case 0, 1: try writer.save(record)
        case 2: _ = try writer.delete(id: id)
        case 3: try writer.apply([.save(record), .delete(id: (id + 1) % 60)], ifVersion: nil)
        default: try writer.compact()
        }
      }
      let looked = try reader.snapshot().version
      let held = try RequestSet(reader).sortBy(\.id).fetch()
      let expected = try RequestSet(writer).sortBy(\.id).fetch()
      #expect(held == expected, "round \(round)")
      if held != expected { return }
      #expect(looked >= version, "round \(round)")
      version = looked
      // The reader finds what a fresh open finds, indexes included.
      if round % 50 == 49 {
        let fresh = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))
        let n = Int.random(in: 0..<1_000, using: &rng)
        #expect(
          try RequestSet(reader).filter(\.n >= n).sortBy(\.id).fetch()
            == RequestSet(fresh).filter(\.n >= n).sortBy(\.id).fetch())
      }
    }
  }
}
