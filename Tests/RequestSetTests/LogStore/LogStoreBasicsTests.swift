import Foundation
import Testing

@testable import RequestSet

@Suite(.ownThreads) struct LogStoreBasicsTests {
  let micky = Beast(id: 1, name: "Micky", species: "Mouse", age: 3, owner: .init(city: "Oslo"))
  let rex = Beast(id: 2, name: "Rex", species: "Dog", age: 5)
  let daisy = Beast(id: 3, name: "Daisy", species: "Cow", age: 7, owner: .init(city: "Bergen"))

  @Test func writesSurviveReopenInStoreOrder() throws {
    let dir = try LogTempDir()
    do {
      let store = try LogStore<Beast>(path: dir.file())
      try store.insert(micky)
      try store.insert(contentsOf: [rex, daisy])
      try store.save(Beast(id: 1, name: "Mickey", species: "Mouse", age: 4))  // replaces in place
      #expect(try store.delete(id: 2))
      #expect(try !store.delete(id: 2))
      try store.insert(rex)  // re-inserted: goes to the end
      #expect(try RequestSet(store).fetch().map(\.id) == [1, 3, 2])
    }
    let reopened = try LogStore<Beast>(path: dir.file())
    #expect(reopened.recoveryReport.isClean)
    #expect(reopened.count == 3)
    #expect(try RequestSet(reopened).fetch() == [Beast(id: 1, name: "Mickey", species: "Mouse", age: 4), daisy, rex])
  }

  @Test func storeOrderMatchesMemoryStore() throws {
    let dir = try LogTempDir()
    let log = try LogStore<Beast>(path: dir.file())
    let memory = MemoryStore<Beast>()
    for store in [log as any RecordStore<Beast>, memory] {
      try store.insert(contentsOf: [micky, rex, daisy])
      try store.delete(id: 1)
      try store.save(Beast(id: 2, name: "Rexy", species: "Dog", age: 6))
      try store.insert(micky)
      try store.save(Beast(id: 9, name: "Nine"))
    }
    #expect(try RequestSet(log).fetch() == RequestSet(memory).fetch())
  }

  @Test func duplicatesAreRefusedAndWriteNothing() throws {
    let dir = try LogTempDir()
    let store = try LogStore<Beast>(path: dir.file())
    try store.insert(micky)
    let size = store.fileSize
    #expect(throws: RequestSetError.self) { try store.insert(micky) }
    do {
      try store.insert(contentsOf: [rex, micky])
      Issue.record("expected a duplicate error")
    } catch let error as RequestSetError {
      #expect(error.code == .duplicateID)
      #expect(error.message == "A record with id 1 is already stored. Use save(_:) to replace it, or give the new record another id.")
    }
    do {
      try store.insert(contentsOf: [rex, rex])
      Issue.record("expected a duplicate error")
    } catch let error as RequestSetError {
      #expect(error.message == "The batch holds id 2 twice. Give each record its own id; nothing was inserted.")
    }
    #expect(store.fileSize == size)
    #expect(store.count == 1)
  }

  @Test func queriesWorkAsOnMemoryStore() throws {
    let dir = try LogTempDir()
    let store = try LogStore<Beast>(path: dir.file())
    try store.insert(contentsOf: [micky, rex, daisy])
    let all = RequestSet(store)
    #expect(try all.filter("species", value: "Dog").fetch() == [rex])
    #expect(try all.filter("owner.city", value: "Bergen").fetch() == [daisy])
    #expect(try all.filter("owner", value: nil).fetch() == [rex])
    #expect(try all.filter(\.age > 3).fetch() == [rex, daisy])
    #expect(try all.sortBy("age", order: .descending).fetch().map(\.id) == [3, 2, 1])
    #expect(try all.filter("age", .greaterThan, 4).fetchCount() == 2)

    let memory = try MemoryStore([micky, rex, daisy])
    for key in ["nmae", "owner.town"] {
      let logError = #expect(throws: RequestSetError.self) { try all.filter(key, value: "x").fetch() }
      let memoryError = #expect(throws: RequestSetError.self) { try RequestSet(memory).filter(key, value: "x").fetch() }
      #expect(logError?.message == memoryError?.message)
      #expect(logError?.code == .unknownKey)
    }
    let logMismatch = #expect(throws: RequestSetError.self) { try all.filter("age", value: "old").fetch() }
    let memoryMismatch = #expect(throws: RequestSetError.self) { try RequestSet(memory).filter("age", value: "old").fetch() }
    #expect(logMismatch?.message == memoryMismatch?.message)
  }

