import Foundation
import Testing

/// The README's example sessions replay as printed from the files in `examples/`
/// (`animals.jsonl`, `more.jsonl`, `flights.csv`), run in a scratch folder they are copied to.
@Suite struct ExampleSessionTests {
  /// The repository's `examples/` folder.
  static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("examples").path

  /// A scratch folder holding a copy of every example file.
  func scratch() throws -> String {
    let dir = try freshDirectory()
    for name in try FileManager.default.contentsOfDirectory(atPath: Self.examples) {
      try FileManager.default.copyItem(atPath: Self.examples + "/" + name, toPath: dir + "/" + name)
    }
    return dir
  }

  /// Runs the tool in `dir` (paths relative to it) and checks standard output.
  func expect(_ dir: String, _ arguments: [String], prints expected: String, status: Int32 = 0) throws {
    let isFile = { (a: String) in a.hasSuffix(".rslog") || a.hasSuffix(".jsonl") || a.hasSuffix(".csv") }
    let r = try Tool.run(arguments.map { isFile($0) ? dir + "/" + $0 : $0 })
    let shown = r.stdout.replacingOccurrences(of: dir + "/", with: "")
    #expect(r.status == status, "\(arguments): \(r)")
    #expect(shown == expected, "\(arguments): \(r)")
  }

