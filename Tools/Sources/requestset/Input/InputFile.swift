import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An input file read in chunks of a fixed size, so any file is read in bounded memory.
final class InputFile {
  let path: String
  /// The file's size in bytes, for a progress percentage (0 when unknown, as for a pipe).
  let size: Int
  /// The bytes read so far.
  private(set) var bytesRead = 0
  private let fd: Int32
  private var buffer: [UInt8]

  /// Opens `path` (`-` for standard input).
  ///
  /// - Throws: ``ToolError`` when the file cannot be opened, naming the path.
  init(path: String, chunkSize: Int = 1 << 20) throws {
    self.path = path
    if path == "-" {
      fd = 0
    } else {
      fd = open(path, O_RDONLY)
      guard fd >= 0 else {
        throw ToolError("Cannot read \(path): \(String(cString: strerror(errno))). Check the path.")
      }
    }
    var st = stat()
    size = fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG ? Int(st.st_size) : 0
    buffer = [UInt8](repeating: 0, count: chunkSize)
  }

  /// Calls `body` with each chunk of the file, in order, until the end.
  ///
  /// - Throws: ``ToolError`` when a read fails; what `body` throws.
  func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    while true {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR { continue }
        throw ToolError("Cannot read \(path): \(String(cString: strerror(errno))).")
      }
      if n == 0 { return }
      bytesRead += n
      try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
  }

  deinit { if fd > 0 { close(fd) } }
}
