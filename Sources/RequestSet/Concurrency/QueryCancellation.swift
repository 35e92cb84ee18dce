import Synchronization

/// The cancellation of one async call, as the blocking work it runs sees it.
///
/// The async API binds a token to the work (a task-local value, which a plain thread
/// carries as well); a store's statement registers how to stop itself while it runs.
final class _CancelToken: Sendable {
  @TaskLocal static var current: _CancelToken?

  private struct State {
    var cancelled = false
    var finished = false
    var handlers: [Int: @Sendable () -> Void] = [:]
    var nextHandler = 0
  }
  private let state = Mutex(State())
  /// `state.cancelled`, readable without the lock: a scan reads it once per record.
  private let flag = Atomic<Bool>(false)

  var isCancelled: Bool { flag.load(ordering: .relaxed) }

  /// How many calls are cancelled while their work still runs: zero nearly always, so
  /// ``throwIfCancelled()`` costs a loop one relaxed load until some call is cancelled.
  private static let cancelledRunning = Atomic<Int>(0)

  /// Whether any call is cancelled while its work still runs (one relaxed load): when
  /// not, no token bound anywhere is cancelled, and the task-local need not be read.
  static var anyCancelledRunning: Bool { cancelledRunning.load(ordering: .relaxed) != 0 }

  /// Throws `CancellationError` when the async call running this thread's work has been
  /// cancelled: the check a loop over records makes between records (decoding a log's
  /// records, sorting, learning a log's kinds of value), so that every store's scan stops
  /// soon after the cancel, not only its filter. One relaxed atomic load while no call is
  /// cancelled; the task-local token is read only then.
  @inline(__always)
  static func throwIfCancelled() throws {
    if cancelledRunning.load(ordering: .relaxed) != 0, current?.isCancelled == true { throw CancellationError() }
  }

  /// Throws `CancellationError` when the async call running this thread's work has been
  /// cancelled: the check a write through a query makes before it applies anything, so
  /// that a scan stopped by the cancellation never becomes a write.
  static func checkBeforeWriting() throws {
    if current?.isCancelled == true { throw CancellationError() }
  }

  /// Marks the call cancelled and runs the stop handlers of the statements running now.
  ///
  /// The handlers run under the token's lock, so a statement that ends meanwhile waits
  /// for the handler to return before it gives its connection to another call: a stop
  /// request never reaches another call's statement.
  func cancel() {
    state.withLock { s in
      guard !s.cancelled, !s.finished else { return }
      s.cancelled = true
      // Counted before the flag is set (`StoreThreads.isCancelled` reads the count, then
      // the flag), both before the lock is let go: whatever learns of the cancel after it
      // (through this lock, an await) sees both.
      Self.cancelledRunning.add(1, ordering: .relaxed)
      flag.store(true, ordering: .relaxed)
      for handler in s.handlers.values { handler() }
    }
  }

  /// Runs `body` with this token bound; a `body` that throws after the call was
  /// cancelled throws `CancellationError` (its own error is how the store noticed).
  ///
  /// - Parameter reading: Whether `body` only reads: a read that returns after the call
  ///   was cancelled may have stopped its scan early, so it throws `CancellationError`
  ///   too. A write returns what it returned: it checked before writing
  ///   (``checkBeforeWriting()``), and what it committed stays committed.
  func running<T>(reading: Bool, _ body: () throws -> T) throws -> T {
    defer {
      state.withLock { s in
        // Counted by `cancel()` exactly when it found the call cancelled and not finished.
        if s.cancelled && !s.finished { Self.cancelledRunning.subtract(1, ordering: .relaxed) }
        s.finished = true
      }
    }
    if isCancelled { throw CancellationError() }
    let result: T
    do {
      result = try Self.$current.withValue(self) { try body() }
    } catch {
      if isCancelled { throw CancellationError() }
      throw error
    }
    if reading && isCancelled { throw CancellationError() }
    return result
  }

  /// Runs `body`, calling `onCancel` if the call is cancelled while it runs; throws
  /// `CancellationError` without running it if the call was cancelled already.
  func whileRunning<T>(onCancel: @escaping @Sendable () -> Void, _ body: () throws -> T) throws -> T {
    let id = try state.withLock { s -> Int? in
      if s.cancelled { throw CancellationError() }
      if s.finished { return nil }
      let id = s.nextHandler
      s.nextHandler += 1
      s.handlers[id] = onCancel
      return id
    }
    defer { if let id { state.withLock { _ = $0.handlers.removeValue(forKey: id) } } }
    return try body()
  }
}

extension StoreThreads {
  /// Whether the async call whose work runs on this thread has been cancelled: false
  /// outside the async API. A backend's long loop checks it now and then and throws
  /// `CancellationError`.
  ///
  /// ```swift
  /// for (i, row) in rows.enumerated() {
  ///   if i % 1_024 == 0, StoreThreads.isCancelled { throw CancellationError() }
  ///   // …
  /// }
  /// ```
  public static var isCancelled: Bool { _CancelToken.anyCancelledRunning && _CancelToken.current?.isCancelled == true }

  /// Runs `body`, calling `onCancel` (from another thread) if the async call that runs
  /// it is cancelled meanwhile: how a backend stops a
  /// statement it cannot check from inside (SQLite's `sqlite3_interrupt`, libpq's
  /// `PQcancel`). Outside the async API it just runs `body`.
  ///
  /// - Throws: What `body` throws, or `CancellationError` without running `body` when the
  ///   call was cancelled already.
  ///
  /// `onCancel` never runs after `body` returns, so it may name the connection that
  /// `body` uses, even if that connection serves another call next.
  ///
  /// ```swift
  /// try StoreThreads.whenCancelled({ sqlite3_interrupt(db) }) {
  ///   try statement.run()
  /// }
  /// ```
  public static func whenCancelled<T>(_ onCancel: @escaping @Sendable () -> Void, run body: () throws -> T) throws -> T {
    guard let token = _CancelToken.current else { return try body() }
    return try token.whileRunning(onCancel: onCancel, body)
  }
}
