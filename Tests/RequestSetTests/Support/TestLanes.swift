import Foundation
import Synchronization
import Testing

@testable import RequestSet

/// Threads of the test process's own for the long synchronous suites, so that they do
/// not hold the few threads Swift's concurrency runs every other test on.
///
/// Swift Testing runs every test as a task. On this machine's two cores the global
/// executor has about two threads, and a synchronous test body (a differential suite
/// reading 10,000 records per query for a minute) holds one of them from start to end.
/// The async tests (live sets, cancellation, the async API) then resume only between
/// such bodies, so a serialized suite of async tests was stretched over the whole run and
/// finished last, long after the CPU work was done. A suite marked ``offThePool`` runs
/// its tests here instead: the operating system shares the cores between these threads
/// and the executor's, so the async tests keep moving.
///
/// The lanes are a ``StoreThreads`` of 8: enough that a test blocked on a child process or
/// on work it queued itself leaves others running, few enough that the long suites do not
/// crowd out the rest. Tasks a test starts inherit the preference and run here too.
///
/// ```swift
/// @Suite(.offThePool) struct LongDifferentialTests { … }
/// ```
final class TestLanes: TaskExecutor {
  static let shared = TestLanes()

  /// The threads: the library's own pool of threads for blocking work, which starts one
  /// when a job arrives and none is idle, up to its count, and lets idle ones end.
  private let threads = StoreThreads(name: "test lane", count: 8)

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    threads.enqueue { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
  }
}

/// Runs a suite's tests on ``TestLanes`` (see there for why).
struct OffThePoolTrait: SuiteTrait, TestTrait, TestScoping {
  /// Each test (and each case of a parameterized one) runs in the lane's scope: Swift
  /// Testing starts a test's task outside its suite's scope.
  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
    // Around each test function's run (each case of a parameterized one), not around the
    // suite: Swift Testing starts the tests' tasks outside their suite's scope.
    test.isSuite ? nil : self
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    try await withTaskExecutorPreference(TestLanes.shared) { try await function() }
  }
}

extension Trait where Self == OffThePoolTrait {
  /// Runs the suite's tests on threads of their own (``TestLanes``), not on the few that
  /// Swift's concurrency shares between all tests.
  static var offThePool: Self { OffThePoolTrait() }
}
