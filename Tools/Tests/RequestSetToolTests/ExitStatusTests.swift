import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The exit statuses the README documents: 0 success, 1 errors, 2 usage errors, 130 Ctrl-C.
@Suite struct ExitStatusTests {
  @Test func versionPrintsTheVersion() throws {
    let r = try Tool.run("--version")
    #expect(r.status == 0)
    #expect(r.stdout == "0.1.0\n", "\(r)")
  }

  @Test func successIsZeroAndErrorsAreOne() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    #expect(try Tool.run("query", log, "--count").status == 0)
    let bad = try Tool.run("query", log, "age >")
    #expect(bad.status == 1, "\(bad)")
    #expect(bad.stderr.hasPrefix("requestset: "), "\(bad)")
  }

  @Test(arguments: [
    ["nope"], ["query"], ["query", "x.rslog", "--bogus"], ["query", "x.rslog", "--limit", "many"],
    ["compact", "x.rslog", "--keep-history", "0"], ["update", "x.rslog", "--set", "a=1"],
  ])
  func usageErrorsAreTwo(_ arguments: [String]) throws {
    let r = try Tool.run(arguments)
    #expect(r.status == 2, "\(r)")
    #expect(r.stderr.contains("Usage: requestset"), "\(r)")
  }

  @Test func aNegativeLimitOrOffsetSaysWhatToGive() throws {
    let limit = try Tool.run("query", "x.rslog", "--limit", "-3")
    #expect(limit.status == 2)
    #expect(
      limit.stderr.hasPrefix(
        "Error: --limit is -3; give 0 or more records to return (leave it out for all).\n"), "\(limit)")
    let offset = try Tool.run("query", "x.rslog", "--offset=-1")
    #expect(offset.status == 2)
    #expect(offset.stderr.hasPrefix("Error: --offset is -1; give 0 or more records to skip.\n"), "\(offset)")
  }

  @Test func ctrlCInFollowExits130() throws {
    let dir = try freshDirectory()
    let log = try petLog(in: dir)
    let follow = try RunningTool(["follow", log])
    #expect(follow.waitForLines(1).count == 1)
    kill(follow.process.processIdentifier, SIGINT)
    follow.process.waitUntilExit()
    #expect(follow.process.terminationReason == .exit)
    #expect(follow.process.terminationStatus == 130)
  }

  @Test func helpParagraphsWrapAtWordsNotMidSentence() throws {
    // With room for it, a whole sentence of the discussion is on one line: the text has no
    // hard line breaks of its own, so argument-parser wraps it to the width.
    let wide = try Tool.run("import", "--help", environment: ["COLUMNS": "400"])
    #expect(wide.status == 0)
    #expect(
      wide.stdout.contains(
        "The log is created when missing. The input is read, checked and written in batches, in bounded memory, "
      ),
      "\(wide)")
    let narrow = try Tool.run("--help", environment: ["COLUMNS": "60"])
    for line in narrow.stdout.split(separator: "\n") { #expect(line.count <= 60, "\(line)") }
  }

  @Test func theFilterArgumentIsNamedFilterAndTheOutputOptionFormat() throws {
    let help = try Tool.run("query", "--help", environment: ["COLUMNS": "200"])
    #expect(help.stdout.contains("<file> [<filter>]"), "\(help)")
    #expect(help.stdout.contains("-f, --format <format>"), "\(help)")
    #expect(!help.stdout.contains("<format>]"), "\(help)")
  }
}
