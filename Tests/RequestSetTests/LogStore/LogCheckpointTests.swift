import Foundation
import Testing

@testable import RequestSet

/// The checkpoint beside a log (`<path>.checkpoint`): a clean close writes it, the next
/// open reads it instead of replaying the log, and any checkpoint that does not describe
/// exactly the log's bytes (stale, damaged, cut, of another generation) is ignored, so
/// the store opens by replay with the same records.
@Suite(.ownThreads) struct LogCheckpointTests {
  /// Checkpoints for every log, however small.
  static let always = LogStoreOptions(checkpointMinimumBytes: 0)

  static func beasts(_ range: Range<Int>) -> [Beast] {
    range.map {
      Beast(
        id: $0, name: "b\($0)", species: ["Cow", "Dog", "Cat"][$0 % 3], age: $0 % 17,
        owner: $0 % 4 == 0 ? nil : .init(city: "c\($0 % 5)"))
    }
  }

  /// A log of 40 records (some replaced, some deleted) with an index, closed cleanly.
  static func makeLog(in dir: LogTempDir) throws -> (path: String, records: [Beast]) {
    let path = dir.file()
    let store = try LogStore<Beast>(path: path, options: always)
    try store.insert(contentsOf: beasts(0..<30))
    for b in beasts(30..<40) { try store.insert(b) }
    try store.save(Beast(id: 3, name: "renamed", species: "Horse", age: 99))
    try store.delete(id: 7)
    try store.createIndex("species")
    let records = try RequestSet(store).fetch()
    store.close()
    return (path, records)
  }

