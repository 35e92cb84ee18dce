import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A private PostgreSQL server for the tests: `initdb` into a temporary folder and `pg_ctl`
/// on a free loopback port, as the `postgres` user when the tests run as root.
///
/// ``shared`` starts one server per test process, lazily and once (Swift's `static let`
/// runs its initializer under a lock), and stops it when the process exits (an `atexit`
/// handler, and a detached watchdog that stops it if the process dies without exiting).
/// `REQUESTSET_POSTGRES_URL` points the suites at an existing server instead. Without the
/// binaries the server is unavailable with a reason: the PostgreSQL tests are skipped with
/// that reason printed, except when `CI=true`, where they fail.
///
/// ```swift
/// let url = try PostgresServer.shared.get().url()
/// let store = try PostgresStore<Animal>(url: url, table: PostgresServer.freshTable())
/// ```
final class PostgresServer: Sendable {
  /// Why no server could be had.
  struct Unavailable: Error, CustomStringConvertible {
    var reason: String
    var description: String { "PostgreSQL unavailable: \(reason)" }
  }

  /// The user every test connects as (a superuser, trusted on loopback).
  static let user = "postgres"
  /// A role with a password, for the tests that check a password never shows.
  static let passwordUser = "requestset_pw"
  /// That role's password.
  static let password = "s3cret-Pa55word"

  /// The host and port, or the whole URL when `REQUESTSET_POSTGRES_URL` gave it.
  let host: String
  let port: Int
  private let override: String?
  /// The data folder's parent (the socket lives there); nil for an external server.
  let directory: String?
  private let stopped = Atomic<Bool>(false)

  private init(host: String, port: Int, override: String?, directory: String?) {
    self.host = host
    self.port = port
    self.override = override
    self.directory = directory
  }

  /// The test process's server, started on first use.
  static let shared: Result<PostgresServer, Unavailable> = {
    let environment = ProcessInfo.processInfo.environment
    if let url = environment["REQUESTSET_POSTGRES_URL"], !url.isEmpty {
      return .success(PostgresServer(host: "", port: 0, override: url, directory: nil))
    }
    do {
      let server = try start()
      sharedForExit.withLock { $0 = server }
      atexit { PostgresServer.sharedForExit.withLock { $0 }?.stop() }
      return .success(server)
    } catch let error as Unavailable {
      return .failure(error)
    } catch {
      return .failure(Unavailable(reason: "\(error)"))
    }
  }()

  private static let sharedForExit = Mutex<PostgresServer?>(nil)

  /// Whether a failure to start must fail the tests (`CI=true`) rather than skip them.
  static var mustRun: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

  /// Whether the PostgreSQL tests run: true with a server; false (printing why, once)
  /// without one, unless `CI=true`, where they run and fail.
  static var testsRun: Bool {
    switch shared {
    case .success: return true
    case .failure(let unavailable):
      if mustRun { return true }
      printSkipOnce(unavailable)
      return false
    }
  }

  private static let printedSkip = Atomic<Bool>(false)
  private static func printSkipOnce(_ unavailable: Unavailable) {
    if !printedSkip.exchange(true, ordering: .relaxed) {
      print("Skipping the PostgreSQL tests: \(unavailable.reason)")
    }
  }

  /// The shared server's URL for `database`, or the error that says why there is none.
  static func url(database: String = "postgres") throws -> String {
    try shared.get().url(database: database)
  }

  private static let tableCounter = Atomic<Int>(0)

  /// A table name no other store in this process (or an earlier run) uses.
  static func freshTable(_ prefix: String = "t") -> String {
    let n = tableCounter.add(1, ordering: .relaxed).newValue
    return "\(prefix)_\(getpid())_\(n)_\(UInt32.random(in: 0...UInt32.max))"
  }

  /// A libpq URI for `database` on this server, as `user` (with `password` when given).
  func url(database: String = "postgres", user: String = PostgresServer.user, password: String? = nil)
    -> String
  {
    if let override { return override }
    let credentials = password.map { "\(user):\($0)" } ?? user
    return "postgresql://\(credentials)@\(host):\(port)/\(database)"
  }

  /// Where the PostgreSQL binaries are, or nil.
  static func binaries() -> String? {
    for version in ["17", "16", "15", "14", "13"] {
      let dir = "/usr/lib/postgresql/\(version)/bin"
      if FileManager.default.isExecutableFile(atPath: dir + "/pg_ctl") { return dir }
    }
    return nil
  }

