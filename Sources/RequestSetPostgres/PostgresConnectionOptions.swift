import RequestSet

/// How a ``PostgresStore`` connects and how long it waits for the server: timeouts, so a
/// call on a server that stopped answering (frozen, overloaded, unreachable behind a cut
/// network) returns `.connectionFailed` instead of hanging, and TCP keepalives, so the
/// operating system finds a dead peer under an idle connection.
///
/// The defaults: ``connectTimeout`` 30 s, ``statementTimeout`` 300 s, keepalives after 30 s
/// idle, every 10 s, 3 probes (``Keepalives``), ``tcpUserTimeout`` 60 s. A call on a frozen
/// server returns after at most the statement timeout plus one second; one that needs a
/// new connection, after the connect timeout.
///
/// ```swift
/// let store = try PostgresStore<Animal>(
///   url: "postgresql://app@db.example.com/zoo",
///   options: PostgresConnectionOptions(statementTimeout: .seconds(5)))
/// // A read on a server that stops answering throws .connectionFailed after about 6 s;
/// // the next call connects again.
/// ```
///
/// A setting the connection string holds wins over the option that sets it for libpq:
/// `connect_timeout`, `keepalives`, `keepalives_idle`, `keepalives_interval`,
/// `keepalives_count`, `tcp_user_timeout`. Keepalives and the TCP user timeout apply to
/// TCP connections only (not to a Unix-domain socket). Later versions may add settings
/// here (failover, say); each gets a default, so code that sets some of them keeps
/// compiling.
///
/// Behind a pooler in transaction mode, such as PgBouncer's `pool_mode = transaction`,
/// say so (``pooler``): the store then keeps nothing in a server session between
/// transactions, and live sets poll for commits (``commitDetection``):
///
/// ```swift
/// let store = try PostgresStore<Animal>(
///   url: "postgresql://app@pgbouncer.example.com:6432/zoo",
///   options: PostgresConnectionOptions(pooler: .transaction))
/// ```
///
/// Reads can go to hot standbys of the primary (``replicas``), with this store's own
/// writes always visible to its later reads (see ``replicaWait``):
///
/// ```swift
/// let store = try PostgresStore<Animal>(
///   url: "postgresql://app@primary.example.com/zoo",
///   options: PostgresConnectionOptions(replicas: ["postgresql://app@standby1.example.com/zoo"]))
/// ```
public struct PostgresConnectionOptions: Sendable, Hashable {
  /// The longest opening a connection may take: reaching the server, TLS, authentication
  /// and the session's settings. Nil waits as long as the operating system does. Default
  /// 30 s (a busy machine can take seconds to start a local server's backend); libpq's
  /// `connect_timeout` when the connection string gives one.
  ///
  /// A call that needs a new connection (the first, or the next after an outage) and
  /// does not get one in time throws `.connectionFailed` naming this setting. A
  /// connection string that lists several hosts (`postgresql://app@db1,db2/zoo`) gives
  /// each host this long, as libpq's `connect_timeout` does: one that has not answered by
  /// then is given up on, and the next tried.
  ///
  /// ```swift
  /// var options = PostgresConnectionOptions()
  /// options.connectTimeout = .seconds(3)
  /// ```
  public var connectTimeout: Duration?

  /// The longest one statement may take. Default 300 s (a migration or a bulk write
  /// through a query is one statement); nil sets no limit (and leaves the
  /// server's `statement_timeout` as the role or database sets it).
  ///
  /// The limit is kept on both sides. The store sets the server's `statement_timeout` for
  /// each of its sessions, so the server cancels a statement that runs longer (it rolls
  /// back, and the connection stays usable). And the store waits for the server's answer
  /// to a statement at most this long plus one second: a server that cannot cancel
  /// anything (stopped with SIGSTOP, a machine that froze, a network that drops packets
  /// without a word) is given up on, the connection closed, and the next call connects
  /// again. Either way the call throws `.connectionFailed`, whose message names this
  /// setting. A read through a cursor runs one statement per batch of rows, so the limit
  /// is per batch, not per scan; a migration, a bulk `update` or `delete` through a query,
  /// or a write that waits for another process's write transaction is one statement.
  ///
  /// ```swift
  /// let store = try PostgresStore<Animal>(url: url, options: PostgresConnectionOptions(statementTimeout: .seconds(300)))
  /// ```
  public var statementTimeout: Duration?

