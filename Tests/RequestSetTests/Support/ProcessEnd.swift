import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension Process {
  /// Waits for the child to end and says how: its exit status, or the signal that ended it.
  ///
  /// Not `waitUntilExit()`: Foundation's exit monitoring can miss a child's end (seen in a
  /// full run: a killed child stayed a zombie, the wait never returned, and the run never
  /// ended). This waits with `waitid(WNOWAIT)`, which sees the end without reaping the
  /// child, gives Foundation two minutes to reap it, and, if it still has not, answers from
  /// the zombie.
  ///
  /// ```swift
  /// kill(child.processIdentifier, SIGKILL)
  /// #expect(child.waitForEnd().signal == SIGKILL)
  /// ```
  @discardableResult
  func waitForEnd() -> (exitStatus: Int32?, signal: Int32?) {
    var info = siginfo_t()
    var seen = false
    while true {
      if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == 0 {
        seen = true
        break
      }
      if errno != EINTR { break }  // ECHILD: Foundation has reaped it already
    }
    let deadline = ContinuousClock.now + .seconds(120)
    while isRunning && ContinuousClock.now < deadline { usleep(1_000) }
    if !isRunning {
      return terminationReason == .exit ? (terminationStatus, nil) : (nil, terminationStatus)
    }
    guard seen else { return (nil, nil) }
    #if canImport(Glibc)
      let (code, status) = (info.si_code, info._sifields._sigchld.si_status)
    #else
      let (code, status) = (info.si_code, info.si_status)
    #endif
    // CLD_EXITED (1): an exit with a status; otherwise a signal ended it.
    return code == 1 ? (status, nil) : (nil, status)
  }
}
