@testable import RequestSet
@testable import RequestSetSQLite

/// The commit feed inside a store, for tests that check who observes it: MemoryStore's and
/// LogStore's `_CommitFeed`, SQLiteStore's `_SQLiteFeed`.
struct ObservedFeed {
  private let observed: () -> Bool
  private let finishing: () -> Void

  /// Whether anyone observes the store's commits.
  var isObserved: Bool { observed() }

  /// Ends the feed, as closing the store does.
  func finish() { finishing() }

  /// The feed of `store`, or nil for a store whose feed the tests cannot see.
  static func of<R: Record>(_ store: any RecordStore<R>) -> ObservedFeed? {
    if let feed = (store as? any _CommitPublishing)?._liveFeed as? _CommitFeed<R> {
      return ObservedFeed(observed: { feed.isObserved }, finishing: { feed.finish() })
    }
    if let sqlite = store as? SQLiteStore<R> {
      return ObservedFeed(observed: { sqlite._feed.isObserved }, finishing: { sqlite._feed.finish() })
    }
    return nil
  }
}
