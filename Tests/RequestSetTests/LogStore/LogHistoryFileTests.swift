import Foundation
import Testing

@testable import RequestSet

/// History across the file's edges: a log cut at frame boundaries, logs written before
/// commits were stamped, retention by time, automatic compaction, and the errors.
@Suite(.ownThreads) struct LogHistoryFileTests {
  /// A log cut at any frame boundary lists exactly the commits complete before the cut,
  /// and reads each as the writes had left the store.
  @Test func aLogCutAtAFrameBoundaryKeepsTheCommitsBeforeTheCut() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: 30, seed: 0x4A50F)
    let path = dir.file("cut.rslog")
    for cut in script.frameStarts {
      try writeFile(script.bytes[..<cut], to: path)
      let store = try LogStore<Beast>(path: path, options: .init(readOnly: true))
      let complete = script.completeWrites(upTo: cut)
      #expect(try store.history().map(\.version) == (0..<complete).map { UInt64($0 + 1) }, "cut at \(cut)")
      for v in 1...Swift.max(1, complete) where complete > 0 {
        #expect(try RequestSet(store, asOf: UInt64(v)).fetch() == script.states[v], "cut at \(cut), version \(v)")
      }
      let error = #expect(throws: RequestSetError.self) { try RequestSet(store, asOf: UInt64(complete + 1)) }
      #expect(error?.code == .versionUnavailable, "cut at \(cut)")
    }
    // A writer cuts the torn tail off and goes on from the last complete commit.
    let middle = script.frameStarts[script.frameStarts.count / 2]
    try writeFile(script.bytes[..<(middle + 3)], to: path)
    let writer = try LogStore<Beast>(path: path)
    let complete = script.completeWrites(upTo: middle + 3)
    try writer.insert(Beast(id: 9_999, name: "late"))
    #expect(try writer.history().last?.version == UInt64(complete + 1))
    #expect(try RequestSet(writer, asOf: UInt64(complete)).fetch() == script.states[complete])
  }

  /// A compaction that keeps history writes its oldest kept commit's records, then the
  /// later commits' frames; cut anywhere after that base, the log keeps the base and the
  /// commits complete before the cut.
  @Test func aLogCompactedWithHistoryAndCutKeepsItsBaseAndTheCommitsBeforeTheCut() throws {
    let dir = try LogTempDir()
    let script = try ScriptedLog.make(in: dir, count: 30, seed: 0xC0FFEE)
    let source = dir.file("script.rslog")
    let store = try LogStore<Beast>(path: source, options: .init(autoCompactDeadRatio: nil, keepHistory: .versions(10)))
    try store.compact()
    store.close()
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
    var frameEnds: [Int] = []
    var commitEnds: [Int] = []
    bytes.withUnsafeBytes { raw in
      guard case .success(let header) = _LogFormat.Header.parse(raw) else { return }
      var at = _LogFormat.headerSize
      while case .frame(let f) = _LogFormat.parseFrame(raw, at: at, saltState: _LogFormat.saltState(header.salt)) {
        at = f.end
        frameEnds.append(f.end)
        if f.type == .commit { commitEnds.append(f.end) }
      }
    }
    #expect(frameEnds.last == bytes.count && commitEnds.count == 10)
    let path = dir.file("cut.rslog")
    for cut in frameEnds where cut >= commitEnds[0] {
      try writeFile(bytes[..<cut], to: path)
      let reader = try LogStore<Beast>(path: path, options: .init(readOnly: true))
      let newest = UInt64(20 + commitEnds.filter { $0 <= cut }.count)
      #expect(try reader.history().map(\.version) == Array(21...newest), "cut at \(cut)")
      for v in 21...newest {
        #expect(try RequestSet(reader, asOf: v).fetch() == script.states[Int(v)], "cut at \(cut), version \(v)")
      }
    }
  }

  /// Builds a log as RequestSet wrote it before commits were stamped: single changes as
  /// put and delete frames, batch commits with only their count.
  struct UnstampedLog {
    var keys = _KeyTable()
    var defined = 0
    let salt: UInt64 = 0x5EED
    var sequence: UInt64 = 0
    let out = _ByteBuffer()

    init() {
      _LogFormat.Header(salt: salt, generation: 1).encoded().withUnsafeBytes { out.append($0) }
    }

    mutating func frame(_ type: _LogFormat.FrameType, _ payload: [UInt8]) {
      sequence += 1
      payload.withUnsafeBytes {
        _ = _LogFormat.appendFrame(type, sequence: sequence, payload: $0, saltState: _LogFormat.saltState(salt), to: out)
      }
    }

    mutating func record(_ type: _LogFormat.FrameType, _ beast: Beast) throws {
      let body = _ByteBuffer()
      try _BinaryEncoder.encode(beast.id, into: body, keys: &keys)
      try _BinaryEncoder.encode(beast, into: body, keys: &keys)
      if keys.count > defined {
        let defs = _ByteBuffer()
        for id in defined..<keys.count {
          let name = keys.name(id) ?? ""
          defs.appendVarint(UInt64(id))
          defs.appendVarint(UInt64(name.utf8.count))
          defs.append(name)
        }
        defined = keys.count
        frame(.keys, defs.array)
      }
      frame(type, body.array)
    }

    mutating func delete(_ type: _LogFormat.FrameType, _ id: Int) throws {
      let body = _ByteBuffer()
      try _BinaryEncoder.encode(id, into: body, keys: &keys)
      frame(type, body.array)
    }

    mutating func commit(_ count: Int) {
      let body = _ByteBuffer()
      body.appendVarint(UInt64(count))
      frame(.commit, body.array)
    }
  }

  @Test func aLogWrittenBeforeStampsListsItsCommitsWithUnknownTimes() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let b1 = Beast(id: 1, name: "one"), b2 = Beast(id: 2, name: "two", species: "Dog")
    let b3 = Beast(id: 3, name: "three"), b3b = Beast(id: 3, name: "three again", age: 9)
    var old = UnstampedLog()
    try old.record(.put, b1)
    try old.record(.put, b2)
    try old.record(.batchPut, b3)
    try old.delete(.batchDelete, 1)
    old.commit(2)
    try old.delete(.delete, 2)
    try old.record(.put, b3b)
    try writeFile(old.out.array, to: path)
    let states: [[Beast]] = [[], [b1], [b1, b2], [b2, b3], [b3], [b3b]]

    var store = try LogStore<Beast>(path: path, options: .init(keepHistory: .all))
    var history = try store.history()
    #expect(history.map(\.version) == [1, 2, 3, 4, 5])
    #expect(history.map(\.recordsChanged) == [1, 1, 2, 1, 1])
    #expect(history.allSatisfy { !$0.hasTime && $0.time == .distantPast })
    #expect(history.first?.description == "version 1 at an unknown time: 1 records")
    for v in 1...5 { #expect(try RequestSet(store, asOf: UInt64(v)).fetch() == states[v], "version \(v)") }
    #expect(try store.snapshot().version == 5)

    // A new writer goes on from version 5, with times.
    let b4 = Beast(id: 4, name: "four")
    try store.insert(b4)
    history = try store.history()
    #expect(history.map(\.version) == [1, 2, 3, 4, 5, 6])
    #expect(history.map(\.hasTime) == [false, false, false, false, false, true])
    let stamped = try #require(history.last)

    // Compaction keeping everything keeps the versions, their times and what they read.
    try store.compact()
    #expect(try store.history() == history)
    for v in 1...5 { #expect(try RequestSet(store, asOf: UInt64(v)).fetch() == states[v], "version \(v)") }
    #expect(try RequestSet(store, asOf: 6).fetch() == [b3b, b4])

    // Compaction keeping nothing leaves the newest commit, standing for its records.
    store.close()
    store = try LogStore<Beast>(path: path)
    try store.compact()
    #expect(try store.history() == [LogCommit(version: 6, time: stamped.time, recordsChanged: 2)])
  }

  @Test func anUnstampedCompactionIsOneCommitOfItsRecords() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let beasts = (1...3).map { Beast(id: $0, name: "b\($0)") }
    var old = UnstampedLog()
    for b in beasts { try old.record(.put, b) }
    old.commit(0)
    try old.record(.put, Beast(id: 4, name: "b4"))
    try writeFile(old.out.array, to: path)
    let store = try LogStore<Beast>(path: path, options: .init(readOnly: true))
    #expect(try store.history().map(\.version) == [1, 2])
    #expect(try store.history().map(\.recordsChanged) == [3, 1])
    #expect(try RequestSet(store, asOf: 1).fetch() == beasts)
    #expect(try RequestSet(store, asOf: 2).count == 4)
  }

  /// Fields a later format adds after the stamp are skipped, as older readers skip the stamp.
  @Test func bytesAfterACommitStampAreLeftForLaterFormats() throws {
    let payload = _LogFormat.commitPayload(count: 3, stamp: .init(time: 1_700_000_000_000_000, version: 42))
    payload.appendVarint(7)
    payload.append("later")
    let bytes = payload.array
    let parsed = bytes.withUnsafeBytes { raw -> (count: Int, stamp: _LogFormat.CommitStamp?)? in
      do { return try _LogFormat.parseCommit(raw) } catch { return nil }
    }
    #expect(parsed?.count == 3)
    #expect(parsed?.stamp == .init(time: 1_700_000_000_000_000, version: 42))
    // The count comes first, as readers before the stamp read it.
    let count = bytes.withUnsafeBytes { raw -> UInt64? in
      var r = _ByteReader(raw)
      do { return try r.readVarint() } catch { return nil }
    }
    #expect(count == 3)
  }

  @Test func aReadAsOfATimeReadsTheNewestCommitAtOrBeforeIt() throws {
    let dir = try LogTempDir()
    let store = try LogStore<Beast>(path: dir.file())
    let empty = #expect(throws: RequestSetError.self) { try RequestSet(store, asOf: Date()) }
    #expect(empty?.code == .versionUnavailable)
    var states: [[Beast]] = [[]]
    var after: [Date] = [.distantPast]
    for i in 1...12 {
      if i % 4 == 0 { try store.delete(id: i - 1) } else { try store.insert(Beast(id: i, name: "b\(i)")) }
      states.append(try RequestSet(store).fetch())
      after.append(Date())
    }
    let history = try store.history()
    for v in 1...12 {
      let found = try store.commit(asOf: after[v])
      #expect(found.version >= UInt64(v) && found.time <= after[v])
      if let next = history.first(where: { $0.version == found.version + 1 }) { #expect(next.time > after[v]) }
      #expect(try RequestSet(store, asOf: after[v]).fetch() == states[Int(found.version)])
    }
    #expect(zip(history, history.dropFirst()).allSatisfy { $0.time <= $1.time })
    let early = #expect(throws: RequestSetError.self) { try RequestSet(store, asOf: Date.distantPast) }
    #expect(early?.code == .versionUnavailable)
    #expect(
      early?.message
        == "No readable commit of the LogStore at \(store.path) is as old as \(Date.distantPast): the oldest it keeps "
        + "is \(history[0]). Compaction drops older commits; keep more with LogStoreOptions.keepHistory, or read as "
        + "of a later time.")
  }

  @Test func keepingHistorySinceATimeKeepsTheCommitThatTimeReads() throws {
    let dir = try LogTempDir()
    var store = try LogStore<Beast>(path: dir.file())
    var after: [Date] = [.distantPast]
    for i in 1...20 {
      try store.save(Beast(id: i % 5, name: "b\(i)"))
      after.append(Date())
    }
    let then = try store.commit(asOf: after[8])
    let thenRecords = try RequestSet(store, asOf: after[8]).fetch()
    store.close()
    store = try LogStore<Beast>(path: dir.file(), options: .init(keepHistory: .since(after[8])))
    try store.compact()
    #expect(try store.history().map(\.version) == Array(then.version...20))
    #expect(try store.history().first?.time == then.time)
    #expect(try RequestSet(store, asOf: after[8]).fetch() == thenRecords)
    let gone = #expect(throws: RequestSetError.self) { try RequestSet(store, asOf: then.version - 1) }
    #expect(gone?.code == .versionUnavailable)
  }

  /// Kept history is not dead space to automatic compaction, which would otherwise
  /// rewrite the whole file after every write.
  @Test func automaticCompactionKeepingHistoryWaitsForNewDeadSpace() throws {
    let dir = try LogTempDir()
    let options = LogStoreOptions(autoCompactDeadRatio: 0.5, autoCompactMinimumBytes: 0, keepHistory: .all)
    let store = try LogStore<Beast>(path: dir.file(), options: options)
    for i in 1...300 { try store.save(Beast(id: 1, name: "v\(i)")) }
    let header = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.file())).prefix(_LogFormat.headerSize))
    let generation = header.withUnsafeBytes { raw in
      guard case .success(let h) = _LogFormat.Header.parse(raw) else { return UInt64.max }
      return h.generation
    }
    #expect(generation > 1 && generation < 16, "compactions: \(generation - 1)")
    #expect(try store.history().map(\.version) == Array(1...300))
    #expect(try RequestSet(store, asOf: 1).fetch() == [Beast(id: 1, name: "v1")])
  }

  /// A read-only store sees the versions its writer commits, and reports the writer's
  /// version as its own.
  @Test func aReadOnlyStoreReadsTheWritersNewVersions() throws {
    let dir = try LogTempDir()
    let writer = try LogStore<Beast>(path: dir.file())
    let (b1, b2, b3) = (Beast(id: 1, name: "a"), Beast(id: 2, name: "b"), Beast(id: 3, name: "c"))
    try writer.insert(b1)
    let reader = try LogStore<Beast>(path: dir.file(), options: .init(readOnly: true))
    #expect(try reader.snapshot().version == 1)
    try writer.insert(b2)
    try writer.insert(b3)
    try writer.delete(id: 1)
    #expect(try RequestSet(reader, asOf: 4).fetch() == [b2, b3])
    #expect(try reader.snapshot().version == 4)
    #expect(try reader.history() == (try writer.history()))
    #expect(try RequestSet(reader, asOf: 2).fetch() == [b1, b2])
  }

  @Test func keepingFewerThanOneVersionIsAnInvalidOption() throws {
    let dir = try LogTempDir()
    let error = #expect(throws: RequestSetError.self) {
      try LogStore<Beast>(path: dir.file(), options: .init(keepHistory: .versions(0)))
    }
    #expect(error?.code == .invalidOptions)
    #expect(
      error?.message
        == "LogStoreOptions.keepHistory is .versions(0) for the log \(dir.file()); it must keep at least 1 version "
        + "(the current one). Use .none to keep only the current state, or .all to keep every commit.")
  }

  @Test func aSetAsOfAVersionCannotWrite() throws {
    let dir = try LogTempDir()
    let store = try LogStore<Beast>(path: dir.file())
    try store.insert(contentsOf: [Beast(id: 1, name: "a"), Beast(id: 2, name: "b")])
    try store.delete(id: 1)
    let past = try RequestSet(store, asOf: 1)
    let message =
      "This RequestSet reads LogStore<Beast> as of version 1, the store as it was at version 1, which cannot "
      + "change. Write to the store itself, or through RequestSet(store), which reads its current state."
    let update = #expect(throws: RequestSetError.self) { try past.update { $0.age = 2 } }
    #expect(update?.code == .readOnly)
    #expect(update?.message == message)
    #expect(throws: RequestSetError.self) { try past.filter("name", value: "a").delete() }
    #expect(throws: RequestSetError.self) { try past.firstOrInsert { Beast(id: 3, name: "c") } }
    #expect(try RequestSet(store).fetch() == [Beast(id: 2, name: "b")])
    #expect(past.filter("name", value: "a").explain().hasPrefix("RequestSet<Beast> over LogStore<Beast> as of version 1\n"))
    #expect(past.refreshed().count == 2)
  }

  @Test(arguments: StoreKind.writable)
  func onlyALogStoreReadsAsOfAVersion(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Animal.zoo)
    try store.delete(id: Animal.zoo[0].id)
    switch kind {
    case .log, .indexedLog:
      #expect(try RequestSet(store, asOf: 1).fetch() == Animal.zoo)
      #expect(try RequestSet(store, asOf: 1).filter("species", value: "Cow").count == Animal.zoo.filter { $0.species == "Cow" }.count)
    default:
      let error = #expect(throws: RequestSetError.self) { try RequestSet(store, asOf: 1) }
      #expect(error?.code == .versionUnavailable)
      #expect(
        error?.message
          == "\(kind.sourceName) keeps no history: it holds only its current records, so it cannot be read as of a "
          + "past version or time. Keep the records in a LogStore, whose append-only file keeps its past commits "
          + "(see LogStoreOptions.keepHistory), or fetch() the records you need to keep.")
      #expect(throws: RequestSetError.self) { try RequestSet(store, asOf: Date()) }
    }
  }
}
