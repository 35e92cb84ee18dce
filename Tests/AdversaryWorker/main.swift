// The child process of the adversary tests (`AdversaryTests`): each scenario feeds
// RequestSet input a program can receive and must end normally. A trap, a stack overflow
// or a SIGBUS kills only this child, and the parent counts it as a failure.
//
//   AdversaryWorker <scenario> [arguments…]
//
// A scenario prints what it found on standard output and exits 0; the parent checks the
// exit status and the output. Scenarios live one area a file (`Scenarios+*.swift`), each
// file adding its entries to `scenarios` through a `static let` table.

import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Ends this child as soon as the test process that started it is gone (crashed, or
/// killed): an orphan, such as a crash test's writer that writes until it is killed,
/// would keep the test run's output pipe open, and `swift test` would wait for it for as
/// long as it ran. A thread checks the parent every 100 ms.
func exitWithParent() {
  #if canImport(Glibc)
    var thread = pthread_t()
  #else
    var thread: pthread_t? = nil
  #endif
  let parent = UnsafeMutableRawPointer(bitPattern: Int(getppid()))
  _ = pthread_create(
    &thread, nil,
    { argument in
      let parent = pid_t(Int(bitPattern: argument))
      while getppid() == parent { usleep(100_000) }
      _exit(3)
    }, parent)
}
exitWithParent()

/// Writes a line to standard output at once (unbuffered), so a parent sees it even if the
/// child dies right after.
func say(_ line: String) {
  var bytes = Array((line + "\n").utf8)
  var offset = 0
  while offset < bytes.count {
    let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { exit(3) }
    offset += n
  }
  bytes.removeAll()
}

/// A scenario: takes its arguments, prints its findings, returns normally or throws.
typealias Scenario = @Sendable ([String]) throws -> Void

/// Every scenario by name. Each area's file contributes one table.
let scenarios: [String: Scenario] = Scenarios.all

enum Scenarios {
  /// The tables of every area file, merged.
  static var all: [String: Scenario] {
    var table: [String: Scenario] = ["ping": { _ in say("pong") }]
    for area in areas {
      table.merge(area) { first, _ in first }
    }
    return table
  }
}

let args = CommandLine.arguments
guard args.count >= 2, let scenario = scenarios[args[1]] else {
  say("usage: AdversaryWorker <scenario> [arguments…]; scenarios: \(scenarios.keys.sorted().joined(separator: ", "))")
  exit(2)
}
do {
  try scenario(Array(args.dropFirst(2)))
  say("done")
  exit(0)
} catch {
  say("error: \(error)")
  exit(0)
}
