import Foundation
import Testing

@testable import RequestSet

@Suite struct LogInspectionTests {
  private func zooLog() throws -> String {
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<Animal>(path: path)
    try store.insert(contentsOf: Animal.zoo)
    try store.createIndex("species")
    try store.delete(id: 6)
    store.close()
    return path
  }

  @Test func aCleanLogReportsItsKeysIndexesAndDeadSpace() throws {
    let path = try zooLog()
    let report = try LogStore<DynamicRecord>.inspect(path: path)
    #expect(report.isClean)
    #expect(report.recordCount == 5)
    #expect(report.generation == 1)
    #expect(report.formatVersion == 1)
    #expect(report.indexes == [RequestIndex(key: "species", unique: false)])
    let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
    #expect(report.fileSize == size)
    #expect(report.committedEnd == size)
    #expect(report.deadBytes > 0)  // the deleted record, its delete frame, keys, commit, index frames
    let keys = Dictionary(uniqueKeysWithValues: report.keys.map { ($0.key, $0) })
    #expect(keys["name"]?.recordCount == 5)
    #expect(keys["name"]?.kinds == ["string"])
    #expect(keys["nickname"]?.recordCount == 3)  // Micky, Rex, alice: nil is left out
    #expect(keys["owner.city"]?.recordCount == 3)
    #expect(keys["owner"]?.kinds == ["object"])
    #expect(keys["weight"]?.kinds == ["double"])
    #expect(keys["age"]?.kinds == ["int"])
    #expect(report.recovery.map(\.mode) == [.truncateTornTail, .failOnAnyDamage, .stopAtFirstDamage, .skipDamagedFrames])
    #expect(report.recovery.allSatisfy { $0.opens && $0.recordCount == 5 && $0.cutAt == nil && !$0.rewrites })
  }

  @Test func compactionRaisesTheGenerationAndClearsDeadSpace() throws {
    let path = try zooLog()
    let store = try LogStore<Animal>(path: path)
    try store.compact()
    store.close()
    let report = try LogStore<DynamicRecord>.inspect(path: path)
    #expect(report.generation == 2)
    #expect(report.recordCount == 5)
    #expect(report.deadBytes < 200)  // only the key, index and commit frames
  }

  @Test func damageIsReportedWithWhatEachModeWouldDo() throws {
    let path = try zooLog()
    var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    let before = bytes
    // A byte inside the batch of inserts (well before the index and delete frames).
    let at = 120
    bytes[at] ^= 0xFF
    bytes.append(contentsOf: [0x09, 0x09])  // and a torn tail
    try bytes.write(to: URL(fileURLWithPath: path))
    let report = try LogStore<DynamicRecord>.inspect(path: path)
    #expect(!report.isClean)
    #expect(report.damage.count == 1)
    #expect(report.damage[0].offset <= at && at < report.damage[0].offset + report.damage[0].byteCount)
    #expect(report.damage[0].reason == "checksum mismatch")
    #expect(report.tornTail?.byteCount == 2)
    let byMode = Dictionary(uniqueKeysWithValues: report.recovery.map { ($0.mode, $0) })
    #expect(byMode[.truncateTornTail]?.opens == false)
    #expect(byMode[.truncateTornTail]?.refusal?.contains("is damaged at offset \(report.damage[0].offset)") == true)
    #expect(byMode[.failOnAnyDamage]?.opens == false)
    #expect(byMode[.stopAtFirstDamage]?.opens == true)
    // The damaged frame belongs to the first write: nothing before it survives.
    #expect(byMode[.stopAtFirstDamage]?.cutAt == _LogFormat.headerSize)
    #expect(byMode[.stopAtFirstDamage]?.recordCount == 0)
    #expect(byMode[.skipDamagedFrames]?.opens == true)
    #expect(byMode[.skipDamagedFrames]?.rewrites == true)
    // The batch lost a frame, so the batch goes whole.
    #expect(byMode[.skipDamagedFrames]?.droppedRecords == 5)
    // Inspecting changed nothing.
    var after = try Data(contentsOf: URL(fileURLWithPath: path))
    after[at] ^= 0xFF
    #expect(after.prefix(before.count) == before)
  }

  @Test func aFileThatIsNoLogThrowsCorruptLog() throws {
    let path = TemporaryLogDirectory.freshPath("foreign.txt")
    try Data("id,name\n1,Rex\n".utf8).write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: RequestSetError.self) { try LogStore<DynamicRecord>.inspect(path: path) }
    #expect(error?.code == .corruptLog)
    #expect(error?.message.contains("does not start with the RequestSet log signature") == true)
    let missing = #expect(throws: RequestSetError.self) {
      try LogStore<DynamicRecord>.inspect(path: TemporaryLogDirectory.freshPath())
    }
    #expect(missing?.code == .ioFailure)
  }
}
