import ArgumentParser
import Foundation
import RequestSet

struct Import: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Add records from a JSON Lines or CSV file to a log, all or nothing.",
    discussion: """
      The log is created when missing. Every record is inserted in one batch: when any line is
      bad (not a JSON object, a wrong number of CSV cells, no id, an id used twice or already
      stored), the bad lines are reported with their line numbers and nothing is written.
      The --id key's value becomes each record's id (stored as its `id` field). The input's
      format follows its extension (.jsonl, .json, .ndjson or .csv) unless --format says.
      """)

  enum Format: String, ExpressibleByArgument, CaseIterable { case jsonl, csv }

  @Argument(help: "The log file.") var file: String
  @Option(help: "The JSON Lines or CSV file to read.") var from: String
  @Option(help: "The key that holds each record's id.") var id: String = "id"
  @Option(help: "jsonl or csv; by default from the input file's extension.") var format: Format?

  /// How many bad lines are listed before the rest are only counted.
  static let shownProblems = 20

  func run() throws {
    try reportingErrors {
      let progress = Progress()
      progress.update("reading \(from)…", force: true)
      let data: Data
      do {
        data = try Data(contentsOf: URL(fileURLWithPath: from))
      } catch {
        progress.finish()
        throw ToolError("Cannot read \(from): \(error.localizedDescription). Check the path.")
      }
      let kind = format ?? (from.lowercased().hasSuffix(".csv") ? .csv : .jsonl)
      var problems: [InputProblem] = []
      let input: [InputRecord]
      switch kind {
      case .jsonl: input = JSONLinesReader.read(data, problems: &problems)
      case .csv: input = CSVReader.read(String(decoding: data, as: UTF8.self), problems: &problems)
      }
      progress.update("checking \(input.count) records…", force: true)
      // Checked against a read-only look, so a failed import creates and locks nothing.
      let existing = FileManager.default.fileExists(atPath: file) ? try openReader(file) : nil
      var firstLine: [FieldValue: Int] = [:]
      var records: [DynamicRecord] = []
      records.reserveCapacity(input.count)
      for item in input {
        guard let idValue = item.fields[id] else {
          problems.append(InputProblem(line: item.line, reason: "it has no \"\(id)\" field (the --id key)"))
          continue
        }
        if case .null = idValue {
          problems.append(InputProblem(line: item.line, reason: "its \"\(id)\" field (the --id key) is null"))
          continue
        }
        if id != "id", let other = item.fields["id"], other != idValue {
          problems.append(
            InputProblem(
              line: item.line,
              reason: "it has an \"id\" field besides the --id key \"\(id)\"; the id is stored as the field \"id\""))
          continue
        }
        if let earlier = firstLine[idValue] {
          problems.append(InputProblem(line: item.line, reason: "its id \(idValue) is also the id on line \(earlier)"))
          continue
        }
        firstLine[idValue] = item.line
        if let existing, try existing.exists(id: idValue) {
          problems.append(InputProblem(line: item.line, reason: "its id \(idValue) is already stored in \(file)"))
          continue
        }
        records.append(DynamicRecord(id: idValue, fields: item.fields))
      }
      progress.finish()
      guard problems.isEmpty else {
        problems.sort { $0.line < $1.line }
        var message = "\(from) has \(problems.count) bad \(problems.count == 1 ? "line" : "lines"); nothing was written:"
        for p in problems.prefix(Self.shownProblems) { message += "\n  line \(p.line): \(p.reason)" }
        if problems.count > Self.shownProblems { message += "\n  … and \(problems.count - Self.shownProblems) more" }
        message += "\nFix the lines and import again."
        throw ToolError(message)
      }
      existing?.close()
      progress.update("writing \(records.count) records…", force: true)
      let store = try openWriter(file)
      defer { store.close() }
      // One batch: a record another writer stored meanwhile fails it whole.
      try store.insert(contentsOf: records)
      progress.finish()
      print("imported \(records.count) record\(records.count == 1 ? "" : "s") into \(file) (\(store.count) records now)")
    }
  }
}
