import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The temporary files a process killed mid-way leaves beside a log, removed by whoever
/// opens the log next once it can prove nobody uses them (docs/LOG-FORMAT.md, "Files").
///
/// A file is proved stale, never guessed stale:
/// - `<log>.compacting`: a compaction locks it (`flock`) before writing a byte and holds
///   the lock until it is the log, so a lock that can be taken on the file the path still
///   names means its writer is gone (the kernel drops a dead process's locks). Anyone may
///   remove it then, a read-only store included; compaction makes a new file if it finds
///   its own removed before it could lock it (see `_LogState.compact`).
/// - `<log>.creating` and `<log>.checkpoint.tmp`: only a writer makes them, holding
///   `<log>.lock`, so a writer that holds it removes them.
/// - `<log>.importing-<pid>` and its side files (the tool's import copy, see
///   `requestset import`): a writer removes them when no process `<pid>` exists and no
///   store holds the copy open.
enum _StaleFiles {
  /// Removes `<log>.compacting` when no compaction holds it. For a read-only open, which
  /// holds no lock of the log's.
  static func removeAbandonedCompaction(of log: String) {
    removeIfUnlocked(log + ".compacting")
  }

  /// Removes every temporary file beside `log` that a dead writer left. The caller holds
  /// the log's write lock (both locks: see `_LogFiles.openLocked`).
  static func removeAll(besideLockedLog log: String) {
    // No compaction runs but the lock holder's, which has not started.
    _FileIO.remove(log + ".compacting")
    // Made by writers only, under `<log>.lock`.
    _FileIO.remove(log + ".creating")
    _FileIO.remove(log + ".checkpoint.tmp")
    removeAbandonedImports(of: log)
  }

  /// Removes `path` if a non-blocking exclusive `flock` on the file it names succeeds, and
  /// the path still names that file once the lock is held.
  private static func removeIfUnlocked(_ path: String) {
    guard let file = try? _FileIO.open(path, O_RDONLY | O_NONBLOCK, hint: "") else { return }
    guard _FileIO.lockExclusive(file) == 0 else { return }  // in use
    if _FileIO.sameFile(file, path) { _FileIO.remove(path) }
    // Closing `file` releases the lock.
  }

  /// `<log>.importing-<pid>` and the files beside it (`.lock`, `.checkpoint`, …), for
  /// every `<pid>` that names no process and whose copy no store holds.
  private static func removeAbandonedImports(of log: String) {
    let directory = _FileIO.directory(of: log)
    let base = log.lastIndex(of: "/").map { log[log.index(after: $0)...] } ?? log[...]
    let prefix = String(base) + ".importing-"
    guard let names = _FileIO.names(in: directory, withPrefix: prefix) else { return }
    var byProcess: [pid_t: [String]] = [:]
    for name in names {
      let rest = name.dropFirst(prefix.count)
      let digits = rest.prefix { $0.isASCII && $0.isNumber }
      guard !digits.isEmpty, digits.count == rest.count || rest[digits.endIndex] == ".", let pid = pid_t(digits)
      else { continue }
      byProcess[pid, default: []].append(name)
    }
    for (pid, files) in byProcess where pid > 0 && pid != getpid() {
      // A process of that id exists (kill answers 0, or EPERM for another user's): maybe
      // the importer, still running; leave its files.
      guard kill(pid, 0) != 0, errno == ESRCH else { continue }
      let copy = directory + "/" + prefix + String(pid)
      // A store that holds the copy open (another machine's process, on a shared disk)
      // holds its lock.
      if _FileIO.exists(copy) {
        guard let file = try? _FileIO.open(copy, O_RDONLY | O_NONBLOCK, hint: ""), _FileIO.lockExclusive(file) == 0
        else { continue }
      }
      for name in files { _FileIO.remove(directory + "/" + name) }
    }
  }
}
