import ArgumentParser
import Foundation
import RequestSet

/// `requestset dump FILE [--format jsonl|json|csv]`: every record, streamed in store order.
struct Dump: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Write every record, in store order, as JSON Lines, a JSON array or CSV.",
    discussion: """
      JSON Lines (the default): one object per record, `id` first, then the other keys in \
      the order the imported data gave them (FILE.keys; keys it does not list come after, \
      sorted). JSON: the same objects in one array. CSV: a header of every key any record \
      holds (nested values as dotted columns), then a line per record. `requestset import` \
      reads JSON Lines and CSV back. Records are read and written a batch at a time, so a \
      dump of any size runs in bounded memory.
      """)

  @Argument(help: "The log file.") var file: String
  @Option(name: [.customLong("format"), .customShort("f")], help: "jsonl, json or csv.") var format: Format =
    .jsonl

  /// The formats `dump` writes.
  enum Format: String, ExpressibleByArgument, CaseIterable { case jsonl, json, csv }

  func run() async throws {
    try await reportingErrors {
      let store = try openReader(file)
      defer { store.close() }
      let order = KeyOrder.load(for: file)
      let set = RequestSet(store)
      let output = OutputFormat(rawValue: format.rawValue)!
      let csv =
        output == .csv
        ? try await RecordStream.csvColumns(set, store: store, order: order, past: false)
        : (columns: [], fromKeyOrder: false)
      try await RecordStream.write(
        set, format: output, order: order, csvColumns: csv.columns, total: store.count,
        checkColumns: csv.fromKeyOrder,
        file: file)
    }
  }
}
