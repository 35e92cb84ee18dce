// Scenarios for LogStore's files: another process changing a log underneath an open store.

import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The record of the file scenarios.
struct FileRecord: Record {
  var id: Int
  var name: String
  var n: Int
}

extension Scenarios {
  static let files: [String: Scenario] = [
    // badOptions <log>: options out of range, which once trapped; each open must throw.
    "badOptions": { args in
      var tooSmall = LogStoreOptions()
      tooSmall.autoCompactMinimumBytes = -1
      let cases: [(String, LogStoreOptions)] = [
        ("ratio 1.5", LogStoreOptions(autoCompactDeadRatio: 1.5)), ("ratio -0.1", .init(autoCompactDeadRatio: -0.1)),
        ("ratio nan", .init(autoCompactDeadRatio: .nan)), ("ratio inf", .init(autoCompactDeadRatio: .infinity)),
        ("minimum -1", tooSmall),
      ]
      for (name, options) in cases {
        do {
          _ = try LogStore<FileRecord>(path: args[0], options: options)
          say("\(name): opened")
        } catch let error as RequestSetError {
          say("\(name): \(error.code): \(error.message)")
        }
      }
    },
    // followerMeetsFIFO <dir>: a FIFO is renamed over a log that a read-only store follows;
    // the store must say so, not block forever opening it (an alarm ends a hang).
    "followerMeetsFIFO": { args in
      let path = args[0] + "/followed.rslog"
      let writer = try LogStore<FileRecord>(path: path)
      try writer.insert(FileRecord(id: 1, name: "a", n: 1))
      let reader = try LogStore<FileRecord>(path: path, options: .init(readOnly: true))
      writer.close()
      let fifo = args[0] + "/fifo"
      guard mkfifo(fifo, 0o644) == 0, rename(fifo, path) == 0 else {
        say("setup failed: errno \(errno)")
        return
      }
      // The test runner may have blocked SIGALRM; the child inherits its mask.
      var alarmOnly = sigset_t()
      sigemptyset(&alarmOnly)
      sigaddset(&alarmOnly, SIGALRM)
      sigprocmask(SIG_UNBLOCK, &alarmOnly, nil)
      signal(SIGALRM, SIG_DFL)
      alarm(20)
      do {
        say("follow: ok \(try reader.snapshot().count)")
      } catch let error as RequestSetError {
        say("follow: \(error.code)")
      }
    },
    // truncatedUnderneath <log>: a store's file is cut short by someone else (as another
    // process would); every later read and write must throw, not die of SIGBUS.
    "truncatedUnderneath": { args in
      let path = args[0]
      let store = try LogStore<FileRecord>(path: path)
      try store.insert(
        contentsOf: (0..<3000).map { FileRecord(id: $0, name: String(repeating: "x", count: 40) + "\($0)", n: $0 % 7) })
      let pending = RequestSet(store).filter("n", value: 3)
      _ = pending.count  // fixes its snapshot, mapping and all
      let evaluated = RequestSet(store).filter("n", value: 4)
      say("evaluated before: \(Array(evaluated).count)")
      guard truncate(path, 100) == 0 else {
        say("truncate failed: errno \(errno)")
        return
      }
      // The store reuses a size check for a millisecond (an fstat per read would double a
      // scan's cost); past that, every read checks again.
      usleep(5_000)
      func attempt(_ name: String, _ body: () throws -> Int) {
        do {
          say("\(name): ok \(try body())")
        } catch let error as RequestSetError {
          say("\(name): \(error.code)")
        } catch {
          say("\(name): \(error)")
        }
      }
      attempt("pending") { try pending.fetch().count }
      attempt("evaluated") { try evaluated.fetch().count }
      attempt("fresh") { try RequestSet(store).sortBy(\.name).fetch().count }
      attempt("fetchID") { try store.fetch(id: 2500)?.id ?? -1 }
      attempt("insert") {
        try store.insert(FileRecord(id: 5000, name: "new", n: 1))
        return 1
      }
      attempt("again") {
        try store.insert(FileRecord(id: 5001, name: "new", n: 1))
        return 1
      }
    }
  ]
}
