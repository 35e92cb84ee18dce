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

/// What Ctrl-C (SIGINT), SIGTERM, SIGHUP and a crash do: remove the temporary files a
/// running command registered, then end the tool.
///
/// A writing command registers the files it would leave half-written (`import`'s copy of
/// the log and that copy's lock), so an interrupted, killed or crashed run leaves the log
/// exactly as it was and nothing beside it. SIGINT, SIGTERM and SIGHUP exit with 128 plus
/// the signal's number (130, 143, 129); a crash (a trap, a bad access) removes the files
/// and then ends the tool by its signal, as it would have ended anyway. Only SIGKILL and
/// a power loss leave the files behind.
enum Interrupt {
  /// Paths removed before the tool exits on a signal.
  private static let cleanup = Mutex<Set<String>>([])
  /// The same paths for the crash handler, which may neither lock nor allocate: the
  /// address of a block of NUL-terminated paths ending with an empty one, or 0. A block is
  /// never freed once published (a handler may be reading it); each is a few hundred
  /// bytes, made when a command registers or forgets a path.
  private static let crashPaths = Atomic<Int>(0)
  /// The actions the crash handler replaced, by signal number, so it can hand the signal
  /// on (to the Swift runtime's backtracer, or the default). Allocated and filled once by
  /// ``install()`` before the handler is installed, never written again.
  nonisolated(unsafe) private static var previousActions: UnsafeMutablePointer<sigaction>?
  /// The signal sources, kept alive for the life of the process. `nonisolated(unsafe)`:
  /// written once, by `main` before any command runs, and never read.
  nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

  /// The signals that end the tool with an exit status, and that status.
  static let endingSignals: [(signal: Int32, status: Int32)] = [
    (SIGINT, ExitStatus.interrupted), (SIGTERM, 128 + SIGTERM), (SIGHUP, 128 + SIGHUP),
  ]
  /// The signals of a crash.
  static let crashSignals: [Int32] = [SIGILL, SIGTRAP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE]

  /// Routes SIGINT, SIGTERM and SIGHUP to ``exit(status:)`` instead of the default (which
  /// ends the process by the signal, with no exit status), and a crash through the removal
  /// of the registered files. A SIGHUP the tool was started ignoring (`nohup`) stays ignored;
  /// SIGXFSZ is ignored, so a file size limit is a write error.
  static func install() {
    for (number, status) in endingSignals {
      let previous = signal(number, SIG_IGN)
      if number == SIGHUP && unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
        continue
      }
      let s = DispatchSource.makeSignalSource(signal: number, queue: .global())
      s.setEventHandler { exit(status: status) }
      s.resume()
      sources.append(s)
    }
    // A file size limit (`ulimit -f`) makes a write fail with EFBIG, an error the command
    // reports and cleans up after, instead of ending the tool where it stands.
    signal(SIGXFSZ, SIG_IGN)
    let actions = UnsafeMutablePointer<sigaction>.allocate(capacity: 64)
    actions.initialize(repeating: sigaction(), count: 64)
    for number in crashSignals { sigaction(number, nil, actions + Int(number)) }
    previousActions = actions
    // On the alternate stack, so a stack overflow (itself a SIGSEGV) still cleans up.
    var action = sigaction()
    #if canImport(Glibc)
      action.__sigaction_handler.sa_handler = crashed
    #else
      action.__sigaction_u.__sa_handler = crashed
    #endif
    action.sa_flags = Int32(SA_ONSTACK)
    sigemptyset(&action.sa_mask)
    for number in crashSignals { sigaction(number, &action, nil) }
    useAlternateSignalStack()
  }

  /// Gives the calling thread a stack of its own for the crash handler: a thread whose
  /// stack overflowed has none left to run it on. Called by ``install()`` for the main
  /// thread and by each thread the tool starts; the stack lives as long as the process.
  static func useAlternateSignalStack() {
    let size = 1 << 16
    var stack = stack_t()
    stack.ss_sp = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    stack.ss_size = size
    stack.ss_flags = 0
    sigaltstack(&stack, nil)
  }

  /// Removes the registered files and exits with `status`.
  static func exit(status: Int32) -> Never {
    for path in cleanup.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    FileHandle.standardError.write(Data("requestset: interrupted\n".utf8))
    _exit(status)
  }

  /// Registers a file to remove if the tool is interrupted, killed or crashes.
  static func removeOnInterrupt(_ path: String) {
    cleanup.withLock {
      $0.insert(path)
      publish($0)
    }
  }

  /// Forgets a registered file (it was renamed into place or removed).
  static func keepOnInterrupt(_ path: String) {
    cleanup.withLock {
      $0.remove(path)
      publish($0)
    }
  }

  /// Publishes `paths` for the crash handler (called with ``cleanup`` locked, so blocks
  /// are published in the order the set changes).
  private static func publish(_ paths: Set<String>) {
    var bytes: [UInt8] = []
    for path in paths { bytes += Array(path.utf8) + [0] }
    bytes.append(0)
    let block = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
    block.initialize(from: bytes, count: bytes.count)
    crashPaths.store(Int(bitPattern: block), ordering: .releasing)
  }

  /// The crash handler: unlinks the published paths (`unlink` is async-signal-safe),
  /// restores the action it replaced and raises the signal again, which is delivered to
  /// that action when the handler returns.
  private static let crashed: @convention(c) (Int32) -> Void = { number in
    if let block = UnsafePointer<CChar>(bitPattern: Interrupt.crashPaths.load(ordering: .acquiring)) {
      var path = block
      while path.pointee != 0 {
        unlink(path)
        path += strlen(path) + 1
      }
    }
    if let previous = Interrupt.previousActions {
      sigaction(number, previous + Int(number), nil)
    } else {
      signal(number, SIG_DFL)
    }
    raise(number)
  }
}
