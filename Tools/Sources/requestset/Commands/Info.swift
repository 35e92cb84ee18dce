import ArgumentParser
import Foundation
import RequestSet

/// `requestset info FILE`: the log's header, records, keys with their kinds, indexes and dead space.
struct Info: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show a log's header, records, keys with their kinds, indexes and dead space.")

  @Argument(help: "The log file.") var file: String

  func run() throws {
    try reportingErrors {
      let progress = Progress()
      progress.update("reading \(file)…", force: true)
      let report = try LogStore<DynamicRecord>.inspect(path: file)
      progress.finish()
      print(Info.render(report, order: KeyOrder.load(for: file)), terminator: "")
    }
  }

  /// The report as `info` prints it; keys in `order` (the order the imported data first
  /// gave them, `FILE.keys`), those it does not list after them, sorted.
  static func render(_ r: LogInspection, order: KeyOrder = KeyOrder()) -> String {
    var r = r
    let byKey = Dictionary(r.keys.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
    r.keys = order.orderedDotted(r.keys.map(\.key)).map { byKey[$0]! }
    var out = ""
    func row(_ name: String, _ value: String) {
      out += name.padding(toLength: 12, withPad: " ", startingAt: 0) + value + "\n"
    }
    row("file", r.path)
    row("size", "\(r.fileSize) bytes")
    row("format", "version \(r.formatVersion), generation \(r.generation)")
    row("records", "\(r.recordCount) (\(r.liveBytes) bytes in \(r.frameCount) frames)")
    let percent = r.fileSize > 0 ? Int((Double(r.deadBytes) * 100 / Double(r.fileSize)).rounded()) : 0
    row(
      "dead space", "\(r.deadBytes) bytes (\(percent)%: replaced and deleted records, key and commit frames)")
    row(
      "indexes",
      r.indexes.isEmpty
        ? "none" : r.indexes.map { index in
          let name = index.keys.count == 1 ? index.key : "(\(index.key))"
          return index.unique ? "\(name) (unique)" : name
        }.joined(separator: ", "))
    row("status", status(r))
    out += "keys:\n"
    let width = max(3, r.keys.map(\.key.count).max() ?? 0)
    let kindsWidth = max(5, r.keys.map { $0.kinds.joined(separator: ", ").count }.max() ?? 0)
    out +=
      "  " + "key".padding(toLength: width, withPad: " ", startingAt: 0) + "  "
      + "kinds".padding(toLength: kindsWidth, withPad: " ", startingAt: 0) + "  records\n"
    for key in r.keys {
      out +=
        "  " + key.key.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
        + key.kinds.joined(separator: ", ").padding(toLength: kindsWidth, withPad: " ", startingAt: 0) + "  "
        + "\(key.recordCount)\n"
    }
    return out
  }

  static func status(_ r: LogInspection) -> String {
    if r.isClean { return "clean" }
    var parts: [String] = []
    if !r.damage.isEmpty {
      parts.append("\(r.damage.count) damaged \(r.damage.count == 1 ? "range" : "ranges")")
    }
    if r.tornTail != nil { parts.append("an interrupted last write") }
    if !r.unreadableRecords.isEmpty { parts.append("\(r.unreadableRecords.count) unreadable records") }
    return parts.joined(separator: ", ") + " (run `requestset verify` for details)"
  }
}
