import Foundation
import RequestSet
import Testing

/// Aggregates, sorts, tables, `dump --format json`, `compact --keep-history`.
@Suite struct OutputTests {
  @Test func aggregatesAndGroupsWithCounts() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let one = try Tool.run(
      "query", log, "--sum", "age", "--avg", "weight", "--min", "age", "--max", "name", "--format", "csv")
    #expect(one.status == 0, "\(one)")
    #expect(
      one.stdout == "count,sum:age,avg:weight,min:age,max:name\n3,15,210.41666666666666,3,\"Rex, Jr.\"\n",
      "\(one)")
    let groups = try Tool.run(
      "query", log, "age > 0", "--group-by", "species", "--max", "age", "--format", "csv")
    #expect(groups.stdout == "species,count,max:age\nCow,1,7\nDog,1,5\nMouse,1,3\n", "\(groups)")
    let counts = try Tool.run("query", log, "--group-by", "owner.city")
    #expect(counts.stdout.hasPrefix("owner.city  count\n"), "\(counts)")
  }

  @Test func sortKeysMayBeSeparatedByCommas() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run("query", log, "--sort", "species:desc,id", "--values", "id", "--format", "csv")
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "id\n1\n3\n2\n")
  }

  @Test func pipedTablesAreNeverCutAndNumbersNeverTruncated() throws {
    let dir = try freshDirectory()
    let log = dir + "/wide.rslog"
    let long = String(repeating: "word ", count: 30)
    try write(
      "{\"id\":1,\"text\":\"\(long)\",\"amount\":886.123456789,\"other\":\"\(long)\"}\n",
      to: dir + "/in.jsonl")
    #expect(try Tool.run("import", log, "--from", dir + "/in.jsonl").status == 0)
    let piped = try Tool.run("query", log)
    #expect(piped.stdout.contains("886.123456789"), "\(piped)")
    #expect(piped.stdout.contains(long.trimmingCharacters(in: .whitespaces)), "\(piped)")
    #expect(piped.stdout.split(separator: "\n").contains { $0.count > 300 })
    let narrow = try Tool.run("query", log, environment: ["COLUMNS": "60"])
    #expect(narrow.stdout.contains("886.123456789"), "\(narrow)")
    #expect(narrow.stdout.split(separator: "\n").allSatisfy { $0.count <= 60 }, "\(narrow)")
  }

  @Test func dumpWritesAJSONArray() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run("dump", log, "--format", "json")
    #expect(r.status == 0, "\(r)")
    let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]]
    #expect(parsed?.map { $0["id"] as? Int } == [1, 2, 3])
    #expect(r.stdout.hasPrefix("[\n{\"id\":1,"))
  }

  @Test func compactSaysWhatHistoryItDiscardsAndKeepsWhatItIsTold() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    for age in 1...4 {
      #expect(try Tool.run("update", log, "id == 1", "--set", "age=\(age)").status == 0)
    }
    // Versions: 1 the pets, 2–5 the updates (ages 1 to 4).
    let keep = try Tool.run("compact", log, "--keep-history", "3")
    #expect(keep.status == 0, "\(keep)")
    #expect(
      keep.stdout.hasSuffix(
        "history: discarded 2 commits (versions 1–2); kept 3 (--as-of reads versions 3–5); keep more with --keep-history N\n"
      ),
      "\(keep)")
    #expect(
      try Tool.run("query", log, "id == 1", "--values", "age", "--as-of", "3", "--format", "csv").stdout
        == "age\n2\n")
    let all = try Tool.run("compact", log)
    #expect(
      all.stdout.hasSuffix(
        "history: discarded 2 commits (versions 3–4); kept 1 (--as-of reads version 5); keep more with --keep-history N\n"
      ), "\(all)")
    let gone = try Tool.run("query", log, "--as-of", "3")
    #expect(gone.status == 1)
    #expect(gone.stderr.contains("requestset compact --keep-history N"), "\(gone)")
    #expect(!gone.stderr.contains("LogStoreOptions"), "\(gone)")
  }
}

/// `FILE.keys`: the key order `import` keeps beside the log, and what happens when a
/// program writes keys it does not list.
@Suite struct KeyOrderFileTests {
  @Test func aCSVDumpFailsRatherThanLeaveOutAKeyTheListLacks() throws {
    let dir = try freshDirectory()
    let log = dir + "/zoo.rslog"
    try write("{\"id\":1,\"name\":\"Rex\"}\n", to: dir + "/a.jsonl")
    #expect(try Tool.run("import", log, "--from", dir + "/a.jsonl").status == 0)
    #expect(try Tool.run("dump", log, "--format", "csv").stdout == "id,name\n1,Rex\n")
    // A program writes a key, then the log happens to have the size FILE.keys records.
    let store = try LogStore<DynamicRecord>(path: log, options: .init())  // a writer: DynamicRecord's default is read-only
    try store.save(DynamicRecord(id: .int(1), fields: ["nick": .string("R")]))
    store.close()
    var order = try JSONSerialization.jsonObject(with: bytes(log + ".keys")) as! [String: Any]
    order["logSize"] = try bytes(log).count
    try JSONSerialization.data(withJSONObject: order).write(to: URL(fileURLWithPath: log + ".keys"))
    let r = try Tool.run("dump", log, "--format", "csv")
    #expect(r.status == 1)
    #expect(
      r.stderr.contains(
        "does not list every key of \(log) (a program wrote to it), so the CSV above has no column for nick."),
      "\(r)")
    try FileManager.default.removeItem(atPath: log + ".keys")
    #expect(try Tool.run("dump", log, "--format", "csv").stdout == "id,nick\n1,R\n")
  }
}