  /// Opens the log and checks that it holds `records`, answers by id and by index, and
  /// takes writes; returns its report.
  @discardableResult
  static func checkOpens(_ path: String, holding records: [Beast], options: LogStoreOptions = always) throws
    -> LogRecoveryReport
  {
    let store = try LogStore<Beast>(path: path, options: options)
    defer { store.close() }
    #expect(try RequestSet(store).fetch() == records)
    #expect(store.count == records.count)
    #expect(store.indexes.map(\.key) == ["species"])
    let three = records.first { $0.id == 3 }
    let twelve = records.first { $0.id == 12 }
    #expect(try store.fetch(id: 3) == three)
    #expect(try store.fetch(id: 7) == nil)
    #expect(RequestSet(store).filter(\.id == 12).first == twelve)
    #expect(
      RequestSet(store).filter("species", value: "Cow").count == records.filter { $0.species == "Cow" }.count)
    #expect(throws: RequestSetError.self) { try store.insert(Beast(id: 5, name: "twin")) }
    return store.recoveryReport
  }

  static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

  @Test func aCleanCloseWritesACheckpointAndTheNextOpenReadsIt() throws {
    let dir = try LogTempDir()
    let (path, records) = try Self.makeLog(in: dir)
    let checkpoint = path + ".checkpoint"
    #expect(FileManager.default.fileExists(atPath: checkpoint))
    let report = try Self.checkOpens(path, holding: records)
    #expect(report.openedFromCheckpoint)
    #expect(report.isClean)
    #expect(report.recordCount == records.count)
    #expect(report.description.hasSuffix("; read from its checkpoint"))

    // The same open by replay (no checkpoint) reports the same, but for where it read.
    try FileManager.default.removeItem(atPath: checkpoint)
    let replayed = try LogStore<Beast>(path: path, options: .init(checkpointMinimumBytes: .max))
      .recoveryReport
    #expect(!replayed.openedFromCheckpoint)
    var fromCheckpoint = report
    fromCheckpoint.openedFromCheckpoint = false
    #expect(fromCheckpoint == replayed)
  }

  @Test func writesAfterACheckpointedOpenSurviveTheNextOpen() throws {
    let dir = try LogTempDir()
    var (path, records) = try Self.makeLog(in: dir)
    do {
      let store = try LogStore<Beast>(path: path, options: Self.always)
      #expect(store.recoveryReport.openedFromCheckpoint)
      // Writes first, before any id lookup: each loads the id map from the records.
      try store.save(Beast(id: 12, name: "twelve", species: "Cow"))
      try store.insert(Beast(id: 100, name: "new"))
      #expect(try store.delete(id: 20))
      records = try RequestSet(store).fetch()
      store.close()
    }
    #expect(records.contains { $0.id == 100 } && !records.contains { $0.id == 20 })
    let report = try Self.checkOpens(path, holding: records)
    #expect(report.openedFromCheckpoint, "the close wrote a checkpoint for the grown log")
  }

  @Test func aStaleCheckpointIsIgnoredWhenTheLogGrewAfterIt() throws {
    let dir = try LogTempDir()
    let (path, _) = try Self.makeLog(in: dir)
    let old = try Self.bytes(path + ".checkpoint")
    let store = try LogStore<Beast>(path: path, options: Self.always)
    try store.insert(Beast(id: 200, name: "late"))
    let records = try RequestSet(store).fetch()
    store.close()
    try old.write(to: URL(fileURLWithPath: path + ".checkpoint"))
    let report = try Self.checkOpens(path, holding: records)
    #expect(!report.openedFromCheckpoint)
  }

  @Test func aCheckpointOfAnEarlierGenerationIsIgnoredAfterCompaction() throws {
    let dir = try LogTempDir()
    let (path, records) = try Self.makeLog(in: dir)
    let old = try Self.bytes(path + ".checkpoint")
    do {
      let store = try LogStore<Beast>(path: path, options: Self.always)
      try store.compact()
      // Compaction wrote the new file's checkpoint at once.
      #expect(try Self.bytes(path + ".checkpoint") != old)
      #expect(
        try LogStore<Beast>(path: path, options: .init(readOnly: true)).recoveryReport.openedFromCheckpoint)
      store.close()
    }
    try old.write(to: URL(fileURLWithPath: path + ".checkpoint"))
    let report = try Self.checkOpens(path, holding: records)
    #expect(!report.openedFromCheckpoint)
  }

  /// Every single flipped bit in the checkpoint, and every cut, makes the open replay.
  @Test func aDamagedOrCutCheckpointIsIgnored() throws {
    let dir = try LogTempDir()
    let (path, records) = try Self.makeLog(in: dir)
    let checkpoint = path + ".checkpoint"
    let good = try Self.bytes(checkpoint)
    var rng = SeededRandom(seed: 0xC4EC)
    var damaged: [Data] = (0..<24).map { _ in
      var d = good
      let i = Int(rng.next() % UInt64(d.count))
      d[i] ^= 1 << UInt8(rng.next() % 8)
      return d
    }
    damaged += [Data(), good.prefix(10), good.prefix(good.count / 2), good.dropLast()]
    for bad in damaged {
      try bad.write(to: URL(fileURLWithPath: checkpoint))
      // Read-only: the open must not repair the checkpoint for the next case.
      let reader = try LogStore<Beast>(path: path, options: .init(readOnly: true))
      #expect(!reader.recoveryReport.openedFromCheckpoint)
      #expect(try RequestSet(reader).fetch() == records)
    }
    try good.write(to: URL(fileURLWithPath: checkpoint))
    #expect(try Self.checkOpens(path, holding: records).openedFromCheckpoint)
  }

  /// A byte flipped in the log after its checkpoint was written is found as damage, as
  /// it would be without a checkpoint: the checkpoint is only used for the exact bytes it
  /// describes.
  @Test func aFlippedByteInTheLogIsDamageDespiteTheCheckpoint() throws {
    let dir = try LogTempDir()
    let (path, _) = try Self.makeLog(in: dir)
    var log = try Self.bytes(path)
    log[log.count / 2] ^= 0x10
    try log.write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: RequestSetError.self) {
      try LogStore<Beast>(path: path, options: Self.always)
    }
    #expect(error?.code == .corruptLog)
    #expect(try Self.bytes(path) == log, "nothing was changed")
  }

  /// A log cut after its checkpoint was written loses its torn tail as without one.
  @Test func aCutLogIsReplayedAndItsTornTailCut() throws {
    let dir = try LogTempDir()
    let (path, records) = try Self.makeLog(in: dir)
    // Grow it by one batch, then cut that batch in half, as a crash mid-write would.
    let before = try Self.bytes(path).count
    do {
      let store = try LogStore<Beast>(path: path, options: .init(checkpointMinimumBytes: .max))
      try store.insert(contentsOf: Self.beasts(300..<310))
    }
    let grown = try Self.bytes(path)
    try grown.prefix((before + grown.count) / 2).write(to: URL(fileURLWithPath: path))
    let report = try Self.checkOpens(path, holding: records)
    #expect(!report.openedFromCheckpoint)
    #expect(report.tornTail?.offset == before)
  }

  @Test func smallLogsGetNoCheckpointByDefault() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    do {
      let store = try LogStore<Beast>(path: path)
      try store.insert(contentsOf: Self.beasts(0..<50))
    }
    #expect(!FileManager.default.fileExists(atPath: path + ".checkpoint"))
    let error = #expect(throws: RequestSetError.self) {
      try LogStore<Beast>(path: path, options: .init(checkpointMinimumBytes: -1))
    }
    #expect(error?.code == .invalidOptions)
    #expect(
      error?.message
        == "LogStoreOptions.checkpointMinimumBytes is -1 for the log \(path); it must be 0 or more (logs smaller "
        + "than this get no checkpoint).")
  }

  /// A checkpoint names the id type it was written for: a store of another record type
  /// replays, and finds the mismatch as it always did.
  @Test func aStoreOfAnotherIDTypeDoesNotReadTheCheckpoint() throws {
    let dir = try LogTempDir()
    let (path, _) = try Self.makeLog(in: dir)
    let error = #expect(throws: RequestSetError.self) { try LogStore<NamedBeast>(path: path) }
    #expect(error?.code == .schemaMismatch)
  }

  @Test func anOpenFromACheckpointKeepsTheVersionAndTheHistoryGoingOn() throws {
    let dir = try LogTempDir()
    let (path, records) = try Self.makeLog(in: dir)
    let before: (version: UInt64, history: [LogCommit])
    // What a replay says, with the checkpoint moved aside.
    let checkpoint = path + ".checkpoint"
    #expect(rename(checkpoint, checkpoint + ".aside") == 0)
    do {
      let replayed = try LogStore<Beast>(path: path, options: .init(readOnly: true))
      defer { replayed.close() }
      #expect(!replayed.recoveryReport.openedFromCheckpoint)
      before = (try replayed.snapshot().version, try replayed.history())
    }
    #expect(rename(checkpoint + ".aside", checkpoint) == 0)
    #expect(before.version > 1)
    let store = try LogStore<Beast>(path: path, options: Self.always)
    #expect(store.recoveryReport.openedFromCheckpoint)
    #expect(try store.snapshot().version == before.version)
    #expect(try store.history() == before.history)
    try store.insert(Beast(id: 100, name: "late"))
    let after = try store.history()
    #expect(after.map(\.version) == before.history.map(\.version) + [before.version + 1])
    // Times never go back: the new commit is no older than the one the checkpoint knew.
    #expect(after.last!.time >= before.history.last!.time)
    #expect(try RequestSet(store, asOf: before.version).fetch() == records)
    store.close()
  }

}
