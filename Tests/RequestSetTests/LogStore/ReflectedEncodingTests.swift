import Foundation
import Testing

@testable import RequestSet

/// The binary encoder's reflected path (`_ReflectedWriter`): the bytes it writes are the
/// bytes `Codable` writes, on every kind of record the differential tests use; types it
/// cannot follow stay on `Codable`.
@Suite(.ownThreads) struct ReflectedEncodingTests {
  // Record types private to this suite, so that no other test decides their verdict.

  struct Plain: Codable, Equatable {
    struct Inner: Codable, Equatable {
      var label: String
      var count: Int?
    }
    var id: Int
    var name: String
    var when: Date
    var uuid: UUID
    var link: URL
    var price: Decimal
    var big: UInt64
    var small: Int8
    var ratio: Float
    var weight: Double
    var ok: Bool
    var nickname: String?
    var score: Double?
    var tags: [String]
    var counts: [Int]
    var readings: [Double]
    var inner: Inner?
    /// Computed, so never encoded.
    var doubled: Int { id * 2 }
  }

  struct Renamed: Codable {
    var id: Int
    var title: String
    enum CodingKeys: String, CodingKey {
      case id
      case title = "heading"
    }
  }

  /// The same keys as the stored properties, in another order.
  struct Reordered: Codable {
    var id: Int
    var name: String
    enum CodingKeys: String, CodingKey { case name, id }
  }

