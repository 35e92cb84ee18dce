import Foundation
import RequestSet
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A record type the tool has never seen: it reads the log without it.
struct Pet: Record, Equatable {
  struct Owner: Codable, Equatable, Sendable {
    var name: String
    var city: String
  }
  var id: Int
  var name: String
  var species: String
  var age: Int
  var weight: Double
  var nickname: String?
  var tags: [String]
  var owner: Owner?
  var born: Date
  var price: Decimal
}

let pets: [Pet] = [
  Pet(
    id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.25, nickname: "Mick", tags: ["small"],
    owner: .init(name: "Walt", city: "Burbank"), born: Date(timeIntervalSinceReferenceDate: 100), price: 9.5),
  Pet(
    id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600.5, tags: ["farm", "big"],
    owner: .init(name: "Ann", city: "Oslo"), born: Date(timeIntervalSinceReferenceDate: 200), price: 1200),
  Pet(
    id: 3, name: "Rex, Jr.", species: "Dog", age: 5, weight: 30.5, nickname: "\"R\"", tags: [],
    born: Date(timeIntervalSinceReferenceDate: -50), price: Decimal(string: "0.01")!),
]

/// A log of `pets` written by their own type, with an index on species.
func petLog(in dir: String, name: String = "pets.rslog") throws -> String {
  let path = dir + "/" + name
  let store = try LogStore<Pet>(path: path)
  try store.insert(contentsOf: pets)
  try store.createIndex("species")
  store.close()
  return path
}

func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

func flipByte(_ path: String, at offset: Int) throws {
  var data = try bytes(path)
  data[offset] ^= 0xFF
  try data.write(to: URL(fileURLWithPath: path))
}

