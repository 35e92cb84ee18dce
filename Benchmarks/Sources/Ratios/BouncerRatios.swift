import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetPostgres

#if canImport(Glibc)
  import Glibc
#endif

// Issue 37, the PgBouncer part (section `bouncer`): 1,000 concurrent tasks, each making 10
// calls on one PostgresStore (8 reads of a species' 10 youngest, then a save, then a count),
// through PgBouncer in transaction mode with a pool of 20 server sessions, beside the same
// tasks on 20 direct connections. Throughput is calls per second over the whole run; p99
// is the 99th percentile of one call's latency, waiting for a connection included. Each
// configuration runs 3 times; the table gives the median run (by throughput).
//
//   swift run -c release --package-path Benchmarks Ratios bouncer

/// Prints the table: direct (20 connections), through PgBouncer (store connections 20 and
/// 80, PgBouncer pool 20), and direct with 80 connections (the private server allows 100).
func bouncerTables() throws {
  progress("  bouncer: starting a server and PgBouncer…")
  let server = try PrivatePostgres()
  defer { server.stop() }
  let bouncer = try PrivateBouncer(serverURL: server.url, poolSize: 20)
  defer { bouncer.stop() }
  let table = "bouncer_\(getpid())"
  let seed = try PostgresStore<Animal>(url: server.url, table: table)
  try seed.insert(contentsOf: makeAnimals(10_000))
  seed.close()
  let configurations: [(name: String, url: String, connections: Int, options: PostgresConnectionOptions)] = [
    ("direct, 20 connections", server.url, 20, PostgresConnectionOptions()),
    (
      "PgBouncer pool 20, store 20 connections", bouncer.url, 20,
      PostgresConnectionOptions(pooler: .transaction)
    ),
    (
      "PgBouncer pool 20, store 80 connections", bouncer.url, 80,
      PostgresConnectionOptions(pooler: .transaction)
    ),
    ("direct, 80 connections", server.url, 80, PostgresConnectionOptions()),
  ]
  print("\n### PostgresStore through PgBouncer (issue 37): 1,000 tasks × 10 calls, 10,000 records\n")
  print("| configuration | calls/s | p50 | p99 | server sessions |")
  print("|---|---:|---:|---:|---:|")
  for configuration in configurations {
    progress("  bouncer: \(configuration.name)…")
    var runs: [(throughput: Double, p50: Double, p99: Double)] = []
    for _ in 0..<3 {
      let store = try PostgresStore<Animal>(
        url: configuration.url, table: table, connections: configuration.connections,
        options: configuration.options)
      runs.append(try waitFor { try await bouncerRun(store) })
      store.close()
    }
    let run = runs.sorted { $0.throughput < $1.throughput }[runs.count / 2]
    let sessions = configuration.url == bouncer.url ? 20 : configuration.connections
    print(
      "| \(configuration.name) | \(String(format: "%.0f", run.throughput)) | "
        + "\(String(format: "%.1f ms", run.p50)) | \(String(format: "%.1f ms", run.p99)) | \(sessions) |")
  }
}

/// One run: 1,000 tasks at once, 10 calls each; the throughput (calls/s) and the p50 and
/// p99 latency of a call (ms).
private func bouncerRun(_ store: PostgresStore<Animal>) async throws -> (
  throughput: Double, p50: Double, p99: Double
) {
  let species = ["Cow", "Dog", "Cat", "Mouse", "Horse", "Sheep", "Goat", "Pig"]
  let start = DispatchTime.now().uptimeNanoseconds
  let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
    for task in 0..<1_000 {
      group.addTask {
        var times: [Double] = []
        for call in 0..<10 {
          let begin = DispatchTime.now().uptimeNanoseconds
          let set = RequestSet(store).filter("species", value: species[(task + call) % species.count])
          switch call {
          case 8:
            let id = (task * 10 + call) % 10_000 + 1
            if var animal = try await set.refreshed().filter(\.id == id).async.fetchFirst() {
              animal.age += 1
              try await store.async.save(animal)
            }
          case 9:
            _ = try await set.async.fetchCount()
          default:
            let youngest = try await set.sortBy(\.age).sortBy(\.id).limit(10).async.fetch()
            precondition(youngest.count == 10)
          }
          times.append(Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6)
        }
        return times
      }
    }
    return try await group.reduce(into: []) { $0 += $1 }
  }
  let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
  let sorted = latencies.sorted()
  return (Double(sorted.count) / seconds, sorted[sorted.count / 2], sorted[sorted.count * 99 / 100])
}

/// A PgBouncer of the benchmark's own, in transaction mode in front of `serverURL`'s
/// server, on a free loopback port; stopped, its folder removed, by ``stop()``.
final class PrivateBouncer {
  let url: String
  private let directory: String

  init(serverURL: String, poolSize: Int) throws {
    guard
      let binary = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].first(
        where: FileManager.default.isExecutableFile)
    else { throw PostgresFailure(description: "pgbouncer is not installed (apt-get install pgbouncer)") }
    guard let server = URLComponents(string: serverURL), let host = server.host, let serverPort = server.port
    else {
      throw PostgresFailure(
        description: "PgBouncer needs a server URL with a host and port, not \(serverURL)")
    }
    directory = FileManager.default.temporaryDirectory.path + "/requestset-ratios-pgbouncer-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let port = try freeLoopbackPort()
    try """
    [databases]
    * = host=\(host) port=\(serverPort)

    [pgbouncer]
    listen_addr = 127.0.0.1
    listen_port = \(port)
    unix_socket_dir =
    auth_type = trust
    auth_file = \(directory)/users.txt
    pool_mode = transaction
    default_pool_size = \(poolSize)
    max_client_conn = 500
    logfile = \(directory)/pgbouncer.log
    pidfile = \(directory)/pgbouncer.pid

    """.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
    try "\"postgres\" \"\"\n".write(toFile: directory + "/users.txt", atomically: true, encoding: .utf8)
    if getuid() == 0 { try runCommand(["/bin/chown", "-R", "postgres:postgres", directory]) }
    try runCommand(asPostgres([binary, "-d", directory + "/pgbouncer.ini"]))
    url = "postgresql://postgres@127.0.0.1:\(port)/postgres"
    // PgBouncer listens before it forks into the background; wait for the pid file anyway.
    for _ in 0..<100 where !FileManager.default.fileExists(atPath: directory + "/pgbouncer.pid") {
      usleep(50_000)
    }
  }

  /// Stops PgBouncer (SIGKILL: it keeps nothing to flush, and it may inherit a signal mask
  /// that blocks SIGTERM) and removes its folder.
  func stop() {
    let text = (try? String(contentsOfFile: directory + "/pgbouncer.pid", encoding: .utf8)) ?? ""
    if let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) { kill(pid, SIGKILL) }
    try? FileManager.default.removeItem(atPath: directory)
  }
}
