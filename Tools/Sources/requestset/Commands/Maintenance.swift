import ArgumentParser
import Foundation
import RequestSet

struct Compact: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Rewrite a log with only its live records, reclaiming dead space.",
    discussion: "An interrupted last write is cut off first (and kept in FILE.damaged-OFFSET), as on every open.")

  @Argument(help: "The log file.") var file: String

  func run() throws {
    try reportingErrors {
      let progress = Progress()
      progress.update("compacting \(file)…", force: true)
      let store = try openWriter(file)
      defer { store.close() }
      let before = store.fileSize
      try store.compact()
      progress.finish()
      if !store.recoveryReport.isClean { print("recovered: \(store.recoveryReport)") }
      print("compacted \(file): \(before) → \(store.fileSize) bytes, \(store.count) records")
    }
  }
}

struct Recover: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Open a damaged log with a recovery mode and write the result.",
    discussion: """
      Modes: truncateTornTail (cut an interrupted last write; refuse other damage), failOnAnyDamage
      (change nothing; fail on any damage), stopAtFirstDamage (keep the writes before the first
      damage, cut the rest), skipDamagedFrames (keep every intact record, rewrite the file).
      Whatever is cut or left out is first kept in FILE.damaged-OFFSET, as the library does;
      the report names the file. Run `requestset verify FILE` first to see what each mode does.
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

struct Index: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Create, drop or list a log's secondary indexes.",
    discussion: """
      Index definitions are stored in the log (an indexes frame), so every program that opens
      it, and `requestset query`, uses them; their entries are rebuilt from the records on open.
      """)

  enum Action: String, ExpressibleByArgument, CaseIterable { case create, drop, list }

  @Argument(help: "The log file.") var file: String
  @Argument(help: "create, drop or list.") var action: Action
  @Argument(help: "The key to index: a field name or a dotted path.") var key: String?
  @Flag(help: "With create: refuse two records with the same non-nil value.") var unique = false

  func run() throws {
    try reportingErrors {
      if action == .list {
        let store = try openReader(file)
        defer { store.close() }
        for index in store.indexes { print(index.unique ? "\(index.key) (unique)" : index.key) }
        return
      }
      guard let key else { throw ToolError("`index \(action.rawValue)` needs the KEY to index.") }
      let store = try openWriter(file)
      defer { store.close() }
      switch action {
      case .create:
        try store.createIndex(key, unique: unique)
        print("created \(RequestIndex(key: key, unique: unique))")
      case .drop:
        guard try store.dropIndex(key) else { throw ToolError("\(file) has no index on \(key).") }
        print("dropped the index on \(key)")
      case .list: break
      }
    }
  }
}
