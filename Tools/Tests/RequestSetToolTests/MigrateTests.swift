import Foundation
import RequestSet
import Testing

/// Records as version 1 of an app wrote them: `weight` an Int (or a Double), `city` at the
/// top level, a `nickname`, and a key with a blank.
let version1: [DynamicRecord] = [
  DynamicRecord(
    id: .int(1),
    fields: [
      "name": .string("Micky"), "weight": .int(3), "city": .string("Burbank"), "nickname": .string("Mick"),
      "first name": .string("M"),
    ]),
  DynamicRecord(
    id: .int(2), fields: ["name": .string("Daisy"), "weight": .int(600), "city": .string("Oslo"), "legs": .int(4)]),
  DynamicRecord(
    id: .int(3),
    fields: ["name": .string("Tweety"), "weight": .double(0.5), "legs": .int(2), "tags": .array([.string("bird")])]),
]

/// A plan bringing ``version1`` to version 3.
let planToVersion3 = """
  # version 1 → 3
  migration "2: kg, legs"
    rename weight weightKg
    convert weightKg Double        # Int → Double
    add legs 4
    move city address.city
    remove nickname

  migration "3: tags, names"
    add tags []
    rename "first name" firstName  # a key with a blank
    add owner {"name": "unknown", "since": 2.5}
    convert legs String
  """

/// What the plan makes of a version 1 record, computed in plain Swift.
func version3(_ record: DynamicRecord) -> DynamicRecord {
  var fields = record.fields
  // "2: kg, legs"
  if let weight = fields.removeValue(forKey: "weight") {
    if case .int(let kg) = weight { fields["weightKg"] = .double(Double(kg)) } else { fields["weightKg"] = weight }
  }
  if fields["legs"] == nil { fields["legs"] = .int(4) }
  if let city = fields.removeValue(forKey: "city") { fields["address"] = .object(["city": city]) }
  fields["nickname"] = nil
  // "3: tags, names"
  if fields["tags"] == nil { fields["tags"] = .array([]) }
  if let first = fields.removeValue(forKey: "first name") { fields["firstName"] = first }
  if fields["owner"] == nil {
    fields["owner"] = .object(["name": .string("unknown"), "since": .double(2.5)])
  }
  if case .int(let legs)? = fields["legs"] { fields["legs"] = .string(String(legs)) }
  return DynamicRecord(id: record.id, fields: fields)
}

/// A value as text that tells number kinds apart (`3` from `3.0`) and sorts object keys,
/// so two values compare as stored, not as numbers.
func exact(_ value: FieldValue) -> String {
  switch value {
  case .null: return "null"
  case .bool(let b): return "\(b)"
  case .int(let i): return "int(\(i))"
  case .uint(let u): return "uint(\(u))"
  case .double(let d): return "double(\(d))"
  case .decimal(let d): return "decimal(\(d))"
  case .string(let s): return s.debugDescription
  case .array(let items): return "[" + items.map(exact).joined(separator: ", ") + "]"
  case .object(let fields):
    return "{" + fields.keys.sorted().map { "\($0.debugDescription): \(exact(fields[$0]!))" }.joined(separator: ", ")
      + "}"
  }
}

/// A log of ``version1``, written by the library.
func version1Log(in dir: String, records: [DynamicRecord] = version1) throws -> String {
  let path = dir + "/animals.rslog"
  let store = try LogStore<DynamicRecord>(path: path, options: .init())
  try store.insert(contentsOf: records)
  store.close()
  return path
}

/// The log's records, in id order, as exact text.
func storedRecords(_ log: String) throws -> [String] {
  let store = try LogStore<DynamicRecord>(path: log)
  defer { store.close() }
  return try RequestSet(store).sortBy("id").fetch().map { exact($0.value) }
}

func appliedMigrations(_ log: String) throws -> [String] {
  let store = try LogStore<DynamicRecord>(path: log)
  defer { store.close() }
  return store.appliedMigrations
}

/// Writes a plan into `dir` and returns its path.
func plan(_ text: String, in dir: String, name: String = "plan.txt") throws -> String {
  let path = dir + "/" + name
  try write(text, to: path)
  return path
}

@Suite struct MigrateTests {
  @Test func migrateRunsEveryPendingMigrationAndRecordsItsName() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let r = try Tool.run("migrate", log, "--plan", try plan(planToVersion3, in: dir))
    #expect(r.status == 0, "\(r)")
    #expect(r.stderr.isEmpty, "\(r)")
    let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(
      Array(lines.prefix(3))
        == ["migrating \(log) (3 records): 2 pending migrations", #"  "2: kg, legs""#, #"  "3: tags, names""#],
      "\(r)")
    #expect(lines.count == 8, "\(r)")
    #expect(lines.dropFirst(3).first.map { $0.hasPrefix("ran 2 migrations on 3 records in ") && $0.hasSuffix(" s") } == true)
    #expect(Array(lines.dropFirst(4)) == ["applied (2):", #"  "2: kg, legs""#, #"  "3: tags, names""#, ""], "\(r)")

    #expect(try storedRecords(log) == version1.map { exact(version3($0).value) })
    #expect(try appliedMigrations(log) == ["2: kg, legs", "3: tags, names"])
  }

