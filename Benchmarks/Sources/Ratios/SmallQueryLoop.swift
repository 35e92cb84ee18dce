import BenchmarkSupport
import Foundation
import RequestSet

// `Ratios N smallq`: the fixed cost of one small query, for profiling. Builds a MemoryStore
// and a LogStore of N records with indexes on name and age, then runs each small query of
// issue 11 over 1,000 varying keys for about a second and prints the time per query.
// `RATIOS_SMALLQ=log-count` runs only that query (for `perf record`), for
// `RATIOS_SMALLQ_SECONDS` seconds (default 1), or exactly `RATIOS_SMALLQ_CALLS` times.
// Not a ratio table: the figures to quote come from `issue11` and `query`.

func smallQueryLoops(_ animals: [Animal]) throws {
  let n = animals.count
  let memory = try MemoryStore(animals)
  let logPath = scratch + "/smallq-\(n).rslog"
  let log = try freshLog(logPath)
  defer { remove(logPath, ["", ".lock"]) }
  try log.insert(contentsOf: animals)
  for key in ["name", "age"] {
    try memory.createIndex(key)
    try log.createIndex(key)
  }
  let ids = queryIDKeys(n)
  let names = queryNameKeys()
  let environment = ProcessInfo.processInfo.environment
  let only = environment["RATIOS_SMALLQ"]
  let seconds = environment["RATIOS_SMALLQ_SECONDS"].flatMap(Double.init) ?? 1

  func loop(_ name: String, _ body: (Int) throws -> Void) rethrows {
    if let only, only != name { return }
    var calls = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed: UInt64 = 0
    if let fixed = environment["RATIOS_SMALLQ_CALLS"].flatMap(Int.init) {
      // A fixed number of calls, for an instruction count (valgrind --tool=callgrind).
      for i in 0..<fixed { try body(i % 1000) }
      print("\(name): \(fixed) calls")
      return
    }
    while elapsed < UInt64(seconds * 1e9) {
      for i in 0..<1000 { try body(i) }
      calls += 1000
      elapsed = DispatchTime.now().uptimeNanoseconds - start
    }
    print("\(name): \(perOpText(Double(elapsed) / 1e6 / Double(calls)))")
  }
  print("Small queries over \(grouped(n)) records, per query:")
  for (store, set) in [("memory", RequestSet(memory)), ("log", RequestSet(log))] {
    loop("\(store)-first-by-id") { keep(set.filter(\.id == ids[$0]).first) }
    try loop("\(store)-fetch-by-id") { keep(try set.filter(\.id == ids[$0]).fetch()) }
    try loop("\(store)-fetch-by-name") { keep(try set.filter(\.name == names[$0]).fetch()) }
    loop("\(store)-count") { keep(set.filter(\.name == names[$0]).count) }
    try loop("\(store)-top-by-age") { _ in keep(try set.sortBy(\.age).limit(10).fetch()) }
    try loop("\(store)-fetch-by-key") { keep(try set.filter("name", value: names[$0]).fetch()) }
    // An unindexed count (issue 22's row 2; weight has no index here): its fixed cost
    // shows at 10,000 records.
    loop("\(store)-scan-count") { keep(set.filter(\.weight > 20 + Double($0 % 3)).count) }
  }
}
