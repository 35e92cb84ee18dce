#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The one-writer lock of a log: an exclusive `flock` on `<log>.lock`, held while the
/// store lives.
///
/// `flock` rather than POSIX `fcntl` locks: an `fcntl` lock belongs to the process and is
/// dropped when *any* descriptor of the file is closed, and a second open in the same
/// process would silently share it; an `flock` lock belongs to the open file description,
/// so a second store on the same log is refused even inside one process, and the kernel
/// releases the lock when the process dies, `kill -9` included.
final class _WriteLock: Sendable {
  let file: _FileDescriptor
  let path: String
  /// Whether this lock made the lock file (it did not exist before).
  let created: Bool

  /// Takes the lock without waiting.
  ///
  /// - Throws: ``RequestSetError`` `.locked` when another writer holds it, `.ioFailure`
  ///   when the lock file cannot be opened.
  init(logPath: String) throws {
    let lockPath = logPath + ".lock"
    path = lockPath
    created = !_FileIO.exists(lockPath)
    file = try _FileIO.open(
      lockPath, O_RDWR | O_CREAT, mode: 0o644,
      hint: "The directory must be writable to open a log for writing; open it with readOnly: true otherwise.")
    while flock(file.fd, LOCK_EX | LOCK_NB) != 0 {
      if errno == EINTR { continue }
      if errno == EWOULDBLOCK {
        throw RequestSetError(
          .locked,
          "The log \(logPath) is locked for writing by another LogStore (in this or another process; "
            + "the lock is \(lockPath)). Close that store first, or open this one with readOnly: true.")
      }
      throw _FileIO.failure("lock", lockPath, errno, "Check that the file system supports flock.")
    }
  }

  /// Removes the lock file when this lock made it, while still holding it: for an open
  /// that failed, so it leaves nothing beside the path it was given. Another process that
  /// opened the old lock file in between still has to lock the log file itself (see
  /// `_LogFiles.openLocked`), so two writers stay impossible.
  func removeIfCreated() {
    if created { _FileIO.remove(path) }
  }

  deinit { _ = flock(file.fd, LOCK_UN) }
}
