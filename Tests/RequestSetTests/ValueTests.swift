import Foundation
import Testing

@testable import RequestSet

/// A record of the value types whose encoded form used to compare wrongly: `Decimal`,
/// integers past 2^53 and past `Int.max`, `URL`.
struct Ledger: Record, Equatable {
  var id: Int
  var price: Decimal
  var big: UInt64
  var exact: Int64
  var ratio: Double
  var link: URL

  init(id: Int, price: String = "0", big: UInt64 = 0, exact: Int64 = 0, ratio: Double = 0, link: URL? = nil) {
    self.id = id
    self.price = Decimal(string: price)!
    self.big = big
    self.exact = exact
    self.ratio = ratio
    self.link = link ?? URL(string: "https://example.com/\(id)")!
  }
}

extension StoreKind {
  /// A request set over any record type on this kind of backend.
  func makeSet<R: Record>(of records: [R]) throws -> RequestSet<R> {
    if self == .array { return RequestSet(records) }
    let store = try makeStore(of: R.self)
    try store.insert(contentsOf: records)
    return RequestSet(store)
  }
}

@Suite(.ownThreads) struct ValueTests {
  static let twoToThe53: Int64 = 1 << 53

  static let ledger: [Ledger] = [
    Ledger(id: 1, price: "5.34", big: UInt64.max, exact: twoToThe53 + 1, ratio: 1),
    Ledger(id: 2, price: "5.35", big: UInt64.max - 1, exact: twoToThe53, ratio: .nan),
    Ledger(id: 3, price: "5.36", big: 1 << 63, exact: -twoToThe53 - 1, ratio: -1),
    Ledger(id: 4, price: "10", big: 0, exact: 3, ratio: .infinity),
    Ledger(id: 5, price: "-1.5", big: UInt64(Int64.max), exact: 0, ratio: .nan),
  ]

  func ids(_ s: RequestSet<Ledger>) throws -> [Int] { try s.fetch().map(\.id) }

