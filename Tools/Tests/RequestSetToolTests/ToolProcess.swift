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

  init(_ arguments: [String]) throws {
    process = Tool.process(arguments)
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

/// A fresh directory for one test's files.
func freshDirectory() throws -> String {
  let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
    "requestset-tool-tests/\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
  return dir.path
}
