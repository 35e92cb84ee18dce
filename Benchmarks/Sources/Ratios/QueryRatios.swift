import BenchmarkSupport
import Foundation
import GRDB
import RequestSet

// Issue 5: queries through secondary indexes and the planner, at 10,000, 100,000 and
// 1,000,000 records, beside a hand-written loop, eager Array operations, Foundation's
// #Predicate / SortDescriptor, and SQLite through GRDB without and with the matching index.
//
// Every store is built once per size. The no-index figures (RequestSet full scans, SQLite
// without indexes) are taken first; then the same stores get their indexes (name, weight,
// age) and the indexed figures are taken. Times are per operation: each timed body repeats
// the operation over a list of varying keys (up to 1,000 times) and is divided by the count.

/// An `animal` row, as `queryDatabase` lays it out, decoded into an `Animal`.
struct SQLAnimal: FetchableRecord {
  var animal: Animal

  init(row: GRDB.Row) throws {
    let tags: String = row[6]
    let ownerName: String? = row[7]
    let ownerCity: String? = row[8]
    animal = Animal(
      id: row[0], name: row[1], species: row[2], age: row[3], weight: row[4], nickname: row[5],
      tags: tags.isEmpty ? [] : tags.split(separator: ",").map(String.init),
      owner: ownerName.map { Owner(name: $0, city: ownerCity ?? "") })
  }
}

