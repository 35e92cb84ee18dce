import CLibPQ
import RequestSet

extension PostgresServer {
  /// Runs `sql` (one or more statements) on the test server through a connection of its
  /// own: what a test does to a table behind a store's back.
  ///
  /// ```swift
  /// try PostgresServer.execute("ALTER TABLE \"t\" RENAME TO \"t_data\"")
  /// ```
  static func execute(_ sql: String) throws {
    _ = try _run(sql) { _ in () }
  }

  /// The first cell of what `sql` returns on the test server, or nil for no row.
  ///
  /// ```swift
  /// try PostgresServer.scalar("SELECT count(*) FROM pg_stat_activity")   // "6"
  /// ```
  static func scalar(_ sql: String) throws -> String? {
    try _run(sql) { result in
      guard PQntuples(result) > 0, let cell = PQgetvalue(result, 0, 0) else { return nil }
      return String(cString: cell)
    }
  }

  /// Runs `sql` through a connection of its own and reads its result with `read`.
  private static func _run<T>(_ sql: String, _ read: (OpaquePointer) -> T) throws -> T {
    let url = try url()
    guard let c = PQconnectdb(url) else { throw RequestSetError(.storeFailed, "libpq could not allocate") }
    defer { PQfinish(c) }
    guard PQstatus(c) == CONNECTION_OK else {
      throw RequestSetError(.storeFailed, String(cString: PQerrorMessage(c)))
    }
    guard let result = PQexec(c, sql) else { throw RequestSetError(.storeFailed, "no result") }
    defer { PQclear(result) }
    let status = PQresultStatus(result)
    guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
      throw RequestSetError(.storeFailed, String(cString: PQresultErrorMessage(result)))
    }
    return read(result)
  }
}
