#if REQUESTSET_TSAN
  import _RequestSetSQL

  /// In thread-sanitizer builds (`-Xswiftc -DREQUESTSET_TSAN`) this module's `Mutex` is a
  /// `pthread_mutex_t` lock the sanitizer can see (see `_SanitizerLock`); every other build
  /// uses `Synchronization.Mutex`.
  typealias Mutex<Value> = _SanitizerLock<Value>
#endif
