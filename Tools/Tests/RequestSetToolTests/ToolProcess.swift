import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The built `requestset` tool, run as a child process.
struct Tool {
  struct Result: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var description: String { "exit \(status)\nstdout:\n\(stdout)\nstderr:\n\(stderr)" }
  }

  /// The executable SwiftPM builds next to the test binary; `REQUESTSET_TOOL` overrides it.
  static let path: String = {
    if let p = ProcessInfo.processInfo.environment["REQUESTSET_TOOL"] { return p }
    var dirs: [URL] = []
    #if os(Linux)
      dirs.append(
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent())
    #endif
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
      dirs.append(URL(fileURLWithPath: bundle.bundlePath).deletingLastPathComponent())
    }
    for dir in dirs
    where FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("requestset").path) {
      return dir.appendingPathComponent("requestset").path
    }
    return "requestset-not-built"
  }()

  static func process(_ arguments: [String], environment: [String: String] = [:], executable: String? = nil)
    -> Process
  {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable ?? path)
    p.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env["COLUMNS"] = nil
    for (k, v) in environment { env[k] = v }
    p.environment = env
    return p
  }

  /// Runs the tool to its end with standard output and error piped (so not terminals).
  static func run(_ arguments: String..., environment: [String: String] = [:], executable: String? = nil)
    throws -> Result
  {
    try run(arguments, environment: environment, executable: executable)
  }

  /// ``run(_:environment:executable:)`` with the arguments in an array.
  static func run(_ arguments: [String], environment: [String: String] = [:], executable: String? = nil)
    throws -> Result
  {
    let p = process(arguments, environment: environment, executable: executable)
    let out = Pipe()
    let err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    // Read both pipes while the child runs, so a large output cannot fill a pipe and block it.
    let errData = Mutex(Data())
    let errDone = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      let d = err.fileHandleForReading.readDataToEndOfFile()
      errData.withLock { $0 = d }
      errDone.signal()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    errDone.wait()
    p.waitUntilExit()
    return Result(
      status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
      stderr: errData.withLock { String(decoding: $0, as: UTF8.self) })
  }
}

/// A child whose output is read as it comes (for `follow`).
///
/// @unchecked Sendable: the reading thread touches only `output`, behind its mutex;
/// `process` is used by the test's own thread alone.
final class RunningTool: @unchecked Sendable {
  let process: Process
  private let output = Mutex(Data())

  init(_ arguments: [String], environment: [String: String] = [:]) throws {
    process = Tool.process(arguments, environment: environment)
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let reader = out.fileHandleForReading
    DispatchQueue.global().async { [self] in
      while true {
        let chunk = reader.availableData
        if chunk.isEmpty { return }
        output.withLock { $0.append(chunk) }
      }
    }
  }

  /// The complete lines printed so far.
  var lines: [String] {
    output.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
  }

  /// Waits up to `seconds` for at least `count` lines.
  func waitForLines(_ count: Int, seconds: Double = 30) -> [String] {
    let deadline = Date().addingTimeInterval(seconds)
    while lines.count < count && Date() < deadline { usleep(20_000) }
    return lines
  }
}

/// This process's folder for the tests' files, `requestset-tool-tests/<pid>` in the
/// temporary directory. Made on first use, which also removes the folders of test runs
/// that no longer run, so no run leaves more than its own behind (the library's tests do
/// the same: `TemporaryLogDirectory`).
private let testRoot: String = {
  let fm = FileManager.default
  let base = fm.temporaryDirectory.path + "/requestset-tool-tests"
  try? fm.createDirectory(atPath: base, withIntermediateDirectories: true)
  for entry in (try? fm.contentsOfDirectory(atPath: base)) ?? [] {
    // kill(pid, 0) fails with ESRCH when no such process runs any more.
    if let pid = Int32(entry), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
      try? fm.removeItem(atPath: base + "/" + entry)
    }
  }
  return base + "/\(getpid())"
}()

/// A fresh directory for one test's files, in this process's folder (see `testRoot`).
func freshDirectory() throws -> String {
  let dir = testRoot + "/" + UUID().uuidString
  try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  return dir
}

/// The tool started as a shell starts a program: no signal blocked and SIGINT, SIGTERM,
/// SIGHUP, SIGXFSZ and the crash signals at their default actions, its output in files.
///
/// `Process` cannot do this: a test runs on a thread that blocks most signals, and a child
/// inherits that mask, so a SIGTERM it is sent would wait pending forever and a file size
/// limit would never send it SIGXFSZ; a test of what the tool does about those signals
/// would pass whatever the tool does.
final class SpawnedTool {
  let pid: pid_t

  /// Starts `executable` (the tool by default) with `arguments`, standard input from
  /// `/dev/null` and its output written to the files `stdout` and `stderr`.
  init(_ arguments: [String], executable: String = Tool.path, stdout: String, stderr: String) throws {
    #if canImport(Glibc)
      var attributes = posix_spawnattr_t()
      var actions = posix_spawn_file_actions_t()
    #else
      var attributes: posix_spawnattr_t? = nil
      var actions: posix_spawn_file_actions_t? = nil
    #endif
    posix_spawnattr_init(&attributes)
    posix_spawn_file_actions_init(&actions)
    defer {
      posix_spawnattr_destroy(&attributes)
      posix_spawn_file_actions_destroy(&actions)
    }
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for s in [SIGINT, SIGTERM, SIGHUP, SIGXFSZ, SIGPIPE, SIGILL, SIGTRAP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE] {
      sigaddset(&defaults, s)
    }
    posix_spawnattr_setsigmask(&attributes, &unblocked)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    var environment = ProcessInfo.processInfo.environment
    environment["COLUMNS"] = nil
    environment["SWIFT_BACKTRACE"] = "enable=no"  // a crash here is expected; skip the backtrace
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for p in argv + envp { free(p) } }
    var pid = pid_t()
    let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard rc == 0 else { throw ToolError("posix_spawn \(executable): \(String(cString: strerror(rc)))") }
    self.pid = pid
  }

  /// How the child ended: its exit status, or the signal that ended it.
  enum Ending: Equatable {
    case exit(Int32)
    case signal(Int32)
  }

  /// Waits up to `seconds` for the child to end; one that has not is killed (SIGKILL) and
  /// reported as nil, so a hang fails the test instead of stalling the run.
  func wait(seconds: Double = 120) -> Ending? {
    let deadline = Date().addingTimeInterval(seconds)
    var status: Int32 = 0
    while Date() < deadline {
      let r = waitpid(pid, &status, WNOHANG)
      if r == pid { return Self.ending(status) }
      if r < 0 && errno != EINTR { return nil }
      usleep(10_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, &status, 0)
    return nil
  }

  private static func ending(_ status: Int32) -> Ending {
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
    status & 0x7F == 0 ? .exit((status >> 8) & 0xFF) : .signal(status & 0x7F)
  }

  struct ToolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
  }
}
