import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The exit statuses the tool documents (README, "Command-line tool").
enum ExitStatus {
  /// The command did what it was asked.
  static let success: Int32 = 0
  /// An error: a bad file, bad input data, a damaged log (`verify`), a lock held elsewhere.
  static let failure: Int32 = 1
  /// A usage error: an unknown command or option, a missing or malformed argument.
  static let usage: Int32 = 2
  /// Ended by Ctrl-C (SIGINT), as shells report a process a signal ended: 128 + 2.
  static let interrupted: Int32 = 130
}

/// What Ctrl-C (SIGINT) does: remove the temporary files a running command registered,
/// then exit with status 130.
///
/// A writing command registers the files it would leave half-written (`import`'s copy of
/// the log), so an interrupted run leaves the log exactly as it was.
enum Interrupt {
  /// Paths removed before the tool exits on SIGINT.
  private static let cleanup = Mutex<Set<String>>([])
  /// The signal source, kept alive for the life of the process. `nonisolated(unsafe)`:
  /// it is written once, by `main` before any command runs, and never read.
  nonisolated(unsafe) private static var source: (any DispatchSourceSignal)?

  /// Routes SIGINT to ``exitInterrupted()`` instead of the default (which ends the
  /// process by the signal, with no exit status).
  static func install() {
    signal(SIGINT, SIG_IGN)
    let s = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
    s.setEventHandler { exitInterrupted() }
    s.resume()
    source = s
  }

  /// Removes the registered files and exits with status 130.
  static func exitInterrupted() -> Never {
    for path in cleanup.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    FileHandle.standardError.write(Data("requestset: interrupted\n".utf8))
    _exit(ExitStatus.interrupted)
  }

  /// Registers a file to remove if the tool is interrupted.
  static func removeOnInterrupt(_ path: String) { _ = cleanup.withLock { $0.insert(path) } }

  /// Forgets a registered file (it was renamed into place or removed).
  static func keepOnInterrupt(_ path: String) { _ = cleanup.withLock { $0.remove(path) } }
}
