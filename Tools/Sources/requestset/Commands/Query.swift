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
    set(over: RequestSet(store))
  }

  /// The request set these options describe, over `base` (the store, or the store as of a
  /// past commit).
  func set(over base: RequestSet<DynamicRecord>) -> RequestSet<DynamicRecord> {
    var set = base
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
  @Option(name: .customLong("as-of"), help: "Read the log as it was after this commit version (see `history`).")
  var asOf: UInt64?
  @Option(
    name: .customLong("as-of-time"),
    help: "Read the log as it was at this time (ISO 8601, e.g. 2026-11-23T22:56:48Z): the newest commit at or before it.")
  var asOfTime: String?

  func validate() throws {
    if asOf != nil && asOfTime != nil {
      throw ValidationError("Give --as-of or --as-of-time, not both.")
    }
  }

  /// The store itself, or the store as of the commit `--as-of` / `--as-of-time` names.
  func base(_ store: LogStore<DynamicRecord>) throws -> RequestSet<DynamicRecord> {
    if let asOf { return try RequestSet(store, asOf: asOf) }
    if let asOfTime {
      guard let time = ISO8601Time.parse(asOfTime) else {
        throw ToolError(
          "--as-of-time \(asOfTime) is not an ISO 8601 time; write it as 2026-11-23T22:56:48Z "
            + "(fractional seconds and offsets such as +01:00 are accepted).")
      }
      return try RequestSet(store, asOf: time)
    }
    return RequestSet(store)
  }

  func run() throws {
    try reportingErrors {
      let store = try openReader(file)
      defer { store.close() }
      let set = query.set(over: try base(store))
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

/// ISO 8601 times as `--as-of-time` takes them and `history` prints them.
enum ISO8601Time {
  /// Parses `2026-11-23T22:56:48Z`, with or without fractional seconds, with `Z` or an offset.
  static func parse(_ text: String) -> Date? {
    let plain = ISO8601DateFormatter()
    if let date = plain.date(from: text) { return date }
    let fractional = ISO8601DateFormatter()
    fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return fractional.date(from: text)
  }

  /// `2026-11-23T22:56:48.123Z`: UTC, to the millisecond (a commit records microseconds).
  static func format(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
  }
}
