import CLibPQ
import Dispatch
import RequestSet
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One libpq connection. Every statement binds its values as text parameters
/// (`PQexecParams`); nothing a caller gives reaches SQL text.
///
/// `@unchecked Sendable`: a connection is used by one thread at a time. The pool hands it
/// out to one holder (a write, a reader's lease) and takes it back only when that holder
/// is done, under the pool's lock; a lease gives its connection up to another caller only
/// while no call uses it (`_PGLease.surrender()`, under the lease's lock), and runs one
/// statement at a time. So libpq's `PGconn` is never touched by two threads at once (nor
/// ``_transaction``, which only ``execute(_:_:)`` changes).
final class _PGConnection: @unchecked Sendable {
  let handle: OpaquePointer
  let connection: _ConnectionString
  /// The timeouts and keepalives the connection was opened with.
  let options: PostgresConnectionOptions
  /// What `PQcancel` needs to stop this connection's statement from another thread
  /// (made once: `PQgetCancel` must not run while the connection is in use).
  private let _cancel: OpaquePointer?
  /// The transaction open on the connection, as its `BEGIN` said: what a connection
  /// error's words say was lost.
  private var _transaction: _Transaction?
  /// Set when the server did not answer a statement in time: the statement may still be
  /// in flight, so the connection is never used again (``isBroken``).
  private var _abandoned = false

  private enum _Transaction { case read, write }

  /// Connects, within the options' connect timeout (or the connection string's
  /// `connect_timeout`), and sets the session's `statement_timeout`.
  ///
  /// - Throws: `RequestSetError` `.invalidFormat` for a connection string libpq cannot
  ///   parse or whose password it would misread (the message quotes only the redacted
  ///   string), `.connectionFailed` when the server cannot be reached in time.
  init(_ connection: _ConnectionString, options: PostgresConnectionOptions = PostgresConnectionOptions())
    throws
  {
    self.connection = connection
    self.options = options
    if let problem = connection.problem {
      throw RequestSetError(
        .invalidFormat,
        "The PostgreSQL connection string \(connection.redacted) is not usable: \(problem). "
          + "Fix the string (a libpq URI or key=value settings) and open the store again.")
    }
    handle = try Self._connect(connection, options)
    _cancel = PQgetCancel(handle)
    // From here on, deinit finishes the connection whatever throws.
    // Quiet NOTICEs (CREATE TABLE IF NOT EXISTS prints one), and a UTF-8 session.
    PQsetNoticeProcessor(handle, { _, _ in }, nil)
    _ = PQsetClientEncoding(handle, "UTF8")
    // Statements are sent without blocking, so a server that stops reading cannot hold a
    // call past its deadline (see `_run`).
    _ = PQsetnonblocking(handle, 1)
    // Through a transaction pooler the session is not ours between transactions: each
    // `BEGIN` sets them for its transaction instead (see `execute`).
    if options.pooler == .none { try _settings(local: false) }
  }

  /// Sets the store's `cursor_tuple_fraction` and `statement_timeout` for the session, or
  /// (`local`) for the open transaction only.
  ///
  /// A reader's cursor is read to the end unless the engine stops early, which a LIMIT
  /// (read without a cursor) covers: so cursors are planned for all their rows, as the
  /// statement itself would be, not for the first 10% (the default).
  private func _settings(local: Bool) throws {
    if let timeout = options.statementTimeout {
      try execute(
        "SELECT set_config('cursor_tuple_fraction', '1', \(local)), set_config('statement_timeout', $1, \(local))",
        [String(timeout._milliseconds)])
    } else {
      try execute("SELECT set_config('cursor_tuple_fraction', '1', \(local))")
    }
  }

  deinit {
    if let _cancel { PQfreeCancel(_cancel) }
    PQfinish(handle)
  }

