// The child process of the SQL stores' two-process tests (Tests/RequestSetTests/SQLCorpus/
// TwoProcessTests.swift): a second process on the same SQLite file or PostgreSQL table.
//
//   SQLWorker <scenario> <sqlite|postgres> <path or URL> <table> [arguments…]
//
// Scenarios (each prints "done" last when it ends by itself):
//   ping                    prints "pong"
//   race <name> <n>         n times: a closure update of record 0's "count" (+1, retrying on
//                           .conflict), then a key/value update of field <name> on the record
//                           whose "slot" is i % 10
//   watch <id> <seconds>    prints "ready" once its `changes` stream has the first state,
//                           then "seen <id>" when a record with that id appears
//   batches <size> <count>  commits <count> batches of <size> inserts, one `apply` each,
//                           printing "committed <b>" after each (the parent kills it midway)
// the heartbeat scenario of Heartbeat.swift, the plans scenario of Plans.swift,
// and the reliability scenarios of Reliability.swift (bump, transactions, cycles, soak),
// which also run on `memory` and `log` stores (the location is a log's path, or ignored).
import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite

/// Ends this child as soon as the test process that started it is gone (crashed, or
/// killed): an orphan, such as a crash test's writer that writes until it is killed,
/// would keep the test run's output pipe open, and `swift test` would wait for it for as
/// long as it ran. A thread checks the parent every 100 ms.
func exitWithParent() {
  #if canImport(Glibc)
    var thread = pthread_t()
  #else
    var thread: pthread_t? = nil
  #endif
  let parent = UnsafeMutableRawPointer(bitPattern: Int(getppid()))
  _ = pthread_create(
    &thread, nil,
    { argument in
      let parent = pid_t(Int(bitPattern: argument))
      while getppid() == parent { usleep(100_000) }
      _exit(3)
    }, parent)
}
exitWithParent()

/// Writes a line straight to standard output (no buffer), so the parent sees it while
/// the child runs.
func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data((message + "\n").utf8))
  exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4 else {
  fail("usage: SQLWorker <scenario> <sqlite|postgres> <path or URL> <table> [arguments…]", status: 2)
}
let (scenario, kind, location, table) = (arguments[0], arguments[1], arguments[2], arguments[3])
let rest = Array(arguments.dropFirst(4))

func openStore() throws -> any RecordStore<DynamicRecord> {
  try openAnyStore(kind, location, table)
}

do {
  switch scenario {
  case "ping":
    say("pong")

  case "race":
    guard rest.count == 2, let n = Int(rest[1]) else { fail("race <name> <n>", status: 2) }
    let name = rest[0]
    let store = try openStore()
    for i in 0..<n {
      try retryingConflicts {
        try RequestSet(store).filter("id", value: 0).update { record in
          guard case .int(let count) = record.fields["count"] ?? .null else { return }
          record.fields["count"] = .int(count + 1)
        }
      }
      try retryingConflicts {
        _ = try RequestSet(store).filter("slot", value: i % 10).update(name, value: i)
      }
    }
    store.close()

  case "watch":
    guard rest.count == 2, let id = Int(rest[0]), let seconds = Double(rest[1]) else {
      fail("watch <id> <seconds>", status: 2)
    }
    let store = try openStore()
    let watcher = Task {
      var first = true
      for try await state in RequestSet(store).filter("id", value: id).changes {
        if first {
          say("ready")
          first = false
        }
        if state.records.contains(where: { $0.id == .int(id) }) {
          say("seen \(id)")
          return true
        }
      }
      return false
    }
    let timeout = Task {
      try await Task.sleep(for: .seconds(seconds))
      watcher.cancel()
    }
    let seen = try await watcher.value
    timeout.cancel()
    store.close()
    if !seen { fail("watch: no record \(id) within \(seconds) s") }

  case "batches":
    guard rest.count == 2, let size = Int(rest[0]), let count = Int(rest[1]) else {
      fail("batches <size> <count>", status: 2)
    }
    let store = try openStore()
    for b in 0..<count {
      let changes = (0..<size).map { j in
        RecordChange<DynamicRecord>.insert(
          DynamicRecord(id: .int(1_000 + b * size + j), fields: ["batch": .int(b), "pad": .string("x\(j)")]))
      }
      try store.apply(changes, ifVersion: nil)
      say("committed \(b)")
    }
    store.close()

  case "bump":
    let store = try openStore()
    try await bumpScenario(store, rest)
    store.close()

  case "transactions":
    let store = try openStore()
    try transactionsScenario(store, rest)
    store.close()

  case "cycles":
    try await cyclesScenario(kind: kind, location: location, table: table, rest)

  case "heartbeat":
    // Eight connections (and so eight store threads): the queries wait on the server.
    let store: any RecordStore<DynamicRecord> =
      kind == "postgres" ? try PostgresStore<DynamicRecord>(url: location, table: table, connections: 8) : try openStore()
    try await heartbeatScenario(store, kind: kind, location: location, table: table, rest)
    store.close()

  case "heartbeat-control":
    await heartbeatControl(rest)

  case "plans":
    try plansScenario(kind: kind, location: location, table: table, rest)

  case "soak":
    let store = try openStore()
    try await soakScenario(store, rest)
    store.close()

  default:
    fail("unknown scenario \(scenario)", status: 2)
  }
  say("done")
} catch {
  fail("\(scenario) failed: \(error)")
}
