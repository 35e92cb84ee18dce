import CLibPQ
import RequestSet
import _RequestSetSQL

extension PostgresStore {
  /// The database and the store's table in it. Stores of a `RecordGraph` in one database
  /// answer a condition through a relation in one statement, as a subquery on the related
  /// table; stores in two databases read the related ids first.
  ///
  /// One database is what the store's first connection reached, as libpq and the server
  /// report it: the host (a socket's directory for a local connection) and port, the
  /// database, the user, and the schemas of the search path, where the unqualified table
  /// names resolve. Stores opened with the same connection string share it; two spellings
  /// of one host (`localhost` and `127.0.0.1`) name two databases, whose relations run as
  /// semi-joins, which answer the same.
  ///
  /// A store that reads from standbys (`PostgresConnectionOptions.replicas`) has none: a
  /// standby is waited for until it has replayed that store's own commits only, so a
  /// statement there could miss what the related store just committed. Its relations run
  /// as semi-joins, each store reading its own table where its commits are seen.
  ///
  /// ```swift
  /// let url = "postgresql://app@db.example.com/zoo"
  /// let owners = try PostgresStore<Owner>(url: url, table: "owners")
  /// let pets = try PostgresStore<Pet>(url: url, table: "pets")
  /// owners.location?.database == pets.location?.database   // true
  /// // owners.location?.database: "postgresql://app@db.example.com:5432/zoo?search_path=public"
  /// ```
  public var location: StoreLocation? {
    _replicas == nil ? StoreLocation(database: _database, table: _table) : nil
  }

  /// `postgresql://user@host:port/database?search_path=schemas` for the session `c`.
  static func _database(_ c: _PGConnection) throws -> String {
    let row = try c.execute(
      "SELECT current_user, current_database(), array_to_string(current_schemas(false), ',')")
    let host = PQhost(c.handle).map { String(cString: $0) } ?? ""
    let port = PQport(c.handle).map { String(cString: $0) } ?? ""
    return "postgresql://\(row.string(0, 0) ?? "")@\(host):\(port)/\(row.string(0, 1) ?? "")"
      + "?search_path=\(row.string(0, 2) ?? "")"
  }
}