  /// Opens a connection with libpq's asynchronous calls, waiting on its socket at most
  /// until the connect deadline; the options' libpq settings come first, so the
  /// connection string's own settings win.
  ///
  /// A string listing several hosts gives each the whole connect timeout, as libpq's
  /// `connect_timeout` does: libpq's asynchronous calls move on from a host that refuses
  /// or is not what `target_session_attrs` asks for, but wait on one that never answers
  /// (a frozen server, a hung machine) for as long as they are polled. So when a host's
  /// time is up and later hosts remain, the attempt starts again with only those (the
  /// string's host, address and port lists cut after the host given up on).
  private static func _connect(_ connection: _ConnectionString, _ options: PostgresConnectionOptions) throws
    -> OpaquePointer
  {
    let hosts = connection.hosts
    let timeout = connection.connectTimeout(default: options.connectTimeout)
    let source =
      connection.connectTimeoutSetting != nil
      ? "the connection string's connect_timeout" : "PostgresConnectionOptions.connectTimeout"
    // The hosts given up on so far, as the error names them.
    var givenUp: [String] = []
    func failed(_ detail: String) -> RequestSetError {
      // PgBouncer refuses a startup parameter it does not track (`options`, which libpq
      // sends for `?options=-c…`), and names it.
      let fix =
        detail.contains("unsupported startup parameter")
        ? "A pooler such as PgBouncer refuses session settings in the connection string: remove the setting "
          + "(set it for the role instead: ALTER ROLE … SET …), or list the parameter in PgBouncer's "
          + "ignore_startup_parameters, which drops it."
        : "Check that the server runs and the connection string's host, port, user and settings are right."
      let earlier = givenUp.map { "\($0): no answer within \(timeout?._spoken ?? "?") (\(source)); " }
        .joined()
      return RequestSetError(
        .connectionFailed,
        "Could not connect to PostgreSQL at \(connection.redacted): \(earlier)\(detail) " + fix)
    }
    // The first host the attempt lists.
    var first = 0
    while true {
      // Null-terminated arrays, the connection string, then the hosts left when some were
      // given up on (`expand_dbname` reads the string as a URI or key=value settings in
      // its place; later settings win).
      let settings =
        options.libpqSettings + [("dbname", connection.raw)]
        + (first == 0 ? [] : _ConnectionString._Host.settings(hosts[first...], of: connection.raw))
      let keywords: [String?] = settings.map(\.0) + [nil]
      let values: [String?] = settings.map(\.1) + [nil]
      let started = _withCStrings(keywords) { keywords in
        _withCStrings(values) { values in PQconnectStartParams(keywords, values, 1) }
      }
      guard let handle = started else {
        throw RequestSetError(
          .connectionFailed,
          "libpq could not allocate a connection to \(connection.redacted). Check memory and retry.")
      }
      // The host libpq is trying, and when its time is up.
      var current = first
      var deadline = timeout.map { ContinuousClock.now + $0 }
      var state = PGRES_POLLING_WRITING
      while true {
        if PQstatus(handle) == CONNECTION_BAD || state == PGRES_POLLING_FAILED {
          let message = connection.redact(String(cString: PQerrorMessage(handle)))
          PQfinish(handle)
          throw failed(message.trimmed)
        }
        if state == PGRES_POLLING_OK { return handle }
        let ready = _wait(
          PQsocket(handle), reading: state == PGRES_POLLING_READING, writing: state == PGRES_POLLING_WRITING,
          until: deadline)
        if !ready {
          PQfinish(handle)
          if current + 1 < hosts.count {
            givenUp.append(hosts[current].description)
            first = current + 1
            break
          }
          throw failed(
            "no connection within \(timeout?._spoken ?? "?") (\(source)); the server may be frozen, overloaded or "
              + "unreachable. Raise \(source) if it needs longer.")
        }
        state = PQconnectPoll(handle)
        // libpq moved on to a later host: it has the whole timeout too.
        if hosts.count > 1, let at = _ConnectionString._Host.index(of: handle, in: hosts, from: current),
          at != current
        {
          current = at
          deadline = timeout.map { ContinuousClock.now + $0 }
        }
      }
    }
  }