  @Test(arguments: StoreKind.allCases)
  func decimalIsANumber(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.ledger)
    let cut = Decimal(string: "5.35")!
    #expect(try ids(all.filter("price", .greaterThan, cut)) == [3, 4])
    #expect(try ids(all.filter("price", .greaterThanOrEqual, cut)) == [2, 3, 4])
    #expect(try ids(all.filter("price", value: cut)) == [2])
    // Against a Double, as the double prints (5.35), and against integers, exactly.
    #expect(try ids(all.filter("price", .greaterThan, 5.35)) == [3, 4])
    #expect(try ids(all.filter("price", value: 5.35)) == [2])
    #expect(try ids(all.filter("price", .greaterThan, 5)) == [1, 2, 3, 4])
    #expect(try ids(all.filter("price", value: 10)) == [4])
    #expect(try ids(all.filter(\.price > cut)) == [3, 4])
    #expect(try ids(all.sortBy("price")) == [5, 1, 2, 3, 4])
    #expect(try ids(all.sortBy(\.price, order: .descending)) == [4, 3, 2, 1, 5])
    #expect(try ids(all.sortBy("price").limit(2)) == [5, 1])
    #expect(try all.max("price") == .decimal(Decimal(10)))
  }

  @Test(arguments: StoreKind.allCases)
  func decimalInAFormatStringAndAnIndexRange(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.ledger)
    #expect(try ids(all.filter("price BETWEEN %@", [Decimal(string: "5.35")!, 10])) == [2, 3, 4])
    #expect(try ids(all.filter("price IN %@", [Decimal(string: "5.36")!, 5.34])) == [1, 3])
  }

  @Test(arguments: StoreKind.allCases)
  func unsignedIntegersAreExactPastIntMax(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.ledger)
    #expect(try ids(all.filter("big", value: UInt64.max - 1)) == [2])
    #expect(try ids(all.filter("big", value: UInt64.max)) == [1])
    #expect(try ids(all.filter("big", .greaterThan, UInt64.max - 1)) == [1])
    #expect(try ids(all.filter("big", .greaterThan, Int.max)) == [1, 2, 3])
    #expect(try ids(all.filter("big", value: Int.max)) == [5])
    #expect(try ids(all.filter(\.big == UInt64.max - 1)) == [2])
    #expect(try ids(all.sortBy("big")) == [4, 5, 3, 2, 1])
    #expect(try ids(all.sortBy("big", order: .descending).limit(2)) == [1, 2])
    #expect(try all.max("big") == .uint(UInt64.max))
    #expect(try FieldValue(encoding: UInt64.max) == .uint(UInt64.max))
  }

  @Test(arguments: StoreKind.allCases)
  func integersCompareWithDoublesExactly(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.ledger)
    let d53 = Double(Self.twoToThe53)
    // 2^53 + 1 rounds to the Double 2^53, but is not equal to it.
    #expect(try ids(all.filter("exact", value: d53)) == [2])
    #expect(try ids(all.filter("exact", .greaterThan, d53)) == [1])
    #expect(try ids(all.filter("exact", .lessThan, -d53)) == [3])
    #expect(try ids(all.filter("exact", .lessThanOrEqual, -d53)) == [3])
    #expect(try ids(all.filter("exact", .greaterThan, 2.5).sortBy("exact")) == [4, 2, 1])
    #expect(FieldValue.int(Int(Self.twoToThe53) + 1) != .double(d53))
    #expect(FieldValue.int(Int(Self.twoToThe53)) == .double(d53))
  }

  /// A field value that does not fit the type names where it is, though the decoder builds
  /// the coding path only for the error.
  @Test func aDecodeErrorFromFieldsNamesThePathToTheValue() throws {
    func path(_ value: FieldValue) throws -> [String] {
      let error = try #require(throws: DecodingError.self) { try value.decode(Animal.self) }
      guard case .typeMismatch(_, let context) = error else {
        Issue.record("not a type mismatch: \(error)")
        return []
      }
      return context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
    }
    let fields = try FieldValue(encoding: Animal.zoo[1])
    #expect(try path(fields._setting(.array([.string("farm"), .int(3)]), at: "tags")) == ["tags", "[1]"])
    #expect(try path(fields._setting(.bool(true), at: "owner.city")) == ["owner", "city"])
    #expect(try path(fields._setting(.string("old"), at: "age")) == ["age"])
    #expect(try fields.decode(Animal.self) == Animal.zoo[1])
  }

  @Test func numbersHashAsTheyCompare() throws {
    let equalPairs: [(FieldValue, FieldValue)] = [
      (.int(3), .double(3)), (.decimal(Decimal(3)), .int(3)),
      (.decimal(Decimal(string: "5.35")!), .double(5.35)),
      (.uint(1 << 63), .double(9_223_372_036_854_775_808.0)),
      (.decimal(Decimal(UInt64.max)), .uint(UInt64.max)),
    ]
    for (a, b) in equalPairs {
      #expect(a == b)
      #expect(a.hashValue == b.hashValue)
      #expect(Set([a, b]).count == 1)
    }
    #expect(FieldValue.uint(UInt64.max) != .double(18_446_744_073_709_551_616.0))
    #expect(FieldValue.decimal(.nan) != .decimal(.nan))
  }

  @Test(arguments: StoreKind.allCases)
  func urlIsItsAbsoluteString(kind: StoreKind) throws {
    let base = URL(string: "https://example.com/docs/")!
    let records = [
      Ledger(id: 1, link: URL(string: "guide.html", relativeTo: base)!),
      Ledger(id: 2, link: URL(string: "https://example.com/other")!),
    ]
    let all = try kind.makeSet(of: records)
    #expect(try FieldValue(encoding: records[0].link) == .string("https://example.com/docs/guide.html"))
    #expect(try ids(all.filter("link", value: "https://example.com/docs/guide.html")) == [1])
    #expect(try ids(all.filter("link BEGINSWITH 'https://example.com/d'")) == [1])
    #expect(
      try all.values("link").map { $0["link"] } == [
        .string("https://example.com/docs/guide.html"), .string("https://example.com/other"),
      ])
    // A record comes back with the URL its string names.
    #expect(try all.fetch().map(\.link.absoluteString) == records.map(\.link.absoluteString))
  }

  @Test func logStoreKeepsDecimalsAndBigIntegersAcrossReopening() throws {
    let path = TemporaryLogDirectory.freshPath()
    do {
      let log = try LogStore<Ledger>(path: path)
      try log.insert(contentsOf: Self.ledger)
    }
    let reopened = try LogStore<Ledger>(path: path)
    let back = try RequestSet(reopened).fetch()
    #expect(back.map(\.price) == Self.ledger.map(\.price))
    #expect(back.map(\.big) == Self.ledger.map(\.big))
    #expect(try ids(RequestSet(reopened).filter("price", .lessThan, 5.35)) == [1, 5])
  }

  /// A file written before decimals had a tag of their own holds them (and URLs) as the
  /// objects their own `encode(to:)` writes; those still decode.
  @Test func decimalsAndURLsInTheOlderObjectFormStillDecode() throws {
    struct OldDecimal: Encodable {
      let value: Decimal
      func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }
    struct OldURL: Encodable {
      let value: URL
      func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }
    struct Old: Encodable {
      var price: OldDecimal
      var link: OldURL
    }
    struct New: Decodable, Equatable {
      var price: Decimal
      var link: URL
    }
    var codec = BinaryRecordCodec()
    let bytes = try codec.encode(
      Old(
        price: OldDecimal(value: Decimal(string: "12.25")!),
        link: OldURL(value: URL(string: "https://a.example/b")!)))
    guard case .object(let fields) = try codec.fieldValue(from: bytes) else {
      Issue.record("not an object")
      return
    }
    #expect(fields["price"]?._kind == .object)
    let back = try codec.decode(New.self, from: bytes)
    #expect(back == New(price: Decimal(string: "12.25")!, link: URL(string: "https://a.example/b")!))
  }

  @Test func binaryCodecWritesDecimalsAsNumbers() throws {
    var codec = BinaryRecordCodec()
    let bytes = try codec.encode(Self.ledger[0])
    guard case .object(let fields) = try codec.fieldValue(from: bytes) else {
      Issue.record("not an object")
      return
    }
    #expect(fields["price"] == .decimal(Decimal(string: "5.34")!))
    #expect(fields["big"] == .uint(UInt64.max))
    #expect(fields["link"] == .string("https://example.com/1"))
    #expect(try codec.decode(Ledger.self, from: bytes) == Self.ledger[0])
  }

  /// NaN sorts after every number and ties with NaN, whether the sort is full, keeps the
  /// top k, walks an index or feeds `distinct`, by string key or key path.
  @Test(arguments: StoreKind.allCases)
  func nanHasOnePlaceInEverySort(kind: StoreKind) throws {
    // ratios: 1 (1), NaN (2), -1 (3), inf (4), NaN (5)
    let all = try kind.makeSet(of: Self.ledger)
    let ascending = [3, 1, 4, 2, 5]
    let descending = [2, 5, 4, 1, 3]
    #expect(try ids(all.sortBy("ratio")) == ascending)
    #expect(try ids(all.sortBy(\.ratio)) == ascending)
    #expect(try ids(all.sortBy("ratio", order: .descending)) == descending)
    #expect(try ids(all.sortBy(\.ratio, order: .descending)) == descending)
    for k in 1...5 {
      #expect(try ids(all.sortBy("ratio").limit(k)) == Array(ascending.prefix(k)))
      #expect(try ids(all.sortBy(\.ratio).limit(k)) == Array(ascending.prefix(k)))
      #expect(try ids(all.sortBy("ratio", order: .descending).limit(k)) == Array(descending.prefix(k)))
      #expect(try ids(all.sortBy(\.ratio, order: .descending).limit(k)) == Array(descending.prefix(k)))
    }
    #expect(try ids(all.sortBy("ratio").distinct("ratio")) == [3, 1, 4, 2])
    #expect(try ids(all.sortBy(\.ratio).distinct(\.ratio)) == [3, 1, 4, 2])
    // NaN still equals nothing in a filter, and orders with nothing.
    #expect(try ids(all.filter("ratio", value: Double.nan)) == [])
    #expect(try ids(all.filter("ratio", .greaterThan, 0.5)) == [1, 4])
  }

  @Test(arguments: [StoreKind.indexedMemory, .indexedLog])
  func nanSortsTheSameWithAnIndex(kind: StoreKind) throws {
    let all: RequestSet<Ledger>
    if kind == .indexedMemory {
      let store = MemoryStore<Ledger>()
      try store.createIndex("ratio")
      try store.createIndex(\.price)
      try store.insert(contentsOf: Self.ledger)
      all = RequestSet(store)
    } else {
      let store = try LogStore<Ledger>(path: TemporaryLogDirectory.freshPath())
      try store.createIndex("ratio")
      try store.createIndex(\.price)
      try store.insert(contentsOf: Self.ledger)
      all = RequestSet(store)
    }
    #expect(try ids(all.sortBy("ratio").limit(3)) == [3, 1, 4])
    #expect(try ids(all.sortBy("ratio", order: .descending).limit(3)) == [2, 5, 4])
    #expect(try ids(all.filter("ratio", .lessThan, 2.0)) == [1, 3])
    #expect(try ids(all.sortBy(\.price).limit(2)) == [5, 1])
    #expect(try ids(all.filter(\.price >= Decimal(string: "5.35")!)) == [2, 3, 4])
  }
}

