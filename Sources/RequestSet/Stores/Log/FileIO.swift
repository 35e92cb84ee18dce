#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An open file descriptor, closed when the last reference goes.
final class _FileDescriptor: Sendable {
  let fd: Int32
  let path: String

  init(fd: Int32, path: String) {
    self.fd = fd
    self.path = path
  }

  deinit { _ = close(fd) }
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

  /// Writes all of `bytes` at `offset`; returns 0 or the errno of the failure.
  static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int32 {
    guard var p = bytes.baseAddress else { return 0 }
    var left = bytes.count
    var at = off_t(offset)
    while left > 0 {
      let n = pwrite(fd, p, left, at)
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
  static func sync(_ fd: Int32) -> Int32 {
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
    let code = sync(dir.fd)
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

  static func truncate(_ fd: Int32, to size: Int) -> Int32 {
    while true {
      if ftruncate(fd, off_t(size)) == 0 { return 0 }
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

  static func rename(_ from: String, to: String) -> Int32 {
    Glibc_or_Darwin_rename(from, to) == 0 ? 0 : errno
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

  /// Maps `length` bytes of `fd` (which may reach past the current end of the file: the
  /// pages there become readable as the file grows, and nothing reads them before).
  init(_ fd: _FileDescriptor, length: Int) throws {
    precondition(length > 0, "a mapping needs at least one byte")
    guard let p = mmap(nil, length, PROT_READ, MAP_SHARED, fd.fd, 0), p != MAP_FAILED else {
      throw _FileIO.failure(
        "map", fd.path, errno, "The process may be out of address space; close other stores and retry.")
    }
    base = UnsafeRawPointer(p)
    self.length = length
  }

  deinit { _ = munmap(UnsafeMutableRawPointer(mutating: base), length) }

  /// The bytes `[offset, offset + count)`, which must lie inside the mapping.
  @inline(__always)
  func bytes(_ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: base + offset, count: count)
  }
}
