import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite
import Synchronization
import Testing

@testable import RequestSet

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

/// The async API (`set.async`, `store.async`): the same answers as the synchronous calls
/// on every store, on the store's own threads, and cancellation that stops a query and
/// writes nothing.
@Suite(.ownThreads) struct AsyncTests {
  static let herd = Animal.random(count: 240, seed: 24)

  @Test(arguments: StoreKind.allCases + StoreKind.throughPgBouncer)
  func readsAnswerAsTheSynchronousReads(kind: StoreKind) async throws {
    let all = try kind.makeSet(Self.herd)
    let queries: [RequestSet<Animal>] = [
      all,
      all.filter("species", value: "Cow").sortBy(\.age).limit(7),
      all.filter(\.age > 4).sortBy("name", "id").offset(3),
      all.filter("owner.city", value: "Oslo", mode: .and).sortBy(\.weight, order: .descending),
      all.filter(\.species == "Nope"),
    ]
    for query in queries {
      let sync = query.refreshed()
      #expect(try await query.refreshed().async.fetch() == sync.fetch())
      #expect(try await query.refreshed().async.fetchCount() == sync.fetchCount())
      #expect(try await query.refreshed().async.fetchExists() == sync.fetchExists())
      #expect(try await query.refreshed().async.fetchFirst() == sync.first)
      #expect(try await query.refreshed().async.fetchLast() == sync.last)
      #expect(try await query.refreshed().async.values(\.name) == sync.values(\.name))
      #expect(try await query.refreshed().async.values("name", "age") == sync.values("name", "age"))
      #expect(try await query.refreshed().async.ids() == sync.ids())
      #expect(try await query.refreshed().async.sum(\.age) == sync.sum(\.age))
      #expect(try await query.refreshed().async.min(\.age) == sync.min(\.age))
      #expect(try await query.refreshed().async.max(\.weight) == sync.max(\.weight))
      #expect(try await query.refreshed().async.average(\.age) == sync.average(\.age))
      #expect(try await query.refreshed().async.average(\.weight) == sync.average(\.weight))
      #expect(try await query.refreshed().async.sum("age") == sync.sum("age"))
      #expect(try await query.refreshed().async.min("name") == sync.min("name"))
      #expect(try await query.refreshed().async.max("age") == sync.max("age"))
      #expect(try await query.refreshed().async.average("weight") == sync.average("weight"))
    }
    let groups = all.groupBy("species").aggregate(.count, .max("age"))
    #expect(try await groups.async.fetch() == groups.fetch())
    let one = all.filter(\.id == 17)
    #expect(try await one.async.get() == one.refreshed().get())
    // An evaluated set keeps its snapshot: an async read evaluates it as a sync read would.
    let evaluated = all.filter("species", value: "Dog")
    let records = try await evaluated.async.fetch()
    #expect(evaluated.count == records.count)
    #expect(try await all.async.run { set in set.count } == Self.herd.count)
  }