/// A SQLite database holding `animals`, in the table LogRatios.swift uses.
func queryDatabase(_ path: String, _ animals: [Animal]) throws -> DatabaseQueue {
  remove(path, ["", "-journal", "-wal", "-shm"])
  let db = try DatabaseQueue(path: path)
  try db.write { db in
    try db.execute(
      sql: """
        CREATE TABLE animal (id INTEGER PRIMARY KEY, name TEXT NOT NULL, species TEXT NOT NULL,
          age INTEGER NOT NULL, weight REAL NOT NULL, nickname TEXT, tags TEXT NOT NULL, ownerName TEXT, ownerCity TEXT)
        """)
    let insert = try db.makeStatement(
      sql: "INSERT INTO animal (id, name, species, age, weight, nickname, tags, ownerName, ownerCity) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
    for a in animals {
      try insert.execute(arguments: [
        a.id, a.name, a.species, a.age, a.weight, a.nickname, a.tags.joined(separator: ","), a.owner?.name, a.owner?.city,
      ])
    }
  }
  return db
}

/// The contenders, in table order.
enum Contender: Int, CaseIterable {
  case memory, log, memoryScan, logScan, hand, array, foundation, sqlite, sqliteIndexed

  var title: String {
    switch self {
    case .memory: "RS Memory"
    case .log: "RS Log"
    case .memoryScan: "RS Memory, no index"
    case .logScan: "RS Log, no index"
    case .hand: "hand loop"
    case .array: "Array ops"
    case .foundation: "#Predicate / SortDescriptor"
    case .sqlite: "SQLite"
    case .sqliteIndexed: "SQLite + index"
    }
  }
}

/// One scenario's times (milliseconds per operation) and its result signatures.
struct QueryRow {
  var scenario: String
  var times: [Contender: Double] = [:]
  /// The ids (or the count) each contender returned for the first few keys, to check that
  /// every contender does the same work.
  var outputs: [Contender: [Int]] = [:]
  /// Contenders timed once (slower than 3 s a call).
  var once: Set<Contender> = []
  var target = "-"
  var verdict = ""

  init(_ scenario: String) { self.scenario = scenario }

  subscript(_ c: Contender) -> Double? { times[c] }

  /// The scenario's number in the issue's list: "1", "2b", "5b".
  var number: Substring { scenario.prefix { $0 != "." } }
}

/// Formats a per-operation time given in milliseconds.
func perOpText(_ ms: Double?) -> String {
  guard let ms else { return "—" }
  let us = ms * 1000
  if us < 1 { return String(format: "%.3f µs", us) }
  if us < 10 { return String(format: "%.2f µs", us) }
  if us < 1000 { return String(format: "%.1f µs", us) }
  if ms < 10 { return String(format: "%.2f ms", ms) }
  if ms < 1000 { return String(format: "%.1f ms", ms) }
  return String(format: "%.2f s", ms / 1000)
}

/// `ours ÷ baseline` as "N× faster" or "N× slower".
func ratioText(_ ours: Double?, _ baseline: Double?) -> String {
  guard let ours, let baseline, ours > 0, baseline > 0 else { return "—" }
  let r = ours / baseline
  func g(_ x: Double) -> String { x >= 100 ? String(format: "%.0f", x) : x >= 10 ? String(format: "%.1f", x) : String(format: "%.2f", x) }
  return r >= 1 ? "\(g(r))× slower" : "\(g(1 / r))× faster"
}

/// `count` names that `makeAnimals` gives out, varying (each matches about n ÷ 10,000 records).
func queryNameKeys(count: Int = 1000) -> [String] {
  let names = ["Micky", "Daisy", "Rex", "Bella", "Alice", "Zed", "Bob", "Max", "Luna", "Milo"]
  return (0..<count).map { i in names[i % 10] + String((i &* 37) % 1000) }
}

/// `count` ids spread over `0..<n`, varying.
func queryIDKeys(_ n: Int, count: Int = 1000) -> [Int] {
  (0..<count).map { ($0 &* 7_919 &+ 13) % n }
}

/// The three sizes; `RATIOS_QUERY_SIZES=2000,20000` overrides them for a quick check or a
/// profile.
func queryTables() throws {
  let override = ProcessInfo.processInfo.environment["RATIOS_QUERY_SIZES"]?.split(separator: ",").compactMap { Int($0) }
  for n in override ?? [10_000, 100_000, 1_000_000] {
    try queryTable(n)
  }
}

/// Builds the stores for `n` records, times every scenario and prints the table; returns the
/// rows.
///
/// With `only`, times just those scenarios (by number: "1", "2b") for those contenders and
/// prints nothing but progress: the issue 11 section reads rows 1, 2, 2b, 5b and 7 this
/// way. (5b's SQLite figures come from 5a, so ask for "5a" too.)
@discardableResult
func queryTable(_ n: Int, only: (rows: Set<String>, contenders: Set<Contender>)? = nil) throws -> [QueryRow] {
  let clock = { DispatchTime.now().uptimeNanoseconds }
  var start = clock()
  func lap() -> String {
    let s = Double(clock() - start) / 1e9
    start = clock()
    return String(format: "%.1f s", s)
  }
  print("\nBuilding the stores for \(n) records…")
  let animals = makeAnimals(n)
  var build: [String] = ["makeAnimals \(lap())"]
  let memory = try MemoryStore(animals)
  build.append("MemoryStore \(lap())")
  let logPath = scratch + "/query-\(n).rslog"
  remove(logPath, ["", ".lock"])
  let log = try LogStore<Animal>(path: logPath)
  try log.insert(contentsOf: animals)
  build.append("LogStore \(lap())")
  let dbPath = scratch + "/query-\(n).sqlite"
  let dbq = try queryDatabase(dbPath, animals)
  build.append("SQLite \(lap())")
  defer { remove(logPath, ["", ".lock"]); remove(dbPath, ["", "-journal", "-wal", "-shm"]) }

  // The keys: 1,000 of each kind, varying, the same for every contender.
  let keyCount = 1000
  let idKeys = queryIDKeys(n, count: keyCount)
  let nameKeys = queryNameKeys(count: keyCount)
  // [w, w + 10) for w in 500...509: about 1% of the rows, mid-range (issue 5's [500, 510)).
  let lowWeights = (0..<keyCount).map { 500 + Double($0 % 10) }
  let offset = n >= 100_000 ? 10_000 : min(5_000, n / 4)
  let pageSize = 50

  let verifyKeys = 3

  /// Times one contender: first `signature` for the first keys (which checks the output
  /// and warms up), then `body(reps)`, repeated so that one timed body takes about 30 ms
  /// (at most 1,000 repetitions, over the first `reps` keys), as a per-call median.
  /// An operation slower than 3 s is timed once, on the first key.
  func measure(
    _ row: inout QueryRow, _ c: Contender, _ signature: (Int) throws -> [Int], _ body: (Int) throws -> Void
  ) throws {
    if let only, !only.rows.contains(String(row.number)) || !only.contenders.contains(c) { return }
    var t = clock()
    var out = try signature(0) + [-1]
    let first = Double(clock() - t) / 1e6
    if first > 3000 {
      row.outputs[c] = out
      row.times[c] = first
      row.once.insert(c)
      return
    }
    t = clock()
    for i in 1..<verifyKeys { out += try signature(i) + [-1] }
    let estimate = Double(clock() - t) / 1e6 / Double(verifyKeys - 1)
    row.outputs[c] = out
    row.times[c] = try perOperation(estimate: estimate, maxReps: keyCount, body)
  }
  func fetch(_ row: inout QueryRow, _ c: Contender, _ op: (Int) throws -> [Animal]) throws {
    try measure(&row, c, { try op($0).map(\.id) }) { r in for i in 0..<r { keep(try op(i)) } }
  }
  func count(_ row: inout QueryRow, _ c: Contender, _ op: (Int) throws -> Int) throws {
    try measure(&row, c, { [try op($0)] }) { r in for i in 0..<r { keep(try op(i)) } }
  }
  /// SQLite: cached statements, all the repetitions in one read transaction (its best case).
  func sql(_ row: inout QueryRow, _ c: Contender, _ query: String, _ arguments: @escaping (Int) -> StatementArguments) throws {
    try measure(
      &row, c,
      { i in try dbq.read { try SQLAnimal.fetchAll($0.cachedStatement(sql: query), arguments: arguments(i)).map(\.animal.id) } }
    ) { r in
      try dbq.read { db in
        let statement = try db.cachedStatement(sql: query)
        for i in 0..<r { keep(try SQLAnimal.fetchAll(statement, arguments: arguments(i)).map(\.animal)) }
      }
    }
  }
  func sqlCount(
    _ row: inout QueryRow, _ c: Contender, _ query: String, _ arguments: @escaping (Int) -> StatementArguments = { _ in [] }
  ) throws {
    try measure(&row, c, { i in [try dbq.read { try Int.fetchOne($0.cachedStatement(sql: query), arguments: arguments(i)) ?? -1 }] }) {
      r in
      try dbq.read { db in
        let statement = try db.cachedStatement(sql: query)
        for i in 0..<r { keep(try Int.fetchOne(statement, arguments: arguments(i))) }
      }
    }
  }

  var byID = QueryRow("1. point lookup by id: `filter(\\.id == k).fetch()`")
  var byName = QueryRow("2. indexed equality: `filter(\\.name == k).fetch()`")
  var range = QueryRow("3. range, fetch: `filter(\"weight\", .greaterThanOrEqual, w).filter(\"weight\", .lessThan, w + 10)` (~1%)")
  var between = QueryRow("3b. (extra) the same range as one condition: `filter(\"weight BETWEEN {%@, %@}\", w, w + 9.95)`")
  var ageCount = QueryRow("4. unindexed filter + count: `filter(\\.age > 30).count`")
  var topNoIndex = QueryRow("5a. `sortBy(\\.age).limit(10)`, age not indexed")
  var topIndex = QueryRow("5b. `sortBy(\\.age).limit(10)`, age indexed")
  var page = QueryRow("6. page: `sortBy(\\.age).offset(\(offset)).limit(\(pageSize))`, age indexed")
  var byKey = QueryRow("7. string key: `filter(\"name\", value: k).fetch()`")
  var byFormat = QueryRow("8. format string: `filter(\"name == %@\", k).fetch()`")
  // The index alone, without fetching records: equality with a count.
  var nameCount = QueryRow("2b. (extra) `filter(\\.name == k).count`")
  var keyCountRow = QueryRow("7b. (extra) `filter(\"name\", value: k).count`")

  func byAge(_ a: Animal, _ b: Animal) -> Bool { a.age < b.age }

  // MARK: No indexes: RequestSet full scans and SQLite without indexes.
  for (store, c) in [(RequestSet(memory), Contender.memoryScan), (RequestSet(log), Contender.logScan)] {
    try fetch(&byName, c) { try store.filter(\.name == nameKeys[$0]).fetch() }
    try fetch(&byKey, c) { try store.filter("name", value: nameKeys[$0]).fetch() }
    try fetch(&byFormat, c) { try store.filter("name == %@", nameKeys[$0]).fetch() }
    try count(&nameCount, c) { store.filter(\.name == nameKeys[$0]).count }
    try count(&keyCountRow, c) { store.filter("name", value: nameKeys[$0]).count }
    try fetch(&range, c) {
      try store.filter("weight", .greaterThanOrEqual, lowWeights[$0]).filter("weight", .lessThan, lowWeights[$0] + 10).fetch()
    }
    try fetch(&between, c) { try store.filter("weight BETWEEN {%@, %@}", lowWeights[$0], lowWeights[$0] + 9.95).fetch() }
    try fetch(&page, c) { _ in try store.sortBy(\.age).offset(offset).limit(pageSize).fetch() }
    // Scenarios 4 and 5a have no index by definition: these are their RequestSet figures.
    let plain: Contender = c == .memoryScan ? .memory : .log
    try count(&ageCount, plain) { _ in store.filter(\.age > 30).count }
    try fetch(&topNoIndex, plain) { _ in try store.sortBy(\.age).limit(10).fetch() }
    topIndex.times[c] = topNoIndex.times[plain]
    topIndex.outputs[c] = topNoIndex.outputs[plain]
  }
  print("  RequestSet full scans measured (\(lap()))")

  let sqlRows = "SELECT id, name, species, age, weight, nickname, tags, ownerName, ownerCity FROM animal"
  let byNameSQL = sqlRows + " WHERE name = ?"
  let rangeSQL = sqlRows + " WHERE weight >= ? AND weight < ?"
  let countSQL = "SELECT COUNT(*) FROM animal WHERE age > 30"
  let nameCountSQL = "SELECT COUNT(*) FROM animal WHERE name = ?"
  let topSQL = sqlRows + " ORDER BY age, id LIMIT 10"
  let pageSQL = sqlRows + " ORDER BY age, id LIMIT \(pageSize) OFFSET \(offset)"
  try sql(&byName, .sqlite, byNameSQL) { [nameKeys[$0]] }
  try sql(&range, .sqlite, rangeSQL) { [lowWeights[$0], lowWeights[$0] + 10] }
  try sqlCount(&ageCount, .sqlite, countSQL)
  try sqlCount(&nameCount, .sqlite, nameCountSQL) { [nameKeys[$0]] }
  try sql(&topNoIndex, .sqlite, topSQL) { _ in [] }
  try sql(&page, .sqlite, pageSQL) { _ in [] }
  print("  SQLite without indexes measured (\(lap()))")

  // MARK: Baselines over the array.
  try fetch(&byID, .hand) { i in
    let k = idKeys[i]
    for a in animals where a.id == k { return [a] }
    return []
  }
  try fetch(&byID, .array) { i in let k = idKeys[i]; return animals.filter { $0.id == k } }
  try fetch(&byID, .foundation) { i in
    let k = idKeys[i]
    let p = #Predicate<Animal> { $0.id == k }
    return try animals.filter { try p.evaluate($0) }
  }
  try fetch(&byName, .hand) { i in
    let k = nameKeys[i]
    var out: [Animal] = []
    for a in animals where a.name == k { out.append(a) }
    return out
  }
  try fetch(&byName, .array) { i in let k = nameKeys[i]; return animals.filter { $0.name == k } }
  try fetch(&byName, .foundation) { i in
    let k = nameKeys[i]
    let p = #Predicate<Animal> { $0.name == k }
    return try animals.filter { try p.evaluate($0) }
  }
  try count(&nameCount, .hand) { i in
    let k = nameKeys[i]
    var c = 0
    for a in animals where a.name == k { c += 1 }
    return c
  }
  try count(&nameCount, .array) { i in let k = nameKeys[i]; return animals.filter { $0.name == k }.count }
  try fetch(&range, .hand) { i in
    let lo = lowWeights[i], hi = lowWeights[i] + 10
    var out: [Animal] = []
    for a in animals where a.weight >= lo && a.weight < hi { out.append(a) }
    return out
  }
  try fetch(&range, .array) { i in
    let lo = lowWeights[i], hi = lowWeights[i] + 10
    return animals.filter { $0.weight >= lo && $0.weight < hi }
  }
  try fetch(&range, .foundation) { i in
    let lo = lowWeights[i], hi = lowWeights[i] + 10
    let p = #Predicate<Animal> { $0.weight >= lo && $0.weight < hi }
    return try animals.filter { try p.evaluate($0) }
  }
  try count(&ageCount, .hand) { _ in
    var c = 0
    for a in animals where a.age > 30 { c += 1 }
    return c
  }
  try count(&ageCount, .array) { _ in animals.filter { $0.age > 30 }.count }
  try count(&ageCount, .foundation) { _ in
    let p = #Predicate<Animal> { $0.age > 30 }
    return try animals.filter { try p.evaluate($0) }.count
  }
  try fetch(&topNoIndex, .hand) { _ in
    // A stable top 10: ties keep array order.
    var best: [Animal] = []
    best.reserveCapacity(11)
    for a in animals where best.count < 10 || a.age < best[best.count - 1].age {
      var j = best.count
      while j > 0 && best[j - 1].age > a.age { j -= 1 }
      best.insert(a, at: j)
      if best.count > 10 { best.removeLast() }
    }
    return best
  }
  try fetch(&topNoIndex, .array) { _ in Array(animals.sorted(by: byAge).prefix(10)) }
  try fetch(&topNoIndex, .foundation) { _ in
    Array(animals.sorted(using: SortDescriptor(\Animal.age)).prefix(10))
  }
  try fetch(&page, .hand) { _ in
    // Sort positions, not records, with the position as the tie-break; copy out the page.
    var order = Array(animals.indices)
    order.sort { animals[$0].age != animals[$1].age ? animals[$0].age < animals[$1].age : $0 < $1 }
    return order[offset..<(offset + pageSize)].map { animals[$0] }
  }
  try fetch(&page, .array) { _ in Array(animals.sorted(by: byAge).dropFirst(offset).prefix(pageSize)) }
  try fetch(&page, .foundation) { _ in
    Array(animals.sorted(using: SortDescriptor(\Animal.age)).dropFirst(offset).prefix(pageSize))
  }
  for c in [Contender.hand, .array, .foundation] {
    topIndex.times[c] = topNoIndex.times[c]
    topIndex.outputs[c] = topNoIndex.outputs[c]
    // Scenarios 7 and 8 do the work of scenario 2.
    byKey.times[c] = byName.times[c]
    byFormat.times[c] = byName.times[c]
    byKey.outputs[c] = byName.outputs[c]
    byFormat.outputs[c] = byName.outputs[c]
  }
  print("  array baselines measured (\(lap()))")

  // MARK: Indexes on name, weight and age everywhere.
  var indexing: [String] = []
  for key in ["name", "weight", "age"] {
    try memory.createIndex(key)
    indexing.append("MemoryStore \(key) \(lap())")
    try log.createIndex(key)
    indexing.append("LogStore \(key) \(lap())")
    try dbq.write { try $0.execute(sql: "CREATE INDEX animal_\(key) ON animal(\(key))") }
    indexing.append("SQLite \(key) \(lap())")
  }

  for (store, c) in [(RequestSet(memory), Contender.memory), (RequestSet(log), Contender.log)] {
    try fetch(&byID, c) { try store.filter(\.id == idKeys[$0]).fetch() }
    try fetch(&byName, c) { try store.filter(\.name == nameKeys[$0]).fetch() }
    try fetch(&byKey, c) { try store.filter("name", value: nameKeys[$0]).fetch() }
    try fetch(&byFormat, c) { try store.filter("name == %@", nameKeys[$0]).fetch() }
    try count(&nameCount, c) { store.filter(\.name == nameKeys[$0]).count }
    try count(&keyCountRow, c) { store.filter("name", value: nameKeys[$0]).count }
    try fetch(&range, c) {
      try store.filter("weight", .greaterThanOrEqual, lowWeights[$0]).filter("weight", .lessThan, lowWeights[$0] + 10).fetch()
    }
    try fetch(&between, c) { try store.filter("weight BETWEEN {%@, %@}", lowWeights[$0], lowWeights[$0] + 9.95).fetch() }
    try fetch(&topIndex, c) { _ in try store.sortBy(\.age).limit(10).fetch() }
    try fetch(&page, c) { _ in try store.sortBy(\.age).offset(offset).limit(pageSize).fetch() }
  }
  print("  RequestSet with indexes measured (\(lap()))")

  try sql(&byID, .sqliteIndexed, sqlRows + " WHERE id = ?") { [idKeys[$0]] }
  try sql(&byName, .sqliteIndexed, byNameSQL) { [nameKeys[$0]] }
  try sql(&range, .sqliteIndexed, rangeSQL) { [lowWeights[$0], lowWeights[$0] + 10] }
  try sqlCount(&ageCount, .sqliteIndexed, countSQL)
  try sqlCount(&nameCount, .sqliteIndexed, nameCountSQL) { [nameKeys[$0]] }
  try sql(&topNoIndex, .sqliteIndexed, topSQL) { _ in [] }
  try sql(&page, .sqliteIndexed, pageSQL) { _ in [] }
  topIndex.times[.sqlite] = topNoIndex.times[.sqlite]
  topIndex.outputs[.sqlite] = topNoIndex.outputs[.sqlite]
  topIndex.times[.sqliteIndexed] = topNoIndex.times[.sqliteIndexed]
  topIndex.outputs[.sqliteIndexed] = topNoIndex.outputs[.sqliteIndexed]
  for c in [Contender.hand, .array, .foundation, .sqlite, .sqliteIndexed] {
    between.times[c] = range.times[c]
    between.outputs[c] = range.outputs[c]
  }
  for c in [Contender.hand, .array, .sqlite, .sqliteIndexed] {
    keyCountRow.times[c] = nameCount.times[c]
    keyCountRow.outputs[c] = nameCount.outputs[c]
  }
  for c in [Contender.sqlite, .sqliteIndexed] {
    byKey.times[c] = byName.times[c]
    byFormat.times[c] = byName.times[c]
    byKey.outputs[c] = byName.outputs[c]
    byFormat.outputs[c] = byName.outputs[c]
  }
  print("  SQLite with indexes measured (\(lap()))")

  // MARK: Targets.
  func faster(_ a: Double?, _ b: Double?) -> Bool { (a ?? .infinity) < (b ?? 0) }
  func mark(_ ok: Bool) -> String { ok ? "met" : "**missed**" }
  func speedup(_ slow: Double?, _ quick: Double?) -> Double { (slow ?? 0) / (quick ?? .infinity) }
  func logVersus(_ row: inout QueryRow, _ baseline: Contender) {
    let ok = faster(row[.log], row[baseline])
    row.target = "Log faster than \(baseline.title)"
    row.verdict = mark(ok)
  }
  logVersus(&byID, .sqliteIndexed)
  do {
    let memScan = speedup(byName[.memoryScan], byName[.memory]), logScan = speedup(byName[.logScan], byName[.log])
    let beatsMem = faster(byName[.memory], byName[.sqliteIndexed]), beatsLog = faster(byName[.log], byName[.sqliteIndexed])
    byName.target = "at 1M: ≥1000× faster than a full scan; Memory and Log faster than SQLite + index"
    let scanPart = n == 1_000_000 ? "scan: Mem \(mark(memScan >= 1000)), Log \(mark(logScan >= 1000)); " : ""
    byName.verdict = scanPart + "vs SQLite + index: Mem \(mark(beatsMem)), Log \(mark(beatsLog))"
  }
  logVersus(&range, .sqliteIndexed)
  logVersus(&between, .sqliteIndexed)
  ageCount.target = "Memory within 1.2× of the hand loop; Log faster than SQLite (no index)"
  ageCount.verdict =
    "Mem \(mark((ageCount[.memory] ?? .infinity) <= 1.2 * (ageCount[.hand] ?? 0))), "
    + "Log \(mark(faster(ageCount[.log], ageCount[.sqlite])))"
  topNoIndex.target = "≥10× faster than sorted().prefix(10); Log faster than SQLite (no index)"
  topNoIndex.verdict =
    "Mem \(mark(speedup(topNoIndex[.array], topNoIndex[.memory]) >= 10)), Log \(mark(speedup(topNoIndex[.array], topNoIndex[.log]) >= 10)); "
    + "vs SQLite: Log \(mark(faster(topNoIndex[.log], topNoIndex[.sqlite])))"
  logVersus(&topIndex, .sqliteIndexed)
  logVersus(&page, .sqliteIndexed)
  logVersus(&byKey, .sqliteIndexed)
  logVersus(&byFormat, .sqliteIndexed)

  nameCount.target = "(extra) index ÷ full scan without the fetch"
  keyCountRow.target = nameCount.target
  nameCount.verdict = "Log \(mark(faster(nameCount[.log], nameCount[.sqliteIndexed]))) vs SQLite + index"
  keyCountRow.verdict = "Log \(mark(faster(keyCountRow[.log], keyCountRow[.sqliteIndexed]))) vs SQLite + index"
  let rows = [byID, byName, nameCount, range, between, ageCount, topNoIndex, topIndex, page, byKey, keyCountRow, byFormat]
  if only != nil { return rows }

  print("\n### Queries, indexes and the planner (issue 5) at \(n) records\n")
  print("Per operation. Indexes on name, weight and age (none for 4 and 5a); \"no index\" is the same store before createIndex.\n")
  let heads = Contender.allCases.map(\.title) + [
    "Mem ÷ hand loop", "Log ÷ SQLite + index", "Log ÷ SQLite", "index ÷ full scan (Mem / Log)", "target", "met?",
  ]
  print("| scenario | " + heads.joined(separator: " | ") + " |")
  print("|---|" + String(repeating: "---:|", count: Contender.allCases.count + 4) + "---|---|")
  for row in rows {
    var cells = [row.scenario] + Contender.allCases.map { perOpText(row[$0]) + (row.once.contains($0) ? " †" : "") }
    cells.append(ratioText(row[.memory], row[.hand]))
    cells.append(ratioText(row[.log], row[.sqliteIndexed]))
    cells.append(ratioText(row[.log], row[.sqlite]))
    if row[.memoryScan] != nil && row.scenario != topNoIndex.scenario && row.scenario != topIndex.scenario {
      let m = speedup(row[.memoryScan], row[.memory]), l = speedup(row[.logScan], row[.log])
      cells.append(String(format: "%.0f× / %.0f× faster", m, l))
    } else {
      cells.append("—")
    }
    cells += [row.target, row.verdict]
    print("| " + cells.joined(separator: " | ") + " |")
  }
  print("\nBuild: " + build.joined(separator: ", ") + ". Indexing: " + indexing.joined(separator: ", ") + ".")

  // Every contender must have returned the same records (or count) for the first keys.
  func groups(_ out: [Int]) -> [[Int]] { out.split(separator: -1, omittingEmptySubsequences: false).dropLast().map(Array.init) }
  for row in rows {
    guard let reference = row.outputs[.hand].map(groups) else { continue }
    for (c, out) in row.outputs.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
      let mine = groups(out)
      let pairs = zip(mine, reference)
      if pairs.allSatisfy({ $0 == $1 }) { continue }
      let same = pairs.allSatisfy { $0.sorted() == $1.sorted() }
      print(
        "  \(same ? "note" : "⚠︎ MISMATCH"): \(row.scenario): \(c.title) returned "
          + "\(same ? "the same records in another order" : "different results"): "
          + "\(mine.first?.prefix(8) ?? []) vs \(reference.first?.prefix(8) ?? [])")
    }
  }
  if rows.contains(where: { !$0.once.isEmpty }) { print("\n† timed once: a single call took more than 3 s.") }

  print("\nPlans (explain()) with the indexes:\n")
  print("```")
  let k = nameKeys[0], w = lowWeights[0]
  for (name, set) in [("MemoryStore", RequestSet(memory)), ("LogStore", RequestSet(log))] {
    print("-- \(name)")
    print(set.filter(\.id == idKeys[0]).explain())
    print(set.filter("id", value: idKeys[0]).explain())
    print(set.filter(\.name == k).explain())
    print(set.filter("name", value: k).explain())
    print(set.filter("name == %@", k).explain())
    print(set.filter("weight", .greaterThanOrEqual, w).filter("weight", .lessThan, w + 10).explain())
    print(set.filter("weight BETWEEN {%@, %@}", w, w + 9.95).explain())
    print(set.filter(\.age > 30).explain())
    print(set.sortBy(\.age).limit(10).explain())
    print(set.sortBy(\.age).offset(offset).limit(pageSize).explain())
  }
  print("```")
  return rows
}