/// Record types whose decoders trap on made-up input, run in a child process
/// (`Tests/AdversaryWorker/Scenarios+Values.swift`) so that a trap fails the test.
@Suite(.ownThreads) struct ValidatingDecoderTests {
  @Test(arguments: ["memory", "log", "array"])
  func learningKeysNeverFeedsTheDecoderMadeUpValues(kind: String) throws {
    let result = try AdversaryChild.run("validatingDecoder", kind)
    #expect(result.exitedNormally, "\(result)")
    let expected =
      (kind == "array" ? [] : ["empty 0"]) + [
        "guests [2, 3]", "bo [2]", "sorted [3, 2]", "no nickname 3", "done",
      ]
    #expect(result.lines == expected)
  }
}

/// A record with fields no placeholder could stand for (an enum with a payload, a nested
/// class) beside ordinary ones.
struct Shipment: Record {
  enum Shape: Codable, Sendable, Equatable {
    case box(width: Int)
    case tube(length: Double)
  }
  final class Carrier: Codable, Sendable {
    let code: String
    init(code: String) { self.code = code }
  }
  var id: Int
  var name: String
  var shape: Shape
  var link: URL
  var price: Decimal
  var carrier: Carrier
}

@Suite(.ownThreads) struct AwkwardFieldTests {
  static let shipments = [
    Shipment(
      id: 1, name: "a", shape: .box(width: 2), link: URL(string: "https://x.example/1")!, price: 1,
      carrier: .init(code: "UPS")),
    Shipment(
      id: 2, name: "b", shape: .tube(length: 1.5), link: URL(string: "https://x.example/2")!, price: 2,
      carrier: .init(code: "DHL")),
    Shipment(
      id: 3, name: "c", shape: .box(width: 2), link: URL(string: "https://x.example/3")!, price: 3,
      carrier: .init(code: "UPS")),
  ]

