import Foundation
import Testing

@testable import RequestSet

/// A string field whose records hold text that Swift compares by canonical equivalence
/// (the Kelvin sign equals "K", a precomposed "é" equals "e" + a combining accent) and a
/// field that holds a string in some records and a number in others.
struct Lettering: Record, Equatable {
  enum Mixed: Codable, Equatable, Sendable {
    case text(String)
    case number(Int)

    init(from decoder: any Decoder) throws {
      let c = try decoder.singleValueContainer()
      if let n = try? c.decode(Int.self) {
        self = .number(n)
      } else {
        self = .text(try c.decode(String.self))
      }
    }

    func encode(to encoder: any Encoder) throws {
      var c = encoder.singleValueContainer()
      switch self {
      case .text(let s): try c.encode(s)
      case .number(let n): try c.encode(n)
      }
    }
  }

  var id: Int
  var name: String
  var mixed: Mixed?

  static let names = ["K", "\u{212A}", "\u{E9}", "e\u{301}", "Cow", "", "Cowboy", "cow", "Ünïcødé 🐄", "1"]

  static let all: [Lettering] = names.enumerated().flatMap { i, name in
    [
      Lettering(id: 2 * i, name: name, mixed: i % 3 == 0 ? .number(1) : .text(name)),
      Lettering(id: 2 * i + 1, name: name, mixed: nil),
    ]
  }
}

/// Equality on string fields answers as Swift's `==` on every backend, whichever way a
/// backend compares (a LogStore compares the stored bytes where that is sure to agree).
@Suite(.ownThreads) struct StringEqualityTests {
  func set(_ kind: StoreKind) throws -> RequestSet<Lettering> {
    if kind == .array { return RequestSet(Lettering.all) }
    let store = try kind.makeStore(of: Lettering.self)
    try store.insert(contentsOf: Lettering.all)
    return RequestSet(store)
  }

  @Test(arguments: StoreKind.allCases)
  func equalityOnStringsAgreesWithSwift(kind: StoreKind) throws {
    let set = try set(kind)
    for needle in Lettering.names {
      let equal = Lettering.all.filter { $0.name == needle }
      let unequal = Lettering.all.filter { $0.name != needle }
      #expect(try set.filter("name", value: needle).fetch() == equal, "name == \(needle.debugDescription)")
      #expect(
        try set.filter("name", .notEqual, needle).fetch() == unequal, "name != \(needle.debugDescription)")
      #expect(try set.filter(\.name == needle).fetch() == equal, "\\.name == \(needle.debugDescription)")
      #expect(try set.filter(\.name != needle).fetch() == unequal, "\\.name != \(needle.debugDescription)")
      // A field that holds a number, a string or nothing: only the strings can be equal.
      let mixed = Lettering.all.filter { $0.mixed == .text(needle) }
      #expect(try set.filter("mixed", value: needle).fetch() == mixed, "mixed == \(needle.debugDescription)")
    }
  }
}
