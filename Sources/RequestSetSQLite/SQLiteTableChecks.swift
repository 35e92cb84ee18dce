import RequestSet
import _RequestSetSQL

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// What a reader finds of its table before it builds a statement: the store's FTS5 table
/// and whether some row holds values SQL cannot compare exactly, with the data version of
/// the file they were read at.
///
/// Each reader used to read both again (two statements prepared and run before the
/// query's own, a third of a small search's time). A connection now keeps them by table,
/// and a reader reads them again only when the file has changed since: the data version
/// (`SQLITE_FCNTL_DATA_VERSION`) changes with every change to the file, by this
/// connection or any other, in this process or another (a `sqlite3` shell adding a row
/// that is not plain, another store creating the text index), so a kept answer is one the
/// reader's snapshot would give.
struct _SQLiteTableChecks: Sendable {
  /// The file's data version the checks were read at.
  let dataVersion: UInt32
  /// The store's FTS5 table, or nil without one.
  let textTable: _SQLiteTextTable?
  /// Whether some row is not plain (see `_SQLiteReader.nonPlain`).
  let nonPlain: Bool

  /// The checks of `table` as the read transaction `c` has begun sees it: kept ones when
  /// the file's data version is the one they were read at, else read now (and kept).
  ///
  /// - Complexity: O(1) when kept; else two small statements (the test for rows that are
  ///   not plain reads a partial index).
  static func read(_ c: _SQLiteConnection, table: String, quotedTable: String) throws -> _SQLiteTableChecks {
    let version = c.dataVersion
    if let version, let kept = c.tableChecks[table], kept.dataVersion == version { return kept }
    let textTable = try _SQLiteTextTable.find(c, table: table)
    let statement = try c.cached("SELECT EXISTS(SELECT 1 FROM \(quotedTable) WHERE NOT plain)")
    defer { sqlite3_reset(statement.pointer) }
    nonisolated(unsafe) let handle = c.handle  // see `_SQLiteReader.withConnection`
    let nonPlain = try StoreThreads.whenCancelled({ sqlite3_interrupt(handle) }) {
      try statement.step(doing: "check for rows SQL cannot compare") && statement.int(0) != 0
    }
    let checks = _SQLiteTableChecks(dataVersion: version ?? 0, textTable: textTable, nonPlain: nonPlain)
    if version != nil { c.tableChecks[table] = checks } else { c.tableChecks[table] = nil }
    return checks
  }
}