  /// Starts a new private server (the shared one, or a second one a test stops).
  static func start() throws -> PostgresServer {
    guard let bin = binaries() else {
      throw Unavailable(
        reason: "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
    }
    let asRoot = getuid() == 0
    var template = Array((NSTemporaryDirectory() + "requestset-pg.XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else {
      throw Unavailable(reason: "cannot make a temporary folder: errno \(errno)")
    }
    let directory = String(cString: made)
    if asRoot {
      guard let pw = getpwnam("postgres") else {
        throw Unavailable(reason: "running as root, but there is no `postgres` user to run initdb as")
      }
      chown(directory, pw.pointee.pw_uid, pw.pointee.pw_gid)
    }
    let data = directory + "/data"
    let initdb = try run(
      bin + "/initdb", ["-A", "trust", "-U", user, "-D", data, "--no-sync", "-E", "UTF8", "--locale=C"],
      asPostgres: asRoot)
    guard initdb.status == 0 else {
      throw Unavailable(reason: "initdb failed: \(initdb.output.suffix(1000))")
    }
    var lastError = ""
    for _ in 0..<3 {
      let port = freePort()
      // jit=off: PostgreSQL 11+ compiles a costly statement with LLVM first (jit_above_cost),
      // and the suites' 66,000-condition filters and 10,000-row differentials are costly;
      // sampled with perf, that compiling was 15% of the machine's CPU during `swift test`.
      // It changes no answer, only how long the server takes to give it.
      let options =
        "-k \(directory) -p \(port) -h 127.0.0.1 -F -c max_connections=200 -c shared_buffers=32MB -c jit=off"
      let started = try run(
        bin + "/pg_ctl",
        ["-D", data, "-o", options, "-l", directory + "/server.log", "-w", "-t", "30", "start"],
        asPostgres: asRoot)
      if started.status == 0 {
        let server = PostgresServer(host: "127.0.0.1", port: port, override: nil, directory: directory)
        server.startWatchdog(bin: bin, data: data, asRoot: asRoot)
        let psql = try run(
          bin + "/psql",
          [
            "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c",
            "CREATE ROLE \(passwordUser) LOGIN SUPERUSER PASSWORD '\(password)'",
          ], asPostgres: false)
        guard psql.status == 0 else {
          server.stop()
          throw Unavailable(reason: "psql could not create the password role: \(psql.output)")
        }
        return server
      }
      lastError =
        started.output + ((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")
    }
    try? FileManager.default.removeItem(atPath: directory)
    throw Unavailable(reason: "pg_ctl start failed: \(lastError.suffix(1500))")
  }

  /// Starts a hot standby of this (private) server: `pg_basebackup -R` into a temporary
  /// folder, then `pg_ctl start` on a free loopback port. It streams this server's WAL
  /// and answers reads; ``stop()`` stops it and removes its folder, and the process's exit
  /// does too (a watchdog, as for ``shared``).
  ///
  /// ```swift
  /// let standby = try PostgresServer.shared.get().startStandby()
  /// defer { standby.stop() }
  /// ```
  func startStandby() throws -> PostgresServer {
    guard directory != nil, let bin = Self.binaries() else {
      throw Unavailable(reason: "not a private server")
    }
    // One backup at a time, and WAL kept for a while: a checkpoint (another backup's, a
    // CREATE DATABASE's) could otherwise remove a segment a backup or a new standby has
    // still to read.
    Self.standbyLock.lock()
    defer { Self.standbyLock.unlock() }
    if try Self.scalar("SHOW wal_keep_size") == "0" {
      try Self.execute("ALTER SYSTEM SET wal_keep_size = '256MB'")
      _ = try Self.scalar("SELECT pg_reload_conf()")
    }
    let asRoot = getuid() == 0
    var template = Array((NSTemporaryDirectory() + "requestset-standby.XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else {
      throw Unavailable(reason: "cannot make a temporary folder: errno \(errno)")
    }
    let standbyDirectory = String(cString: made)
    if asRoot, let pw = getpwnam("postgres") { chown(standbyDirectory, pw.pointee.pw_uid, pw.pointee.pw_gid) }
    let data = standbyDirectory + "/data"
    let backup = try Self.run(
      bin + "/pg_basebackup",
      [
        "-h", host, "-p", "\(port)", "-U", Self.user, "-D", data, "-R", "-X", "stream", "-c", "fast",
        "--no-sync",
      ],
      asPostgres: asRoot)
    guard backup.status == 0 else {
      try? FileManager.default.removeItem(atPath: standbyDirectory)
      throw Unavailable(reason: "pg_basebackup failed: \(backup.output.suffix(1000))")
    }
    // A standby needs at least the primary's max_connections; kept in its configuration
    // so that `resume()` starts it again with it (and, as the primary, no JIT).
    if let conf = FileHandle(forWritingAtPath: data + "/postgresql.conf") {
      conf.seekToEndOfFile()
      conf.write("\nmax_connections = 200\nshared_buffers = 32MB\njit = off\n".data(using: .utf8)!)
      try? conf.close()
    }
    let standbyPort = Self.freePort()
    let options = "-k \(standbyDirectory) -p \(standbyPort) -h 127.0.0.1 -F"
    let started = try Self.run(
      bin + "/pg_ctl",
      ["-D", data, "-o", options, "-l", standbyDirectory + "/server.log", "-w", "-t", "60", "start"],
      asPostgres: asRoot)
    let standby = PostgresServer(
      host: "127.0.0.1", port: standbyPort, override: nil, directory: standbyDirectory)
    guard started.status == 0 else {
      let log = (try? String(contentsOfFile: standbyDirectory + "/server.log", encoding: .utf8)) ?? ""
      standby.stop()
      try? FileManager.default.removeItem(atPath: standbyDirectory)
      throw Unavailable(reason: "the standby did not start: \((started.output + log).suffix(1500))")
    }
    standby.startWatchdog(bin: bin, data: data, asRoot: asRoot)
    return standby
  }

  /// Makes ``startStandby()`` run one backup at a time.
  private static let standbyLock = NSLock()

  /// Stops the server at once, as a crash would (`-m immediate`), keeping its data for
  /// ``resume()``: how a test makes a server go away mid-use.
  func pause() throws {
    guard let directory, let bin = Self.binaries() else { throw Unavailable(reason: "not a private server") }
    let result = try Self.run(
      bin + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"], asPostgres: getuid() == 0
    )
    guard result.status == 0 else { throw Unavailable(reason: "pg_ctl stop failed: \(result.output)") }
  }

  /// Starts a paused server again on its port, recovering its data.
  func resume() throws {
    guard let directory, let bin = Self.binaries() else { throw Unavailable(reason: "not a private server") }
    let options = "-k \(directory) -p \(port) -h 127.0.0.1 -F"
    let result = try Self.run(
      bin + "/pg_ctl",
      ["-D", directory + "/data", "-o", options, "-l", directory + "/server.log", "-w", "start"],
      asPostgres: getuid() == 0)
    guard result.status == 0 else { throw Unavailable(reason: "pg_ctl start failed: \(result.output)") }
  }

  /// Promotes a hot standby (``startStandby()``) to a primary, as a failover does
  /// (`pg_ctl promote`), returning once it takes writes.
  func promote() throws {
    guard let directory, let bin = Self.binaries() else { throw Unavailable(reason: "not a private server") }
    let result = try Self.run(
      bin + "/pg_ctl", ["-D", directory + "/data", "-w", "-t", "120", "promote"], asPostgres: getuid() == 0)
    guard result.status == 0 else { throw Unavailable(reason: "pg_ctl promote failed: \(result.output)") }
  }

  /// The processes ``freeze()`` stopped, which ``thaw()`` continues.
  private let frozen = Mutex<[pid_t]>([])

  /// Freezes the server as a hung machine would: SIGSTOP to the postmaster (first, so it
  /// forks nothing more), then to each of its children (backends, background workers).
  /// The kernel still accepts connections and acknowledges what clients send, so only a
  /// client's own deadline notices. ``thaw()`` undoes it; ``stop()`` thaws first.
  func freeze() throws {
    guard let directory else { throw Unavailable(reason: "not a private server") }
    let pidFile = (try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)) ?? ""
    guard let postmaster = pidFile.split(separator: "\n").first.flatMap({ pid_t($0) }) else {
      throw Unavailable(reason: "no postmaster.pid in \(directory)/data")
    }
    frozen.withLock { $0.append(postmaster) }
    guard kill(postmaster, SIGSTOP) == 0 else { throw Unavailable(reason: "SIGSTOP failed: errno \(errno)") }
    for child in Self.children(of: postmaster) {
      frozen.withLock { $0.append(child) }
      kill(child, SIGSTOP)
    }
  }

  /// Continues every process ``freeze()`` stopped (children first). Thawing a server that
  /// is not frozen does nothing.
  func thaw() {
    let pids = frozen.withLock { pids in
      defer { pids = [] }
      return pids
    }
    for pid in pids.reversed() { kill(pid, SIGCONT) }
  }

  /// The processes whose parent is `parent`, read from `/proc`.
  private static func children(of parent: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> pid_t? in
      guard let pid = pid_t(entry),
        let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
      else { return nil }
      // "pid (name) state ppid …": the name may hold spaces and parentheses.
      let fields = stat[stat.index(after: close)...].split(separator: " ")
      return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
    }
  }

  /// Stops the server at once and removes its folder (thawing it first if frozen).
  /// Stopping twice does nothing.
  func stop() {
    thaw()
    guard let directory, !stopped.exchange(true, ordering: .relaxed), let bin = Self.binaries() else {
      return
    }
    _ = try? Self.run(
      bin + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"], asPostgres: getuid() == 0
    )
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// A detached shell that waits for this process to end and then stops the server, so a
  /// test process that crashes or is killed leaves no server behind.
  private func startWatchdog(bin: String, data: String, asRoot: Bool) {
    guard let directory else { return }
    let stop = "\(asRoot ? "runuser -u postgres -- " : "")'\(bin)/pg_ctl' -D '\(data)' -m immediate stop"
    // A server a test froze (SIGSTOP) is continued first, or it could not stop.
    let thaw =
      "p=$(head -n 1 '\(data)/postmaster.pid' 2>/dev/null); "
      + "if [ -n \"$p\" ]; then kill -CONT $p $(ps -o pid= --ppid $p) 2>/dev/null; fi"
    let script =
      "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; if [ -d '\(data)' ]; then \(thaw); \(stop); rm -rf '\(directory)'; fi"
    _ = Self.spawn("/bin/sh", ["-c", script], output: "/dev/null", detached: true)
  }

  /// A loopback port nobody listens on now (the kernel's pick for an ephemeral bind).
  static func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return Int.random(in: 20000...40000) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
      }
    }
    guard bound else { return Int.random(in: 20000...40000) }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Runs a program to its end, with its output (standard output and error together).
  static func run(_ program: String, _ arguments: [String], asPostgres: Bool) throws -> (
    status: Int32, output: String
  ) {
    let output = NSTemporaryDirectory() + "requestset-pg-\(UUID().uuidString).out"
    defer { unlink(output) }
    let (path, argv) =
      asPostgres
      ? ("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments) : (program, arguments)
    guard let pid = spawn(path, argv, output: output, detached: false) else {
      throw Unavailable(reason: "could not start \(path): errno \(errno)")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    // WIFEXITED / WEXITSTATUS, spelled out: the macros are not imported.
    let exited = status & 0x7f == 0
    return (exited ? (status >> 8) & 0xff : -1, text)
  }

  /// Starts `path` with `arguments`, its output to the file `output` (created), standard
  /// input from /dev/null; `detached` puts it in a session of its own. posix_spawn rather
  /// than Foundation's Process, whose exit monitoring does not work from every thread a
  /// test runs on.
  static func spawn(_ path: String, _ arguments: [String], output: String, detached: Bool) -> pid_t? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // The child gets no descriptor of this process but 0, 1 and 2. A watchdog lives as long
    // as the test process, and a descriptor it inherited stays open as long: the write end
    // of another test's pipe to its child then never closes, and that test's read to the
    // end of the pipe never returns (a soak run hung so in LogCrashTests, its pipe held by
    // a standby server's watchdog spawned meanwhile).
    #if os(Linux)
      // posix_spawn_file_actions_addclosefrom_np (glibc 2.34+), which Glibc's module does
      // not export; without it (an older glibc) descriptors are inherited as before.
      typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
      if let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
        _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
      }
      // POSIX_SPAWN_SETSID (glibc 2.26+), which Glibc's module does not export.
      posix_spawnattr_setflags(&attributes, detached ? 0x80 : 0)
    #elseif canImport(Darwin)
      posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_CLOEXEC_DEFAULT | (detached ? POSIX_SPAWN_SETSID : 0)))
    #endif
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for case let p? in argv { free(p) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    return result == 0 ? pid : nil
  }
}
