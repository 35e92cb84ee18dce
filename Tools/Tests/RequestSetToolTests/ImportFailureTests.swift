import Foundation
import RequestSet
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `write(2)`, which the test's own members named `write` would hide.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
  #if canImport(Glibc)
    return Glibc.write(fd, bytes, count)
  #else
    return Darwin.write(fd, bytes, count)
  #endif
}

/// The names in `dir` an import leaves behind when it fails: its copy of the log
/// (`FILE.importing-PID`) and that copy's lock and checkpoint.
func importLeftovers(in dir: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".importing-") }.sorted()
}

/// A log holding records with the given integer ids, written by the tool itself.
func logWithIDs(_ ids: [Int], in dir: String) throws -> String {
  let log = dir + "/ids.rslog"
  try write(ids.map { "{\"id\":\($0),\"name\":\"n\($0)\"}\n" }.joined(), to: dir + "/seed.jsonl")
  let r = try Tool.run("import", log, "--from", dir + "/seed.jsonl")
  #expect(r.status == 0, "\(r)")
  return log
}

/// Imports that fail end with an exit status and a message, never a trap, and leave the
/// log as it was with nothing beside it: generated ids that would pass `Int.max`, a bad
/// line, a write error, SIGTERM and a crash (each run as a child process, so a trap in the
/// tool is a failed expectation here: a signal is no exit status 1).
@Suite struct ImportFailureTests {
  @Test func generatingIDsAfterAStoredIntMaxIsAnErrorNotATrap() throws {
    let dir = try freshDirectory()
    let log = try logWithIDs([1, Int.max], in: dir)
    let before = try bytes(log)
    try write("name\nA\nB\n", to: dir + "/in.csv")
    let r = try Tool.run("import", log, "--from", dir + "/in.csv")
    #expect(r.status == 1, "\(r)")
    #expect(
      r.stderr == """
        requestset: \(log) holds the id 9223372036854775807, the largest integer, so no id after it can be \
        generated for the input, whose first record has no "id". Give every record an id, or name the key \
        that holds it with --id.

        """, "\(r)")
    #expect(try bytes(log) == before)
    #expect(try importLeftovers(in: dir) == [])
  }

  @Test func generatedIDsReachIntMaxAndTheRecordsAfterItAreBadLines() throws {
    let dir = try freshDirectory()
    let log = try logWithIDs([Int.max - 2], in: dir)
    let before = try bytes(log)
    try write("name\nA\nB\nC\nD\n", to: dir + "/in.csv")
    let r = try Tool.run("import", log, "--from", dir + "/in.csv")
    #expect(r.status == 1, "\(r)")
    #expect(
      r.stderr == """
        requestset: \(dir)/in.csv has 2 bad lines; nothing was written:
          line 4: no id is left to generate for it: the previous record took 9223372036854775807, the largest \
        integer id; give every record an id
          line 5: no id is left to generate for it: the previous record took 9223372036854775807, the largest \
        integer id; give every record an id
        Fix the lines and import again.

        """, "\(r)")
    #expect(try bytes(log) == before)
    #expect(try importLeftovers(in: dir) == [])
  }

  @Test func generatedIDsMayEndAtIntMaxExactly() throws {
    let dir = try freshDirectory()
    let log = try logWithIDs([Int.max - 2], in: dir)
    try write("name\nA\nB\n", to: dir + "/in.csv")
    let r = try Tool.run("import", log, "--from", dir + "/in.csv")
    #expect(r.status == 0, "\(r)")
    let ids = try Tool.run("query", log, "--values", "id", "name", "--format", "csv")
    #expect(
      ids.stdout
        == "id,name\n9223372036854775805,n9223372036854775805\n9223372036854775806,A\n9223372036854775807,B\n",
      "\(ids)")
    #expect(try importLeftovers(in: dir) == [])
  }

  @Test func aBadLineLeavesNoCopyOrLockBehind() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    try write("{\"id\": 10}\nnot json\n", to: dir + "/in.jsonl")
    let r = try Tool.run("import", log, "--from", dir + "/in.jsonl")
    #expect(r.status == 1, "\(r)")
    #expect(try importLeftovers(in: dir) == [])
    let fresh = try Tool.run("import", dir + "/fresh.rslog", "--from", dir + "/in.jsonl")
    #expect(fresh.status == 1, "\(fresh)")
    #expect(try importLeftovers(in: dir) == [])
    #expect(!FileManager.default.fileExists(atPath: dir + "/fresh.rslog"))
  }

  @Test func aHeaderNestedDeeperThanJSONMayIsABadLineNotAStackOverflow() throws {
    let dir = try freshDirectory()
    let log = dir + "/deep.rslog"
    // 65 keys: 64 nested objects, as deep as JSON input may nest.
    let deepest = Array(repeating: "a", count: 65).joined(separator: ".")
    try write("id,\(deepest)\n1,2\n", to: dir + "/ok.csv")
    let ok = try Tool.run("import", log, "--from", dir + "/ok.csv")
    #expect(ok.status == 0, "\(ok)")
    // 100,000 keys overflowed the stack building the record (SIGSEGV, the copy left behind).
    let tooDeep = Array(repeating: "a", count: 100_000).joined(separator: ".")
    try write("id,\(tooDeep)\n1,2\n", to: dir + "/deep.csv")
    let r = try Tool.run("import", log, "--from", dir + "/deep.csv")
    #expect(r.status == 1, "\(r)")
    #expect(
      r.stderr.hasPrefix(
        """
        requestset: \(dir)/deep.csv has 2 bad lines; nothing was written:
          line 1: the header's column "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.…" nests 99999 objects deep; at \
        most 64 are read
        """), "\(r)")
    #expect(try importLeftovers(in: dir) == [])
  }

  @Test func aWriteErrorLeavesTheLogAsItWasAndNothingBesideIt() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let before = try bytes(log)
    let rows = (10..<20_010).map { "{\"id\":\($0),\"text\":\"\(String(repeating: "x", count: 40))\"}\n" }
    try write(rows.joined(), to: dir + "/in.jsonl")
    // A file size limit of 256 KiB: the copy's writes fail with EFBIG (the tool ignores
    // SIGXFSZ, which would otherwise end it with no chance to clean up).
    let tool = try SpawnedTool(
      ["-c", "ulimit -f 512 && exec \"$0\" \"$@\"", Tool.path, "import", log, "--from", dir + "/in.jsonl"],
      executable: "/bin/sh", stdout: dir + "/out.txt", stderr: dir + "/err.txt")
    let ending = tool.wait()
    let stderr = String(decoding: try bytes(dir + "/err.txt"), as: UTF8.self)
    #expect(ending == .exit(1), "\(stderr)")
    #expect(stderr.hasPrefix("requestset: "), "\(stderr)")
    #expect(try bytes(log) == before)
    #expect(try importLeftovers(in: dir) == [])
  }

  /// Starts an import that reads a FIFO, waits until its copy of the log has grown, sends
  /// `signal` and returns how the tool ended (nil if it did not within two minutes).
  func signalImport(_ signal: Int32, dir: String, log: String) throws -> SpawnedTool.Ending? {
    let fifo = dir + "/in.jsonl"
    #expect(mkfifo(fifo, 0o600) == 0)
    // Opened read-write, the FIFO's open does not wait for the tool; non-blocking, the
    // test's writes never wait for it either (a dead reader would block them for good).
    let writer = open(fifo, O_RDWR | O_NONBLOCK)
    #expect(writer >= 0)
    defer { close(writer) }
    let tool = try SpawnedTool(
      ["import", log, "--from", fifo], stdout: dir + "/out.txt", stderr: dir + "/err.txt")
    let rows = Array((10..<30_010).map { "{\"id\":\($0)}\n" }.joined().utf8)
    var written = 0
    let copy = log + ".importing-\(tool.pid)"
    let size = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
    let deadline = Date().addingTimeInterval(120)
    while Date() < deadline {
      if written < rows.count {
        let n = rows[written...].withUnsafeBytes { systemWrite(writer, $0.baseAddress, $0.count) }
        if n > 0 { written += n }
      }
      if let grown = try? FileManager.default.attributesOfItem(atPath: copy)[.size] as? Int, grown > size {
        break
      }
      usleep(5_000)
    }
    kill(tool.pid, signal)
    return tool.wait()
  }

  @Test func sigtermExits143AndLeavesNothingBehind() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let before = try bytes(log)
    #expect(try signalImport(SIGTERM, dir: dir, log: log) == .exit(143))
    #expect(try bytes(log) == before)
    #expect(try importLeftovers(in: dir) == [])
  }

  @Test func aCrashMidImportStillRemovesTheCopyAndItsLock() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let before = try bytes(log)
    // The crash still ends the tool by its signal, after the files are gone.
    #expect(try signalImport(SIGSEGV, dir: dir, log: log) == .signal(SIGSEGV))
    #expect(try bytes(log) == before)
    #expect(try importLeftovers(in: dir) == [])
  }
}
