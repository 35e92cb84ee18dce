import BenchmarkSupport
import Foundation
import GRDB
import RequestSet
import RequestSetSQLite

// Issue 25: migrations. A LogStore migration of every record against a compaction of the
// same log (both rewrite the file; the migration also decodes and encodes every record),
// and a SQLiteStore migration against the same `UPDATE … json_set` run directly through
// GRDB on a copy of the same file.
//
//   swift run -c release --package-path Benchmarks Ratios 1000000 migrate

private func scratch(_ name: String) -> String {
  let dir = FileManager.default.temporaryDirectory.path + "/requestset-ratios-migrate-\(getpid())"
  try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  return dir + "/" + name
}

private func copy(_ from: String, _ to: String) throws {
  let fm = FileManager.default
  for suffix in ["", ".checkpoint", "-wal", "-shm"] {
    try? fm.removeItem(atPath: to + suffix)
    if fm.fileExists(atPath: from + suffix) { try fm.copyItem(atPath: from + suffix, toPath: to + suffix) }
  }
}

/// The median of `runs` timings of `body`, each after an untimed `prepare`.
private func medianPrepared(runs: Int, _ prepare: () throws -> Void, _ body: () throws -> Void) rethrows -> Double {
  var times: [Double] = []
  for _ in 0..<runs {
    try prepare()
    times.append(try timed(body).ms)
  }
  times.sort()
  return times[times.count / 2]
}

func migrationRows(_ animals: [Animal]) throws -> [Row] {
  let n = animals.count
  var rows: [Row] = []
  let runs = n >= 1_000_000 ? 3 : 5

  // LogStore: compaction against migrations of every record.
  let original = scratch("v1.rslog")
  do {
    let store = try LogStore<Animal>(path: original, options: .init(autoCompactDeadRatio: nil))
    try store.insert(contentsOf: animals)
    try store.createIndex("age")
    store.close()
  }
  let work = scratch("work.rslog")
  let compaction = try medianPrepared(runs: runs, { try copy(original, work) }) {
    let store = try LogStore<Animal>(path: work)
    try store.compact()
    store.close()
  }
  // compact() and migrate() alone, on a store opened (untimed) from the same copy.
  var opened: LogStore<Animal>?
  let compactionAlone = try medianPrepared(runs: runs, {
    opened?.close()
    try copy(original, work)
    opened = try LogStore<Animal>(path: work)
  }) { try opened!.compact() }
  opened?.close()
  let migrations: [(String, Migration)] = [
    ("rename age → years", Migration("m", .rename("age", to: "years"))),
    ("add legs = 4", Migration("m", .add("legs", default: .int(4)))),
    ("rename + add + remove + convert", Migration(
      "m", .rename("age", to: "years"), .add("legs", default: .int(4)), .remove("nickname"),
      .convert("weight", .toString))),
  ]
  // The store is opened as the app would open it, with its record type (here `Animal`,
  // whose records the migration leaves undecoded: it runs on `migrate()`, and nothing
  // reads them after), so both sides open from the log's checkpoint.
  for (label, migration) in migrations {
    let options = LogStoreOptions(migrations: Migrator([migration]), migratesOnOpen: false)
    let ours = try medianPrepared(runs: runs, { try copy(original, work) }) {
      let store = try LogStore<Animal>(path: work, options: options)
      try store.migrate()
      store.close()
    }
    var whole = Row(
      "LogStore: migrate \(grouped(n)) records, \(label) (open + migrate + close)", ours,
      "compact the same log (open + compact + close)", compaction, target: "≤ 2×")
    whole.plainRatio = true
    whole.verdict = ours <= 2 * compaction ? "met" : "**missed**"
    rows.append(whole)
    var migrating: LogStore<Animal>?
    let alone = try medianPrepared(runs: runs, {
      migrating?.close()
      try copy(original, work)
      migrating = try LogStore<Animal>(path: work, options: options)
    }) { try migrating!.migrate() }
    migrating?.close()
    var row = Row(
      "LogStore: migrate() alone, \(grouped(n)) records, \(label)", alone, "compact() alone, the same log",
      compactionAlone, target: "≤ 2×")
    row.plainRatio = true
    row.verdict = alone <= 2 * compactionAlone ? "met" : "**missed**"
    rows.append(row)
  }

  // SQLite: a store migration against the same UPDATE run directly.
  let sqliteOriginal = scratch("v1.sqlite")
  do {
    let store = try SQLiteStore<Animal>(path: sqliteOriginal, table: "animals")
    try store.insert(contentsOf: animals)
    store.close()
  }
  let sqliteWork = scratch("work.sqlite")
  let statements: [(String, Migration, String)] = [
    (
      "rename age → years", Migration("m", .rename("age", to: "years")),
      "UPDATE animals SET body = json_set(json_remove(body, '$.\"age\"'), '$.\"years\"', body -> '$.\"age\"') "
        + "WHERE json_type(body, '$.\"age\"') IS NOT NULL"
    ),
    (
      "add legs = 4", Migration("m", .add("legs", default: .int(4))),
      "UPDATE animals SET body = json_set(body, '$.\"legs\"', json('4')) "
        + "WHERE json_type(body, '$.\"legs\"') IS NULL OR json_type(body, '$.\"legs\"') = 'null'"
    ),
  ]
  for (label, migration, sql) in statements {
    let ours = try medianPrepared(runs: runs, { try copy(sqliteOriginal, sqliteWork) }) {
      let store = try SQLiteStore<DynamicRecord>(
        path: sqliteWork, table: "animals", migrations: Migrator([migration]), migratesOnOpen: false)
      try store.migrate()
      store.close()
    }
    let direct = try medianPrepared(runs: runs, { try copy(sqliteOriginal, sqliteWork) }) {
      let queue = try DatabaseQueue(path: sqliteWork)
      try queue.write { db in try db.execute(sql: sql) }
      try queue.close()
    }
    var row = Row(
      "SQLiteStore: migrate \(grouped(n)) rows, \(label) (open + migrate + close)", ours,
      "GRDB: the same UPDATE … json_set in one transaction (open + update + close)", direct, target: "≤ 1.5×")
    row.plainRatio = true
    row.verdict = ours <= 1.5 * direct ? "met" : "**missed**"
    rows.append(row)
  }
  try? FileManager.default.removeItem(atPath: (original as NSString).deletingLastPathComponent)
  return rows
}