  @Test func keysLearnedFromTheFileAfterReopen() throws {
    struct Tagged: Record, Equatable { var id: Int; var scores: [String: Int] }
    let dir = try LogTempDir()
    do {
      let store = try LogStore<Tagged>(path: dir.file())
      try store.insert(Tagged(id: 1, scores: ["math": 3]))
    }
    let store = try LogStore<Tagged>(path: dir.file())
    // "scores.math" is not in the type, only in the records.
    #expect(try RequestSet(store).filter("scores.math", value: 3).fetch().map(\.id) == [1])
    #expect(throws: RequestSetError.self) { try RequestSet(store).filter("scores.art", value: 3).fetch() }
  }

  @Test func evaluatedRequestSetsSurviveCompactionAndWrites() throws {
    let dir = try LogTempDir()
    let store = try LogStore<Beast>(path: dir.file(), options: .init(autoCompactDeadRatio: nil))
    try store.insert(contentsOf: (1...200).map { Beast(id: $0, name: "b\($0)", age: $0 % 10) })
    let old = RequestSet(store).filter(\.age > 5)
    #expect(old.count == 80)
    let lazyOld = RequestSet(store).filter("age", .greaterThan, 5)
    _ = try lazyOld.fetchCount()  // snapshot taken, records not read yet
    for id in 1...150 { try store.delete(id: id) }
    let before = store.fileSize
    try store.compact()
    #expect(store.fileSize < before / 3)
    try store.insert(Beast(id: 1000, name: "new", age: 9))
    #expect(try old.fetch().count == 80)
    #expect(old.first?.id == 6)
    #expect(try lazyOld.fetch().count == 80)
    #expect(try lazyOld.filter("name", value: "b199").fetch().map(\.id) == [199])
    #expect(try RequestSet(store).fetch().map(\.id) == Array(151...200) + [1000])
  }

  @Test func compactionKeepsOrderAndSurvivesReopen() throws {
    let dir = try LogTempDir()
    var expected: [Beast] = []
    do {
      let store = try LogStore<Beast>(path: dir.file(), options: .init(autoCompactDeadRatio: nil))
      try store.insert(contentsOf: (1...50).map { Beast(id: $0, name: "b\($0)") })
      for id in stride(from: 2, through: 50, by: 2) { try store.delete(id: id) }
      try store.save(Beast(id: 7, name: "seven"))
      try store.compact()
      try store.insert(Beast(id: 2, name: "two again"))
      expected = try RequestSet(store).fetch()
    }
    let reopened = try LogStore<Beast>(path: dir.file())
    #expect(reopened.recoveryReport.isClean)
    #expect(try RequestSet(reopened).fetch() == expected)
    #expect(expected.map(\.id).prefix(4) == [1, 3, 5, 7])
    #expect(!FileManager.default.fileExists(atPath: dir.file() + ".compacting"))
  }

  @Test func compactsByItselfPastTheDeadRatio() throws {
    let dir = try LogTempDir()
    let store = try LogStore<Beast>(
      path: dir.file(), options: .init(autoCompactDeadRatio: 0.5, autoCompactMinimumBytes: 4096))
    try store.insert(contentsOf: (1...300).map { Beast(id: $0, name: "beast number \($0)") })
    let full = store.fileSize
    for id in 1...250 { try store.delete(id: id) }
    #expect(store.fileSize < full / 2)
    #expect(try RequestSet(store).fetch().map(\.id) == Array(251...300))
  }

