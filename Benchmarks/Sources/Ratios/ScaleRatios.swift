import BenchmarkSupport
import Foundation
import GRDB
import RequestSet

// How cost grows with size (issue 11's scale section): at 10,000 to 10,000,000 records,
// each backend (Array, MemoryStore, LogStore, SQLite through GRDB) is loaded, measured for
// resident memory and timed on three queries. Every backend and size runs in child
// processes of its own, so the resident set holds that backend and nothing else; LogStore
// and SQLite are written by one child and opened by another, which holds no array.
//
//   swift run -c release --package-path Benchmarks Ratios scale --csv docs/benchmarks/scale.csv
//   python3 Benchmarks/Scripts/scale_chart.py docs/benchmarks/scale.csv docs/benchmarks/scale.svg
//
// RATIOS_SCALE_SIZES=10000,100000 overrides the sizes; RATIOS_SCALE_MEMORY_LIMIT_GB (8 by
// default, the machine is shared) is the resident set a MemoryStore may be projected to
// reach before a size is skipped.

/// The queries every backend runs, in the CSV's metric names.
///
/// - `indexed_ms`: `filter(\.name == k).fetch()`, name indexed (the Array scans);
/// - `count_ms`: `filter(\.age > 20 && \.species == "Cow").count`, no index;
/// - `sort_ms`: `filter(\.species == "Cow").sortBy(\.age).limit(10).fetch()`, no index;
/// - `first_query_ms`: that last query once, right after the load (Array, MemoryStore)
///   or the open (LogStore, SQLite).
let scaleBackends = ["array", "memory", "log", "sqlite"]

/// The backends' names in tables and in the chart's legend.
func scaleTitle(_ backend: String) -> String {
  switch backend {
  case "array": "Array"
  case "memory": "MemoryStore"
  case "log": "LogStore"
  default: "SQLite + GRDB"
  }
}

