import BenchmarkSupport
import Foundation
import RequestSet

// Side-by-side timings, in one process, of RequestSet against the baselines each issue
// names; prints the ratio table quoted in docs/BENCHMARKS.md.
//
//   swift run -c release --package-path Benchmarks Ratios [record count]

let n = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 1_000_000
print("Building \(n) records…")
let animals = makeAnimals(n)
let store = try MemoryStore(animals)
var rows: [Row] = []

// Issue 2: a typed key-path filter plus count, against a hand-written loop.
let typed = median { blackHole(RequestSet(store).filter(\.age > 30).count) }
let handGreater = median {
  var c = 0
  for a in animals where a.age > 30 { c += 1 }
  blackHole(c)
}
rows.append(Row(scenario: "filter(\\.age > 30).count (MemoryStore)", ours: typed, baseline: handGreater,
                baselineName: "hand loop", target: "within 1.5x"))

// Issue 2: a string key and value, against the same loop: no Codable per record.
let keyed = median { blackHole(RequestSet(store).filter("age", value: 30).count) }
let handEqual = median {
  var c = 0
  for a in animals where a.age == 30 { c += 1 }
  blackHole(c)
}
rows.append(Row(scenario: "filter(\"age\", value: 30).count (MemoryStore)", ours: keyed, baseline: handEqual,
                baselineName: "hand loop", target: "within 3x"))

// Issue 2: sort by one key plus limit(10), against sorted().prefix(10).
let topK = median { blackHole(Array(RequestSet(store).sortBy(\.age).limit(10))) }
let sortedPrefix = median(runs: 3) { blackHole(Array(animals.sorted { $0.age < $1.age }.prefix(10))) }
rows.append(Row(scenario: "sortBy(\\.age).limit(10) (MemoryStore)", ours: topK, baseline: sortedPrefix,
                baselineName: "Array.sorted().prefix(10)", target: "10x faster"))

let topKKey = median { blackHole(Array(RequestSet(store).sortBy("age").limit(10))) }
rows.append(Row(scenario: "sortBy(\"age\").limit(10) (MemoryStore)", ours: topKKey, baseline: sortedPrefix,
                baselineName: "Array.sorted().prefix(10)", target: "(string key)"))

// Other forms, for the record.
let predicate = median {
  blackHole(RequestSet(store).filter(#Predicate<Animal> { $0.age > 30 }).count)
}
rows.append(Row(scenario: "filter(#Predicate { $0.age > 30 }).count", ours: predicate, baseline: handGreater,
                baselineName: "hand loop", target: "(no target)"))
let closure = median { blackHole(RequestSet(store).filter { $0.age > 30 }.count) }
rows.append(Row(scenario: "filter { $0.age > 30 }.count", ours: closure, baseline: handGreater,
                baselineName: "hand loop", target: "(no target)"))
let fetched = median { blackHole(try! RequestSet(store).filter(\.age > 30).fetch().count) }
let eager = median { blackHole(animals.filter { $0.age > 30 }.count) }
rows.append(Row(scenario: "filter(\\.age > 30).fetch()", ours: fetched, baseline: eager,
                baselineName: "Array.filter", target: "(no target)"))

print("\nRequestSet ratios at \(n) records (median of 9 runs; sorted().prefix: median of 3)")
print(Row.header)
for row in rows { print(row.text) }