  /// TCP keepalive probes on idle connections (libpq's `keepalives_idle`,
  /// `keepalives_interval`, `keepalives_count`); nil turns them off (`keepalives=0`).
  /// Default: after 30 s idle, every 10 s, 3 probes, so a dead peer under an idle pooled
  /// connection or a live set's listening connection is found within about a minute.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(keepalives: .init(idle: .seconds(10), interval: .seconds(5), count: 2))
  /// ```
  public var keepalives: Keepalives?

  /// How long sent data may stay unacknowledged before the operating system closes the
  /// connection (libpq's `tcp_user_timeout`, Linux's `TCP_USER_TIMEOUT`); nil leaves the
  /// system's default (about 15 minutes of retransmissions). Default 60 s.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(tcpUserTimeout: .seconds(30))
  /// ```
  public var tcpUserTimeout: Duration?
  /// How many times a write transaction that PostgreSQL could not serialize (SQLSTATE
  /// 40001) or broke to end a deadlock (40P01) is run again, after a wait that doubles
  /// each time (5 ms, 10 ms, 20 ms, …, at most 0.5 s, with jitter). Default 4; 0 retries
  /// nothing. After the last attempt the write throws `.conflict` saying how many were
  /// made; nothing of it was committed.
  ///
  /// A retry runs the same statements again: what the write sends was decided before it
  /// began (a `store.transaction { }`'s closure runs once, and its changes are sent again;
  /// `update { }` and `firstOrInsert` read, then send). So the retry is always safe; a
  /// write whose changes depend on what was read (`apply(_:ifVersion:)`) fails with
  /// `.conflict` instead when another writer came first, and is not retried.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(isolation: .serializable, conflictRetries: 8)
  /// ```
  public var conflictRetries: Int
  /// The isolation level of the store's write transactions: ``Isolation/readCommitted``
  /// (PostgreSQL's default, and this one's) or ``Isolation/serializable``, which engines
  /// that speak PostgreSQL's protocol across machines (CockroachDB, YugabyteDB) run
  /// everything at. Writes lock the table's row in `requestset_tables` first, so they are
  /// serialized either way; at SERIALIZABLE a write that meets another's commit fails
  /// with 40001, and is retried (``conflictRetries``). Reads always run in one
  /// `REPEATABLE READ` transaction per evaluation.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(isolation: .serializable)
  /// ```
  public var isolation: Isolation

  /// Connection strings of hot standbys of the primary (streaming replicas, such as one
  /// made with `pg_basebackup -R`), which the store's reads go to: evaluations of sets
  /// (fetches, counts, aggregates, groups, their async forms), ``PostgresStore/fetch(id:)``,
  /// ``PostgresStore/snapshot()`` and the raw SQL reads (``PostgresStore/records(sql:arguments:)``,
  /// ``PostgresStore/rows(sql:arguments:)``). Writes, transactions, migrations, index
  /// changes, ``PostgresStore/indexes()`` and the ``PostgresStore/commits(polling:)``
  /// listener (a standby cannot `LISTEN`) stay on the primary. Default: none, so every
  /// call goes to the primary.
  ///
  /// Each read takes the next replica in turn that is up, and runs on it once the replica
  /// has replayed every commit this store made or its commits stream delivered (see
  /// ``replicaWait``). A replica that cannot be reached, or that is no longer a standby
  /// (it was promoted), is left alone for ``replicaRetry`` while reads go to the next one
  /// or the primary, with no error to the caller. The store opens up to `connections:`
  /// sessions on each replica as on the primary.
  ///
  /// A read with no commit of this store to wait for sees the replica as it is: up to its
  /// replication lag behind the primary (`now() - pg_last_xact_replay_timestamp()` on the
  /// standby shows it), so another process's commit may show up there a little later.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(
  ///   replicas: ["postgresql://app@standby1.example.com/zoo", "postgresql://app@standby2.example.com/zoo"])
  /// ```
  ///
  /// Opening the store throws `.invalidFormat` for a replica's connection string libpq
  /// cannot parse, and `.invalidOptions` for a replica that answers but is not a standby
  /// (`pg_is_in_recovery()` is false); one that does not answer then is tried again later.
  public var replicas: [String]