  /// Whether the connection still works: libpq found it lost, or a statement on it went
  /// unanswered past its deadline.
  var isBroken: Bool { _abandoned || PQstatus(handle) != CONNECTION_OK }

  /// Whether an idle connection is known to be gone without sending anything: libpq
  /// found it lost, or the server has written to it while it sat idle (a pooled
  /// connection never `LISTEN`s, so whatever arrives is the server saying goodbye (a
  /// restart, an administrator's `pg_terminate_backend`) or the socket's end).
  ///
  /// A server that vanished without a word (a cut network) is not seen here; the next
  /// statement then fails with `.connectionFailed`, and the pool drops the connection.
  var hasGoneAway: Bool {
    if isBroken { return true }
    let socket = PQsocket(handle)
    guard socket >= 0 else { return true }
    var waiting = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
    let ready = poll(&waiting, 1, 0)
    return ready != 0
  }

  /// Whether a transaction is open (or failed and not yet rolled back).
  var inTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

  /// Runs one statement with its values bound as text (nil is SQL NULL).
  ///
  /// - Throws: `RequestSetError` `.connectionFailed` when the server is gone, and the
  ///   code that fits the server's SQLSTATE otherwise (see ``_PGConnection/error(_:_:)``).
  @discardableResult
  func execute(_ sql: String, _ parameters: [String?] = []) throws -> _PGResult {
    for case let p? in parameters where p.utf8.contains(0) {
      throw RequestSetError(
        .invalidFormat,
        "A value bound to PostgreSQL holds U+0000, which PostgreSQL text cannot hold. Remove it.")
    }
    let verb = Self._verb(sql)
    guard !_abandoned else { throw _connectionError("the connection was given up on after a timeout.", sql) }
    let result: OpaquePointer? = try _cancellable(verb) { cancelAgain in
      try _run(sql, parameters, cancelAgain)
    }
    defer {
      if verb == "BEGIN" {
        _transaction = !inTransaction ? nil : sql.contains("READ ONLY") ? .read : .write
      } else if verb == "COMMIT" || verb == "ROLLBACK" || !inTransaction {
        _transaction = nil
      }
    }
    guard let result else { throw _connectionError(nil, sql) }
    let status = PQresultStatus(result)
    switch status {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE:
      let answer = _PGResult(result)
      // A failure leaves the transaction failed, which its holder rolls back as any other.
      if verb == "BEGIN" && options.pooler == .transaction { try _settings(local: true) }
      return answer
    default:
      defer { PQclear(result) }
      throw error(result, sql)
    }
  }

