import ArgumentParser
import Foundation

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLiteTool
#endif

/// What a SQLite database says of its RequestSet tables, read through a read-only
/// connection: the tables `requestset_tables` lists and the migrations each has run
/// (`requestset_migrations`). Opening a `SQLiteStore` on a table that does not exist creates
/// it, so the tool reads these first, and lists them without writing anything.
struct SQLiteCatalog {
  /// A RequestSet table: its name and the record type it was written as.
  struct Table: Equatable {
    var name: String
    var type: String
  }

  /// The tables, by name.
  var tables: [Table]
  /// The names of the migrations each table has run, oldest first (tables that have run
  /// none are absent).
  var applied: [String: [String]]

  /// The first bytes of every SQLite database file.
  static let magic = Array("SQLite format 3\0".utf8)

  /// Whether the file at `path` starts as a SQLite database does (false when it cannot be read).
  static func isSQLite(path: String) -> Bool { fileStarts(path, with: magic) }

  /// Reads the catalog of the database at `path`, changing nothing.
  static func read(path: String) throws -> SQLiteCatalog {
    var db: OpaquePointer?
    defer { sqlite3_close_v2(db) }
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
      throw ToolError("Cannot open the SQLite database \(path): \(message(db)).")
    }
    sqlite3_busy_timeout(db, 5000)
    let present = Set(try rows(db, path, "SELECT name FROM sqlite_master WHERE type = 'table'").map { $0[0] })
    var catalog = SQLiteCatalog(tables: [], applied: [:])
    if present.contains("requestset_tables") {
      catalog.tables = try rows(db, path, "SELECT name, type FROM requestset_tables ORDER BY name").map {
        Table(name: $0[0], type: $0[1])
      }
    }
    if present.contains("requestset_migrations") {
      for row in try rows(db, path, "SELECT tbl, name FROM requestset_migrations ORDER BY rowid") {
        catalog.applied[row[0], default: []].append(row[1])
      }
    }
    return catalog
  }

  /// The rows of a query whose columns are all text.
  private static func rows(_ db: OpaquePointer, _ path: String, _ sql: String) throws -> [[String]] {
    var statement: OpaquePointer?
    defer { sqlite3_finalize(statement) }
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw ToolError("Cannot read the SQLite database \(path): \(message(db)).")
    }
    var out: [[String]] = []
    while true {
      let status = sqlite3_step(statement)
      if status == SQLITE_DONE { return out }
      guard status == SQLITE_ROW else {
        throw ToolError("Cannot read the SQLite database \(path): \(message(db)).")
      }
      out.append(
        (0..<sqlite3_column_count(statement)).map { column in
          sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""
        })
    }
  }

  private static func message(_ db: OpaquePointer?) -> String {
    sqlite3_errmsg(db).map { String(cString: $0) } ?? "out of memory"
  }

  /// The table to migrate: `name` when the database lists it, else its only table.
  /// - Throws: `ToolError` when `name` is not listed or there is no table;
  ///   `ValidationError` (a usage error) when `name` is nil and there are several.
  func table(named name: String?, in path: String) throws -> Table {
    guard !tables.isEmpty else {
      throw ToolError(
        "The SQLite database \(path) holds no RequestSet tables (requestset_tables lists none), so there is "
          + "nothing to migrate.")
    }
    guard let name else {
      if let message = tableNeededMessage(in: path) { throw ValidationError(message) }
      return tables[0]
    }
    guard let table = tables.first(where: { $0.name == name }) else {
      throw ToolError(
        "The SQLite database \(path) has no RequestSet table named \(name); its RequestSet "
          + "table\(tables.count == 1 ? " is" : "s are") \(listing). Nothing was changed.")
    }
    return table
  }

  /// Why `--table` must be given, when the database holds several tables.
  func tableNeededMessage(in path: String) -> String? {
    guard tables.count > 1 else { return nil }
    return "The SQLite database \(path) holds \(tables.count) RequestSet tables: \(listing). Name the one to "
      + "migrate with --table NAME."
  }

  /// The tables, with their record types: `animals (Animal), keepers (Keeper)`.
  private var listing: String { tables.map { "\($0.name) (\($0.type))" }.joined(separator: ", ") }
}

/// Whether the file at `path` starts with the bytes `magic` (false when it cannot be read).
func fileStarts(_ path: String, with magic: [UInt8]) -> Bool {
  guard let handle = FileHandle(forReadingAtPath: path) else { return false }
  defer { try? handle.close() }
  return (try? handle.read(upToCount: magic.count)).map(Array.init) == magic
}
