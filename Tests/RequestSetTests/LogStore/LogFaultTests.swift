import Foundation
import Synchronization
import Testing

@testable import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A value shared with a fault handler, which the file layer may call from any thread.
final class Shared<Value: Sendable>: Sendable {
  private let mutex: Mutex<Value>
  init(_ value: Value) { mutex = Mutex(value) }
  func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// Faults injected under the file layer (`_FileFaults`): short writes, a full disk, I/O
/// errors on write and on fsync, failed renames during compaction, and power loss. Each
/// must surface as a typed error, lose nothing acknowledged, and leave a log that reopens
/// consistent.
@Suite(.ownThreads) struct LogFaultTests {
  /// A directory whose log calls go through a test's fault handler while it lives.
  final class FaultyDirectory: Sendable {
    let dir: LogTempDir
    let decide = Shared<(@Sendable (_FileFaults.Call) -> _FileFaults.Outcome)?>(nil)
    /// Every call the handler saw, in order.
    let calls = Shared<[_FileFaults.Call]>([])

    init() throws {
      dir = try LogTempDir()
      _FileFaults.handle(dir.path) { [decide, calls] call in
        calls.withLock { $0.append(call) }
        return decide.withLock { $0 }?(call) ?? .proceed
      }
    }

    var path: String { dir.file() }

    /// Fails the next `count` calls that `matches` picks with `code`.
    func fail(_ count: Int = 1, with code: Int32, where matches: @escaping @Sendable (_FileFaults.Call) -> Bool) {
      let left = Shared(count)
      decide.withLock {
        $0 = { call in
          guard matches(call) else { return .proceed }
          return left.withLock { n in
            guard n > 0 else { return .proceed }
            n -= 1
            return .fail(code)
          }
        }
      }
    }

    func heal() { decide.withLock { $0 = nil } }

    deinit { _FileFaults.handle(dir.path, nil) }
  }

  static func isWrite(_ call: _FileFaults.Call) -> Bool { if case .write = call { true } else { false } }
  static func isSync(_ call: _FileFaults.Call) -> Bool { if case .sync = call { true } else { false } }
  static func isRename(_ call: _FileFaults.Call) -> Bool { if case .rename = call { true } else { false } }

  let herd = (1...20).map { Beast(id: $0, name: "n\($0)", species: ["Cow", "Dog"][$0 % 2], age: $0) }

  @Test(arguments: [ENOSPC, EIO, EDQUOT]) func aFailedWriteThrowsWritesNothingAndTheStoreGoesOn(code: Int32) throws {
    let faulty = try FaultyDirectory()
    let store = try LogStore<Beast>(path: faulty.path)
    try store.insert(contentsOf: herd)
    let size = store.fileSize
    faulty.fail(with: code, where: Self.isWrite)
    let error = #expect(throws: RequestSetError.self) { try store.insert(Beast(id: 99, name: "lost")) }
    #expect(error?.code == .ioFailure)
    let reason = String(cString: strerror(code))
    #expect(
      error?.message
        == "Could not append to \(faulty.path): \(reason) (errno \(code)). Nothing was written (the file was cut back "
        + "to its last complete write). \(_FileIO.writeHint(code))")
    #expect(error?.message.contains(code == EIO ? "I/O error" : "Free disk space") == true)
    #expect(store.fileSize == size)
    try store.insert(Beast(id: 21, name: "after"))
    store.close()
    let (records, report) = try readLog(faulty.path)
    #expect(records == herd + [Beast(id: 21, name: "after")])
    #expect(report.isClean)
  }

  /// Short writes are carried on until everything is written; a short write that then
  /// fails leaves no partial frame behind.
  @Test func shortWritesLoopAndAPartialWriteIsCutBack() throws {
    let faulty = try FaultyDirectory()
    faulty.decide.withLock { $0 = { Self.isWrite($0) ? .short(7) : .proceed } }
    let store = try LogStore<Beast>(path: faulty.path)
    try store.insert(contentsOf: herd)
    try store.save(Beast(id: 3, name: "three"))
    #expect(faulty.calls.withLock { $0.filter(Self.isWrite).count } > 50, "the writes really were short")

    let size = store.fileSize
    let calls = Shared(0)
    faulty.decide.withLock {
      $0 = { call in
        guard Self.isWrite(call) else { return .proceed }
        return calls.withLock { n in
          n += 1
          return n == 1 ? .short(9) : .fail(ENOSPC)
        }
      }
    }
    #expect(throws: RequestSetError.self) { try store.insert(contentsOf: [Beast(id: 50, name: "a"), Beast(id: 51, name: "b")]) }
    #expect(try Data(contentsOf: URL(fileURLWithPath: faulty.path)).count == size, "the 9 bytes were cut off")
    faulty.heal()
    #expect(try RequestSet(store).fetch().count == herd.count)
    store.close()
    let (records, report) = try readLog(faulty.path)
    #expect(records.count == herd.count && records[2].name == "three")
    #expect(report.isClean)
  }

