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
/// out to one holder (a write, a reader) and takes it back only when that holder is done,
/// under the pool's lock, so libpq's `PGconn` is never touched by two threads at once
/// (nor ``_transaction``, which only ``execute(_:_:)`` changes).
final class _PGConnection: @unchecked Sendable {
  let handle: OpaquePointer
  let connection: _ConnectionString
  /// What `PQcancel` needs to stop this connection's statement from another thread
  /// (made once: `PQgetCancel` must not run while the connection is in use).
  private let _cancel: OpaquePointer?
  /// The transaction open on the connection, as its `BEGIN` said: what a connection
  /// error's words say was lost.
  private var _transaction: _Transaction?

  private enum _Transaction { case read, write }

  /// Connects.
  ///
  /// - Throws: `RequestSetError` `.invalidFormat` for a connection string libpq cannot
  ///   parse or whose password it would misread (the message quotes only the redacted
  ///   string), `.connectionFailed` when the server cannot be reached.
  init(_ connection: _ConnectionString) throws {
    self.connection = connection
    if let problem = connection.problem {
      throw RequestSetError(
        .invalidFormat,
        "The PostgreSQL connection string \(connection.redacted) is not usable: \(problem). "
          + "Fix the string (a libpq URI or key=value settings) and open the store again.")
    }
    guard let handle = PQconnectdb(connection.raw) else {
      throw RequestSetError(
        .connectionFailed, "libpq could not allocate a connection to \(connection.redacted). Check memory and retry.")
    }
    self.handle = handle
    guard PQstatus(handle) == CONNECTION_OK else {
      // deinit (which runs for a fully initialized object whose init throws) finishes it.
      let message = connection.redact(String(cString: PQerrorMessage(handle)))
      throw RequestSetError(
        .connectionFailed,
        "Could not connect to PostgreSQL at \(connection.redacted): \(message.trimmed) "
          + "Check that the server runs and the connection string's host, port, user and settings are right.")
    }
    _cancel = PQgetCancel(handle)
    // Quiet NOTICEs (CREATE TABLE IF NOT EXISTS prints one), and a UTF-8 session.
    PQsetNoticeProcessor(handle, { _, _ in }, nil)
    _ = PQsetClientEncoding(handle, "UTF8")
    // A reader's cursor is read to the end unless the engine stops early, which a LIMIT
    // (read without a cursor) covers: plan cursors for all their rows, as the statement
    // itself would be planned, not for the first 10% (the default).
    _ = try execute("SET cursor_tuple_fraction = 1")
  }

  deinit {
    if let _cancel { PQfreeCancel(_cancel) }
    PQfinish(handle)
  }

  /// Whether the connection still works, or libpq found it lost.
  var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

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
        .invalidFormat, "A value bound to PostgreSQL holds U+0000, which PostgreSQL text cannot hold. Remove it.")
    }
    let verb = Self._verb(sql)
    let result: OpaquePointer? = try _cancellable(verb) {
      _withCStrings(parameters) { values in
        PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
      }
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
      return _PGResult(result)
    default:
      defer { PQclear(result) }
      throw error(result, sql)
    }
  }

  /// Runs a statement that a cancelled async call stops: the server is sent a cancel
  /// request, and the statement fails (SQLSTATE 57014), which the call reports as
  /// `CancellationError`. Only reads outside a write transaction: a write runs to its
  /// commit or rollback.
  private func _cancellable<T>(_ verb: String, _ body: () -> T) throws -> T {
    guard _transaction != .write, Self._reads.contains(verb), let cancel = _cancel else { return body() }
    // PQcancel may be called from any thread (libpq documents it thread-safe); it is never
    // called once `body` returned (see `StoreThreads.whenCancelled`).
    nonisolated(unsafe) let request = cancel
    return try StoreThreads.whenCancelled({
      var message = [CChar](repeating: 0, count: 256)
      _ = PQcancel(request, &message, Int32(message.count))
    }) { body() }
  }

  /// The statements a cancelled async call stops.
  private static let _reads: Set<String> = ["SELECT", "WITH", "FETCH", "DECLARE", "MOVE"]

  /// The first word of a statement, upper-cased.
  private static func _verb(_ sql: String) -> String {
    String(sql.prefix(while: { $0.isLetter })).uppercased()
  }

  /// The `RequestSetError` for a failed statement: `.connectionFailed` for a lost or refused
  /// connection (SQLSTATE class 08, a server shutting down), `.uniqueViolation` (23505),
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
    let detail = PQresultErrorField(result, Int32(UInt8(ascii: "D"))).map { connection.redact(String(cString: $0)) }
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
          + "Open a database and table RequestSet made, or choose another table name.")
    case "40001", "40P01":
      return RequestSetError(
        .conflict,
        "PostgreSQL could not serialize the transaction (SQLSTATE \(state)): \(message). "
          + "Nothing of it was committed; retry it.")
    default:
      return RequestSetError(
        .storeFailed, "PostgreSQL failed (SQLSTATE \(state)): \(message). Statement: \(sql.prefix(300))")
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
        ["SELECT", "FETCH", "DECLARE", "CLOSE", "EXPLAIN", "SHOW", "LISTEN", "SET", "BEGIN", "COMMIT"].contains(verb)
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
  var description: String { "SQLSTATE \(state)" + (detail.map { ": " + $0 } ?? "") }
}