  /// Sends one statement and waits for its result as `PQexecParams` would, but never
  /// longer than the statement timeout plus one second: the server cancels a statement
  /// that runs too long itself, so a server that has not answered by then cannot (it is
  /// frozen, or the network dropped it). The connection is then abandoned, and the call
  /// throws `.connectionFailed`. Nil when libpq could not send or read (the connection
  /// is lost; `PQerrorMessage` says why).
  ///
  /// `cancelAgain` (for a statement a cancelled async call stops) is sent again every
  /// quarter second while the call is cancelled and the statement has not answered: a
  /// cancel request travels on its own connection, so it can reach the server before the
  /// statement does, and the server ignores a cancel for a session that is between
  /// statements. Without the repeat such a call would wait for the statement to end.
  private func _run(_ sql: String, _ parameters: [String?], _ cancelAgain: (@Sendable () -> Void)?) throws
    -> OpaquePointer?
  {
    Self._willSend(sql, to: connection)
    let sent = _withCStrings(parameters) { values in
      PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
    }
    guard sent == 1 else { return nil }
    let deadline = options.statementTimeout.map { ContinuousClock.now + $0 + .seconds(1) }
    let socket = PQsocket(handle)
    // Send it all: in nonblocking mode libpq buffers what the socket does not take.
    while true {
      let flushed = PQflush(handle)
      if flushed == 0 { break }
      if flushed < 0 { return nil }
      guard Self._wait(socket, reading: true, writing: true, until: deadline) else { throw _timedOut(sql) }
      if PQconsumeInput(handle) == 0 { return nil }
    }
    // Then read until libpq has every result (one, for one statement); on two errors the
    // first is kept, as `PQexec` keeps it.
    var last: OpaquePointer? = nil
    while true {
      while PQisBusy(handle) == 0 {
        guard let next = PQgetResult(handle) else { return last }
        if let previous = last {
          if PQresultStatus(previous) == PGRES_FATAL_ERROR {
            PQclear(next)
            continue
          }
          PQclear(previous)
        }
        last = next
      }
      var wake = deadline
      if cancelAgain != nil {
        let soon = ContinuousClock.now + .milliseconds(250)
        wake = deadline.map { Swift.min($0, soon) } ?? soon
      }
      guard Self._wait(socket, reading: true, writing: false, until: wake) else {
        if let deadline, ContinuousClock.now >= deadline {
          if let last { PQclear(last) }
          throw _timedOut(sql)
        }
        if StoreThreads.isCancelled { cancelAgain?() }
        continue
      }
      if PQconsumeInput(handle) == 0 {
        if let last { PQclear(last) }
        return nil
      }
    }
  }

  /// Abandons the connection after the server left a statement unanswered past its
  /// deadline, and returns the error that says so.
  private func _timedOut(_ sql: String) -> RequestSetError {
    _abandoned = true
    let timeout = options.statementTimeout?._spoken ?? "?"
    return _connectionError(
      "no answer within \(timeout) and a second (PostgresConnectionOptions.statementTimeout), so the server is "
        + "frozen, overloaded or unreachable; the connection is dropped, and the next call connects again. "
        + "Raise statementTimeout if the statement needs longer.", sql)
  }

  /// Waits until `socket` is ready to read (or write), or until `deadline`; false when the
  /// deadline came first. A socket error counts as ready: libpq's next call reports it.
  static func _wait(_ socket: Int32, reading: Bool, writing: Bool, until deadline: ContinuousClock.Instant?)
    -> Bool
  {
    guard socket >= 0 else { return true }
    var events: Int16 = 0
    if reading { events |= Int16(POLLIN) }
    if writing { events |= Int16(POLLOUT) }
    while true {
      var timeout: Int32 = -1
      if let deadline {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        timeout = Int32(clamping: left._milliseconds)
      }
      var waiting = pollfd(fd: socket, events: events, revents: 0)
      let ready = poll(&waiting, 1, timeout)
      if ready > 0 { return true }
      if ready < 0 && errno != EINTR { return true }
    }
  }

  /// Runs a statement that a cancelled async call stops: the server is sent a cancel
  /// request, and the statement fails (SQLSTATE 57014), which the call reports as
  /// `CancellationError`. Reads, and the changes of a write transaction (`UPDATE`,
  /// `DELETE`, `INSERT` inside one): a cancelled write never sends its `COMMIT`
  /// (`PostgresStore._transaction` checks first), so stopping a change only makes the
  /// rollback come sooner. Never `COMMIT`, `BEGIN` or a statement outside a transaction
  /// that changes something, whose outcome a cancel would leave unknown.
  private func _cancellable<T>(_ verb: String, _ body: (_ cancelAgain: (@Sendable () -> Void)?) throws -> T)
    throws -> T
  {
    let stoppable =
      _transaction == .write
      ? Self._changes.contains(verb) || Self._reads.contains(verb) : Self._reads.contains(verb)
    guard stoppable, let cancel = _cancel else { return try body(nil) }
    // PQcancel may be called from any thread (libpq documents it thread-safe); it is never
    // called once `body` returned (see `StoreThreads.whenCancelled`, and `_run`, which
    // sends it again only while the statement has not answered).
    nonisolated(unsafe) let request = cancel
    let send: @Sendable () -> Void = {
      var message = [CChar](repeating: 0, count: 256)
      _ = PQcancel(request, &message, Int32(message.count))
    }
    return try StoreThreads.whenCancelled(send) { try body(send) }
  }

