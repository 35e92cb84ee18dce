#if REQUESTSET_TSAN
  #if canImport(Glibc)
    import Glibc
  #elseif canImport(Darwin)
    import Darwin
  #endif

  /// `Mutex` in thread-sanitizer builds of the SQL stores (`-Xswiftc -DREQUESTSET_TSAN`, as
  /// `.ci/run` does): `Synchronization.Mutex` locks with raw futex calls on Linux, which
  /// ThreadSanitizer cannot see, so it would report every access under one as a race. This
  /// `pthread_mutex_t` lock, which it does understand, stands in for it, as RequestSet's own
  /// `_Lock` does. Every other build uses `Mutex`.
  public final class _SanitizerLock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written inside `withLock`, between
    // pthread_mutex_lock and pthread_mutex_unlock on `mutex`, so no two threads ever touch
    // it at once; `mutex` itself is allocated once and never moves.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ initialValue: Value) {
      mutex = .allocate(capacity: 1)
      mutex.initialize(to: pthread_mutex_t())
      pthread_mutex_init(mutex, nil)
      value = initialValue
    }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return try body(&value)
    }
  }

  /// In sanitizer builds this module's `Mutex` is ``_SanitizerLock``.
  typealias Mutex<Value> = _SanitizerLock<Value>
#endif
