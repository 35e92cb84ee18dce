import Foundation
import Synchronization

/// Threads a store owns for the blocking part of the async API (``AsyncRequestSet``,
/// ``AsyncRecordStore``): SQLite's and libpq's calls, a log's `fsync`, a decode of many
/// records. An `await` hands the work to one of these threads and suspends, so the task's
/// thread of Swift's cooperative pool is free for other tasks while the store works.
///
/// A store makes its own (``RecordStore/asyncThreads``). The threads start when the first
/// async call needs one, up to `count` at once, and end after some seconds with nothing
/// to do; calls beyond `count` wait in order, off the cooperative pool.
///
/// ```swift
/// final class MyStore: RecordStore {
///   let asyncThreads: StoreThreads? = StoreThreads(name: "MyStore", count: 4)
///   // …
/// }
/// ```
public final class StoreThreads: Sendable {
  /// The threads of stores that declare none: a backend written outside RequestSet may
  /// block, so its async calls run here.
  ///
  /// ```swift
  /// let count = try await StoreThreads.shared.run { try legacyBackend.count() }
  /// ```
  public static let shared = StoreThreads(name: "RequestSet", count: 8)

  /// The name the threads carry (a debugger shows it).
  public let name: String
  /// The most threads that run work at once.
  public let count: Int
  /// How long an idle thread waits for work before it ends.
  let idleTime: Double

  private struct State {
    /// The queue; a slot is emptied when its job is taken, so a job that has run is let
    /// go at once (with what it captured), not when the queue is next compacted.
    var jobs: [(@Sendable () -> Void)?] = []
    var head = 0
    var live = 0
    var idle = 0
    /// Threads that finished a job a moment ago and look for the next one before they
    /// sleep (``spinTime``): a job they will take needs no wake-up.
    var spinning = 0
    /// How many jobs were ever queued (tests check where work ran).
    var queued = 0
  }
  private let state = Mutex(State())
  private let wakeups = DispatchSemaphore(value: 0)

  /// Threads for a store.
  ///
  /// ```swift
  /// let threads = StoreThreads(name: "Reports", count: 2)
  /// ```
  /// - Parameters:
  ///   - name: What the threads are called.
  ///   - count: The most threads at once; values below 1 count as 1.
  public convenience init(name: String, count: Int) {
    self.init(name: name, count: count, idleTime: 10)
  }

  init(name: String, count: Int, idleTime: Double, answersIDLookupsInPlace: Bool = false) {
    self.name = name
    self.count = Swift.max(1, count)
    self.idleTime = idleTime
    self.answersIDLookupsInPlace = answersIDLookupsInPlace
  }

  /// Whether the store these threads serve answers a lookup by id from memory, in a
  /// dictionary read, waiting on no disk or server (a ``MemoryStore``): the async API then
  /// answers `filter(\.id == v)` on the calling task, since the hop to a thread and back
  /// (two thread wake-ups) costs several times the lookup. Any other query still runs
  /// here.
  let answersIDLookupsInPlace: Bool