@Suite struct ToolReadingTests {
  @Test func infoShowsKeysKindsCountsAndIndexes() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run("info", log)
    #expect(r.status == 0, "\(r)")
    #expect(r.stderr.isEmpty, "quiet when piped: \(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains("format      version 1, generation 1"))
    #expect(lines.contains { $0.hasPrefix("records     3 (") })
    #expect(lines.contains("indexes     species"))
    #expect(lines.contains("status      clean"))
    #expect(lines.contains { $0.hasPrefix("  nickname ") && $0.hasSuffix("  2") && $0.contains("string") })
    #expect(lines.contains { $0.hasPrefix("  owner.city ") && $0.hasSuffix("  2") })
    #expect(lines.contains { $0.hasPrefix("  price ") && $0.contains("decimal") })
  }

  @Test func queryFiltersSortsAndWindowsWithTheLibrarysGrammar() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run(
      "query", log, "age >= 3 AND weight < 1000", "--sort", "age:desc", "--limit", "2", "--format", "jsonl")
    #expect(r.status == 0, "\(r)")
    let ids = r.stdout.split(separator: "\n").map { $0.prefix(8) }
    #expect(ids == [#"{"id":2,"#, #"{"id":3,"#])
    #expect(
      try Tool.run("query", log, "--sort", "name:desc", "--offset", "1", "--format", "jsonl").stdout
        .split(separator: "\n").map { $0.prefix(8) } == [#"{"id":1,"#, #"{"id":2,"#])
    #expect(try Tool.run("query", log, "species IN {'Cow', 'Dog'}", "--count").stdout == "2\n")
    let plan = try Tool.run("query", log, "species == 'Cow'", "--explain")
    #expect(plan.stdout.contains("index lookup on species"), "\(plan)")
  }

  @Test func queryWritesExactJSONAndCSV() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let json = try Tool.run("query", log, "id == 3", "--format", "json")
    #expect(
      json.stdout == """
        [
        {"id":3,"age":5,"born":-50.0,"name":"Rex, Jr.","nickname":"\\"R\\"","price":0.01,"species":"Dog","tags":[],"weight":30.5}
        ]

        """, "\(json)")
    let csv = try Tool.run("query", log, "--values", "name", "owner.city", "nickname", "--format", "csv")
    #expect(
      csv.stdout
        == "name,owner.city,nickname\nMicky,Burbank,Mick\nDaisy,Oslo,\n\"Rex, Jr.\",,\"\"\"R\"\"\"\n",
      "\(csv)")
  }

  @Test func theTableFitsTheWidthItIsGiven() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    for width in [30, 60, 200] {
      let r = try Tool.run("query", log, environment: ["COLUMNS": "\(width)"])
      #expect(r.status == 0, "\(r)")
      let lines = r.stdout.split(separator: "\n")
      #expect(lines.allSatisfy { $0.count <= width }, "width \(width):\n\(r.stdout)")
      #expect(lines.contains("(3 records)"))
    }
    // Piped, with no COLUMNS: as wide as the cells, every column shown.
    let piped = try Tool.run("query", log)
    #expect(piped.stdout.split(separator: "\n").contains { $0.count > 80 }, "not cut: \(piped.stdout)")
    #expect(piped.stdout.hasPrefix("id  age  born   name"), "\(piped.stdout)")
    #expect(!piped.stdout.contains("…"), "\(piped.stdout)")
  }

  @Test func errorsPrintTheLibrarysMessageAndExitNonZero() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let bad = try Tool.run("query", log, "age >")
    #expect(bad.status == 1)
    #expect(bad.stdout.isEmpty)
    #expect(bad.stderr.hasPrefix("requestset: Expected a key or a value after \">\""), "\(bad)")
    let unknown = try Tool.run("query", log, "--sort", "nmae")
    #expect(unknown.status == 1)
    #expect(unknown.stderr.contains("Unknown key \"nmae\""), "\(unknown)")
    let negative = try Tool.run("query", log, "--limit=-1")
    #expect(negative.status == 2)
    #expect(negative.stderr.contains("--limit is -1; give 0 or more records"), "\(negative)")
  }

  @Test func foreignFilesAreRefusedAndLeftAlone() throws {
    let dir = try freshDirectory()
    let text = dir + "/notes.txt"
    try Data("id,name\n1,Rex\n".utf8).write(to: URL(fileURLWithPath: text))
    for command in ["info", "verify", "query", "dump", "compact"] {
      let r = try Tool.run(command, text)
      #expect(r.status == 1, "\(command): \(r)")
      #expect(
        r.stderr.contains(
          "is not a readable RequestSet log: the file does not start with the RequestSet log signature"),
        "\(command): \(r)")
    }
    #expect(try bytes(text) == Data("id,name\n1,Rex\n".utf8))
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["notes.txt"])
    let missing = try Tool.run("query", dir + "/missing.rslog")
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("There is no log at"), "\(missing)")
    let folder = try Tool.run("info", dir)
    #expect(folder.status == 1)
    #expect(folder.stderr.contains("directory"), "\(folder)")
  }

  @Test func dumpWritesEveryRecordInStoreOrder() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let jsonl = try Tool.run("dump", log)
    #expect(jsonl.status == 0)
    #expect(jsonl.stderr.isEmpty)
    #expect(
      jsonl.stdout.split(separator: "\n").first
        == #"{"id":1,"age":3,"born":100.0,"name":"Micky","nickname":"Mick","owner":{"city":"Burbank","name":"Walt"},"price":9.5,"species":"Mouse","tags":["small"],"weight":0.25}"#
    )
    #expect(jsonl.stdout.split(separator: "\n").count == 3)
    let csv = try Tool.run("dump", log, "--format", "csv")
    #expect(
      csv.stdout.split(separator: "\n").first
        == "id,age,born,name,nickname,owner.city,owner.name,price,species,tags,weight")
    #expect(
      csv.stdout.split(separator: "\n")[1]
        == #"1,3,100.0,Micky,Mick,Burbank,Walt,9.5,Mouse,"[""small""]",0.25"#)
  }
}

