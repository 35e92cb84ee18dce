import RequestSet
import Testing

/// A person with friends nested in the record, as in GNUstep's NSPredicate tests.
struct Sociable: Record, Equatable {
  var id: Int
  var name: String
  var age: Int
  var friends: [Friend]

  struct Friend: Codable, Sendable, Hashable {
    var name: String
    var age: Int
  }

  static let people: [Sociable] = [
    Sociable(
      id: 1, name: "Ada", age: 36, friends: [Friend(name: "Bo", age: 41), Friend(name: "Cy", age: 45)]),
    Sociable(
      id: 2, name: "Bob", age: 50, friends: [Friend(name: "Bo", age: 41), Friend(name: "Cy", age: 45)]),
    Sociable(id: 3, name: "Cal", age: 20, friends: []),
    Sociable(
      id: 4, name: "Dee", age: 40, friends: [Friend(name: "Ed", age: 39), Friend(name: "Flo", age: 41)]),
  ]
}

/// SUBQUERY over an array nested in the record: a bare key (and SELF) names the record,
/// `$f.key` the element, on every store.
@Suite(.ownThreads) struct SubqueryScopeTests {
  static let rows: [(format: String, expected: [Int])] = [
    // GNUstep's assertion: Ada (36) has two friends older than herself.
    ("SUBQUERY(friends, $f, $f.age > age).@count == 2", [1]),
    ("SUBQUERY(friends, $f, $f.age > SELF.age).@count == 1", [4]),
    // A bare key compared with a constant is the record's too: people under 45 with two friends.
    ("SUBQUERY(friends, $f, age < 45).@count == 2", [1, 4]),
    ("SUBQUERY(friends, $f, name == 'Ada').@count > 0", [1]),
    // In a nested SUBQUERY, `friends` and `age` are still the record's.
    (
      "SUBQUERY(friends, $f, SUBQUERY(friends, $g, $g.age < $f.age AND $g.age > age).@count > 0).@count > 0",
      [1]
    ),
  ]

  @Test(arguments: StoreKind.allCases)
  func aBareKeyNamesTheRecord(kind: StoreKind) throws {
    let set: RequestSet<Sociable>
    if kind == .array {
      set = RequestSet(Sociable.people)
    } else {
      let store = try kind.makeStore(of: Sociable.self)
      try store.insert(contentsOf: Sociable.people)
      set = RequestSet(store)
    }
    for row in Self.rows {
      #expect(
        try set.filter(row.format).sortBy("id").fetch().map(\.id) == row.expected, "\(row.format) on \(kind)")
    }
  }
}
