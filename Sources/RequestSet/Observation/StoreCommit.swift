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
      let task = Task { [self] in
        var last = (try? snapshot().version) ?? 0
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

/// The observers of one store: each gets every commit in order through its own stream.
///
/// A store publishes after its write has committed and released its lock, so observers
/// never run under the store's lock.
final class _CommitFeed<Element: Record>: Sendable {
  private let observers = _Lock<[UInt64: AsyncStream<StoreCommit<Element>>.Continuation]?>([:])
  private let nextID = Atomic<UInt64>(0)

  /// Whether anyone is listening: stores skip building notices otherwise.
  var isObserved: Bool { observers.withLock { !($0?.isEmpty ?? true) } }

  func subscribe() -> AsyncStream<StoreCommit<Element>> {
    let (stream, continuation) = AsyncStream.makeStream(of: StoreCommit<Element>.self, bufferingPolicy: .unbounded)
    let id = nextID.add(1, ordering: .relaxed).newValue
    let open = observers.withLock { table in
      if table == nil { return false }
      table?[id] = continuation
      return true
    }
    if !open {
      continuation.finish()  // the store is closed: nothing will ever come
      return stream
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.observers.withLock { $0?.removeValue(forKey: id) }
    }
    return stream
  }

  func publish(_ commit: StoreCommit<Element>) {
    for c in observers.withLock({ Array($0?.values ?? [:].values) }) { c.yield(commit) }
  }

  /// Ends every stream, now and later: the store was closed.
  func finish() {
    let all = observers.withLock { table in
      defer { table = nil }
      return Array(table?.values ?? [:].values)
    }
    for c in all { c.finish() }
  }
}
