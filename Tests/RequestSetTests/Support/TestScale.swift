import Foundation

/// How far the long loops go: the soak, crash, fuzz and large-corpus tests.
///
/// `swift test` runs their quick form, which still reaches every case a test names (every
/// kind of damage, every store, every operator); `REQUESTSET_SOAK=1` runs them in full, as
/// `.ci/run` does, so CI still kills, fuzzes and soaks as long as before.
///
/// ```swift
/// let kills = TestScale.pick(quick: 40, soak: 200)
/// ```
enum TestScale {
  /// Whether `REQUESTSET_SOAK=1` asks for the full loops.
  static let soak = ProcessInfo.processInfo.environment["REQUESTSET_SOAK"] == "1"

  /// `soak` when the full loops were asked for, else `quick`.
  static func pick<T>(quick: T, soak: T) -> T { Self.soak ? soak : quick }
}

extension TestScale {
  /// Whether the quick form checks item `index` of a corpus on `kind`.
  ///
  /// The stores that run queries in process check every item. The four that run them in a
  /// database, or as one would (`sqlite`, `indexedSQLite`, `postgres`, `pushdownMemory`),
  /// pay a statement per query, so each checks every third item, from an offset of its own:
  /// between SQLite, indexed SQLite and PostgreSQL every item still meets a SQL engine.
  /// With `REQUESTSET_SOAK=1` every store checks every item.
  static func checks(_ index: Int, on kind: StoreKind) -> Bool {
    guard !soak else { return true }
    switch kind {
    case .sqlite: return index % 3 == 0
    case .indexedSQLite, .pushdownMemory: return index % 3 == 1
    case .postgres, .pgbouncer: return index % 3 == 2
    case .memory, .array, .log, .indexedMemory, .indexedLog: return true
    }
  }
}