  @Test func listShowsAppliedAndPendingMigrationsAndChangesNothing() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let full = try plan(planToVersion3, in: dir)
    let fresh = try Tool.run("migrate", log, "--plan", full, "--list")
    #expect(fresh.status == 0, "\(fresh)")
    #expect(fresh.stdout == "applied: none\npending (2):\n  \"2: kg, legs\"\n  \"3: tags, names\"\n", "\(fresh)")

    let first = try plan(planToVersion3.components(separatedBy: "\n\n")[0], in: dir, name: "first.txt")
    #expect(try Tool.run("migrate", log, "--plan", first).status == 0)
    let before = try bytes(log)
    let list = try Tool.run("migrate", log, "--plan", full, "--list")
    #expect(list.status == 0, "\(list)")
    #expect(list.stdout == "applied (1):\n  \"2: kg, legs\"\npending (1):\n  \"3: tags, names\"\n", "\(list)")
    // A migration the log has run that the plan does not list is marked.
    let later = try plan("migration \"3: tags, names\"\n  add tags []\n", in: dir, name: "later.txt")
    let marked = try Tool.run("migrate", log, "--plan", later, "--list")
    #expect(
      marked.stdout == "applied (1):\n  \"2: kg, legs\"  (not in the plan)\npending (1):\n  \"3: tags, names\"\n",
      "\(marked)")
    // Without a plan, only what the log has run.
    #expect(try Tool.run("migrate", log, "--list").stdout == "applied (1):\n  \"2: kg, legs\"\n")
    #expect(try bytes(log) == before)
    #expect(try appliedMigrations(log) == ["2: kg, legs"])
  }

  @Test func aSecondRunFindsNothingPendingAndChangesNothing() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let path = try plan(planToVersion3, in: dir)
    #expect(try Tool.run("migrate", log, "--plan", path).status == 0)
    let before = try bytes(log)
    let again = try Tool.run("migrate", log, "--plan", path)
    #expect(again.status == 0, "\(again)")
    #expect(
      again.stdout
        == "nothing to migrate: \(log) has run all 2 of the plan's migrations\n"
        + "applied (2):\n  \"2: kg, legs\"\n  \"3: tags, names\"\n", "\(again)")
    #expect(try bytes(log) == before)
    #expect(try storedRecords(log) == version1.map { exact(version3($0).value) })
  }

  @Test func aFailingMigrationLeavesTheFileByteForByteUnchanged() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let before = try bytes(log)
    let files = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
    // The first migration would succeed; the second fails on the first record. Neither runs.
    let path = try plan(
      "migration \"2: kg\"\n  rename weight weightKg\nmigration \"3: names\"\n  convert name Int\n", in: dir)
    let r = try Tool.run("migrate", log, "--plan", path)
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.hasPrefix("migrating \(log) (3 records): 2 pending migrations\n"), "\(r)")
    #expect(
      r.stderr.hasPrefix(
        "requestset: The migration \"3: names\" failed on the record with id 1 at its step convert name to Int: "
          + "name holds \"Micky\""), "\(r)")
    #expect(r.stderr.contains("Fix the plan (or the record) and run `requestset migrate` again"), "\(r)")
    #expect(try bytes(log) == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == (files + ["plan.txt"]).sorted())
    #expect(try appliedMigrations(log) == [])
    #expect(try storedRecords(log) == version1.map { exact($0.value) })
  }

  @Test(arguments: [
    ("rename weight weightKg\n", "1:1: expected a line `migration NAME` before the first step, found the step \"rename\"."),
    (
      "migration \"2\"\n  renam weight kg\n",
      "2:3: expected a step (add, rename, move, remove, convert) or `migration NAME`, found \"renam\"."
    ),
    (
      "migration \"2\"\n  convert name Float  # no such type\n",
      "2:16: expected a type to convert to (Double, Int, String or array), found \"Float\"."
    ),
    (
      "migration \"2\"\n  add legs four\n",
      "2:12: expected a JSON value for records without the key (4, 2.5, \"text\", true, null, [], {}), found four; "
        + "text is written in double quotes: \"four\"."
    ),
    (
      "migration \"2\"\n\tadd a {\"b\": 1,}\n",
      "2:16: expected a JSON value for records without the key (4, 2.5, \"text\", true, null, [], {}), but an "
        + "object's keys must be strings in double quotes."
    ),
    (
      "migration \"2\"\n  add legs [1, 2\n",
      "2:12: expected a closing ] on this line for the [ that opens here (a value must fit on one line)."
    ),
    ("migration \"2: kg\n", "1:11: expected a closing \" on this line for the string that opens here."),
    (
      "migration \"2\"\n  remove  # nickname\n",
      "2:11: expected the key to remove after \"remove\", found a comment."
    ),
    (
      "migration \"2\"\n  rename first name firstName\n",
      "2:21: expected the end of the line after the rename step, found \"firstName\" (a key or name with blanks "
        + "is written in double quotes: \"first name\")."
    ),
    (
      "migration x\n  add a 1\nmigration x\n  add b 2\n",
      "3:11: expected a name no other migration has, found \"x\", which the migration on line 1 has already (a "
        + "file records migrations by name)."
    ),
    (
      "migration x\nmigration y\n  add a 1\n",
      "1:11: expected at least one step (add, rename, move, remove, convert) on the lines after the migration "
        + "\"x\", found none."
    ),
    (
      "migration x\n  remove id\n",
      "2:10: expected the key to remove after \"remove\", found \"id\": migrations never change a record's id, "
        + "which the file finds records by."
    ),
    (
      "migration x\n  move city address..city\n",
      "2:13: expected the new key after \"city\", found \"address..city\", which has an empty field name (a key "
        + "is a field name, or names joined by single dots: address.city)."
    ),
    ("# only a comment\n\n", "1:1: expected at least one line `migration NAME` followed by its steps, found none."),
  ])
  func badPlansAreReportedWithTheirLineAndColumn(_ text: String, _ expected: String) throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let before = try bytes(log)
    let path = try plan(text, in: dir)
    let r = try Tool.run("migrate", log, "--plan", path)
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
    #expect(r.stderr.hasPrefix("requestset: \(path):\(expected)\n"), "\(r)")
    #expect(r.stderr.hasSuffix("The plan is not valid, so nothing was changed.\n"), "\(r)")
    #expect(try Tool.run("migrate", log, "--plan", path, "--list").status == 1)
    #expect(try bytes(log) == before)
  }

  @Test func theErrorShowsTheLineWithACaretUnderTheColumn() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let path = try plan("migration \"2\"\n\tconvert name Float\n", in: dir)
    let r = try Tool.run("migrate", log, "--plan", path)
    #expect(
      r.stderr == "requestset: \(path):2:15: expected a type to convert to (Double, Int, String or array), found "
        + "\"Float\".\n   convert name Float\n                ^\nThe plan is not valid, so nothing was changed.\n",
      "\(r)")
  }

  @Test func quotedNamesAndKeysAndJSONDefaultsKeepWhatTheySay() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir, records: [DynamicRecord(id: .int(1), fields: ["a.b": .int(1)])])
    let text = #"""
      MIGRATION "quoted \"name\" # not a comment" # a comment
        ADD "with blank" "text # not a comment"
        add big 9223372036854775807
        add small -2.5e-3
        add flags [true, false, null]
        add "nested.deep.key" {"x": [1, {"y": "z"}]}
        rename a\.b "a\\.c"
        convert "with blank" ARRAY
      """#
    let r = try Tool.run("migrate", log, "--plan", try plan(text, in: dir))
    #expect(r.status == 0, "\(r)")
    let expected: FieldValue = .object([
      "id": .int(1), "with blank": .array([.string("text # not a comment")]), "big": .int(Int.max),
      "small": .double(-2.5e-3), "flags": .array([.bool(true), .bool(false), .null]),
      "nested": .object(["deep": .object(["key": .object(["x": .array([.int(1), .object(["y": .string("z")])])])])]),
      "a.c": .int(1),
    ])
    #expect(try storedRecords(log) == [exact(expected)])
    #expect(try appliedMigrations(log) == [#"quoted "name" # not a comment"#])
  }

  @Test func importedColumnsKeepTheirOrderThroughAMigration() throws {
    let dir = try freshDirectory()
    let log = dir + "/zoo.rslog"
    try write("id,name,weight,city\n1,Micky,3,Burbank\n2,Daisy,600,Oslo\n", to: dir + "/zoo.csv")
    #expect(try Tool.run("import", log, "--from", dir + "/zoo.csv").status == 0)
    let path = try plan(
      "migration v2\n  rename weight weightKg\n  move city address.city\n  add legs 4\n  remove name\n", in: dir)
    #expect(try Tool.run("migrate", log, "--plan", path).status == 0)
    let csv = try Tool.run("dump", log, "--format", "csv")
    #expect(csv.stdout == "id,weightKg,address.city,legs\n1,3,Burbank,4\n2,600,Oslo,4\n", "\(csv)")
  }

  @Test func migrateNeedsAPlanUnlessListingAndDocumentsTheGrammar() throws {
    let dir = try freshDirectory()
    let log = try version1Log(in: dir)
    let r = try Tool.run("migrate", log)
    #expect(r.status == 2, "\(r)")
    #expect(r.stderr.contains("Give the migrations to run with --plan PLAN"), "\(r)")
    let missing = try Tool.run("migrate", log, "--plan", dir + "/none.txt")
    #expect(missing.status == 1)
    #expect(missing.stderr == "requestset: There is no plan file at \(dir)/none.txt.\n", "\(missing)")
    let help = try Tool.run("migrate", "--help")
    for line in ["add KEY VALUE", "rename KEY NEWKEY", "move KEY NEWKEY", "remove KEY", "convert KEY TYPE"] {
      #expect(help.stdout.contains(line), "\(line): \(help)")
    }
    #expect(try Tool.run("--help").stdout.contains("migrate"))
  }
}
