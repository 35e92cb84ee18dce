import Foundation
import Testing
@testable import RequestSet

/// A record of the awkward types: Decimal, UInt64 past Int.max, URL, Date, UUID, an enum,
/// an optional nested struct, NaN doubles, a class field, a renamed key, a computed property.
struct Oddity: Record {
  enum Mood: String, Codable, Sendable { case calm, busy, odd }
  struct Spot: Codable, Sendable, Equatable {
    var city: String
    var floor: Int
  }
  /// A class held in a field; immutable, so `Sendable` is checked.
  final class Box: Codable, Sendable {
    let label: String
    init(label: String) { self.label = label }
  }

  var id: Int
  var price: Decimal
  var big: UInt64
  var link: URL
  var when: Date
  var uuid: UUID
  var mood: Mood
  var spot: Spot?
  var ratio: Double
  var box: Box
  /// Stored under the key "heading".
  var title: String

  enum CodingKeys: String, CodingKey {
    case id, price, big, link, when, uuid, mood, spot, ratio, box
    case title = "heading"
  }

  /// Computed, so never encoded.
  var bigHalf: UInt64 { big / 2 }

  static let uuids = (0..<4).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }
  static let cities = ["Oslo", "Rome", "Lima"]

  static func random(count: Int, seed: UInt64) -> [Oddity] {
    var rng = SeededRandom(seed: seed)
    return (0..<count).map { id in
      let n = Int(rng.next() % 1_000)
      return Oddity(
        id: id,
        price: Decimal(Int(rng.next() % 2_000)) / 100,
        big: rng.next() % 2 == 0 ? UInt64(Int.max) + rng.next() % 50 : rng.next() % 50,
        link: URL(string: "https://example.com/\(n % 6)")!,
        when: Date(timeIntervalSinceReferenceDate: Double(rng.next() % 40) * 3_600.5),
        uuid: uuids[Int(rng.next() % 4)],
        mood: [Mood.calm, .busy, .odd][Int(rng.next() % 3)],
        spot: rng.next() % 3 == 0 ? nil : Spot(city: cities[Int(rng.next() % 3)], floor: Int(rng.next() % 5)),
        ratio: rng.next() % 5 == 0 ? .nan : Double(rng.next() % 20) / 4,
        box: Box(label: "b\(rng.next() % 4)"),
        title: "t\(rng.next() % 10)")
    }
  }
}

/// One condition in its typed form, its string-key form and plain Swift.
private struct OddCondition: CustomStringConvertible {
  let description: String
  let typed: RequestFilter<Oddity>
  let keyed: @Sendable (RequestSet<Oddity>) -> RequestSet<Oddity>
  let reference: (Oddity) -> Bool

  static func random(_ rng: inout SeededRandom, _ data: [Oddity]) -> OddCondition {
    let pick = data[Int(rng.next() % UInt64(data.count))]
    switch rng.next() % 12 {
    case 0:
      let v = pick.price
      return .init(description: "price > \(v)", typed: \.price > v, keyed: { $0.filter("price", .greaterThan, v) }) {
        $0.price > v
      }
    case 1:
      let v = pick.big
      return .init(description: "big >= \(v)", typed: \.big >= v, keyed: { $0.filter("big", .greaterThanOrEqual, v) }) {
        $0.big >= v
      }
    case 2:
      let v = pick.link
      return .init(description: "link == \(v)", typed: \.link == v, keyed: { $0.filter("link", value: v) }) { $0.link == v }
    case 3:
      let v = pick.when
      return .init(description: "when < \(v)", typed: \.when < v, keyed: { $0.filter("when", .lessThan, v) }) { $0.when < v }
    case 4:
      let v = pick.uuid
      return .init(description: "uuid == \(v)", typed: \.uuid == v, keyed: { $0.filter("uuid", value: v) }) { $0.uuid == v }
    case 5:
      let v = pick.mood
      return .init(description: "mood == \(v)", typed: \.mood == v, keyed: { $0.filter("mood", value: v.rawValue) }) {
        $0.mood == v
      }
    case 6:
      let v = Oddity.cities[Int(rng.next() % 3)]
      return .init(description: "spot.city == \(v)", typed: \.spot?.city == v, keyed: { $0.filter("spot.city", value: v) }) {
        $0.spot?.city == v
      }
    case 7:
      let v = Double(rng.next() % 20) / 4
      return .init(description: "ratio > \(v)", typed: \.ratio > v, keyed: { $0.filter("ratio", .greaterThan, v) }) {
        $0.ratio > v
      }
    case 8:
      return .init(description: "ratio == nan", typed: \.ratio == .nan, keyed: { $0.filter("ratio", value: Double.nan) }) { _ in
        false  // NaN equals nothing, NaN included, as `==` in Swift
      }
    case 9:
      let v = pick.box.label
      return .init(description: "box.label == \(v)", typed: \.box.label == v, keyed: { $0.filter("box.label", value: v) }) {
        $0.box.label == v
      }
    case 10:
      let v = pick.title
      return .init(description: "title == \(v)", typed: \.title == v, keyed: { $0.filter("heading", value: v) }) {
        $0.title == v
      }
    default:
      let v = pick.bigHalf
      // A computed property has no key: both forms are the typed one.
      return .init(description: "bigHalf <= \(v)", typed: \.bigHalf <= v, keyed: { $0.filter(\.bigHalf <= v) }) {
        $0.bigHalf <= v
      }
    }
  }
}

