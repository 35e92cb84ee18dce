import ArgumentParser
import Foundation
import RequestSet

/// The query options `query`, `follow`, `update` and `delete` share.
struct QueryOptions: ParsableArguments {
  @Argument(
    help: ArgumentHelp(
      "A filter, as RequestSet's filter(_:) takes it: \"age > 3 AND species == 'Cow'\".",
      valueName: "filter"))
  var filter: String?

  @Option(
    parsing: .upToNextOption,
    help: ArgumentHelp(
      """
      Sort keys, most significant first, separated by commas or spaces or given with several \
      --sort options: --sort arr_delay:desc,id. KEY:desc sorts descending, KEY:asc (the \
      default) ascending.
      """, valueName: "key"))
  var sort: [String] = []

  @Option(
    parsing: .unconditional,
    help: ArgumentHelp("Skip this many records (after sorting); 0 or more.", valueName: "n"))
  var offset: Int?
  @Option(
    parsing: .unconditional,
    help: ArgumentHelp("Return at most this many records; 0 or more.", valueName: "n"))
  var limit: Int?

  func validate() throws {
    if let offset, offset < 0 {
      throw ValidationError("--offset is \(offset); give 0 or more records to skip.")
    }
    if let limit, limit < 0 {
      throw ValidationError("--limit is \(limit); give 0 or more records to return (leave it out for all).")
    }
  }

  /// The sort keys, each `--sort` value split at its commas.
  var sortKeys: [String] {
    sort.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter {
      !$0.isEmpty
    }
  }

  /// The request set these options describe, over `store`.
  func set(_ store: LogStore<DynamicRecord>) -> RequestSet<DynamicRecord> {
    set(over: RequestSet(store))
  }

  /// The request set these options describe, over `base` (the store, or the store as of a
  /// past commit).
  func set(over base: RequestSet<DynamicRecord>) -> RequestSet<DynamicRecord> {
    var set = base
    if let filter { set = set.filter(filter) }
    if !sortKeys.isEmpty { set = set.sortBy(sortKeys.map(QueryOptions.sortKey)) }
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

/// `requestset query FILE [FILTER]`: records, values, counts, plans or aggregates of a query.
struct Query: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Query a log with RequestSet's filters, sorts, windows, aggregates and indexes.",
    discussion: """
      The log is read with the library's own planner, so indexes the log defines are used \
      (see --explain). Columns come in the order the imported data gave them (FILE.keys). \
      On a terminal the table fits its width (or COLUMNS): long strings are cut with …, \
      numbers never are. Piped, the table is as wide as its cells. JSON, JSON Lines and CSV \
      are written a batch of records at a time.

      Aggregates: --sum, --avg, --min and --max take a key (each may be repeated) and print \
      one row with the count of matching records and each aggregate (named like sum:KEY); \
      with --group-by KEY, one row per distinct value of KEY, with its count.
      """)

  @Argument(help: "The log file.") var file: String
  @OptionGroup var query: QueryOptions
  @Option(
    parsing: .upToNextOption,
    help: ArgumentHelp("Print only these keys (dotted paths reach nested values).", valueName: "key"))
  var values: [String] = []
  @Flag(help: "Print the number of matching records.") var count = false
  @Flag(help: "Print the plan instead of the records.") var explain = false
  @Option(
    name: [.customLong("format"), .customShort("f")], help: "Output format: table, json, jsonl or csv.")
  var format: OutputFormat = .table
  @Option(
    name: .customLong("sum"),
    help: ArgumentHelp("Print the sum of this numeric key's values.", valueName: "key")) var sums: [String] =
      []
  @Option(
    name: .customLong("avg"),
    help: ArgumentHelp("Print the mean of this numeric key's values.", valueName: "key")) var averages:
    [String] = []
  @Option(
    name: .customLong("min"), help: ArgumentHelp("Print the smallest value of this key.", valueName: "key"))
  var minimums: [String] = []
  @Option(
    name: .customLong("max"), help: ArgumentHelp("Print the largest value of this key.", valueName: "key"))
  var maximums: [String] = []
  @Option(
    name: .customLong("group-by"),
    help: ArgumentHelp(
      "Group the matching records by this key (up to three --group-by): one row per group, with its count and aggregates.",
      valueName: "key"))
  var groupBy: [String] = []
  @Option(
    name: .customLong("as-of"), parsing: .unconditional,
    help: ArgumentHelp(
      "Read the log as it was after this commit version (see `history`).", valueName: "version"))
  var asOf: UInt64?
  @Option(
    name: .customLong("as-of-time"),
    help:
      "Read the log as it was at this time (ISO 8601, e.g. 2026-11-23T22:56:48Z): the newest commit at or before it."
  )
  var asOfTime: String?

