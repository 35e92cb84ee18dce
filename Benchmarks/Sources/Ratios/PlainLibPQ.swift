import CLibPQBench
import Foundation

// PostgreSQL through plain libpq, the peer PostgresStore is measured against (issue 13),
// and a private server for the benchmark to talk to.

/// A failed libpq call or server start, with PostgreSQL's own message.
struct PostgresFailure: Error, CustomStringConvertible {
  var description: String
}

/// One libpq connection, used the way a libpq user would: `PQexecParams` with text
/// parameters, results read with `PQgetvalue`.
final class PlainLibPQ {
  private let connection: OpaquePointer

  init(url: String) throws {
    guard let connection = PQconnectdb(url) else {
      throw PostgresFailure(description: "PQconnectdb returned nil")
    }
    guard PQstatus(connection) == CONNECTION_OK else {
      let message = String(cString: PQerrorMessage(connection))
      PQfinish(connection)
      throw PostgresFailure(description: "cannot connect: \(message)")
    }
    self.connection = connection
    try exec("SET client_min_messages = warning")  // no NOTICE lines in the table's output
  }

  deinit { PQfinish(connection) }

  /// Runs `sql` with text parameters (nil is SQL NULL) and hands the result to `body`,
  /// then clears it.
  @discardableResult
  func exec<T>(_ sql: String, _ parameters: [String?] = [], _ body: (OpaquePointer) throws -> T) throws -> T {
    let result = withTextParameters(parameters) { values in
      PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
    }
    guard let result else { throw PostgresFailure(description: String(cString: PQerrorMessage(connection))) }
    defer { PQclear(result) }
    let status = PQresultStatus(result)
    guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
      throw PostgresFailure(description: "\(sql): \(String(cString: PQresultErrorMessage(result)))")
    }
    return try body(result)
  }

  /// Runs `sql` for its effect.
  func exec(_ sql: String, _ parameters: [String?] = []) throws {
    try exec(sql, parameters) { _ in () }
  }

  /// The first column of the first row as an integer (a `count(*)`).
  func integer(_ sql: String, _ parameters: [String?] = []) throws -> Int {
    try exec(sql, parameters) { result in
      guard PQntuples(result) > 0, let text = PQgetvalue(result, 0, 0) else { return 0 }
      return Int(String(cString: text)) ?? 0
    }
  }

  /// Every row's column `column`, as text, handed to `body` one at a time.
  func forEachText(
    _ sql: String, _ parameters: [String?] = [], column: Int32 = 0,
    _ body: (UnsafePointer<CChar>) throws -> Void
  )
    throws
  {
    try exec(sql, parameters) { result in
      for row in 0..<PQntuples(result) { try body(PQgetvalue(result, row, column)) }
    }
  }
}

/// Calls `body` with the parameters as the C strings `PQexecParams` takes, alive for the call.
private func withTextParameters<T>(_ parameters: [String?], _ body: ([UnsafePointer<CChar>?]) throws -> T)
  rethrows -> T
{
  let copies = parameters.map { $0.map { strdup($0) } ?? nil }
  defer { for copy in copies { free(copy) } }
  return try body(copies.map { $0.map { UnsafePointer($0) } })
}

/// A PostgreSQL server of the benchmark's own: `initdb` into a temporary folder and `pg_ctl`
/// on a free loopback port, as the `postgres` user when running as root, stopped and removed
/// by ``stop()``. `REQUESTSET_POSTGRES_URL` names an existing server instead.
final class PrivatePostgres {
  /// The libpq URI of the server's `postgres` database.
  let url: String
  private let dataDirectory: String?
  private let bin: String?

  /// Starts a server, or uses the one `REQUESTSET_POSTGRES_URL` names.
  ///
  /// - Throws: ``PostgresFailure`` when there are no server binaries or the server does not start.
  init() throws {
    if let url = ProcessInfo.processInfo.environment["REQUESTSET_POSTGRES_URL"], !url.isEmpty {
      self.url = url
      dataDirectory = nil
      bin = nil
      return
    }
    let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
    guard let version = versions.compactMap(Int.init).max() else {
      throw PostgresFailure(
        description:
          "no PostgreSQL server binaries in /usr/lib/postgresql; install postgresql or set REQUESTSET_POSTGRES_URL"
      )
    }
    let bin = "/usr/lib/postgresql/\(version)/bin"
    let root = FileManager.default.temporaryDirectory.path + "/requestset-ratios-pg-\(getpid())"
    try? FileManager.default.removeItem(atPath: root)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    let data = root + "/data"
    if getuid() == 0 { try runCommand(["/bin/chown", "postgres:postgres", root]) }
    let port = try freeLoopbackPort()
    try runCommand(
      asPostgres([
        bin + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync",
      ]))
    try runCommand(
      asPostgres([
        bin + "/pg_ctl", "-D", data, "-l", root + "/server.log", "-w", "-o",
        "-p \(port) -k \(root) -c listen_addresses=127.0.0.1", "start",
      ]))
    self.url = "postgresql://postgres@127.0.0.1:\(port)/postgres"
    dataDirectory = data
    self.bin = bin
  }

  /// Stops the server (fast shutdown) and removes its folder; does nothing for a server
  /// named by `REQUESTSET_POSTGRES_URL`.
  func stop() {
    guard let dataDirectory, let bin else { return }
    try? runCommand(asPostgres([bin + "/pg_ctl", "-D", dataDirectory, "-m", "fast", "-w", "stop"]))
    try? FileManager.default.removeItem(atPath: (dataDirectory as NSString).deletingLastPathComponent)
  }
}

/// `command`, run as the `postgres` user when this process is root (`initdb` refuses root).
func asPostgres(_ command: [String]) -> [String] {
  getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + command : command
}

/// Runs a command to its end, its output to a file; throws with that output when it fails.
/// posix_spawn and waitpid rather than Foundation's Process, whose exit monitoring hangs
/// once `pg_ctl start` has left a server running (the tests' PostgresServer does the same).
func runCommand(_ command: [String]) throws {
  let outputPath = FileManager.default.temporaryDirectory.path + "/requestset-ratios-cmd-\(getpid()).out"
  defer { unlink(outputPath) }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
  posix_spawn_file_actions_adddup2(&actions, 1, 2)
  let argv = command.map { strdup($0) } + [nil]
  defer { for case let p? in argv { free(p) } }
  var pid: pid_t = 0
  guard posix_spawn(&pid, command[0], &actions, nil, argv, environ) == 0 else {
    throw PostgresFailure(description: "cannot start \(command[0]): errno \(errno)")
  }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
  guard status == 0 else {
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    throw PostgresFailure(
      description: "\(command.joined(separator: " ")) failed (wait status \(status)): \(text)")
  }
}

/// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick for port 0).
func freeLoopbackPort() throws -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { throw PostgresFailure(description: "socket() failed") }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = 0
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) { pointer in
    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
      bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
    }
  }
  guard bound else { throw PostgresFailure(description: "cannot bind a loopback port") }
  return Int(UInt16(bigEndian: address.sin_port))
}
