import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The terminal the tool writes to: its width, and whether progress may be shown.
enum Terminal {
  /// The width a table must fit: `COLUMNS` when set to a positive number, else the
  /// terminal's width (`TIOCGWINSZ`) when standard output is one (80 if it says none),
  /// else nil: piped or redirected output is never cut.
  static var width: Int? {
    if let text = ProcessInfo.processInfo.environment["COLUMNS"], let n = Int(text), n > 0 { return n }
    if isatty(1) != 0 {
      var size = winsize()
      if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
      return 80
    }
    return nil
  }

  /// Prints `requestset: <message>` on standard error.
  static func printError(_ message: String) {
    FileHandle.standardError.write(Data(("requestset: " + message + "\n").utf8))
  }

  /// Prints `requestset: warning: <message>` on standard error.
  static func printWarning(_ message: String) {
    FileHandle.standardError.write(Data(("requestset: warning: " + message + "\n").utf8))
  }

  /// Prints a line on standard error (notes that are not the command's output).
  static func note(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
  }
}

/// A progress line on standard error, shown only when standard error is a terminal, so
/// piped and redirected runs stay quiet. Updates at most ten times a second.
final class Progress {
  private let enabled = isatty(2) != 0
  private var last = Date.distantPast
  private var shown = false

  /// Shows `text` in place of the previous progress line (when enough time has passed).
  func update(_ text: @autoclosure () -> String, force: Bool = false) {
    guard enabled else { return }
    let now = Date()
    guard force || now.timeIntervalSince(last) >= 0.1 else { return }
    last = now
    shown = true
    FileHandle.standardError.write(Data(("\r\u{1B}[K" + text()).utf8))
  }

  /// Clears the progress line.
  func finish() {
    guard enabled, shown else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    shown = false
  }
}

/// Buffered standard output: commands that print many records write through it.
final class Output {
  private var buffer: [UInt8] = []

  init() { buffer.reserveCapacity(1 << 17) }

  func write(_ text: String) {
    buffer.append(contentsOf: text.utf8)
    if buffer.count >= 1 << 16 { flush() }
  }

  func write(bytes: [UInt8]) {
    buffer.append(contentsOf: bytes)
    if buffer.count >= 1 << 16 { flush() }
  }

  func flush() {
    guard !buffer.isEmpty else { return }
    buffer.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        let n = Glibc_or_Darwin_write(1, raw.baseAddress! + offset, raw.count - offset)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }  // a closed pipe: nothing more can be written
        offset += n
      }
    }
    buffer.removeAll(keepingCapacity: true)
  }

  deinit { flush() }
}

private func Glibc_or_Darwin_write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
  #if canImport(Glibc)
    return Glibc.write(fd, bytes, count)
  #else
    return Darwin.write(fd, bytes, count)
  #endif
}
