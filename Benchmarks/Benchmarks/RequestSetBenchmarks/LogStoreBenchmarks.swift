import Benchmark
import BenchmarkSupport
import Foundation
import GRDB
import RequestSet

// LogStore scenarios, each beside its baseline (JSON, SQLite through GRDB, a plain read).
// Registered by `logStoreBenchmarks()`; the benchmark target needs GRDB
// (`.package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0")`).
//
// The ratios quoted in the closing note were measured with a one-process runner that
// times every pair side by side; see docs/BENCHMARKS.md.

/// Where the scenarios keep their files.
private let logBenchDirectory: String = {
  let dir = FileManager.default.temporaryDirectory.path + "/requestset-logstore-bench-\(getpid())"
  try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  return dir
}()

private func removeFiles(_ path: String, _ suffixes: [String]) {
  for s in suffixes { try? FileManager.default.removeItem(atPath: path + s) }
}

/// A fresh log holding `animals`, written once.
private func filledLog(_ animals: [Animal], name: String) throws -> String {
  let path = logBenchDirectory + "/" + name
  removeFiles(path, ["", ".lock"])
  let store = try LogStore<Animal>(path: path)
  try store.insert(contentsOf: animals)
  return path
}

/// A fresh SQLite database holding `animals` in one table without secondary indexes.
private func filledDatabase(_ animals: [Animal], name: String) throws -> DatabaseQueue {
  let path = logBenchDirectory + "/" + name
  removeFiles(path, ["", "-journal", "-wal", "-shm"])
  let db = try DatabaseQueue(path: path)
  try db.write { db in
    try db.execute(
      sql: """
        CREATE TABLE animal (id INTEGER PRIMARY KEY, name TEXT NOT NULL, species TEXT NOT NULL,
          age INTEGER NOT NULL, weight REAL NOT NULL, nickname TEXT, tags TEXT NOT NULL,
          ownerName TEXT, ownerCity TEXT)
        """)
    let insert = try db.makeStatement(
      sql: "INSERT INTO animal (id, name, species, age, weight, nickname, tags, ownerName, ownerCity) "
        + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
    for a in animals {
      try insert.execute(arguments: [
        a.id, a.name, a.species, a.age, a.weight, a.nickname, a.tags.joined(separator: ","), a.owner?.name,
        a.owner?.city,
      ])
    }
  }
  return db
}

func logStoreBenchmarks() {
  let million = makeAnimals(1_000_000)
  let sample = Array(million.prefix(100_000))
  let config = Benchmark.Configuration(metrics: [.wallClock], maxIterations: 5)

  // MARK: Record encoding: the binary codec against JSON, record by record.

  Benchmark("Log codec: encode 100k records", configuration: config) { benchmark in
    for _ in benchmark.scaledIterations {
      var codec = BinaryRecordCodec()
      for a in sample { blackHole(try codec.encode(a)) }
    }
  }
  Benchmark("Baseline: JSONEncoder 100k records", configuration: config) { benchmark in
    let encoder = JSONEncoder()
    for _ in benchmark.scaledIterations {
      for a in sample { blackHole(try encoder.encode(a)) }
    }
  }
  Benchmark("Log codec: decode 100k records", configuration: config) { benchmark in
    var codec = BinaryRecordCodec()
    let encoded = try sample.map { try codec.encode($0) }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      for bytes in encoded { blackHole(try codec.decode(Animal.self, from: bytes)) }
    }
  }
  Benchmark("Baseline: JSONDecoder 100k records", configuration: config) { benchmark in
    let encoder = JSONEncoder()
    let decoder = JSONDecoder()
    let encoded = try sample.map { try encoder.encode($0) }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      for data in encoded { blackHole(try decoder.decode(Animal.self, from: data)) }
    }
  }

  // MARK: Writing 1M records at once.

  Benchmark("LogStore: insert 1M in one batch", configuration: config) { benchmark in
    for _ in benchmark.scaledIterations { blackHole(try filledLog(million, name: "insert.rslog")) }
  }
  Benchmark("LogStore: insert 1M in one batch, fsync", configuration: config) { benchmark in
    for _ in benchmark.scaledIterations {
      let path = logBenchDirectory + "/insert-fsync.rslog"
      removeFiles(path, ["", ".lock"])
      let store = try LogStore<Animal>(path: path, options: .init(durability: .fsync))
      try store.insert(contentsOf: million)
    }
  }
  Benchmark("SQLite (GRDB): insert 1M in one transaction", configuration: config) { benchmark in
    for _ in benchmark.scaledIterations { blackHole(try filledDatabase(million, name: "insert.sqlite")) }
  }

  // MARK: Opening a 1M-record log.

  Benchmark("LogStore: reopen 1M records", configuration: config) { benchmark in
    let path = try filledLog(million, name: "reopen.rslog")
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations { blackHole(try LogStore<Animal>(path: path)) }
  }
  Benchmark("Baseline: read(2) the same log file", configuration: config) { benchmark in
    let path = try filledLog(million, name: "reopen-read.rslog")
    let chunk = 1 << 20
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
    defer { buffer.deallocate() }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      let fd = open(path, O_RDONLY)
      var total = 0
      while true {
        let n = read(fd, buffer, chunk)
        if n <= 0 { break }
        total += n
      }
      close(fd)
      blackHole(total)
    }
  }

  // MARK: A filtered count without an index.

  Benchmark("LogStore: filtered count, string key (1M)", configuration: config) { benchmark in
    let store = try LogStore<Animal>(path: try filledLog(million, name: "count.rslog"))
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      blackHole(try RequestSet(store).filter("age", .greaterThan, 50).fetchCount())
    }
  }
  Benchmark("LogStore: filtered count, typed key path (1M, decodes)", configuration: config) { benchmark in
    let store = try LogStore<Animal>(path: try filledLog(million, name: "count-typed.rslog"))
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      blackHole(try RequestSet(store).filter(\Animal.age > 50).fetchCount())
    }
  }
  Benchmark("SQLite (GRDB): SELECT COUNT(*) WHERE age > 50 (1M, full scan)", configuration: config) { benchmark in
    let db = try filledDatabase(million, name: "count.sqlite")
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      blackHole(try db.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM animal WHERE age > 50") })
    }
  }
}
