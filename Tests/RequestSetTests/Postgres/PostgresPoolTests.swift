import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// The pool of a ``PostgresStore`` is a hard bound: `connections:` sessions at most, for
/// writes, single reads and every evaluation's read transaction alike, sync or async; a
/// finished call keeps none; `close()` ends every session the store opened.
///
/// Each test opens its store in a database of its own and counts that database's
/// sessions in `pg_stat_activity` from a connection to another database
/// (``SessionSampler``), so suites running beside it disturb nothing.
@Suite(.enabled(if: PostgresServer.testsRun), .ownThreads) struct PostgresPoolTests {
  static let herd = Animal.random(count: 200, seed: 35)

  /// A new, empty database on the test server.
  static func freshDatabase() throws -> String {
    let name = PostgresServer.freshTable("pool")
    try PostgresServer.execute("CREATE DATABASE \"\(name)\"")
    return name
  }

  /// A store over ``herd`` in a database of its own, with `connections` connections.
  static func store(connections: Int) throws -> (PostgresStore<Animal>, SessionSampler) {
    let database = try freshDatabase()
    let store = try PostgresStore<Animal>(
      url: PostgresServer.url(database: database), table: "animals", connections: connections)
    try store.insert(contentsOf: herd)
    return (store, try SessionSampler(database: database))
  }

  /// 300 async reads at once, of every form (and a write through a query among them), on
  /// a store of two connections: every answer right, never more than two sessions (counted
  /// while they run), none after `close()`, and a typed `.closed` for the next call.
  /// Before, each finished job kept its set, and with it a read transaction on a connection
  /// outside the pool: 50 of 300 failed with "too many clients", and those that ran held
  /// dozens of sessions.
  @Test func threeHundredConcurrentAsyncReadsHoldAtMostThePoolsConnections() async throws {
    let (store, sampler) = try Self.store(connections: 2)
    defer { store.close() }
    let herd = Self.herd
    let cows = herd.filter { $0.species == "Cow" }
    let youngest = herd.min { ($0.age, $0.id) < ($1.age, $1.id) }
    let names = herd.sorted { $0.id < $1.id }.map { FieldValue.string($0.name) }
    let ageSum = herd.reduce(0) { $0 + $1.age }
    let speciesCount = Set(herd.map(\.species)).count
    let all = RequestSet(store)
    sampler.start()
    defer { _ = sampler.stop() }
    let failures = try await withThrowingTaskGroup(of: String?.self) { group in
      for i in 0..<300 {
        group.addTask { () -> String? in
          switch i % 10 {
          case 0, 1, 2, 3:
            let n = try await all.filter("species", value: "Cow").async.fetchCount()
            return n == cows.count ? nil : "fetchCount: \(n)"
          case 4:
            let records = try await all.filter("species", value: "Cow").sortBy(\.id).async.fetch()
            return records == cows.sorted { $0.id < $1.id } ? nil : "fetch: \(records.count) records"
          case 5:
            let first = try await all.sortBy("age", "id").async.fetchFirst()
            return first == youngest ? nil : "fetchFirst: \(String(describing: first))"
          case 6:
            let sum = try await all.async.sum("age")
            return sum == .int(ageSum) ? nil : "sum: \(sum)"
          case 7:
            let values = try await all.sortBy("id").async.values("name")
            return values.map { $0["name"] ?? .null } == names ? nil : "values: \(values.count)"
          case 8:
            let groups = try await all.groupBy("species").aggregate(.count).async.fetch()
            return groups.count == speciesCount ? nil : "groups: \(groups.count)"
          default:
            let n = try await all.filter(\.id == 1).async.update("nickname", value: "One")
            return n == 1 ? nil : "update: \(n)"
          }
        }
      }
      var failures: [String] = []
      for try await failure in group { if let failure { failures.append(failure) } }
      return failures
    }
    let (peak, samples) = sampler.stop()
    #expect(failures.isEmpty, "\(failures.prefix(5))")
    #expect(samples > 0)
    #expect(peak <= 2, "\(peak) sessions at once on a store of 2 connections")
    store.close()
    #expect(try await eventually { try sampler.sessions() == 0 })
    let error = await #expect(throws: RequestSetError.self) { try await all.async.fetchCount() }
    #expect(error?.code == .closed)
  }

  /// 150 async calls one after another, each on a new set, and then 150 synchronous ones:
  /// no session left in a transaction, none beyond the pool. Before, the store's threads
  /// kept every finished job (and its set's read transaction) until their queue was next
  /// compacted: about 65 sessions, most "idle in transaction".
  @Test func sequentialCallsLeaveNoTransactionOpen() async throws {
    let (store, sampler) = try Self.store(connections: 2)
    defer { store.close() }
    for i in 0..<150 {
      let n = try await RequestSet(store).filter(\.age >= i % 7).async.fetchCount()
      #expect(n == Self.herd.filter { $0.age >= i % 7 }.count)
    }
    #expect(try sampler.sessions() <= 2)
    #expect(try sampler.sessions(state: "idle in transaction") == 0)
    for i in 0..<150 {
      #expect(try RequestSet(store).filter(\.age >= i % 7).fetchCount() == Self.herd.filter { $0.age >= i % 7 }.count)
    }
    #expect(try sampler.sessions() <= 2)
    #expect(try sampler.sessions(state: "idle in transaction") == 0)
  }

  /// Synchronous reads and writes from six threads at once on a store of two
  /// connections: the others wait for a connection rather than open more. Before, each
  /// evaluation opened a connection of its own beside the pool's.
  @Test func synchronousCallsFromManyThreadsWaitForThePool() async throws {
    let (store, sampler) = try Self.store(connections: 2)
    defer { store.close() }
    let cows = Self.herd.filter { $0.species == "Cow" }.count
    sampler.start()
    defer { _ = sampler.stop() }
    let wrong = await onOwnThread { () -> Int in
      let wrong = Atomic<Int>(0)
      let threads = (0..<6).map { t in
        Thread {
          for i in 0..<25 {
            do {
              if i % 5 == 4 {
                try store.save(Animal(id: 10_000 + t, name: "T\(t)", species: "Yak", age: i))
              } else if try RequestSet(store).filter("species", value: "Cow").fetchCount() != cows {
                wrong.add(1, ordering: .relaxed)
              }
            } catch {
              wrong.add(1, ordering: .relaxed)
            }
          }
        }
      }
      for thread in threads { thread.start() }
      while threads.contains(where: { !$0.isFinished }) { usleep(2_000) }
      return wrong.load(ordering: .relaxed)
    }
    let (peak, samples) = sampler.stop()
    #expect(wrong == 0)
    #expect(samples > 0)
    let opened = (store._pool._opened.load(ordering: .relaxed), store._pool._overflows.load(ordering: .relaxed))
    #expect(peak <= 2, "\(peak) sessions at once on a store of 2 connections; opened, beyond the limit: \(opened)")
  }

  /// Ten counted sets kept at once on a store of two connections: their read transactions
  /// wait parked on the pool's connections, and a call that needs one takes a parked one
  /// back (its transaction ended). A set whose table did not change meanwhile reads on
  /// in a new transaction as if nothing happened; one whose table changed throws
  /// `.conflict` rather than mixing two states of the table.
  @Test func countedSetsLendTheirConnections() throws {
    let (store, sampler) = try Self.store(connections: 2)
    defer { store.close() }
    let species = ["Cow", "Dog", "Cat", "Mouse", "Horse"]
    let sets = (0..<10).map { RequestSet(store).filter("species", value: species[$0 % 5]).sortBy(\.id) }
    for (i, set) in sets.enumerated() {
      #expect(set.count == Self.herd.filter { $0.species == species[i % 5] }.count)
    }
    #expect(try sampler.sessions() <= 2)
    for (i, set) in sets.enumerated() {
      #expect(try set.fetch() == Self.herd.filter { $0.species == species[i % 5] }.sorted { $0.id < $1.id })
    }
    #expect(try sampler.sessions() <= 2)

    // One connection: a write takes the counted set's, and the table moves on.
    let (single, _) = try Self.store(connections: 1)
    defer { single.close() }
    let counted = RequestSet(single).filter("species", value: "Cow")
    #expect(counted.count == Self.herd.filter { $0.species == "Cow" }.count)
    try single.insert(Animal(id: 9_999, name: "Late", species: "Cow", age: 1))
    let error = #expect(throws: RequestSetError.self) { try counted.fetch() }
    #expect(error?.code == .conflict)
    #expect(
      error?.message
        == "The table \"animals\" changed while this evaluation waited between two reads (a set counted and not "
        + "yet read, say) and its connection served another call (all 1 were busy), so it can no longer read the "
        + "state it began with. Read the set again (refreshed()), or open the store with more connections.")
    // A read in between changes nothing: the set reads on.
    let again = RequestSet(single).filter("species", value: "Cow")
    #expect(again.count == Self.herd.filter { $0.species == "Cow" }.count + 1)
    #expect(try single.fetch(id: 9_999)?.name == "Late")
    #expect(try again.fetch().count == Self.herd.filter { $0.species == "Cow" }.count + 1)
  }

  /// A call never waits for itself: on a store of one connection, with a reader in use on
  /// this thread, a read of another set of the same store (what an evaluation through a
  /// self-relation does) opens a second session rather than wait for the first, and
  /// closes it when done.
  @Test func aNestedReadOnOneThreadDoesNotWaitForItself() async throws {
    let (store, sampler) = try Self.store(connections: 1)
    defer { store.close() }
    let cows = Self.herd.filter { $0.species == "Cow" }.count
    let counts = try await onOwnThread { () -> [Int] in
      let outer = try store.queryReader()
      let before = try outer.count(StoreQuery())
      let nested = try RequestSet(store).filter("species", value: "Cow").fetchCount()
      return [before, nested, try outer.count(StoreQuery())]
    }
    #expect(counts == [Self.herd.count, cows, Self.herd.count])
    #expect(try await eventually { try sampler.sessions() <= 1 })
  }

  /// `close()` ends the sessions of evaluations in progress too (a counted set's parked
  /// read transaction) and of `commits()` listeners; the set's next read throws `.closed`.
  @Test func closeEndsEverySessionTheStoreOpened() async throws {
    let (store, sampler) = try Self.store(connections: 3)
    let counted = RequestSet(store).filter("species", value: "Dog")
    #expect(counted.count == Self.herd.filter { $0.species == "Dog" }.count)
    let commits = store.commits()
    let listening = Task { for await _ in commits {} }
    #expect(try await eventually { try sampler.sessions() >= 2 })
    store.close()
    #expect(try await eventually { try sampler.sessions() == 0 })
    let error = #expect(throws: RequestSetError.self) { try counted.fetch() }
    #expect(error?.code == .closed)
    #expect(error?.message.hasPrefix("The PostgresStore at ") == true)
    #expect(throws: RequestSetError.self) { try store.insert(Animal(id: 5_000, name: "x", species: "y", age: 1)) }
    await listening.value
  }
}

