import Foundation
import Synchronization
import Testing

/// Runs each test case of a suite (and of the suites inside it) on a thread of its own,
/// off Swift's cooperative pool, with at most ``OwnThreadsTrait/slots`` test cases at once.
///
/// Most tests are synchronous: a store's writes and reads block their thread. Run on the
/// cooperative pool, which has one thread per core, two of them held the whole pool, so
/// the async tests (whose every `await` resumes on that pool) waited for them, and a run
/// on two cores used about one. On threads of their own, a blocking test holds only its
/// thread, and the pool is left to the test runner and to the async tests' resumptions.
///
/// Every suite carries it (`@Suite(.ownThreads)`); a nested suite inherits it, and a test
/// case already on its own thread is not moved again.
///
/// ```swift
/// @Suite(.ownThreads) struct StoreTests {
///   @Test func insertsAndReads() throws { /* runs on a thread of its own */ }
/// }
/// ```
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
  /// How many test cases run at once: enough to keep two cores busy while some wait on a
  /// server, a child process or a file, few enough that each still gets a share of a
  /// core and that PostgreSQL's `max_connections` (200 on the private server) is never
  /// approached. `REQUESTSET_TEST_SLOTS` sets another number.
  static let slots: Int = {
    if let text = ProcessInfo.processInfo.environment["REQUESTSET_TEST_SLOTS"], let n = Int(text), n > 0 {
      return n
    }
    return Swift.max(6, 3 * ProcessInfo.processInfo.activeProcessorCount)
  }()

  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
    testCase == nil ? nil : self
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    guard testCase != nil, !Self.onOwnThread else { return try await function() }
    // A time limit counts from before this scope, so a test that has one does not wait
    // for a slot (a wait behind a hundred test cases is minutes): it runs at once, on its
    // own thread all the same. Few tests have one.
    let waits = !test.traits.contains { $0 is TimeLimitTrait }
    if waits { await _TestSlots.shared.acquire() }
    defer { if waits { _TestSlots.shared.release() } }
    let executor = _OneThreadExecutor(name: test.name)
    defer { executor.finish() }
    try await Self.$onOwnThread.withValue(true) {
      try await withTaskExecutorPreference(executor) { try await function() }
    }
  }

  /// Whether the current test case already runs on its own thread.
  @TaskLocal static var onOwnThread = false
}

extension Trait where Self == OwnThreadsTrait {
  /// Runs each test case on a thread of its own, off the cooperative pool
  /// (``OwnThreadsTrait``).
  ///
  /// ```swift
  /// @Suite(.ownThreads) struct StoreTests { }
  /// ```
  static var ownThreads: Self { OwnThreadsTrait() }
}

/// A counting semaphore that waits without holding a thread: the test cases beyond
/// ``OwnThreadsTrait/slots`` wait here, in order, suspended.
private final class _TestSlots: Sendable {
  static let shared = _TestSlots(count: OwnThreadsTrait.slots)

  private struct State {
    var free: Int
    var waiting: [CheckedContinuation<Void, Never>] = []
    var head = 0
  }
  private let state: _Locked<State>

  init(count: Int) { state = _Locked(State(free: count)) }

  func acquire() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let granted = state.withLock { s -> Bool in
        if s.free > 0 {
          s.free -= 1
          return true
        }
        s.waiting.append(continuation)
        return false
      }
      if granted { continuation.resume() }
    }
  }

  func release() {
    let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
      guard s.head < s.waiting.count else {
        s.free += 1
        return nil
      }
      let next = s.waiting[s.head]
      s.head += 1
      if s.head > 64 && s.head * 2 > s.waiting.count {
        s.waiting.removeFirst(s.head)
        s.head = 0
      }
      return next  // the slot passes to the next waiter without being freed
    }
    next?.resume()
  }
}

/// A task executor with one thread: the jobs of the test case that prefers it run there,
/// in order. The thread ends after ``finish()`` once the queue is empty.
private final class _OneThreadExecutor: TaskExecutor, Sendable {
  private struct State {
    var jobs: [UnownedJob] = []
    var finished = false
  }
  private let state = _Locked(State())
  private let wakeups = DispatchSemaphore(value: 0)

  init(name: String) {
    let thread = Thread { [self] in self.work() }
    thread.name = name
    // As deep as a main thread's: queries and decoders recurse.
    thread.stackSize = 8 << 20
    thread.start()
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    state.withLock { $0.jobs.append(job) }
    wakeups.signal()
  }

  func finish() {
    state.withLock { $0.finished = true }
    wakeups.signal()
  }

  private func work() {
    while true {
      wakeups.wait()
      while true {
        let (jobs, finished) = state.withLock { s -> ([UnownedJob], Bool) in
          defer { s.jobs.removeAll(keepingCapacity: true) }
          return (s.jobs, s.finished)
        }
        if jobs.isEmpty {
          if finished { return }
          break
        }
        for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
      }
    }
  }
}

/// The lock of this file's shared state: a pthread mutex (through `NSLock`), which
/// ThreadSanitizer understands. `Synchronization.Mutex` locks with futex calls it cannot
/// see, and `.ci/run` runs three suites under it, where every access behind a `Mutex` here
/// was reported as a race.
private final class _Locked<Value>: @unchecked Sendable {
  // @unchecked Sendable: `value` is read and written only inside `withLock`, between
  // `lock.lock()` and `lock.unlock()`, so no two threads ever touch it at once.
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