  /// How long a read waits for a replica to replay this store's latest commit (or the
  /// latest its ``PostgresStore/commits(polling:)`` stream delivered) before it reads the
  /// primary instead. Default 1 s.
  ///
  /// After each commit the store remembers the primary's WAL position, read on the
  /// committing connection just after `COMMIT`: `pg_current_wal_flush_lsn()`, at or past
  /// the end of the commit's record since the commit waited for its flush, and already
  /// sent to the standbys (`pg_current_wal_insert_lsn()` when the session's
  /// `synchronous_commit` is off, or for another process's commit its commits stream
  /// delivered: the insert position is never before a commit, but may wait up to
  /// `wal_writer_delay` for its flush). A read then asks the replica for `pg_last_wal_replay_lsn()` every few milliseconds
  /// until it reaches that position, and begins its transaction after it has: so a read
  /// after this store's write always sees the write, and a live set re-read after a commit
  /// sees that commit.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(replicas: [standby], replicaWait: .milliseconds(200))
  /// ```
  public var replicaWait: Duration

  /// How long a replica that could not be reached (or was no longer a standby) is left
  /// alone before a read tries it again. Default 10 s.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(replicas: [standby], replicaRetry: .seconds(30))
  /// ```
  public var replicaRetry: Duration
  /// What sits between the store and the server: ``Pooler/none`` (default: each of the
  /// store's connections is one server session) or ``Pooler/transaction``, a pooler that
  /// hands a server session to a client for one transaction at a time (PgBouncer's
  /// `pool_mode = transaction`, as many hosted PostgreSQL services run it).
  ///
  /// Through a transaction pooler nothing a session keeps between transactions can be
  /// relied on, so the store keeps nothing there: its `statement_timeout` (and
  /// `cursor_tuple_fraction`) are set with `set_config(…, true)` inside each transaction
  /// (one more statement per transaction) instead of once for the session (a statement
  /// outside a transaction, such as an index change or the commits stream's version
  /// check, then has only the store's own deadline of ``statementTimeout`` plus one
  /// second, not the server's), and the
  /// ``PostgresStore/commits(polling:)`` stream, and so every live set, polls the table's
  /// commit counter (see ``commitDetection``) instead of `LISTEN`ing, since a
  /// notification goes to whichever client holds the listening session at the time. The
  /// rest already works through one: statements are unnamed (`PQsendQueryParams`),
  /// cursors and locks (`pg_advisory_xact_lock`, rows `FOR UPDATE`) live inside one transaction,
  /// and a cancel request goes through the pooler to the session running the statement.
  ///
  /// ```swift
  /// let store = try PostgresStore<Animal>(
  ///   url: "postgresql://app@pgbouncer.example.com:6432/zoo",
  ///   options: PostgresConnectionOptions(pooler: .transaction))
  /// // Live sets learn of commits by reading the table's version every 250 ms.
  /// ```
  ///
  /// A store told ``Pooler/none`` that runs through a transaction pooler anyway reads and
  /// writes correctly, but its live sets learn of commits only from the once-a-second
  /// check of the counter, and the session settings it makes when it connects land on
  /// whichever server session the pooler lent it, for other clients, not surely for its
  /// own statements: say ``Pooler/transaction``.
  public var pooler: Pooler

  /// How the ``PostgresStore/commits(polling:)`` stream (and so every live set) learns
  /// that a commit happened: ``CommitDetection/automatic`` (default) listens directly and
  /// polls every 250 ms through a transaction pooler (``pooler``).
  ///
  /// Every write transaction bumps the table's version in `requestset_tables` (the commit
  /// counter) and records its changes in `requestset_changes`, in the same transaction as
  /// the write, and sends `NOTIFY requestset`. A listening stream reads the new commits
  /// when notified (and checks the counter once a second, should a notification be lost);
  /// a polling one reads the counter every interval, one indexed single-row `SELECT` on
  /// its own connection, and the commits when it moved.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(pooler: .transaction, commitDetection: .poll(every: .milliseconds(100)))
  /// ```
  ///
  /// Opening a store throws `.invalidOptions` for ``CommitDetection/listen`` through a
  /// transaction pooler, and for a poll interval that is not positive.
  public var commitDetection: CommitDetection