/// Calls `body` with the strings as C strings (nil for SQL NULL), valid for the call.
private func _withCStrings<T>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
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

/// A small pool of connections: at most `limit` held at once for writes and single reads;
/// a caller waits while all are busy; a connection found broken (by a statement that
/// failed on it, or closed by the server while idle) is dropped and replaced by a new one
/// on demand. So a store outlives a server restart: the statements in flight fail with
/// `.connectionFailed` (their transactions roll back on the server), and the next call
/// connects again.
///
/// A query reader (one evaluation's read transaction) takes a connection outside that
/// limit: the engine keeps a reader from a count until the evaluation that follows, and
/// many sets may be between the two, so readers that waited for one another's slots could
/// wait forever. Their connections return to the idle list for anyone to reuse.
final class _PGPool: Sendable {
  let connection: _ConnectionString
  let limit: Int
  private let slots: DispatchSemaphore
  private let state = Mutex<(idle: [_PGConnection], closed: Bool)>(([], false))

  init(_ connection: _ConnectionString, limit: Int) {
    self.connection = connection
    self.limit = max(1, limit)
    slots = DispatchSemaphore(value: max(1, limit))
  }

  /// A connection for one holder; give it back with ``release(_:)``.
  ///
  /// - Throws: `.closed` after ``close()``, `.connectionFailed` when no connection can be
  ///   made, or when every connection stays busy for 60 seconds.
  func acquire(reader: Bool = false) throws -> _PGConnection {
    try checkOpen()
    guard reader || slots.wait(timeout: .now() + .seconds(60)) == .success else {
      throw RequestSetError(
        .connectionFailed,
        "All \(limit) connections to \(connection.redacted) stayed busy for 60 seconds. "
          + "Finish or release the evaluations that hold them, or open the store with more connections.")
    }
    // Idle connections the server has closed meanwhile (it restarted, say) are dropped
    // here, so the first call after an outage opens a new one instead of failing on them.
    while let pooled = state.withLock({ state -> _PGConnection? in state.idle.popLast() }) {
      if !pooled.hasGoneAway { return pooled }
    }
    do {
      try checkOpen()
      return try _PGConnection(connection)
    } catch {
      if !reader { slots.signal() }
      throw error
    }
  }

  /// Takes a connection back: kept when it is sound and outside a transaction, else closed.
  func release(_ c: _PGConnection, reader: Bool = false) {
    if !c.isBroken && c.inTransaction { _ = try? c.execute("ROLLBACK") }
    let keep = !c.isBroken && !c.inTransaction
    state.withLock { state in
      if keep && !state.closed { state.idle.append(c) }
    }
    if !reader { slots.signal() }
  }

  /// Runs `body` with a connection held for it.
  @discardableResult
  func with<T>(_ body: (_PGConnection) throws -> T) throws -> T {
    let c = try acquire()
    defer { release(c) }
    return try body(c)
  }

  /// Closes the idle connections; later acquisitions throw `.closed`.
  func close() {
    let idle = state.withLock { state -> [_PGConnection] in
      state.closed = true
      defer { state.idle = [] }
      return state.idle
    }
    _ = idle  // released here, outside the lock: PQfinish in deinit
  }

  var isClosed: Bool { state.withLock { $0.closed } }

  func checkOpen() throws {
    if isClosed {
      throw RequestSetError(.closed, "The PostgresStore at \(connection.redacted) is closed. Open a new store.")
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