  @Test func theZooSessionReplays() throws {
    let dir = try scratch()
    let head = try String(contentsOfFile: dir + "/animals.jsonl", encoding: .utf8).split(separator: "\n").prefix(2)
    #expect(
      head.joined(separator: "\n")
        == """
        {"id": 1, "name": "Micky", "species": "Mouse", "age": 3, "weight": 0.1, "owner": {"name": "Walt", "city": "Burbank"}, "tags": ["small"]}
        {"id": 2, "name": "Daisy", "species": "Cow", "age": 7, "weight": 600.0, "owner": {"name": "Ann", "city": "Oslo"}, "tags": ["farm", "big"]}
        """)
    try expect(
      dir, ["import", "zoo.rslog", "--from", "animals.jsonl"],
      prints: "imported 4 records into zoo.rslog (4 records now)\n")
    try expect(
      dir, ["query", "zoo.rslog", "age > 2", "--sort", "age:desc", "--values", "name", "species", "owner.city"],
      prints: """
        name   species  owner.city
        -----  -------  ----------
        Daisy  Cow      Oslo
        Rex    Dog      null
        Micky  Mouse    Burbank
        (3 records)

        """)
    try expect(
      dir, ["query", "zoo.rslog", "species == 'Cow'", "--format", "jsonl"],
      prints: """
        {"id":2,"name":"Daisy","species":"Cow","age":7,"weight":600.0,"owner":{"name":"Ann","city":"Oslo"},"tags":["farm","big"]}
        {"id":4,"name":"Bella","species":"Cow","age":2,"weight":450.0,"owner":{"name":"Ann","city":"Oslo"},"tags":[]}

        """)
    try expect(
      dir, ["query", "zoo.rslog", "--group-by", "species", "--avg", "weight", "--max", "age"],
      prints: """
        species  count  avg:weight  max:age
        -------  -----  ----------  -------
        Cow      2      525.0       7
        Dog      1      30.5        5
        Mouse    1      0.1         3
        (3 groups)

        """)
    try expect(
      dir, ["update", "zoo.rslog", "name == 'Rex'", "--set", "age=6", "--set", "owner.city=Bergen"],
      prints: "updated 1 record in zoo.rslog\n")
    try expect(
      dir, ["delete", "zoo.rslog", "species == 'Mouse'"], prints: "deleted 1 record from zoo.rslog (3 records now)\n")
    try expect(
      dir, ["dump", "zoo.rslog", "--format", "csv"],
      prints: """
        id,name,species,age,weight,owner.name,owner.city,tags
        2,Daisy,Cow,7,600.0,Ann,Oslo,"[""farm"",""big""]"
        3,Rex,Dog,6,30.5,,Bergen,[]
        4,Bella,Cow,2,450.0,Ann,Oslo,[]

        """)
    try expect(dir, ["index", "zoo.rslog", "create", "species"], prints: "created index on species\n")
    try expect(
      dir, ["verify", "zoo.rslog"],
      prints: "zoo.rslog: 11 intact frames, 3 records, 450 bytes\nclean: every frame and record checks out\n")
    let handle = try #require(FileHandle(forWritingAtPath: dir + "/zoo.rslog"))
    handle.seekToEndOfFile()
    handle.write(Data([0x01, 0x02]))
    try handle.close()
    try expect(
      dir, ["verify", "zoo.rslog"],
      prints: """
        zoo.rslog: 11 intact frames, 3 records, 452 bytes
        interrupted write: offset 450, 2 bytes at the end
        recovery modes (`requestset recover FILE --mode MODE`):
          truncateTornTail: keeps 3 records; cuts the file at offset 450 (the cut bytes are kept in zoo.rslog.damaged-450)
          failOnAnyDamage: refuses to open
          stopAtFirstDamage: keeps 3 records; cuts the file at offset 450 (the cut bytes are kept in zoo.rslog.damaged-450)
          skipDamagedFrames: keeps 3 records; cuts the file at offset 450 (the cut bytes are kept in zoo.rslog.damaged-450)

        """, status: 1)
    try expect(
      dir, ["recover", "zoo.rslog", "--mode", "truncateTornTail"],
      prints: "3 records from 11 frames (452 bytes, mode truncateTornTail); torn tail of 2 bytes cut at offset 450; "
        + "2 bytes from offset 450 kept in zoo.rslog.damaged-450\n")
  }

  @Test func theFlightsSessionReplays() throws {
    let dir = try scratch()
    #expect(try String(contentsOfFile: dir + "/flights.csv", encoding: .utf8) == "year,carrier,arr_delay\n2013,UA,11\n2013,AA,NA\n")
    try expect(
      dir, ["import", "flights.rslog", "--from", "flights.csv", "--null", "NA"],
      prints: "imported 2 records into flights.rslog (2 records now)\n")
    try expect(
      dir, ["query", "flights.rslog", "--sort", "arr_delay:desc,id"],
      prints: """
        id  year  carrier  arr_delay
        --  ----  -------  ---------
        1   2013  UA       11
        2   2013  AA
        (2 records)

        """)
  }

  @Test func theHistorySessionReplays() throws {
    let dir = try scratch()
    try expect(
      dir, ["import", "zoo.rslog", "--from", "animals.jsonl"],
      prints: "imported 4 records into zoo.rslog (4 records now)\n")
    try expect(
      dir, ["import", "zoo.rslog", "--from", "more.jsonl"], prints: "imported 1 record into zoo.rslog (5 records now)\n")
    let history = try Tool.run("history", dir + "/zoo.rslog")
    let lines = history.stdout.split(separator: "\n").map(String.init)
    #expect(lines.count == 5 && lines[0] == "version  time                      recordsChanged", "\(history)")
    #expect(lines.count == 5 && lines[2].hasPrefix("1        20") && lines[2].hasSuffix("  4"), "\(history)")
    #expect(lines.count == 5 && lines[3].hasPrefix("2        20") && lines[3].hasSuffix("  1"), "\(history)")
    try expect(dir, ["query", "zoo.rslog", "species == 'Cow'", "--count"], prints: "3\n")
    try expect(dir, ["query", "zoo.rslog", "species == 'Cow'", "--count", "--as-of", "1"], prints: "2\n")
    try expect(
      dir, ["compact", "zoo.rslog"],
      prints: """
        compacted zoo.rslog: 398 → 381 bytes, 5 records
        history: discarded 1 commit (version 1); kept 1 (--as-of reads version 2); keep more with --keep-history N

        """)
  }
}
