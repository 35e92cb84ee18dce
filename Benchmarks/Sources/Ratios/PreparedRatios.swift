import BenchmarkSupport
import Foundation
import GRDB
import RequestSet

// Issue 22 ("One prepared query"): the issue's speed targets, each timed beside its
// baseline in this run.
//
//   swift run -c release --package-path Benchmarks Ratios 1000000 issue22
//
// The record count sets the size of rows 1, 3, 4, 5 and 6 (1,000,000 in the issue); row 2
// always runs at 10,000, 100,000 and 1,000,000 records (RATIOS_QUERY_SIZES overrides), and
// so does the table of query rows 1–8 for both stores against SQLite + index.

func issue22Tables(_ animals: [Animal]) throws {
  let n = animals.count
  var rows: [Row] = []
  func judged(_ row: Row, _ ok: (Row) -> Bool) -> Row {
    var row = row
    row.verdict = mark(ok(row))
    return row
  }

  // 1. One small query by id, per call over 1,000 ids, beside a Dictionary and SQLite.
  print("  issue 22: id lookups…")
  let store = try MemoryStore(animals)
  let logPath = scratch + "/issue22.rslog"
  let sqlitePath = scratch + "/issue22.sqlite"
  defer { remove(logPath, ["", ".lock"]); remove(sqlitePath, ["", "-journal", "-wal", "-shm"]) }
  let (idKeys, dictionaryTime, sqlTime) = try idLookupBaselines(animals, logPath: logPath, sqlitePath: sqlitePath)
  for (name, set, target) in [
    ("MemoryStore", RequestSet(store), 0.001), ("LogStore", RequestSet(try LogStore<Animal>(path: logPath)), 0.002),
  ] {
    let byID = perOperation(keys: idKeys.count) { keep(set.filter(\.id == idKeys[$0]).first) }
    let label = target < 0.0015 ? "≤ 1 µs" : "≤ 2 µs"
    for (baseline, time) in [("a Dictionary", dictionaryTime), ("SQLite through GRDB, by primary key", sqlTime)] {
      rows.append(
        judged(Row("`filter(\\.id == x).first`, \(grouped(n)), \(name)", byID, baseline, time, target: label)) {
          $0.ours <= target
        })
    }
  }

  // 2. An unindexed count against a hand loop, at every size.
  print("  issue 22: counts…")
  let override = ProcessInfo.processInfo.environment["RATIOS_QUERY_SIZES"]?.split(separator: ",").compactMap { Int($0) }
  for size in override ?? [10_000, 100_000, 1_000_000] {
    let some = size == n ? animals : makeAnimals(size)
    let sized = RequestSet(try MemoryStore(some))
    let hand = median {
      var c = 0
      for a in some where a.age > 30 { c += 1 }
      keep(c)
    }
    let typed = median { keep(sized.filter(\.age > 30).count) }
    rows.append(
      judged(Row("unindexed `filter(\\.age > 30).count`, \(grouped(size)), MemoryStore", typed, "hand loop", hand, target: "≤ 1.2×")) {
        $0.ratio <= 1.2
      })
  }

  // 3. A format string against its typed twin; 6. the typed AND against a hand loop.
  let set = RequestSet(store)
  let format = try RequestFilter<Animal>(format: "age > %d AND species == %@", arguments: [10, "Cow"])
  let typedAnd: RequestFilter<Animal> = \.age > 10 && \.species == "Cow"
  let formatTime = median { keep(set.filter(format).count) }
  let typedTime = median { keep(set.filter(typedAnd).count) }
  rows.append(
    judged(Row("format `age > 10 AND species == 'Cow'` count, \(grouped(n))", formatTime, "the typed AND", typedTime, target: "≤ 1.1×")) {
      $0.ratio <= 1.1
    })
  let handAnd = median {
    var c = 0
    for a in animals where a.age > 20 && a.species == "Cow" { c += 1 }
    keep(c)
  }
  let and = median { keep(set.filter(\.age > 20 && \.species == "Cow").count) }
  rows.append(
    judged(Row("typed AND count `\\.age > 20 && \\.species == \"Cow\"`, \(grouped(n)), MemoryStore", and, "hand loop", handAnd, target: "≤ 1.3×")) {
      $0.ratio <= 1.3
    })

  // 4. Parsing 10,000 format strings.
  let parse = median(runs: 9) {
    for _ in 0..<10_000 { keep(try! RequestFilter<Animal>(format: "age > %d AND name BEGINSWITH[c] %@", arguments: [3, "mi"])) }
  }
  rows.append(judged(Row("parse 10,000 format strings", parse, "(no baseline)", parse, target: "≤ 40 ms")) { $0.ours <= 40 })

  // 5. The first string-key query on a just-opened log.
  let (first, firstSQL) = try firstQueriesOnJustOpenedFiles(logPath, sqlitePath) {
    try RequestSet($0).filter("species", value: "Cow").sortBy(\.age).limit(10).fetch()
  }
  rows.append(
    judged(
      Row(
        "first string-key query on a just-opened \(grouped(n))-record log (`filter(\"species\", value: \"Cow\").sortBy(\\.age).limit(10)`)",
        first, "the same, first on a just-opened SQLite file", firstSQL, target: "≤ 30 ms")
    ) { $0.ours <= 30 })

  printTable("Issue 22: one prepared query, \(grouped(n)) records", rows)

  // Query rows 1–8 at every size, both stores, against SQLite + index.
  try queryRowsAgainstIndexedSQLite(
    ["1", "2", "3", "4", "5b", "6", "7", "8"], title: "Issue 22: query rows 1–8, per query, against SQLite + index")
}
