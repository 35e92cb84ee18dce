import Foundation
import Testing

@testable import RequestSet

@Suite(.ownThreads) struct IDMapTests {
  /// Ids that are equal across cases (3 as int, uint, double, decimal), and some that are not.
  static let pool: [FieldValue] = [
    .int(3), .uint(3), .double(3), .decimal(3), .double(-0.0), .int(0), .int(-1),
    .decimal(Decimal(string: "-1.0")!),
    .double(2.5), .decimal(Decimal(string: "2.5")!), .string("3"), .null, .bool(true), .uint(UInt64.max),
    .int(Int.max), .double(1e300), .array([.int(1)]), .object(["a": .int(1)]),
  ]

  @Test func anIDMapAgreesWithADictionaryOfFieldValues() {
    var rng = SeededRandom(seed: 99)
    var map = _IDMap<FieldValue>()
    var reference: [FieldValue: Int] = [:]
    for step in 0..<3_000 {
      let id = Self.pool[Int(rng.next() % UInt64(Self.pool.count))]
      switch rng.next() % 4 {
      case 0:
        #expect(map.updateValue(step, forKey: id) == reference.updateValue(step, forKey: id), "\(id)")
      case 1:
        #expect(map.removeValue(forKey: id) == reference.removeValue(forKey: id), "\(id)")
      case 2:
        map[id] = step
        reference[id] = step
      default:
        map.reserveCapacity(map.count + 10)
      }
      for probe in Self.pool { #expect(map[probe] == reference[probe], "\(probe) after step \(step)") }
      #expect(map.count == reference.count)
    }
    // Iteration gives every entry once, each id equal to one the reference holds.
    var seen = 0
    for (id, slot) in map {
      #expect(reference[id] == slot)
      seen += 1
    }
    #expect(seen == reference.count)
    let doubled = map.mapValues { $0 * 2 }
    for probe in Self.pool { #expect(doubled[probe] == reference[probe].map { $0 * 2 }) }
  }

  /// Sequential integer ids (a run) and then every kind of change, including changes to
  /// ids of the run, its last id, ids next to it, and ids equal to them in other cases.
  @Test func aRunOfSequentialIDsAgreesWithADictionaryThroughEveryChange() {
    for seed: UInt64 in 1...20 {
      var rng = SeededRandom(seed: seed)
      var map = _IDMap<FieldValue>()
      var reference: [FieldValue: Int] = [:]
      let base = Int(rng.next() % 5) - 2
      var slot = 0
      func insert(_ id: FieldValue) {
        let expected = reference[id]
        if expected == nil { reference[id] = slot }
        #expect(map.insertIfAbsent(slot, forKey: id) == expected, "\(id), seed \(seed)")
        slot += 1
      }
      for i in 0..<Int(rng.next() % 50) { insert(.int(base + i)) }
      let probes: [FieldValue] =
        (-4..<60).flatMap { [FieldValue.int($0), .double(Double($0))] } + [
          .string("1"), .int(Int.max), .int(Int.min),
        ]
      for step in 0..<400 {
        let id = probes[Int(rng.next() % UInt64(probes.count))]
        switch rng.next() % 6 {
        case 0, 1: insert(id)
        case 2:
          #expect(map.removeValue(forKey: id) == reference.removeValue(forKey: id), "\(id), seed \(seed)")
        case 3: #expect(map.updateValue(step, forKey: id) == reference.updateValue(step, forKey: id))
        case 4:
          map.reserveCapacity(map.count + 5)
        default:
          map[id] = nil
          reference[id] = nil
        }
        #expect(map.count == reference.count, "seed \(seed), step \(step)")
        for probe in probes {
          #expect(map[probe] == reference[probe], "\(probe), seed \(seed), step \(step)")
        }
      }
      var seen = 0
      for (id, s) in map {
        #expect(reference[id] == s)
        seen += 1
      }
      #expect(seen == reference.count)
      let shifted = map.mapValues { $0 + 1 }
      for probe in probes { #expect(shifted[probe] == reference[probe].map { $0 + 1 }) }
    }
  }

  @Test func aNaNIDIsNeverFoundAgainAsInADictionary() {
    var map = _IDMap<FieldValue>()
    map[.double(.nan)] = 1
    #expect(map[.double(.nan)] == nil)
    #expect(map.count == 1)
  }

  @Test func otherIDTypesUseOneDictionary() {
    var map = _IDMap<String>()
    map["a"] = 1
    #expect(map.updateValue(2, forKey: "a") == 1)
    #expect(map["a"] == 2)
    #expect(map.removeValue(forKey: "a") == 2)
    #expect(map.count == 0)
  }
}
