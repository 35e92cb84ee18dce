import RequestSet

/// The benchmark record: the issue's `Animal`.
public struct Animal: Record {
  public var id: Int
  public var name: String
  public var species: String
  public var age: Int
  public var weight: Double
  public var nickname: String?
  public var tags: [String]
  public var owner: Owner?

  public init(
    id: Int, name: String, species: String, age: Int, weight: Double, nickname: String? = nil,
    tags: [String], owner: Owner? = nil
  ) {
    self.id = id
    self.name = name
    self.species = species
    self.age = age
    self.weight = weight
    self.nickname = nickname
    self.tags = tags
    self.owner = owner
  }
}

public struct Owner: Codable, Sendable, Hashable {
  public var name: String
  public var city: String

  public init(name: String, city: String) {
    self.name = name
    self.city = city
  }
}

/// SplitMix64, so every run builds the same data.
public struct SeededRandom: RandomNumberGenerator {
  private var state: UInt64
  public init(seed: UInt64) { state = seed }
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// `count` animals with ids 0..<count, ages 0...99, reproducible.
public func makeAnimals(_ count: Int, seed: UInt64 = 42) -> [Animal] {
  var rng = SeededRandom(seed: seed)
  let names = ["Micky", "Daisy", "Rex", "Bella", "Alice", "Zed", "Bob", "Max", "Luna", "Milo"]
  let species = ["Cow", "Dog", "Cat", "Mouse", "Horse", "Sheep", "Goat", "Pig"]
  let cities = ["Oslo", "Bergen", "Paris", "Lyon", "Rome"]
  return (0..<count).map { id in
    Animal(
      id: id,
      name: names[Int(rng.next() % 10)] + String(id % 1000),
      species: species[Int(rng.next() % 8)],
      age: Int(rng.next() % 100),
      weight: Double(rng.next() % 10_000) / 10,
      nickname: rng.next() % 3 == 0 ? nil : "nick\(id % 97)",
      tags: rng.next() % 2 == 0 ? ["farm"] : [],
      owner: rng.next() % 4 == 0 ? nil : Owner(name: names[Int(rng.next() % 10)], city: cities[Int(rng.next() % 5)]))
  }
}

/// Keeps the optimizer from deleting a measured computation.
@inline(never)
public func keep<T>(_ value: T) {
  withExtendedLifetime(value) {}
}