  /// A custom `encode(to:)` that writes a computed property as well.
  struct CustomEncode: Codable {
    var id: Int
    var name: String
    var shout: String { name.uppercased() }
    enum CodingKeys: String, CodingKey { case id, name, shout }
    init(id: Int, name: String) { (self.id, self.name) = (id, name) }
    init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: CodingKeys.self)
      (id, name) = (try c.decode(Int.self, forKey: .id), try c.decode(String.self, forKey: .name))
    }
    func encode(to encoder: any Encoder) throws {
      var c = encoder.container(keyedBy: CodingKeys.self)
      try c.encode(id, forKey: .id)
      try c.encode(name, forKey: .name)
      try c.encode(shout, forKey: .shout)
    }
  }

  /// A custom `encode(to:)` that writes a stored value its own way, for every record.
  struct Transformed: Codable {
    var id: Int
    var name: String
    func encode(to encoder: any Encoder) throws {
      var c = encoder.container(keyedBy: CodingKeys.self)
      try c.encode(id + 1, forKey: .id)
      try c.encode(name, forKey: .name)
    }
  }

  struct WithEnum: Codable {
    enum Mood: String, Codable { case calm, busy }
    var id: Int
    var mood: Mood
  }

  struct WithClass: Codable {
    final class Box: Codable { var label = "b" }
    var id: Int
    var box: Box
  }

  /// An optional that is nil in every record: never confirmed, so never trusted.
  struct NeverSet: Codable {
    var id: Int
    var note: String?
  }

  /// Encodes every record with reflection allowed and with `Codable` alone, each into a
  /// fresh key table, and expects the same bytes record by record.
  func expectSameBytes<T: Encodable>(_ records: [T], sourceLocation: SourceLocation = #_sourceLocation) throws
  {
    let fast = _BinaryEncoder(out: _ByteBuffer())
    let slow = _BinaryEncoder(out: _ByteBuffer())
    slow.allowsReflection = false
    for (i, record) in records.enumerated() {
      fast.out.count = 0
      slow.out.count = 0
      try fast.encodeRoot(record)
      try slow.encodeRoot(record)
      #expect(fast.out.array == slow.out.array, "record \(i) of \(T.self)", sourceLocation: sourceLocation)
    }
    #expect(fast.keys.names == slow.keys.names, sourceLocation: sourceLocation)
  }

  static func plains(_ n: Int) -> [Plain] {
    var rng = SeededRandom(seed: 11)
    let names = ["Micky", "Ünïcødé 🐄", "", "a longer name than fifteen bytes"]
    return (0..<n).map { (i: Int) -> Plain in
      let when = Date(timeIntervalSinceReferenceDate: Double(rng.next() % 1_000_000) / 3)
      let uuid = UUID(uuidString: "00000000-0000-0000-0000-0000000000\(10 + i % 80)")!
      let link = URL(string: "https://example.com/\(i % 7)")!
      let price: Decimal = Decimal(i) / 8
      let big: UInt64 = i % 2 == 0 ? UInt64(Int.max) + UInt64(i) : UInt64(i)
      let weight: Double = i % 9 == 0 ? .nan : Double(i) * 1.5
      let nickname: String? = i % 3 == 0 ? nil : "n\(i)"
      let score: Double? = i % 4 == 0 ? nil : Double(i)
      let tags: [String] = (0..<(i % 3)).map { "t\($0)" }
      let counts: [Int] = (0..<(i % 4)).map { $0 * 1_000 - 1 }
      let readings: [Double] = i % 5 == 0 ? [] : [0.5, -2]
      let count: Int? = i % 4 == 1 ? nil : i
      let inner: Plain.Inner? = i % 2 == 0 ? nil : Plain.Inner(label: "in\(i)", count: count)
      return Plain(
        id: i - 50, name: names[i % 4], when: when, uuid: uuid, link: link, price: price, big: big,
        small: Int8(truncatingIfNeeded: i * 7), ratio: Float(i) / 3, weight: weight, ok: i % 2 == 0,
        nickname: nickname, score: score, tags: tags, counts: counts, readings: readings, inner: inner)
    }
  }

  @Test func plainStructsAreWrittenByReflectionWithTheSameBytes() throws {
    let records = Self.plains(200)
    try expectSameBytes(records)
    let writer = try #require(_ReflectedWriter.of(Plain.self))
    #expect(writer.isTrusted)
    // And they read back through Codable.
    var codec = BinaryRecordCodec()
    for record in records {
      let bytes = try codec.encode(record)
      let back = try codec.decode(Plain.self, from: bytes)
      #expect(back.id == record.id && back.tags == record.tags && back.inner == record.inner)
      #expect(back.when == record.when && back.uuid == record.uuid && back.price == record.price)
    }
  }

  /// The shape of the test `Animal`, private to this suite: `Animal` itself is shared by
  /// every suite, whose records (a SQL store's filtered results among them) decide its
  /// verdict in whatever order the tests run.
  struct AnimalShape: Codable {
    var id: Int
    var name: String
    var species: String
    var age: Int
    var weight: Double
    var nickname: String?
    var tags: [String]
    var owner: Owner?
  }

  @Test func theTestAnimalIsWrittenByReflectionWithTheSameBytes() throws {
    let zoo = (0..<100).map { i in
      AnimalShape(
        id: i, name: "A\(i)", species: ["Cow", "Dog"][i % 2], age: i % 30, weight: Double(i) / 4,
        nickname: i % 3 == 0 ? nil : "n\(i)", tags: i % 2 == 0 ? ["farm"] : [],
        owner: i % 4 == 0 ? nil : Owner(name: "O\(i % 5)", city: "Oslo"))
    }
    try expectSameBytes(zoo)
    #expect(_ReflectedWriter.of(AnimalShape.self)?.isTrusted == true)
  }

  @Test func typesWhoseEncodingDiffersFromTheirStoredPropertiesStayOnCodable() throws {
    try expectSameBytes((0..<100).map { Renamed(id: $0, title: "t\($0)") })
    #expect(_ReflectedWriter.of(Renamed.self)?.isRefused == true)
    try expectSameBytes((0..<100).map { Reordered(id: $0, name: "n\($0)") })
    #expect(_ReflectedWriter.of(Reordered.self)?.isRefused == true)
    try expectSameBytes((0..<100).map { CustomEncode(id: $0, name: "n\($0)") })
    #expect(_ReflectedWriter.of(CustomEncode.self)?.isRefused == true)
    try expectSameBytes((0..<100).map { Transformed(id: $0, name: "n\($0)") })
    #expect(_ReflectedWriter.of(Transformed.self)?.isRefused == true)
    try expectSameBytes((0..<100).map { NeverSet(id: $0, note: nil) })
    #expect(_ReflectedWriter.of(NeverSet.self)?.isRefused == true)
  }

  @Test func typesReflectionCannotWriteHaveNoWriter() throws {
    try expectSameBytes((0..<20).map { WithEnum(id: $0, mood: $0 % 2 == 0 ? .calm : .busy) })
    #expect(_ReflectedWriter.of(WithEnum.self) == nil)
    try expectSameBytes((0..<20).map { WithClass(id: $0, box: .init()) })
    #expect(_ReflectedWriter.of(WithClass.self) == nil)
    // The differential suites' awkward record: a class field, an enum, a renamed key.
    try expectSameBytes(Oddity.random(count: 100, seed: 5))
    #expect(_ReflectedWriter.of(Oddity.self) == nil)
    // A dictionary field.
    var rng = SeededRandom(seed: 3)
    try expectSameBytes((0..<100).map { Critter.random(id: $0, using: &rng) })
    #expect(_ReflectedWriter.of(Critter.self) == nil)
  }

  /// A codec reuses its encoder; a value that throws halfway through a nested container
  /// must leave nothing behind for the next one.
  @Test func aCodecEncodesCleanlyAfterAValueThatThrew() throws {
    struct Failing: Encodable {
      struct Boom: Error {}
      enum K: CodingKey { case inner, x }
      func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: K.self)
        var inner = c.nestedContainer(keyedBy: K.self, forKey: .inner)
        try inner.encode(1, forKey: .x)
        throw Boom()
      }
    }
    struct Small: Codable, Equatable {
      var id: Int
      var name: String
    }
    var codec = BinaryRecordCodec()
    var fresh = BinaryRecordCodec()
    #expect(throws: RequestSetError.self) { _ = try codec.encode(Failing()) }
    let bytes = try codec.encode(Small(id: 1, name: "Rex"))
    let freshBytes = try fresh.encode(Small(id: 1, name: "Rex"))
    #expect(bytes == freshBytes)
    #expect(try codec.decode(Small.self, from: bytes) == Small(id: 1, name: "Rex"))
    // A copy encodes on its own scratch, with the key table it was copied with.
    var copy = codec
    let fromCopy = try copy.encode(Small(id: 2, name: "Max"))
    #expect(fromCopy == (try codec.encode(Small(id: 2, name: "Max"))))
  }
}

