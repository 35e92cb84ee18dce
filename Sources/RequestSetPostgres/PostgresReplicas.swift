import RequestSet
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One hot standby a ``PostgresStore`` reads from: its own pool of connections, and until
/// when it is left alone after it could not be reached.
final class _PGReplica: Sendable {
  let pool: _PGPool
  /// Until when reads skip the replica (it failed); nil while it is up.
  private let _downUntil = Mutex<ContinuousClock.Instant?>(nil)

  init(_ pool: _PGPool) { self.pool = pool }

  /// Whether reads may try the replica now.
  var isUp: Bool { _downUntil.withLock { $0.map { ContinuousClock.now >= $0 } ?? true } }

  /// Leaves the replica alone for `retry`.
  func markDown(for retry: Duration) { _downUntil.withLock { $0 = ContinuousClock.now + retry } }
}

/// The store's read replicas (``PostgresConnectionOptions/replicas``) and the WAL position
/// its reads must see (``PostgresConnectionOptions/replicaWait``).
final class _PGReplicas: Sendable {
  let replicas: [_PGReplica]
  let wait: Duration
  let retry: Duration
  /// Where the next read starts looking: reads take the replicas in turn.
  private let _next = Atomic<Int>(0)
  /// The WAL position (an LSN as a number) that a replica must have replayed before a
  /// read runs on it: that of this store's latest commit, or of the latest its commits
  /// stream delivered. 0 before any; ``unknown`` when a commit's position could not be
  /// read (reads then ask the primary for its position first).
  private let _floor = Atomic<UInt64>(0)
  /// How many reads ran on a replica, and on the primary (tests read them).
  let _replicaReads = Atomic<Int>(0)
  let _primaryReads = Atomic<Int>(0)
  /// The redacted connection string of the server the latest read ran on.
  let _lastRead: Mutex<String>

  static var unknown: UInt64 { .max }

  init(_ replicas: [_PGReplica], wait: Duration, retry: Duration, primary: String) {
    self.replicas = replicas
    self.wait = wait
    self.retry = retry
    _lastRead = Mutex(primary)
  }

  var floor: UInt64 { _floor.load(ordering: .acquiring) }

  /// Raises the position reads must see to `lsn` (never lowers it, but for ``unknown``,
  /// which a known position replaces).
  func raise(to lsn: UInt64) {
    var current = _floor.load(ordering: .relaxed)
    while current == Self.unknown || lsn > current {
      let (exchanged, original) = _floor.compareExchange(
        expected: current, desired: lsn, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
      if exchanged { return }
      current = original
    }
  }

  /// Marks the position as unknown: a commit's could not be read.
  func forget() { _floor.store(Self.unknown, ordering: .releasing) }

  /// The replicas reads may try now, starting with the next in turn.
  func candidates() -> [_PGReplica] {
    let start = _next.add(1, ordering: .relaxed).oldValue
    let n = replicas.count
    return (0..<n).map { replicas[(start &+ $0) % n] }.filter(\.isUp)
  }

  /// Whether the standby on `c` has replayed `floor`: asks it every few milliseconds until
  /// `deadline`. Throws `.invalidOptions` when the server is not a standby (any more).
  func caughtUp(_ c: _PGConnection, floor: UInt64, deadline: ContinuousClock.Instant) throws -> Bool {
    var pause: UInt32 = 1_000
    while true {
      let row = try c.execute("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text")
      guard row.string(0, 0) == "t" else { throw Self.notStandby(c.connection.redacted) }
      if floor == 0 { return true }
      if let replayed = row.string(0, 1).flatMap(Self.lsn), replayed >= floor { return true }
      if floor == Self.unknown || ContinuousClock.now >= deadline { return false }
      usleep(pause)
      pause = Swift.min(pause * 2, 20_000)
    }
  }

  /// The error for a replica that is not a hot standby.
  static func notStandby(_ redacted: String) -> RequestSetError {
    RequestSetError(
      .invalidOptions,
      "The replica \(redacted) is not a hot standby (pg_is_in_recovery() is false there), so reads from it "
        + "would not follow the primary's writes. Pass the connection string of a standby of the primary (one made "
        + "with pg_basebackup -R, whose data folder holds standby.signal), or remove it from "
        + "PostgresConnectionOptions.replicas.")
  }

  /// An LSN's text (`16/B374D848`) as a number.
  static func lsn(_ text: String) -> UInt64? {
    let parts = text.split(separator: "/")
    guard parts.count == 2, let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16),
      high <= UInt64(UInt32.max), low <= UInt64(UInt32.max)
    else { return nil }
    return high << 32 | low
  }

  /// Closes every replica's connections.
  func close() { for replica in replicas { replica.pool.close() } }
}

extension PostgresStore {
  /// Makes the replicas `options` name, checking each that answers is a standby.
  ///
  /// - Throws: `.invalidFormat` for a connection string libpq cannot parse,
  ///   `.invalidOptions` for a server that is not a standby.
  static func _openReplicas(
    _ options: PostgresConnectionOptions, connections: Int, primary: _ConnectionString
  ) throws -> _PGReplicas? {
    guard !options.replicas.isEmpty else { return nil }
    var replicas: [_PGReplica] = []
    for (i, url) in options.replicas.enumerated() {
      let connection = _ConnectionString(url)
      if let problem = connection.problem {
        throw RequestSetError(
          .invalidFormat,
          "The connection string of replica \(i) (\(connection.redacted)) in PostgresConnectionOptions.replicas is "
            + "not usable: \(problem). Fix the string (a libpq URI or key=value settings) and open the store again."
        )
      }
      let replica = _PGReplica(_PGPool(connection, limit: connections, options: options))
      do {
        try replica.pool.with { c in
          let row = try c.execute("SELECT pg_is_in_recovery()")
          guard row.string(0, 0) == "t" else { throw _PGReplicas.notStandby(connection.redacted) }
        }
      } catch let error as RequestSetError where error.code == .connectionFailed {
        // Down now: reads go elsewhere, and try it again later.
        replica.markDown(for: options.replicaRetry)
      } catch {
        replica.pool.close()
        for made in replicas { made.pool.close() }
        throw error
      }
      replicas.append(replica)
    }
    return _PGReplicas(
      replicas, wait: options.replicaWait, retry: options.replicaRetry, primary: primary.redacted)
  }

