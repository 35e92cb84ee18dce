import Synchronization

#if REQUESTSET_TSAN
  #if canImport(Glibc)
    import Glibc
  #elseif canImport(Darwin)
    import Darwin
  #endif

  /// The lock RequestSet's shared state lives behind, in thread-sanitizer builds.
  ///
  /// `Synchronization.Mutex` locks with raw futex calls on Linux, which ThreadSanitizer
  /// cannot see: it reports every access under a `Mutex` as a race, even in a two-line
  /// program. Builds for the sanitizer (`-Xswiftc -DREQUESTSET_TSAN`, as `.ci/run` does)
  /// swap in this `pthread_mutex_t` lock, which it does understand, so the sanitizer checks
  /// everything around the locks for real. Every other build uses `Mutex`.
  final class _Lock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written inside `withLock`, between
    // pthread_mutex_lock and pthread_mutex_unlock on `mutex`, so no two threads ever touch
    // it at once; `mutex` itself is allocated once and never moves.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ initialValue: Value) {
      mutex = .allocate(capacity: 1)
      mutex.initialize(to: pthread_mutex_t())
      pthread_mutex_init(mutex, nil)
      value = initialValue
    }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return try body(&value)
    }
  }
#else
  /// The lock RequestSet's shared state lives behind: `Synchronization.Mutex` (see the
  /// `REQUESTSET_TSAN` variant above for sanitizer builds).
  typealias _Lock<Value> = Mutex<Value>
#endif
