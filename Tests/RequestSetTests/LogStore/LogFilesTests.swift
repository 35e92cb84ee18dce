import Foundation
import Testing

@testable import RequestSet

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A record whose id is a string: opening a log of `Beast`s (integer ids) with it is a
/// schema mismatch, not damage.
struct NamedBeast: Record, Equatable {
  var id: String
  var name: String
}

/// The files of a log: options and paths a program may pass, locks, side files, and the
/// file changing underneath a store.
@Suite(.ownThreads) struct LogFilesTests {
  // MARK: Options and paths

  /// Options out of range trapped (with no message in release builds); now the open
  /// throws. Run in a child process, so a regression fails this test, not the run.
  @Test func optionsOutOfRangeThrowInsteadOfTrapping() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let result = try AdversaryChild.run("badOptions", path)
    #expect(result.exitedNormally, "\(result)")
    let ratio = { (value: String) in
      "invalidOptions: LogStoreOptions.autoCompactDeadRatio is \(value) for the log \(path); it must lie in 0...1 (the "
        + "fraction of the file that is dead space before the store compacts), or be nil to turn automatic "
        + "compaction off."
    }
    #expect(
      result.lines == [
        "ratio 1.5: " + ratio("1.5"), "ratio -0.1: " + ratio("-0.1"), "ratio nan: " + ratio("nan"),
        "ratio inf: " + ratio("inf"),
        "minimum -1: invalidOptions: LogStoreOptions.autoCompactMinimumBytes is -1 for the log \(path); it must be 0 "
          + "or more (files smaller than this are never compacted automatically).",
        "done",
      ], "\(result)")
    #expect(!FileManager.default.fileExists(atPath: path), "a refused open creates nothing")
    // The ends of the range are fine.
    for ratio in [0.0, 1.0] {
      let store = try LogStore<Beast>(path: path, options: .init(autoCompactDeadRatio: ratio))
      try store.save(Beast(id: 1, name: "a"))
      store.close()
    }
  }

  @Test func emptyPathAndNULByteAreRejected() throws {
    let before = FileManager.default.fileExists(atPath: ".lock")
    let empty = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: "") }
    #expect(empty?.code == .invalidPath)
    #expect(empty?.message == "The log path is empty. Pass the path of a file, as in \"animals.rslog\".")
    #expect(FileManager.default.fileExists(atPath: ".lock") == before, "no ./.lock was created")

    let dir = try LogTempDir()
    let nul = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: dir.file("a\u{0}b.rslog")) }
    #expect(nul?.code == .invalidPath)
    #expect(
      nul?.message
        == "The log path \"\(dir.path)/a\\0b.rslog\" holds a NUL byte (shown as \\0), which the operating system would "
        + "read as the end of the path and so open another file. Remove the NUL byte.")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty, "nothing was created")
  }

  /// Files that are not regular files: each named for what it is, never "out of address
  /// space" or "check free disk space", and a FIFO never blocks the open.
  @Test(arguments: [false, true]) func specialFilesSayWhatTheyAre(readOnly: Bool) throws {
    let dir = try LogTempDir()
    let fifo = dir.file("fifo")
    #expect(mkfifo(fifo, 0o644) == 0)
    let socketPath = dir.file("socket")
    let sock = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(sock) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in socketPath.utf8.enumerated() where i < raw.count - 1 { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    #expect(bound == 0)
    let cases = [
      ("/dev/null", "a character device"), (dir.path, "a directory"), (fifo, "a FIFO (named pipe)"),
      (socketPath, "a socket"),
    ]
    for (path, kind) in cases {
      let error = #expect(throws: RequestSetError.self, "\(path)") {
        try LogStore<Beast>(path: path, options: .init(readOnly: readOnly))
      }
      #expect(error?.code == .invalidPath, "\(path)")
      #expect(error?.message.hasPrefix("\(path) is \(kind), not a regular file, so it cannot hold a log.") == true, "\(error?.message ?? "")")
      #expect(error?.message.contains("address space") == false)
      #expect(error?.message.contains("disk space") == false)
    }
    #expect(!FileManager.default.fileExists(atPath: "/dev/null.lock"))
  }

  /// A read-only store that follows its writer reopens the path when a new file stands
  /// there; a FIFO put there must not block it (which would hang its process).
  @Test func aFollowerDoesNotBlockOnAFIFO() throws {
    let dir = try LogTempDir()
    let result = try AdversaryChild.run("followerMeetsFIFO", dir.path)
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines == ["follow: invalidPath", "done"], "\(result)")
  }

  @Test(.enabled(if: geteuid() != 0, "root ignores file permissions"))
  func permissionsAreNamedAsTheCause() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    try LogStore<Beast>(path: path).close()
    #expect(chmod(path, 0) == 0)
    let file = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: path) }
    #expect(file?.message.contains("Permission denied") == true)
    #expect(chmod(path, 0o644) == 0)
    #expect(chmod(dir.path, 0o555) == 0)
    defer { chmod(dir.path, 0o755) }
    let directory = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: dir.file("new.rslog")) }
    #expect(directory?.message.contains("Permission denied") == true)
    #expect(directory?.message.contains("The directory must be writable") == true)
  }

  // MARK: Close

  // The end of the live set is awaited with a limit in time the test could run (a
  // wall-clock time limit fails on a loaded machine, where tasks wait minutes for a thread).
  @Test(arguments: StoreKind.writable)
  func closeEndsReadsAndWritesButEvaluatedSetsKeepTheirRecords(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    let evaluated = RequestSet(store).filter(\.age > 2)
    let expected = Array(evaluated)
    #expect(!expected.isEmpty)
    let pending = RequestSet(store).filter(\.age > 2)
    let live = StateReader(RequestSet(store))
    #expect(try await live.next() != nil, "the live set's first state")

    store.close()
    store.close()  // idempotent

    let writes: [(String, () throws -> Void)] = [
      ("insert", { try store.insert(Animal(id: 99, name: "New", species: "Cow", age: 1)) }),
      ("save", { try store.save(Animal(id: 99, name: "New", species: "Cow", age: 1)) }),
      ("delete", { _ = try store.delete(id: 1) }),
      ("apply", { try store.apply([.delete(id: 1)], ifVersion: nil) }),
      ("fetch(id:)", { _ = try store.fetch(id: 1) }),
      ("snapshot", { _ = try store.snapshot() }),
      ("unevaluated set", { _ = try pending.fetch() }),
    ]
    for (name, body) in writes {
      let error = #expect(throws: RequestSetError.self, "\(kind) \(name)") { try body() }
      #expect(error?.code == .closed, "\(kind) \(name)")
    }
    #expect(Array(evaluated) == expected, "an evaluated set keeps its records")
    #expect(try evaluated.fetch() == expected)
    #expect(try await live.ends(), "the live set's stream ended")
  }

  @Test func closeReleasesTheWriteLockAtOnce() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let first = try LogStore<Beast>(path: path)
    try first.insert(Beast(id: 1, name: "a"))
    let kept = RequestSet(first)
    #expect(Array(kept).count == 1)
    first.close()
    let error = #expect(throws: RequestSetError.self) { try first.insert(Beast(id: 2, name: "b")) }
    #expect(
      error?.message
        == "The LogStore<Beast> at \(path) was closed and reads and writes nothing any more. Request sets "
        + "evaluated before close() keep their records; open a new store to go on.")
    let second = try LogStore<Beast>(path: path)  // while `first` is still alive
    try second.insert(Beast(id: 2, name: "b"))
    #expect(second.count == 2)
    #expect(Array(kept).map(\.id) == [1])
    withExtendedLifetime(first) {}
  }

  // MARK: Locks

  /// Deleting `<path>.lock` lets no second writer in: the log file itself is locked, also
  /// after compaction swapped a new file in.
  @Test(arguments: [false, true]) func deletingTheLockFileLetsNoSecondWriterIn(compactFirst: Bool) throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let writer = try LogStore<Beast>(path: path)
    try writer.insert(contentsOf: [Beast(id: 1, name: "a"), Beast(id: 2, name: "b")])
    if compactFirst {
      try writer.delete(id: 1)
      try writer.compact()
    }
    try FileManager.default.removeItem(atPath: path + ".lock")
    let error = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: path) }
    #expect(error?.code == .locked)
    #expect(
      error?.message
        == "The log \(path) is locked for writing by another LogStore (in this or another process), which holds "
        + "a lock on the log file itself. Close that store first, or open this one with readOnly: true.")
    try writer.insert(Beast(id: 3, name: "c"))
    #expect(try LogStore<Beast>(path: path, options: .init(readOnly: true)).count == (compactFirst ? 2 : 3))
  }

  @Test(arguments: [false, true]) func anotherProcessIsRefusedAfterTheLockFileIsDeleted(compactFirst: Bool) throws {
    let dir = try LogTempDir()
    let path = dir.file("locked.rslog")
    let (holder, pipe) = try CrashWorker.start(compactFirst ? ["hold", path, "compact"] : ["hold", path])
    defer {
      kill(holder.processIdentifier, SIGKILL)
      holder.waitForEnd()
    }
    #expect(CrashWorker.readUntil(pipe) { $0 == "ready" }.contains("ready"))
    try FileManager.default.removeItem(atPath: path + ".lock")
    let error = #expect(throws: RequestSetError.self) { try LogStore<CrashRecord>(path: path) }
    #expect(error?.code == .locked)
    // And the other way round: this process holds the log, the child is refused.
    kill(holder.processIdentifier, SIGKILL)
    holder.waitForEnd()
    let store = try LogStore<CrashRecord>(path: path)
    try FileManager.default.removeItem(atPath: path + ".lock")
    let (child, childOut) = try CrashWorker.start(["lock", path])
    child.waitForEnd()
    #expect(String(decoding: childOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "locked\n")
    withExtendedLifetime(store) {}
  }

  #if os(Linux)
    /// A locked descriptor dropped without `close()` (an open that fails after locking, as
    /// a damaged log's does) releases its lock even while a child process holds a copy of
    /// it: another thread may be starting a child, which holds every descriptor until its
    /// `exec`. Here the child never execs, so without the unlock the lock would stay.
    @Test func aLockedDescriptorThatIsDroppedReleasesItsLockThoughAChildHoldsACopy() throws {
      let dir = try LogTempDir()
      let path = dir.file("held.rslog")
      try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
      var child: pid_t = -1
      do {
        let first = try _FileIO.open(path, O_RDWR, hint: "")
        #expect(_FileIO.lockExclusive(first) == 0)
        child = fork()
        if child == 0 { while true { pause() } }  // holds copies of the parent's descriptors
        try #require(child > 0, "fork failed: errno \(errno)")
      }
      defer {
        kill(child, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(child, &status, 0)
      }
      let second = try _FileIO.open(path, O_RDWR, hint: "")
      #expect(_FileIO.lockExclusive(second) == 0, "the dropped descriptor's lock is gone")
    }
  #endif

  /// A writable open of a file that is no log failed and left `<path>.lock` beside it; it
  /// leaves nothing now, and a lock file that was there before stays.
  @Test func aFailedOpenLeavesNoLockFileBehind() throws {
    let dir = try LogTempDir()
    let path = dir.file("notes.json")
    let text = Data(#"{"not": "a log", "but": "a user's file"}"#.utf8)
    try text.write(to: URL(fileURLWithPath: path))
    #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: path) }
    #expect(!FileManager.default.fileExists(atPath: path + ".lock"))
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == text, "the file is untouched")
    // A lock file some earlier store left is not this open's to remove.
    #expect(FileManager.default.createFile(atPath: path + ".lock", contents: nil))
    #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: path) }
    #expect(FileManager.default.fileExists(atPath: path + ".lock"))
    // An open that succeeds keeps its lock file while the store lives.
    let good = dir.file("good.rslog")
    let store = try LogStore<Beast>(path: good)
    #expect(FileManager.default.fileExists(atPath: good + ".lock"))
    withExtendedLifetime(store) {}
  }

  /// The temporary files of writers that died mid-way are removed by the next open that
  /// can prove them abandoned: a writer (holding the log's locks) removes
  /// `.compacting`, `.creating`, `.checkpoint.tmp` and an import copy whose process is
  /// gone; a live process's copy, and a `.compacting` someone holds locked, stay.
  @Test func openingRemovesTheTemporaryFilesOfDeadWriters() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    do {
      let store = try LogStore<Beast>(path: path)
      try store.insert(Beast(id: 1, name: "Kept", species: "Cow", age: 3))
      store.close()
    }
    // A process that has ended: its id names no process (for the moment this test needs).
    let ended = Process()
    ended.executableURL = URL(fileURLWithPath: "/bin/true")
    try ended.run()
    ended.waitForEnd()
    let dead = ended.processIdentifier
    let fm = FileManager.default
    let abandoned = [
      ".compacting", ".creating", ".checkpoint.tmp", ".importing-\(dead)", ".importing-\(dead).lock",
      ".importing-\(dead).checkpoint",
    ]
    let live = [".importing-\(getpid())", ".importing-\(getpid()).lock", ".importing-12x", ".importingnot"]
    for suffix in abandoned + live { #expect(fm.createFile(atPath: path + suffix, contents: Data("x".utf8))) }

    // A reader holds no lock of the log's: it removes only a `.compacting` nobody holds.
    let holder = try _FileIO.open(path + ".compacting", O_RDONLY, hint: "")
    #expect(_FileIO.lockExclusive(holder) == 0)
    try LogStore<Beast>(path: path, options: .init(readOnly: true)).close()
    #expect(fm.fileExists(atPath: path + ".compacting"), "a compaction still holds it")
    _ = flock(holder.fd, LOCK_UN)
    try LogStore<Beast>(path: path, options: .init(readOnly: true)).close()
    #expect(!fm.fileExists(atPath: path + ".compacting"))
    #expect(fm.fileExists(atPath: path + ".creating"), "only a writer may remove it")
    withExtendedLifetime(holder) {}

    let store = try LogStore<Beast>(path: path)
    for suffix in abandoned { #expect(!fm.fileExists(atPath: path + suffix), "\(suffix)") }
    for suffix in live { #expect(fm.fileExists(atPath: path + suffix), "\(suffix)") }
    #expect(try store.fetch(id: 1)?.name == "Kept")
    store.close()
  }

  /// The listing an open for writing makes of the log's directory (to find dead
  /// importers' copies) keeps exactly the names that begin with the prefix, byte for
  /// byte, among thousands of others; leaves out a name that is not UTF-8; and is nil for
  /// a directory that cannot be read.
  @Test func theDirectoryListingKeepsOnlyNamesWithThePrefix() throws {
    let dir = try LogTempDir()
    let fm = FileManager.default
    for i in 0..<3_000 { #expect(fm.createFile(atPath: dir.file("log.rslog.damaged-0-\(i)"), contents: nil)) }
    let wanted = ["log.rslog.importing-1", "log.rslog.importing-22.lock", "log.rslog.importing-"]
    let near = ["log.rslog.importing", "log.rslog.importinG-1", "xlog.rslog.importing-1", "log.rslog"]
    for name in wanted + near { #expect(fm.createFile(atPath: dir.file(name), contents: nil)) }
    // A name of bytes that are not UTF-8, after the prefix.
    let invalid = Array("\(dir.path)/log.rslog.importing-\u{1}".utf8) + [0xFF, 0xFE, 0]
    let fd = invalid.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
    #expect(fd >= 0)
    close(fd)

    let found = try #require(_FileIO.names(in: dir.path, withPrefix: "log.rslog.importing-"))
    #expect(found.sorted() == wanted.sorted())
    #expect(_FileIO.names(in: dir.path, withPrefix: "")?.count == 3_000 + wanted.count + near.count + 2)  // . and ..
    #expect(_FileIO.names(in: dir.file("missing"), withPrefix: "log") == nil)
    #expect(_FileIO.names(in: dir.file("log.rslog"), withPrefix: "log") == nil, "a file, not a directory")
  }

  // MARK: Schema mismatch and side files

  @Test(arguments: [LogRecoveryMode.truncateTornTail, .failOnAnyDamage, .stopAtFirstDamage, .skipDamagedFrames])
  func anotherRecordTypeIsASchemaMismatchNotDamage(mode: LogRecoveryMode) throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let beasts = [Beast(id: 1, name: "a"), Beast(id: 2, name: "b"), Beast(id: 3, name: "c")]
    do {
      let store = try LogStore<Beast>(path: path)
      try store.insert(contentsOf: beasts)
      try store.insert(Beast(id: 4, name: "d"))
    }
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    let error = #expect(throws: RequestSetError.self) {
      try LogStore<NamedBeast>(path: path, options: .init(recovery: mode))
    }
    #expect(error?.code == .schemaMismatch)
    let message = error?.message ?? ""
    #expect(message.hasPrefix("The log \(path) is intact, but its records were written with another record type: "))
    #expect(message.contains("the field \"id\" of the record at offset "))
    #expect(message.contains("holds an integer (1), and this store reads it as String."))
    #expect(!message.contains("skipDamagedFrames") && !message.contains("stopAtFirstDamage"), "no salvage advice")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "nothing was changed")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["store.rslog", "store.rslog.lock"])
    #expect(try readLog(path).0 == beasts + [Beast(id: 4, name: "d")], "the right type still reads every record")
  }

  @Test func aTornTailIsKeptInASideFileBeforeItIsCut() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: 6, seed: 7)
    let path = dir.file("torn.rslog")
    let torn = Array(script.bytes[..<(script.bytes.count - 3)])
    try writeFile(torn, to: path)
    let (records, report) = try readLog(path)
    #expect(records == script.states[5])
    let cut = script.ends[5]
    #expect(report.tornTail?.offset == cut)
    #expect(report.preserved == .init(path: "\(path).damaged-\(cut)", offset: cut, byteCount: torn.count - cut))
    #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(path).damaged-\(cut)"))) == Array(torn[cut...]))
    #expect(report.description.hasSuffix("\(torn.count - cut) bytes from offset \(cut) kept in \(path).damaged-\(cut)"))
    // The same cut again reuses the side file; other bytes get their own.
    try writeFile(torn, to: path)
    #expect(try readLog(path).1.preserved?.path == "\(path).damaged-\(cut)")
    var other = torn
    other[other.count - 1] ^= 0xFF
    try writeFile(other, to: path)
    let second = try readLog(path).1.preserved
    #expect(second?.path.hasPrefix("\(path).damaged-\(cut)-") == true)
    #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: second?.path ?? ""))) == Array(other[cut...]))
    // A read-only open cuts nothing and keeps nothing.
    try writeFile(torn, to: path)
    #expect(try readLog(path, .init(readOnly: true)).1.preserved == nil)
  }

  /// The salvage modes keep every byte they drop: stopAtFirstDamage the intact frames after
  /// the damage, skipDamagedFrames the whole file as it was.
  @Test func salvageModesKeepWhatTheyDrop() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: 12, seed: 11)
    let path = dir.file("damaged.rslog")
    let frame = script.frameStarts[script.frameStarts.count / 2]
    var damaged = script.bytes
    damaged[frame + 6] ^= 0x55

    try writeFile(damaged, to: path)
    let (_, stop) = try readLog(path, .init(recovery: .stopAtFirstDamage))
    let cut = script.ends[script.completeWrites(upTo: frame)]
    #expect(stop.preserved == .init(path: "\(path).damaged-\(cut)", offset: cut, byteCount: damaged.count - cut))
    #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(path).damaged-\(cut)"))) == Array(damaged[cut...]))

    try writeFile(damaged, to: path)
    let (_, skip) = try readLog(path, .init(recovery: .skipDamagedFrames))
    #expect(skip.rewritten)
    #expect(skip.preserved == .init(path: "\(path).damaged-0", offset: 0, byteCount: damaged.count))
    #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(path).damaged-0"))) == damaged)
  }

  // MARK: The file changed underneath

  /// Another process cutting the log short must not kill this one with SIGBUS: reads past
  /// the new end throw `.fileChanged`, and so does the next write.
  @Test func aLogTruncatedUnderneathThrowsInsteadOfSIGBUS() throws {
    let dir = try LogTempDir()
    let result = try AdversaryChild.run("truncatedUnderneath", dir.file())
    #expect(result.exitedNormally, "\(result)")
    #expect(
      result.lines == [
        "evaluated before: 428", "pending: fileChanged", "evaluated: fileChanged", "fresh: fileChanged",
        "fetchID: fileChanged", "insert: fileChanged", "again: storeFailed", "done",
      ], "\(result)")
  }

  @Test func aWriteAfterTheFileWasCutShortSaysSo() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let store = try LogStore<Beast>(path: path)
    try store.insert(contentsOf: (1...50).map { Beast(id: $0, name: "n\($0)") })
    let size = store.fileSize
    #expect(truncate(path, 40) == 0)
    usleep(5_000)  // past the millisecond a size check is reused for
    let error = #expect(throws: RequestSetError.self) { try store.insert(Beast(id: 51, name: "x")) }
    #expect(error?.code == .fileChanged)
    #expect(
      error?.message
        == "The log \(path) was changed underneath this store: it is now 40 bytes, but the store has records up to "
        + "byte \(size). Another program truncated or rewrote it (a LogStore only appends, and compaction renames a new "
        + "file in). Stop that program, then open the store again to see what the file holds.")
    let after = #expect(throws: RequestSetError.self) { try store.insert(Beast(id: 52, name: "y")) }
    #expect(after?.code == .storeFailed)
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 40, "nothing was appended past the hole")
  }
}