  /// One field the fast path cannot read costs only the conditions on that field: a key
  /// path to an ordinary field still reads its field, and can be indexed.
  @Test func oneUnreadableFieldLeavesTheOthersTheirFields() throws {
    let store = try LogStore<Shipment>(path: TemporaryLogDirectory.freshPath())
    try store.createIndex(\.name)
    try store.insert(contentsOf: Self.shipments)
    try store.createIndex(\.price)
    let all = RequestSet(store)
    #expect(try all.filter(\.name == "b").fetch().map(\.id) == [2])
    #expect(
      all.filter(\.name == "b").explain() == """
        RequestSet<Shipment> over LogStore<Shipment>
        stage 1: index lookup on name (~1 of 3 records)
          index answers: \\Shipment.name == "b"
        """)
    #expect(try all.filter(\.price >= Decimal(2)).fetch().map(\.id) == [2, 3])
    let shaped = all.filter(\.shape == .box(width: 2)).filter(\.name != "a")
    #expect(try shaped.fetch().map(\.id) == [3])
    #expect(
      shaped.explain() == """
        RequestSet<Shipment> over LogStore<Shipment>
        stage 1: scan all records (~3 records)
          filter: \\Shipment.shape == box(width: 2) AND \\Shipment.name != "a"
          decodes each record for: \\Shipment.shape == box(width: 2)
        """)
    #expect(try all.filter("carrier.code", value: "UPS").fetch().map(\.id) == [1, 3])
  }

  @Test(arguments: StoreKind.allCases)
  func awkwardFieldsAnswerAlikeOnEveryStore(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.shipments)
    #expect(try all.filter(\.name == "c").fetch().map(\.id) == [3])
    #expect(try all.filter(\.shape == .box(width: 2)).fetch().map(\.id) == [1, 3])
    #expect(try all.filter("link", value: "https://x.example/2").fetch().map(\.id) == [2])
    #expect(try all.filter("price", .greaterThan, 1.5).fetch().map(\.id) == [2, 3])
    #expect(try all.sortBy(\.price, order: .descending).limit(1).fetch().map(\.id) == [3])
    #expect(try all.filter("carrier.code", value: "DHL").fetch().map(\.id) == [2])
  }
}

