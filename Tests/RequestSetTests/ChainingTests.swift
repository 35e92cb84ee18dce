import Foundation
import Testing
@testable import RequestSet

@Suite(.ownThreads) struct ChainingTests {
  func ids(_ s: RequestSet<Animal>) throws -> [Int] { try s.fetch().map(\.id) }

  @Test(arguments: StoreKind.allCases)
  func filtersJoinWithAndByDefault(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.filter("species", value: "Cow").filter(\.age > 3)) == [2])
  }

  @Test(arguments: StoreKind.allCases)
  func orModeJoinsEverythingBeforeAsOneOperand(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    // (species == Cow AND age > 3) OR name == Rex: not species == Cow AND (age > 3 OR name == Rex).
    let s = all.filter("species", value: "Cow").filter(\.age > 3).filter("name", value: "Rex", mode: .or)
    #expect(try ids(s) == [2, 3])
    #expect(
      s.explain().contains(
        kind.pushesDown
          ? #"pushed to \#(kind.sourceName): WHERE (species == "Cow" AND age > 3) OR name == "Rex""#
          : #"filter: (species == "Cow" AND \Animal.age > 3) OR name == "Rex""#))
  }

  @Test(arguments: StoreKind.allCases)
  func tupleListCombinesByItsModeThenJoinsWithAnd(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    // THCCoreData: (name = Daisy OR name = Rex) AND species = Dog.
    let s = all.filter([("name", "Daisy"), ("name", "Rex")], mode: .or).filter("species", value: "Dog")
    #expect(try ids(s) == [3])
    #expect(try ids(all.filter([("name", "Daisy"), ("name", "Rex")], mode: .or)) == [2, 3])
    #expect(try ids(all.filter([("species", "Cow"), ("age", 2)])) == [4])
    // A tuple list after other filters joins them with AND, whatever its own mode.
    #expect(try ids(all.filter(\.age > 4).filter([("name", "Daisy"), ("name", "Bella")], mode: .or)) == [2])
  }

  @Test(arguments: StoreKind.allCases)
  func anEmptyTupleListKeepsAllWithAndAndNothingWithOr(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(all.filter([], mode: .and).count == 6)
    #expect(all.filter([], mode: .or).count == 0)
  }

  @Test(arguments: StoreKind.allCases)
  func excludeIsANegatedFilterJoinedWithAnd(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.exclude("species", value: "Cow")) == [1, 3, 5, 6])
    #expect(try ids(all.filter("species", value: "Dog", mode: .or).exclude("name", value: "Rex")) == [6])
    #expect(try ids(all.exclude(\.age < 5).exclude { $0.tags.isEmpty }) == [2, 3, 6])
    #expect(try ids(all.exclude([("species", "Cow"), ("species", "Dog")], mode: .or)) == [1, 5])
    #expect(try ids(all.exclude(#Predicate<Animal> { $0.weight > 10 })) == [1, 5])
  }

  @Test(arguments: StoreKind.allCases)
  func typedOperatorsCombine(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    let adult: RequestFilter<Animal> = \.age >= 5 && \.nickname != nil
    #expect(try ids(all.filter(adult)) == [3, 5])
    #expect(try ids(all.filter(!adult)) == [1, 2, 4, 6])
    #expect(try ids(all.filter(\.age == 2 || \.name == "Zed")) == [4, 6])
    #expect(try ids(all.filter(\.id == 1).filter(adult, mode: .or)) == [1, 3, 5])
    #expect(try ids(all.filter(\.nickname == nil)) == [2, 4, 6])
    #expect(try ids(all.filter(\.nickname < "B")) == [5])
    #expect(try ids(all.filter(\Animal.owner?.city == "Oslo")) == [2, 4])
    #expect(try ids(all.filter(\.weight > 100)) == [2, 4])
    #expect(try ids(all.filter(\.id != 1).filter(\.id <= 3)) == [2, 3])
  }

  @Test(arguments: StoreKind.allCases)
  func predicatesAndClosures(kind: StoreKind) throws {
    let all = try kind.makeSet(Animal.zoo)
    #expect(try ids(all.filter(#Predicate<Animal> { $0.age > 3 && $0.species == "Cow" })) == [2])
    #expect(try ids(all.filter(\.id == 1).filter(#Predicate<Animal> { $0.age > 10 }, mode: .or)) == [1, 5])
    #expect(try ids(all.filter { $0.tags.contains("farm") }) == [2, 3])
    #expect(try ids(all.filter(\.id == 1).filter(mode: .or) { $0.id == 6 }) == [1, 6])
    #expect(try ids(all.filter(RequestFilter.all)) == [1, 2, 3, 4, 5, 6])
    #expect(try ids(all.filter(RequestFilter.none)) == [])
  }

  /// `filter { … }`, `sortBy` and friends must return RequestSet, not Array, so that
  /// chains stay lazy.
  @Test func buildersReturnRequestSetNotArray() throws {
    let all = RequestSet(Animal.zoo)
    let closure = all.filter { $0.age > 3 }
    let exclusion = all.exclude { $0.age > 3 }
    let sorted = all.sortBy(\.age)
    let limited = all.limit(2)
    #expect(type(of: closure) == RequestSet<Animal>.self)
    #expect(type(of: exclusion) == RequestSet<Animal>.self)
    #expect(type(of: sorted) == RequestSet<Animal>.self)
    #expect(type(of: limited) == RequestSet<Animal>.self)
    #expect(type(of: all.filter(\.age > 3).offset(1)) == RequestSet<Animal>.self)
  }
}