  /// Lookups by id, async beside sync, on seeded random sets: present and absent ids,
  /// windows, and shapes beside them that are not a lone lookup (a sort, a second filter, a
  /// string key, `reversed()`). On a MemoryStore the lone lookups are answered on the
  /// calling task (issue 35: the hop to a store thread and back cost 4× the lookup) and
  /// the others on its threads; every store answers each member as its synchronous read.
  @Test(arguments: StoreKind.allCases)
  func lookupsByIDAnswerAsTheSynchronousReads(kind: StoreKind) async throws {
    let all = try kind.makeSet(Self.herd)
    var rng = SeededRandom(seed: 0x35_1D)
    func outcome<T: Equatable>(_ body: () async throws -> T) async -> String {
      do { return "\(try await body())" } catch let error as RequestSetError { return "\(error.code)" } catch
      {
        return "\(type(of: error))"
      }
    }
    for i in 0..<120 {
      let id = Int.random(in: -2...(Self.herd.count + 2), using: &rng)
      var set: RequestSet<Animal>
      switch i % 6 {
      case 0, 1, 2: set = all.filter(\.id == id)
      case 3: set = all.filter(\.id == id).sortBy(\.age)
      case 4: set = all.filter("id", value: id)
      default: set = all.filter(\.id == id).filter(\.age >= 2)
      }
      if Bool.random(using: &rng) { set = set.offset(Int.random(in: 0...1, using: &rng)) }
      if Bool.random(using: &rng) { set = set.limit(Int.random(in: 0...2, using: &rng)) }
      if i % 11 == 0 { set = set.reversed() }
      let what = "lookup \(i) on \(kind): \(set.explain())"
      let one = set
      #expect(try await one.refreshed().async.fetch() == one.refreshed().fetch(), "\(what)")
      #expect(try await one.refreshed().async.fetchCount() == one.refreshed().fetchCount(), "\(what)")
      #expect(try await one.refreshed().async.fetchExists() == one.refreshed().fetchExists(), "\(what)")
      #expect(try await one.refreshed().async.fetchFirst() == one.refreshed().first, "\(what)")
      #expect(try await one.refreshed().async.fetchLast() == one.refreshed().last, "\(what)")
      #expect(try await one.refreshed().async.ids() == one.refreshed().ids(), "\(what)")
      #expect(try await one.refreshed().async.values(\.name) == one.refreshed().values(\.name), "\(what)")
      #expect(try await one.refreshed().async.sum(\.age) == one.refreshed().sum(\.age), "\(what)")
      #expect(try await one.refreshed().async.max(\.weight) == one.refreshed().max(\.weight), "\(what)")
      #expect(try await one.refreshed().async.average(\.age) == one.refreshed().average(\.age), "\(what)")
      let asyncGet = await outcome { try await one.refreshed().async.get() }
      let syncGet = await outcome { try one.refreshed().get() }
      #expect(asyncGet == syncGet, "\(what)")
    }
  }