  /// Run before each statement is sent, given its text: tests hold a statement back here
  /// to make a cancel reach the server first, or count the statements a query sends.
  /// Empty outside tests.
  ///
  /// A list, each test adding its own hook and removing it (``_watchStatements(_:during:)``):
  /// with one slot, two suites that each set it while running at once replaced or cleared
  /// each other's hook (a held-back statement was sent at once and ran its whole
  /// `pg_sleep(600)`). Each closure lives in a class, not in the `Mutex` itself: a function
  /// value stored in a generic container is kept in its generic form, and each `withLock`
  /// (an `inout` access) converted it out and back, wrapping it in two more reabstraction
  /// thunks every time; read once per statement, the chain grew until calling it
  /// overflowed the stack (a SIGSEGV in loaded full runs).
  static let _beforeSend = Mutex<[_SendHook]>([])

  /// Calls each of ``_beforeSend``'s hooks with `sql`, and the connection string of the
  /// connection sending it (nil for a probe a test sends itself).
  static func _willSend(_ sql: String, to connection: _ConnectionString? = nil) {
    for hook in _beforeSend.withLock({ $0 }) { hook.body(sql, connection) }
  }

  /// Runs `body` with `hook` called before each statement any connection sends meanwhile
  /// (beside other tests' hooks), and removes it after.
  ///
  /// ```swift
  /// try _PGConnection._watchStatements({ sql in seen.add(sql) }) { try set.fetch() }
  /// ```
  static func _watchStatements<T>(_ hook: @escaping @Sendable (String) -> Void, during body: () throws -> T)
    rethrows -> T
  {
    let added = _SendHook { sql, _ in hook(sql) }
    _beforeSend.withLock { $0.append(added) }
    defer { _beforeSend.withLock { $0.removeAll { $0 === added } } }
    return try body()
  }

  /// ``_watchStatements(_:during:)`` for async work.
  static func _watchStatements<T>(
    _ hook: @escaping @Sendable (String) -> Void, isolation: isolated (any Actor)? = #isolation,
    during body: () async throws -> T
  ) async rethrows -> T {
    try await _watchStatements(sentThrough: nil, { sql, _ in hook(sql) }, during: body)
  }

  /// ``_watchStatements(_:during:)`` for async work, seeing only the statements sent on
  /// connections opened with the connection string `url` (every statement when nil), with
  /// that string: how a test tells its store's statements from other suites' running at
  /// the same time.
  ///
  /// ```swift
  /// await _PGConnection._watchStatements(sentThrough: url, { sql, _ in seen.add(sql) }) { … }
  /// ```
  static func _watchStatements<T>(
    sentThrough url: String?, _ hook: @escaping @Sendable (_ sql: String, _ url: String) -> Void,
    isolation: isolated (any Actor)? = #isolation, during body: () async throws -> T
  ) async rethrows -> T {
    let added = _SendHook { sql, connection in
      guard url == nil || connection?.raw == url else { return }
      hook(sql, connection?.raw ?? "")
    }
    _beforeSend.withLock { $0.append(added) }
    defer { _beforeSend.withLock { $0.removeAll { $0 === added } } }
    return try await body()
  }

  /// The statements a cancelled async call stops.
  private static let _reads: Set<String> = ["SELECT", "WITH", "FETCH", "DECLARE", "MOVE"]
  /// The changes a cancelled async call stops inside a write transaction.
  private static let _changes: Set<String> = ["UPDATE", "DELETE", "INSERT"]

