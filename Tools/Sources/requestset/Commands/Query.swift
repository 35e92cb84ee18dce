import ArgumentParser
import Foundation
import RequestSet

/// The query options `query` and `follow` share.
struct QueryOptions: ParsableArguments {
  @Argument(help: "A format string, as RequestSet's filter(_:) takes it: \"age > 3 AND species == 'Cow'\".")
  var format: String?

  @Option(
    parsing: .upToNextOption,
    help: "Sort keys, most significant first; KEY:desc sorts descending (KEY:asc, the default, ascending).")
  var sort: [String] = []

  @Option(help: "Skip this many records (after sorting).") var offset: Int?
  @Option(help: "Return at most this many records.") var limit: Int?

  /// The request set these options describe, over `store`.
  func set(_ store: LogStore<DynamicRecord>) -> RequestSet<DynamicRecord> {
    var set = RequestSet(store)
    if let format { set = set.filter(format) }
    if !sort.isEmpty { set = set.sortBy(sort.map(QueryOptions.sortKey)) }
    if let offset { set = set.offset(offset) }
    if let limit { set = set.limit(limit) }
    return set
  }

  /// `KEY:desc` as the library spells it (`desc:KEY`); other keys go to the library as they are.
  static func sortKey(_ text: String) -> String {
    if text.hasSuffix(":desc"), text.count > 5 { return "desc:" + text.dropLast(5) }
    if text.hasSuffix(":asc"), text.count > 4 { return "asc:" + text.dropLast(4) }
    return text
  }
}

struct Query: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Query a log with RequestSet's format strings, sorts, windows and indexes.",
    discussion: """
      The log is read with the library's own planner, so indexes the log defines are used
      (see --explain). The table fits the terminal: COLUMNS, else the terminal's width, else 80.
      """)

  @Argument(help: "The log file.") var file: String
  @OptionGroup var query: QueryOptions
  @Option(parsing: .upToNextOption, help: "Print only these keys (dotted paths reach nested values).")
  var values: [String] = []
  @Flag(help: "Print the number of matching records.") var count = false
  @Flag(help: "Print the plan instead of the records.") var explain = false
  @Option(help: "Output format: table, json, jsonl or csv.") var format: OutputFormat = .table

  func run() throws {
    try reportingErrors {
      let store = try openReader(file)
      defer { store.close() }
      let set = query.set(store)
      if explain {
        print(try set.validated().explain())
        return
      }
      if count {
        print(try set.fetchCount())
        return
      }
      let rows: Rows
      if values.isEmpty {
        rows = Rows(records: try set.fetch())
      } else {
        rows = Rows(keys: values, rows: try set.values(values))
      }
      let output = Output()
      rows.render(format, to: output, width: Terminal.width)
      output.flush()
    }
  }
}

extension OutputFormat: ExpressibleByArgument {}
