import Foundation
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// What PostgresStore's errors say when their text comes from libpq or the server: never a
/// password, however malformed the connection string, and words that fit what failed (a
/// read is not a write).
@Suite(.ownThreads) struct PostgresErrorTextTests {
  /// Spellings of the password in ``malformed``; none may show.
  static let secrets = ["secretpw", "secret%zzpw", "se%63retpw", "secret@pw", "secret/pw", "secret?pw"]

  /// Connection strings libpq cannot parse, parses in a way that misreads the password, or
  /// parses and then fails on, each holding one of ``secrets``. libpq's own messages about
  /// most of them quote the string or the token it stopped at, password included.
  static let malformed: [String] = [
    "postgresql://user:secretpw@[::1:5432/db",
    "postgresql://user:secret%zzpw@127.0.0.1:1/db",
    "postgresql://user:secret%zzpw@[::1:5432/db",
    "postgresql://user:se%63retpw@[::1/db",
    "postgresql://user:secretpw%00@127.0.0.1:1/db",
    "postgresql://user:secretpw@[]:5432/db",
    "postgresql://user:secretpw@127.0.0.1:1/db?bogus=1",
    "postgresql://user:secretpw@127.0.0.1:1/db?sslmode",
    "postgresql://user:secretpw@127.0.0.1:1/db?sslmode=a=b",
    "postgresql://user:secretpw@127.0.0.1:port/db",
    "postgresql://user:secretpw@127.0.0.1:99999999999/db",
    "postgresql://user:secretpw@127.0.0.1:1/db?sslmode=secretpw",
    "postgresql://user:secret@pw@127.0.0.1:1/db?connect_timeout=2",
    "postgresql://user:secret/pw@127.0.0.1:1/db?connect_timeout=2",
    "postgresql://user:secret?pw@127.0.0.1:1/db?connect_timeout=2",
    "postgresql://user:secretpw@127.0.0.1:1/db?connect_timeout=2",
    "postgresql://user:secretpw@/db?host=[::1&connect_timeout=2",
    "postgres://user:secretpw@127.0.0.1:1/db?password=secretpw&connect_timeout=2",
    "postgresql://user@127.0.0.1:1/db?password=secret%zzpw",
    "postgresql://user@127.0.0.1:1/db?password=secretpw&bogus",
    "host=127.0.0.1 port=1 password='secretpw",
    "host=127.0.0.1 port=1 password=secretpw bogus",
    "host=127.0.0.1 port=1 password=secretpw nosuchoption=1",
    "host=127.0.0.1 port=x password=secretpw",
    "host=127.0.0.1 port=1 password = secretpw connect_timeout=2",
    "host=127.0.0.1 port=1 password='secret\\'pw' connect_timeout=2",
    "host=127.0.0.1 port=1 sslmode=secretpw password=secretpw",
  ]

  /// Every text an error of `error`'s kind shows: its description, message, and each
  /// underlying error's description.
  static func texts(of error: any Error) -> [String] {
    var texts = [String(describing: error)]
    var next: (any Error)? = error
    while let current = next {
      texts.append(String(describing: current))
      guard let typed = current as? RequestSetError else { break }
      texts.append(typed.message)
      next = typed.underlying
    }
    return texts
  }

  @Test(arguments: malformed)
  func aMalformedConnectionStringNeverShowsItsPassword(url: String) throws {
    let error = try #require(throws: RequestSetError.self) { try PostgresStore<Animal>(url: url) }
    #expect(error.code == .invalidFormat || error.code == .connectionFailed, "\(error)")
    let shown = Self.texts(of: error) + [_ConnectionString(url).redacted, _ConnectionString(url).description]
    for text in shown {
      for secret in Self.secrets {
        #expect(!text.contains(secret), "\(url): \(text)")
      }
    }
  }

  /// The string: libpq's parse error names the problem, and the message shows the
  /// string redacted.
  @Test func anUnclosedIPv6BracketSaysWhatIsWrongWithoutThePassword() throws {
    let url = "postgresql://user:secretpw@[::1:5432/db"
    let error = try #require(throws: RequestSetError.self) { try PostgresStore<Animal>(url: url) }
    #expect(error.code == .invalidFormat)
    #expect(error.message.contains("postgresql://user:***@[::1:5432/db"))
    #expect(error.message.contains("\"]\""), "libpq's reason stays: \(error.message)")
    #expect(!error.message.contains("secretpw"))
  }

  @Test func anAmbiguousPasswordIsRefusedWithHowToEncodeIt() throws {
    let error = try #require(throws: RequestSetError.self) {
      try PostgresStore<Animal>(url: "postgresql://user:p@ss@127.0.0.1:1/db")
    }
    #expect(error.code == .invalidFormat)
    #expect(error.message.contains("%40"))
    #expect(!error.message.contains("p@ss"))
    #expect(_ConnectionString("postgresql://user:p@ss@h/db").redacted == "postgresql://user:***@h/db")
    // Valid strings are unchanged: an @ in the query, a password libpq reads with a ?.
    #expect(_ConnectionString("postgresql://h:5/db?application_name=a@b").problem == nil)
    #expect(_ConnectionString("postgresql://u:pa?ss@h/db").redacted == "postgresql://u:***@h/db")
  }

  /// The server ends the store's connections (as a restart or an administrator would) while
  /// a reader holds one: the read's error says a read was lost, a write's says a write was;
  /// a pooled connection the server ended while it sat idle is replaced before use.
  @Test(.enabled(if: PostgresServer.testsRun))
  func aLostConnectionSaysWhetherAReadOrAWriteFailed() throws {
    let name = "rs_lost_\(UInt32.random(in: 0...UInt32.max))"
    let base = try PostgresServer.url()
    let url = base + (base.contains("?") ? "&" : "?") + "application_name=\(name)"
    let store = try PostgresStore<Animal>(url: url, table: PostgresServer.freshTable())
    try store.insert(contentsOf: Animal.zoo)
    // Waits (up to 60 s) until each backend has ended, so that what follows meets a closed
    // connection, not one the server has yet to close.
    func endTheStoresConnections() throws {
      _ = try postgresSQL(
        "SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE application_name = $1", [name])
    }
    let reader = try store.queryReader()
    try endTheStoresConnections()
    let read = try #require(throws: RequestSetError.self) { try reader.count(StoreQuery()) }
    #expect(read.code == .connectionFailed)
    #expect(read.message.contains("The read did not finish and changed nothing"), "\(read.message)")
    #expect(!read.message.contains("write"), "\(read.message)")
    // Pooled connections the server ended while idle are dropped and replaced: the store
    // reads and writes on (the restart case of ReliabilityTests' outage tests).
    _ = try store.snapshot()
    try endTheStoresConnections()
    #expect(try store.snapshot().count == Animal.zoo.count)
    try endTheStoresConnections()
    try store.insert(Animal(id: 98, name: "w", species: "y", age: 1))
    #expect(try store.fetch(id: 98)?.name == "w")
    // A connection lost inside a transaction: a read-only one says read, a write says write.
    for (begin, words, not) in [
      ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "The read did not finish and changed nothing", "write"),
      ("BEGIN", "Nothing of the failed write was committed", "read"),
    ] {
      let connection = try _PGConnection(_ConnectionString(url))
      try connection.execute(begin)
      try endTheStoresConnections()
      let lost = try #require(throws: RequestSetError.self) { try connection.execute("SELECT 1") }
      #expect(lost.code == .connectionFailed)
      #expect(lost.message.contains(words), "\(lost.message)")
      #expect(!lost.message.contains(not), "\(lost.message)")
    }
  }
}
