import Foundation
import RequestSet
import Testing

/// Numbers a user gives the tool at the edges of their types: each is an answer or an
/// error with a message, never a trap (each runs the tool as a child process, where a trap
/// is an exit by a signal, which no expectation here accepts).
@Suite struct IntegerInputTests {
  static let intMax = String(Int.max)

  func threeRecords() throws -> String {
    let dir = try freshDirectory()
    try write("{\"id\":1,\"a\":1}\n{\"id\":2,\"a\":2}\n{\"id\":3,\"a\":3}\n", to: dir + "/in.jsonl")
    let log = dir + "/three.rslog"
    let r = try Tool.run("import", log, "--from", dir + "/in.jsonl")
    #expect(r.status == 0, "\(r)")
    return log
  }

  @Test func offsetAndLimitAtIntMaxAreWindowsNotTraps() throws {
    let log = try threeRecords()
    let both = try Tool.run(
      "query", log, "--offset", Self.intMax, "--limit", Self.intMax, "--format", "jsonl")
    #expect(both.status == 0 && both.stdout == "", "\(both)")
    let count = try Tool.run("query", log, "--offset", "1", "--limit", Self.intMax, "--count")
    #expect(count.status == 0 && count.stdout == "2\n", "\(count)")
    let sum = try Tool.run(
      "query", log, "--sum", "a", "--offset", "1", "--limit", Self.intMax, "--format", "csv")
    #expect(sum.status == 0 && sum.stdout == "count,sum:a\n2,5\n", "\(sum)")
    let updated = try Tool.run("update", log, "--all", "--limit", Self.intMax, "--set", "b=1")
    #expect(updated.status == 0 && updated.stdout == "updated 3 records in \(log)\n", "\(updated)")
  }

  @Test func keepHistoryAtIntMaxKeepsEverything() throws {
    let log = try threeRecords()
    let r = try Tool.run("compact", log, "--keep-history", Self.intMax)
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout.contains("kept all"), "\(r)")
  }

  @Test func asOfAVersionPastEveryCommitIsAnError() throws {
    let log = try threeRecords()
    for version in [String(UInt64.max), String(UInt64(Int.max) + 1)] {
      let r = try Tool.run("query", log, "--as-of", version)
      #expect(r.status == 1, "\(r)")
      #expect(r.stderr.hasPrefix("requestset: Version \(version) of the log "), "\(r)")
    }
  }

  @Test func asOfTimeWithAYearPast9999IsRefusedNotMisread() throws {
    let log = try threeRecords()
    // Foundation's ISO 8601 parser read this as a date 1.7 million years BC.
    let r = try Tool.run("query", log, "--as-of-time", "9999999-01-01T00:00:00Z")
    #expect(r.status == 1, "\(r)")
    #expect(
      r.stderr == """
        requestset: --as-of-time 9999999-01-01T00:00:00Z is not an ISO 8601 time; write it as \
        2026-11-23T22:56:48Z (fractional seconds and offsets such as +01:00 are accepted).

        """, "\(r)")
  }

  @Test func updateRefusesAKeyNestedDeeperThanJSONMay() throws {
    let log = try threeRecords()
    let deepest = Array(repeating: "a", count: 65).joined(separator: ".")
    let ok = try Tool.run("update", log, "id == 1", "--set", "\(deepest)=1")
    #expect(ok.status == 0, "\(ok)")
    // 30,000 keys overflowed the stack building the nested objects (SIGSEGV).
    let tooDeep = Array(repeating: "a", count: 30_000).joined(separator: ".")
    for arguments in [["--set", "\(tooDeep)=1"], ["--unset", tooDeep]] {
      let r = try Tool.run(["update", log, "--all"] + arguments)
      #expect(r.status == 2, "\(r)")
      #expect(
        r.stderr.hasPrefix(
          "Error: The key \"a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.…\" nests 29999 objects deep; give a key at "
            + "most 64 deep."), "\(r)")
    }
  }

  @Test func generatingIDsAfterAStoredUnsignedIDIsAnError() throws {
    let dir = try freshDirectory()
    try write("{\"id\":18446744073709551615}\n", to: dir + "/seed.jsonl")
    let log = dir + "/u.rslog"
    #expect(try Tool.run("import", log, "--from", dir + "/seed.jsonl").status == 0)
    try write("name\nA\n", to: dir + "/in.csv")
    let r = try Tool.run("import", log, "--from", dir + "/in.csv")
    #expect(r.status == 1, "\(r)")
    #expect(r.stderr.contains("holds the id 18446744073709551615, past the largest integer id"), "\(r)")
    #expect(try importLeftovers(in: dir) == [])
  }
}