@Suite struct ToolWritingTests {
  @Test(arguments: ["jsonl", "csv"])
  func dumpThenImportKeepsTheLogReadableByItsType(_ format: String) throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let dumped = try Tool.run("dump", log, "--format", format)
    let data = dir + "/pets." + format
    try Data(dumped.stdout.utf8).write(to: URL(fileURLWithPath: data))
    let copy = dir + "/copy.rslog"
    let r = try Tool.run("import", copy, "--from", data)
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "imported 3 records into \(copy) (3 records now)\n")
    #expect(r.stderr.isEmpty)
    let typed = try LogStore<Pet>(path: copy, options: .init(readOnly: true))
    #expect(try RequestSet(typed).sortBy("id").fetch() == pets)
  }

  @Test func aBadImportReportsEveryBadLineAndWritesNothing() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let before = try bytes(log)
    let data = dir + "/new.jsonl"
    try Data(
      """
      {"id": 10, "name": "A"}
      {"id": 11, "name": "B"
      {"id": 12}

      {"id": 10, "name": "C"}
      {"name": "D"}
      [1, 2]
      {"id": 1, "name": "stored already"}

      """.utf8
    ).write(to: URL(fileURLWithPath: data))
    let r = try Tool.run("import", log, "--from", data)
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty)
    #expect(
      r.stderr == """
        requestset: \(data) has 5 bad lines; nothing was written:
          line 2: it is not valid JSON: an object's fields must be separated by commas and end with } (at byte 23)
          line 5: its id 10 is also the id on line 1
          line 6: it has no "id" field (the id key; see --id)
          line 7: it holds [1, 2], not a JSON object
          line 8: its id 1 is already stored in \(log) (use --upsert to replace stored records)
        Fix the lines and import again.

        """, "\(r)")
    #expect(try bytes(log) == before)
    // A new log is not created by a failed import either.
    let fresh = dir + "/fresh.rslog"
    #expect(try Tool.run("import", fresh, "--from", data).status == 1)
  }

  @Test func csvImportReadsTypesQuotesAndNestedColumns() throws {
    let dir = try freshDirectory()
    let data = dir + "/in.csv"
    try Data(
      "sku,name,owner.city,count,ok,tags\n7,\"Rex, Jr.\",Oslo,3,true,\"[\"\"a\"\"]\"\n8,\"0042\",,2.5,false,\n"
        .utf8
    )
    .write(to: URL(fileURLWithPath: data))
    let log = dir + "/in.rslog"
    let r = try Tool.run("import", log, "--from", data, "--id", "sku")
    #expect(r.status == 0, "\(r)")
    let dumped = try Tool.run("dump", log)
    #expect(
      dumped.stdout == """
        {"id":7,"sku":7,"name":"Rex, Jr.","owner":{"city":"Oslo"},"count":3,"ok":true,"tags":["a"]}
        {"id":8,"sku":8,"name":"0042","count":2.5,"ok":false}

        """, "\(dumped)")
    let ragged = dir + "/ragged.csv"
    try Data("id,name\n1,a\n2,b,c\n3,\"open\n".utf8).write(to: URL(fileURLWithPath: ragged))
    let bad = try Tool.run("import", dir + "/r.rslog", "--from", ragged)
    #expect(bad.status == 1)
    #expect(bad.stderr.contains("line 3: it has 3 cells where the header has 2"), "\(bad)")
    #expect(bad.stderr.contains("line 4: a quoted cell is never closed"), "\(bad)")
    #expect(!FileManager.default.fileExists(atPath: dir + "/r.rslog"))
  }

  @Test func progressShowsOnATerminalOnly() throws {
    let dir = try freshDirectory()
    let data = dir + "/in.jsonl"
    try Data(#"{"id": 1}"#.utf8).write(to: URL(fileURLWithPath: data))
    // script(1) runs the tool on a pseudo-terminal: standard error is a terminal there.
    let onTerminal = try Tool.run(
      "-q", "-e", "-c", "'\(Tool.path)' import '\(dir)/a.rslog' --from '\(data)'", "/dev/null",
      executable: "/usr/bin/script")
    #expect(onTerminal.status == 0, "\(onTerminal)")
    #expect(onTerminal.stdout.contains("\r\u{1B}[Kreading \(data): 0 rows (0%)"), "\(onTerminal)")
    let piped = try Tool.run("import", dir + "/b.rslog", "--from", data)
    #expect(piped.status == 0)
    #expect(piped.stderr.isEmpty, "\(piped)")
  }

  @Test func verifyReportsDamageAndRecoverKeepsWhatItCuts() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let clean = try Tool.run("verify", log)
    #expect(clean.status == 0, "\(clean)")
    #expect(clean.stdout.contains("clean: every frame and record checks out"))

    try flipByte(log, at: 100)  // inside the batch of inserts
    let damaged = try Tool.run("verify", log)
    #expect(damaged.status == 1, "\(damaged)")
    #expect(damaged.stdout.contains("damaged: offset "), "\(damaged)")
    #expect(damaged.stdout.contains(": checksum mismatch"))
    #expect(damaged.stdout.contains("  truncateTornTail: refuses to open\n"))
    #expect(damaged.stdout.contains("  skipDamagedFrames: keeps 0 records; rewrites the file"), "\(damaged)")
    // Reading refuses a damaged log, with the library's advice.
    let query = try Tool.run("query", log)
    #expect(query.status == 1)
    #expect(query.stderr.contains("recovery: .skipDamagedFrames"), "\(query)")

    let before = try bytes(log)
    let recovered = try Tool.run("recover", log, "--mode", "skipDamagedFrames")
    #expect(recovered.status == 0, "\(recovered)")
    #expect(recovered.stdout.contains("kept in \(log).damaged-0"), "\(recovered)")
    #expect(try bytes(log + ".damaged-0") == before)
    #expect(try Tool.run("verify", log).status == 0)
  }

  @Test func verifyReportsATornTailAndRecoverCutsIt() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let size = try bytes(log).count
    let handle = try #require(FileHandle(forWritingAtPath: log))
    handle.seekToEndOfFile()
    handle.write(Data([1, 2, 3, 4]))
    try handle.close()
    let r = try Tool.run("verify", log)
    #expect(r.status == 1)
    #expect(r.stdout.contains("interrupted write: offset \(size), 4 bytes at the end"), "\(r)")
    #expect(r.stdout.contains("  truncateTornTail: keeps 3 records; cuts the file at offset \(size)"), "\(r)")
    #expect(try Tool.run("query", log, "--count").stdout == "3\n", "a reader ignores the torn tail")
    let recovered = try Tool.run("recover", log, "--mode", "truncateTornTail")
    #expect(recovered.status == 0)
    #expect(try bytes(log + ".damaged-\(size)") == Data([1, 2, 3, 4]))
    #expect(try Tool.run("verify", log).status == 0)
  }

  @Test func compactReclaimsDeadSpace() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let store = try LogStore<Pet>(path: log, options: .init(autoCompactDeadRatio: nil))
    for i in 0..<20 {
      var p = pets[0]
      p.age = i
      try store.save(p)
    }
    store.close()
    let before = try bytes(log).count
    let r = try Tool.run("compact", log)
    #expect(r.status == 0, "\(r)")
    let after = try bytes(log).count
    #expect(after < before)
    #expect(
      r.stdout.hasPrefix("compacted \(log): \(before) → \(after) bytes, 3 records\nhistory: discarded "),
      "\(r)")
    #expect(try Tool.run("info", log).stdout.contains("format      version 1, generation 2"))
    #expect(try LogStore<Pet>(path: log).fetch(id: 1)?.age == 19)
  }

  @Test func indexesAreWrittenToTheLogForEveryReader() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    #expect(
      try Tool.run("index", log, "create", "name", "--unique").stdout == "created unique index on name\n")
    #expect(try Tool.run("index", log, "list").stdout == "species\nname (unique)\n")
    #expect(
      try LogStore<Pet>(path: log, options: .init(readOnly: true)).indexes.map(\.key) == ["species", "name"])
    #expect(try Tool.run("index", log, "drop", "species").status == 0)
    #expect(try Tool.run("index", log, "list").stdout == "name (unique)\n")
    let dup = try Tool.run("index", log, "create", "tags", "--unique")
    #expect(dup.status == 0 || dup.stderr.contains("requestset: "), "\(dup)")
    let clash = try Tool.run("index", log, "create", "species", "--unique")
    #expect(clash.status == 0, "three species, all distinct: \(clash)")
    let missing = try Tool.run("index", log, "drop", "age")
    #expect(missing.status == 1)
    #expect(missing.stderr == "requestset: \(log) has no index on age.\n")
  }

  /// Several keys make one composite index, listed, kept in the log and dropped by its keys.
  @Test func severalKeysMakeACompositeIndex() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    #expect(try Tool.run("index", log, "create", "species", "age").stdout == "created index on species, age\n")
    #expect(try Tool.run("index", log, "list").stdout == "species\nspecies, age\n")
    #expect(try Tool.run("info", log).stdout.contains("species, (species, age)"))
    #expect(
      try LogStore<Pet>(path: log, options: .init(readOnly: true)).indexes.map(\.keys) == [["species"], ["species", "age"]])
    let twice = try Tool.run("index", log, "create", "age", "age")
    #expect(twice.status == 1)
    #expect(twice.stderr.hasPrefix("requestset: "), "\(twice)")
    #expect(try Tool.run("index", log, "drop", "species", "age").stdout == "dropped the index on species, age\n")
    #expect(try Tool.run("index", log, "list").stdout == "species\n")
  }

  @Test func writingCommandsRefuseALockedLog() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let writer = try LogStore<Pet>(path: log)
    let r = try Tool.run("compact", log)
    #expect(r.status == 1)
    #expect(r.stderr.hasPrefix("requestset: "), "\(r)")
    #expect(try Tool.run("query", log, "--count").stdout == "3\n", "readers take no lock")
    writer.close()
  }

  @Test func followPrintsEachCommitThatChangesTheResultUntilInterrupted() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let follow = try RunningTool(["follow", log, "species == 'Cow'", "--interval", "20"])
    let first = follow.waitForLines(1)
    #expect(first.first?.hasPrefix(#"{"version":"#) == true, "\(first)")
    #expect(first.first?.contains(#""initial":true,"count":1,"inserted":[{"id":2,"#) == true, "\(first)")

    let writer = try LogStore<Pet>(path: log)
    var calf = pets[1]
    calf.id = 4
    calf.name = "Calf"
    try writer.insert(pets[0].with(id: 5))  // not a cow: changes nothing the query shows
    try writer.insert(calf)
    try writer.delete(id: 2)
    writer.close()
    var lines = follow.waitForLines(2)
    let deadline = Date().addingTimeInterval(30)
    while !lines.joined().contains(#""deleted":[2]"#) && Date() < deadline {
      lines = follow.waitForLines(lines.count + 1, seconds: 1)
    }
    #expect(lines.dropFirst().contains { $0.contains(#""name":"Calf""#) }, "\(lines)")
    #expect(lines.dropFirst().allSatisfy { !$0.contains(#""id":5"#) }, "\(lines)")
    #expect(lines.joined().contains(#""deleted":[2]"#), "\(lines)")

    kill(follow.process.processIdentifier, SIGINT)
    follow.process.waitUntilExit()
    #expect(follow.process.terminationReason == .exit)
    #expect(follow.process.terminationStatus == 130)
  }
}

