import Foundation

/// A store that keeps its past commits readable: what `RequestSet(_:asOf:)` reads.
/// ``LogStore`` is the one that does; a request set as of a version of any other store
/// throws `.versionUnavailable`.
protocol _PastReading<Element>: AnyObject, Sendable {
  associatedtype Element: Record
  /// The store as it was at commit `version`, or `.versionUnavailable` naming the range.
  func _snapshot(asOf version: UInt64) throws -> StoreSnapshot<Element>
  /// The version of the newest commit at or before `time`.
  func _version(asOf time: Date) throws -> UInt64
}
