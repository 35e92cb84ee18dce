import BenchmarkSupport
import Foundation
import GRDB
import RequestSet
import RequestSetSQLite

// Issue 23 ("Relationships"): queries and prefetches across relations, each timed beside
// its baseline in this run.
//
//   swift run -c release --package-path Benchmarks Ratios 1000000 issue23
//
// Row 1 filters N animals across their to-one owner (N / 10 owners, 1 in 10 in Oslo) on a
// MemoryStore and a LogStore, beside a dictionary join written by hand. Rows 2 and 3 run on
// SQLiteStore (one file, a table per type) at N / 10 animals and N / 100 owners, with about
// 3 visits per animal: row 2 prefetches N / 100 animals with their owner and visits beside
// GRDB's `including(optional:)` / `including(all:)` on a GRDB-native schema of the same
// data; row 3 counts the animals of Oslo's owners beside the same count in direct SQL on
// those plain tables (one statement: the owners' condition is a subquery), and, for
// reference, with the owners in a file of their own (the semi-join: two statements).

// MARK: GRDB records (the RequestSet records, BOwner, BAnimal and BVisit, are in
// RelationRecords.swift, which does not import GRDB: both modules name a `Record`)

/// The same data as GRDB records, on GRDB's own tables (`owners`, `animals`, `visits`).
struct GOwner: Codable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "owners"
  var id: Int
  var name: String
  var city: String
}

struct GAnimal: Codable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "animals"
  static let owner = belongsTo(GOwner.self, key: "owner", using: ForeignKey(["ownerID"]))
  static let visits = hasMany(GVisit.self, key: "visits", using: ForeignKey(["animalID"]))
  var id: Int
  var name: String
  var age: Int
  var ownerID: Int?
}

struct GVisit: Codable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "visits"
  var id: Int
  var animalID: Int
  var cost: Double
  var day: Int
}

/// An animal with its owner and visits, as GRDB decodes an `including` request.
struct GAnimalInfo: Decodable, FetchableRecord {
  var animal: GAnimal
  var owner: GOwner?
  var visits: [GVisit]

  enum CodingKeys: String, CodingKey { case owner, visits }

  init(from decoder: any Decoder) throws {
    animal = try GAnimal(from: decoder)
    let container = try decoder.container(keyedBy: CodingKeys.self)
    owner = try container.decodeIfPresent(GOwner.self, forKey: .owner)
    visits = try container.decode([GVisit].self, forKey: .visits)
  }
}

// MARK: Data

private let relationCities = ["Oslo", "Bergen", "Paris", "Lyon", "Rome", "Turin", "Porto", "Lisbon", "Ghent", "Bern"]

/// `count` owners with ids 0..<count, one in ten in Oslo.
func makeBOwners(_ count: Int, seed: UInt64 = 23) -> [BOwner] {
  var rng = SeededRandom(seed: seed)
  return (0..<count).map { id in
    BOwner(id: id, name: "owner\(id)", city: relationCities[Int(rng.next() % 10)])
  }
}

/// `count` animals with ids 0..<count, each owned by a random one of `owners` owners
/// (1 in 20 has none).
func makeBAnimals(_ count: Int, owners: Int, seed: UInt64 = 24) -> [BAnimal] {
  var rng = SeededRandom(seed: seed)
  return (0..<count).map { id in
    let none = rng.next() % 20 == 0
    let owner = Int(rng.next() % UInt64(owners))
    return BAnimal(id: id, name: "animal\(id)", age: Int(rng.next() % 100), ownerID: none ? nil : owner)
  }
}

/// `3 * animals` visits, each of a random animal.
func makeBVisits(animals: Int, seed: UInt64 = 25) -> [BVisit] {
  var rng = SeededRandom(seed: seed)
  return (0..<(3 * animals)).map { id in
    BVisit(
      id: id, animalID: Int(rng.next() % UInt64(animals)), cost: Double(rng.next() % 50_000) / 100,
      day: Int(rng.next() % 3650))
  }
}

