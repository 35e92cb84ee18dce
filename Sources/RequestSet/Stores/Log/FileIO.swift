#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import Synchronization

/// An open file descriptor, closed when the last reference goes.
final class _FileDescriptor: Sendable {
  let fd: Int32
  /// The path the file had when it was opened (or was renamed to, see `renamed(to:)`):
  /// what messages name.
  let path: String
  /// False once `renamed(to:)` handed the descriptor on.
  private let owner = Atomic<Bool>(true)
  /// The file's size at the last `checkCovers`, and when that was (monotonic nanoseconds).
  private let checkedSize = Atomic<Int>(-1)
  private let checkedAt = Atomic<UInt64>(0)

  init(fd: Int32, path: String) {
    self.fd = fd
    self.path = path
  }

  /// The same open file under the path it was renamed to; this object no longer closes
  /// the descriptor, the returned one does.
  func renamed(to path: String) -> _FileDescriptor {
    owner.store(false, ordering: .relaxed)
    return _FileDescriptor(fd: fd, path: path)
  }

  /// Closes the descriptor, first releasing any `flock` it holds: a child process that
  /// another thread is starting holds a copy of every descriptor until its `exec` (even
  /// with `O_CLOEXEC`), so a plain `close` could leave the lock held by that copy and
  /// refuse the next writer `.locked`. The explicit unlock releases it for every copy.
  /// (Paths that drop a locked descriptor without `close()`: an open that fails after
  /// locking, such as a damaged log, and a lock taken on a file that was renamed away.)
  deinit {
    if owner.load(ordering: .relaxed) {
      _ = flock(fd, LOCK_UN)
      _ = close(fd)
    }
  }

  /// Records that the file is at least `size` bytes: the store just appended up to there.
  func noteSize(atLeast size: Int) {
    if checkedSize.load(ordering: .relaxed) < size { checkedSize.store(size, ordering: .relaxed) }
  }

  /// How long an answer of `checkCovers` is reused: an `fstat` costs about a microsecond
  /// (more in a virtual machine), as much as decoding a record, so checking before every
  /// read would double a scan; once a millisecond costs next to nothing.
  static let checkInterval: UInt64 = 1_000_000

  /// Throws `.fileChanged` when the file now ends before byte `end`: someone else cut it
  /// short. The size is read with `fstat` at most once per ``checkInterval``; within it, a
  /// read up to the size last seen is not checked again (see `_Mapping` for the race).
  func checkCovers(_ end: Int) throws {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let nanos = UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    if nanos &- checkedAt.load(ordering: .relaxed) < Self.checkInterval && checkedSize.load(ordering: .relaxed) >= end {
      return
    }
    var st = stat()
    guard fstat(fd, &st) == 0 else {
      throw _FileIO.failure("stat", path, errno, "Check that the file is still accessible.")
    }
    let size = Int(st.st_size)
    checkedSize.store(size, ordering: .relaxed)
    checkedAt.store(nanos, ordering: .relaxed)
    if size < end { throw _fileChanged(path, size: size, needed: end) }
  }
}

/// Thin, total wrappers over the POSIX calls the log needs: each loops over `EINTR` and
/// short transfers, and turns a failure into a ``RequestSetError`` naming the call, the
/// path and the cause.
enum _FileIO {
  static func describe(_ code: Int32) -> String { String(cString: strerror(code)) + " (errno \(code))" }

  static func failure(_ what: String, _ path: String, _ code: Int32, _ hint: String) -> RequestSetError {
    RequestSetError(.ioFailure, "Could not \(what) \(path): \(describe(code)). \(hint)")
  }

