import Foundation
import RequestSet
import RequestSetSQLite
import Testing

/// A SQLite database with ``version1`` in the table `table` (and the other tables'
/// records), written by the library.
func version1Database(
  in dir: String, table: String = "animals", records: [DynamicRecord] = version1,
  others: [String: [DynamicRecord]] = [:]
) throws -> String {
  let path = dir + "/zoo.sqlite"
  for (name, rows) in [(table, records)] + others.sorted(by: { $0.key < $1.key }) {
    let store = try SQLiteStore<DynamicRecord>(path: path, table: name)
    try store.insert(contentsOf: rows)
    store.close()
  }
  return path
}

/// A table's records, in id order, as exact text.
func storedRecords(_ database: String, table: String) throws -> [String] {
  let store = try SQLiteStore<DynamicRecord>(path: database, table: table)
  defer { store.close() }
  return try RequestSet(store).sortBy("id").fetch().map { exact($0.value) }
}

/// A table's applied migrations, as the library reports them.
func appliedMigrations(_ database: String, table: String) throws -> [String] {
  let store = try SQLiteStore<DynamicRecord>(path: database, table: table)
  defer { store.close() }
  return store.appliedMigrations
}

/// A table's version: every commit, a migration's too, raises it.
func storeVersion(_ database: String, table: String) throws -> UInt64 {
  let store = try SQLiteStore<DynamicRecord>(path: database, table: table)
  defer { store.close() }
  return try store.snapshot().version
}

@Suite struct MigrateSQLiteTests {
  @Test func migrateRunsEveryPendingMigrationOnTheOnlyTable() throws {
    let dir = try freshDirectory()
    let db = try version1Database(in: dir)
    let r = try Tool.run("migrate", db, "--plan", try plan(planToVersion3, in: dir))
    #expect(r.status == 0, "\(r)")
    #expect(r.stderr.isEmpty, "\(r)")
    let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(
      Array(lines.prefix(3))
        == [
          "migrating the table animals in \(db) (3 records): 2 pending migrations", #"  "2: kg, legs""#,
          #"  "3: tags, names""#,
        ],
      "\(r)")
    #expect(lines.count == 8, "\(r)")
    #expect(
      lines.dropFirst(3).first.map { $0.hasPrefix("ran 2 migrations on 3 records in ") && $0.hasSuffix(" s") }
        == true)
    #expect(
      Array(lines.dropFirst(4)) == ["applied (2):", #"  "2: kg, legs""#, #"  "3: tags, names""#, ""], "\(r)")

    #expect(try storedRecords(db, table: "animals") == version1.map { exact(version3($0).value) })
    #expect(try appliedMigrations(db, table: "animals") == ["2: kg, legs", "3: tags, names"])
    // The log's side file of key order is a log's only.
    #expect(!FileManager.default.fileExists(atPath: db + ".keys"))
  }