// MARK: The section

func issue23Tables(_ n: Int) throws {
  let ownerCount = max(10, n / 10)
  progress("Building \(grouped(n)) animals and \(grouped(ownerCount)) owners…")
  let owners = makeBOwners(ownerCount)
  let animals = makeBAnimals(n, owners: ownerCount)
  var rows = try crossFilterRows(animals, owners)

  let sqlAnimalCount = max(1_000, n / 10)
  let sqlOwnerCount = max(100, n / 100)
  let prefetchCount = max(100, n / 100)
  let sqlite = try sqliteRelationRows(animals: sqlAnimalCount, owners: sqlOwnerCount, prefetch: prefetchCount)
  rows += sqlite.rows
  printTable("Issue 23: relationships", rows)
  print("\n`explain()` of the SQLiteStore count:\n")
  print(sqlite.explanation)
}

/// Row 1: `filter("owner.city", value: "Oslo").count` (and its typed form) on a
/// MemoryStore and a LogStore, beside a hand-written join over the arrays.
private func crossFilterRows(_ animals: [BAnimal], _ owners: [BOwner]) throws -> [Row] {
  let n = animals.count
  let size = "\(grouped(n)) animals, \(grouped(owners.count)) owners"
  var rows: [Row] = []

  // The baseline: the dictionary join a Swift programmer writes.
  let byID = Dictionary(uniqueKeysWithValues: owners.map { ($0.id, $0) })
  func handJoin() -> Int {
    var c = 0
    for a in animals {
      if let id = a.ownerID, let owner = byID[id], owner.city == "Oslo" { c += 1 }
    }
    return c
  }
  // A faster hand loop: the semi-join RequestSet runs (the Oslo owners' ids, then a set test).
  func handSemiJoin() -> Int {
    var oslo = Set<Int>()
    for o in owners where o.city == "Oslo" { oslo.insert(o.id) }
    var c = 0
    for a in animals {
      if let id = a.ownerID, oslo.contains(id) { c += 1 }
    }
    return c
  }
  let expected = handJoin()
  guard handSemiJoin() == expected else { throw RelationBenchFailure("the two hand joins disagree") }

  progress("  issue 23: cross-relation filter, MemoryStore…")
  let memoryGraph = try RecordGraph(MemoryStore(owners), MemoryStore(animals), MemoryStore<BVisit>())
  try checkCount(memoryGraph, expected)
  let set = memoryGraph.records(BAnimal.self)
  let hand = median { keep(handJoin()) }
  let semi = median { keep(handSemiJoin()) }
  let stringKey = median { keep(set.filter("owner.city", value: "Oslo").count) }
  let typed = median { keep(set.filter(BAnimal.owner.city == "Oslo").count) }
  rows.append(
    issue13Row(
      "`filter(\"owner.city\", value: \"Oslo\").count`, MemoryStore, \(size) → \(grouped(expected))", stringKey,
      "hand join: `[Int: Owner]` lookup per animal", hand, limit: 1.5, target: "≤ 1.5×"))
  rows.append(
    issue13Row(
      "typed `filter(BAnimal.owner.city == \"Oslo\").count`, MemoryStore", typed,
      "hand join: `[Int: Owner]` lookup per animal", hand, limit: 1.5, target: "≤ 1.5×"))
  rows.append(
    issue13Row(
      "(for reference) the same string-key count, MemoryStore", stringKey,
      "hand semi-join: `Set` of Oslo's owner ids, then a set test per animal", semi, limit: nil, target: "—"))

  progress("  issue 23: cross-relation filter, LogStore…")
  let ownersLog = scratch + "/issue23-owners.rslog"
  let animalsLog = scratch + "/issue23-animals.rslog"
  let visitsLog = scratch + "/issue23-visits.rslog"
  defer { for p in [ownersLog, animalsLog, visitsLog] { remove(p, ["", ".lock"]) } }
  for p in [ownersLog, animalsLog, visitsLog] { remove(p, ["", ".lock"]) }
  let ownerStore = try LogStore<BOwner>(path: ownersLog)
  let animalStore = try LogStore<BAnimal>(path: animalsLog)
  let visitStore = try LogStore<BVisit>(path: visitsLog)
  defer {
    ownerStore.close()
    animalStore.close()
    visitStore.close()
  }
  try ownerStore.insert(contentsOf: owners)
  try animalStore.insert(contentsOf: animals)
  let logGraph = try RecordGraph(ownerStore, animalStore, visitStore)
  try checkCount(logGraph, expected)
  let logSet = logGraph.records(BAnimal.self)
  let logString = median(runs: 5) { keep(logSet.filter("owner.city", value: "Oslo").count) }
  let logTyped = median(runs: 5) { keep(logSet.filter(BAnimal.owner.city == "Oslo").count) }
  let hand2 = median(runs: 5) { keep(handJoin()) }
  rows.append(
    issue13Row(
      "`filter(\"owner.city\", value: \"Oslo\").count`, LogStore, \(size)", logString,
      "hand join over arrays in memory", hand2, limit: nil, target: "(report)"))
  rows.append(
    issue13Row(
      "typed `filter(BAnimal.owner.city == \"Oslo\").count`, LogStore", logTyped,
      "hand join over arrays in memory", hand2, limit: nil, target: "(report)"))
  return rows
}

