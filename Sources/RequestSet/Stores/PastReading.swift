import Foundation

/// A store that keeps its past commits readable: what `RequestSet(_:asOf:)` reads.
/// ``LogStore`` is the one that does; a request set as of a version of any other store
/// throws `.versionUnavailable`.
protocol _PastReading<Element>: AnyObject, Sendable {
  associatedtype Element: Record
  /// The store as it was at commit `version`, or `.versionUnavailable` naming the range.
  func _snapshot(asOf version: UInt64) throws -> StoreSnapshot<Element>
  /// The store as it was at the newest commit made at or before `time`, or
  /// `.versionUnavailable` when no kept commit is that old. The commit is found and read
  /// in one look at the store: a compaction between finding a version and reading it
  /// would otherwise drop the version found (as it did for reads as of now).
  func _snapshot(asOf time: Date) throws -> StoreSnapshot<Element>
}
