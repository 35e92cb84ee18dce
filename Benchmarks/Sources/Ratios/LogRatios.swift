import BenchmarkSupport
import Foundation
import GRDB
import RequestSet

#if canImport(Glibc)
  import Glibc
#endif

/// A scratch directory for the log and database files.
let scratch: String = {
  let dir = FileManager.default.temporaryDirectory.path + "/requestset-ratios-\(getpid())"
  try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  return dir
}()

func remove(_ path: String, _ suffixes: [String]) {
  for s in suffixes { try? FileManager.default.removeItem(atPath: path + s) }
}

func logRows(_ animals: [Animal]) throws -> [Row] {
  var rows: [Row] = []
  let runs = 5

  // The record codec against Foundation's JSON, one record at a time.
  let sample = Array(animals.prefix(100_000))
  var codec = BinaryRecordCodec()
  var binaries: [[UInt8]] = []
  var jsons: [Data] = []
  let encoder = JSONEncoder(), decoder = JSONDecoder()
  let binaryEncode = try median(runs: runs) {
    var c = BinaryRecordCodec()
    binaries = try sample.map { try c.encode($0) }
    codec = c
  }
  let jsonEncode = try median(runs: runs) { jsons = try sample.map { try encoder.encode($0) } }
  let binaryDecode = try median(runs: runs) { for b in binaries { keep(try codec.decode(Animal.self, from: b)) } }
  let jsonDecode = try median(runs: runs) { for j in jsons { keep(try decoder.decode(Animal.self, from: j)) } }
  rows.append(Row("encode 100,000 records", binaryEncode, "JSONEncoder", jsonEncode, target: "5x faster"))
  rows.append(Row("decode 100,000 records", binaryDecode, "JSONDecoder", jsonDecode, target: "5x faster"))
  let binaryBytes = binaries.reduce(0) { $0 + $1.count } + codec.fieldNames.reduce(0) { $0 + $1.utf8.count + 2 }
  let jsonBytes = jsons.reduce(0) { $0 + $1.count }
  var size = Row("encoded size of 100,000 records", Double(binaryBytes), "JSON", Double(jsonBytes), target: "at most 0.6x")
  size.unit = "bytes"
  rows.append(size)

  // One batch into a fresh log against one SQLite transaction.
  let logPath = scratch + "/animals.rslog"
  func freshLog() throws -> LogStore<Animal> {
    remove(logPath, ["", ".lock"])
    return try LogStore<Animal>(path: logPath)
  }
  let sqlitePath = scratch + "/animals.sqlite"
  func freshDatabase() throws -> DatabaseQueue {
    remove(sqlitePath, ["", "-journal", "-wal", "-shm"])
    let db = try DatabaseQueue(path: sqlitePath)
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
  let logInsert = try median(runs: 3, warmUp: false) { try freshLog().insert(contentsOf: animals) }
  let sqlInsert = try median(runs: 3, warmUp: false) { keep(try freshDatabase()) }
  rows.append(Row("insert all in one batch", logInsert, "SQLite, one transaction", sqlInsert, target: "at least as fast"))

  // Reopen (replay the log) against reading the same file sequentially.
  try freshLog().insert(contentsOf: animals)
  let reopen = try median(runs: runs) { keep(try LogStore<Animal>(path: logPath)) }
  let plainRead = median(runs: runs) {
    let fd = open(logPath, O_RDONLY)
    let chunk = 1 << 20
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
    var total = 0
    while true {
      let r = read(fd, buffer, chunk)
      if r <= 0 { break }
      total += r
    }
    buffer.deallocate()
    close(fd)
    keep(total)
  }
  rows.append(Row("reopen the log", reopen, "read(2) of the file", plainRead, target: "within 3x"))

  // A filtered count without an index.
  let store = try LogStore<Animal>(path: logPath)
  let db = try freshDatabase()
  let logCount = median(runs: runs) { keep(RequestSet(store).filter("age", value: 30).count) }
  let sqlCount = try median(runs: runs) {
    keep(try db.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM animal WHERE age = 30") })
  }
  rows.append(Row("filter(\"age\", value: 30).count", logCount, "SQLite COUNT(*) WHERE, full scan", sqlCount, target: "at least as fast"))
  let logTyped = median(runs: 3) { keep(RequestSet(store).filter(\.age == 30).count) }
  rows.append(Row("filter(\\.age == 30).count (typed, on the field twin)", logTyped, "SQLite COUNT(*) WHERE, full scan", sqlCount, target: "-"))
  return rows
}