func scaleTables(csvPath: String?) throws {
  let override = ProcessInfo.processInfo.environment["RATIOS_SCALE_SIZES"]?.split(separator: ",").compactMap { Int($0) }
  let sizes = override ?? [10_000, 100_000, 1_000_000, 10_000_000]
  let limitGB = ProcessInfo.processInfo.environment["RATIOS_SCALE_MEMORY_LIMIT_GB"].flatMap(Double.init) ?? 8
  var results: [(size: Int, backend: String, figures: [String: Double])] = []
  var notes: [String] = []
  var memoryBytesPerRecord: Double?

  for n in sizes {
    print("\nScale: \(grouped(n)) records…")
    for backend in scaleBackends {
      var figures: [String: Double] = [:]
      switch backend {
      case "memory":
        // The array and the store are both resident while it loads.
        if let perRecord = memoryBytesPerRecord, perRecord * Double(n) > limitGB * 1e9 {
          let note =
            "MemoryStore skipped at \(grouped(n)) records: at the \(Int(perRecord)) bytes/record (array + store) measured "
            + "at the size before, it would hold about \(Int(perRecord * Double(n) / 1e9)) GB, over the \(Int(limitGB)) GB "
            + "allowed on this shared machine (RATIOS_SCALE_MEMORY_LIMIT_GB)."
          print("  " + note)
          notes.append(note)
          continue
        }
        figures = try runChild("scale", ["memory", "run", String(n)])
        memoryBytesPerRecord = ((figures["array_bytes"] ?? 0) + (figures["added_bytes"] ?? 0)) / Double(n)
      case "array":
        figures = try runChild("scale", ["array", "run", String(n)])
      default:
        let path = scratch + "/scale-\(n).\(backend)"
        defer { remove(path, ["", ".lock", "-journal", "-wal", "-shm"]) }
        figures = try runChild("scale", [backend, "write", String(n), path])
        figures.merge(try runChild("scale", [backend, "open", String(n), path])) { $1 }
      }
      print("  \(scaleTitle(backend)): " + figures.sorted { $0.key < $1.key }.map { "\($0.key)=\(shortNumber($0.value))" }.joined(separator: " "))
      results.append((n, backend, figures))
    }
    // Every backend must have counted the same records.
    let counts = Set(results.filter { $0.size == n }.compactMap { $0.figures["count_result"] })
    if counts.count > 1 { print("  ⚠︎ MISMATCH: the backends counted \(counts.sorted()) at \(n) records") }
  }

  print("\n### Scale (issue 11): cost by size, each backend in a process of its own\n")
  print(
    "Load: the array built by `makeAnimals`; `insert(contentsOf:)` into an empty MemoryStore or LogStore; SQLite inserts in one"
      + " transaction. Open: `LogStore(path:)` (replaying the log and rebuilding the name index) or `DatabaseQueue(path:)`."
      + " Resident: RssAnon growth (heap, beyond mapped files) per record, with a name index, after the queries; for the"
      + " MemoryStore once the array is freed. Queries per call; the Array scans for the name.\n")
  let heads = [
    "records", "backend", "load", "create name index", "open", "resident / record", "mapped file resident", "first query after load/open",
    "`filter(\\.name == k).fetch()`", "`filter(\\.age > 20 && \\.species == \"Cow\").count`", "`filter(\\.species == \"Cow\").sortBy(\\.age).limit(10)`",
  ]
  print("| " + heads.joined(separator: " | ") + " |")
  print("|---:|---|" + String(repeating: "---:|", count: heads.count - 2))
  for (n, backend, f) in results {
    let perRecord = f["resident_bytes"].map { String(format: "%.0f B", $0 / Double(n)) } ?? "—"
    let mapped = f["mapped_bytes"].map { String(format: "%.0f MB", $0 / 1e6) } ?? "—"
    let cells = [
      grouped(n), scaleTitle(backend), perOpText(f["load_ms"]), perOpText(f["index_ms"]), perOpText(f["open_ms"]), perRecord, mapped,
      perOpText(f["first_query_ms"]), perOpText(f["indexed_ms"]), perOpText(f["count_ms"]), perOpText(f["sort_ms"]),
    ]
    print("| " + cells.joined(separator: " | ") + " |")
  }
  for note in notes { print("\n" + note) }

  var csv = "size,backend,metric,value\n"
  for (n, backend, f) in results {
    for (metric, value) in f.sorted(by: { $0.key < $1.key }) { csv += "\(n),\(backend),\(metric),\(value)\n" }
  }
  if let csvPath {
    try csv.write(toFile: csvPath, atomically: true, encoding: .utf8)
    print("\nWrote \(csvPath).")
  } else {
    print("\n```csv\n" + csv + "```")
  }
}

/// A figure as the progress lines show it.
private func shortNumber(_ x: Double) -> String {
  x >= 1e6 ? String(format: "%.0f", x) : x >= 100 ? String(format: "%.1f", x) : String(format: "%.4g", x)
}

// MARK: - The children

