import Foundation

#if canImport(Glibc)
  import Glibc
#endif

// Resident memory of this process, for the memory rows: read before and after building
// something, in the same process, with freed heap returned to the system first.

/// glibc's `malloc_trim`, which the Glibc module does not export (it lives in malloc.h).
private let mallocTrim: (@convention(c) (Int) -> Int32)? = {
  #if canImport(Glibc)
    guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
  #else
    return nil
  #endif
}()

/// This process's resident set, in bytes, split as /proc/self/status splits it.
struct Resident {
  /// Anonymous pages: the heap and every private buffer (what a store holds beyond its files).
  var anonymous = 0
  /// Pages of mapped files (a LogStore's mapped log, the program's own code).
  var file = 0
  var total: Int { anonymous + file }

  /// Returns freed heap to the system (`malloc_trim`), then reads /proc/self/status.
  static func now() -> Resident {
    _ = mallocTrim?(0)
    var resident = Resident()
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return resident }
    for line in status.split(separator: "\n") {
      let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard parts.count >= 2, let kB = Int(parts[1]) else { continue }
      switch parts[0] {
      case "RssAnon:": resident.anonymous = kB * 1024
      case "RssFile:": resident.file = kB * 1024
      default: break
      }
    }
    return resident
  }
}
