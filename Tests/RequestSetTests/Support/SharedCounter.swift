import Synchronization

/// A count that tasks, threads and closures share (an `Atomic` cannot be captured).
///
/// ```swift
/// let seen = SharedCounter()
/// let task = Task { try await set.filter { _ in seen.add(); return true }.async.fetch() }
/// ```
final class SharedCounter: Sendable {
  private let storage = Atomic<Int>(0)

  init() {}

  /// Adds `n` and returns the new value.
  @discardableResult
  func add(_ n: Int = 1) -> Int { storage.add(n, ordering: .relaxed).newValue }

  /// Keeps the larger of the value and `n`.
  func raise(to n: Int) { _ = storage.max(n, ordering: .relaxed) }

  /// The value.
  var value: Int { storage.load(ordering: .relaxed) }
}
