import Foundation

/// Runs blocking work (a loop of synchronous writes, a wait for a child process) on a
/// thread of its own and awaits its result, so an async test does not hold one of the few
/// threads Swift's concurrency runs every suite's tasks on.
///
/// ```swift
/// let status = await onOwnThread { child.wait(timeout: .seconds(60)) }
/// ```
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread { continuation.resume(with: Result { try body() }) }.start()
  }
}

/// ``onOwnThread(_:)`` for work that cannot throw.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread { continuation.resume(returning: body()) }.start()
  }
}
