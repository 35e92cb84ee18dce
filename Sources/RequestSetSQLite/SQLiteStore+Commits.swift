#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import RequestSet
import Synchronization
import _RequestSetSQL

extension SQLiteStore {
  /// The store's commits as they happen: this store's own at once, with their changes, and
  /// the commits of other connections and processes on the same file, found by checking
  /// `PRAGMA data_version` every `interval`, with the changes they recorded in
  /// `requestset_changes` (nil when the writer's batch was too big to record, or the
  /// records were pruned: reload then).
  ///
  /// ```swift
  /// for await commit in store.commits(polling: .milliseconds(100)) {
  ///   print(commit.version, commit.changes?.count ?? 0)
  /// }
  /// ```
  /// - Parameter interval: How often to look for other connections' commits.
  /// - Returns: A stream that ends when the store is closed.
  public func commits(polling interval: Duration = .milliseconds(50)) -> AsyncStream<StoreCommit<Element>> {
    let (stream, continuation) = AsyncStream.makeStream(of: StoreCommit<Element>.self, bufferingPolicy: .unbounded)
    let start: UInt64? = try? _writer.withLock { c in try c.map { try _version($0) } }
    guard let start,
      let id = _feed.add({ commit in
        if let commit { continuation.yield(commit) } else { continuation.finish() }
      })
    else {
      continuation.finish()
      return stream
    }
    let poller = _SQLitePoller(store: self, from: start)
    let task = Task { [weak self] in
      while !Task.isCancelled {
        try? await Task.sleep(for: max(interval, .milliseconds(1)))
        guard self != nil, !Task.isCancelled else { break }
        guard let commits = try? poller.poll() else { continue }
        for commit in commits { continuation.yield(commit) }
      }
    }
    continuation.onTermination = { [weak self] _ in
      task.cancel()
      self?._feed.remove(id)
    }
    return stream
  }
}

/// Reads other connections' commits from `requestset_changes`.
final class _SQLitePoller<Element: Record>: Sendable {
  private struct State {
    var connection: _SQLiteConnection?
    var last: UInt64
    var dataVersion: Int64 = -1
  }
  private let state: Mutex<State>
  private weak let store: SQLiteStore<Element>?

  init(store: SQLiteStore<Element>, from version: UInt64) {
    self.store = store
    state = Mutex(State(connection: nil, last: version))
  }

  func poll() throws -> [StoreCommit<Element>] {
    guard let store else { return [] }
    return try state.withLock { state in
      let c = try state.connection ?? _SQLiteConnection(path: store.path, create: false)
      state.connection = c
      let data = try c.prepare("PRAGMA data_version")
      _ = try data.step(doing: "poll for commits")
      let dataVersion = data.int(0)
      guard dataVersion != state.dataVersion else { return [] }
      state.dataVersion = dataVersion
      try c.execute("BEGIN", doing: "read commits")
      defer { _ = sqlite3_exec(c.handle, "ROLLBACK", nil, nil, nil) }
      let current = try store._version(c)
      guard current > state.last else { return [] }
      let rows = try c.prepare(
        "SELECT version, op, id, origin = ? FROM requestset_changes WHERE tbl = ? AND version > ? AND version <= ? "
          + "ORDER BY version, rowid")
      try rows.bind([.text(store._origin), .text(store.table), .int(Int64(state.last)), .int(Int64(current))])
      var byVersion: [UInt64: [(String, String)]] = [:]
      var own: Set<UInt64> = []
      while try rows.step(doing: "read commits") {
        if rows.int(3) != 0 { own.insert(UInt64(rows.int(0))) }
        byVersion[UInt64(rows.int(0)), default: []].append((rows.text(1), rows.text(2)))
      }
      let fetch = try c.prepare("SELECT body FROM \(store._quotedTable) WHERE id = ?")
      var commits: [StoreCommit<Element>] = []
      for version in (state.last + 1)...current where !own.contains(version) && !store._ownVersions.contains(version) {
        guard let logged = byVersion[version], !logged.contains(where: { $0.0 == "many" }) else {
          commits.append(StoreCommit(version: version, changes: nil))
          continue
        }
        var changes: [RecordChange<Element>] = []
        for (op, idText) in logged {
          let id = try SQLJSON.decode(idText).decode(Element.ID.self)
          if op == "delete" {
            changes.append(.delete(id: id))
            continue
          }
          // The record as it is now: a later commit may have changed it again, and that
          // commit follows in this list.
          sqlite3_reset(fetch.pointer)
          try fetch.bind([.text(idText)])
          guard try fetch.step(doing: "read a committed record") else {
            changes.append(.delete(id: id))
            continue
          }
          let record = try fetch.withText(0) {
            try SQLJSON.decodeRecord(Element.self, utf8: $0, in: "the table \(store.table) of \(store.path)")
          }
          changes.append(op == "insert" ? .insert(record) : .save(record))
        }
        commits.append(StoreCommit(version: version, changes: changes))
      }
      state.last = current
      return commits
    }
  }
}

/// This store's commit observers (the poller adds other connections' commits).
extension SQLiteStore {
  /// Hands a commit of this store to its observers and remembers its version for the
  /// pollers (see `_SQLiteOwnVersions`).
  func _publish(_ commit: StoreCommit<Element>) {
    _ownVersions.insert(commit.version)
    _feed.publish(commit)
  }
}

/// The last versions a store committed itself (at most ``limit``): its pollers read other
/// connections' commits from `requestset_changes`, whose rows name their origin, but the
/// table keeps only the last versions (8,192), and a poller that fell further behind
/// must still not report this store's own commits a second time.
final class _SQLiteOwnVersions: Sendable {
  static let limit = 1 << 16
  private let state = Mutex<(set: Set<UInt64>, order: [UInt64], head: Int)>(([], [], 0))

  func insert(_ version: UInt64) {
    state.withLock { s in
      guard s.set.insert(version).inserted else { return }
      s.order.append(version)
      if s.order.count - s.head > Self.limit {
        s.set.remove(s.order[s.head])
        s.head += 1
        if s.head > Self.limit {
          s.order.removeFirst(s.head)
          s.head = 0
        }
      }
    }
  }

  func contains(_ version: UInt64) -> Bool { state.withLock { $0.set.contains(version) } }
}

final class _SQLiteFeed<Element: Record>: Sendable {
  private let observers = Mutex<[UInt64: @Sendable (StoreCommit<Element>?) -> Void]?>([:])
  private let nextID = Atomic<UInt64>(0)

  func add(_ receive: @escaping @Sendable (StoreCommit<Element>?) -> Void) -> UInt64? {
    let id = nextID.add(1, ordering: .relaxed).newValue
    let open = observers.withLock { table in
      guard table != nil else { return false }
      table?[id] = receive
      return true
    }
    return open ? id : nil
  }

  /// Whether anyone observes the store's commits.
  var isObserved: Bool { observers.withLock { !($0?.isEmpty ?? true) } }

  func remove(_ id: UInt64) {
    _ = observers.withLock { $0?.removeValue(forKey: id) }
  }

  func publish(_ commit: StoreCommit<Element>) {
    for receive in observers.withLock({ Array(($0 ?? [:]).values) }) { receive(commit) }
  }

  func finish() {
    let all = observers.withLock { table in
      defer { table = nil }
      return Array((table ?? [:]).values)
    }
    for receive in all { receive(nil) }
  }
}