extension Pet {
  func with(id: Int) -> Pet {
    var p = self
    p.id = id
    return p
  }
}

@Suite struct ToolHistoryTests {
  /// A log with three commits: the pets (version 1), Daisy's birthday (2), Micky deleted (3).
  func changingLog(in dir: String) throws -> String {
    let path = dir + "/history.rslog"
    let store = try LogStore<Pet>(path: path)
    try store.insert(contentsOf: pets)
    var daisy = pets[1]
    daisy.age = 8
    try store.save(daisy)
    _ = try store.delete(id: 1)
    store.close()
    return path
  }

  @Test func historyListsEveryReadableCommit() throws {
    let dir = try freshDirectory()
    let log = try changingLog(in: dir)
    let r = try Tool.run("history", log, "--format", "csv")
    #expect(r.status == 0, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first == "version,time,recordsChanged")
    #expect(lines.dropFirst().map { $0.split(separator: ",").first.map(String.init) } == ["1", "2", "3"])
    #expect(lines.dropFirst().map { $0.split(separator: ",").last.map(String.init) } == ["3", "1", "1"])
    // Every time is an ISO 8601 UTC time.
    #expect(lines.dropFirst().allSatisfy { $0.split(separator: ",")[1].hasSuffix("Z") }, "\(r)")
  }