  /// The first word of a statement, upper-cased.
  private static func _verb(_ sql: String) -> String {
    String(sql.prefix(while: { $0.isLetter })).uppercased()
  }

  /// The `RequestSetError` for a failed statement: `.connectionFailed` for a lost or refused
  /// connection (SQLSTATE class 08, a server shutting down) and a statement the server
  /// cancelled (57014, its `statement_timeout`), `.uniqueViolation` (23505),
  /// `.schemaMismatch` for a table or column of another shape (42P01, 42703, 42804),
  /// `.conflict` for a serialization failure or deadlock (40001, 40P01), `.storeFailed`
  /// otherwise; the message never shows the password.
  func error(_ result: OpaquePointer, _ sql: String) -> RequestSetError {
    let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
    let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
    let message = connection.redact(primary ?? String(cString: PQresultErrorMessage(result)).trimmed)
    if state.hasPrefix("08") || state.hasPrefix("57P") || (state.isEmpty && isBroken) {
      return _connectionError(message, sql)
    }
    let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n"))).map { String(cString: $0) }
    let detail = PQresultErrorField(result, Int32(UInt8(ascii: "D"))).map {
      connection.redact(String(cString: $0))
    }
    switch state {
    case "23505":
      return RequestSetError(
        .uniqueViolation,
        "PostgreSQL refused a duplicate value (constraint \(constraint ?? "?")): \(message). "
          + "Give the record a value no other record has; nothing was written.",
        underlying: _PGDiagnostic(state: state, constraint: constraint, detail: detail))
    case "42P01", "42703", "42804", "42883":
      return RequestSetError(
        .schemaMismatch,
        "The database's tables are not what RequestSet expects (SQLSTATE \(state)): \(message). "
          + "Open a database and table RequestSet made, or choose another table name.",
        underlying: _PGDiagnostic(state: state, constraint: constraint, detail: detail, message: message))
    case "57014" where !StoreThreads.isCancelled:
      // Not the async API's cancel (which the call reports as CancellationError): the
      // session's statement_timeout, or an administrator's pg_cancel_backend.
      let limit = options.statementTimeout.map { " The store's statementTimeout is \($0._spoken)." } ?? ""
      return RequestSetError(
        .connectionFailed,
        "PostgreSQL cancelled the statement (SQLSTATE 57014): \(message).\(limit) Nothing of it was committed. "
          + "Raise PostgresConnectionOptions.statementTimeout if the statement needs longer, and retry.")
    case "40001", "40P01":
      return RequestSetError(
        .conflict,
        "PostgreSQL could not serialize the transaction (SQLSTATE \(state)): \(message). "
          + "Nothing of it was committed; retry it.",
        underlying: _PGDiagnostic(state: state, constraint: constraint, detail: detail))
    default:
      return RequestSetError(
        .storeFailed, "PostgreSQL failed (SQLSTATE \(state)): \(message). Statement: \(sql.prefix(300))",
        underlying: _PGDiagnostic(state: state, constraint: constraint, detail: detail, message: message))
    }
  }

  /// The error for a connection that went away (or a statement libpq could not send)
  /// while running `sql`, in words for what was lost: a read, a write transaction (rolled
  /// back), its COMMIT (whose outcome is unknown), or a statement run on its own.
  func _connectionError(_ message: String?, _ sql: String) -> RequestSetError {
    let text = message ?? connection.redact(String(cString: PQerrorMessage(handle)).trimmed)
    let verb = Self._verb(sql)
    let lost: String
    switch _transaction {
    case .write? where verb == "COMMIT":
      lost =
        "The write's COMMIT was sent, so it may have been committed or not; check that the server runs, "
        + "read the records again and retry only what is missing."
    case .write?:
      lost = "Nothing of the failed write was committed; check that the server runs and retry."
    case .read?:
      lost = "The read did not finish and changed nothing; check that the server runs and retry."
    case nil where verb == "BEGIN" && !sql.contains("READ ONLY"):
      lost = "Nothing of the write was sent; check that the server runs and retry."
    case nil:
      lost =
        ["SELECT", "FETCH", "DECLARE", "CLOSE", "EXPLAIN", "SHOW", "LISTEN", "SET", "BEGIN", "COMMIT"]
          .contains(verb)
        ? "The read did not finish and changed nothing; check that the server runs and retry."
        : "The statement may or may not have run (it is safe to run again); check that the server runs and retry."
    }
    return RequestSetError(
      .connectionFailed, "The connection to PostgreSQL at \(connection.redacted) failed: \(text) " + lost)
  }
}