  /// When even cutting back a failed write fails, the store stops; reopening cuts the
  /// partial write off (keeping it in a side file) and holds every acknowledged record.
  @Test func aPartialWriteThatCannotBeCutBackFailsTheStoreAndReopeningCutsIt() throws {
    let faulty = try FaultyDirectory()
    let store = try LogStore<Beast>(path: faulty.path)
    try store.insert(contentsOf: herd)
    let calls = Shared(0)
    faulty.decide.withLock {
      $0 = { call in
        switch call {
        case .write: return calls.withLock { n in n += 1; return n == 1 ? .short(11) : .fail(EIO) }
        case .truncate: return .fail(EIO)
        default: return .proceed
        }
      }
    }
    let first = #expect(throws: RequestSetError.self) { try store.insert(Beast(id: 30, name: "torn")) }
    #expect(first?.code == .storeFailed)
    let later = #expect(throws: RequestSetError.self) { try RequestSet(store).fetch() }
    #expect(later?.code == .storeFailed)
    faulty.heal()
    store.close()
    let (records, report) = try readLog(faulty.path)
    #expect(records == herd)
    #expect(report.tornTail?.byteCount == 11)
    #expect(report.preserved?.byteCount == 11)
  }

  @Test func aFailedFsyncFailsTheStoreAndNothingAcknowledgedIsLost() throws {
    let faulty = try FaultyDirectory()
    let store = try LogStore<Beast>(path: faulty.path, options: .init(durability: .fsync))
    try store.insert(contentsOf: herd)
    faulty.fail(with: EIO, where: { if case .sync(let p) = $0 { p == faulty.path } else { false } })
    let error = #expect(throws: RequestSetError.self) { try store.insert(Beast(id: 40, name: "maybe")) }
    #expect(error?.code == .storeFailed)
    #expect(error?.message.contains("Could not fsync \(faulty.path): \(String(cString: strerror(EIO)))") == true)
    let later = #expect(throws: RequestSetError.self) { try store.save(Beast(id: 41, name: "never")) }
    #expect(later?.code == .storeFailed)
    faulty.heal()
    store.close()
    let (records, report) = try readLog(faulty.path)
    // The unsynced write may or may not be there; everything acknowledged is.
    #expect(records == herd || records == herd + [Beast(id: 40, name: "maybe")])
    #expect(report.isClean)
  }

  /// Compaction that fails before its rename leaves the log as it was and the store
  /// working; one whose directory fsync fails after the rename stops the store, and the
  /// log reopens with every record.
  @Test(arguments: ["write", "fsync", "rename", "directory"]) func aFailedCompactionLosesNothing(step: String) throws {
    let faulty = try FaultyDirectory()
    let path = faulty.path
    let store = try LogStore<Beast>(path: path, options: .init(autoCompactDeadRatio: nil))
    try store.insert(contentsOf: herd)
    for b in herd.prefix(10) { try store.delete(id: b.id) }
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    let tmp = path + ".compacting"
    switch step {
    case "write": faulty.fail(with: ENOSPC, where: { if case .write(let p, _, _) = $0 { p == tmp } else { false } })
    case "fsync": faulty.fail(with: EIO, where: { if case .sync(let p) = $0 { p == tmp } else { false } })
    case "rename": faulty.fail(with: EIO, where: Self.isRename)
    default: faulty.fail(with: EIO, where: { if case .sync(let p) = $0 { p == faulty.dir.path } else { false } })
    }
    let error = #expect(throws: RequestSetError.self) { try store.compact() }
    #expect(!FileManager.default.fileExists(atPath: tmp), "no half-written compaction is left")
    if step == "directory" {
      #expect(error?.code == .storeFailed)
    } else {
      #expect(error?.code == .ioFailure)
      #expect(error?.message.contains("The log itself is unchanged") == true, "\(error?.message ?? "")")
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
      try store.insert(Beast(id: 77, name: "after"))
    }
    faulty.heal()
    store.close()
    let (records, report) = try readLog(path)
    #expect(records == Array(herd.dropFirst(10)) + (step == "directory" ? [] : [Beast(id: 77, name: "after")]))
    #expect(report.isClean)
  }

