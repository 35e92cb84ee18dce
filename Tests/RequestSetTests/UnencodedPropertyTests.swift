import Foundation
import Testing
@testable import RequestSet

/// A record with a stored property its encoding leaves out, and computed properties.
struct Sensor: Record, Equatable {
  var id: Int
  var reading: Int
  /// Not in `CodingKeys`: a `LogStore` reads it back as 0.
  var cached: Int = 0

  enum CodingKeys: String, CodingKey { case id, reading }

  /// Computed from an encoded property.
  var doubled: Int { reading * 2 }
  /// Computed from the property the encoding leaves out.
  var cachedTwice: Int { cached * 2 }
}

/// Key paths to properties that are not encoded (computed ones, and stored ones left out
/// of `CodingKeys`) give the same answer on every store: each is evaluated on the record as
/// the store holds it, and every store holds what the record's encoding keeps (a
/// `LogStore` by decoding, the others by keeping such a type's records as they decode back).
@Suite(.ownThreads) struct UnencodedPropertyTests {
  static let sensors = [
    Sensor(id: 1, reading: 1, cached: 9), Sensor(id: 2, reading: 2, cached: 9), Sensor(id: 3, reading: 5),
  ]

  /// Before, `\.cached > 0` gave [1, 2] on a MemoryStore (the caller's structs) and [] on
  /// a LogStore (decoded records, where `cached` is 0).
  @Test(arguments: StoreKind.allCases)
  func keyPathsToUnencodedPropertiesAgreeOnEveryStore(kind: StoreKind) throws {
    let set = try kind.makeSet(of: Self.sensors)
    #expect(try set.filter(\.cached > 0).fetch().map(\.id) == [])
    #expect(try set.filter(\.cachedTwice == 0).fetch().map(\.id) == [1, 2, 3])
    #expect(try set.filter(\.doubled > 3).fetch().map(\.id) == [2, 3])
    #expect(try set.sortBy(\.doubled, order: .descending).fetch().map(\.id) == [3, 2, 1])
    #expect(try set.fetch().map(\.cached) == [0, 0, 0])
    #expect(try set.values(\.cached) == [0, 0, 0])
  }

  /// Saving a record keeps it as its encoding reads back too.
  @Test(arguments: StoreKind.writable)
  func savedRecordsKeepWhatTheirEncodingKeeps(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Sensor.self)
    try store.insert(contentsOf: Self.sensors)
    try store.save(Sensor(id: 3, reading: 6, cached: 4))
    try store.apply([.insert(Sensor(id: 4, reading: 7, cached: 4))], ifVersion: nil)
    #expect(try RequestSet(store).filter(\.cached != 0).fetchCount() == 0)
    #expect(try store.fetch(id: 3)?.cached == 0)
  }

  /// Only a type whose encoding really drops a stored value is kept as it decodes back:
  /// Decimals, Dates, URLs, NaN and a class field that encode and decode to equal values
  /// do not count as lost, so such a type's records are stored as given, undecoded.
  @Test func onlyATypeThatDropsAStoredValueIsKeptDecoded() throws {
    try MemoryStore<Sensor>().insert(contentsOf: Self.sensors)
    try MemoryStore<Oddity>().insert(contentsOf: Oddity.random(count: 12, seed: 7))
    #expect(_RecordCopy.isLossy(Sensor.self))
    #expect(!_RecordCopy.isLossy(Oddity.self))
  }

  /// A LogStore decodes each record to test a key path to a computed property (it has no
  /// field of its own), and explain() says so.
  @Test func explainSaysALogStoreDecodesForAComputedProperty() throws {
    let store = try StoreKind.log.makeStore(of: Sensor.self)
    try store.insert(contentsOf: Self.sensors)
    let plan = RequestSet(store).filter(\.doubled > 3).explain()
    let decodes = try #require(plan.split(separator: "\n").first { $0.contains("decodes each record for:") })
    #expect(decodes.hasPrefix("  decodes each record for: \\Sensor.<computed "), "\(plan)")
    #expect(decodes.hasSuffix("(Int)> > 3"), "\(plan)")
  }
}
