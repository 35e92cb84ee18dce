import Foundation
import RequestSet
import Testing

/// `update`, `delete`, `upsert` and `import --upsert`.
@Suite struct EditingTests {
  @Test func updateSetsJSONValuesOnTheMatchingRecords() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run(
      "update", log, "species == 'Cow'", "--set", "age=4", "--set", #"name="Daisy II""#,
      "--set", "owner.city=Bergen", "--set", "weight=600.0", "--unset", "nickname")
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "updated 1 record in \(log)\n")
    let daisy = try LogStore<Pet>(path: log, options: .init(readOnly: true)).fetch(id: 2)
    #expect(daisy?.age == 4)
    #expect(daisy?.name == "Daisy II")
    #expect(daisy?.owner?.city == "Bergen")
    #expect(daisy?.weight == 600.0)
    #expect(
      try Tool.run("query", log, "id == 2", "--values", "weight", "--format", "csv").stdout
        == "weight\n600.0\n")
    let none = try Tool.run("update", log, "species == 'Cat'", "--set", "age=1")
    #expect(none.stdout == "updated 0 records in \(log)\n")
  }

  @Test func updateAndDeleteNeedAFilterOrAll() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run("delete", log)
    #expect(r.status == 2)
    #expect(
      r.stderr.hasPrefix("Error: Give a filter (\"species == 'Cow'\") or --all to delete every record."),
      "\(r)")
    let id = try Tool.run("update", log, "--all", "--set", "id=9")
    #expect(id.status == 2)
    #expect(id.stderr.contains("--set cannot change the id"), "\(id)")
  }

  @Test func deleteRemovesTheMatchingRecordsInOneCommit() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run("delete", log, "age >= 5")
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "deleted 2 records from \(log) (1 record now)\n")
    #expect(try Tool.run("query", log, "--values", "id", "--format", "csv").stdout == "id\n1\n")
    #expect(try Tool.run("history", log, "--format", "csv").stdout.split(separator: "\n").count == 3)
    #expect(try Tool.run("delete", log, "--all").stdout == "deleted 1 record from \(log) (0 records now)\n")
  }

  @Test func upsertReplacesStoredRecordsAndInsertsNewOnes() throws {
    let dir = try freshDirectory()
    let log = dir + "/zoo.rslog"
    try write(
      "{\"id\":1,\"name\":\"Micky\",\"age\":3}\n{\"id\":2,\"name\":\"Daisy\",\"age\":7}\n",
      to: dir + "/a.jsonl")
    #expect(try Tool.run("import", log, "--from", dir + "/a.jsonl").status == 0)
    try write(
      "{\"id\":2,\"name\":\"Daisy\",\"age\":8}\n{\"id\":3,\"name\":\"Rex\",\"age\":5}\n", to: dir + "/a.jsonl"
    )
    let again = try Tool.run("import", log, "--from", dir + "/a.jsonl")
    #expect(again.status == 1)
    #expect(
      again.stderr.contains(
        "line 1: its id 2 is already stored in \(log) (use --upsert to replace stored records)"))
    let r = try Tool.run("upsert", log, "--from", dir + "/a.jsonl")
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "inserted 1 record and replaced 1 in \(log) (3 records now)\n")
    #expect(try Tool.run("query", log, "--values", "age", "--format", "csv").stdout == "age\n3\n8\n5\n")
    let flag = try Tool.run("import", log, "--upsert", "--from", dir + "/a.jsonl")
    #expect(flag.stdout == "inserted 0 records and replaced 2 in \(log) (3 records now)\n", "\(flag)")
  }
  @Test func upsertOnAKeyReplacesTheRecordWithThatValueAndKeepsItsID() throws {
    let dir = try freshDirectory()
    let log = dir + "/people.rslog"
    try write("email,name,visits\na@x,Ann,1\nb@x,Bo,2\n", to: dir + "/a.csv")
    #expect(try Tool.run("import", log, "--from", dir + "/a.csv").status == 0)  // ids 1 and 2, generated
    try write("email,name,visits\nb@x,Bob,5\nc@x,Cy,1\n", to: dir + "/b.csv")
    // The input's records get generated ids 3 and 4; Bob's match keeps the stored id 2.
    let r = try Tool.run("upsert", log, "--on", "email", "--from", dir + "/b.csv")
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "inserted 1 record and replaced 1 in \(log) (3 records now)\n")
    #expect(
      try Tool.run("query", log, "--values", "id", "email", "name", "visits", "--format", "csv").stdout
        == "id,email,name,visits\n1,a@x,Ann,1\n2,b@x,Bob,5\n4,c@x,Cy,1\n")
    // One commit per batch: the import's, then the upsert's.
    #expect(try Tool.run("history", log, "--format", "csv").stdout.split(separator: "\n").count == 3)

    try write("email,name,visits\nd@x,Di,1\nd@x,Dee,2\n", to: dir + "/c.csv")
    let twice = try Tool.run("upsert", log, "--on", "email", "--from", dir + "/c.csv")
    #expect(twice.status != 0)
    #expect(twice.stderr.contains("The batch holds two records with email == \"d@x\""), "\(twice)")
    #expect(try Tool.run("query", log, "--values", "id", "--format", "csv").stdout == "id\n1\n2\n4\n")
  }
}
