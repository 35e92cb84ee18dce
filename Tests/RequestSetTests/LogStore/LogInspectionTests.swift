import Foundation
import Testing

@testable import RequestSet

@Suite(.ownThreads) struct LogInspectionTests {
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

  // MARK: One replay for a clean log, keys from the bytes

  /// The frames of a log: (type, start, end) in file order.
  private func frames(_ path: String) throws -> [(type: _LogFormat.FrameType, start: Int, end: Int)] {
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    return bytes.withUnsafeBytes { file in
      guard case .success(let header) = _LogFormat.Header.parse(file) else { return [] }
      let salt = _LogFormat.saltState(header.salt)
      var out: [(type: _LogFormat.FrameType, start: Int, end: Int)] = []
      var at = _LogFormat.headerSize
      while case .frame(let f) = _LogFormat.parseFrame(file, at: at, saltState: salt) {
        out.append((f.type, f.start, f.end))
        at = f.end
      }
      return out
    }
  }

  /// Expects the report to be the one a replay per recovery mode gives.
  private func expectSameAsEveryModeReplayed(_ path: String, sourceLocation: SourceLocation = #_sourceLocation)
    throws -> LogInspection
  {
    let report = try LogStore<DynamicRecord>.inspect(path: path)
    let replayed = try LogStore<DynamicRecord>._inspect(path: path, replayEveryMode: true)
    #expect(report == replayed, sourceLocation: sourceLocation)
    return report
  }

  @Test func everyModeReportsTheSameWhetherOrNotTheFileIsReplayedPerMode() throws {
    // Clean.
    let clean = try zooLog()
    #expect(try expectSameAsEveryModeReplayed(clean).isClean)
    // A torn tail; a flipped byte; a file cut inside a frame.
    let torn = try zooLog()
    var bytes = try Data(contentsOf: URL(fileURLWithPath: torn))
    bytes.append(contentsOf: [0x01, 0x02, 0x03])
    try bytes.write(to: URL(fileURLWithPath: torn))
    #expect(try expectSameAsEveryModeReplayed(torn).tornTail?.byteCount == 3)
    let flipped = try zooLog()
    bytes = try Data(contentsOf: URL(fileURLWithPath: flipped))
    bytes[100] ^= 0x40
    try bytes.write(to: URL(fileURLWithPath: flipped))
    #expect(try !expectSameAsEveryModeReplayed(flipped).damage.isEmpty)
    let cut = try zooLog()
    bytes = try Data(contentsOf: URL(fileURLWithPath: cut))
    try bytes.prefix(bytes.count - 5).write(to: URL(fileURLWithPath: cut))
    #expect(try expectSameAsEveryModeReplayed(cut).tornTail != nil)
  }

  @Test func aMissingWholeWriteIsNoDamageToSkippingButEveryOtherModeRefusesIt() throws {
    // Three single writes; the middle one's frames cut out leave intact frames whose
    // numbers jump, which only .skipDamagedFrames forgives, silently.
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<Animal>(path: path)
    for animal in Animal.zoo.prefix(3) { try store.insert(animal) }
    store.close()
    let all = try frames(path)
    let commits = all.indices.filter { all[$0].type == .commit }
    #expect(commits.count == 3)
    let from = all[commits[0] + 1].start
    let to = all[commits[1]].end
    var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    bytes.removeSubrange(from..<to)
    try bytes.write(to: URL(fileURLWithPath: path))

    let report = try expectSameAsEveryModeReplayed(path)
    #expect(report.damage.isEmpty && report.tornTail == nil)
    #expect(report.recordCount == 2)
    let byMode = Dictionary(uniqueKeysWithValues: report.recovery.map { ($0.mode, $0) })
    #expect(byMode[.truncateTornTail]?.opens == false)
    #expect(byMode[.failOnAnyDamage]?.opens == false)
    #expect(byMode[.stopAtFirstDamage]?.recordCount == 1)
    #expect(byMode[.skipDamagedFrames]?.opens == true)
    #expect(byMode[.skipDamagedFrames]?.recordCount == 2)
  }

  /// The keys of records as the value tree lists them: every dotted key through nested
  /// objects (not arrays), its kinds, and how many records hold it.
  private func referenceKeys(_ records: [DynamicRecord]) -> [LogInspection.Key] {
    var kinds: [String: Set<String>] = [:]
    var counts: [String: Int] = [:]
    func kind(_ v: FieldValue) -> String {
      switch v {
      case .null: "null"
      case .bool: "bool"
      case .int: "int"
      case .uint: "uint"
      case .double: "double"
      case .decimal: "decimal"
      case .string: "string"
      case .array: "array"
      case .object: "object"
      }
    }
    func walk(_ value: FieldValue, _ prefix: String?, _ held: inout Set<String>) {
      guard case .object(let fields) = value else { return }
      for (name, v) in fields {
        let key = _DottedKey.join(prefix, name)
        kinds[key, default: []].insert(kind(v))
        held.insert(key)
        walk(v, key, &held)
      }
    }
    for record in records {
      var held = Set<String>()
      walk(record.value, nil, &held)
      for key in held { counts[key, default: 0] += 1 }
    }
    return counts.keys.sorted().map { .init(key: $0, kinds: kinds[$0]!.sorted(), recordCount: counts[$0]!) }
  }

  @Test func keysReadFromTheBytesAreTheKeysOfTheValueTree() throws {
    var rng = SeededRandom(seed: 7)
    let names = ["a", "b.c", "owner", "city", "x\\y", "n", "zeta"]
    func value(_ depth: Int) -> FieldValue {
      switch rng.next() % (depth > 2 ? 8 : 10) {
      case 0: return .null
      case 1: return .bool(rng.next() % 2 == 0)
      case 2: return .int(Int(truncatingIfNeeded: rng.next()) >> Int(rng.next() % 64))
      case 3: return .uint(UInt64.max - rng.next() % 5)
      case 4: return .double(Double(rng.next() % 1000) / 8)
      case 5: return .decimal(Decimal(string: "\(rng.next() % 100).25")!)
      case 6, 7: return .string("s\(rng.next() % 9)")
      case 8: return .array((0..<Int(rng.next() % 3)).map { _ in value(depth + 1) })
      default:
        var fields: [String: FieldValue] = [:]
        for _ in 0..<Int(rng.next() % 4) { fields[names[Int(rng.next() % UInt64(names.count))]] = value(depth + 1) }
        return .object(fields)
      }
    }
    let records = (0..<300).map { i in
      var fields: [String: FieldValue] = [:]
      for _ in 0..<Int(rng.next() % 6) { fields[names[Int(rng.next() % UInt64(names.count))]] = value(1) }
      return DynamicRecord(id: .int(i), fields: fields)
    }
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<DynamicRecord>(path: path, options: .init())
    try store.insert(contentsOf: records)
    store.close()
    let report = try LogStore<DynamicRecord>.inspect(path: path)
    #expect(report.keys == referenceKeys(records))
    #expect(report.unreadableRecords.isEmpty)
  }

  @Test func aKeyHeldTwiceInOneObjectCountsItsLastValueAsTheValueTreeDoes() {
    // id 1, then {a: 1, a: "x", o: {b: null, b: {c: true}}}: the tree keeps each key's last value.
    let payload: [UInt8] = [
      0x81, 0x08, 0x01, 0x81, 0x01, 0x06, 0x01, 0x78, 0x02, 0x08, 0x03, 0x00, 0x03, 0x08, 0x04, 0x02, 0x00, 0x00, 0x00,
    ]
    var census = _KeyCensus(names: ["a", "o", "b", "c"])
    #expect(payload.withUnsafeBytes { census.count($0) })
    #expect(
      census.keys == [
        .init(key: "a", kinds: ["string"], recordCount: 1), .init(key: "o", kinds: ["object"], recordCount: 1),
        .init(key: "o.b", kinds: ["object"], recordCount: 1), .init(key: "o.b.c", kinds: ["bool"], recordCount: 1),
      ])
    // An undefined key id, a bad tag, a decimal that is no number: unreadable, nothing counted.
    for bad: [UInt8] in [[0x81, 0x08, 0x09, 0x80, 0x00], [0x81, 0x08, 0x01, 0x0C, 0x00], [0x81, 0x08, 0x01, 0x09, 0x01, 0x78, 0x00]] {
      var c = _KeyCensus(names: ["a"])
      #expect(!bad.withUnsafeBytes { c.count($0) })
      #expect(c.keys.isEmpty)
    }
  }
}
