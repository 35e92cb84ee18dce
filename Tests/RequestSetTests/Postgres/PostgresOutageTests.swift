import CLibPQ
import Foundation
import Synchronization
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A PostgreSQL server that stops while a store is in the middle of a transaction: the
/// transaction fails with a typed error, writes nothing, and the same store object goes
/// on working once the server is back (its pool drops the connections the server closed,
/// its live sets listen again).
///
/// Each test starts a server of its own (the shared one serves the other suites), which
/// it stops and restarts: more than 20 s with the server's start, stop and recovery.
@Suite(.enabled(if: PostgresServer.testsRun), .serialized, .ownThreads(servedFirst: true)) struct PostgresOutageTests {
  /// Waits until `condition` holds, polling every 20 ms, at most `limit`.
  func waitUntil(_ limit: Duration, _ what: String, _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + limit
    while try !condition() {
      guard ContinuousClock.now < deadline else { throw SQLWorkerChild.Failure(description: "never: \(what)") }
      usleep(20_000)
    }
  }

  /// How the server goes away under the transaction.
  enum Outage: String, CaseIterable, CustomStringConvertible {
    /// `pg_ctl stop -m immediate` (as a crash of the whole server), then started again.
    case serverStopped
    /// SIGKILL to the server process running the transaction: the server then ends every
    /// other session too and restarts by itself (crash recovery).
    case backendKilled
    var description: String { rawValue }
  }

  @Test(arguments: Outage.allCases)
  func aServerGoneMidTransactionFailsTypedAndTheSameStoreReconnects(outage: Outage) async throws {
    let server = try PostgresServer.start()
    defer { server.stop() }
    let store = try PostgresStore<DynamicRecord>(url: server.url(), table: "outage", connections: 2)
    defer { store.close() }
    try store.insert(contentsOf: (0..<10).map { DynamicRecord(id: .int($0), fields: ["batch": .int(-1)]) })
    let version = try store.snapshot().version

    // A live set from before the outage, which must see a commit made after it.
    let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
    let live = Task.detached {
      for try await state in RequestSet(store).filter("batch", value: 7).changes {
        readyContinuation.yield()
        if !state.records.isEmpty { return state.records.map(\.id) }
      }
      return []
    }
    for await _ in ready { break }

    // One transaction of 40,000 inserts (a statement each) in flight when the server stops.
    let many = (1_000..<41_000).map { RecordChange<DynamicRecord>.insert(DynamicRecord(id: .int($0), fields: ["batch": .int(1)])) }
    let outcome = Mutex<Result<Void, any Error>?>(nil)
    let writer = Thread {
      let result = Result { try store.apply(many, ifVersion: nil) }
      outcome.withLock { $0 = result }
    }
    writer.start()
    let monitor = try _PGConnection(_ConnectionString(server.url()))
    var backend: Int32?
    try waitUntil(.seconds(120), "the write's transaction shows in pg_stat_activity") {
      let open = try monitor.execute(
        "SELECT pid FROM pg_stat_activity WHERE xact_start IS NOT NULL AND query LIKE 'INSERT INTO%' "
          + "AND pid <> pg_backend_pid()")
      backend = open.count == 1 ? open.string(0, 0).flatMap { Int32($0) } : nil
      return backend != nil
    }
    // A read meanwhile, on a second connection, which goes back to the pool idle: after
    // the restart the pool holds a connection the server has closed.
    #expect(try store.fetch(id: .int(3))?.fields["batch"] == .int(-1))
    #expect(outcome.withLock { $0 } == nil, "the write ended before the server stopped")
    switch outage {
    case .serverStopped: try server.pause()
    case .backendKilled: #expect(kill(try #require(backend), SIGKILL) == 0, "errno \(errno)")
    }

    try waitUntil(.seconds(120), "the write in flight returns") { outcome.withLock { $0 } != nil }
    let failure = try #require(outcome.withLock { $0 })
    let error = try #require(throws: RequestSetError.self) { try failure.get() }
    #expect(error.code == .connectionFailed, "\(error)")
    #expect(error.message.contains("Nothing of the failed write was committed"), "\(error)")

    switch outage {
    case .serverStopped: try server.resume()
    case .backendKilled:
      // The server restarts by itself: wait until it takes connections again.
      try waitUntil(.seconds(120), "the server is back after its crash recovery") {
        (try? _PGConnection(_ConnectionString(server.url())).execute("SELECT 1")) != nil
      }
    }
    // The same store, at once: nothing of the interrupted transaction, and writes work.
    #expect(try RequestSet(store).fetchCount() == 10)
    #expect(try RequestSet(store).filter("batch", value: 1).fetchCount() == 0)
    #expect(try store.snapshot().version == version)
    try store.insert(DynamicRecord(id: .int(99), fields: ["batch": .int(7)]))
    #expect(try store.fetch(id: .int(99)) != nil)

    let timeout = Task.detached {
      try await Task.sleep(for: .seconds(60))
      live.cancel()
    }
    let seen = try await live.value
    timeout.cancel()
    #expect(seen == [.int(99)], "the live set from before the outage did not see the commit after it")

    // While the server is down, calls fail at once with the typed error (no hang), and
    // work again when it is back.
    try server.pause()
    #expect(try #require(throws: RequestSetError.self) { try store.fetch(id: .int(1)) }.code == .connectionFailed)
    #expect(
      try #require(throws: RequestSetError.self) { try store.insert(DynamicRecord(id: .int(100), fields: [:])) }.code
        == .connectionFailed)
    try server.resume()
    #expect(try store.snapshot().count == 11)
  }

  /// A server frozen with SIGSTOP (a hung machine: the kernel still accepts and
  /// acknowledges, nothing answers) makes a read, a write and opening a store throw
  /// `.connectionFailed` naming the setting to change, each within its timeout (2 s here)
  /// and a generous margin, where they used to hang for good; once the server is
  /// continued, the same store works again.
  @Test func aFrozenServerTimesOutAndTheSameStoreWorksWhenItThaws() throws {
    let server = try PostgresServer.start()
    defer { server.stop() }  // thaws first
    let options = PostgresConnectionOptions(connectTimeout: .seconds(2), statementTimeout: .seconds(2))
    let store = try PostgresStore<DynamicRecord>(url: server.url(), table: "frozen", connections: 2, options: options)
    defer { store.close() }
    try store.insert(contentsOf: (0..<10).map { DynamicRecord(id: .int($0), fields: ["n": .int($0)]) })
    #expect(try RequestSet(store).filter("n", .greaterThan, 4).fetchCount() == 5)

    try server.freeze()
    defer { server.thaw() }
    // The statement timeout plus the second the client adds, and a margin for a busy machine.
    let bound = Duration.seconds(3) + .seconds(30)
    // Each call runs on a thread of its own: one that hangs fails the test (and the server
    // is continued, so it returns) instead of hanging the run.
    func timed(_ what: String, _ body: @escaping @Sendable () throws -> Void) -> (RequestSetError?, Duration) {
      let outcome = Mutex<(any Error)??>(nil)
      let done = DispatchSemaphore(value: 0)
      let start = ContinuousClock.now
      Thread {
        let error: (any Error)? = { () -> (any Error)? in
          do {
            try body()
            return nil
          } catch { return error }
        }()
        outcome.withLock { $0 = .some(error) }
        done.signal()
      }.start()
      if done.wait(timeout: .now() + .seconds(Int(bound.components.seconds))) == .timedOut {
        Issue.record("\(what) did not return within \(bound) on a frozen server")
        server.thaw()
        done.wait()
      }
      let elapsed = ContinuousClock.now - start
      let error = outcome.withLock { $0 } ?? nil
      if let error, !(error is RequestSetError) { Issue.record("\(what) threw \(error)") }
      return (error as? RequestSetError, elapsed)
    }
    let (read, readTime) = timed("a read") { _ = try RequestSet(store).filter("n", .greaterThan, 4).fetch() }
    #expect(read?.code == .connectionFailed, "\(String(describing: read))")
    #expect(read?.message.contains("PostgresConnectionOptions.statementTimeout") == true, "\(String(describing: read))")
    #expect(read?.message.contains("The read did not finish and changed nothing") == true, "\(String(describing: read))")
    #expect(readTime < bound, "the read took \(readTime)")
    let (write, writeTime) = timed("a write") { try store.insert(DynamicRecord(id: .int(50), fields: [:])) }
    #expect(write?.code == .connectionFailed, "\(String(describing: write))")
    #expect(
      write.map { $0.message.contains("statementTimeout") || $0.message.contains("connectTimeout") } == true,
      "\(String(describing: write))")
    #expect(writeTime < bound, "the write took \(writeTime)")
    let (open, openTime) = timed("opening a store") {
      _ = try PostgresStore<DynamicRecord>(url: server.url(), table: "frozen", options: options)
    }
    #expect(open?.code == .connectionFailed, "\(String(describing: open))")
    #expect(open?.message.contains("PostgresConnectionOptions.connectTimeout") == true, "\(String(describing: open))")
    #expect(openTime < bound, "opening took \(openTime)")

    server.thaw()
    // The same store, once the server runs again: nothing of the write, and writes work.
    #expect(try RequestSet(store).filter("n", .greaterThan, 4).fetchCount() == 5)
    #expect(try store.fetch(id: .int(50)) == nil)
    try store.insert(DynamicRecord(id: .int(51), fields: ["n": .int(51)]))
    #expect(try RequestSet(store).fetchCount() == 11)
  }

  /// The server's own `statement_timeout`, which the store sets from the options, cancels a
  /// statement that runs longer: `.connectionFailed` naming the setting, and the
  /// connection goes on working.
  @Test func aStatementPastTheTimeoutIsCancelledByTheServer() throws {
    let url = try PostgresServer.url()
    let c = try _PGConnection(_ConnectionString(url), options: PostgresConnectionOptions(statementTimeout: .milliseconds(300)))
    #expect(try c.execute("SHOW statement_timeout").string(0, 0) == "300ms")
    let error = try #require(throws: RequestSetError.self) { try c.execute("SELECT pg_sleep(5)") }
    #expect(error.code == .connectionFailed, "\(error)")
    #expect(error.message.contains("PostgresConnectionOptions.statementTimeout"), "\(error)")
    #expect(!c.isBroken)
    #expect(try c.execute("SELECT 1").string(0, 0) == "1")
  }

  /// Options out of range are refused before anything connects.
  @Test func optionsOutOfRangeAreRefused() throws {
    let url = try PostgresServer.url()
    for options in [
      PostgresConnectionOptions(statementTimeout: .zero), PostgresConnectionOptions(connectTimeout: .seconds(-1)),
      PostgresConnectionOptions(keepalives: .init(count: 0)),
    ] {
      let error = try #require(throws: RequestSetError.self) {
        try PostgresStore<DynamicRecord>(url: url, table: PostgresServer.freshTable(), options: options)
      }
      #expect(error.code == .invalidOptions, "\(error)")
    }
  }

  /// The options reach libpq as its keepalive and TCP settings, and the connection
  /// string's own settings win over them.
  @Test func keepalivesAndTheTCPUserTimeoutReachLibpqAndTheConnectionStringWins() throws {
    let url = try PostgresServer.url()
    func settings(_ url: String, _ options: PostgresConnectionOptions) throws -> [String: String] {
      let c = try _PGConnection(_ConnectionString(url), options: options)
      guard let info = PQconninfo(c.handle) else { return [:] }
      defer { PQconninfoFree(info) }
      var found: [String: String] = [:]
      var option = info
      while let keyword = option.pointee.keyword {
        if let value = option.pointee.val { found[String(cString: keyword)] = String(cString: value) }
        option += 1
      }
      return found
    }
    let defaults = try settings(url, PostgresConnectionOptions())
    #expect(defaults["keepalives"] == "1")
    #expect(defaults["keepalives_idle"] == "30")
    #expect(defaults["keepalives_interval"] == "10")
    #expect(defaults["keepalives_count"] == "3")
    #expect(defaults["tcp_user_timeout"] == "60000")
    let chosen = try settings(
      url + "?keepalives_idle=7",
      PostgresConnectionOptions(keepalives: .init(idle: .milliseconds(1_500), interval: .seconds(2), count: 5), tcpUserTimeout: .milliseconds(2_500)))
    #expect(chosen["keepalives_idle"] == "7", "the connection string wins")
    #expect(chosen["keepalives_interval"] == "2")
    #expect(chosen["keepalives_count"] == "5")
    #expect(chosen["tcp_user_timeout"] == "2500")
    let off = try settings(url, PostgresConnectionOptions(keepalives: nil, tcpUserTimeout: nil))
    #expect(off["keepalives"] == "0")
    #expect(off["tcp_user_timeout"] == nil)
  }
}