  /// Opens `path`, or throws with `hint` as the way out.
  static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644, hint: String) throws -> _FileDescriptor {
    while true {
      let fd = path.withCString { Glibc_or_Darwin_open($0, flags | O_CLOEXEC, mode) }
      if fd >= 0 { return _FileDescriptor(fd: fd, path: path) }
      if errno == EINTR { continue }
      throw failure("open", path, errno, hint)
    }
  }

  /// Throws `.invalidPath` for a path no log can live at: empty (which would put the lock
  /// at `./.lock`), or holding a NUL byte (which the C calls would cut short, opening
  /// another file).
  static func checkPath(_ path: String) throws {
    if path.isEmpty {
      throw RequestSetError(.invalidPath, "The log path is empty. Pass the path of a file, as in \"animals.rslog\".")
    }
    if path.utf8.contains(0) {
      let shown = path.replacingNUL()
      throw RequestSetError(
        .invalidPath,
        "The log path \"\(shown)\" holds a NUL byte (shown as \\0), which the operating system would read as the end "
          + "of the path and so open another file. Remove the NUL byte.")
    }
  }

  /// What kind of file a `stat` mode is, for messages; nil for a regular file.
  static func notRegular(_ mode: mode_t) -> String? {
    switch mode & S_IFMT {
    case S_IFREG: return nil
    case S_IFDIR: return "a directory"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFIFO: return "a FIFO (named pipe)"
    case S_IFSOCK: return "a socket"
    default: return "not a regular file"
    }
  }

  static func notRegularError(_ path: String, _ kind: String) -> RequestSetError {
    RequestSetError(
      .invalidPath,
      "\(path) is \(kind), not a regular file, so it cannot hold a log. Pass the path of a regular file "
        + "(a missing one is created), as in \"\(path == "/" ? "" : path)/animals.rslog\" for a directory.")
  }

  /// Throws `.invalidPath` when `path` exists and is not a regular file (a symbolic link to
  /// one is fine). Checked before opening, so a FIFO is never opened (which could block).
  static func checkNotSpecial(_ path: String) throws {
    var st = stat()
    guard stat(path, &st) == 0, let kind = notRegular(st.st_mode) else { return }
    throw notRegularError(path, kind)
  }

  /// Throws `.invalidPath` unless the open file is a regular file: the check after the
  /// open, for a path swapped between `checkNotSpecial` and the open.
  static func checkRegular(_ file: _FileDescriptor) throws {
    var st = stat()
    guard fstat(file.fd, &st) == 0 else {
      throw failure("stat", file.path, errno, "Check that the file is still accessible.")
    }
    if let kind = notRegular(st.st_mode) { throw notRegularError(file.path, kind) }
  }

  /// The way out after a failed write: depends on why it failed.
  static func writeHint(_ code: Int32) -> String {
    switch code {
    case ENOSPC, EDQUOT: return "Free disk space (or raise the quota) and retry."
    case EIO: return "The disk reported an I/O error; check it (dmesg, SMART) before retrying."
    case EROFS: return "The file system is mounted read-only; remount it or open the log with readOnly: true."
    case EFBIG: return "The file reached the file system's size limit; compact the log or move it."
    case EACCES, EPERM, EBADF: return "Check the file's permissions."
    default: return "Check the file and the disk, then retry."
    }
  }

  /// Writes all of `bytes` at `offset`; returns 0 or the errno of the failure.
  static func pwriteAll(_ file: _FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int32 {
    guard var p = bytes.baseAddress else { return 0 }
    let fd = file.fd
    var left = bytes.count
    var at = off_t(offset)
    while left > 0 {
      var chunk = left
      switch _FileFaults.check(.write(path: file.path, offset: Int(at), count: left)) {
      case .proceed: break
      case .fail(let code): return code
      case .short(let n): chunk = Swift.max(0, Swift.min(n, left))
      }
      let n = chunk == 0 ? 0 : pwrite(fd, p, chunk, at)
      if n < 0 {
        if errno == EINTR { continue }
        return errno
      }
      if n == 0 { return EIO }
      p += n
      left -= n
      at += off_t(n)
    }
    return 0
  }

  /// Reads exactly `count` bytes at `offset` into `buffer`; returns 0, the errno, or -1
  /// at end of file.
  static func preadAll(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int) -> Int32 {
    var p = buffer
    var left = count
    var at = off_t(offset)
    while left > 0 {
      let n = pread(fd, p, left, at)
      if n < 0 {
        if errno == EINTR { continue }
        return errno
      }
      if n == 0 { return -1 }
      p += n
      left -= n
      at += off_t(n)
    }
    return 0
  }

  /// Flushes a file's data (and the metadata needed to read it back) to stable storage;
  /// returns 0 or the errno.
  static func sync(_ file: _FileDescriptor) -> Int32 {
    if case .fail(let code) = _FileFaults.check(.sync(path: file.path)) { return code }
    let fd = file.fd
    while true {
      #if canImport(Darwin)
        // fsync on Darwin stops at the drive's cache; F_FULLFSYNC reaches the platter.
        if fcntl(fd, F_FULLFSYNC) == 0 { return 0 }
      #else
        if fdatasync(fd) == 0 { return 0 }
      #endif
      if errno == EINTR { continue }
      return errno
    }
  }

  /// Makes a rename or a file creation in `directory` durable.
  static func syncDirectory(_ directory: String) throws {
    let dir = try open(directory, O_RDONLY, hint: "Check that the directory exists and is readable.")
    let code = sync(dir)
    // Some file systems refuse fsync on directories (EINVAL); they order renames anyway.
    if code != 0 && code != EINVAL {
      throw failure("fsync the directory", directory, code, "The rename may not survive a power loss.")
    }
  }

  static func size(_ fd: _FileDescriptor) throws -> Int {
    var st = stat()
    guard fstat(fd.fd, &st) == 0 else {
      throw failure("stat", fd.path, errno, "Check that the file is still accessible.")
    }
    return Int(st.st_size)
  }

  static func truncate(_ file: _FileDescriptor, to size: Int) -> Int32 {
    if case .fail(let code) = _FileFaults.check(.truncate(path: file.path, size: size)) { return code }
    while true {
      if ftruncate(file.fd, off_t(size)) == 0 { return 0 }
      if errno == EINTR { continue }
      return errno
    }
  }

  static func exists(_ path: String) -> Bool {
    access(path, F_OK) == 0
  }

  static func remove(_ path: String) {
    _ = unlink(path)
  }

  /// The names of the entries of `directory` that begin with `prefix` (compared as UTF-8
  /// bytes; a name that is not valid UTF-8 is left out), or nil when the directory cannot
  /// be read.
  ///
  /// Every open for writing lists the log's directory (`_StaleFiles`): through
  /// `FileManager`, which makes a `String` of every entry, and a generic `hasPrefix`, a
  /// directory of 4,000 files cost each open about 3 ms of CPU (LogCorruptionTests'
  /// directory fills with preserved damaged copies). Here an entry that does not match
  /// costs one `memcmp`.
  static func names(in directory: String, withPrefix prefix: String) -> [String]? {
    guard let listing = opendir(directory) else { return nil }
    defer { closedir(listing) }
    let wanted = Array(prefix.utf8)
    var found: [String] = []
    while let entry = readdir(listing) {
      let name: String? = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
        tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { chars in
          let length = strlen(chars)
          guard length >= wanted.count, memcmp(chars, wanted, wanted.count) == 0 else { return nil }
          return chars.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
            String(validating: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
          }
        }
      }
      if let name { found.append(name) }
    }
    return found
  }

  static func rename(_ from: String, to: String) -> Int32 {
    if case .fail(let code) = _FileFaults.check(.rename(from: from, to: to)) { return code }
    return Glibc_or_Darwin_rename(from, to) == 0 ? 0 : errno
  }

  /// Takes an exclusive `flock` on `file` without waiting: 0, `EWOULDBLOCK` when another
  /// open file description holds it, or another errno.
  static func lockExclusive(_ file: _FileDescriptor) -> Int32 {
    while flock(file.fd, LOCK_EX | LOCK_NB) != 0 {
      if errno == EINTR { continue }
      return errno
    }
    return 0
  }

  /// The device and inode of an open file, and of what `path` names now (nil when it
  /// names nothing): equal when the path still leads to the open file.
  static func sameFile(_ file: _FileDescriptor, _ path: String) -> Bool {
    var a = stat()
    var b = stat()
    guard fstat(file.fd, &a) == 0, stat(path, &b) == 0 else { return false }
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino
  }

  static func directory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}