/// One backend at one size: `BACKEND PHASE N [PATH]`, with PHASE `run` (array, memory),
/// `write` or `open` (log, sqlite). Reports its figures with `report`.
func scaleChild(_ arguments: [String]) throws {
  guard arguments.count >= 3, let n = Int(arguments[2]) else { throw ChildFailure(description: "scale child: BACKEND PHASE N [PATH]") }
  let backend = arguments[0], phase = arguments[1]
  let path = arguments.count > 3 ? arguments[3] : ""
  let nameKeys = queryNameKeys()
  let start = Resident.now()

  switch (backend, phase) {
  case ("array", "run"):
    let (load, animals) = timed { makeAnimals(n) }
    let loaded = Resident.now()
    report("load_ms", load)
    report("array_bytes", loaded.anonymous - start.anonymous)
    report("resident_bytes", loaded.anonymous - start.anonymous)
    report("first_query_ms", timed { keep(arrayCowsByAge(animals)) }.ms)
    report("indexed_ms", perOperation(keys: nameKeys.count) { i in keep(animals.filter { $0.name == nameKeys[i] }) })
    var result = 0
    report(
      "count_ms",
      perOperation(keys: 1) { _ in
        var c = 0
        for a in animals where a.age > 20 && a.species == "Cow" { c += 1 }
        result = c
      })
    report("count_result", result)
    report("sort_ms", perOperation(keys: 1) { _ in keep(arrayCowsByAge(animals)) })

  case ("memory", "run"):
    var animals = makeAnimals(n)
    let withArray = Resident.now()
    let store = MemoryStore<Animal>()
    // The array must stay alive until the second reading, whatever the optimizer does.
    let inserted = try withExtendedLifetime(animals) {
      report("load_ms", try timed { try store.insert(contentsOf: animals) }.ms)
      return Resident.now()
    }
    report("array_bytes", withArray.anonymous - start.anonymous)
    report("added_bytes", inserted.anonymous - withArray.anonymous)
    report("index_ms", try timed { try store.createIndex("name") }.ms)
    report("first_query_ms", try timed { keep(try cowsByAge(store)) }.ms)
    animals = []
    try storeQueries(store, n: n, nameKeys: nameKeys)
    report("resident_bytes", Resident.now().anonymous - start.anonymous)

  case ("log", "write"):
    let animals = makeAnimals(n)
    let log = try freshLog(path)
    report("load_ms", try timed { try log.insert(contentsOf: animals) }.ms)
    report("index_ms", try timed { try log.createIndex("name") }.ms)
    report("file_bytes", log.fileSize)

  case ("log", "open"):
    let (open, log) = try timed { try LogStore<Animal>(path: path) }
    report("open_ms", open)
    report("first_query_ms", try timed { keep(try cowsByAge(log)) }.ms)
    try storeQueries(log, n: n, nameKeys: nameKeys)
    let end = Resident.now()
    report("resident_bytes", end.anonymous - start.anonymous)
    report("mapped_bytes", end.file - start.file)

  case ("sqlite", "write"):
    let animals = makeAnimals(n)
    let (load, db) = try timed { try queryDatabase(path, animals) }
    report("load_ms", load)
    report("index_ms", try timed { try db.write { try $0.execute(sql: "CREATE INDEX animal_name ON animal(name)") } }.ms)
    report("file_bytes", ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0)

  case ("sqlite", "open"):
    let (open, db) = try timed { try DatabaseQueue(path: path) }
    report("open_ms", open)
    report("first_query_ms", try timed { keep(try db.read { try SQLAnimal.fetchAll($0, sql: cowsByAgeSQL).map(\.animal) }) }.ms)
    let columns = "SELECT id, name, species, age, weight, nickname, tags, ownerName, ownerCity FROM animal"
    var result = 0
    try db.read { db in
      let byName = try db.cachedStatement(sql: columns + " WHERE name = ?")
      report(
        "indexed_ms",
        try perOperation(keys: nameKeys.count) { i in keep(try SQLAnimal.fetchAll(byName, arguments: [nameKeys[i]]).map(\.animal)) })
      let count = try db.cachedStatement(sql: "SELECT COUNT(*) FROM animal WHERE age > 20 AND species = 'Cow'")
      report("count_ms", try perOperation(keys: 1) { _ in result = try Int.fetchOne(count) ?? -1 })
      let sorted = try db.cachedStatement(sql: cowsByAgeSQL)
      report("sort_ms", try perOperation(keys: 1) { _ in keep(try SQLAnimal.fetchAll(sorted).map(\.animal)) })
    }
    report("count_result", result)
    let end = Resident.now()
    report("resident_bytes", end.anonymous - start.anonymous)
    report("mapped_bytes", end.file - start.file)

  default:
    throw ChildFailure(description: "scale child: unknown \(backend) \(phase)")
  }
}

/// `cowsByAge` with Array operations: what a user writes without a store.
private func arrayCowsByAge(_ animals: [Animal]) -> [Animal] {
  Array(animals.filter { $0.species == "Cow" }.sorted { $0.age < $1.age }.prefix(10))
}

/// The three timed queries on a store, reported as `indexed_ms`, `count_ms`, `sort_ms`
/// and `count_result`.
private func storeQueries<Store: RecordStore>(_ store: Store, n: Int, nameKeys: [String]) throws where Store.Element == Animal {
  let set = RequestSet(store)
  report("indexed_ms", try perOperation(keys: nameKeys.count) { i in keep(try set.filter(\.name == nameKeys[i]).fetch()) })
  var result = 0
  report("count_ms", perOperation(keys: 1) { _ in result = set.filter(\.age > 20 && \.species == "Cow").count })
  report("count_result", result)
  report("sort_ms", try perOperation(keys: 1) { _ in keep(try cowsByAge(store)) })
}