  /// What sits between a ``PostgresStore`` and the server (see
  /// ``PostgresConnectionOptions/pooler``).
  ///
  /// ```swift
  /// PostgresConnectionOptions.Pooler.transaction
  /// ```
  public enum Pooler: Sendable, Hashable {
    /// Nothing, or a pooler in session mode: each connection is one server session.
    case none
    /// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`): a server
    /// session for one transaction at a time.
    case transaction
  }

  /// How a ``PostgresStore``'s commits stream learns of commits (see
  /// ``PostgresConnectionOptions/commitDetection``).
  ///
  /// ```swift
  /// PostgresConnectionOptions.CommitDetection.poll(every: .milliseconds(250))
  /// ```
  public enum CommitDetection: Sendable, Hashable {
    /// `listen` directly, `poll(every: .milliseconds(250))` through a transaction pooler.
    case automatic
    /// `LISTEN requestset` on a connection of its own, with a check of the commit counter
    /// once a second should a notification be lost. Not through a transaction pooler.
    case listen
    /// Reads the commit counter every `every` (no `LISTEN`): a commit reaches live sets
    /// up to `every` later, and each stream costs the server one small `SELECT` per
    /// interval.
    case poll(every: Duration)
  }

  /// The commit detection the options choose: ``commitDetection``, with
  /// ``CommitDetection/automatic`` resolved for ``pooler``.
  var _commitDetection: CommitDetection {
    guard commitDetection == .automatic else { return commitDetection }
    return pooler == .transaction ? .poll(every: .milliseconds(250)) : .listen
  }

  /// The isolation level of a ``PostgresStore``'s write transactions.
  ///
  /// ```swift
  /// PostgresConnectionOptions.Isolation.serializable
  /// ```
  public enum Isolation: Sendable, Hashable {
    /// `READ COMMITTED`, PostgreSQL's default.
    case readCommitted
    /// `SERIALIZABLE`.
    case serializable

    /// The statement that begins a write transaction at this level.
    var begin: String {
      switch self {
      case .readCommitted: return "BEGIN"
      case .serializable: return "BEGIN ISOLATION LEVEL SERIALIZABLE"
      }
    }
  }

  /// TCP keepalive probes: after ``idle`` without traffic, one every ``interval``; after
  /// ``count`` unanswered, the operating system closes the connection. libpq counts in
  /// whole seconds: a part of a second rounds up.
  ///
  /// ```swift
  /// PostgresConnectionOptions.Keepalives(idle: .seconds(30), interval: .seconds(10), count: 3)
  /// ```
  public struct Keepalives: Sendable, Hashable {
    /// How long a connection is idle before the first probe. Default 30 s.
    public var idle: Duration
    /// The time between probes. Default 10 s.
    public var interval: Duration
    /// How many probes go unanswered before the connection is closed. Default 3.
    public var count: Int

    /// Keepalive settings; the defaults find a dead peer in about a minute.
    ///
    /// ```swift
    /// let keepalives = PostgresConnectionOptions.Keepalives(idle: .seconds(60))
    /// ```
    public init(idle: Duration = .seconds(30), interval: Duration = .seconds(10), count: Int = 3) {
      self.idle = idle
      self.interval = interval
      self.count = count
    }
  }

  /// Options; every argument has the default the type's documentation gives.
  ///
  /// ```swift
  /// let options = PostgresConnectionOptions(connectTimeout: .seconds(5), statementTimeout: .seconds(120))
  /// ```
  public init(
    connectTimeout: Duration? = .seconds(30), statementTimeout: Duration? = .seconds(300),
    keepalives: Keepalives? = Keepalives(), tcpUserTimeout: Duration? = .seconds(60),
    isolation: Isolation = .readCommitted, conflictRetries: Int = 4, replicas: [String] = [],
    replicaWait: Duration = .seconds(1), replicaRetry: Duration = .seconds(10), pooler: Pooler = .none,
    commitDetection: CommitDetection = .automatic
  ) {
    self.pooler = pooler
    self.commitDetection = commitDetection
    self.replicas = replicas
    self.replicaWait = replicaWait
    self.replicaRetry = replicaRetry
    self.connectTimeout = connectTimeout
    self.statementTimeout = statementTimeout
    self.keepalives = keepalives
    self.tcpUserTimeout = tcpUserTimeout
    self.isolation = isolation
    self.conflictRetries = conflictRetries
  }

