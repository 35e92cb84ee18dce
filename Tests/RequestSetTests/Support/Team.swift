import Foundation
import RequestSet

/// A record with arrays of numbers and of nested structs, dates and multi-line text: the
/// data set of the format grammar's expression forms (functions, collection operators,
/// subscripts, SUBQUERY, key-to-key comparisons, MATCHES over line breaks).
struct Team: Record, Equatable, CustomStringConvertible {
  var id: Int
  var name: String
  var scores: [Int]
  var ratings: [Double]
  var members: [Member]
  var lead: Member?
  var start: Date
  var end: Date
  var motto: String

  var description: String { "#\(id) \(name)" }
}

struct Member: Codable, Sendable, Hashable {
  var name: String
  var age: Int
}

extension Team {
  static let league: [Team] = [
    Team(
      id: 1, name: "Ants", scores: [3, 5, 7], ratings: [4.5, 3.5],
      members: [Member(name: "Ann", age: 41), Member(name: "Bob", age: 29)], lead: Member(name: "Ann", age: 41),
      start: Date(timeIntervalSinceReferenceDate: 0), end: Date(timeIntervalSinceReferenceDate: 100_000),
      motto: "a\nb"),
    Team(
      id: 2, name: "Bees", scores: [], ratings: [], members: [], lead: nil,
      start: Date(timeIntervalSinceReferenceDate: 50), end: Date(timeIntervalSinceReferenceDate: 10), motto: "buzz"),
    Team(
      id: 3, name: "Cats", scores: [10, 10, 1], ratings: [2.0],
      members: [Member(name: "Cy", age: 45), Member(name: "Di", age: 36), Member(name: "Ed", age: 52)],
      lead: Member(name: "Ed", age: 52), start: Date(timeIntervalSinceReferenceDate: 0),
      end: Date(timeIntervalSinceReferenceDate: 3600), motto: "x\ny\nz"),
    Team(
      id: 4, name: "Dogs", scores: [2, 4], ratings: [5.0, 5.0, 2.5], members: [Member(name: "Fay", age: 19)],
      lead: Member(name: "Fay", age: 19), start: Date(timeIntervalSinceReferenceDate: 1000),
      end: Date(timeIntervalSinceReferenceDate: 1000), motto: "Woof"),
  ]
}

extension StoreKind {
  /// A request set over `teams` on this kind of backend.
  func makeSet(teams: [Team]) throws -> RequestSet<Team> {
    if self == .array { return RequestSet(teams) }
    let store = try makeStore(of: Team.self)
    try store.insert(contentsOf: teams)
    return RequestSet(store)
  }
}
