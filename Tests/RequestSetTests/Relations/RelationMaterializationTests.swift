import Foundation
import RequestSet
import Testing

/// Expressions that read keys through relations materialize the related records level by
/// level, once per type and level: an expression over K keys through two self-relations
/// costs K × records, where building the nesting afresh for every parent cost 2^K
/// queries (K = 13 on 60 records: 44–71 s and a gigabyte).
@Suite(.ownThreads) struct RelationMaterializationTests {
  struct Link: Record, RelatedRecord {
    var id: Int
    var v: Int
    var aID: Int?
    var bID: Int?
    static let a = ToOne<Link, Link>("a", \.aID)
    static let b = ToOne<Link, Link>("b", \.bID)
    static let relations: [any Relation<Link>] = [a, b]
  }

  static let links: [Link] = (0..<60).map { i in
    Link(id: i, v: (i * 37) % 101, aID: i % 11 == 0 ? nil : (i + 1) % 60, bID: (i * 7 + 3) % 60)
  }

  /// `a.v`, `a.b.v`, `a.b.a.v`, …: K keys, the longest K relations deep.
  static func keys(_ k: Int) -> [String] {
    (1...k).map { n in ((0..<n).map { $0 % 2 == 0 ? "a" : "b" } + ["v"]).joined(separator: ".") }
  }

  /// What a key reads on a record: nil past a missing link.
  static func read(_ key: String, _ link: Link) -> Int? {
    let byID = Dictionary(uniqueKeysWithValues: links.map { ($0.id, $0) })
    var current: Link? = link
    for part in key.split(separator: ".") {
      guard let here = current else { return nil }
      switch part {
      case "a": current = here.aID.flatMap { byID[$0] }
      case "b": current = here.bID.flatMap { byID[$0] }
      default: return here.v
      }
    }
    return nil
  }

  @Test(arguments: [StoreKind.memory, .log, .sqlite])
  func anExpressionOverThirteenKeysThroughTwoSelfRelationsIsLinear(kind: StoreKind) throws {
    let graph = try RecordGraph([try kind.makeStore(of: Link.self)])
    try graph.insert(contentsOf: Self.links)
    let keys = Self.keys(13)
    // Keys compared with keys: a record matches when its first key reads more than the
    // 13th, both present.
    let format = "\(keys[0]) + 0 > \(keys[12]) + 0"
    let start = ContinuousClock.now
    let ids = try graph.records(Link.self).filter(format).sortBy(\.id).fetch().map(\.id)
    let elapsed = ContinuousClock.now - start
    let expected = Self.links.filter { link in
      guard let x = Self.read(keys[0], link), let y = Self.read(keys[12], link) else { return false }
      return x > y
    }.map(\.id)
    #expect(ids == expected, "\(kind)")
    // Every key at once, summed: all 13 levels in one condition.
    let sum = keys.map { $0 + " + 0" }.joined(separator: " + ")
    let anyMatch = try graph.records(Link.self).filter("\(sum) >= 0").fetchCount()
    let expectedSum = Self.links.filter { link in keys.allSatisfy { Self.read($0, link) != nil } }.count
    #expect(anyMatch == expectedSum, "\(kind)")
    // Milliseconds here; the bound is for a busy machine, far below the 2^13 queries' minute.
    #expect(ContinuousClock.now - start < .seconds(15), "\(kind): \(elapsed) for the first query")
  }
}
