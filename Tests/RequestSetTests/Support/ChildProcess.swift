import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Runs an `AdversaryWorker` scenario in a child process, so input that would crash
/// RequestSet (a trap, a stack overflow, a SIGBUS) kills the child, not the test run, and
/// the test fails with what happened.
///
/// ```swift
/// let result = try AdversaryChild.run("deepOrChain", "100000")
/// #expect(result.exitedNormally, "\(result)")
/// #expect(result.lines.contains("count 100000"))
/// ```
struct AdversaryChild: CustomStringConvertible {
  /// The child's exit status, when it exited.
  var exitStatus: Int32?
  /// The signal that ended the child, when one did (SIGSEGV for a stack overflow, SIGILL
  /// or SIGTRAP for a Swift trap, SIGBUS for a read past a mapped file's end).
  var signal: Int32?
  /// What the child printed, a line each.
  var lines: [String]
  /// What the child printed on standard error.
  var standardError: String

  /// The child ended by itself with status 0 and printed its closing `done`.
  var exitedNormally: Bool { exitStatus == 0 && lines.last == "done" }

  /// The child stopped, as a trap or a precondition failure stops a program: killed by a
  /// signal, or exited with a status other than 0 (never its own usage error, 2).
  var stopped: Bool { signal != nil || (exitStatus != 0 && exitStatus != 2) }

  var description: String {
    let end = signal.map { "killed by signal \($0)" } ?? "exit status \(exitStatus ?? -1)"
    return "AdversaryWorker \(end); output: \(lines.joined(separator: " | ")); stderr: \(standardError.suffix(2000))"
  }

  /// Finds the `AdversaryWorker` executable SwiftPM builds next to the test binary.
  /// `REQUESTSET_ADVERSARY_WORKER` overrides the path.
  static func path() throws -> String {
    try siblingExecutable("AdversaryWorker", override: "REQUESTSET_ADVERSARY_WORKER")
  }

  /// An executable target the test target depends on, which SwiftPM builds next to the
  /// test binary (`AdversaryWorker`, `LogCrashWorker`); the environment variable
  /// `override` names another path.
  static func siblingExecutable(_ name: String, override: String) throws -> String {
    if let p = ProcessInfo.processInfo.environment[override] { return p }
    var candidates: [URL] = []
    #if os(Linux)
      candidates.append(URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent())
    #endif
    // On Apple platforms the tests run inside an .xctest bundle in the build directory.
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
      candidates.append(URL(fileURLWithPath: bundle.bundlePath).deletingLastPathComponent())
    }
    for dir in candidates {
      let executable = dir.appendingPathComponent(name).path
      if FileManager.default.isExecutableFile(atPath: executable) { return executable }
    }
    throw SiblingExecutableNotFound(name: name, override: override, looked: candidates.map(\.path))
  }

  struct SiblingExecutableNotFound: Error, CustomStringConvertible {
    var name: String
    var override: String
    var looked: [String]
    var description: String {
      "\(name) was not found next to the test binary (looked in \(looked)). "
        + "Build it with `swift build --build-tests`, or set \(override) to its path."
    }
  }

  /// Runs `scenario` with `arguments` and waits for the child to end.
  static func run(_ scenario: String, _ arguments: String...) throws -> AdversaryChild {
    try run(scenario, arguments: arguments)
  }

  /// Runs `scenario` with `arguments` and waits for the child to end.
  static func run(_ scenario: String, arguments: [String]) throws -> AdversaryChild {
    try run(executable: try path(), arguments: [scenario] + arguments)
  }

  /// Runs any executable with `arguments`, in `directory` when one is given (else this
  /// process's), with `environment` added to this process's, and waits for it to end.
  static func run(
    executable: String, arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]
  ) throws -> AdversaryChild {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    if !environment.isEmpty {
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
    let errData = LockedData()
    let errReader = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
    errReader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let end = process.waitForEnd()
    while !errData.isSet { usleep(1000) }
    let text = String(decoding: outData, as: UTF8.self)
    return AdversaryChild(
      exitStatus: end.exitStatus,
      signal: end.signal,
      lines: text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init),
      standardError: String(decoding: errData.value, as: UTF8.self))
  }
}

/// A `Data` handed from the stderr reader thread to the waiting test.
private final class LockedData: @unchecked Sendable {
  // Safe: every access to `_value` and `_set` holds `lock`.
  private let lock = NSLock()
  private var _value = Data()
  private var _set = false
  func set(_ data: Data) { lock.lock(); _value = data; _set = true; lock.unlock() }
  var isSet: Bool { lock.lock(); defer { lock.unlock() }; return _set }
  var value: Data { lock.lock(); defer { lock.unlock() }; return _value }
}
