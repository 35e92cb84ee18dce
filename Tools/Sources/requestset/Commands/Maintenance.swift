import ArgumentParser
import Foundation
import RequestSet

/// `requestset compact FILE [--keep-history N]`: rewrites the log, saying which history it discards.
struct Compact: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Rewrite a log with only its live records, reclaiming dead space.",
    discussion: """
      Compaction discards the log's history: by default only the newest commit stays \
      readable (`history`, `query --as-of`); --keep-history N keeps the newest N commits. \
      It prints which commits it discarded. An interrupted last write is cut off first \
      (and kept in FILE.damaged-OFFSET), as on every open.
      """)

  @Argument(help: "The log file.") var file: String
  @Option(
    name: .customLong("keep-history"), parsing: .unconditional,
    help: ArgumentHelp("Keep the newest N commits readable (1 or more; by default 1).", valueName: "n"))
  var keepHistory: Int?

  func validate() throws {
    if let keepHistory, keepHistory < 1 {
      throw ValidationError("--keep-history is \(keepHistory); give 1 or more commits to keep.")
    }
  }

  func run() throws {
    try reportingErrors {
      let progress = Progress()
      progress.update("compacting \(file)…", force: true)
      let retention: LogHistoryRetention = keepHistory.map { $0 > 1 ? .versions($0) : .none } ?? .none
      let store = try openWriter(file, keepHistory: retention)
      defer { store.close() }
      let before = store.fileSize
      let commitsBefore = try store.history()
      try store.compact()
      let commitsAfter = try store.history()
      progress.finish()
      if !store.recoveryReport.isClean { print("recovered: \(store.recoveryReport)") }
      print("compacted \(file): \(before) → \(store.fileSize) bytes, \(store.count) records")
      print(Compact.historyLine(before: commitsBefore.map(\.version), after: commitsAfter.map(\.version)))
      // The key order still lists every key, at the log's new size.
      var order = KeyOrder.load(for: file)
      if order.isComplete(forLogSize: before) {
        order.logSize = store.fileSize
        try order.save(for: file)
      }
    }
  }

  /// What compaction did to the history, and how to keep more.
  static func historyLine(before: [UInt64], after: [UInt64]) -> String {
    let kept = Set(after)
    let discarded = before.filter { !kept.contains($0) }
    let s = { (n: Int) in n == 1 ? "" : "s" }
    guard let first = discarded.first, let last = discarded.last else {
      return "history: kept all \(after.count) commit\(s(after.count)); nothing discarded"
    }
    let range = first == last ? "version \(first)" : "versions \(first)–\(last)"
    return
      "history: discarded \(discarded.count) commit\(s(discarded.count)) (\(range)); kept \(after.count) "
      + "(--as-of reads \(after.count == 1 ? "version \(after[0])" : "versions \(after.first!)–\(after.last!)")); "
      + "keep more with --keep-history N"
  }
}

/// `requestset recover FILE --mode MODE`: opens a damaged log with a recovery mode.
struct Recover: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Open a damaged log with a recovery mode and write the result.",
    discussion: """
      Modes: truncateTornTail (cut an interrupted last write; refuse other damage), \
      failOnAnyDamage (change nothing; fail on any damage), stopAtFirstDamage (keep the \
      writes before the first damage, cut the rest), skipDamagedFrames (keep every intact \
      record, rewrite the file). Whatever is cut or left out is first kept in \
      FILE.damaged-OFFSET, as the library does; the report names the file. Run `requestset \
      verify FILE` first to see what each mode does.
      """)

  enum Mode: String, ExpressibleByArgument, CaseIterable {
    case truncateTornTail, failOnAnyDamage, stopAtFirstDamage, skipDamagedFrames

    var libraryMode: LogRecoveryMode {
      switch self {
      case .truncateTornTail: return .truncateTornTail
      case .failOnAnyDamage: return .failOnAnyDamage
      case .stopAtFirstDamage: return .stopAtFirstDamage
      case .skipDamagedFrames: return .skipDamagedFrames
      }
    }
  }

  @Argument(help: "The log file.") var file: String
  @Option(help: "truncateTornTail, failOnAnyDamage, stopAtFirstDamage or skipDamagedFrames.") var mode: Mode

  func run() throws {
    try reportingErrors {
      let store = try openWriter(file, recovery: mode.libraryMode)
      defer { store.close() }
      print(store.recoveryReport)
    }
  }
}

/// `requestset index FILE create|drop|list [KEY...]`: the log's secondary indexes; several
/// keys make a composite index.
struct Index: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Create, drop or list a log's secondary indexes.",
    discussion: """
      Index definitions are stored in the log (an indexes frame), so every program that \
      opens it, and `requestset query`, uses them; their entries are rebuilt from the \
      records on open. Several keys make one composite index, ordered by the first key, \
      then the next: `index pets.rslog create species age`.
      """)

  enum Action: String, ExpressibleByArgument, CaseIterable { case create, drop, list }

  @Argument(help: "The log file.") var file: String
  @Argument(help: "create, drop or list.") var action: Action
  @Argument(help: "The key to index: a field name or a dotted path; several for a composite index.")
  var keys: [String] = []
  @Flag(help: "With create: refuse two records with the same non-nil value.") var unique = false

  func run() throws {
    try reportingErrors {
      if action == .list {
        let store = try openReader(file)
        defer { store.close() }
        for index in store.indexes { print(index.unique ? "\(index.key) (unique)" : index.key) }
        return
      }
      guard !keys.isEmpty else { throw ToolError("`index \(action.rawValue)` needs the KEY to index.") }
      let store = try openWriter(file)
      defer { store.close() }
      let index = RequestIndex(keys: keys, unique: unique)
      switch action {
      case .create:
        try store.createIndex(on: keys, unique: unique)
        print("created \(index)")
      case .drop:
        guard try store.dropIndex(on: keys) else { throw ToolError("\(file) has no index on \(index.key).") }
        print("dropped the index on \(index.key)")
      case .list: break
      }
    }
  }
}
