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
      Reading commands (info, verify, query, dump, follow, history) open the log read-only: \
      they take no lock, change nothing and may run while a program writes the log. Writing \
      commands (import, upsert, update, delete, compact, recover, index, migrate) take the log's \
      write lock, so they fail with "locked" while a program holds it. migrate also takes \
      SQLite database files (a table a SQLiteStore wrote), in one transaction.

      Install: swift build --package-path Tools -c release, then run \
      Tools/.build/release/requestset (or copy it onto your PATH). A debug build, as \
      `swift run --package-path Tools requestset` makes, is several times slower.

      Exit status: 0 on success, 1 on an error (its message is printed on standard error), \
      2 on a usage error (an unknown command or option, a missing or malformed argument), \
      130 when interrupted by Ctrl-C (SIGINT), 143 on SIGTERM, 129 on SIGHUP; a writing command \
      removes its temporary files first, and on a crash too.
      """,
    version: ToolVersion.current,
    subcommands: [
      Info.self, Verify.self, Query.self, Dump.self, Import.self, Upsert.self, Update.self, Delete.self,
      Compact.self, Recover.self, Index.self, Migrate.self, Follow.self, History.self,
    ])

  /// Runs the command the arguments name, with the exit statuses ``ExitStatus`` documents:
  /// argument-parser's usage errors (its status 64) exit with 2, as `sqlite3`, `jq` and
  /// most Unix tools do, and Ctrl-C exits with 130 (SIGTERM 143, SIGHUP 129).
  static func main() async {
    Interrupt.install()
    if let message = Suggestion.unknownCommand(Array(CommandLine.arguments.dropFirst())) {
      FileHandle.standardError.write(Data((message + "\n").utf8))
      exit(withError: ExitCode(ExitStatus.usage))
    }
    do {
      var command = try parseAsRoot()
      if var asyncCommand = command as? AsyncParsableCommand {
        try await asyncCommand.run()
      } else {
        try command.run()
      }
    } catch {
      if exitCode(for: error) == .validationFailure {
        FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
        exit(withError: ExitCode(ExitStatus.usage))
      }
      exit(withError: error)
    }
  }
}

/// Runs a command's body, printing a `RequestSetError` (or any other error) the way every
/// command does: the message on standard error, exit status 1.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as RequestSetError {
    Terminal.printError(ToolWording.message(error))
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
    Terminal.printError(ToolWording.message(error))
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
/// - Parameters:
///   - recovery: How damage is handled on open (`recover --mode`).
///   - keepHistory: What `compact` keeps (`compact --keep-history`).
///   - writesCheckpoint: False when the file is about to be replaced (by `import`), so
///     closing the store writes no checkpoint describing the old file.
func openWriter(
  _ path: String, recovery: LogRecoveryMode = .truncateTornTail, keepHistory: LogHistoryRetention = .none,
  writesCheckpoint: Bool = true
) throws -> LogStore<DynamicRecord> {
  if FileManager.default.fileExists(atPath: path) {
    try LogStore<DynamicRecord>(path: path, options: .init(recovery: .skipDamagedFrames, readOnly: true))
      .close()
  }
  return try LogStore<DynamicRecord>(
    path: path,
    options: .init(
      recovery: recovery, autoCompactDeadRatio: nil, keepHistory: keepHistory,
      checkpointMinimumBytes: writesCheckpoint ? 1 << 20 : .max))
}
