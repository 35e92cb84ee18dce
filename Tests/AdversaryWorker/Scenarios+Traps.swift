// Scenarios that must stop the program: the collection members of a set that cannot be
// read (`count`, iteration, a subscript out of range) cannot throw, so they stop with the
// error's message. The parent (`ErrorTests`, `FormatStringErrorTests`) checks that the
// child failed and what it wrote on standard error.
//
//   AdversaryWorker trap.count.unknownKey       count of a set filtered on a misspelt key
//   AdversaryWorker trap.iterate.typeMismatch   a for-in loop over a set comparing a number with text
//   AdversaryWorker trap.subscript              a subscript past the end
//   AdversaryWorker trap.count.badFormat        count of a set with a malformed format string
//
// These run here rather than as Swift Testing exit tests: the first exit test starts a
// thread in the test process that calls `waitid(P_ALL, …, WNOWAIT)` in a loop, and it
// spins for as long as any other child of the test process (a worker, `pg_ctl`, `sqlite3`)
// is a zombie not yet reaped, which took a sixth of the test run's CPU time.

import RequestSet

/// The tests' `Animal`, with the same keys, so the messages name the same type and keys.
struct Animal: Record {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var weight: Double = 10
  var nickname: String? = nil
  var tags: [String] = []
  var owner: Owner? = nil

  struct Owner: Codable, Sendable, Hashable {
    var name: String
    var city: String
  }

  /// The first six of the tests' `Animal.zoo`.
  static let zoo: [Animal] = [
    Animal(id: 1, name: "Micky", species: "Mouse", age: 3, weight: 0.1, nickname: "Mick", tags: ["small"]),
    Animal(id: 2, name: "Daisy", species: "Cow", age: 7, weight: 600, tags: ["farm", "big"]),
    Animal(id: 3, name: "Rex", species: "Dog", age: 5, weight: 30, nickname: "Rexy", tags: ["farm"]),
    Animal(id: 4, name: "Bella", species: "Cow", age: 2, weight: 450),
    Animal(id: 5, name: "alice", species: "Cat", age: 12, weight: 4.5, nickname: "Al"),
    Animal(id: 6, name: "Zed", species: "Dog", age: 5, weight: 25, tags: ["old", "small"]),
  ]
}

extension Scenarios {
  static let traps: [String: Scenario] = [
    "trap.count.unknownKey": { _ in say("count \(RequestSet(Animal.zoo).filter("nmae", value: "Micky").count)") },
    "trap.iterate.typeMismatch": { _ in
      for animal in RequestSet(Animal.zoo).filter("age", value: "three") { say("read \(animal.id)") }
    },
    "trap.subscript": { _ in say("read \(RequestSet(Animal.zoo)[6].id)") },
    "trap.count.badFormat": { _ in say("count \(RequestSet(Animal.zoo).filter("age >> 3").count)") },
  ]
}
