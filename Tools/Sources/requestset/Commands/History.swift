import ArgumentParser
import Foundation
import RequestSet

/// `requestset history FILE`: the commits still readable, for `query --as-of`.
struct History: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "List the commits still readable in a log: version, time, records changed.",
    discussion: """
      Every commit since the log was last compacted is still in the file (`compact` keeps \
      the newest commit only, or as many as --keep-history N says). Read one with `query \
      FILE --as-of VERSION`. A commit written before RequestSet recorded times has no time \
      (null).
      """)

  @Argument(help: "The log file.") var file: String
  @Option(
    name: [.customLong("format"), .customShort("f")], help: "Output format: table, json, jsonl or csv.")
  var format: OutputFormat = .table

  func run() throws {
    try reportingErrors {
      let store = try openReader(file)
      defer { store.close() }
      let commits = try store.history()
      var rows = Rows(
        keys: ["version", "time", "recordsChanged"],
        rows: commits.map { commit in
          [
            "version": FieldValue.uint(commit.version),
            "time": commit.hasTime ? FieldValue.string(ISO8601Time.format(commit.time)) : FieldValue.null,
            "recordsChanged": FieldValue.int(commit.recordsChanged),
          ]
        })
      rows.noun = "commit"
      let output = Output()
      rows.render(format, to: output, width: Terminal.width)
      output.flush()
    }
  }
}
