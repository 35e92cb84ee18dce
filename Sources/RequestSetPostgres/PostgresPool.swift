import Foundation
import RequestSet
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The calling thread, as a number the pool can keep.
func _threadID() -> UInt {
  #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
  #else
    return UInt(pthread_self())
  #endif
}

/// The store's connections: never more than `limit` sessions at once, for writes, single
/// reads and every evaluation's read transaction alike; a caller waits while all are busy.
///
/// A connection found broken (by a statement that failed on it, or closed by the server
/// while idle) is dropped and replaced by a new one on demand, so a store outlives a
/// server restart: the statements in flight fail with `.connectionFailed` (their
/// transactions roll back on the server), and the next call connects again.
///
/// An evaluation's reader holds its connection through a ``_PGLease`` for as long as it
/// lives (the engine keeps a reader from a count until the evaluation that follows), so
/// many sets between the two would hold every connection. A lease whose reader the
/// engine has paused (see `StoreQueryReader.pause()`) is *parked*: a caller that finds
/// every connection in use takes a parked lease's connection, ending its read
/// transaction, instead of waiting. The lease connects again when its evaluation goes on,
/// and checks that its table has not changed meanwhile. So callers wait only for work in
/// progress, and nothing waits forever on a set a program keeps.
///
/// A call never waits for itself: a thread that already holds one of the pool's
/// connections in use (a reader in the middle of its evaluation, whose relations read
/// another set of the same store, say) waits for another only while some connection is
/// held by a thread that is not waiting; when every one in use is held by waiting
/// threads, it opens one beyond `limit`, closed when it is given back.
///
/// `@unchecked Sendable`: the mutable state (`_idle`, `_open`, `_closed`, `_leases`,
/// `_changes`) is read and written only while `_condition` is locked; the other stored
/// properties are constants.
final class _PGPool: @unchecked Sendable {
  let connection: _ConnectionString
  /// The timeouts and keepalives of every connection the pool opens.
  let options: PostgresConnectionOptions
  /// The most sessions open at once.
  let limit: Int
  /// How long a caller waits for a connection before it gives up.
  let patience: Duration

  private let _condition = NSCondition()
  private var _idle: [_PGConnection] = []
  /// The pool's connections open now: idle, held by a caller, or held by a lease.
  private var _open = 0
  private var _closed = false
  private var _leases: [ObjectIdentifier: _PGLease] = [:]
  /// Counts releases and parkings: a caller that looked at the leases and found none
  /// parked waits only if nothing changed since.
  private var _changes = 0
  /// How many connections each thread holds through ``with(_:)``.
  private var _holders: [UInt: Int] = [:]
  /// The threads waiting in ``acquire()`` now.
  private var _waiting: [UInt: Int] = [:]

  init(
    _ connection: _ConnectionString, limit: Int, options: PostgresConnectionOptions = PostgresConnectionOptions(),
    patience: Duration = .seconds(60)
  ) {
    self.connection = connection
    self.options = options
    self.limit = max(1, limit)
    self.patience = patience
  }

  /// A connection for one holder, outside any transaction; give it back with
  /// ``release(_:)``.
  ///
  /// Takes an idle connection, else opens one while fewer than `limit` are open, else
  /// takes a parked lease's (ending its read transaction), else waits for one of those.
  ///
  /// - Throws: `.closed` after ``close()``, `.connectionFailed` when no connection can be
  ///   made, or when every connection stays busy for 60 seconds; `CancellationError` when
  ///   the async call waiting is cancelled.
  func acquire() throws -> _PGConnection {
    let deadline = ContinuousClock.now + patience
    _condition.lock()
    while true {
      if _closed {
        _condition.unlock()
        throw closedError
      }
      if let pooled = _idle.popLast() {
        _condition.unlock()
        // Idle connections the server has closed meanwhile (it restarted, say) are dropped
        // here, so the first call after an outage opens a new one instead of failing on them.
        if !pooled.hasGoneAway { return pooled }
        _dropped(pooled)
        _condition.lock()
        continue
      }
      if _open < limit {
        _open += 1
        _condition.unlock()
        do {
          return try open()
        } catch {
          _dropped(nil)
          throw error
        }
      }
      let seen = _changes
      let leases = Array(_leases.values)
      _condition.unlock()
      for lease in leases {
        guard let c = lease.surrender() else { continue }
        // The lease's read transaction ends here; it begins a new one when it goes on.
        if !c.isBroken { _ = try? c.execute("COMMIT") }
        if !c.isBroken && !c.inTransaction { return c }
        _dropped(c)
        break
      }
      _condition.lock()
      if _changes != seen || _closed || !_idle.isEmpty || _open < limit { continue }
      let me = _threadID()
      if _waitsForItself(me) {
        // Every connection in use is held by a waiting thread, this one among them: no
        // wait would end.
        _overflows.add(1, ordering: .relaxed)
        _open += 1
        _condition.unlock()
        do {
          return try open()
        } catch {
          _dropped(nil)
          throw error
        }
      }
      // Wait in short steps, to see a cancelled call and the deadline.
      if ContinuousClock.now >= deadline {
        _condition.unlock()
        throw RequestSetError(
          .connectionFailed,
          "All \(limit) connections to \(connection.redacted) stayed busy for \(patience._spoken). "
            + "Finish the calls that hold them, or open the store with more connections.")
      }
      if StoreThreads.isCancelled {
        _condition.unlock()
        throw CancellationError()
      }
      _waiting[me, default: 0] += 1
      _ = _condition.wait(until: Date(timeIntervalSinceNow: 0.05))
      _waiting[me, default: 1] -= 1
      if _waiting[me] == 0 { _waiting[me] = nil }
    }
  }