  /// Throws `.invalidOptions` for a duration that is not positive or a probe count below 1.
  func validate() throws {
    func positive(_ duration: Duration?, _ name: String, nilAllowed: Bool = true) throws {
      guard let duration, duration <= .zero else { return }
      throw RequestSetError(
        .invalidOptions,
        "PostgresConnectionOptions.\(name) is \(duration); it must be positive."
          + (nilAllowed ? " Pass nil for no limit." : ""))
    }
    try positive(connectTimeout, "connectTimeout")
    try positive(statementTimeout, "statementTimeout")
    try positive(tcpUserTimeout, "tcpUserTimeout")
    try positive(replicaWait, "replicaWait", nilAllowed: false)
    try positive(replicaRetry, "replicaRetry", nilAllowed: false)
    if case .poll(let every) = commitDetection {
      try positive(every, "commitDetection's poll interval", nilAllowed: false)
    }
    if pooler == .transaction && commitDetection == .listen {
      throw RequestSetError(
        .invalidOptions,
        "PostgresConnectionOptions.commitDetection is .listen, which does not work through a transaction pooler "
          + "(pooler: .transaction): a notification goes to whichever client holds the listening session. "
          + "Use .automatic or .poll(every:), or connect to the server directly.")
    }
    guard (0...100).contains(conflictRetries) else {
      throw RequestSetError(
        .invalidOptions,
        "PostgresConnectionOptions.conflictRetries is \(conflictRetries); it must be between 0 and 100.")
    }
    if let keepalives {
      try positive(keepalives.idle, "keepalives.idle")
      try positive(keepalives.interval, "keepalives.interval")
      guard keepalives.count >= 1 else {
        throw RequestSetError(
          .invalidOptions,
          "PostgresConnectionOptions.keepalives.count is \(keepalives.count); it must be at least 1. "
            + "Pass keepalives: nil to turn keepalives off.")
      }
    }
  }

  /// The libpq settings these options make, in the order given to `PQconnectStartParams`
  /// (before the connection string, which overrides them). The connect timeout is not
  /// among them: the store keeps it itself (see `_PGConnection`), to the millisecond.
  var libpqSettings: [(keyword: String, value: String)] {
    var settings: [(String, String)] = []
    if let keepalives {
      settings.append(("keepalives", "1"))
      settings.append(("keepalives_idle", String(keepalives.idle._wholeSeconds)))
      settings.append(("keepalives_interval", String(keepalives.interval._wholeSeconds)))
      settings.append(("keepalives_count", String(keepalives.count)))
    } else {
      settings.append(("keepalives", "0"))
    }
    if let tcpUserTimeout { settings.append(("tcp_user_timeout", String(tcpUserTimeout._milliseconds))) }
    return settings
  }
}

extension Duration {
  /// The duration in whole milliseconds, rounded up (at least 1 for a positive duration).
  var _milliseconds: Int64 {
    let (seconds, attoseconds) = components
    let step: Int64 = 1_000_000_000_000_000
    // A duration of ages saturates (libpq and the server take 32-bit values anyway).
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    if overflow || whole > Int64(Int32.max) { return Int64(Int32.max) }
    return whole + (attoseconds + step - 1) / step
  }

  /// The duration in whole seconds, rounded up (at least 1 for a positive duration).
  var _wholeSeconds: Int64 { (_milliseconds + 999) / 1000 }

  /// How messages show a timeout: `2 s`, `1.5 s`, `250 ms`.
  var _spoken: String {
    let ms = _milliseconds
    if ms < 1000 { return "\(ms) ms" }
    return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(Double(ms) / 1000) s"
  }
}
