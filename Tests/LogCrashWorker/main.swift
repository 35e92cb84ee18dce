// The child process of the LogStore crash and lock tests (`LogCrashWorkerTests`).
//
// The test target depends on this executable, so `swift build --build-tests` (and
// `swift test`) puts it next to the test binary, where the tests find it.
//
//   LogCrashWorker crash <log> <seed> [pause]
//                                       writes random operations until it is killed (waiting
//                                       `pause` microseconds after each, when given)
//   LogCrashWorker hold <log> [compact] opens the log for writing (and compacts it, which swaps
//                                       the file), says "ready", waits
//   LogCrashWorker lock <log>           tries to open the log for writing, says what happened
//   LogCrashWorker history <log> <commits> <every>
//                                       commits 1…<commits>, compacting (keeping the newest 20
//                                       versions) after every <every>-th; says "ready" after
//                                       the first, "compacted <v>" after each compaction, "done"
//                                       (commit m saves record 0 with n = m, and saves or
//                                       deletes one more record: see `historyStep`)
//   LogCrashWorker migrate <log>        says "start", then opens the log with the migration
//                                       "v2" (the tests' `PetMigrations.v2` steps), which runs
//                                       it; says "done" when the open returns
//   LogCrashWorker migrate-hold <log> <id>
//                                       as migrate, but the migration ends with a step that,
//                                       at the record with id <id> (the last one), says
//                                       "last" and waits: the tests kill it there, at the end
//                                       of the rewrite, before it takes the log's place
//
// `crash` prints "begin <op>" before each operation and "ack" after it returns, with
// unbuffered writes, so the parent knows every acknowledged write and the one in flight.

import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

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

struct CrashRecord: Record, Equatable {
  var id: Int
  var name: String
  var n: Int
}

func say(_ line: String) {
  let text = line + "\n"
  var bytes = Array(text.utf8)
  var offset = 0
  while offset < bytes.count {
    let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { exit(3) }
    offset += n
  }
  bytes.removeAll()
}

/// SplitMix64, as in the tests.
struct Random {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

let args = CommandLine.arguments
guard args.count >= 3 else {
  say("usage: LogCrashWorker crash|hold|lock <log> [seed]")
  exit(2)
}
let path = args[2]

switch args[1] {
case "lock":
  do {
    _ = try LogStore<CrashRecord>(path: path)
    say("opened")
  } catch let error as RequestSetError {
    say("\(error.code)")
  }
  exit(0)

case "hold":
  let store = try LogStore<CrashRecord>(path: path)
  if args.count > 3 && args[3] == "compact" {
    try store.save(CrashRecord(id: 1, name: "held", n: 1))
    try store.compact()
  }
  say("ready")
  while true { sleep(60) }
  withExtendedLifetime(store) {}

case "crash":
  var rng = Random(state: UInt64(args.count > 3 ? args[3] : "1") ?? 1)
  let pause = args.count > 4 ? UInt32(args[4]) ?? 0 : 0
  let store = try LogStore<CrashRecord>(
    path: path, options: .init(autoCompactDeadRatio: 0.4, autoCompactMinimumBytes: 16 << 10))
  say("open")
  // An index whose definition a kill may cut, and whose entries every reopen rebuilds.
  try store.createIndex("n")
  func record(_ id: Int) -> CrashRecord {
    let n = rng.below(1_000_000)
    return CrashRecord(id: id, name: String(repeating: "r", count: rng.below(24)) + "\(n)", n: n)
  }
  while true {
    // Ids from a small range, so saves replace, deletes hit and the log gains dead space.
    switch rng.below(10) {
    case 0, 1, 2:
      let r = record(rng.below(400))
      say("begin I \(r.id) \(r.name) \(r.n)")
      _ = try? store.insert(r)
    case 3, 4:
      let k = 1 + rng.below(8)
      let rs = (0..<k).map { _ in record(rng.below(400)) }
      say("begin B " + rs.map { "\($0.id),\($0.name),\($0.n)" }.joined(separator: ";"))
      _ = try? store.insert(contentsOf: rs)
    case 5, 6, 7:
      let r = record(rng.below(400))
      say("begin S \(r.id) \(r.name) \(r.n)")
      try store.save(r)
    case 8:
      let id = rng.below(400)
      say("begin D \(id)")
      try store.delete(id: id)
    default:
      if rng.below(10) == 0 {
        say("begin C")
        try store.compact()
      } else {
        continue
      }
    }
    say("ack")
    if pause > 0 { usleep(pause) }
  }

case "history":
  guard args.count == 5, let commits = Int(args[3]), let every = Int(args[4]), every > 0 else {
    say("usage: LogCrashWorker history <log> <commits> <every>")
    exit(2)
  }
  let store = try LogStore<CrashRecord>(path: path, options: .init(keepHistory: .versions(20)))
  for m in 1...commits {
    let clock = CrashRecord(id: 0, name: "clock", n: m)
    switch historyStep(m) {
    case .save(let record): try store.apply([.save(record), .save(clock)], ifVersion: nil)
    case .delete(let id): try store.apply([.delete(id: id), .save(clock)], ifVersion: nil)
    }
    if m == 1 { say("ready") }
    if m % every == 0 {
      try store.compact()
      say("compacted \(m)")
    }
  }
  store.close()
  say("done")

case "migrate":
  let v2 = Migration(
    "v2", .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble), .add("legs", default: .int(4)),
    .move("city", to: "address.city"), .remove("nickname"))
  say("start")
  do {
    let store = try LogStore<DynamicRecord>(path: path, options: .init(migrations: Migrator([v2])))
    say("done \(store.appliedMigrations)")
  } catch {
    say("failed \(error)")
    exit(1)
  }

case "migrate-hold":
  guard args.count == 4, let last = Int(args[3]) else {
    say("usage: LogCrashWorker migrate-hold <log> <id>")
    exit(2)
  }
  let v2 = Migration(
    "v2", .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble), .add("legs", default: .int(4)),
    .move("city", to: "address.city"), .remove("nickname"),
    .transform { record in
      guard record.id == .int(last) else { return }
      say("last")
      while true { sleep(60) }
    })
  _ = try LogStore<DynamicRecord>(path: path, options: .init(migrations: Migrator([v2])))
  say("done")

default:
  say("unknown mode \(args[1])")
  exit(2)
}

/// The second change of the `history` mode's commit `m` (the first saves the clock, record
/// 0, with n = m); the tests replay the same steps to know every version's records.
enum HistoryStep {
  case save(CrashRecord)
  case delete(Int)
}

func historyStep(_ m: Int) -> HistoryStep {
  let id = 1 + (m * 7) % 40
  return m % 5 == 0 ? .delete(id) : .save(CrashRecord(id: id, name: "v\(m)", n: m))
}