  /// Where a MemoryStore's async reads run: a lone lookup by id on the calling task (its
  /// threads never start), anything else on its threads; a cancelled task's lookup throws
  /// `CancellationError` as the threads' path does; and a lookup racing writes (whose id
  /// map then belongs to a newer version than the set's snapshot) still answers right,
  /// on the threads.
  @Test func aMemoryStoreAnswersLookupsByIDOnTheCallingTask() async throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Self.herd)
    let threads = try #require(store.asyncThreads)
    let all = RequestSet(store)
    for record in Self.herd.prefix(40) {
      #expect(try await all.filter(\.id == record.id).async.get() == record)
      #expect(try await all.filter(\.id == record.id).limit(1).async.fetch() == [record])
      #expect(try await all.filter(\.id == record.id).async.fetchCount() == 1)
    }
    #expect(try await all.filter(\.id == -5).async.fetchExists() == false)
    #expect(threads._jobsQueued == 0, "no lookup went to the store's threads")
    #expect(try await all.filter(\.id == 3).sortBy(\.age).async.fetchCount() == 1)
    #expect(threads._jobsQueued == 1, "a sorted set is not a lone lookup: it runs on the threads")

    // A cancelled call throws before it reads: the set is left unevaluated, as on the
    // threads, so a later read takes its own snapshot (and sees a record inserted since).
    let lookup = all.filter(\.id == 900)
    let cancelled = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await lookup.async.get()
    }
    await #expect(throws: CancellationError.self) { try await cancelled.value }
    try store.insert(Animal(id: 900, name: "Late", species: "Yak", age: 1, weight: 1))
    #expect(try await lookup.async.get().name == "Late")

    // Writers move the store on while lookups run; records inserted before stay found.
    let writer = Task.detached {
      for n in 0..<2_000 {
        try store.insert(Animal(id: 10_000 + n, name: "New", species: "Yak", age: n % 9, weight: 1))
      }
    }
    var found = 0
    for i in 0..<2_000 {
      let record = Self.herd[i % Self.herd.count]
      if try await all.filter(\.id == record.id).async.fetchFirst() == record { found += 1 }
    }
    try await writer.value
    #expect(found == 2_000)
    #expect(try await all.filter(\.id == 11_999).async.get().name == "New")
  }

  @Test(arguments: StoreKind.allCases)
  func aBadQueryThrowsItsTypedError(kind: StoreKind) async throws {
    let all = try kind.makeSet(Array(Self.herd.prefix(10)))
    let unknown = await #expect(throws: RequestSetError.self) { try await all.filter("nope", value: 1).async.fetch() }
    #expect(unknown?.code == .unknownKey)
    let none = await #expect(throws: RequestSetError.self) { try await all.filter(\.id == -1).async.get() }
    #expect(none?.code == .notFound)
    let window = await #expect(throws: RequestSetError.self) { try await all.limit(-1).async.fetchCount() }
    #expect(window?.code == .invalidWindow)
  }

  @Test(arguments: StoreKind.writable + StoreKind.throughPgBouncer)
  func writesChangeTheStoreAsTheSynchronousWrites(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    defer { store.close() }
    var reference = Array(Self.herd.prefix(40))
    try await store.async.insert(contentsOf: Array(reference.prefix(30)))
    for animal in reference[30...] { try await store.async.insert(animal) }
    let duplicate = await #expect(throws: RequestSetError.self) { try await store.async.insert(reference[0]) }
    #expect(duplicate?.code == .duplicateID)

    var older = reference[3]
    older.age += 10
    try await store.async.save(older)
    reference[3] = older
    #expect(try await store.async.delete(id: reference[5].id))
    #expect(try await !store.async.delete(id: -5))
    reference.remove(at: 5)
    let extra = Animal(id: 1_000, name: "Moo", species: "Cow", age: 1)
    let kept = try await store.async.transaction { tx in
      tx.insert(extra)
      tx.delete(id: 7)
      return "kept"
    }
    #expect(kept == "kept")
    reference.append(extra)
    reference.removeAll { $0.id == 7 }
    try await store.async.apply([.delete(id: 8)])
    reference.removeAll { $0.id == 8 }
    #expect(try await store.async.fetch(id: 1_000) == extra)

    let all = RequestSet(store)
    let bumped = try await all.filter("species", value: "Cow").async.update { $0.age += 1 }
    #expect(bumped == reference.filter { $0.species == "Cow" }.count)
    for i in reference.indices where reference[i].species == "Cow" { reference[i].age += 1 }
    let renamed = try await all.filter(\.age > 9).async.update("nickname", value: "Old")
    #expect(renamed == reference.filter { $0.age > 9 }.count)
    for i in reference.indices where reference[i].age > 9 { reference[i].nickname = "Old" }
    _ = try await all.filter(\.id == 1).async.update([("name", "Uno"), ("nickname", nil)])
    for i in reference.indices where reference[i].id == 1 {
      reference[i].name = "Uno"
      reference[i].nickname = nil
    }
    let gone = try await all.filter("species", value: "Horse").async.delete()
    #expect(gone == reference.filter { $0.species == "Horse" }.count)
    reference.removeAll { $0.species == "Horse" }
    let made = try await all.filter(\.id == 2_000).async.firstOrInsert {
      Animal(id: 2_000, name: "New", species: "Yak", age: 0)
    }
    #expect(made.name == "New")
    reference.append(made)

    let stored = try await all.sortBy(\.id).async.fetch()
    #expect(stored == reference.sorted { $0.id < $1.id })
  }

  /// The work runs on the store's own threads, never on the task's.
  @Test(arguments: StoreKind.allCases)
  func workRunsOnTheStoresThreads(kind: StoreKind) async throws {
    let set = try kind.makeSet([])
    let name = try await set.async.run { _ in StoreThreads._currentName }
    // An array, and a store that declares no threads (the test's pushdown store), use the
    // shared ones.
    let expected =
      [.array, .pushdownMemory].contains(kind)
      ? StoreThreads.shared.name : kind.sourceName.replacingOccurrences(of: "<Animal>", with: "")
    #expect(name == expected)
    #expect(StoreThreads._currentName == nil)
    if kind != .array {
      let store = try set._store()
      defer { store.close() }
      let writer = try await store.async.run { _ in StoreThreads._currentName }
      #expect(writer == name)
    }
  }

  @Test func threadsStayWithinTheirCountAndEndWhenIdle() async throws {
    let threads = StoreThreads(name: "Test", count: 2, idleTime: 0.2)
    let running = SharedCounter()
    let most = SharedCounter()
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<40 {
        group.addTask {
          try await threads.run {
            most.raise(to: running.add())
            usleep(2_000)
            running.add(-1)
          }
        }
      }
      try await group.waitForAll()
    }
    #expect(most.value <= 2)
    #expect(try await eventually { threads._liveThreads == 0 })
    // And start again when work comes.
    #expect(try await threads.run { 7 } == 7)
  }

  /// A cancelled call whose work already runs is told so through `whenCancelled`, while
  /// it runs, and throws `CancellationError`.
  @Test func cancellationReachesTheRunningWork() async throws {
    let started = SharedCounter()
    let stopped = SharedCounter()
    let task = Task {
      try await StoreThreads.shared.run {
        try StoreThreads.whenCancelled({ stopped.add() }) {
          started.add()
          while stopped.value == 0 { usleep(1_000) }
        }
        // A backend that was stopped says so, as SQLite's interrupted statement does.
        if StoreThreads.isCancelled { throw CancellationError() }
        return 1
      }
    }
    #expect(try await eventually { started.value > 0 })
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(stopped.value == 1)
  }

  @Test func aCallCancelledBeforeItBeginsDoesNothing() async throws {
    let store = try StoreKind.log.makeStore()
    defer { store.close() }
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await store.async.insert(Animal(id: 1, name: "Never", species: "Cow", age: 1))
    }
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(try store.snapshot().count == 0)
  }

  /// A slow scan (a closure that takes 5 ms a record: 10 s for all) stops soon after the
  /// cancel, on every store: the in-process engine checks between records.
  @Test(arguments: StoreKind.allCases)
  func cancellingStopsAScan(kind: StoreKind) async throws {
    let set = try kind.makeSet(Animal.random(count: 2_000, seed: 3))
    let seen = SharedCounter()
    // (The result is never shown: 2,000 records would flood the log.)
    // The first record waits for the cancellation (at most 120 s), so the scan is under
    // way when it arrives however busy the machine is.
    let task = Task {
      try await set.filter { _ in
        seen.add()
        waitForCancellation()
        return true
      }.async.fetch().count
    }
    #expect(try await eventually { seen.value > 0 })
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    let atEnd = seen.value
    #expect(atEnd < 2_000)
  }

  /// A write through a query whose scan is cancelled writes nothing.
  @Test(arguments: StoreKind.writable)
  func aCancelledUpdateWritesNothing(kind: StoreKind) async throws {
    let herd = Animal.random(count: 1_000, seed: 5)
    let set = try kind.makeSet(herd)
    let seen = SharedCounter()
    let task = Task {
      try await set.filter { _ in
        seen.add()
        waitForCancellation()
        return true
      }.async.update { $0.age += 100 }
    }
    #expect(try await eventually { seen.value > 0 })
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(try set.refreshed().sortBy(\.id).fetch() == herd.sorted { $0.id < $1.id })
  }

  /// A LogStore decodes its records from the file for every step after the filter, and
  /// for a filter on decoded records: each of those loops stops soon after the cancel.
  /// One record's decoding waits for the cancellation (so the call is under way in that
  /// loop however busy the machine is), then the records decoded after it are counted: a
  /// loop that kept going decodes all 20,000 (it did, in every case, taking 1.0–1.6 s on
  /// a million records); one that checks between records, none or one.
  @Test(.serialized, arguments: HeldRecord.Operation.allCases)
  func cancellingStopsALogStoresDecoding(operation: HeldRecord.Operation) async throws {
    let n = 20_000
    let store = try LogStore<HeldRecord>(path: TemporaryLogDirectory.freshPath())
    defer { store.close() }
    let records = (1...n).map { HeldRecord(id: $0, n: $0 % 7) }
    try store.insert(contentsOf: records)
    let held = try await HeldRecord.hold(id: 100)
    defer { held.release() }
    let task = Task { try await operation.run(RequestSet(store)) }
    #expect(try await eventually { held.reached })
    let decodedBefore = held.decodes.value
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    let after = held.decodes.value - decodedBefore
    #expect(after <= 2, "\(after) records decoded after the cancel")
    // Nothing was written.
    #expect(try RequestSet(store).fetch() == records)
  }

  /// SQLite interrupts a statement that would run for hours: a view in the table's place
  /// counts to 10^12 before it returns a row.
  @Test func cancellingInterruptsSQLite() async throws {
    let path = TemporaryLogDirectory.freshPath("store.sqlite")
    let store = try SQLiteStore<Animal>(path: path, table: "animals")
    defer { store.close() }
    try store.insert(contentsOf: Array(Self.herd.prefix(5)))
    try StoreFieldKindsTests.sqlite(
      path,
      """
      ALTER TABLE animals RENAME TO animals_data;
      CREATE VIEW animals AS SELECT * FROM animals_data WHERE (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL
        SELECT x + 1 FROM c WHERE x < 1000000000000) SELECT count(*) FROM c) > 0;
      """)
    let task = Task { try await RequestSet(store).async.fetch() }
    try await runnableSleep(0.5)  // let the statement start (if not, the call never runs it)
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
  }

  /// A write through a query pushed down to SQLite (an UPDATE, a DELETE), cancelled while
  /// its statement runs, writes nothing: the statement is interrupted, and the call is
  /// checked once more before COMMIT. A trigger makes the first row's change count to
  /// 10^12, so the statement is still under way when the cancel comes however late a
  /// loaded machine runs this test's task (a trigger of a few seconds let the write finish
  /// first under load); without the interrupt the call never returns, and the time limit
  /// fails the test. Before, it took 0.73 s to cancel and 4.75 s to return 59,824 rows written.
  @Test(.timeLimit(.minutes(20)), arguments: ["update", "delete"])
  func aCancelledSQLiteWriteThroughAQueryWritesNothing(write: String) async throws {
    let path = TemporaryLogDirectory.freshPath("store.sqlite")
    let store = try SQLiteStore<Animal>(path: path, table: "animals")
    defer { store.close() }
    let herd = Array(Self.herd.prefix(100))
    try store.insert(contentsOf: herd)
    try StoreFieldKindsTests.sqlite(
      path,
      """
      CREATE TRIGGER slow_\(write) BEFORE \(write.uppercased()) ON animals BEGIN
        SELECT (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000000) SELECT count(*) FROM c);
      END;
      """)
    let set = RequestSet(store).filter("age", .greaterThanOrEqual, 0)
    let task = Task { write == "update" ? try await set.async.update("age", value: -1) : try await set.async.delete() }
    // The write is under way once its transaction holds the database's write lock.
    #expect(try await eventually { Self.sqliteWriteLockIsHeld(path) })
    task.cancel()
    await #expect(throws: CancellationError.self) { _ = try await task.value }
    #expect(try RequestSet(store).sortBy(\.id).fetch() == herd.sorted { $0.id < $1.id }, "\(write) wrote nothing")
  }

  /// Whether another connection holds the write lock of the database at `path`.
  static func sqliteWriteLockIsHeld(_ path: String) -> Bool {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { return false }
    defer { sqlite3_close(db) }
    guard sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { return true }
    sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
    return false
  }

  /// The same on PostgreSQL: each row's change sleeps 1,000 s on the server, so the
  /// statement is under way whenever the cancel comes; the cancel stops the statement on
  /// the server, and the call rolls back instead of committing.
  @Test(.enabled(if: PostgresServer.testsRun), .timeLimit(.minutes(20)), arguments: ["update", "delete"])
  func aCancelledPostgreSQLWriteThroughAQueryWritesNothing(write: String) async throws {
    let table = PostgresServer.freshTable()
    let store = try PostgresStore<Animal>(url: PostgresServer.url(), table: table)
    defer { store.close() }
    let herd = Animal.random(count: 600, seed: 60)
    try store.insert(contentsOf: herd)
    try PostgresServer.execute(
      """
      CREATE FUNCTION "\(table)_slow"() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(1000); RETURN COALESCE(NEW, OLD); END $$
        LANGUAGE plpgsql;
      CREATE TRIGGER slow BEFORE UPDATE OR DELETE ON "\(table)" FOR EACH ROW EXECUTE FUNCTION "\(table)_slow"();
      """)
    let set = RequestSet(store).filter("age", .greaterThanOrEqual, 0)
    let task = Task { write == "update" ? try await set.async.update("age", value: -1) : try await set.async.delete() }
    // The write is under way once the server runs its statement.
    #expect(
      try await eventually {
        try PostgresServer.scalar(
          "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
            + "AND query ILIKE '%\(write)%\(table)%'")
          != "0"
      })
    task.cancel()
    await #expect(throws: CancellationError.self) { _ = try await task.value }
    #expect(try RequestSet(store).sortBy(\.id).fetch() == herd.sorted { $0.id < $1.id }, "\(write) wrote nothing")
  }

  /// PostgreSQL cancels a statement that would sleep for 1,000 s on the server.
  @Test(.enabled(if: PostgresServer.testsRun)) func cancellingStopsAPostgreSQLStatement() async throws {
    let table = PostgresServer.freshTable()
    let store = try PostgresStore<Animal>(url: PostgresServer.url(), table: table)
    defer { store.close() }
    try store.insert(contentsOf: Array(Self.herd.prefix(5)))
    try PostgresServer.execute(
      """
      ALTER TABLE "\(table)" RENAME TO "\(table)_data";
      CREATE VIEW "\(table)" AS SELECT * FROM "\(table)_data" WHERE (SELECT true FROM pg_sleep(1000));
      """)
    let task = Task { try await RequestSet(store).filter("species", value: "Cow").async.fetch() }
    try await runnableSleep(0.5)
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
  }

  /// 200 queries at once on a pool of the default width, while a task ticks every 10 ms:
  /// no tick waits over 50 ms, and every answer is right. Runs in a child process, so the
  /// pool is the child's alone.
  ///
  /// Without the async API (the same queries through the blocking `fetch()`: the child's
  /// `sync` mode) the longest tick on SQLite was 4,550 ms, against 13 ms with it (this
  /// two-core machine, `SQLWorker heartbeat sqlite FILE animals sync 200`). On PostgreSQL
  /// each blocking call holds a pool thread for its 100 ms statement, so no tick can come
  /// sooner. A busy machine may hold the child's threads off the CPU for a while: a run
  /// that misses 50 ms passes when it stays within 2 × the control's gap + 50 ms (the same
  /// ticker beside 4 busy threads, measured right after), and is repeated otherwise, twice
  /// at most; the blocking form misses by seconds.
  @Test(arguments: ["sqlite", "postgres"].filter { $0 == "sqlite" || PostgresServer.testsRun })
  func theCooperativePoolKeepsTicking(kind: String) async throws {
    var results: [String] = []
    for _ in 0..<3 {
      let location = kind == "sqlite" ? TemporaryLogDirectory.freshPath("heartbeat.sqlite") : try PostgresServer.url()
      let table = kind == "sqlite" ? "animals" : PostgresServer.freshTable()
      let child = try SQLWorkerChild.start("heartbeat", kind, location, table, "async", "200")
      let status = await onOwnThread { child.wait(timeout: .seconds(eventLimit * 2)) }
      #expect(status == 0, "\(child)")
      let line = try #require(child.output.first { $0.hasPrefix("heartbeat ") }, "\(child)")
      let parts = line.split(separator: " ").compactMap { Int($0) }
      try #require(parts.count == 4, "\(line)")
      #expect(parts[1] == 200, "every answer is right: \(line)")
      if parts[0] <= 50 { return }
      // A miss: measure what this machine lets a ticker do right now beside 4 threads
      // spinning on the CPU for as long (the control of the next test). Under load the
      // control itself misses 50 ms; the blocking form misses it by seconds.
      let (controlGap, controlLine) = try await Self.controlTick(seconds: parts[3])
      results.append("\(line) / \(controlLine)")
      if parts[0] <= 2 * controlGap + 50 { return }
    }
    Issue.record("the tick waited over 50 ms, and over 2 × the control's + 50 ms, in three runs: \(results)")
  }

  /// The control of the heartbeat tests: the longest gap (ms) of a task ticking every
  /// 10 ms beside 4 plain threads spinning on the CPU for `seconds` (at least one), and the
  /// child's line.
  static func controlTick(seconds: Int) async throws -> (gap: Int, line: String) {
    let control = try SQLWorkerChild.start("heartbeat-control", "sqlite", "-", "-", "4", String(max(1, seconds) * 1_000))
    let controlStatus = await onOwnThread { control.wait(timeout: .seconds(eventLimit * 2)) }
    #expect(controlStatus == 0, "\(control)")
    let line = try #require(control.output.first { $0.hasPrefix("control ") }, "\(control)")
    let gap = try #require(line.split(separator: " ").compactMap { Int($0) }.first, "\(line)")
    return (gap, line)
  }

  /// 100 `async.fetchCount()` at once on 60,000 SQLite rows beside a task that ticks
  /// every 10 ms, against the control: the same ticking task beside 4 plain threads (the
  /// store's thread count) spinning on the CPU for as long. The issue measured 1,349 ms
  /// against the control's 45 ms; this machine measured 18–50 ms against 29–73 ms, with
  /// and without the last changes (the stall did not reproduce here), so this guards the
  /// scenario rather than pinning a fix. The bound is 4 × the control + 200 ms, not 2 ×:
  /// on a box whose cores other processes share, either run may lose the CPU for a
  /// scheduler slice or two that the other did not; a run that misses is repeated, twice
  /// at most.
  @Test func countingOnSQLiteKeepsThePoolAsFreeAsBusyThreadsDo() async throws {
    var results: [String] = []
    for _ in 0..<3 {
      let location = TemporaryLogDirectory.freshPath("heartbeat.sqlite")
      let child = try SQLWorkerChild.start("heartbeat", "sqlite", location, "animals", "async-count", "100", "60000")
      let status = await onOwnThread { child.wait(timeout: .seconds(eventLimit * 2)) }
      #expect(status == 0, "\(child)")
      let line = try #require(child.output.first { $0.hasPrefix("heartbeat ") }, "\(child)")
      let parts = line.split(separator: " ").compactMap { Int($0) }
      try #require(parts.count == 4, "\(line)")
      #expect(parts[1] == 100, "every answer is right: \(line)")
      let (controlGap, controlLine) = try await Self.controlTick(seconds: parts[3])
      results.append("\(line) / \(controlLine)")
      if parts[0] <= 4 * controlGap + 200 { return }
    }
    Issue.record("the tick waited over 4 × the control's + 200 ms in three runs: \(results)")
  }
}

