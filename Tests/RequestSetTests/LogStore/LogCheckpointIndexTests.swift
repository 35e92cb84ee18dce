import Foundation
import Testing

@testable import RequestSet

/// A checkpoint keeps each index's entries, so an open from it sorts no index: the
/// entries come back exactly as the writer held them, and any that do not hold (an old
/// checkpoint version, entries that miss a slot or are out of order) make the store
/// rebuild its indexes from the records, with the same answers.
@Suite(.ownThreads) struct LogCheckpointIndexTests {
  typealias T = LogCheckpointTests

  /// The log's header and bytes, as the store maps them.
  static func logParts(_ path: String) throws -> (header: _LogFormat.Header, bytes: [UInt8]) {
    let bytes = [UInt8](try T.bytes(path))
    let header = try bytes.withUnsafeBytes { try _LogFormat.Header.parse($0).get() }
    return (header, bytes)
  }

  static func load(_ path: String) throws -> _Checkpoint.Contents? {
    let (header, bytes) = try logParts(path)
    return bytes.withUnsafeBytes {
      _Checkpoint.load(log: path, header: header, bytes: $0, idType: String(reflecting: Int.self))
    }
  }

  /// Every ordered entry of an index, as (value, slot), and its unordered slots.
  static func entries(_ index: _SortedIndex) -> [String] {
    var out: [String] = []
    index.forEachOrdered { out.append("\($0.value)@\($0.slot)") }
    return out + index.unordered.map { "?@\($0)" }
  }

  /// Writes a checkpoint for the log with these contents, checksummed as the store does.
  static func write(_ c: _Checkpoint.Contents, for path: String) throws {
    let (header, bytes) = try logParts(path)
    let crc = bytes.withUnsafeBytes { _Checkpoint.logChecksum($0) }
    let out = _Checkpoint.encode(c, header: header, logCRC: crc, idType: String(reflecting: Int.self))
    #expect(_Checkpoint.write(out, log: path))
  }

  @Test func aCheckpointKeepsTheEntriesTheStoreHeld() throws {
    let dir = try LogTempDir()
    let (path, records) = try T.makeLog(in: dir)
    let c = try #require(try Self.load(path))
    let kept = try #require(c.indexEntries)
    #expect(kept.count == 1)
    // What a replay rebuilds, with no checkpoint.
    try FileManager.default.removeItem(atPath: path + ".checkpoint")
    let replayed = try LogStore<Beast>(path: path, options: .init(readOnly: true))
    let rebuilt = try #require(try replayed.snapshot()._indexes?.catalog.index(for: "species"))
    #expect(Self.entries(kept[0]) == Self.entries(rebuilt.entries))
    #expect(kept[0].count == records.count)
    #expect(kept[0].kinds == rebuilt.entries.kinds)
  }

  /// The open takes the kept entries as they are, reading no record to rebuild them: a
  /// checkpoint whose entries (consistent, but not the records' values) say every record
  /// is a cow gives an index that says so, which a rebuilt index would not.
  @Test func anOpenFromTheCheckpointUsesTheKeptEntries() throws {
    let dir = try LogTempDir()
    let (path, records) = try T.makeLog(in: dir)
    var c = try #require(try Self.load(path))
    let good = try #require(c.indexEntries?.first)
    var slots: [Int] = []
    good.forEachOrdered { slots.append($0.slot) }
    var allCows = _SortedIndex()
    for slot in slots.sorted() {
      let appended = allCows.appendInOrder(_IndexEntry(value: .string("Cow"), slot: slot))
      #expect(appended)
    }
    c.indexEntries = [allCows]
    try Self.write(c, for: path)

    let store = try LogStore<Beast>(path: path, options: .init(readOnly: true))
    #expect(store.recoveryReport.openedFromCheckpoint)
    let index = try #require(try store.snapshot()._indexes?.catalog.index(for: "species"))
    #expect(Self.entries(index.entries) == Self.entries(allCows))
    #expect(records.filter { $0.species == "Cow" }.count < records.count)
  }

  /// Entries missing a slot, or with a slot twice, are not used: the index is rebuilt.
  @Test(arguments: ["missing", "twice", "dead"])
  func entriesThatDoNotCoverTheLiveSlotsAreRebuilt(fault: String) throws {
    let dir = try LogTempDir()
    let (path, records) = try T.makeLog(in: dir)
    var c = try #require(try Self.load(path))
    let good = try #require(c.indexEntries?.first)
    var all: [_IndexEntry] = []
    good.forEachOrdered { all.append($0) }
    let cow = try #require(all.firstIndex { $0.value == .string("Cow") })
    switch fault {
    case "missing": all.remove(at: cow)
    case "twice": all[cow + 1] = _IndexEntry(value: .string("Cow"), slot: all[cow].slot)
    default: all[cow].slot = 7  // id 7 is deleted: its slot is dead
    }
    var bad = _SortedIndex()
    // Appended without the order check, as a writer with a bug could have stored them.
    for e in all { bad.insert(e.value, slot: e.slot) }
    c.indexEntries = [bad]
    try Self.write(c, for: path)
    #expect(try Self.load(path)?.indexEntries == nil, "the checkpoint is read, its entries are not")
    let store = try LogStore<Beast>(path: path, options: .init(readOnly: true))
    #expect(store.recoveryReport.openedFromCheckpoint)
    #expect(
      try RequestSet(store).filter("species", value: "Cow").fetch() == records.filter { $0.species == "Cow" })
  }

  /// A version 2 checkpoint (before index entries) is not read: the log is replayed.
  @Test func anOlderVersionOfTheCheckpointIsReplayed() throws {
    let dir = try LogTempDir()
    let (path, records) = try T.makeLog(in: dir)
    var bytes = [UInt8](try T.bytes(path + ".checkpoint"))
    #expect(bytes[8] == 3 && bytes[9] == 0)
    bytes[8] = 2
    // With a checksum that holds: only the version makes it unreadable.
    let body = bytes.count - 4
    let crc = bytes.withUnsafeBytes { _CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<body])) }
    withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(body..., with: $0) }
    try Data(bytes).write(to: URL(fileURLWithPath: path + ".checkpoint"))
    let report = try T.checkOpens(path, holding: records)
    #expect(!report.openedFromCheckpoint)
  }
}