  @Test func queryAsOfAVersionReadsThePast() throws {
    let dir = try freshDirectory()
    let log = try changingLog(in: dir)
    #expect(try Tool.run("query", log, "--count").stdout == "2\n")
    #expect(try Tool.run("query", log, "--count", "--as-of", "2").stdout == "3\n")
    let before = try Tool.run("query", log, "id == 2", "--values", "age", "--as-of", "1", "--format", "csv")
    #expect(before.stdout == "age\n7\n", "\(before)")
    let after = try Tool.run("query", log, "id == 2", "--values", "age", "--as-of", "2", "--format", "csv")
    #expect(after.stdout == "age\n8\n", "\(after)")
    // As of a time after every commit: the present.
    let now = try Tool.run("query", log, "--count", "--as-of-time", "2999-01-01T00:00:00Z")
    #expect(now.stdout == "2\n", "\(now)")
  }

  @Test func badAsOfReadsFailWithAMessage() throws {
    let dir = try freshDirectory()
    let log = try changingLog(in: dir)
    let tooNew = try Tool.run("query", log, "--as-of", "99")
    #expect(tooNew.status != 0)
    #expect(tooNew.stderr.contains("99"), "\(tooNew)")
    let tooOld = try Tool.run("query", log, "--as-of-time", "2000-01-01T00:00:00Z")
    #expect(tooOld.status != 0)
    #expect(!tooOld.stderr.isEmpty, "\(tooOld)")
    let garbled = try Tool.run("query", log, "--as-of-time", "yesterday")
    #expect(garbled.status != 0)
    #expect(garbled.stderr.contains("ISO 8601"), "\(garbled)")
  }
}