  /// The aggregates asked for, in the order the command line gives them.
  var aggregates: [RequestAggregate] {
    let byKind = sums.map { RequestAggregate.sum($0) } + averages.map { .average($0) } + minimums.map { .min($0) }
      + maximums.map { .max($0) }
    let ordered = Query.aggregatesInOrder(Array(CommandLine.arguments.dropFirst()))
    // argument-parser read the same options; trust its reading when the two disagree.
    return ordered.map(\.name).sorted() == byKind.map(\.name).sorted() ? ordered : byKind
  }

  /// `--sum`, `--avg`, `--min` and `--max` in the order `arguments` give them
  /// (`--sum KEY` or `--sum=KEY`).
  static func aggregatesInOrder(_ arguments: [String]) -> [RequestAggregate] {
    let kinds: [String: (String) -> RequestAggregate] = [
      "--sum": { .sum($0) }, "--avg": { .average($0) }, "--min": { .min($0) }, "--max": { .max($0) },
    ]
    var out: [RequestAggregate] = []
    var i = 0
    while i < arguments.count {
      let argument = arguments[i]
      if argument == "--" { break }
      if let make = kinds[argument], i + 1 < arguments.count {
        out.append(make(arguments[i + 1]))
        i += 2
        continue
      }
      if let eq = argument.firstIndex(of: "="), let make = kinds[String(argument[..<eq])] {
        out.append(make(String(argument[argument.index(after: eq)...])))
      }
      i += 1
    }
    return out
  }

  func validate() throws {
    if asOf != nil && asOfTime != nil {
      throw ValidationError("Give --as-of or --as-of-time, not both.")
    }
    if groupBy.count > 3 {
      throw ValidationError("Give at most three --group-by keys; \(groupBy.count) were given.")
    }
    let aggregating = !aggregates.isEmpty || !groupBy.isEmpty
    if aggregating && (!values.isEmpty || count || explain) {
      throw ValidationError(
        "--sum, --avg, --min, --max and --group-by print their own rows; leave out --values, --count and --explain."
      )
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

  func run() async throws {
    try await reportingErrors {
      let store = try openReader(file)
      defer { store.close() }
      let order = KeyOrder.load(for: file)
      let set = query.set(over: try base(store))
      if explain {
        print(try set.validated().explain())
        return
      }
      if count {
        print(try set.fetchCount())
        return
      }
      let output = Output()
      if !groupBy.isEmpty {
        var groups: RequestGroups<DynamicRecord>
        switch groupBy.count {
        case 1: groups = set.groupBy(groupBy[0])
        case 2: groups = set.groupBy(groupBy[0], groupBy[1])
        default: groups = set.groupBy(groupBy[0], groupBy[1], groupBy[2])
        }
        groups = groups.aggregate(.count)
        for aggregate in aggregates { groups = groups.aggregate(aggregate) }
        var rows = Rows(
          keys: groupBy + ["count"] + aggregates.map(\.name), rows: try groups.fetch().map(\.dictionary), order: order)
        rows.noun = "group"
        rows.render(format, to: output, width: Terminal.width)
      } else if !aggregates.isEmpty {
        var row: [String: FieldValue] = ["count": .int(try set.fetchCount())]
        for key in sums { row["sum:" + key] = try set.sum(key) }
        for key in averages { row["avg:" + key] = try set.average(key).map { .double($0) } ?? .null }
        for key in minimums { row["min:" + key] = try set.min(key) }
        for key in maximums { row["max:" + key] = try set.max(key) }
        var rows = Rows(keys: ["count"] + aggregates.map(\.name), rows: [row], order: order)
        rows.noun = "row"
        rows.render(format, to: output, width: Terminal.width)
      } else if !values.isEmpty {
        Rows(keys: values, rows: try set.values(values).map(\.dictionary), order: order).render(
          format, to: output, width: Terminal.width)
      } else if format == .table {
        Rows(records: try set.fetch(), order: order).render(.table, to: output, width: Terminal.width)
      } else {
        let past = asOf != nil || asOfTime != nil
        let csv =
          format == .csv
          ? try await RecordStream.csvColumns(set, store: store, order: order, past: past)
          : (columns: [], fromKeyOrder: false)
        try await RecordStream.write(
          set, format: format, order: order, csvColumns: csv.columns, total: nil,
          checkColumns: csv.fromKeyOrder, file: file)
        return
      }
      output.flush()
    }
  }
}

extension OutputFormat: ExpressibleByArgument {}

/// ISO 8601 times as `--as-of-time` takes them and `history` prints them.
enum ISO8601Time {
  /// Parses `2026-11-23T22:56:48Z`, with or without fractional seconds, with `Z` or an offset.
  ///
  /// The year must have four digits: Foundation's parser misreads a longer year
  /// (`9999999-01-01` comes back as a date 1.7 million years BC).
  static func parse(_ text: String) -> Date? {
    let year = text.utf8.prefix(5)
    guard year.count == 5, year.prefix(4).allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
      year.last == UInt8(ascii: "-")
    else { return nil }
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
