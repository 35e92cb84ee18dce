import BenchmarkSupport
import Foundation
import RequestSet

// Side-by-side timings, in one process, of RequestSet against the baselines each issue
// names; prints the ratio tables quoted in docs/BENCHMARKS.md.
//
//   swift run -c release --package-path Benchmarks Ratios [record count] [section …]
//
// Sections: core, format, log, live, query (all by default). `query` ignores the record count
// and always runs 10,000, 100,000 and 1,000,000 records.

let arguments = Array(CommandLine.arguments.dropFirst())
let n = arguments.first.flatMap(Int.init) ?? 1_000_000
let sections = Set(arguments.filter { Int($0) == nil })
func wanted(_ section: String) -> Bool { sections.isEmpty || sections.contains(section) }

let needsAnimals = ["core", "format", "log"].contains(where: wanted)
if needsAnimals { print("Building \(n) records…") }
let animals = needsAnimals ? makeAnimals(n) : []

if wanted("core") { try printTable("Core (issue 2): MemoryStore at \(n) records", coreRows(animals)) }
if wanted("format") { try printTable("Format strings (issue 4) at \(n) records", formatRows(animals)) }
if wanted("log") { try printTable("LogStore (issue 3) at \(n) records, beside SQLite through GRDB", logRows(animals)) }
if wanted("live") { try printTable("Live request sets (issue 7) at 100000 records", liveRows()) }
if wanted("query") { try queryTables() }
