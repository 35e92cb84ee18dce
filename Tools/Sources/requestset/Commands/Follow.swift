import ArgumentParser
import Foundation
import RequestSet

/// `requestset follow FILE [FILTER]`: the result, then a JSON line per commit that changes it.
struct Follow: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Print the query's result, then each commit that changes it, as JSON lines, until interrupted.",
    discussion: """
      Like `tail -f`: reads the log read-only and follows its writer's commits. Each line \
      is {"version":V,"initial":BOOL,"count":N,"inserted":[records],"updated":[records],"deleted":[ids]}; \
      the first line holds the whole result as "inserted". Ctrl-C (SIGINT) ends it with \
      status 130, as it ends any command.
      """)

  @Argument(help: "The log file.") var file: String
  @OptionGroup var query: QueryOptions
  @Option(parsing: .unconditional, help: "How often to look for the writer's commits, in milliseconds.") var interval: Int = 50

  func run() async throws {
    // Ctrl-C ends it through `Interrupt`, after the lines printed so far, with status 130.
    try await reportingErrors {
      let store = try openReader(file)
      let set = query.set(store)
      let order = KeyOrder.load(for: file)
      _ = try set.validated()
      var previous: [DynamicRecord] = []
      for try await snapshot in set.changes {
        var line: [UInt8] = Array("{\"version\":\(snapshot.version),\"initial\":\(snapshot.isInitial),".utf8)
        line += Array("\"count\":\(snapshot.records.count),\"inserted\":[".utf8)
        let inserted = snapshot.isInitial ? Array(snapshot.records.indices) : snapshot.inserted
        for (i, position) in inserted.enumerated() {
          if i > 0 { line.append(UInt8(ascii: ",")) }
          JSONText.appendRecord(snapshot.records[position], to: &line, order: order)
        }
        line += Array("],\"updated\":[".utf8)
        for (i, position) in snapshot.updated.enumerated() {
          if i > 0 { line.append(UInt8(ascii: ",")) }
          JSONText.appendRecord(snapshot.records[position], to: &line, order: order)
        }
        line += Array("],\"deleted\":[".utf8)
        for (i, position) in snapshot.deleted.enumerated() where position < previous.count {
          if i > 0 { line.append(UInt8(ascii: ",")) }
          JSONText.append(previous[position].id, to: &line)
        }
        line += Array("]}\n".utf8)
        FileHandle.standardOutput.write(Data(line))
        previous = snapshot.records
      }
    }
  }
}