/// Key paths are confirmed as Codable keys on stored records, even when every stored record
/// holds one value under two keys, and renamed keys are still caught.
@Suite(.ownThreads) struct KeyPathConfirmationTests {
  struct Pair: Record {
    var id: Int
    var age: Int
  }
  struct Swapped: Record {
    var id: Int
    var left: Int
    var right: Int
    enum CodingKeys: String, CodingKey {
      case id
      case left = "right"
      case right = "left"
    }
  }

  @Test func equalValuesUnderTwoKeysDoNotHideTheKey() throws {
    let store = try LogStore<Pair>(path: TemporaryLogDirectory.freshPath())
    try store.insert(contentsOf: (1...10).map { Pair(id: $0, age: $0) })
    try store.createIndex(\.age)
    let all = RequestSet(store)
    #expect(try all.filter(\.age == 3).fetch().map(\.id) == [3])
    #expect(
      all.filter(\.age == 3).explain() == """
        RequestSet<Pair> over LogStore<Pair>
        stage 1: index lookup on age (~1 of 10 records)
          index answers: \\Pair.age == 3
        """)
  }

  @Test func swappedKeysHaveNoTwinEvenWhenTheValuesAgree() throws {
    let store = try LogStore<Swapped>(path: TemporaryLogDirectory.freshPath())
    try store.insert(contentsOf: (1...4).map { Swapped(id: $0, left: $0, right: $0) })
    try store.insert(Swapped(id: 5, left: 1, right: 2))
    let all = RequestSet(store)
    #expect(try all.filter(\.left == 1).fetch().map(\.id) == [1, 5])
    #expect(try all.filter("left", value: 1).fetch().map(\.id) == [1])
    #expect(all.filter(\.left == 1).explain().contains("decodes each record for: \\Swapped.left == 1"))
  }
}

/// Dictionary keys with dots are reached by escaping the dot: `counts.b\.c`.
@Suite(.ownThreads) struct DottedKeyTests {
  struct Tally: Record {
    var id: Int
    var counts: [String: Int]
  }

  static let tallies = [
    Tally(id: 1, counts: ["b.c": 2, "b": 7]),
    Tally(id: 2, counts: ["b.c": 3, "a\\b": 1]),
    Tally(id: 3, counts: ["x": 1]),
  ]

  @Test(arguments: StoreKind.allCases)
  func anEscapedDotReachesADottedDictionaryKey(kind: StoreKind) throws {
    let all = try kind.makeSet(of: Self.tallies)
    #expect(try all.filter("counts.b\\.c", value: 2).fetch().map(\.id) == [1])
    #expect(try all.filter("counts.b\\.c", .greaterThan, 1).fetch().map(\.id) == [1, 2])
    #expect(try all.filter("counts.b", value: 7).fetch().map(\.id) == [1])
    #expect(try all.filter("counts.a\\\\b", value: 1).fetch().map(\.id) == [2])
    #expect(try all.filter("%K == 3", "counts.b\\.c").fetch().map(\.id) == [2])
    #expect(try all.sortBy("counts.b\\.c", order: .descending).fetch().map(\.id) == [2, 1, 3])
    #expect(try all.values("counts.b\\.c").map { $0["counts.b\\.c"] } == [.int(2), .int(3), .null])
  }

  @Test(arguments: StoreKind.writable)
  func updatesAndIndexesReachThemToo(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Tally.self)
    try store.insert(contentsOf: Self.tallies)
    let all = RequestSet(store)
    try all.filter("id", value: 2).update("counts.b\\.c", value: 9)
    #expect(try store.fetch(id: 2)?.counts["b.c"] == 9)
    #expect(try all.filter("counts.b\\.c", value: 9).fetch().map(\.id) == [2])
  }

  @Test func keysJoinAndSplitAround() {
    #expect(_DottedKey.join("counts", "b.c") == "counts.b\\.c")
    #expect(_DottedKey.join(nil, "a\\b") == "a\\\\b")
    #expect(_DottedKey.split("counts.b\\.c") == ["counts", "b.c"])
    #expect(_DottedKey.split("paths.a\\\\b.c") == ["paths", "a\\b", "c"])
    #expect(_DottedKey.split("owner.city") == ["owner", "city"])
  }
}
