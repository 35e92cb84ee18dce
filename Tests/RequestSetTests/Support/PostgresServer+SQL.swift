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
  }
}