  /// Whether `me` would wait forever: it holds one of the connections in use itself
  /// (through ``with(_:)`` or a pinned lease), and each one in use is held by a thread that
  /// is waiting for a connection too (or by `me`). The caller holds `_condition`'s lock.
  private func _waitsForItself(_ me: UInt) -> Bool {
    func waits(_ thread: UInt) -> Bool { thread == me || _waiting[thread] != nil }
    var mine = _holders[me, default: 0]
    var stuck = 0
    for (thread, n) in _holders where waits(thread) { stuck += n }
    for lease in _leases.values {
      guard let pinners = lease.pinnersInUse() else { continue }
      if pinners.contains(me) { mine += 1 }
      if pinners.allSatisfy(waits) { stuck += 1 }
    }
    return mine > 0 && stuck >= _open - _idle.count
  }

  /// A new connection outside the pool's count (a live set's listener), with the pool's
  /// options.
  func open() throws -> _PGConnection {
    _opened.add(1, ordering: .relaxed)
    return try _PGConnection(connection, options: options)
  }

  /// How many connections the pool has opened, and how many of them beyond `limit`
  /// (tests read them).
  let _opened = Atomic<Int>(0)
  let _overflows = Atomic<Int>(0)

  /// Takes a connection back: kept when it is sound and outside a transaction, else
  /// closed; closed too once the pool is.
  func release(_ c: _PGConnection) {
    if !c.isBroken && c.inTransaction { _ = try? c.execute("ROLLBACK") }
    let keep = !c.isBroken && !c.inTransaction
    _condition.lock()
    // One opened beyond the limit (see `acquire()`) is closed.
    let kept = keep && !_closed && _open <= limit
    if kept {
      _idle.append(c)
    } else {
      _open -= 1
    }
    _changes += 1
    _condition.broadcast()
    _condition.unlock()
    // A connection not kept is closed here, outside the lock (PQfinish in deinit).
  }

  /// Counts a connection that was taken out of the pool's hands and will not come back
  /// (broken, or found gone), letting a waiting caller open another.
  private func _dropped(_ c: _PGConnection?) {
    _condition.lock()
    _open -= 1
    _changes += 1
    _condition.broadcast()
    _condition.unlock()
  }

  /// Runs `body` with a connection held for it.
  @discardableResult
  func with<T>(_ body: (_PGConnection) throws -> T) throws -> T {
    let c = try acquire()
    let me = _threadID()
    _condition.lock()
    _holders[me, default: 0] += 1
    _condition.unlock()
    defer {
      _condition.lock()
      _holders[me, default: 1] -= 1
      if _holders[me] == 0 { _holders[me] = nil }
      _condition.unlock()
      release(c)
    }
    return try body(c)
  }

  /// Keeps `lease` where a waiting caller finds it.
  func register(_ lease: _PGLease) {
    _condition.lock()
    _leases[ObjectIdentifier(lease)] = lease
    _condition.unlock()
  }

  /// Forgets `lease` (it has given its connection back, or is about to).
  func unregister(_ lease: _PGLease) {
    _condition.lock()
    _leases[ObjectIdentifier(lease)] = nil
    _condition.unlock()
  }

  /// Called when a lease is parked: a waiting caller may take its connection now. Once
  /// the pool is closed, the lease's connection is closed instead.
  func parked(_ lease: _PGLease) {
    _condition.lock()
    let closed = _closed
    _changes += 1
    _condition.broadcast()
    _condition.unlock()
    if closed, let c = lease.surrender() { _dropped(c) }
  }

  /// Closes the idle connections and the parked leases' (ending their read
  /// transactions); a connection in use closes when its call gives it back. Later
  /// acquisitions, and the leases' next statements, throw `.closed`.
  func close() {
    _condition.lock()
    _closed = true
    let idle = _idle
    _idle = []
    _open -= idle.count
    let leases = Array(_leases.values)
    _changes += 1
    _condition.broadcast()
    _condition.unlock()
    for lease in leases {
      if let c = lease.surrender() { _dropped(c) }
    }
    _ = idle  // closed here, outside the lock: PQfinish in deinit
  }