/// The binary decoder still runs a type's own `init(from:)`: one that validates throws its
/// error, one that migrates fills in what old records lack, one that counts an unkeyed
/// container gets the count.
@Suite(.ownThreads) struct BinaryDecoderInitTests {
  struct V1: Codable {
    var id: Int
    var age: Int
  }
  struct Old: Codable { var id: Int }

  struct Validating: Decodable {
    struct Invalid: Error, Equatable { var age: Int }
    var id: Int
    var age: Int
    enum CodingKeys: CodingKey { case id, age }
    init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: CodingKeys.self)
      id = try c.decode(Int.self, forKey: .id)
      age = try c.decode(Int.self, forKey: .age)
      guard age >= 0 else { throw Invalid(age: age) }
    }
  }

  struct Migrating: Decodable, Equatable {
    var id: Int
    var age: Int
    enum CodingKeys: CodingKey { case id, age }
    init(id: Int, age: Int) { (self.id, self.age) = (id, age) }
    init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: CodingKeys.self)
      id = try c.decode(Int.self, forKey: .id)
      age = try c.decodeIfPresent(Int.self, forKey: .age) ?? 1
    }
  }

  struct Counting: Decodable {
    var counted: Int?
    var items: [Int] = []
    init(from decoder: any Decoder) throws {
      var c = try decoder.unkeyedContainer()
      counted = c.count
      while !c.isAtEnd { items.append(try c.decode(Int.self)) }
    }
  }

  @Test func validatingMigratingAndCountingDecodersRun() throws {
    var codec = BinaryRecordCodec()
    let bad = try codec.encode(V1(id: 1, age: -3))
    let good = try codec.encode(V1(id: 2, age: 4))
    let old = try codec.encode(Old(id: 3))
    let new = try codec.encode(V1(id: 4, age: 9))
    let numbers = try codec.encode([5, 300, -7])
    #expect(throws: Validating.Invalid(age: -3)) { _ = try codec.decode(Validating.self, from: bad) }
    #expect(try codec.decode(Validating.self, from: good).age == 4)
    #expect(try codec.decode(Migrating.self, from: old) == Migrating(id: 3, age: 1))
    #expect(try codec.decode(Migrating.self, from: new) == Migrating(id: 4, age: 9))
    let counted = try codec.decode(Counting.self, from: numbers)
    #expect(counted.counted == 3)
    #expect(counted.items == [5, 300, -7])
  }
}
