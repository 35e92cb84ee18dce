import RequestSet

/// The record type every suite queries: the issue's `Animal`, with a nested owner.
struct Animal: Record, Equatable, CustomStringConvertible {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var weight: Double
  var nickname: String?
  var tags: [String]
  var owner: Owner?

  init(
    id: Int, name: String, species: String, age: Int, weight: Double = 10, nickname: String? = nil,
    tags: [String] = [], owner: Owner? = nil
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

  var description: String { "#\(id) \(name)" }
}

struct Owner: Codable, Sendable, Hashable {
  var name: String
  var city: String
}

extension Animal {
  /// A small, fixed zoo for tests that check exact results.
  static let zoo: [Animal] = [
    Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick", tags: ["small"],
           owner: Owner(name: "Walt", city: "Burbank")),
    Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm", "big"],
           owner: Owner(name: "Ann", city: "Oslo")),
    Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
    Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450, owner: Owner(name: "Ann", city: "Oslo")),
    Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al"),
    Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old", "small"],
           owner: Owner(name: "Bo", city: "Bergen")),
  ]

  static let namePool = ["Micky", "Daisy", "Rex", "Bella", "alice", "Zed", "Bob", "bob", "Émile", "Max"]
  static let speciesPool = ["Cow", "Dog", "Cat", "Mouse", "Horse"]
  static let cityPool = ["Oslo", "Bergen", "Burbank", "oslo"]

  /// `count` random animals with ids 1...count, reproducible from `seed`.
  static func random(count: Int, seed: UInt64) -> [Animal] {
    var rng = SeededRandom(seed: seed)
    return (1...max(count, 1)).prefix(count).map { id in
      Animal(
        id: id,
        name: namePool.randomElement(using: &rng)!,
        species: speciesPool.randomElement(using: &rng)!,
        age: Int.random(in: 0...20, using: &rng),
        weight: Double(Int.random(in: 0...400, using: &rng)) / 4,
        nickname: Bool.random(using: &rng) ? nil : namePool.randomElement(using: &rng)!.lowercased(),
        tags: Array(["farm", "small", "big", "old"].shuffled(using: &rng).prefix(Int.random(in: 0...2, using: &rng))),
        owner: Int.random(in: 0..<10, using: &rng) < 3
          ? nil
          : Owner(name: namePool.randomElement(using: &rng)!, city: cityPool.randomElement(using: &rng)!))
    }
  }
}
