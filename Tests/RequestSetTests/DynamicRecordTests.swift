import Foundation
import RequestSetPostgres
import Testing

@testable import RequestSet
import RequestSetSQLite

/// A record with one field of every kind a log stores.
private struct EveryKind: Record, Equatable {
  struct Place: Codable, Equatable, Sendable {
    var city: String
    var floor: Int?
  }
  var id: Int
  var count: Int
  var ratio: Double
  var name: String
  var ok: Bool
  var when: Date
  var tag: UUID
  var nickname: String?
  var place: Place
  var scores: [Int]
  var price: Decimal
  var big: UInt
}

private let kinds: [EveryKind] = [
  EveryKind(
    id: 1, count: -42, ratio: 2.5, name: "Rex", ok: true, when: Date(timeIntervalSinceReferenceDate: 12_345.5),
    tag: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, nickname: nil,
    place: .init(city: "Oslo", floor: 3), scores: [1, 2, 300], price: Decimal(string: "19.99")!, big: UInt.max),
  EveryKind(
    id: 2, count: 7, ratio: -0.125, name: "Élise", ok: false, when: Date(timeIntervalSinceReferenceDate: -1),
    tag: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, nickname: "El",
    place: .init(city: "Bergen", floor: nil), scores: [], price: Decimal(string: "-0.001")!, big: 5),
]

/// The zoo as dynamic records, on every backend, with indexes on the indexed kinds.
private func dynamicSet(_ kind: StoreKind, _ animals: [Animal] = Animal.zoo) throws -> RequestSet<DynamicRecord> {
  let records = try animals.map { try DynamicRecord(FieldValue(encoding: $0)) }
  let indexed = ["species", "age", "name", "owner.city", "tags"]
  switch kind {
  case .array:
    return RequestSet(records)
  case .memory, .indexedMemory:
    let store = MemoryStore<DynamicRecord>()
    try store.insert(contentsOf: records)
    if kind == .indexedMemory { for key in indexed { try store.createIndex(key) } }
    return RequestSet(store)
  case .log, .indexedLog:
    // Written by the typed record, read without it.
    let path = TemporaryLogDirectory.freshPath()
    let typed = try LogStore<Animal>(path: path)
    try typed.insert(contentsOf: animals)
    if kind == .indexedLog { for key in indexed { try typed.createIndex(key) } }
    typed.close()
    return RequestSet(try LogStore<DynamicRecord>(path: path))
  case .sqlite, .indexedSQLite:
    let store = try SQLiteStore<DynamicRecord>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    try store.insert(contentsOf: records)
    if kind == .indexedSQLite { for key in indexed { try store.createIndex(key) } }
    return RequestSet(store)
  case .pushdownMemory:
    let store = PushdownMemoryStore<DynamicRecord>()
    try store.insert(contentsOf: records)
    return RequestSet(store)
  case .postgres:
    // Written by the typed record, read without it.
    let table = PostgresServer.freshTable()
    let typed = try PostgresStore<Animal>(url: PostgresServer.url(), table: table)
    try typed.insert(contentsOf: animals)
    typed.close()
    return RequestSet(try PostgresStore<DynamicRecord>(url: PostgresServer.url(), table: table))
  case .pgbouncer:
    preconditionFailure("The dynamic record suites do not run through PgBouncer (see StoreKind.throughPgBouncer).")
  }
}

@Suite(.ownThreads) struct DynamicRecordTests {
  @Test func writingThroughDynamicRecordsKeepsTheLogReadableByItsType() throws {
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<DynamicRecord>(path: path, options: .init())
    // One record converted from the typed value, one spelled out field by field.
    try store.insert(DynamicRecord(FieldValue(encoding: kinds[0])))
    try store.insert(
      DynamicRecord(
        id: .int(2),
        fields: [
          "count": .int(7), "ratio": .double(-0.125), "name": .string("Élise"), "ok": .bool(false),
          "when": .double(-1), "tag": .string("00000000-0000-0000-0000-000000000001"), "nickname": .string("El"),
          "place": .object(["city": .string("Bergen"), "floor": .null]), "scores": .array([]),
          "price": .decimal(Decimal(string: "-0.001")!), "big": .int(5),
        ]))
    store.close()

    let typed = try LogStore<EveryKind>(path: path, options: .init(readOnly: true))
    #expect(try RequestSet(typed).sortBy("id").fetch() == kinds)
  }