/// Counts one database's client sessions in `pg_stat_activity` (not the server's own
/// workers: an autovacuum worker on the test's table also shows under its database, and
/// made a store of 2 connections look like 3 under load) through a connection to another
/// database, and, between ``start()`` and ``stop()``, samples them on a thread of its own,
/// keeping the most it saw.
final class SessionSampler: Sendable {
  let database: String
  /// Used by the sampling thread while it runs, and by the test's calls otherwise.
  private let monitor: _PGConnection
  private let stopping = Atomic<Bool>(false)
  private let running = Atomic<Bool>(false)
  private let peak = Atomic<Int>(0)
  private let samples = Atomic<Int>(0)
  private let finished = DispatchSemaphore(value: 0)

  init(database: String) throws {
    self.database = database
    monitor = try _PGConnection(_ConnectionString(PostgresServer.url()))
  }

  /// The database's sessions now, or those in `state` (`idle in transaction`, say).
  func sessions(state: String? = nil) throws -> Int {
    let result =
      if let state {
        try monitor.execute(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND state = $2", [database, state])
      } else {
        try monitor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'", [database])
      }
    return Int(result.string(0, 0) ?? "") ?? -1
  }

  /// The database's sessions waiting for a lock now.
  func sessions(waitingForALock: Bool) throws -> Int {
    let result = try monitor.execute(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND (wait_event_type = 'Lock') = $2",
      [database, waitingForALock ? "t" : "f"])
    return Int(result.string(0, 0) ?? "") ?? -1
  }

  /// Starts sampling, every millisecond or so.
  func start() {
    running.store(true, ordering: .relaxed)
    Thread.detachNewThread { [self] in
      while !stopping.load(ordering: .acquiring) {
        if let n = try? sessions() {
          _ = peak.max(n, ordering: .relaxed)
          samples.add(1, ordering: .relaxed)
        }
        usleep(1_000)
      }
      finished.signal()
    }
  }

  /// Stops sampling (once; later calls only answer) and returns the most sessions seen
  /// and how many samples were taken.
  func stop() -> (peak: Int, samples: Int) {
    if running.exchange(false, ordering: .relaxed) {
      stopping.store(true, ordering: .releasing)
      finished.wait()
    }
    return (peak.load(ordering: .relaxed), samples.load(ordering: .relaxed))
  }
}