  @Test func readOnlyStoresReadAndRefuseWrites() throws {
    let dir = try LogTempDir()
    let writer = try LogStore<Beast>(path: dir.file())
    try writer.insert(contentsOf: [micky, rex])
    let reader = try LogStore<Beast>(path: dir.file(), options: .init(readOnly: true))
    try writer.insert(daisy)
    // A read-only store follows its writer: each snapshot picks up what was committed.
    #expect(try RequestSet(reader).fetch() == [micky, rex, daisy])
    let error = #expect(throws: RequestSetError.self) { try reader.insert(daisy) }
    #expect(error?.code == .readOnly)
    #expect(#expect(throws: RequestSetError.self) { try reader.compact() }?.code == .readOnly)
    let missing = #expect(throws: RequestSetError.self) {
      try LogStore<Beast>(path: dir.file("absent.rslog"), options: .init(readOnly: true))
    }
    #expect(missing?.code == .ioFailure)
  }

  @Test func secondWriterInTheSameProcessIsLocked() throws {
    let dir = try LogTempDir()
    let first = try LogStore<Beast>(path: dir.file())
    let error = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: dir.file()) }
    #expect(error?.code == .locked)
    #expect(
      error?.message
        == "The log \(dir.file()) is locked for writing by another LogStore (in this or another process; the lock is "
        + "\(dir.file()).lock). Close that store first, or open this one with readOnly: true.")
    _ = first
  }

  @Test func theLockIsReleasedWithTheStore() throws {
    let dir = try LogTempDir()
    do { _ = try LogStore<Beast>(path: dir.file()) }
    _ = try LogStore<Beast>(path: dir.file())
  }

  @Test func aFileThatIsNoLogIsRefusedAndKept() throws {
    let dir = try LogTempDir()
    let path = dir.file("notes.txt")
    try Data("hello, this is not a log at all".utf8).write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: RequestSetError.self) { try LogStore<Beast>(path: path) }
    #expect(error?.code == .corruptLog)
    #expect(
      error?.message
        == "\(path) is not a readable RequestSet log: the file does not start with the RequestSet log signature. "
        + "Check the path; LogStore never overwrites a file it does not recognise.")
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "hello, this is not a log at all")
  }

  @Test func oldRecordsReadWithAnEvolvedType() throws {
    struct V1: Record { var id: Int; var name: String; var legs: Int }
    struct V2: Record, Equatable { var id: Int; var name: String; var nickname: String? }
    struct V3: Record { var id: Int; var name: String; var mandatory: Int }
    let dir = try LogTempDir()
    do {
      let store = try LogStore<V1>(path: dir.file())
      try store.insert(V1(id: 1, name: "Rex", legs: 4))
    }
    do {
      let store = try LogStore<V2>(path: dir.file())
      #expect(try RequestSet(store).fetch() == [V2(id: 1, name: "Rex", nickname: nil)])
      try store.save(V2(id: 2, name: "Daisy", nickname: "D"))
    }
    // Opening decodes the first and the last record: the type no longer fits, and the
    // error names the record and the key.
    let atOpen = #expect(throws: RequestSetError.self) { try LogStore<V3>(path: dir.file()) }
    #expect(atOpen?.code == .decodingFailed)
    #expect(atOpen?.message.contains("id 1") == true && atOpen?.message.contains("mandatory") == true)
    // A record between them that does not decode fails when it is read.
    let mixed = try LogTempDir()
    do {
      let store = try LogStore<V2>(path: mixed.file())
      try store.insert(V2(id: 2, name: "Daisy", nickname: nil))
    }
    do {
      let store = try LogStore<DynamicRecord>(path: mixed.file(), options: .init())
      try store.save(DynamicRecord(id: .int(1), fields: ["name": .string("Rex"), "mandatory": .int(1)]))
      try store.delete(id: .int(2))
      try store.insert(DynamicRecord(id: .int(2), fields: ["name": .string("Daisy")]))
      try store.insert(DynamicRecord(id: .int(3), fields: ["name": .string("Max"), "mandatory": .int(3)]))
    }
    let store = try LogStore<V3>(path: mixed.file())
    let error = #expect(throws: RequestSetError.self) { try RequestSet(store).fetch() }
    #expect(error?.code == .decodingFailed)
    #expect(error?.message.hasPrefix("Could not decode a V3 from the record at offset ") == true)
    #expect(throws: RequestSetError.self) { try store.checkDecoding() }
  }

  @Test func stringIDsWork() throws {
    struct Named: Record, Equatable { var id: String; var n: Int }
    let dir = try LogTempDir()
    do {
      let store = try LogStore<Named>(path: dir.file())
      try store.insert(contentsOf: [Named(id: "a", n: 1), Named(id: "b", n: 2)])
      try store.delete(id: "a")
      try store.save(Named(id: "b", n: 3))
    }
    let store = try LogStore<Named>(path: dir.file())
    #expect(try RequestSet(store).fetch() == [Named(id: "b", n: 3)])
  }
}
