import Foundation
import RequestSet

/// The record type of an app's first version.
struct PetV1: Record, Equatable {
  var id: Int
  var name: String
  var weight: Int
  var city: String
  var nickname: String?
}

/// Version 2: `weight` renamed to `weightKg` and widened to `Double`, a new non-optional
/// `legs`, `city` moved into a nested `address`, `nickname` dropped.
struct PetV2: Record, Equatable {
  struct Address: Codable, Hashable, Sendable { var city: String }
  var id: Int
  var name: String
  var weightKg: Double
  var legs: Int
  var address: Address
}

/// Version 3: names upper-cased by a closure, and a new list of tags.
struct PetV3: Record, Equatable {
  var id: Int
  var name: String
  var weightKg: Double
  var legs: Int
  var address: PetV2.Address
  var tags: [String]
}

enum PetMigrations {
  static let v2 = Migration(
    "2: kg, legs, address",
    .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble), .add("legs", default: .int(4)),
    .move("city", to: "address.city"), .remove("nickname"))
  static let v3 = Migration(
    "3: names, tags",
    .transform { record in
      if case .string(let s)? = record.fields["name"] { record.fields["name"] = .string(s.uppercased()) }
    },
    .add("tags", default: .array([])))

  static var toV2: Migrator { Migrator([v2]) }
  /// The v2 steps under another name (the crash worker's is "v2").
  static func toV2Named(_ name: String) -> Migrator { Migrator([Migration(name, steps: v2.steps)]) }
  static var toV3: Migrator { Migrator([v2, v3]) }

  /// Seeded v1 records: every fifth has a nickname.
  static func records(_ n: Int, seed: UInt64 = 7) -> [PetV1] {
    var rng = SeededRandom(seed: seed)
    let cities = ["Oslo", "Bergen", "Lyon", "Kyoto", "Quito"]
    return (0..<n).map { i in
      PetV1(
        id: i, name: "pet\(i)", weight: Int(rng.next() % 90) + 1, city: cities[Int(rng.next() % 5)],
        nickname: i % 5 == 0 ? "nick\(i)" : nil)
    }
  }

  /// What plain Swift makes of a v1 record in version 2 and 3.
  static func v2(_ p: PetV1) -> PetV2 {
    PetV2(id: p.id, name: p.name, weightKg: Double(p.weight), legs: 4, address: .init(city: p.city))
  }
  static func v3(_ p: PetV1) -> PetV3 {
    PetV3(id: p.id, name: p.name.uppercased(), weightKg: Double(p.weight), legs: 4, address: .init(city: p.city), tags: [])
  }
}