private func checkCount(_ graph: RecordGraph, _ expected: Int) throws {
  let set = graph.records(BAnimal.self)
  let a = set.filter("owner.city", value: "Oslo").count
  let b = set.filter(BAnimal.owner.city == "Oslo").count
  guard a == expected, b == expected else {
    throw RelationBenchFailure("RequestSet counts \(a) and \(b) animals in Oslo, the hand join \(expected)")
  }
}

struct RelationBenchFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Rows 2 and 3, on one SQLiteStore file (a table per type) and one GRDB file of plain tables.
private func sqliteRelationRows(animals animalCount: Int, owners ownerCount: Int, prefetch: Int) throws
  -> (rows: [Row], explanation: String)
{
  let owners = makeBOwners(ownerCount, seed: 33)
  let animals = makeBAnimals(animalCount, owners: ownerCount, seed: 34)
  let visits = makeBVisits(animals: animalCount, seed: 35)
  let storePath = scratch + "/issue23-store.sqlite"
  let grdbPath = scratch + "/issue23-grdb.sqlite"
  let suffixes = ["", "-journal", "-wal", "-shm"]
  remove(storePath, suffixes)
  remove(grdbPath, suffixes)
  defer {
    remove(storePath, suffixes)
    remove(grdbPath, suffixes)
  }
  let size = "\(grouped(animalCount)) animals, \(grouped(ownerCount)) owners, \(grouped(visits.count)) visits"

  progress("  issue 23: SQLite files (\(size))…")
  let ownerStore = try SQLiteStore<BOwner>(path: storePath, table: "owners")
  let animalStore = try SQLiteStore<BAnimal>(path: storePath, table: "animals")
  let visitStore = try SQLiteStore<BVisit>(path: storePath, table: "visits")
  defer {
    ownerStore.close()
    animalStore.close()
    visitStore.close()
  }
  try ownerStore.insert(contentsOf: owners)
  try animalStore.insert(contentsOf: animals)
  try visitStore.insert(contentsOf: visits)
  // The indexes a user adds for the relations' keys (the peer has the same ones).
  try animalStore.createIndex("ownerID")
  try visitStore.createIndex("animalID")
  let graph = try RecordGraph(ownerStore, animalStore, visitStore)

  let grdb = try DatabaseQueue(path: grdbPath)
  try grdb.write { db in
    try db.execute(
      sql: """
        CREATE TABLE owners(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
        CREATE TABLE animals(id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL,
          ownerID INTEGER REFERENCES owners(id));
        CREATE TABLE visits(id INTEGER PRIMARY KEY, animalID INTEGER NOT NULL REFERENCES animals(id),
          cost REAL NOT NULL, day INTEGER NOT NULL);
        CREATE INDEX animals_ownerID ON animals(ownerID);
        CREATE INDEX visits_animalID ON visits(animalID);
        """)
    for o in owners { try GOwner(id: o.id, name: o.name, city: o.city).insert(db) }
    for a in animals { try GAnimal(id: a.id, name: a.name, age: a.age, ownerID: a.ownerID).insert(db) }
    for v in visits { try GVisit(id: v.id, animalID: v.animalID, cost: v.cost, day: v.day).insert(db) }
  }
  try grdb.writeWithoutTransaction { try $0.execute(sql: "ANALYZE") }
  defer { try? grdb.close() }

  var rows: [Row] = []

  // Row 2: prefetch `prefetch` animals with their owner and visits.
  progress("  issue 23: prefetch…")
  func ours() throws -> [Related<BAnimal>] {
    try graph.records(BAnimal.self).limit(prefetch).fetch(including: BAnimal.owner, BAnimal.visits)
  }
  func peer() throws -> [GAnimalInfo] {
    try grdb.read { db in
      try GAnimal.limit(prefetch).including(optional: GAnimal.owner).including(all: GAnimal.visits)
        .asRequest(of: GAnimalInfo.self).fetchAll(db)
    }
  }
  let (oursRows, peerRows) = (try ours(), try peer())
  let oursShape = (
    oursRows.count, oursRows.filter { $0[BAnimal.owner] != nil }.count, oursRows.reduce(0) { $0 + $1[BAnimal.visits].count },
    oursRows.reduce(0) { $0 + $1.id }
  )
  let peerShape = (
    peerRows.count, peerRows.filter { $0.owner != nil }.count, peerRows.reduce(0) { $0 + $1.visits.count },
    peerRows.reduce(0) { $0 + $1.animal.id }
  )
  guard oursShape == peerShape else {
    throw RelationBenchFailure("prefetch: RequestSet reads \(oursShape) (animals, owners, visits, id sum), GRDB \(peerShape)")
  }
  progress(
    "  prefetch reads \(grouped(oursShape.0)) animals, \(grouped(oursShape.1)) owners and \(grouped(oursShape.2)) visits on both sides"
  )
  let prefetchOurs = try median(runs: 5) { keep(try ours()) }
  let prefetchPeer = try median(runs: 5) { keep(try peer()) }
  rows.append(
    issue13Row(
      "`limit(\(grouped(prefetch))).fetch(including: BAnimal.owner, BAnimal.visits)`, SQLiteStore (\(size)) → "
        + "\(grouped(oursShape.1)) owners, \(grouped(oursShape.2)) visits",
      prefetchOurs,
      "GRDB 7: `limit(\(grouped(prefetch))).including(optional: owner).including(all: visits)`, plain tables, FKs, index on animalID",
      prefetchPeer, limit: 1.0, target: "≤ 1×"))

  // Row 3: the cross-relation count, pushed to SQLite, beside the same count in one SQL statement.
  progress("  issue 23: cross-relation count on SQLite…")
  let countSQL = "SELECT count(*) FROM animals WHERE ownerID IN (SELECT id FROM owners WHERE city = 'Oslo')"
  let set = graph.records(BAnimal.self)
  let expected = try grdb.read { try Int.fetchOne($0, sql: countSQL) ?? -1 }
  try checkCount(graph, expected)
  let countOurs = median(runs: 7) { keep(set.filter("owner.city", value: "Oslo").count) }
  let countTyped = median(runs: 7) { keep(set.filter(BAnimal.owner.city == "Oslo").count) }
  let countPeer = try median(runs: 7) { keep(try grdb.read { try Int.fetchOne($0, sql: countSQL) }) }
  rows.append(
    issue13Row(
      "`filter(\"owner.city\", value: \"Oslo\").count`, SQLiteStore (index on ownerID) → \(grouped(expected))", countOurs,
      "direct SQL through GRDB: `\(countSQL)`, plain tables, index on ownerID", countPeer, limit: 1.2,
      target: "≤ 1.2×"))
  rows.append(
    issue13Row(
      "(for reference) typed `filter(BAnimal.owner.city == \"Oslo\").count`, SQLiteStore", countTyped,
      "the same direct SQL", countPeer, limit: nil, target: "—"))

  // Row 3, the owners in a file of their own: the semi-join (the owners' ids read, then
  // bound), which every store in one file ran before issue 36's subqueries.
  progress("  issue 23: cross-relation count, owners in another file…")
  let otherPath = scratch + "/issue23-owners.sqlite"
  remove(otherPath, suffixes)
  defer { remove(otherPath, suffixes) }
  let otherOwners = try SQLiteStore<BOwner>(path: otherPath, table: "owners")
  defer { otherOwners.close() }
  try otherOwners.insert(contentsOf: owners)
  let twoFiles = try RecordGraph(otherOwners, animalStore, visitStore)
  try checkCount(twoFiles, expected)
  let twoFileSet = twoFiles.records(BAnimal.self)
  let countTwoFiles = median(runs: 7) { keep(twoFileSet.filter("owner.city", value: "Oslo").count) }
  rows.append(
    issue13Row(
      "(for reference) the same count, owners in another SQLite file: semi-join, 2 statements", countTwoFiles,
      "the same direct SQL", countPeer, limit: nil, target: "—"))

  // Issue 36: a to-many `@sum` compared with a value, in the statement (a grouped subquery
  // whose groups `rs_agg` reduces with the engine's operator), beside the same count in one
  // SQL statement; and, for reference, the visits in another file (each animal's sum read
  // in one query, then `id IN {…}`: what one file ran before). The bound is no sum of cents,
  // so no sum sits on it whatever order the doubles add in.
  progress("  issue 36: to-many @sum count on SQLite…")
  let sumFormat = "visits.@sum.cost > 1000.005"
  let sumSQL =
    "SELECT count(*) FROM animals WHERE id IN (SELECT animalID FROM visits GROUP BY animalID HAVING sum(cost) > 1000.005)"
  let sumExpected = try grdb.read { try Int.fetchOne($0, sql: sumSQL) ?? -1 }
  let otherVisits = try SQLiteStore<BVisit>(path: otherPath, table: "visits")
  defer { otherVisits.close() }
  try otherVisits.insert(contentsOf: visits)
  try otherVisits.createIndex("animalID")
  let visitsApart = try RecordGraph(ownerStore, animalStore, otherVisits).records(BAnimal.self)
  let counts = [("one file", set.filter(sumFormat).count), ("two files", visitsApart.filter(sumFormat).count)]
  for (label, counted) in counts where counted != sumExpected {
    throw RelationBenchFailure(
      "RequestSet (\(label)) counts \(counted) animals for \(sumFormat), the SQL \(sumExpected)")
  }
  let sumOurs = median(runs: 5) { keep(set.filter(sumFormat).count) }
  let sumApart = median(runs: 5) { keep(visitsApart.filter(sumFormat).count) }
  let sumPeer = try median(runs: 5) { keep(try grdb.read { try Int.fetchOne($0, sql: sumSQL) }) }
  rows.append(
    issue13Row(
      "`filter(\"\(sumFormat)\").count`, SQLiteStore (index on animalID), one file → \(grouped(sumExpected))", sumOurs,
      "direct SQL through GRDB: `\(sumSQL)`, plain tables, index on animalID", sumPeer, limit: nil, target: "—"))
  rows.append(
    issue13Row(
      "(for reference) the same count, visits in another SQLite file: each animal's sum read, then bound", sumApart,
      "the same direct SQL", sumPeer, limit: nil, target: "—"))

  return (rows, set.filter("owner.city", value: "Oslo").explain())
}
