import Foundation
import Testing

@testable import RequestSet

/// A `#Predicate` made of comparisons of stored properties with constants runs as field
/// conditions; it must give exactly what `Predicate.evaluate` gives, and any predicate the
/// translation cannot render exactly must not be translated at all.
@Suite struct PredicateTranslationTests {
  typealias Expression = any StandardPredicateExpression<Bool>

  /// The translated tree's text, or nil when the predicate is evaluated record by record.
  static func translation<E: Sendable>(_ predicate: Predicate<E>) -> String? {
    guard case .predicate(let p) = RequestFilter(predicate)._node else { return nil }
    return p.translated?.description
  }

  struct Pet: Record, Equatable {
    var id: Int
    var name: String
    var isTame: Bool
    var born: Date
  }

  @Test func whatTranslatesAndToWhat() {
    let ages = [1, 2]
    let unordered = Double(bitPattern: 0x7FF8_0000_0000_0000)  // NaN
    let owner = Owner(name: "Ann", city: "Oslo")
    let table: [(Predicate<Animal>, String?, Comment)] = [
      (#Predicate { $0.age > 30 }, "age > 30", "a comparison"),
      (#Predicate { 30 < $0.age }, "age > 30", "the constant on the left flips the operator"),
      (#Predicate { 30 >= $0.age }, "age <= 30", "flipped >="),
      (#Predicate { "Rex" == $0.name }, #"name == "Rex""#, "flipped =="),
      (#Predicate { $0.weight <= 2.5 }, "weight <= 2.5", "a Double"),
      (#Predicate { $0.nickname == nil }, "nickname == nil", "nil"),
      (#Predicate { $0.nickname != "Al" }, #"nickname != "Al""#, "an optional"),
      (#Predicate { $0.age > 3 && $0.species == "Cow" }, #"age > 3 AND species == "Cow""#, "&&"),
      (#Predicate { $0.age < 2 || !($0.species == "Dog") }, #"age < 2 OR NOT species == "Dog""#, "|| and !"),
      (#Predicate { ["Cow", "Dog"].contains($0.species) }, #"species IN {"Cow", "Dog"}"#, "an IN list"),
      (#Predicate { ages.contains($0.age) }, "age IN {1, 2}", "a captured IN list"),
      (#Predicate { _ in true }, "TRUEPREDICATE", "a constant"),
      (#Predicate { $0.owner?.city == "Oslo" }, nil, "optional chaining"),
      (#Predicate { $0.age + 1 > 30 }, nil, "arithmetic"),
      (#Predicate { $0.weight > unordered }, nil, "NaN"),
      (#Predicate { $0.owner == owner }, nil, "a captured value of a type that is not on the list"),
      (#Predicate { $0.tags == ["farm"] }, nil, "an array field"),
      (#Predicate { $0.tags.count > 1 }, nil, "a key path on a key path"),
      (#Predicate { $0.tags.contains { $0 == "farm" } }, nil, "a closure"),
      (#Predicate { $0.tags.contains("farm") }, nil, "contains on a field"),
      (#Predicate { $0.name.starts(with: "Mi") }, nil, "starts(with:) compares Characters"),
      (#Predicate { $0.age > 3 && $0.owner?.city == "Oslo" }, nil, "one part that does not translate"),
      (#Predicate { $0.age == $0.id }, nil, "two fields"),
    ]
    for (predicate, expected, comment) in table {
      #expect(Self.translation(predicate) == expected, comment)
    }
    #expect(Self.translation(#Predicate<Pet> { $0.isTame }) == "isTame == true")
    #expect(Self.translation(#Predicate<Pet> { !$0.isTame && $0.id > 1 }) == "NOT isTame == true AND id > 1")
    let day = Date(timeIntervalSinceReferenceDate: 86_400)
    #expect(Self.translation(#Predicate<Pet> { $0.born < day }) == "born < 86400.0")
  }

  /// `starts(with:)` stays untranslated: BEGINSWITH would disagree with it.
  @Test func beginsWithDisagreesWithStartsWith() throws {
    let record = [Animal(id: 1, name: "a\r\nb", species: "Cow", age: 1)]
    #expect(RequestSet(record).filter("name BEGINSWITH %@", "a\r").count == 1)
    #expect(try record.filter { try #Predicate<Animal> { $0.name.starts(with: "a\r") }.evaluate($0) }.isEmpty)
    #expect(RequestSet(record).filter(#Predicate<Animal> { $0.name.starts(with: "a\r") }).count == 0)
  }

  @Test func explainShowsTheTranslation() {
    let plan = RequestSet(Animal.zoo).filter(#Predicate<Animal> { $0.age > 30 })
      .filter(#Predicate<Animal> { $0.owner?.city == "Oslo" }).explain()
    #expect(
      plan == """
        RequestSet<Animal> over Array<Animal>
        stage 1: scan all records
          filter: #Predicate<Animal>(age > 30) AND #Predicate<Animal>
        """)
  }
}
