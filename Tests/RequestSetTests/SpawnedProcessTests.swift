import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The processes the test support spawns (servers, `pg_ctl`, the watchdogs that outlive a
/// crashed test process) inherit no descriptor of the test process but 0, 1 and 2. A
/// watchdog lives as long as the test process; a pipe's write end it inherited never closed,
/// and another test reading its child's output to the end waited forever (a soak run hung
/// in `LogCrashTests` so).
@Suite(.ownThreads) struct SpawnedProcessTests {
  @Test func aSpawnedChildHoldsNoDescriptorOfTheTestProcess() throws {
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    let child = try #require(PostgresServer.spawn("/bin/sleep", ["60"], output: "/dev/null", detached: true))
    defer {
      kill(child, SIGKILL)
      var status: Int32 = 0
      waitpid(child, &status, 0)
    }
    #if os(Linux)
      // None of the child's descriptors is this pipe (the child may hold one of its own for
      // a moment: the dynamic loader opens its libraries).
      func target(_ path: String) -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: path) }
      let pipeEnds = Set(ends.compactMap { target("/proc/self/fd/\($0)") })
      let held = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(child)/fd")) ?? [])
        .compactMap { target("/proc/\(child)/fd/\($0)") }
      #expect(pipeEnds.count == 1 && pipeEnds.isDisjoint(with: held), "the child holds \(held), the pipe is \(pipeEnds)")
    #endif
    // With the write end closed here, the read end sees the end of the pipe at once, unless
    // the child holds the write end too (then only when it ends, in 60 s).
    close(ends[1])
    var waiting = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
    let ready = poll(&waiting, 1, 30_000)
    var byte: UInt8 = 0
    let count = ready > 0 ? read(ends[0], &byte, 1) : -1
    close(ends[0])
    #expect(ready == 1 && count == 0, "the pipe did not end: the spawned child kept its write end")
  }
}