@inline(__always)
private func Glibc_or_Darwin_open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
  open(path, flags, mode)
}

@inline(__always)
private func Glibc_or_Darwin_rename(_ from: String, _ to: String) -> Int32 {
  rename(from, to)
}

/// A read-only shared mapping of a log file's first `length` bytes.
///
/// **Another process truncating the file.** Reading a mapped page that lies wholly past
/// the file's current end raises SIGBUS, which would kill the process. A LogStore never
/// shrinks a file below bytes it indexed, but another program can. So readers call
/// ``check(covers:)`` before they read: at the start of every evaluation that reads fields
/// by string key, before decoding a record, and the writer before every append. A read
/// past the current end then throws `.fileChanged` instead.
///
/// The check narrows the window; it cannot close it. A truncation that lands between the
/// check and the read (during one evaluation's scan, say), or within a millisecond of the
/// last `fstat` (whose answer is reused, see `_FileDescriptor.checkCovers`), still raises
/// SIGBUS. Closing it would take a process-wide SIGBUS handler that maps zero pages over
/// the hole, which a library should not install behind its host's back. The log's write
/// lock keeps every other LogStore out; only a program that ignores it can truncate the
/// file.
///
/// `@unchecked Sendable` is safe because nothing ever writes through the mapping
/// (`PROT_READ`), `base` and `length` never change, and the bytes that readers touch never
/// change either: a log is append-only, so a byte below the end of the file at the time a
/// snapshot was taken is never rewritten; the file is only truncated past its last
/// indexed frame (a torn tail, or a write that failed), and compaction writes a new file
/// and renames it over the old one, which leaves this mapping on the old file. The mapping
/// is removed in `deinit`, when no snapshot can reach it any more.
final class _Mapping: @unchecked Sendable {
  let base: UnsafeRawPointer
  let length: Int
  /// The mapped file, kept open for ``check(covers:)``.
  let file: _FileDescriptor

