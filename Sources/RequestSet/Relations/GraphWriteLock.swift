#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The lock every write through a ``RecordGraph`` holds from its first check to its last
/// change, so that what it checked (a pet exists; no visit points at it) still holds when
/// it writes.
///
/// One lock for the whole process, not one per graph or per store:
/// - Two graphs built over the same store objects must exclude each other, and so must two
///   graphs that share one store of several (a graph of pets and visits beside a graph of
///   pets and owners). Locks keyed by the stores' identities and taken in a fixed order
///   would do that too, but a store object is not the thing to key on: two `SQLiteStore`s
///   (or `PostgresStore`s) of one table in one process are two objects over the same rows,
///   and would not exclude each other. One lock needs no key, no table of locks to grow and
///   prune, and no order to get wrong.
/// - What it costs: graph writes of one process run one at a time, even through graphs
///   that share nothing. A graph write is a handful of queries and one apply per store;
///   reads, and writes made to a store directly, never wait for it.
///
/// It is an error-checking mutex, so a graph write made while the same thread already
/// holds the lock (from a closure the outer write runs, such as a `filter { … }` closure of
/// the set given to `delete(_:)`) throws `.locked` instead of deadlocking.
///
/// Writes made to a store directly (`store.insert`, `set.delete()`) do not take it: they
/// bypass relations altogether. Nor does it reach other processes (see the notes at the
/// top of `RecordGraph+Writing.swift`).
final class _GraphWriteLock: @unchecked Sendable {
  // @unchecked Sendable: the mutex is allocated and initialised once in `init`, never
  // moves, and is only used through pthread calls, which are safe from any thread.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>

  /// The process's lock.
  static let shared = _GraphWriteLock()

  private init() {
    var attributes = pthread_mutexattr_t()
    pthread_mutexattr_init(&attributes)
    pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, &attributes)
    pthread_mutexattr_destroy(&attributes)
  }

  /// Runs `body` holding the lock.
  ///
  /// - Throws: `.locked` when this thread holds the lock already (a graph write inside a
  ///   graph write); what `body` throws.
  func hold<Result>(_ body: () throws -> Result) throws -> Result {
    let status = pthread_mutex_lock(mutex)
    guard status == 0 else {
      throw RequestSetError(
        .locked,
        "A write through a RecordGraph was started while this thread was inside another graph write (from a "
          + "closure that write runs, such as a filter closure of the set being deleted). Make the second write "
          + "after the first returns.")
    }
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}