  /// Power loss with `.fsync` durability: at random moments, drop every byte written since
  /// the last fsync (the file as the disk holds it), open that image, and find every
  /// acknowledged write. Writes that fail midway (a short write, then the disk going away)
  /// are lost whole or kept whole.
  @Test func powerLossKeepsEveryAcknowledgedWrite() throws {
    let seed = testSeed("powerLossKeepsEveryAcknowledgedWrite")
    var rng = SeededRandom(seed: seed)
    let faulty = try FaultyDirectory()
    let path = faulty.path
    let images = try LogTempDir()
    /// Per path: bytes written, and how many of them an fsync made durable.
    struct Disk { var written: [String: Int] = [:]; var durable: [String: Int] = [:] }
    let disk = Shared(Disk())
    let failing = Shared<Int?>(nil)  // calls left before the disk goes away
    faulty.decide.withLock {
      $0 = { call in
        let outcome: _FileFaults.Outcome = failing.withLock { left in
          guard let n = left else { return .proceed }
          if n == 0 { return .fail(EIO) }
          left = n - 1
          if n == 1, case .write(_, _, let count) = call { return .short(count / 2) }
          return .proceed
        }
        if case .fail = outcome { return outcome }
        disk.withLock { d in
          switch call {
          case .write(let p, let offset, let count):
            let n = if case .short(let s) = outcome { s } else { count }
            d.written[p] = Swift.max(d.written[p] ?? 0, offset + n)
          case .sync(let p): d.durable[p] = d.written[p] ?? 0
          case .truncate(let p, let size):
            d.written[p] = size
            d.durable[p] = Swift.min(d.durable[p] ?? 0, size)
          case .rename(let from, let to):
            d.written[to] = d.written[from]
            d.durable[to] = d.durable[from]
          }
        }
        return outcome
      }
    }
    let options = LogStoreOptions(durability: .fsync, autoCompactDeadRatio: 0.3, autoCompactMinimumBytes: 2048)
    var store = try LogStore<Beast>(path: path, options: options)
    // A log made before the fault layer saw its header: count it durable.
    disk.withLock { $0.written[path] = store.fileSize; $0.durable[path] = store.fileSize }
    var model = MemoryStore<Beast>()
    var imagesChecked = 0
    var midwayFailures = 0

    /// Opens what a power loss now would leave and compares it with the acknowledged writes
    /// (and, when a write is in flight, with them plus that write).
    func checkPowerLoss(inFlight: ScriptedLog.Write?) throws {
      let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
      let (durable, written) = disk.withLock { ($0.durable[path] ?? 0, $0.written[path] ?? 0) }
      // Everything an acknowledged write put there was synced.
      #expect(inFlight != nil || durable >= bytes.count, "seed \(seed): \(bytes.count - durable) unsynced bytes acknowledged")
      let kept = durable + (written > durable ? Int(rng.next() % UInt64(written - durable + 1)) : 0)
      let image = images.file("image-\(imagesChecked).rslog")
      try writeFile(bytes.prefix(Swift.min(kept, bytes.count)), to: image)
      imagesChecked += 1
      let found = try readLog(image).0
      let acked = try RequestSet(model).fetch()
      if found == acked { return }
      guard let op = inFlight else {
        Issue.record("seed \(seed): power loss lost acknowledged writes")
        return
      }
      let with = MemoryStore<Beast>()
      try with.insert(contentsOf: acked)
      try? ScriptedLog.apply(op, to: with)
      #expect(try found == RequestSet(with).fetch(), "seed \(seed): the write in flight landed in part")
    }

    var nextID = 1
    for step in 0..<160 {
      let stored = try RequestSet(model).fetch().map(\.id)
      let op: ScriptedLog.Write
      switch rng.next() % 6 {
      case 0, 1:
        op = .insert(Beast(id: nextID, name: "n\(rng.next() % 1000)"))
        nextID += 1
      case 2:
        let k = 1 + Int(rng.next() % 5)
        op = .batch((0..<k).map { Beast(id: nextID + $0, name: "b\(rng.next() % 1000)") })
        nextID += k
      case 3 where !stored.isEmpty: op = .save(Beast(id: stored[Int(rng.next() % UInt64(stored.count))], name: "s\(step)"))
      case 4 where !stored.isEmpty: op = .delete(stored[Int(rng.next() % UInt64(stored.count))])
      default:
        op = .insert(Beast(id: nextID, name: "n\(step)"))
        nextID += 1
      }
      let midway = rng.next() % 8 == 0
      if midway { failing.withLock { $0 = Int(rng.next() % 3) } }
      do {
        try ScriptedLog.apply(op, to: store)
        try ScriptedLog.apply(op, to: model)
        failing.withLock { $0 = nil }
        if rng.next() % 4 == 0 { try checkPowerLoss(inFlight: nil) }
      } catch let error as RequestSetError {
        guard midway else { throw error }
        midwayFailures += 1
        // The disk went away during the write: power is lost now.
        try checkPowerLoss(inFlight: op)
        failing.withLock { $0 = nil }
        // Carry on from the log as a restart would find it.
        store.close()
        let image = images.file("image-\(imagesChecked - 1).rslog")
        try Data(contentsOf: URL(fileURLWithPath: image)).write(to: URL(fileURLWithPath: path))
        store = try LogStore<Beast>(path: path, options: options)
        disk.withLock { $0.written[path] = store.fileSize; $0.durable[path] = store.fileSize }
        model = try MemoryStore(try RequestSet(store).fetch())
      }
      if step % 40 == 39 { try store.compact() }
    }
    print("[power loss] seed \(seed): \(imagesChecked) images opened, \(midwayFailures) writes failed midway")
    #expect(imagesChecked >= 20)
    #expect(midwayFailures >= 5)
  }
}
