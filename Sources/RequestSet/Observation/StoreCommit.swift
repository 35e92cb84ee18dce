import Foundation
import Synchronization

/// One committed write of a store, as observers see it.
///
/// ```swift
/// for await commit in store.commits() {
///   print("version \(commit.version): \(commit.changes?.count ?? 0) changes")
/// }
/// ```
public struct StoreCommit<Element: Record>: Sendable {
  /// The store's version after the commit (``StoreSnapshot/version``).
  public let version: UInt64
  /// What the commit applied, in order; nil when the store cannot say (a store polled for
  /// changes, or a log written by another process), so observers re-read everything.
  public let changes: [RecordChange<Element>]?

  /// Creates a commit notice; stores written outside the package publish these.
  public init(version: UInt64, changes: [RecordChange<Element>]?) {
    self.version = version
    self.changes = changes
  }
}

extension RecordStore {
  /// The store's commits, from now on: the default polls ``snapshot()`` every
  /// `interval` and reports a commit, without its changes, whenever the version moves.
  ///
  /// Built-in stores override this to report every commit as it happens, with its changes.
  /// The stream ends when ``snapshot()`` throws `.closed` (the store was closed).
  ///
  /// ```swift
  /// for await commit in store.commits() { … }
  /// ```
  public func commits(polling interval: Duration = .milliseconds(50)) -> AsyncStream<StoreCommit<Element>> {
    AsyncStream { continuation in
      // The version as the stream is made, not when its task first runs: a commit between
      // the two would otherwise pass unreported.
      let start = (try? snapshot().version) ?? 0
      let task = Task { [self] in
        var last = start
        while !Task.isCancelled {
          try? await Task.sleep(for: interval)
          let version: UInt64
          do {
            version = try snapshot().version
          } catch let error as RequestSetError where error.code == .closed {
            break  // the store was closed: the stream ends
          } catch {
            continue
          }
          if version != last {
            last = version
            continuation.yield(StoreCommit(version: version, changes: nil))
          }
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }
}

/// The observers of one store: each gets every commit, through its own stream or handler.
///
/// A store publishes after its write has committed and released its lock, so observers
/// never run under the store's lock. Two writers may publish in the other order than they
/// committed; observers that care compare ``StoreCommit/version``s.
final class _CommitFeed<Element: Record>: Sendable {
  /// The handlers by id; nil once the store has closed, so later observers end at once.
  private let observers = _Lock<[UInt64: @Sendable (StoreCommit<Element>?) -> Void]?>([:])
  private let nextID = Atomic<UInt64>(0)

  /// Whether anyone is listening: stores skip building notices otherwise.
  var isObserved: Bool { observers.withLock { !($0?.isEmpty ?? true) } }

  /// Every commit from now on, through a stream that keeps each one until it is read
  /// (what ``RecordStore/commits(polling:)`` promises its reader). After the store has
  /// closed, the stream is already finished.
  func subscribe() -> AsyncStream<StoreCommit<Element>> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: StoreCommit<Element>.self, bufferingPolicy: .unbounded)
    guard
      let id = add({ commit in
        if let commit { continuation.yield(commit) } else { continuation.finish() }
      })
    else {
      continuation.finish()  // the store is closed: nothing will ever come
      return stream
    }
    continuation.onTermination = { [weak self] _ in self?.remove(id) }
    return stream
  }

  /// Calls `receive` with every commit from now on, on the writing thread just after the
  /// write, and with nil if the feed ends; until ``remove(_:)``. `receive` must be quick.
  ///
  /// - Returns: The id to remove the handler with, or nil when the store has closed (the
  ///   handler is not kept and will never be called).
  func add(_ receive: @escaping @Sendable (StoreCommit<Element>?) -> Void) -> UInt64? {
    let id = nextID.add(1, ordering: .relaxed).newValue
    let open = observers.withLock { table in
      if table == nil { return false }
      table?[id] = receive
      return true
    }
    return open ? id : nil
  }

  /// Stops calling a handler that ``add(_:)`` registered.
  func remove(_ id: UInt64) {
    _ = observers.withLock { $0?.removeValue(forKey: id) }
  }

  func publish(_ commit: StoreCommit<Element>) {
    for receive in observers.withLock({ Array($0?.values ?? [:].values) }) { receive(commit) }
  }

  /// Ends every observer's sequence, now and later (a store that closes calls this):
  /// streams finish and live request sets end after the last state they were told of.
  func finish() {
    let all = observers.withLock { table in
      defer { table = nil }
      return Array(table?.values ?? [:].values)
    }
    for receive in all { receive(nil) }
  }
}

/// A store whose commits reach live request sets straight from its writes, with no stream
/// buffer in between (see ``_CommitInbox``).
protocol _CommitPublishing: AnyObject {
  /// The store's ``_CommitFeed`` (of its element type), or nil when the store learns of
  /// commits by polling (a read-only ``LogStore``).
  var _liveFeed: AnyObject? { get }
}

extension MemoryStore: _CommitPublishing {
  var _liveFeed: AnyObject? { _feed }
}
