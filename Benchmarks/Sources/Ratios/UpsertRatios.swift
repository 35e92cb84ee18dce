import Foundation
import GRDB
import RequestSet
import RequestSetSQLite

// Issue 38, upsert on a unique key: 10,000 records, half new and half conflicting on a
// unique `email`, in one call, on a SQLite file of 5,000 records; beside GRDB's `upsert`
// of the same records (one transaction, one `INSERT … ON CONFLICT DO UPDATE` per record,
// GRDB's own table with a column per field and a unique index on `email`).
//
//   swift run -c release --package-path Benchmarks Ratios upsert

extension UpsertSubscriber: GRDB.FetchableRecord, GRDB.PersistableRecord {
  static let databaseTableName = "subscriber"
}

private typealias Subscriber = UpsertSubscriber

func upsertTables() throws {
  let stored = (0..<5_000).map { Subscriber(id: $0, email: "u\($0)@example.com", name: "n\($0)", visits: 1) }
  // Odd records hit a stored email (with a new id, as a feed from elsewhere has); even ones are new.
  let batch = (0..<10_000).map { i in
    Subscriber(
      id: 100_000 + i, email: i % 2 == 1 ? "u\(i / 2)@example.com" : "u\(10_000 + i)@example.com",
      name: "m\(i)",
      visits: 2)
  }
  let dir = FileManager.default.temporaryDirectory.path + "/requestset-ratios-upsert-\(getpid())"
  try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: dir) }
  let suffixes = ["", "-journal", "-wal", "-shm"]

  var ours: [Double] = []
  var peer: [Double] = []
  for run in 0..<7 {
    progress("  upsert: run \(run + 1) of 7…")
    let storePath = dir + "/store-\(run).sqlite"
    let store = try SQLiteStore<Subscriber>(path: storePath)
    try store.createIndex("email", unique: true)
    try store.insert(contentsOf: stored)
    let (ms, result) = try timed { try store.upsert(batch, on: \Subscriber.email) }
    precondition(result.inserted == 5_000 && result.updated == 5_000 && result._statements == 1, "\(result)")
    ours.append(ms)
    store.close()

    let grdbPath = dir + "/grdb-\(run).sqlite"
    var configuration = Configuration()
    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
    let db = try DatabaseQueue(path: grdbPath, configuration: configuration)
    try db.write { db in
      try db.execute(
        sql:
          "CREATE TABLE subscriber(id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT NOT NULL, "
          + "visits INTEGER NOT NULL)")
      for record in stored { try record.insert(db) }
    }
    peer.append(try timed { try db.write { db in for record in batch { try record.upsert(db) } } }.ms)
    let count = try db.read { try Subscriber.fetchCount($0) }
    precondition(count == 10_000)
    try db.close()
    for path in [storePath, grdbPath] { for suffix in suffixes { unlink(path + suffix) } }
  }
  let row = issue13Row(
    "`upsert(_:on: \\.email)` of 10,000 records (5,000 new, 5,000 conflicting) into 5,000, one commit",
    ours.sorted()[3], "GRDB: `upsert(db)` of each record in one transaction, a column per field",
    peer.sorted()[3], limit: 1.2, target: "≤ 1.2×")
  printTable("Issue 38: upsert on a unique key, SQLite", [row])
}
