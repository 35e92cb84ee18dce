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
  var rows = try codecRows(Array(animals.prefix(100_000)))

  // One batch into a fresh log against one SQLite transaction.
  let logPath = scratch + "/animals.rslog"
  let sqlitePath = scratch + "/animals.sqlite"
  let logInsert = try median(runs: 3, warmUp: false) { try freshLog(logPath).insert(contentsOf: animals) }
  let sqlInsert = try median(runs: 3, warmUp: false) { keep(try queryDatabase(sqlitePath, animals)) }
  rows.append(Row("insert all in one batch", logInsert, "SQLite, one transaction", sqlInsert, target: "at least as fast"))

  // Reopen (replay the log) against reading the same file sequentially.
  try freshLog(logPath).insert(contentsOf: animals)
  rows.append(try reopenRow(logPath))

  // A filtered count without an index.
  let store = try LogStore<Animal>(path: logPath)
  let db = try queryDatabase(sqlitePath, animals)
  let logCount = median(runs: 5) { keep(RequestSet(store).filter("age", value: 30).count) }
  let sqlCount = try median(runs: 5) {
    keep(try db.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM animal WHERE age = 30") })
  }
  rows.append(Row("filter(\"age\", value: 30).count", logCount, "SQLite COUNT(*) WHERE, full scan", sqlCount, target: "at least as fast"))
  let logTyped = median(runs: 3) { keep(RequestSet(store).filter(\.age == 30).count) }
  rows.append(Row("filter(\\.age == 30).count (typed, on the field twin)", logTyped, "SQLite COUNT(*) WHERE, full scan", sqlCount, target: "-"))
  return rows
}

/// An empty log at `path`, replacing any file there.
func freshLog(_ path: String) throws -> LogStore<Animal> {
  remove(path, ["", ".lock"])
  return try LogStore<Animal>(path: path)
}

/// The record codec against Foundation's JSON, one record at a time, over `sample`:
/// encode, decode and the encoded size.
func codecRows(_ sample: [Animal], encodeTarget: String = "5x faster", decodeTarget: String = "5x faster") throws -> [Row] {
  let runs = 5
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
  let count = grouped(sample.count)
  var rows: [Row] = []
  rows.append(Row("encode \(count) records", binaryEncode, "JSONEncoder", jsonEncode, target: encodeTarget))
  rows.append(Row("decode \(count) records", binaryDecode, "JSONDecoder", jsonDecode, target: decodeTarget))
  let binaryBytes = binaries.reduce(0) { $0 + $1.count } + codec.fieldNames.reduce(0) { $0 + $1.utf8.count + 2 }
  let jsonBytes = jsons.reduce(0) { $0 + $1.count }
  var size = Row("encoded size of \(count) records", Double(binaryBytes), "JSON", Double(jsonBytes), target: "at most 0.6x")
  size.unit = "bytes"
  rows.append(size)
  return rows
}

/// Reopening the log at `path` (replaying it) against a sequential `read(2)` of the file.
func reopenRow(_ path: String, runs: Int = 5) throws -> Row {
  let reopen = try median(runs: runs) { keep(try LogStore<Animal>(path: path)) }
  let plainRead = median(runs: runs) { keep(readWholeFile(path)) }
  return Row("reopen the log", reopen, "read(2) of the file", plainRead, target: "within 3x")
}

/// Reads a file front to back in 1 MiB chunks and returns its size: the floor for any
/// open that must look at every byte.
func readWholeFile(_ path: String) -> Int {
  let fd = open(path, O_RDONLY)
  guard fd >= 0 else { return 0 }
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
  return total
}
