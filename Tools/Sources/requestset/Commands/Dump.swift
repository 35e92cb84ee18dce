import ArgumentParser
import Foundation
import RequestSet

struct Dump: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Write every record, in store order, as JSON Lines or CSV.",
    discussion: """
      JSON Lines: one object per record, `id` first, then the other keys sorted. CSV: a header of
      every key any record holds (nested values as dotted columns), then a line per record.
      `requestset import` reads both back.
      """)

  enum Format: String, ExpressibleByArgument, CaseIterable { case jsonl, csv }

  @Argument(help: "The log file.") var file: String
  @Option(help: "jsonl or csv.") var format: Format = .jsonl

  func run() async throws {
    try await reportingErrors {
      let store = try openReader(file)
      defer { store.close() }
      let output = Output()
      let progress = Progress()
      let total = store.count
      var columns: [String] = []
      if format == .csv {
        columns = try LogStore<DynamicRecord>.inspect(path: file).keys.filter { !$0.kinds.allSatisfy { $0 == "object" } }
          .map(\.key)
        columns = (columns.contains("id") ? ["id"] : []) + columns.filter { $0 != "id" }
        output.write(CSV.line(columns.map { CSV.quoted($0) }))
      }
      var writer = RecordWriter()
      var line: [UInt8] = []
      line.reserveCapacity(1 << 10)
      var written = 0
      for try await record in RequestSet(store).stream(batchSize: 4_096) {
        line.removeAll(keepingCapacity: true)
        switch format {
        case .jsonl:
          writer.append(record, to: &line)
          line.append(0x0A)
        case .csv:
          let value = record.value
          line.append(contentsOf: CSV.line(columns.map { CSV.cell(CSV.value(at: $0, in: value)) }).utf8)
        }
        output.write(bytes: line)
        written += 1
        if written & 0xFFF == 0 { progress.update("dumped \(written) of \(total) records") }
      }
      output.flush()
      progress.finish()
    }
  }
}
