import CLibPQ
import Foundation
import RequestSet
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension PostgresStore {
  /// Every commit to the store's table from now on, this process's and other processes'
  /// and machines' alike, in order, each with its inserts, saves and deletes.
  ///
  /// Each write transaction records its changes in `requestset_changes`, bumps the
  /// table's version (its commit counter) and sends `NOTIFY requestset`; the stream holds
  /// a connection of its own that `LISTEN`s, and reads the new commits when notified, and
  /// when it connects (again). An idle stream sends the server nothing but a check of the
  /// table's version every second (or every `interval`, if longer), should a notification
  /// be lost: thousands of idle listeners cost the server little. Through a transaction
  /// pooler, where `LISTEN` does not work, the stream does not listen but reads the
  /// version at the interval ``PostgresConnectionOptions/commitDetection`` gives (250 ms
  /// by default), and the new commits when it moved. A commit whose changes were too
  /// large to record, or were pruned, comes without its changes. The stream ends when the
  /// store is closed.
  ///
  /// The stream listens on the primary, even when the store reads from replicas (a
  /// standby cannot `LISTEN`); the store's reads after a commit the stream delivered wait
  /// for a replica to replay it (see ``PostgresConnectionOptions/replicaWait``), so a live
  /// set re-read after a commit sees it.
  ///
  /// ```swift
  /// for await commit in store.commits() { print(commit.version, commit.changes?.count ?? 0) }
  /// ```
  /// - Parameter interval: How often the stream wakes to see whether it was notified or
  ///   the store was closed; the version check of an idle stream runs every second (or
  ///   every poll interval of ``PostgresConnectionOptions/commitDetection``), or every
  ///   `interval` if that is longer.
  /// - Returns: The stream of commits.
  public func commits(polling interval: Duration = .milliseconds(50)) -> AsyncStream<StoreCommit<Element>> {
    // Polling (through a transaction pooler) reads the commit counter without LISTEN.
    var listens = true
    var check = max(interval, .seconds(1))
    if case .poll(let every) = _pool.options._commitDetection {
      listens = false
      check = max(interval, every)
    }
    // With no notification, a version check this often (a lost notification costs at
    // most this much delay; an idle stream costs the server one statement a second).
    let (listening, checkEvery) = (listens, check)
    return AsyncStream { continuation in
      // LISTEN before reading the start version: a commit between the two is then seen.
      let listener = try? _pool.open()
      if listening { _ = try? listener?.execute("LISTEN requestset") }
      let start = (try? listener.map { try _version($0) } ?? _pool.with { try _version($0) }) ?? 0
      let stop = _StopFlag()
      let milliseconds = max(
        1, Int(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000))
      let box = _ConnectionBox(listener)
      Thread.detachNewThread { [self] in
        var last = start
        var listener = box.connection
        // Read at once: a commit may have landed between the LISTEN and the start version.
        var notified = true
        var checked = ContinuousClock.now
        while !stop.isSet && !_pool.isClosed {
          if !listening, listener.map({ !$0.isBroken }) ?? false {
            usleep(UInt32(milliseconds * 1000))
          } else if let c = listener, !c.isBroken {
            var waiting = pollfd(fd: PQsocket(c.handle), events: Int16(POLLIN), revents: 0)
            _ = poll(&waiting, 1, Int32(milliseconds))
            _ = PQconsumeInput(c.handle)
            while let notice = PQnotifies(c.handle) {
              PQfreemem(notice)
              notified = true
            }
          } else {
            usleep(UInt32(milliseconds * 1000))
            listener = try? _pool.open()
            if listening { _ = try? listener?.execute("LISTEN requestset") }
            // Notifications sent while no connection listened are lost: read what came.
            notified = listener != nil
          }
          if stop.isSet || _pool.isClosed { break }
          guard let c = listener else { continue }
          if !notified {
            guard ContinuousClock.now - checked >= checkEvery else { continue }
            checked = ContinuousClock.now
            // One statement outside a transaction; the commits are read only if it moved.
            guard let current = try? _version(c) else {
              if c.isBroken { listener = nil }
              continue
            }
            guard current > last else { continue }
          }
          notified = false
          checked = ContinuousClock.now
          do {
            // One snapshot for both reads: a commit landing between them is read next time.
            try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { _ = try? c.execute("COMMIT") }
            let rows = try c.execute(
              "SELECT version, changes FROM requestset_changes WHERE name = $1 AND version > $2 ORDER BY version",
              [_table, String(last)])
            let current = try _version(c)
            // Reads from replicas after these commits (a live set's re-read) wait for them.
            if rows.count > 0 || current > last { _noteCommit(c, ownCommit: false) }
            for row in 0..<rows.count {
              guard let version = rows.string(row, 0).flatMap(UInt64.init) else { continue }
              let changes = rows.string(row, 1).flatMap { try? _changes(fromText: $0) }
              continuation.yield(StoreCommit(version: version, changes: changes))
              last = version
            }
            if current > last {
              // Pruned before we read them: report where the store is, without changes.
              continuation.yield(StoreCommit(version: current, changes: nil))
              last = current
            }
          } catch {
            if c.isBroken { listener = nil }
          }
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in stop.set() }
    }
  }
}

/// A flag one thread sets and another reads.
final class _StopFlag: Sendable {
  private let flag = Atomic<Bool>(false)
  var isSet: Bool { flag.load(ordering: .acquiring) }
  func set() { flag.store(true, ordering: .releasing) }
}

/// Hands a connection to the listening thread, which alone uses it from then on.
struct _ConnectionBox: Sendable {
  let connection: _PGConnection?
  init(_ connection: _PGConnection?) { self.connection = connection }
}