  @Test func tableChoosesOneOfSeveralAndLeavesTheOthersAlone() throws {
    let dir = try freshDirectory()
    let keepers = [DynamicRecord(id: .int(1), fields: ["name": .string("Ann"), "weight": .int(70)])]
    let db = try version1Database(in: dir, others: ["keepers": keepers])
    let path = try plan(planToVersion3, in: dir)
    let r = try Tool.run("migrate", db, "--plan", path, "--table", "animals")
    #expect(r.status == 0, "\(r)")
    #expect(
      r.stdout.hasPrefix("migrating the table animals in \(db) (3 records): 2 pending migrations\n"), "\(r)")
    #expect(try storedRecords(db, table: "animals") == version1.map { exact(version3($0).value) })
    #expect(try appliedMigrations(db, table: "animals") == ["2: kg, legs", "3: tags, names"])
    #expect(try storedRecords(db, table: "keepers") == keepers.map { exact($0.value) })
    #expect(try appliedMigrations(db, table: "keepers") == [])
    let list = try Tool.run("migrate", db, "--plan", path, "--table", "keepers", "--list")
    #expect(
      list.stdout == "applied: none\npending (2):\n  \"2: kg, legs\"\n  \"3: tags, names\"\n", "\(list)")
  }

  @Test func listShowsAppliedAndPendingMigrationsAndChangesNothing() throws {
    let dir = try freshDirectory()
    let db = try version1Database(in: dir)
    let full = try plan(planToVersion3, in: dir)
    let fresh = try Tool.run("migrate", db, "--plan", full, "--list")
    #expect(fresh.status == 0, "\(fresh)")
    #expect(
      fresh.stdout == "applied: none\npending (2):\n  \"2: kg, legs\"\n  \"3: tags, names\"\n", "\(fresh)")

    let first = try plan(planToVersion3.components(separatedBy: "\n\n")[0], in: dir, name: "first.txt")
    #expect(try Tool.run("migrate", db, "--plan", first).status == 0)
    let version = try storeVersion(db, table: "animals")
    let records = try storedRecords(db, table: "animals")
    let list = try Tool.run("migrate", db, "--plan", full, "--list")
    #expect(list.status == 0, "\(list)")
    #expect(list.stdout == "applied (1):\n  \"2: kg, legs\"\npending (1):\n  \"3: tags, names\"\n", "\(list)")
    let later = try plan("migration \"3: tags, names\"\n  add tags []\n", in: dir, name: "later.txt")
    let marked = try Tool.run("migrate", db, "--plan", later, "--list", "--table", "animals")
    #expect(
      marked.stdout
        == "applied (1):\n  \"2: kg, legs\"  (not in the plan)\npending (1):\n  \"3: tags, names\"\n",
      "\(marked)")
    #expect(try Tool.run("migrate", db, "--list").stdout == "applied (1):\n  \"2: kg, legs\"\n")
    #expect(try storeVersion(db, table: "animals") == version)
    #expect(try storedRecords(db, table: "animals") == records)
    #expect(try appliedMigrations(db, table: "animals") == ["2: kg, legs"])
  }

  @Test func aSecondRunFindsNothingPendingAndChangesNothing() throws {
    let dir = try freshDirectory()
    let db = try version1Database(in: dir)
    let path = try plan(planToVersion3, in: dir)
    #expect(try Tool.run("migrate", db, "--plan", path).status == 0)
    let version = try storeVersion(db, table: "animals")
    let again = try Tool.run("migrate", db, "--plan", path)
    #expect(again.status == 0, "\(again)")
    #expect(
      again.stdout
        == "nothing to migrate: the table animals in \(db) has run all 2 of the plan's migrations\n"
        + "applied (2):\n  \"2: kg, legs\"\n  \"3: tags, names\"\n", "\(again)")
    #expect(try storeVersion(db, table: "animals") == version)
    #expect(try storedRecords(db, table: "animals") == version1.map { exact(version3($0).value) })
    #expect(try appliedMigrations(db, table: "animals") == ["2: kg, legs", "3: tags, names"])
  }

  @Test func aFailingConversionLeavesTheTableUnchanged() throws {
    let dir = try freshDirectory()
    let db = try version1Database(in: dir)
    let version = try storeVersion(db, table: "animals")
    // The first migration runs as SQL statements, the second record by record and fails
    // on the first record: neither is kept.
    let path = try plan(
      "migration \"2: kg\"\n  rename weight weightKg\nmigration \"3: names\"\n  convert name Int\n", in: dir)
    let r = try Tool.run("migrate", db, "--plan", path)
    #expect(r.status == 1, "\(r)")
    #expect(
      r.stdout.hasPrefix("migrating the table animals in \(db) (3 records): 2 pending migrations\n"), "\(r)")
    #expect(
      r.stderr.hasPrefix(
        "requestset: The migration \"3: names\" failed on the record with id 1 at its step convert name to Int: "
          + "name holds \"Micky\""), "\(r)")
    #expect(r.stderr.contains("Fix the plan (or the record) and run `requestset migrate` again"), "\(r)")
    #expect(try storedRecords(db, table: "animals") == version1.map { exact($0.value) })
    #expect(try appliedMigrations(db, table: "animals") == [])
    #expect(try storeVersion(db, table: "animals") == version)
  }

  @Test func aFailingRenameLeavesTheTableUnchanged() throws {
    let dir = try freshDirectory()
    let db = try version1Database(in: dir)
    // Record 2 holds both keys: the statement's check finds it before anything is written.
    let path = try plan("migration \"2: legs\"\n  add legs 4\n  rename name legs\n", in: dir)
    let r = try Tool.run("migrate", db, "--plan", path)
    #expect(r.status == 1, "\(r)")
    #expect(r.stderr.hasPrefix("requestset: The migration \"2: legs\" failed on the record with id "), "\(r)")
    #expect(r.stderr.contains("the store is as it was before the migration"), "\(r)")
    #expect(try storedRecords(db, table: "animals") == version1.map { exact($0.value) })
    #expect(try appliedMigrations(db, table: "animals") == [])
  }

  @Test func severalTablesNeedTable() throws {
    let dir = try freshDirectory()
    let keepers = [DynamicRecord(id: .int(1), fields: ["name": .string("Ann")])]
    let db = try version1Database(in: dir, others: ["keepers": keepers])
    let path = try plan(planToVersion3, in: dir)
    for arguments in [["migrate", db, "--plan", path], ["migrate", db, "--list"]] {
      let r = try Tool.run(arguments)
      #expect(r.status == 2, "\(r)")
      #expect(r.stdout.isEmpty, "\(r)")
      #expect(
        r.stderr.contains(
          "The SQLite database \(db) holds 2 RequestSet tables: animals (DynamicRecord), keepers (DynamicRecord). "
            + "Name the one to migrate with --table NAME."), "\(r)")
      #expect(r.stderr.contains("Usage: requestset migrate <file>"), "\(r)")
    }
    // A table the database does not list is not created.
    let missing = try Tool.run("migrate", db, "--plan", path, "--table", "keeper")
    #expect(missing.status == 1, "\(missing)")
    #expect(
      missing.stderr
        == "requestset: The SQLite database \(db) has no RequestSet table named keeper; its RequestSet tables are "
        + "animals (DynamicRecord), keepers (DynamicRecord). Nothing was changed.\n", "\(missing)")
    #expect(try Tool.run("migrate", db, "--list").stderr.contains("holds 2 RequestSet tables"))
    #expect(try appliedMigrations(db, table: "animals") == [])
    #expect(try storedRecords(db, table: "animals") == version1.map { exact($0.value) })
  }

  @Test func tableIsAUsageErrorForALog() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let before = try bytes(log)
    let r = try Tool.run("migrate", log, "--plan", try plan(planToVersion3, in: dir), "--table", "animals")
    #expect(r.status == 2, "\(r)")
    #expect(
      r.stderr.contains(
        "--table names a table of a SQLite database, and \(log) is a log, which has no tables."), "\(r)")
    #expect(try bytes(log) == before)
    let missing = try Tool.run("migrate", dir + "/none.sqlite", "--list", "--table", "animals")
    #expect(missing.status == 1, "\(missing)")
    #expect(
      missing.stderr == "requestset: There is no SQLite database at \(dir)/none.sqlite.\n", "\(missing)")
    #expect(!FileManager.default.fileExists(atPath: dir + "/none.sqlite"))
  }
}
