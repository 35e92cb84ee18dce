import BenchmarkSupport
import Foundation
import GRDB
import RequestSet
import RequestSetSQLite

// Issue 38, composite indexes: `filter(\.species == x).sortBy(\.age).limit(10)` over N
// records (1,000,000 by default) with a composite index on (species, age), per query,
// beside SQLite through GRDB with the same composite index on a column-per-field table
// (`WHERE species = ? ORDER BY age, id LIMIT 10`, cached statement, every query in one read
// transaction: its best case). The species cycle over the eight the fixture holds. Also a
// range inside one species (`species == x AND age BETWEEN a AND a+4`, about 6,000 rows at
// 1M) and the same query on our SQLiteStore with its composite expression index.
//
//   swift run -c release --package-path Benchmarks Ratios 1000000 composite

func compositeTables(_ n: Int) throws {
  let animals = makeAnimals(n)
  let species = ["Cow", "Dog", "Cat", "Mouse", "Horse", "Sheep", "Goat", "Pig"]
  let dir = FileManager.default.temporaryDirectory.path + "/requestset-ratios-composite-\(getpid())"
  try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: dir) }

  progress("  composite: building the stores…")
  let memory = try MemoryStore(animals)
  try memory.createIndex(\.species, \.age)
  let log = try LogStore<Animal>(path: dir + "/animals.rslog")
  try log.insert(contentsOf: animals)
  try log.createIndex(\.species, \.age)
  let sqliteStore = try SQLiteStore<Animal>(path: dir + "/store.sqlite")
  try sqliteStore.insert(contentsOf: animals)
  try sqliteStore.createIndex("species", "age")
  let dbq = try queryDatabase(dir + "/grdb.sqlite", animals)
  try dbq.write { try $0.execute(sql: "CREATE INDEX animal_species_age ON animal(species, age)") }
  let columns = "SELECT id, name, species, age, weight, nickname, tags, ownerName, ownerCity FROM animal"

  func check(_ ours: [Animal], _ theirs: [SQLAnimal], _ what: String) {
    precondition(
      ours.map(\.id) == theirs.map(\.animal.id), "\(what): \(ours.map(\.id)) vs \(theirs.map(\.animal.id))")
  }
  func grdb(_ sql: String, _ arguments: @escaping (Int) -> StatementArguments) throws -> Double {
    try dbq.read { db in
      let statement = try db.cachedStatement(sql: sql)
      return try perOperation(keys: species.count) { i in
        keep(try SQLAnimal.fetchAll(statement, arguments: arguments(i)).map(\.animal))
      }
    }
  }

  var rows: [Row] = []
  // The top 10 of one species by age.
  let topSQL = columns + " WHERE species = ? ORDER BY age, id LIMIT 10"
  for i in 0..<species.count {
    let theirs = try dbq.read { try SQLAnimal.fetchAll($0, sql: topSQL, arguments: [species[i]]) }
    check(
      try RequestSet(memory).filter(\.species == species[i]).sortBy(\.age).limit(10).fetch(), theirs,
      "memory top")
    check(
      try RequestSet(log).filter(\.species == species[i]).sortBy(\.age).limit(10).fetch(), theirs, "log top")
  }
  let top = try grdb(topSQL) { [species[$0]] }
  for (name, set) in [
    ("MemoryStore", RequestSet(memory)), ("LogStore", RequestSet(log)),
    ("SQLiteStore", RequestSet(sqliteStore)),
  ] {
    progress("  composite: top 10 on \(name)…")
    let ours = try perOperation(keys: species.count) { i in
      keep(try set.filter(\.species == species[i]).sortBy(\.age).limit(10).fetch())
    }
    rows.append(
      Row(
        "`filter(\\.species == x).sortBy(\\.age).limit(10)`, \(grouped(n)), \(name)", ours,
        "SQLite + index (species, age)", top, target: name == "SQLiteStore" ? "-" : "≤ 1.2×"))
  }
  // A range inside one species.
  let rangeSQL = columns + " WHERE species = ? AND age >= ? AND age <= ? ORDER BY id"
  let low = { (i: Int) in (i * 11) % 90 }
  for i in 0..<species.count {
    let theirs = try dbq.read {
      try SQLAnimal.fetchAll($0, sql: rangeSQL, arguments: [species[i], low(i), low(i) + 4])
    }
    check(
      try RequestSet(memory).filter(\.species == species[i]).filter(\.age >= low(i)).filter(
        \.age <= low(i) + 4
      ).fetch(),
      theirs, "memory range")
  }
  let range = try grdb(rangeSQL) { [species[$0], low($0), low($0) + 4] }
  for (name, set) in [
    ("MemoryStore", RequestSet(memory)), ("LogStore", RequestSet(log)),
    ("SQLiteStore", RequestSet(sqliteStore)),
  ] {
    progress("  composite: range on \(name)…")
    let ours = try perOperation(keys: species.count) { i in
      keep(
        try set.filter(\.species == species[i]).filter(\.age >= low(i)).filter(\.age <= low(i) + 4).fetch())
    }
    rows.append(
      Row(
        "`filter(\\.species == x && age in a...a+4)` (~\(grouped(n / 160)) rows), \(grouped(n)), \(name)",
        ours,
        "SQLite + index (species, age)", range, target: "-"))
  }
  log.close()
  sqliteStore.close()
  printTable("Issue 38: composite index (species, age), per query", rows)
}

/// `filter(\.species == x).sortBy(\.age).limit(10)` on a MemoryStore with a composite
/// index, `loops` times, for a profiler (`valgrind --tool=callgrind
/// --toggle-collect='*compositeQueryLoop*'`):
///
///   swift run -c release --package-path Benchmarks Ratios 100000 compositeloop
func compositeQueryLoop(_ n: Int, loops: Int = 20_000) throws {
  let memory = try MemoryStore(makeAnimals(n))
  try memory.createIndex(\.species, \.age)
  let species = ["Cow", "Dog", "Cat", "Mouse", "Horse", "Sheep", "Goat", "Pig"]
  let set = RequestSet(memory)
  let start = DispatchTime.now().uptimeNanoseconds
  for i in 0..<loops { keep(try set.filter(\.species == species[i % 8]).sortBy(\.age).limit(10).fetch()) }
  print("\(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e3 / Double(loops)) µs per query")
}
