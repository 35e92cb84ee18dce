import Foundation
import Testing

@testable import RequestSet

/// A record with every shape the binary encoding must carry: optionals, nesting,
/// arrays, dictionaries, dates, UUIDs, enums and the integer widths.
struct Critter: Record, Equatable {
  enum Kind: String, Codable, Sendable, CaseIterable { case mouse, dog, cow, cat }
  struct Owner: Codable, Equatable, Sendable {
    var name: String
    var city: String?
    var address: Address?
  }
  struct Address: Codable, Equatable, Sendable {
    var street: String
    var number: Int
  }

  var id: Int
  var name: String
  var kind: Kind
  var age: Int
  var weight: Double?
  var nickname: String?
  var tags: [String]
  var owner: Owner?
  var born: Date
  var scores: [String: Int]
  var big: UInt64
  var small: Int8
  var ratio: Float
  var tag: UUID
  var matrix: [[Int]]
}

/// The seed for a random test: `REQUESTSET_SEED` when set, else a fresh one (printed).
func testSeed(_ name: String) -> UInt64 {
  if let s = ProcessInfo.processInfo.environment["REQUESTSET_SEED"], let v = UInt64(s) { return v }
  let seed = UInt64.random(in: 0...UInt64(UInt32.max))
  print("[\(name)] seed \(seed) (rerun with REQUESTSET_SEED=\(seed))")
  return seed
}

extension Critter {
  static func random(id: Int, using rng: inout SeededRandom) -> Critter {
    let words = ["Micky", "Rex", "Daisy", "Ünïcødé 🐄", "", "a\"quote", "Oslo", "Bergen", "x y z"]
    func word() -> String { words[Int(rng.next() % UInt64(words.count))] }
    let hasOwner = rng.next() % 3 != 0
    return Critter(
      id: id,
      name: word(),
      kind: Kind.allCases[Int(rng.next() % 4)],
      age: Int(truncatingIfNeeded: rng.next() % 3 == 0 ? rng.next() : rng.next() % 40) * (rng.next() % 5 == 0 ? -1 : 1),
      weight: rng.next() % 2 == 0 ? Double(rng.next() % 10_000) / 7 : nil,
      nickname: rng.next() % 2 == 0 ? word() : nil,
      tags: (0..<Int(rng.next() % 4)).map { _ in word() },
      owner: hasOwner
        ? Owner(
          name: word(), city: rng.next() % 2 == 0 ? word() : nil,
          address: rng.next() % 2 == 0 ? Address(street: word(), number: Int(rng.next() % 200)) : nil)
        : nil,
      born: Date(timeIntervalSinceReferenceDate: Double(rng.next() % 1_000_000_000) / 3),
      scores: Dictionary(uniqueKeysWithValues: (0..<Int(rng.next() % 3)).map { ("s\($0)", Int(rng.next() % 100)) }),
      big: rng.next() % 2 == 0 ? rng.next() : rng.next() % 1000,
      small: Int8(truncatingIfNeeded: rng.next()),
      ratio: Float(rng.next() % 1000) / 8,
      tag: UUID(),
      matrix: (0..<Int(rng.next() % 3)).map { _ in (0..<Int(rng.next() % 3)).map { _ in Int(rng.next() % 9) } })
  }
}

/// A plain record like the core's fixtures, for store-level tests.
struct Beast: Record, Equatable, Hashable {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var owner: Owner?

  struct Owner: Codable, Equatable, Hashable, Sendable {
    var city: String
  }

  init(id: Int, name: String, species: String = "Mouse", age: Int = 1, owner: Owner? = nil) {
    self.id = id
    self.name = name
    self.species = species
    self.age = age
    self.owner = owner
  }
}

/// A fresh temporary directory, removed when the value goes away.
final class LogTempDir: Sendable {
  let path: String

  init() throws {
    let base = FileManager.default.temporaryDirectory.path
    path = base + "/requestset-log-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  func file(_ name: String = "store.rslog") -> String { path + "/" + name }

  /// Removes the files whose names begin with `prefix` (a recovery's preserved
  /// `<log>.damaged-…` copies, which a loop of salvages piles up by the thousand).
  func removeFiles(startingWith prefix: String) throws {
    for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.hasPrefix(prefix) {
      try FileManager.default.removeItem(atPath: file(name))
    }
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Encodes one value alone, with a fresh key table.
func encodeAlone<T: Encodable>(_ value: T) throws -> (bytes: [UInt8], names: [String?]) {
  var keys = _KeyTable()
  let out = _ByteBuffer()
  try _BinaryEncoder.encode(value, into: out, keys: &keys)
  return (out.array, keys.names)
}

/// `_FieldTable`'s flattening of a record's fields: every dotted key to its value.
func flatten(_ value: FieldValue, prefix: String? = nil, into out: inout [String: FieldValue]) {
  guard case .object(let fields) = value else { return }
  for (name, v) in fields {
    let key = prefix.map { $0 + "." + name } ?? name
    out[key] = v
    if case .object = v { flatten(v, prefix: key, into: &out) }
  }
}