  /// The connection string (password hidden) of the server the store's latest read ran
  /// on: one of ``PostgresConnectionOptions/replicas``, or the primary's, which it is
  /// without replicas, and when the replicas were down or had not replayed the store's
  /// latest commit in time.
  ///
  /// ```swift
  /// let store = try PostgresStore<Animal>(url: primary, options: PostgresConnectionOptions(replicas: [standby]))
  /// _ = try RequestSet(store).filter(\.age > 3).fetchCount()
  /// store.lastReadServer   // "postgresql://app@standby1.example.com/zoo"
  /// ```
  public var lastReadServer: String {
    _replicas?._lastRead.withLock { $0 } ?? _pool.connection.redacted
  }

  /// Remembers where the primary's WAL is after a commit on `c`, for reads from replicas
  /// to wait for (see ``PostgresConnectionOptions/replicaWait``). Without replicas it does
  /// nothing.
  ///
  /// After this session's own `COMMIT` the flushed position is at or past the commit's
  /// record (the commit waited for its flush) unless the session's `synchronous_commit`
  /// is off, and is already on its way to the standbys; the insert position is as late,
  /// but may hold other sessions' records not flushed yet (up to `wal_writer_delay`,
  /// 200 ms, later), which a read would wait for in vain meanwhile. So: the flushed
  /// position, or the insert position when `synchronous_commit` is off, or when the commit
  /// is another process's (`ownCommit` false: a commit the listener heard of, whose
  /// session's setting is unknown).
  func _noteCommit(_ c: _PGConnection, ownCommit: Bool = true) {
    guard let replicas = _replicas else { return }
    let position =
      ownCommit
      ? "SELECT (CASE WHEN current_setting('synchronous_commit') = 'off' THEN pg_current_wal_insert_lsn() "
        + "ELSE pg_current_wal_flush_lsn() END)::text"
      : "SELECT pg_current_wal_insert_lsn()::text"
    if let text = try? c.execute(position).string(0, 0),
      let lsn = _PGReplicas.lsn(text)
    {
      replicas.raise(to: lsn)
    } else {
      // The commit went through (or may have) but its position is unknown: reads ask
      // the primary for its position before they trust a replica.
      replicas.forget()
    }
  }

  /// A connection to read on and the pool it came from: a replica's that has replayed
  /// every commit the store must see, else the primary's. Give it back to that pool.
  private func _readConnection() throws -> (pool: _PGPool, connection: _PGConnection) {
    guard let replicas = _replicas else { return (_pool, try _pool.acquire()) }
    var floor = replicas.floor
    if floor == _PGReplicas.unknown {
      if let text = try? _pool.with({ try $0.execute("SELECT pg_current_wal_insert_lsn()::text") }).string(
        0, 0),
        let lsn = _PGReplicas.lsn(text)
      {
        replicas.raise(to: lsn)
        floor = replicas.floor
      }
    }
    let deadline = ContinuousClock.now + replicas.wait
    for replica in replicas.candidates() {
      let c: _PGConnection
      do {
        c = try replica.pool.acquire()
      } catch let error as RequestSetError where error.code == .connectionFailed {
        replica.markDown(for: replicas.retry)
        continue
      }
      do {
        if try replicas.caughtUp(c, floor: floor, deadline: deadline) {
          replicas._replicaReads.add(1, ordering: .relaxed)
          replicas._lastRead.withLock { $0 = replica.pool.connection.redacted }
          return (replica.pool, c)
        }
        replica.pool.release(c)
      } catch {
        // Gone, or promoted: no longer a standby of this primary to trust.
        replica.pool.release(c)
        replica.markDown(for: replicas.retry)
      }
    }
    let c = try _pool.acquire()
    replicas._primaryReads.add(1, ordering: .relaxed)
    replicas._lastRead.withLock { $0 = _pool.connection.redacted }
    return (_pool, c)
  }

  /// Runs `body` on a connection to read on (see ``PostgresConnectionOptions/replicas``):
  /// `body` keeps the connection (it gives it back to the pool, or leases it) when it
  /// returns; when it throws, the connection goes back here. A replica whose connection
  /// fails under `body` is left alone for a while, and `body` runs again elsewhere, so
  /// `body` must only read.
  func _onReadServer<T>(_ body: (_PGPool, _PGConnection) throws -> T) throws -> T {
    while true {
      let (pool, c) = try _readConnection()
      do {
        return try body(pool, c)
      } catch let error as RequestSetError where error.code == .connectionFailed && pool !== _pool {
        pool.release(c)
        _replicas?.replicas.first { $0.pool === pool }?.markDown(for: _pool.options.replicaRetry)
      } catch {
        pool.release(c)
        throw error
      }
    }
  }

  /// Runs `body`, which only reads, on a connection to read on, and gives it back.
  func _read<T>(_ body: (_PGConnection) throws -> T) throws -> T {
    try _onReadServer { pool, c in
      let result = try body(c)
      pool.release(c)
      return result
    }
  }
}
