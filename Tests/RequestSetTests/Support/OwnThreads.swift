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
  /// Whether the cases wait for a slot ahead of the others' (``Testing/Trait/ownThreads(servedFirst:)``).
  var servedFirst = false

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
    if waits { await _TestSlots.shared.acquire(first: servedFirst) }
    defer { if waits { _TestSlots.shared.release() } }
    let timing = _CaseTimes.shared.map { $0.begin(test, testCase) }
    defer { if let timing { _CaseTimes.shared?.end(timing) } }
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

  /// Runs each test case on a thread of its own, and makes it wait for a slot ahead of
  /// the cases of suites without it: for `.serialized` suites. Such a suite asks for a slot
  /// once per case, and in a first-come queue each ask waited behind every case queued
  /// meanwhile, so the serialized suites (PostgreSQL failover, two processes, crash loops)
  /// ended the run, having worked a fifth of it and waited the rest.
  ///
  /// ```swift
  /// @Suite(.serialized, .ownThreads(servedFirst: true)) struct TwoProcessTests { }
  /// ```
  static func ownThreads(servedFirst: Bool) -> Self { OwnThreadsTrait(servedFirst: servedFirst) }
}

/// A counting semaphore that waits without holding a thread: the test cases beyond
/// ``OwnThreadsTrait/slots`` wait here, in order, suspended.
private final class _TestSlots: Sendable {
  static let shared = _TestSlots(count: OwnThreadsTrait.slots)

  private struct State {
    var free: Int
    var waiting: [CheckedContinuation<Void, Never>] = []
    var head = 0
    /// Waiters served before `waiting`: the cases of serialized suites.
    var first: [CheckedContinuation<Void, Never>] = []
  }
  private let state: _Locked<State>

  init(count: Int) { state = _Locked(State(free: count)) }

  /// Waits for a slot; `first` waits ahead of every waiter that did not ask for it.
  func acquire(first: Bool = false) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let granted = state.withLock { s -> Bool in
        if s.free > 0 {
          s.free -= 1
          return true
        }
        if first { s.first.append(continuation) } else { s.waiting.append(continuation) }
        return false
      }
      if granted { continuation.resume() }
    }
  }

  func release() {
    let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
      if !s.first.isEmpty { return s.first.removeFirst() }
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

/// With `REQUESTSET_TEST_TIMES=path`, one line per test case appended to `path` when it
/// ends: the seconds from the process's start to when it got its slot and to its end, and
/// its name (`Scripts/test-times.py path` sums them). Swift Testing's own times count from
/// before the slot wait, so they cannot tell how long a case ran.
private final class _CaseTimes: Sendable {
  static let shared: _CaseTimes? = ProcessInfo.processInfo.environment["REQUESTSET_TEST_TIMES"].flatMap {
    FileHandle(forWritingAtPath: $0) ?? (FileManager.default.createFile(atPath: $0, contents: nil)
      ? FileHandle(forWritingAtPath: $0) : nil)
  }.map(_CaseTimes.init)

  private let file: _Locked<FileHandle>
  private let origin = ContinuousClock.now

  init(_ file: FileHandle) {
    file.seekToEndOfFile()
    self.file = _Locked(file)
  }

  func begin(_ test: Test, _ testCase: Test.Case?) -> (name: String, start: Duration) {
    // The case's arguments are not public API; a mirror reads them for the name only.
    func find(_ label: String, in value: Any, depth: Int = 0) -> Any? {
      for child in Mirror(reflecting: value).children {
        if child.label == label { return child.value }
        if depth < 4, let found = find(label, in: child.value, depth: depth + 1) { return found }
      }
      return nil
    }
    var arguments = ""
    if let testCase, let list = find("arguments", in: testCase) {
      arguments = Mirror(reflecting: list).children.compactMap { argument in
        find("value", in: argument.value).map { String(describing: $0) }
      }.joined(separator: ", ")
    }
    return ("\(test.id) \(arguments.prefix(80))", ContinuousClock.now - origin)
  }

  func end(_ timing: (name: String, start: Duration)) {
    func seconds(_ d: Duration) -> String {
      String(format: "%.3f", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }
    let line = "\(seconds(timing.start))\t\(seconds(ContinuousClock.now - origin))\t\(timing.name)\n"
    file.withLock { $0.write(Data(line.utf8)) }
  }
}

/// The lock of this file's shared state: a pthread mutex (through `NSLock`), which
/// ThreadSanitizer understands. `Synchronization.Mutex` locks with futex calls it cannot
/// see, and `.ci/run` runs three suites under it, where every access behind a `Mutex` here
/// was reported as a race.
final class _Locked<Value>: @unchecked Sendable {
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
