import Foundation
import Testing
@testable import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A read-only LogStore in this process follows a writer in another one.
@Suite(.serialized, .timeLimit(.minutes(1))) struct LogFollowTests {
  @Test func aReadOnlyStoreFollowsAWriterInAnotherProcess() async throws {
    let path = TemporaryLogDirectory.freshPath()
    // The worker inserts, saves, deletes, batches and compacts until it is killed.
    let (child, pipe) = try CrashWorker.start(["crash", path, "11"])
    defer {
      kill(child.processIdentifier, SIGKILL)
      child.waitUntilExit()
    }
    _ = CrashWorker.readUntil(pipe) { $0 == "ack" }
    // Keep draining what the child prints, so it never blocks on a full pipe.
    pipe.fileHandleForReading.readabilityHandler = { _ = $0.availableData }

    let reader = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))
    let states = StateReader(RequestSet(reader).sortBy(\.id))
    var versions: [UInt64] = []
    for _ in 0..<4 {
      let state = try #require(try await states.next(within: 10), "no new state from the writer")
      // Each state is a complete, consistent prefix of the writer's commits.
      #expect(Set(state.ids).count == state.records.count)
      #expect(state.ids == state.ids.sorted())
      versions.append(state.version)
    }
    #expect(versions == versions.sorted() && Set(versions).count == versions.count)

    // Once the writer is gone, the follower holds exactly what a fresh open finds.
    pipe.fileHandleForReading.readabilityHandler = nil
    kill(child.processIdentifier, SIGKILL)
    child.waitUntilExit()
    let fresh = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))
    #expect(try RequestSet(reader).sortBy(\.id).fetch() == RequestSet(fresh).sortBy(\.id).fetch())
  }
}
