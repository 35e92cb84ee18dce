import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A running `SQLWorker` (Tests/SQLWorker): a second process on the same database, whose
/// lines the test reads while it runs, and which the test can kill. (A `LogCrashWorker`
/// runs the same way: ``startLogWorker(arguments:)``.)
///
/// ```swift
/// let child = try SQLWorkerChild.start("watch", "sqlite", path, "T", "7", "30")
/// try child.waitForLine("ready", timeout: .seconds(30))
/// ```
///
/// The child's standard output and error are read by two threads of their own, each
/// blocking in `read` until its pipe's end, and each owning its pipe until then. (Not
/// `FileHandle.readabilityHandler`: its dispatch source is cancelled asynchronously and
/// can outlive the descriptor it watches, and on Linux libdispatch's event loop must not
/// see a watched descriptor closed and its number reused. No test here uses a dispatch
/// source on a descriptor. The SIGSEGV of loaded full runs that first put this under
/// suspicion turned out to be the PostgreSQL statement hook's thunk chain; see
/// `_PGConnection._beforeSend`.)
///
/// `@unchecked Sendable`: its stored properties are constants, the lines live in the
/// `Sendable` sink, and `Process`'s `isRunning`, `waitUntilExit` and its pid may be used
/// from any thread, so a test may wait for the child on a thread of its own.
final class SQLWorkerChild: CustomStringConvertible, @unchecked Sendable {
  private let process: Process
  private let sink = Sink()
  let command: String

  /// What the child printed, filled by the two reader threads.
  private final class Sink: Sendable {
    let lines = Mutex<[String]>([])
    let partial = Mutex<String>("")
    let errors = Mutex<Data>(Data())
    /// Whether standard output and standard error have reached their end: every line is
    /// in `lines` once both have.
    let outputEnded = Atomic<Bool>(false)
    let errorEnded = Atomic<Bool>(false)

    var isComplete: Bool { outputEnded.load(ordering: .acquiring) && errorEnded.load(ordering: .acquiring) }

    func take(_ data: Data) {
      partial.withLock { text in
        text += String(decoding: data, as: UTF8.self)
        while let newline = text.firstIndex(of: "\n") {
          let line = String(text[..<newline])
          text = String(text[text.index(after: newline)...])
          lines.withLock { $0.append(line) }
        }
      }
    }
  }

  /// Starts `SQLWorker` with `arguments` (scenario, store kind, location, table, …).
  static func start(_ arguments: String...) throws -> SQLWorkerChild {
    try SQLWorkerChild(arguments: arguments)
  }

  /// Starts `SQLWorker` with `arguments` (scenario, store kind, location, table, …).
  static func start(arguments: [String]) throws -> SQLWorkerChild {
    try SQLWorkerChild(arguments: arguments)
  }

  /// Starts `LogCrashWorker` (Tests/LogCrashWorker) with `arguments` (mode, log, …), read,
  /// waited for and killed as a `SQLWorker` is.
  static func startLogWorker(arguments: [String]) throws -> SQLWorkerChild {
    try SQLWorkerChild(arguments: arguments, worker: "LogCrashWorker", override: "REQUESTSET_CRASH_WORKER")
  }

  private init(
    arguments: [String], worker: String = "SQLWorker", override: String = "REQUESTSET_SQL_WORKER"
  ) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: try AdversaryChild.siblingExecutable(worker, override: override))
    process.arguments = arguments
    command = worker + " " + arguments.map { $0.count > 80 ? String($0.prefix(80)) + "…" : $0 }.joined(separator: " ")
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    Self.drain(out) { [sink] data in
      if let data { sink.take(data) } else { sink.outputEnded.store(true, ordering: .releasing) }
    }
    Self.drain(err) { [sink] data in
      if let data { sink.errors.withLock { $0.append(data) } } else { sink.errorEnded.store(true, ordering: .releasing) }
    }
  }

  /// Reads `pipe` to its end on a thread of its own, handing each chunk to `take`, then
  /// nil. The thread holds the pipe, so its descriptor stays open until the read is over.
  private static func drain(_ pipe: Pipe, _ take: @escaping @Sendable (Data?) -> Void) {
    let thread = Thread {
      let handle = pipe.fileHandleForReading
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        take(data)
      }
      take(nil)
    }
    thread.start()
  }

  /// Whether the child still runs.
  var isRunning: Bool { process.isRunning }

  /// The lines the child has printed so far.
  var output: [String] { sink.lines.withLock { $0 } }
  /// What the child has printed on standard error so far.
  var standardError: String { sink.errors.withLock { String(decoding: $0, as: UTF8.self) } }

  /// Waits until the child prints `line`; throws when it ends first or time runs out.
  func waitForLine(_ line: String, timeout: Duration) throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if output.contains(line) { return }
      if !process.isRunning {
        waitForOutput(until: deadline)  // the last lines may still be in the pipe
        if output.contains(line) { return }
        throw Failure(description: "\(command) ended before printing \(line.debugDescription); \(self)")
      }
      usleep(10_000)
    }
    throw Failure(description: "\(command) did not print \(line.debugDescription) within \(timeout); \(self)")
  }

  /// Waits for the child to end, at most `timeout`, then kills it; returns its exit status
  /// (nil when a signal ended it).
  @discardableResult
  func wait(timeout: Duration) -> Int32? {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
    if process.isRunning { kill() }
    let end = process.waitForEnd()  // not waitUntilExit(): see `Process.waitForEnd()`
    // The readers take the last lines on their own threads: wait until they have, however
    // long a loaded machine takes to run them (a minute at most, past the child).
    waitForOutput(until: ContinuousClock.now + .seconds(60))
    return end.exitStatus
  }

  /// Waits until both reader threads have reached their pipe's end (every line the ended
  /// child wrote is then in ``output``), or until `deadline`.
  private func waitForOutput(until deadline: ContinuousClock.Instant) {
    while !sink.isComplete && ContinuousClock.now < deadline { usleep(1_000) }
  }

  /// Ends the child at once with SIGKILL: no handler, no cleanup, as a crash or a power cut.
  func kill() { _killNow(process.processIdentifier) }

  var description: String {
    "output: \(output.suffix(20).joined(separator: " | ")); stderr: \(standardError.suffix(2000))"
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }
}

/// SIGKILL to `pid` (outside the class, where `kill` is the C function).
private func _killNow(_ pid: Int32) {
  _ = kill(pid, SIGKILL)
}