/// One sort key in its typed form, its string-key form and plain Swift (NaN after every
/// number, tied with NaN, as the library orders it).
private struct OddSort: CustomStringConvertible, Sendable {
  let description: String
  let typed: @Sendable (RequestSet<Oddity>, RequestSortOrder) -> RequestSet<Oddity>
  let key: String
  let order: @Sendable (Oddity, Oddity) -> Int

  static func three<V: Comparable>(_ a: V, _ b: V) -> Int { a < b ? -1 : b < a ? 1 : 0 }

  static let all: [OddSort] = [
    .init(description: "price", typed: { $0.sortBy(\.price, order: $1) }, key: "price") { three($0.price, $1.price) },
    .init(description: "big", typed: { $0.sortBy(\.big, order: $1) }, key: "big") { three($0.big, $1.big) },
    .init(description: "when", typed: { $0.sortBy(\.when, order: $1) }, key: "when") { three($0.when, $1.when) },
    .init(description: "title", typed: { $0.sortBy(\.title, order: $1) }, key: "heading") { three($0.title, $1.title) },
    .init(description: "ratio", typed: { $0.sortBy(\.ratio, order: $1) }, key: "ratio") { a, b in
      switch (a.ratio.isNaN, b.ratio.isNaN) {
      case (true, true): return 0
      case (true, false): return 1
      case (false, true): return -1
      case (false, false): return three(a.ratio, b.ratio)
      }
    },
  ]
}

/// Seeded random filters, sorts and windows over the awkward types, typed and by string
/// key, on every backend, against plain Swift.
@Suite(.ownThreads) struct AwkwardDifferentialTests {
  static let data = Oddity.random(count: 120, seed: 0x0DD1_7E5)
  /// 100 seeded queries per store (300 with `REQUESTSET_SOAK=1`).
  static let queryCount = TestScale.pick(quick: 100, soak: 200)

  @Test(arguments: StoreKind.allCases)
  func randomQueriesOnAwkwardTypesMatchPlainSwift(kind: StoreKind) throws {
    let base = try kind.makeSet(of: Self.data)
    var rng = SeededRandom(seed: 0xA3C_0000)
    var nonTrivial = 0
    for i in 0..<Self.queryCount {
      var set = base
      var expected = Array(Self.data.enumerated())
      var text: [String] = []
      for _ in 0..<(1 + Int(rng.next() % 2)) {
        let c = OddCondition.random(&rng, Self.data)
        let keyed = rng.next() % 2 == 0
        set = keyed ? c.keyed(set) : set.filter(c.typed)
        expected = expected.filter { c.reference($0.element) }
        text.append((keyed ? "key " : "typed ") + c.description)
      }
      if rng.next() % 3 != 0 {
        let s = OddSort.all[Int(rng.next() % UInt64(OddSort.all.count))]
        let order: RequestSortOrder = rng.next() % 2 == 0 ? .ascending : .descending
        let keyed = rng.next() % 2 == 0
        set = keyed ? set.sortBy(s.key, order: order) : s.typed(set, order)
        expected.sort { a, b in
          let c = s.order(a.element, b.element)
          if c != 0 { return order == .ascending ? c < 0 : c > 0 }
          return a.offset < b.offset
        }
        text.append("sort \(keyed ? "key" : "typed") \(s) \(order)")
      }
      if rng.next() % 2 == 0 {
        let offset = Int(rng.next() % 5), limit = Int(rng.next() % 15)
        set = set.offset(offset).limit(limit)
        expected = Array(expected.dropFirst(offset).prefix(limit))
        text.append("offset \(offset) limit \(limit)")
      }
      let want = expected.map(\.element.id)
      if !want.isEmpty && want.count < Self.data.count { nonTrivial += 1 }
      #expect(try set.fetch().map(\.id) == want, "query \(i) on \(kind): \(text)")
      #expect(set.count == want.count, "query \(i) on \(kind): \(text)")
    }
    #expect(nonTrivial > Self.queryCount / 3)
  }
}
