import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Fresh log paths for `StoreKind.log`: each store gets its own directory under
/// `<tmp>/requestset-tests/<pid>/`. A suite hands stores out as `any RecordStore`, with
/// no hook to delete their files when done, so each test process instead removes what
/// earlier, finished test processes left behind.
enum TemporaryLogDirectory {
  static let root: String = {
    let base = FileManager.default.temporaryDirectory.path + "/requestset-tests"
    let fm = FileManager.default
    try? fm.createDirectory(atPath: base, withIntermediateDirectories: true)
    for entry in (try? fm.contentsOfDirectory(atPath: base)) ?? [] {
      // kill(pid, 0) fails with ESRCH when no such process runs any more.
      if let pid = Int32(entry), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
        try? fm.removeItem(atPath: base + "/" + entry)
      }
    }
    let mine = base + "/\(getpid())"
    try? fm.createDirectory(atPath: mine, withIntermediateDirectories: true)
    return mine
  }()

  /// A path in a new, empty directory.
  static func freshPath(_ name: String = "store.rslog") -> String {
    let dir = root + "/" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir + "/" + name
  }
}