/// What PostgreSQL said about a failed statement beyond its message.
struct _PGDiagnostic: Error, Sendable, CustomStringConvertible {
  var state: String
  var constraint: String?
  var detail: String?
  /// The server's primary message, redacted.
  var message: String? = nil
  var description: String { "SQLSTATE \(state)" + (detail.map { ": " + $0 } ?? "") }
}

/// Calls `body` with the strings as C strings (nil for SQL NULL), valid for the call.
private func _withCStrings<T>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T
{
  // No parameters: libpq takes a null array (an empty array may have no base address).
  if strings.isEmpty { return body(nil) }
  var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
  defer { for case let p? in pointers { free(p) } }
  return pointers.withUnsafeMutableBufferPointer { buffer in
    buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
  }
}

/// A statement's result, freed when released.
///
/// `@unchecked Sendable`: libpq never changes a `PGresult` after making it (its readers
/// only read), and this class frees it once, in `deinit`, when no one holds it.
final class _PGResult: @unchecked Sendable {
  let pointer: OpaquePointer
  init(_ pointer: OpaquePointer) { self.pointer = pointer }
  deinit { PQclear(pointer) }

  /// The number of rows.
  var count: Int { Int(PQntuples(pointer)) }
  /// The number of columns.
  var columns: Int { Int(PQnfields(pointer)) }
  /// The number of rows an INSERT, UPDATE or DELETE touched.
  var affected: Int { Int(String(cString: PQcmdTuples(pointer))) ?? 0 }

  /// Calls `body` with a column's text as bytes where libpq keeps them, without copying
  /// them into a `String`; nil for SQL NULL. The bytes are valid only during the call.
  func withBytes<T>(
    _ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T
  ) rethrows -> T? {
    if PQgetisnull(pointer, Int32(row), Int32(column)) != 0 { return nil }
    guard let value = PQgetvalue(pointer, Int32(row), Int32(column)) else { return nil }
    let length = Int(PQgetlength(pointer, Int32(row), Int32(column)))
    return try body(UnsafeRawBufferPointer(start: value, count: length))
  }

  /// The text of a column of a row; nil for SQL NULL.
  func string(_ row: Int, _ column: Int) -> String? {
    if PQgetisnull(pointer, Int32(row), Int32(column)) != 0 { return nil }
    guard let value = PQgetvalue(pointer, Int32(row), Int32(column)) else { return nil }
    let length = Int(PQgetlength(pointer, Int32(row), Int32(column)))
    return value.withMemoryRebound(to: UInt8.self, capacity: length) {
      String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
  }
}

extension String {
  var trimmed: String {
    var s = Substring(self)
    while let last = s.last, last.isWhitespace { s.removeLast() }
    return String(s)
  }
}

/// A hook `_PGConnection` calls before it sends a statement (tests only; see
/// `_PGConnection._beforeSend`).
final class _SendHook: Sendable {
  /// Called with the statement and the connection string of the connection sending it.
  let body: @Sendable (String, _ConnectionString?) -> Void
  init(_ body: @escaping @Sendable (String, _ConnectionString?) -> Void) { self.body = body }
}