  var isClosed: Bool {
    _condition.lock()
    defer { _condition.unlock() }
    return _closed
  }

  func checkOpen() throws {
    if isClosed { throw closedError }
  }

  private var closedError: RequestSetError {
    RequestSetError(.closed, "The PostgresStore at \(connection.redacted) is closed. Open a new store.")
  }
}

/// One reader's hold on a pooled connection and the transaction it keeps open on it
/// (`begin`), for as long as the reader lives.
///
/// The lease is pinned while its reader is in use (from its making, and between the
/// engine's `resume()` and `pause()`); unpinned, it is parked, and a caller that finds
/// every connection in use may take the connection (``surrender()``), ending the
/// transaction. The next
/// statement then takes a connection from the pool again, begins a new transaction and
/// runs `resume` on it, which throws when the table has changed meanwhile (the new
/// transaction would not see what the old one saw).
final class _PGLease: Sendable {
  let pool: _PGPool
  /// The statement that begins the lease's transaction.
  let begin: String
  /// Checks a new transaction sees what the first one saw.
  private let resume: @Sendable (_PGConnection) throws -> Void
  /// The connection (nil while surrendered) and how many calls are under way; a lease
  /// with none is parked.
  private let state: Mutex<(connection: _PGConnection?, active: Int, pinners: [UInt])>
  /// One statement at a time: the engine may share a reader between threads.
  private let statements = Mutex<Void>(())

  /// A lease of `c`, on which `begin` has run.
  init(_ pool: _PGPool, _ c: _PGConnection, begin: String, resume: @escaping @Sendable (_PGConnection) throws -> Void) {
    self.pool = pool
    self.begin = begin
    self.resume = resume
    state = Mutex((c, 1, [_threadID()]))  // pinned by its maker, until the engine pauses the reader
    pool.register(self)
  }

  /// Runs `body` with the lease's connection, in its transaction.
  ///
  /// - Throws: What `body` throws; `.closed` when the pool was closed meanwhile; what
  ///   `resume` throws when the connection was taken and the table has changed since.
  func with<T>(_ body: (_PGConnection) throws -> T) throws -> T {
    try during {
      try statements.withLock { _ in try body(try _connection()) }
    }
  }

  /// Runs `body` with the lease kept from being parked: what spans several statements on
  /// one connection (a cursor read in batches) runs here.
  func during<T>(_ body: () throws -> T) throws -> T {
    pin()
    defer { unpin() }
    return try body()
  }

  /// Keeps the connection for the lease's holder, until as many ``unpin()``s.
  func pin() {
    let me = _threadID()
    state.withLock { s in
      s.active += 1
      s.pinners.append(me)
    }
  }

  /// Ends one ``pin()`` (or the pin the lease is made with); the last parks the lease.
  func unpin() {
    let me = _threadID()
    let parked = state.withLock { s -> Bool in
      s.active = max(0, s.active - 1)
      if let i = s.pinners.lastIndex(of: me) {
        s.pinners.remove(at: i)
      } else if !s.pinners.isEmpty {
        s.pinners.removeLast()
      }
      return s.active == 0 && s.connection != nil
    }
    if parked { pool.parked(self) }
  }

  /// The threads using the lease's connection now (they pinned it), or nil when it holds
  /// none or is parked.
  func pinnersInUse() -> [UInt]? {
    state.withLock { $0.connection != nil && $0.active > 0 ? $0.pinners : nil }
  }

  /// The connection, taken from the pool again (with a new transaction) if it was
  /// surrendered.
  private func _connection() throws -> _PGConnection {
    if let c = state.withLock({ $0.connection }) { return c }
    let c = try pool.acquire()
    do {
      try c.execute(begin)
      try resume(c)
    } catch {
      pool.release(c)
      throw error
    }
    state.withLock { $0.connection = c }
    return c
  }

  /// The connection, taken from a parked lease; nil when the lease is in use or holds
  /// none. The caller ends its transaction.
  func surrender() -> _PGConnection? {
    state.withLock { s -> _PGConnection? in
      guard s.active == 0, let c = s.connection else { return nil }
      s.connection = nil
      return c
    }
  }

  /// Ends the transaction and gives the connection back: the reader is done.
  func end() {
    pool.unregister(self)
    let c = state.withLock { s -> _PGConnection? in
      defer { s.connection = nil }
      return s.connection
    }
    guard let c else { return }
    if !c.isBroken { _ = try? c.execute("COMMIT") }
    pool.release(c)
  }
}
