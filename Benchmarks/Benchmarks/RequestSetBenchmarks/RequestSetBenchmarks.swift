import Benchmark
import BenchmarkSupport
import Foundation
import RequestSet

// ordo-one/benchmark scenarios: `swift package --package-path Benchmarks benchmark`.
// The ratio table in docs/BENCHMARKS.md comes from the `Ratios` executable, which times
// each scenario beside its baseline in one process.

let animals = makeAnimals(1_000_000)
let store = try! MemoryStore(animals)

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 20)

  formatStringBenchmarks()
  logStoreBenchmarks()

  Benchmark("Core: typed filter + count (1M)") { benchmark in
    for _ in benchmark.scaledIterations { blackHole(RequestSet(store).filter(\.age > 30).count) }
  }
  Benchmark("Baseline: hand loop count (1M)") { benchmark in
    for _ in benchmark.scaledIterations {
      var c = 0
      for a in animals where a.age > 30 { c += 1 }
      blackHole(c)
    }
  }
  Benchmark("Core: key/value filter + count (1M)") { benchmark in
    for _ in benchmark.scaledIterations { blackHole(RequestSet(store).filter("age", value: 30).count) }
  }
  Benchmark("Core: sortBy + limit 10 (1M)") { benchmark in
    for _ in benchmark.scaledIterations { blackHole(Array(RequestSet(store).sortBy(\.age).limit(10))) }
  }
  Benchmark("Baseline: sorted().prefix(10) (1M)") { benchmark in
    for _ in benchmark.scaledIterations { blackHole(Array(animals.sorted { $0.age < $1.age }.prefix(10))) }
  }
}