/// Waits on a store's thread until the query it runs is cancelled, for at most 900 s (a
/// backstop against a cancellation that never arrives, which the test then reports). 120 s
/// was not enough on a loaded machine: the full quick run once left the test's own task
/// unscheduled that long, so the held decode went on, the count finished, and the test
/// failed as if cancellation were not checked.
private func waitForCancellation() {
  let deadline = ContinuousClock.now + .seconds(900)
  while !StoreThreads.isCancelled && ContinuousClock.now < deadline { usleep(1_000) }
}

/// A record whose decoding counts itself, and waits for the cancellation of the async
/// call at one record (see `AsyncTests.cancellingStopsALogStoresDecoding`).
struct HeldRecord: Record, Equatable {
  var id: Int
  var n: Int

  init(id: Int, n: Int) {
    self.id = id
    self.n = n
  }

  /// A property no field stands for: sorting by it decodes records.
  var doubled: Int { n * 2 }

  init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    id = try c.decode(Int.self, forKey: .id)
    n = try c.decode(Int.self, forKey: .n)
    guard let hold = Self.current.withLock({ $0 }) else { return }
    hold.decodes.add()
    if id == hold.id && !hold.reached {
      hold.reachedCount.add()
      waitForCancellation()
    }
  }

  /// One test's hold: the record whose decoding waits, and the decodes counted.
  final class Hold: Sendable {
    let id: Int
    let decodes = SharedCounter()
    fileprivate let reachedCount = SharedCounter()
    var reached: Bool { reachedCount.value > 0 }

    init(id: Int) { self.id = id }

    func release() { HeldRecord.current.withLock { $0 = nil } }
  }

  /// The hold in force; one at a time (the tests that use it are serialized by it).
  static let current = Mutex<Hold?>(nil)

  /// Starts a hold, waiting (without holding a thread) until no other test holds one.
  static func hold(id: Int) async throws -> Hold {
    let hold = Hold(id: id)
    while true {
      let taken = current.withLock { h -> Bool in
        guard h == nil else { return false }
        h = hold
        return true
      }
      if taken { return hold }
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  /// The async calls whose decoding loops the test stops.
  enum Operation: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A filter on decoded records (a closure), counted.
    case fetchCount
    /// The records, decoded after the scan.
    case fetch
    /// A sort by a computed property: records decoded two at a time to be compared.
    case sortedFetch
    /// An update: each record decoded, changed and encoded; nothing written once stopped.
    case update
    /// A delete: each record's id read from the decoded record.
    case delete
    /// A sum over a key path: each record decoded.
    case sum

    var description: String { rawValue }

    func run(_ set: RequestSet<HeldRecord>) async throws -> Int {
      switch self {
      case .fetchCount: return try await set.filter { $0.n >= 0 }.async.fetchCount()
      case .fetch: return try await set.async.fetch().count
      case .sortedFetch: return try await set.sortBy(\.doubled).async.fetch().count
      case .update: return try await set.async.update { $0.n += 1 }
      case .delete: return try await set.async.delete()
      case .sum: return try await set.async.sum(\.n)
      }
    }
  }
}