  /// Maps `length` bytes of `fd` (which may reach past the current end of the file: the
  /// pages there become readable as the file grows, and nothing reads them before).
  init(_ fd: _FileDescriptor, length: Int) throws {
    precondition(length > 0, "a mapping needs at least one byte")
    guard let p = mmap(nil, length, PROT_READ, MAP_SHARED, fd.fd, 0), p != MAP_FAILED else {
      let code = errno
      let hint =
        switch code {
        case ENOMEM: "The process may be out of address space; close other stores and retry."
        case ENODEV, EINVAL: "The file or its file system cannot be memory-mapped; keep the log on a local disk."
        case EACCES: "The file is not open for reading; check its permissions."
        default: "Check that the file is a regular file on a local disk."
        }
      throw _FileIO.failure("map", fd.path, code, hint)
    }
    base = UnsafeRawPointer(p)
    self.length = length
    file = fd
  }

  /// Tells the kernel the mapped pages are not needed now: they leave the process's
  /// resident memory and are read again (from the page cache, or the file) on the next
  /// access, with the same bytes, since the mapping is shared and read-only.
  func releaseResidentPages() {
    _ = madvise(UnsafeMutableRawPointer(mutating: base), length, MADV_DONTNEED)
  }

  /// ``releaseResidentPages()`` for the whole pages within `count` bytes from `offset`.
  func releaseResidentPages(offset: Int, count: Int) {
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    let start = (offset + page - 1) / page * page
    let end = Swift.min(offset + count, length) / page * page
    guard offset >= 0, end > start else { return }
    _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, MADV_DONTNEED)
  }

  /// Throws `.fileChanged` when the file now ends before byte `end`: someone truncated it
  /// (see the type's discussion for the race this leaves).
  @inline(__always)
  func check(covers end: Int) throws { try file.checkCovers(end) }

  deinit { _ = munmap(UnsafeMutableRawPointer(mutating: base), length) }

  /// The bytes `[offset, offset + count)`, which must lie inside the mapping.
  @inline(__always)
  func bytes(_ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: base + offset, count: count)
  }
}

extension String {
  /// The string with each NUL byte shown as `\\0`, for messages.
  fileprivate func replacingNUL() -> String {
    String(unicodeScalars.flatMap { $0 == "\u{0}" ? ["\\", "0"] : [$0] }.map(Character.init))
  }
}

/// A test seam under the file layer: a test registers a handler for the files under a
/// directory, and the log's writes, fsyncs, truncations and renames there ask it first
/// whether to go ahead, fail with an errno, or (a write) transfer fewer bytes.
///
/// The seam costs one relaxed atomic load per call when no handler is registered (the
/// calls are system calls, each far dearer), and nothing else.
enum _FileFaults {
  enum Call: Sendable, CustomStringConvertible {
    case write(path: String, offset: Int, count: Int)
    case sync(path: String)
    case truncate(path: String, size: Int)
    case rename(from: String, to: String)

    /// The path the call is about (a rename's source).
    var path: String {
      switch self {
      case .write(let p, _, _), .sync(let p), .truncate(let p, _): return p
      case .rename(let from, _): return from
      }
    }

    var description: String {
      switch self {
      case .write(let p, let o, let c): return "write(\(p), at: \(o), \(c) bytes)"
      case .sync(let p): return "fsync(\(p))"
      case .truncate(let p, let n): return "truncate(\(p), to: \(n))"
      case .rename(let f, let t): return "rename(\(f), to: \(t))"
      }
    }
  }

  enum Outcome: Sendable {
    /// Make the call.
    case proceed
    /// Fail with this errno without making the call.
    case fail(Int32)
    /// A write: transfer at most this many bytes in this call (0 transfers nothing and
    /// reads as `EIO`, as a `pwrite` that returns 0 would).
    case short(Int)
  }

  typealias Handler = @Sendable (Call) -> Outcome

  private static let armed = Atomic<Bool>(false)
  private static let handlers = _Lock<[String: Handler]>([:])

  /// Registers `handler` for every call on `directory` or a path under it (a prefix match
  /// on `directory + "/"`); nil removes it.
  static func handle(_ directory: String, _ handler: Handler?) {
    handlers.withLock { table in
      table[directory + "/"] = handler
      armed.store(!table.isEmpty, ordering: .relaxed)
    }
  }

  @inline(__always)
  static func check(_ call: @autoclosure () -> Call) -> Outcome {
    guard armed.load(ordering: .relaxed) else { return .proceed }
    let call = call()
    let path = call.path + "/"
    let handler = handlers.withLock { table in table.first { path.hasPrefix($0.key) }?.value }
    return handler?(call) ?? .proceed
  }
}

/// The error for a log file that another program cut short underneath a store.
func _fileChanged(_ path: String, size: Int, needed: Int) -> RequestSetError {
  RequestSetError(
    .fileChanged,
    "The log \(path) was changed underneath this store: it is now \(size) bytes, but the store has records up "
      + "to byte \(needed). Another program truncated or rewrote it (a LogStore only appends, and compaction "
      + "renames a new file in). Stop that program, then open the store again to see what the file holds.")
}
