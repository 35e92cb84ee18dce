import Foundation
import Testing

@testable import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The record the `LogCrashWorker` child writes (same shape, same field names).
struct CrashRecord: Record, Equatable {
  var id: Int
  var name: String
  var n: Int
}

/// Finds and runs the `LogCrashWorker` executable that SwiftPM builds next to the test
/// binary (the test target depends on it). `REQUESTSET_CRASH_WORKER` overrides the path.
enum CrashWorker {
  static func path() throws -> String {
    try AdversaryChild.siblingExecutable("LogCrashWorker", override: "REQUESTSET_CRASH_WORKER")
  }

  static func start(_ arguments: [String]) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try path())
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    return (process, pipe)
  }

  /// Reads `pipe` to its end on a thread of its own and drops what it reads, so the child
  /// never blocks on a full pipe. The thread holds the pipe until then.
  static func drain(_ pipe: Pipe) {
    Thread { while !pipe.fileHandleForReading.availableData.isEmpty {} }.start()
  }

  /// Reads lines until one satisfies `done` (or the child ends).
  static func readUntil(_ pipe: Pipe, _ done: (String) -> Bool) -> [String] {
    var text = ""
    while true {
      let data = pipe.fileHandleForReading.availableData
      if data.isEmpty { break }
      text += String(decoding: data, as: UTF8.self)
      let lines = text.split(separator: "\n").map(String.init)
      if lines.contains(where: done) { return lines }
    }
    return text.split(separator: "\n").map(String.init)
  }
}

@Suite(.serialized, .ownThreads(servedFirst: true)) struct LogCrashTests {
  /// A child writes random inserts, batches, saves, deletes and compactions; it is killed
  /// with SIGKILL at random moments. After every kill the log must hold every
  /// acknowledged write, the write in flight entirely or not at all, and nothing else.
  /// 40 kills in the quick form, 200 with `REQUESTSET_SOAK=1`; `REQUESTSET_CRASH_KILLS`
  /// sets any number.
  @Test func everyAcknowledgedWriteSurvivesSIGKILL() throws {
    let kills =
      Int(ProcessInfo.processInfo.environment["REQUESTSET_CRASH_KILLS"] ?? "") ?? TestScale.pick(quick: 40, soak: 200)
    let seed = testSeed("everyAcknowledgedWriteSurvivesSIGKILL")
    var rng = SeededRandom(seed: seed)
    let dir = try LogTempDir()
    let path = dir.file("crash.rslog")
    let model = MemoryStore<CrashRecord>()
    var killedMidway = 0
    var inFlightLanded = 0
    var acknowledged = 0

    for round in 0..<kills {
      let (process, pipe) = try CrashWorker.start(["crash", path, String(seed &+ UInt64(round))])
      // The random delay starts once the child has begun its first write ("begin"), not
      // when it was launched or opened the log: on a loaded machine a child can take longer
      // than the whole delay to get that far, and the kill would then land before any write.
      var first = Data()
      while !String(decoding: first, as: UTF8.self).contains("begin ") {
        let data = pipe.fileHandleForReading.availableData
        if data.isEmpty { break }  // the child ended: its output says how
        first += data
      }
      usleep(UInt32(1_000 + rng.next() % 40_000))
      kill(process.processIdentifier, SIGKILL)
      process.waitForEnd()
      let output = String(decoding: first + pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      let lines = output.split(separator: "\n").map(String.init)

      // Every "begin" followed by "ack" is acknowledged; a last "begin" without one was in flight.
      var acked: [String] = []
      var inFlight: String?
      for line in lines {
        if line.hasPrefix("begin ") {
          inFlight = String(line.dropFirst(6))
        } else if line == "ack", let op = inFlight {
          acked.append(op)
          inFlight = nil
        }
      }
      for op in acked { try Self.apply(op, to: model) }
      acknowledged += acked.count
      if !acked.isEmpty || inFlight != nil { killedMidway += 1 }

      let store = try LogStore<CrashRecord>(path: path)
      let found = try RequestSet(store).fetch()
      let without = try RequestSet(model).fetch()
      // The index the child creates is rebuilt from the records: it agrees with a scan.
      #expect(store.indexes.isEmpty || store.indexes == [RequestIndex(key: "n", unique: false)])
      for probe in found.prefix(3) {
        #expect(try RequestSet(store).filter("n", value: probe.n).fetch() == found.filter { $0.n == probe.n })
      }
      #expect(try RequestSet(store).sortBy("n").limit(5).fetch() == Array(RequestSet(found).sortBy("n").limit(5)))
      if found == without { continue }
      guard let op = inFlight else {
        Issue.record("round \(round), seed \(seed): the log lost or invented writes; nothing was in flight")
        return
      }
      let with = MemoryStore<CrashRecord>()
      try with.insert(contentsOf: without)
      try Self.apply(op, to: with)
      let withOp = try RequestSet(with).fetch()
      guard found == withOp else {
        Issue.record("round \(round), seed \(seed): after the kill the log matches neither before nor after \(op)")
        return
      }
      try Self.apply(op, to: model)
      inFlightLanded += 1
    }
    print("[crash] \(kills) kills, \(killedMidway) mid-run, \(acknowledged) acknowledged writes, \(inFlightLanded) in-flight writes landed")
    // The test proves nothing if the kills never land while the child writes (each kill
    // waits for the child's first write, so every one should).
    #expect(killedMidway >= kills / 2)
    #expect(acknowledged >= kills)
  }

  /// Applies a worker operation line ("I id name n", "B id,name,n;…", "S …", "D id", "C").
  static func apply(_ op: String, to store: MemoryStore<CrashRecord>) throws {
    let parts = op.split(separator: " ").map(String.init)
    func record(_ s: [String]) -> CrashRecord { CrashRecord(id: Int(s[0])!, name: s[1], n: Int(s[2])!) }
    switch parts[0] {
    case "I": _ = try? store.insert(record(Array(parts[1...])))
    case "B":
      let batch = parts[1].split(separator: ";").map { record($0.split(separator: ",").map(String.init)) }
      _ = try? store.insert(contentsOf: batch)
    case "S": try store.save(record(Array(parts[1...])))
    case "D": try store.delete(id: Int(parts[1])!)
    case "C": break
    default: Issue.record("unknown worker operation \(op)")
    }
  }

  @Test func anotherProcessIsRefusedTheWriteLock() throws {
    let dir = try LogTempDir()
    let path = dir.file("locked.rslog")
    // This process holds the log; the child is refused at once.
    do {
      let store = try LogStore<CrashRecord>(path: path)
      try store.insert(CrashRecord(id: 1, name: "a", n: 1))
      let (child, pipe) = try CrashWorker.start(["lock", path])
      child.waitForEnd()
      let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      #expect(said == "locked\n")
    }
    // The child holds it; this process is refused, may read alongside, and gets the lock
    // once the child is killed.
    let (holder, pipe) = try CrashWorker.start(["hold", path])
    defer {
      kill(holder.processIdentifier, SIGKILL)
      holder.waitForEnd()
    }
    #expect(CrashWorker.readUntil(pipe) { $0 == "ready" }.contains("ready"))
    let error = #expect(throws: RequestSetError.self) { try LogStore<CrashRecord>(path: path) }
    #expect(error?.code == .locked)
    let reader = try LogStore<CrashRecord>(path: path, options: .init(readOnly: true))
    #expect(reader.count == 1)
    kill(holder.processIdentifier, SIGKILL)
    holder.waitForEnd()
    let store = try LogStore<CrashRecord>(path: path)
    #expect(store.count == 1)
  }
}