  /// Runs `body` on one of the threads and returns what it returns, without holding the
  /// calling task's thread meanwhile.
  ///
  /// Cancelling the calling task before `body` starts throws `CancellationError` and
  /// `body` never runs. Once it runs, a store's query sees the cancellation through
  /// ``whenCancelled(_:run:)`` and ``isCancelled`` (SQLite interrupts the statement,
  /// PostgreSQL sends a cancel request, the in-process engine stops its scan), and the
  /// call throws `CancellationError`. A write that has begun commits or rolls back whole.
  ///
  /// ```swift
  /// let rows = try await StoreThreads.shared.run { try legacyBackend.readAll() }
  /// ```
  /// - Throws: What `body` throws, or `CancellationError`.
  public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await Self.run(on: self, reading: false, body)
  }

  /// Runs `body` on `threads`, or on the calling task when `threads` is nil, with the
  /// calling task's cancellation passed to the work (`reading`: see
  /// `_CancelToken.running(reading:_:)`).
  static func run<T: Sendable>(
    on threads: StoreThreads?, reading: Bool, _ body: @escaping @Sendable () throws -> T
  ) async throws -> T {
    try Task.checkCancellation()
    let token = _CancelToken()
    guard let threads else {
      return try await withTaskCancellationHandler {
        try token.running(reading: reading, body)
      } onCancel: {
        token.cancel()
      }
    }
    // The body (and what it captured: a request set, its evaluation, a store reader with
    // its read transaction and connection) is let go before the caller resumes, so a
    // finished call holds nothing of the store.
    let held = _HeldBody(body)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        threads.enqueue {
          continuation.resume(with: held.runOnce(token, reading: reading))
        }
      }
    } onCancel: {
      token.cancel()
    }
  }

  /// Queues a job; wakes an idle thread for it, or starts one while fewer than `count` run.
  func enqueue(_ job: @escaping @Sendable () -> Void) {
    enum Action { case wake, start, none }
    let action = state.withLock { s -> Action in
      s.jobs.append(job)
      s.queued += 1
      // A thread still looking for work takes it without a wake-up (the look and its end
      // both hold the lock, so a job counted here is never missed).
      if s.jobs.count - s.head <= s.spinning { return .none }
      if s.idle > 0 {
        s.idle -= 1
        return .wake
      }
      if s.live < count {
        s.live += 1
        return .start
      }
      return .none  // every thread is busy; one takes the job when it finishes its own
    }
    switch action {
    case .wake: wakeups.signal()
    case .start: _startThread()
    case .none: break
    }
  }

  /// Threads running now (tests check that idle ones end).
  var _liveThreads: Int { state.withLock { $0.live } }

  /// How many jobs were ever queued here (tests check which calls ran here).
  var _jobsQueued: Int { state.withLock { $0.queued } }

  private func _startThread() {
    let thread = Thread { [self] in self._work() }
    thread.name = name
    // As deep as a main thread's: a query's filter tree is walked recursively.
    thread.stackSize = 8 << 20
    thread.start()
  }

  /// The name of the store threads the caller runs on, or nil off them (tests check
  /// where work ran: `Thread.name` does not name a thread on Linux).
  static var _currentName: String? { Thread.current.threadDictionary[_threadKey] as? String }
  private static let _threadKey = "RequestSet.StoreThreads"

  private func _work() {
    Thread.current.threadDictionary[Self._threadKey] = name
    var justWorked = false
    while true {
      // Take a job, or count this thread spinning (it has just finished one) or idle, in
      // one step: a job queued after the look finds the thread counted and wakes it, or
      // leaves it to the spinning thread.
      let job = state.withLock { s -> (@Sendable () -> Void)? in
        if let job = Self._take(&s) { return job }
        if justWorked { s.spinning += 1 } else { s.idle += 1 }
        return nil
      }
      if let job {
        job()
        justWorked = true
        continue
      }
      if justWorked {
        justWorked = false
        if let job = _spin() {
          job()
          justWorked = true
          continue
        }
        // Counted idle now, as a thread that found no job.
      }
      if wakeups.wait(timeout: .now() + idleTime) == .success { continue }
      // Timed out. A job queued meanwhile may have claimed this thread (taking one from
      // `idle`) and signalled; then the signal is waiting, and the thread must stay.
      let leave = state.withLock { s -> Bool in
        guard s.idle > 0 else { return false }
        s.idle -= 1
        s.live -= 1
        return true
      }
      if leave { return }
      wakeups.wait()
    }
  }

  /// How long a thread that has just finished a job looks for the next one before it
  /// sleeps. An `await` of a store call is often followed at once by another (a loop of
  /// lookups, a page after a page); waking a sleeping thread costs tens of microseconds
  /// on a virtual machine, several times a lookup by id on SQLite. The look yields the
  /// core on every turn, so a busy machine loses little to it.
  static let spinTime: UInt64 = 250_000

  /// Looks for a job for up to ``spinTime`` nanoseconds, as a thread counted `spinning`;
  /// returns it, or nil with the thread counted idle again.
  private func _spin() -> (@Sendable () -> Void)? {
    let deadline = DispatchTime.now().uptimeNanoseconds + Self.spinTime
    while true {
      let over = DispatchTime.now().uptimeNanoseconds >= deadline
      let (job, done) = state.withLock { s -> ((@Sendable () -> Void)?, Bool) in
        if let job = Self._take(&s) {
          s.spinning -= 1
          return (job, true)
        }
        guard over else { return (nil, false) }
        s.spinning -= 1
        s.idle += 1
        return (nil, true)
      }
      if done { return job }
      sched_yield()
    }
  }

  /// The next queued job, taken out of its slot, or nil when none waits.
  private static func _take(_ s: inout State) -> (@Sendable () -> Void)? {
    guard s.head < s.jobs.count else { return nil }
    let job = s.jobs[s.head].take()
    s.head += 1
    if s.head > 64 && s.head * 2 > s.jobs.count {
      s.jobs.removeFirst(s.head)
      s.head = 0
    }
    return job
  }
}

/// A job's body, run once and let go: ``runOnce(_:reading:)`` returns only after the body
/// and everything it captured are released, so the caller resumes with nothing of the
/// job still alive (a request set's read transaction ends before its `await` returns).
private final class _HeldBody<T: Sendable>: Sendable {
  private let body: Mutex<(@Sendable () throws -> T)?>

  init(_ body: @escaping @Sendable () throws -> T) { self.body = Mutex(body) }

  func runOnce(_ token: _CancelToken, reading: Bool) -> Result<T, any Error> {
    // Taken out of the box, the closure lives only in `_run`'s frame, which ends before
    // this returns.
    guard let taken = body.withLock({ $0.take() }) else { return .failure(CancellationError()) }
    return Self._run(taken, token, reading: reading)
  }

  private static func _run(
    _ body: @escaping @Sendable () throws -> T, _ token: _CancelToken, reading: Bool
  ) -> Result<T, any Error> {
    Result { try token.running(reading: reading, body) }
  }
}