  @Test func aTypedLogReadsBackAsDynamicRecordsWithEveryKind() throws {
    let path = TemporaryLogDirectory.freshPath()
    let typed = try LogStore<EveryKind>(path: path)
    try typed.insert(contentsOf: kinds)
    typed.close()

    let store = try LogStore<DynamicRecord>(path: path)
    let first = try #require(try store.fetch(id: .int(1)))
    #expect(first.id == .int(1))
    #expect(first["count"] == .int(-42))
    #expect(first["ratio"] == .double(2.5))
    #expect(first["name"] == .string("Rex"))
    #expect(first["ok"] == .bool(true))
    #expect(first["when"] == .double(12_345.5))
    #expect(first["tag"] == .string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
    #expect(first["nickname"] == nil)
    #expect(first["place.city"] == .string("Oslo"))
    #expect(first["place.floor"] == .int(3))
    #expect(first["scores"] == .array([.int(1), .int(2), .int(300)]))
    if case .decimal(let d) = try #require(first["price"]) { #expect(d == Decimal(string: "19.99")!) } else {
      Issue.record("price reads as \(String(describing: first["price"])), not a decimal")
    }
    if case .uint(let u) = try #require(first["big"]) { #expect(u == UInt64(UInt.max)) } else {
      Issue.record("big reads as \(String(describing: first["big"])), not a uint")
    }
    #expect(first["name.more"] == nil)
    #expect(first.fields["id"] == nil)
    #expect(first["id"] == .int(1))
  }

  @Test func dynamicRecordsOpenReadOnlyByDefaultAndChangeNothing() throws {
    let path = TemporaryLogDirectory.freshPath()
    let typed = try LogStore<Animal>(path: path)
    try typed.insert(contentsOf: Animal.zoo)
    typed.close()
    // A torn tail, which a writer would cut off (and keep in a side file).
    let handle = try #require(FileHandle(forWritingAtPath: path))
    handle.seekToEndOfFile()
    handle.write(Data([0x01, 0x02, 0x03]))
    try handle.close()
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    let dir = (path as NSString).deletingLastPathComponent
    let filesBefore = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()

    let store = try LogStore<DynamicRecord>(path: path)
    #expect(store.count == Animal.zoo.count)
    #expect(store.recoveryReport.tornTail?.byteCount == 3)
    #expect(try RequestSet(store).filter("age > 3").fetchCount() == 4)
    let error = #expect(throws: RequestSetError.self) { try store.insert(DynamicRecord(id: .int(99))) }
    #expect(error?.code == .readOnly)
    #expect(throws: RequestSetError.self) { try store.createIndex("name") }
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == filesBefore)
    // The reader holds no lock: a writer may open the log meanwhile.
    let writer = try LogStore<Animal>(path: path)
    writer.close()
    store.close()
  }

  @Test(arguments: StoreKind.allCases)
  func everyStringKeyQueryAnswersAsOnTheTypedRecord(_ kind: StoreKind) throws {
    let animals = Animal.random(count: 60, seed: 0xD1A)
    let typed = try kind.makeSet(animals)
    let dynamic = try dynamicSet(kind, animals)
    func ids(_ set: RequestSet<DynamicRecord>) throws -> [FieldValue] { try set.fetch().map(\.id) }
    func ids(_ set: RequestSet<Animal>) throws -> [FieldValue] { try set.fetch().map { .int($0.id) } }

    // Format strings, key/value, tuple lists.
    #expect(try ids(dynamic.filter("age > %d AND species IN %@", 5, ["Cow", "Dog"]).sortBy("id"))
      == ids(typed.filter("age > %d AND species IN %@", 5, ["Cow", "Dog"]).sortBy("id")))
    #expect(try ids(dynamic.filter("owner.city", value: "Oslo").sortBy("id"))
      == ids(typed.filter("owner.city", value: "Oslo").sortBy("id")))
    #expect(try ids(dynamic.filter([("species", "Cow"), ("age", 3)], mode: .or).sortBy("id"))
      == ids(typed.filter([("species", "Cow"), ("age", 3)], mode: .or).sortBy("id")))
    #expect(try ids(dynamic.filter("ANY tags == 'farm'").sortBy("id"))
      == ids(typed.filter("ANY tags == 'farm'").sortBy("id")))
    // Sorts and windows.
    #expect(try ids(dynamic.sortBy("-age", "name", "id").offset(3).limit(10))
      == ids(typed.sortBy("-age", "name", "id").offset(3).limit(10)))
    // Aggregates, group-by, values.
    #expect(try dynamic.sum("age") == typed.sum("age"))
    #expect(try dynamic.max("weight") == typed.max("weight"))
    #expect(try dynamic.average("age") == typed.average("age"))
    #expect(try dynamic.groupBy("species").aggregate(.count).sortBy("species").fetch()
      == typed.groupBy("species").aggregate(.count).sortBy("species").fetch())
    #expect(try dynamic.sortBy("id").values("name", "owner.city") == typed.sortBy("id").values("name", "owner.city"))
    #expect(dynamic.filter("nickname == nil").count == typed.filter("nickname == nil").count)
  }

  @Test func indexesOnDynamicRecordsAreUsedAndPersisted() throws {
    let path = TemporaryLogDirectory.freshPath()
    let typed = try LogStore<Animal>(path: path)
    try typed.insert(contentsOf: Animal.zoo)
    typed.close()
    let writer = try LogStore<DynamicRecord>(path: path, options: .init())
    try writer.createIndex("species")
    let cows = RequestSet(writer).filter("species", value: "Cow")
    #expect(cows.explain().contains("index lookup on species"))
    #expect(try cows.fetch().map(\.id) == [.int(2), .int(4)])
    writer.close()
    #expect(try LogStore<Animal>(path: path, options: .init(readOnly: true)).indexes.map(\.key) == ["species"])
  }

  @Test func dynamicRecordsRoundTripThroughJSON() throws {
    let record = DynamicRecord(
      id: .string("a"), fields: ["n": .int(-3), "x": .double(1.5), "ok": .bool(true), "none": .null,
                                  "list": .array([.int(1), .string("b")]), "o": .object(["k": .int(2)])])
    let json = try JSONEncoder().encode(record)
    #expect(try JSONDecoder().decode(DynamicRecord.self, from: json) == record)
    #expect(throws: RequestSetError.self) { try DynamicRecord(.int(3)) }
    #expect(DynamicRecord(id: .int(1), fields: ["id": .int(2)]).id == .int(1))
  }

  @Test func anEmptyDynamicLogAcceptsAnyKey() throws {
    let path = TemporaryLogDirectory.freshPath()
    try LogStore<Animal>(path: path).close()
    let store = try LogStore<DynamicRecord>(path: path)
    #expect(try RequestSet(store).filter("anything == 3").fetchCount() == 0)
  }

  @Test func dottedPathsReadNestedValuesAndEscapeDots() throws {
    let value: FieldValue = .object([
      "owner": .object(["city": .string("Oslo"), "zip": .null]),
      "counts": .object(["b.c": .int(2), "a\\b": .int(3)]),
      "name": .string("Rex"),
    ])
    #expect(value[path: "owner.city"] == .string("Oslo"))
    #expect(value[path: "owner.zip"] == .null)
    #expect(value[path: "owner.nope"] == nil)
    #expect(value[path: "name.first"] == nil)
    #expect(value[path: "counts.b\\.c"] == .int(2))
    #expect(value[path: "counts.b.c"] == nil)
    #expect(FieldValue.fieldNames(inKey: "counts.b\\.c") == ["counts", "b.c"])
    #expect(FieldValue.fieldNames(inKey: "name") == ["name"])
    for names in [["counts", "b.c"], ["paths", "a\\b"], ["owner", "city"], ["x"]] {
      let key = FieldValue.key(forFieldNames: names)
      #expect(FieldValue.fieldNames(inKey: key) == names)
    }
    #expect(value[path: FieldValue.key(forFieldNames: ["counts", "a\\b"])] == .int(3))
    let record = try DynamicRecord(value)
    #expect(record["counts.b\\.c"] == value[path: "counts.b\\.c"])
  }

  // MARK: Encoding from the record's storage

  @Test func aDynamicRecordEncodesToTheBytesOfItsValueAndDecodesBack() throws {
    var rng = SeededRandom(seed: 23)
    // Keys that sort before, after and around "id", including a stray "id" field (the id wins).
    let names = ["a", "Z", "i", "ia", "id0", "idx", "ic", "", "zz", "Ünï", "name", "id"]
    func value(_ depth: Int) -> FieldValue {
      switch rng.next() % (depth > 2 ? 7 : 9) {
      case 0: return .null
      case 1: return .bool(rng.next() % 2 == 0)
      case 2: return .int(Int(truncatingIfNeeded: rng.next()) >> Int(rng.next() % 64))
      case 3: return .uint(UInt64.max - rng.next() % 3)
      case 4: return .double(Double(rng.next() % 1000) / 8)
      case 5: return .decimal(Decimal(string: "-\(rng.next() % 100).5")!)
      case 6: return .string(String(repeating: "é", count: Int(rng.next() % 20)))
      case 7: return .array((0..<Int(rng.next() % 3)).map { _ in value(depth + 1) })
      default:
        var fields: [String: FieldValue] = [:]
        for _ in 0..<Int(rng.next() % 4) { fields[names[Int(rng.next() % UInt64(names.count))]] = value(depth + 1) }
        return .object(fields)
      }
    }
    var records: [DynamicRecord] = []
    for i in 0..<500 {
      let id: FieldValue = i % 3 == 0 ? .string("k\(i)") : i % 7 == 0 ? value(1) : .int(i - 250)
      var record = DynamicRecord(id: id)
      for _ in 0..<Int(rng.next() % 8) { record.fields[names[Int(rng.next() % UInt64(names.count))]] = value(1) }
      records.append(record)
    }
    let fast = _BinaryEncoder(out: _ByteBuffer())
    let slow = _BinaryEncoder(out: _ByteBuffer())
    slow.allowsReflection = false
    for (i, record) in records.enumerated() {
      fast.out.count = 0
      slow.out.count = 0
      try fast.encodeID(record.id)
      try fast.encodeRoot(record)
      try slow.encodeCodable(record.id)
      try slow.encodeRoot(record)
      #expect(fast.out.array == slow.out.array, "record \(i)")
    }
    #expect(fast.keys.names == slow.keys.names)

    // Through a log: every record reads back equal to what was written (the stray "id"
    // field gives way to the id).
    let path = TemporaryLogDirectory.freshPath()
    let store = try LogStore<DynamicRecord>(path: path, options: .init())
    let unique = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    try store.insert(contentsOf: Array(unique.values))
    store.close()
    let reader = try LogStore<DynamicRecord>(path: path)
    for record in try RequestSet(reader).fetch() {
      var expected = unique[record.id]!
      expected.fields["id"] = nil
      #expect(record == expected)
    }
  }
}
