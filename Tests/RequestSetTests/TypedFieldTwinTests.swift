import Foundation
import Testing
@testable import RequestSet

/// Typed conditions run on the store's fields where records would otherwise be decoded;
/// they must give exactly what testing the decoded record gives.
@Suite struct TypedFieldTwinTests {
  @Test func twinsExistOnlyWhereTheyAgree() {
    func twin(_ f: RequestFilter<Animal>) -> String? {
      guard case .typed(let c) = f._node else { return nil }
      return c.field?.description
    }
    #expect(twin(\.age > 3) == "age > 3")
    #expect(twin(\Animal.owner?.city == "Oslo") == #"owner.city == "Oslo""#)
    #expect(twin(\.nickname == nil) == "nickname == nil")
    #expect(twin(\.weight <= 2.5) == "weight <= 2.5")
    // A computed property, a collection, a NaN: no twin.
    #expect(twin(\.tags.count > 1) == nil)
    #expect(twin(\.tags == ["farm"]) == nil)
    #expect(twin(\.weight > .nan) == nil)
  }

  struct Renamed: Record, Equatable {
    var id: Int
    var displayName: String
    var code: Int
    enum CodingKeys: String, CodingKey {
      case id
      case displayName = "display_name"
      case code
    }
  }

  @Test(arguments: StoreKind.writable)
  func renamedKeysFallBackToDecoding(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Renamed.self)
    try store.insert(contentsOf: [Renamed(id: 1, displayName: "A", code: 7), Renamed(id: 2, displayName: "B", code: 9)])
    let all = RequestSet(store)
    #expect(try all.filter(\.displayName == "B").ids() == [2])
    #expect(try all.filter(\.code > 7).ids() == [2])
  }

  @Test(arguments: StoreKind.allCases)
  func nanComparesAsSwiftDoes(kind: StoreKind) throws {
    var odd = Animal.zoo
    odd[0].weight = .nan
    let all = try kind.makeSet(odd)
    let expected = odd.filter { $0.weight > 20 }.map(\.id)
    #expect(try all.filter(\.weight > 20).ids() == expected)
    #expect(try all.filter("weight", .greaterThan, 20).ids() == expected)
    #expect(try all.filter(\.weight <= 20).ids() == odd.filter { $0.weight <= 20 }.map(\.id))
  }
}
