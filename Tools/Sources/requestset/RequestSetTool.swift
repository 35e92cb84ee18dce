import ArgumentParser
import Foundation
import RequestSet

/// `requestset`: look into and maintain RequestSet log files without writing a program.
@main
struct RequestSetTool: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "requestset",
    abstract: "Look into and maintain RequestSet log files (.rslog) without their Swift type.",
    discussion: """
      Reading commands (info, verify, query, dump, follow) open the log read-only: they take no lock,
      change nothing and may run while a program writes the log. Writing commands (import, compact,
      recover, index) take the log's write lock, so they fail with "locked" while a program holds it.
      Errors print the library's message on standard error and exit with status 1.
      """,
    subcommands: [
      Info.self, Verify.self, Query.self, Dump.self, Import.self, Compact.self, Recover.self, Index.self,
      Follow.self, History.self,
    ])
}

/// Runs a command's body, printing a `RequestSetError` (or any other error) the way every
/// command does: the message on standard error, exit status 1.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as RequestSetError {
    Terminal.printError(error.message)
    throw ExitCode.failure
  } catch let error as ToolError {
    Terminal.printError(error.message)
    throw ExitCode.failure
  }
}

/// The async form of ``reportingErrors(_:)``.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
  do {
    return try await body()
  } catch let error as RequestSetError {
    Terminal.printError(error.message)
    throw ExitCode.failure
  } catch let error as ToolError {
    Terminal.printError(error.message)
    throw ExitCode.failure
  }
}

/// A failure of the tool itself (bad input data, a bad option), printed like a library error.
struct ToolError: Error {
  var message: String
  init(_ message: String) { self.message = message }
}

/// Opens a log to read: read-only, so nothing is changed and no lock is taken.
func openReader(_ path: String) throws -> LogStore<DynamicRecord> {
  try LogStore<DynamicRecord>(path: path)
}

/// Opens a log to write, with the write lock.
///
/// An existing file is first opened read-only (in the mode that reads past any damage),
/// so a file that is no log is refused before the writer leaves its `<path>.lock` beside it.
func openWriter(_ path: String, recovery: LogRecoveryMode = .truncateTornTail) throws -> LogStore<DynamicRecord> {
  if FileManager.default.fileExists(atPath: path) {
    try LogStore<DynamicRecord>(path: path, options: .init(recovery: .skipDamagedFrames, readOnly: true)).close()
  }
  return try LogStore<DynamicRecord>(path: path, options: .init(recovery: recovery, autoCompactDeadRatio: nil))
}
