import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A PgBouncer in transaction mode in front of the test process's private PostgreSQL
/// server (``PostgresServer/shared``): `pool_mode = transaction`, `default_pool_size = 8`,
/// on a free loopback port, its configuration, log and pid file in a temporary folder.
///
/// ``shared`` starts one per test process, lazily and once, and stops it (removing the
/// folder) when the process exits: an `atexit` handler, and a detached watchdog that stops
/// it if the process dies without exiting. Clients are trusted (the server behind trusts
/// loopback too), as the user ``PostgresServer/user``. Without a `pgbouncer` binary
/// (`.ci/run` installs the Debian package when it can) ``testsRun`` is false and the
/// PgBouncer tests are skipped, in CI too.
///
/// ```swift
/// let url = try PgBouncerServer.shared.get().url()
/// let store = try PostgresStore<Animal>(
///   url: url, table: PostgresServer.freshTable(), options: PostgresConnectionOptions(pooler: .transaction))
/// ```
final class PgBouncerServer: Sendable {
  /// How many server sessions PgBouncer keeps per database and user: small, so the tests'
  /// stores (several connections each) share sessions as an application's would.
  static let poolSize = 8

  let port: Int
  /// The folder of the configuration, the log and the pid file.
  let directory: String
  private let stopped = Atomic<Bool>(false)

  private init(port: Int, directory: String) {
    self.port = port
    self.directory = directory
  }

  /// Where the `pgbouncer` binary is, or nil.
  static var binary: String? {
    ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  /// Whether the PgBouncer tests run: when PostgreSQL's do and `pgbouncer` is installed.
  /// Once they run, a PgBouncer that does not start fails them.
  static var testsRun: Bool { PostgresServer.testsRun && binary != nil }

  /// The test process's PgBouncer, started on first use.
  static let shared: Result<PgBouncerServer, PostgresServer.Unavailable> = {
    do {
      let server = try start(in: PostgresServer.shared.get())
      sharedForExit.withLock { $0 = server }
      atexit { PgBouncerServer.sharedForExit.withLock { $0 }?.stop() }
      return .success(server)
    } catch let error as PostgresServer.Unavailable {
      return .failure(error)
    } catch {
      return .failure(PostgresServer.Unavailable(reason: "\(error)"))
    }
  }()

  private static let sharedForExit = Mutex<PgBouncerServer?>(nil)

  /// A libpq URI for `database` through this PgBouncer.
  func url(database: String = "postgres") -> String {
    "postgresql://\(PostgresServer.user)@127.0.0.1:\(port)/\(database)"
  }

  /// The shared PgBouncer's URL for `database`, or the error that says why there is none.
  static func url(database: String = "postgres") throws -> String {
    try shared.get().url(database: database)
  }

  /// Starts a PgBouncer in front of `postgres` (a private server: PgBouncer needs its
  /// host and port).
  static func start(in postgres: PostgresServer) throws -> PgBouncerServer {
    guard let binary else {
      throw PostgresServer.Unavailable(reason: "pgbouncer is not installed (apt-get install pgbouncer)")
    }
    guard postgres.directory != nil else {
      throw PostgresServer.Unavailable(
        reason: "REQUESTSET_POSTGRES_URL names an external server; PgBouncer runs in front of the private one"
      )
    }
    let asRoot = getuid() == 0
    var template = Array((NSTemporaryDirectory() + "requestset-pgbouncer.XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else {
      throw PostgresServer.Unavailable(reason: "cannot make a temporary folder: errno \(errno)")
    }
    let directory = String(cString: made)
    // PgBouncer refuses to run as root: as root it runs as `postgres`, which must own
    // the folder it writes its log and pid file in.
    if asRoot, let pw = getpwnam("postgres") { chown(directory, pw.pointee.pw_uid, pw.pointee.pw_gid) }
    var lastError = ""
    for _ in 0..<3 {
      let port = PostgresServer.freePort()
      let configuration = """
        [databases]
        * = host=\(postgres.host) port=\(postgres.port)

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

        """
      try configuration.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
      try "\"\(PostgresServer.user)\" \"\"\n".write(
        toFile: directory + "/users.txt", atomically: true, encoding: .utf8)
      if asRoot, let pw = getpwnam("postgres") {
        for file in ["pgbouncer.ini", "users.txt"] {
          chown(directory + "/" + file, pw.pointee.pw_uid, pw.pointee.pw_gid)
        }
      }
      // `-d`: PgBouncer forks into the background once it listens; the pid file says where.
      let started = try PostgresServer.run(binary, ["-d", directory + "/pgbouncer.ini"], asPostgres: asRoot)
      let server = PgBouncerServer(port: port, directory: directory)
      if started.status == 0, server.answers() {
        server.startWatchdog()
        return server
      }
      server.terminate()
      lastError =
        started.output + ((try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? "")
    }
    try? FileManager.default.removeItem(atPath: directory)
    throw PostgresServer.Unavailable(reason: "pgbouncer did not start: \(lastError.suffix(1500))")
  }

  /// Whether PgBouncer accepts a TCP connection on its port within 30 s.
  private func answers() -> Bool {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      guard fd >= 0 else { return false }
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = UInt16(port).bigEndian
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      close(fd)
      if connected { return true }
      usleep(50_000)
    }
    return false
  }

  /// PgBouncer's process id, from its pid file.
  private var pid: pid_t? {
    let text = (try? String(contentsOfFile: directory + "/pgbouncer.pid", encoding: .utf8)) ?? ""
    return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
  }

  /// Ends the PgBouncer process with SIGKILL: it keeps nothing to flush (the server ends
  /// the sessions it held), and SIGTERM and SIGINT did not reach it here: it inherits a
  /// signal mask that blocks them (from the thread, or the `runuser`, that started it) and
  /// never resets it.
  private func terminate() {
    if let pid { kill(pid, SIGKILL) }
  }

  /// Stops PgBouncer and removes its folder. Stopping twice does nothing.
  func stop() {
    guard !stopped.exchange(true, ordering: .relaxed) else { return }
    terminate()
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// A detached shell that waits for this process to end and then stops PgBouncer and
  /// removes its folder, so a test process that crashes or is killed leaves none behind.
  private func startWatchdog() {
    let pidFile = directory + "/pgbouncer.pid"
    let script =
      "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; "
      + "if [ -f '\(pidFile)' ]; then kill -KILL $(cat '\(pidFile)') 2>/dev/null; fi; rm -rf '\(directory)'"
    _ = PostgresServer.spawn("/bin/sh", ["-c", script], output: "/dev/null", detached: true)
  }
}
