import ArgumentParser
import Foundation
import RequestSet

/// The options `import` and `upsert` share.
struct ImportOptions: ParsableArguments {
  /// The input formats `import` reads.
  enum Format: String, ExpressibleByArgument, CaseIterable { case jsonl, csv }

  @Argument(help: "The log file (created when missing).") var file: String
  @Option(help: ArgumentHelp("The JSON Lines or CSV file to read (- for standard input).", valueName: "path"))
  var from: String
  @Option(
    help: """
      The key that holds each record's id. Without --id, a record's "id" key is its id, \
      and when the first record has no "id" key every record gets a generated one: \
      1, 2, 3, … after the largest integer id the log holds, up to 9223372036854775807 \
      (Int.max; a record that would need an id after it is a bad line).
      """)
  var id: String?
  @Option(
    help: "jsonl or csv; by default from the input file's extension (.csv is CSV, anything else JSON Lines).")
  var format: Format?
  @Option(
    name: .customLong("null"),
    help: ArgumentHelp(
      "Read cells (CSV) or top-level string values (JSON Lines) equal to this text as absent, like empty CSV cells: --null NA.",
      valueName: "text"))
  var nullText: String?

  /// The input's format: `--format`, else the extension of `--from`.
  var inputFormat: Format { format ?? (from.lowercased().hasSuffix(".csv") ? .csv : .jsonl) }
}

/// `requestset import FILE --from PATH`: records from JSON Lines or CSV, streamed, all or nothing.
struct Import: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Add records from a JSON Lines or CSV file to a log, all or nothing.",
    discussion: """
      The log is created when missing. The input is read, checked and written in batches, \
      in bounded memory, into a copy of the log that replaces it only when every line was \
      good: when any line is bad (not a JSON object, a wrong number of CSV cells, no id, an \
      id used twice or already stored), the bad lines are reported with their line numbers \
      and the log is left as it was. An interrupted import (Ctrl-C, SIGTERM) leaves it as it \
      was too, and nothing beside it. \
      A large import is written as several commits (one per 20,000 records), which \
      `history` lists.

      With --upsert (or the `upsert` command) a record whose id is stored replaces the \
      stored record instead of failing.

      Numbers keep the kind they are written in: 3 is an integer, 3.0 and 3e0 are doubles. \
      The order of the input's keys (its CSV header, or its JSON objects' keys) is kept in \
      FILE.keys, so query and dump show columns in that order.
      """)

  @OptionGroup var options: ImportOptions
  @Flag(help: "Replace stored records with the same id instead of failing (as `upsert` does).") var upsert =
    false

  func run() throws {
    try reportingErrors {
      let summary = try Importer(options: options, upsert: upsert).run()
      print(summary)
    }
  }
}

/// `requestset upsert FILE --from PATH`: `import --upsert`, replacing records whose id is stored.
struct Upsert: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Insert records from a JSON Lines or CSV file, replacing those whose id is stored.",
    discussion: """
      The same as `import --upsert`: re-importing a changed file updates the records it \
      holds and adds the new ones, all or nothing. Records the file no longer holds stay; \
      remove them with `delete`.

      With --on KEY a record replaces the stored record with the same value of KEY (a \
      natural key such as an email) rather than the same id, and the stored record keeps \
      its id; repeat --on for a composite key (--on team --on seat). Every record needs a \
      value at KEY, and no two records of a batch of 10,000 may share one.
      """)

  @OptionGroup var options: ImportOptions
  @Option(
    name: .customLong("on"),
    help: ArgumentHelp(
      "Match stored records on this key instead of the id; repeat it for a composite key.", valueName: "key"))
  var keys: [String] = []

  func run() throws {
    try reportingErrors {
      print(try Importer(options: options, upsert: true, on: keys).run())
    }
  }
}
