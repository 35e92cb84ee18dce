import Foundation
import Testing
@testable import RequestSet

extension Animal {
  /// `zoo` plus two animals with diacritics, LIKE wildcards in a nickname, and a nested
  /// owner with non-ASCII text: the fixed data set of the format-string table.
  static let formatZoo: [Animal] =
    zoo + [
      Animal(
        id: 7, name: "Émile", species: "Horse", age: 9, weight: 380.5, nickname: "émi", tags: ["farm", "old", "big"],
        owner: Owner(name: "Zoë", city: "Zürich")),
      Animal(
        id: 8, name: "Max", species: "Dog", age: 0, weight: 12, nickname: "a*b?", tags: ["small"],
        owner: Owner(name: "bo", city: "oslo")),
    ]
}

/// One row of the table: a format string, its arguments, and the ids it must select from
/// `Animal.formatZoo`, in store order.
struct FormatRow: CustomStringConvertible, Sendable {
  var format: String
  var arguments: [(any Sendable)?]
  var ids: [Int]
  var description: String { "\(format) \(arguments.map { String(describing: $0) })" }
}

/// Format strings with their expected matches over a fixed data set, on every backend.
///
/// The expected ids were computed by plain Swift closures over the records (no RequestSet
/// code), then written down here.
@Suite(.ownThreads) struct FormatStringTableTests {
  static let rows: [FormatRow] = table.map { FormatRow(format: $0.0, arguments: $0.1, ids: $0.2) }

  @Test func theTableIsLarge() {
    #expect(Self.rows.count >= 150)
    #expect(Set(Self.rows.map(\.description)).count == Self.rows.count, "no duplicate rows")
  }

  @Test(arguments: StoreKind.allCases)
  func everyRowSelectsItsExpectedRecords(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.formatZoo)
    for row in Self.rows {
      let filter = try RequestFilter<Animal>(format: row.format, arguments: row.arguments)
      #expect(try set.filter(filter).fetch().map(\.id) == row.ids, "\(row) on \(kind)")
      #expect(set.filter(filter).count == row.ids.count, "\(row) on \(kind), count")
      // Negation complements the row: NOT never mixes with nil the SQL way.
      #expect(
        try set.exclude(filter).fetch().map(\.id) == Animal.formatZoo.map(\.id).filter { !row.ids.contains($0) },
        "NOT \(row) on \(kind)")
      if row.arguments.isEmpty {
        #expect(try set.filter(row.format).fetch().map(\.id) == row.ids, "filter(\"\(row.format)\") on \(kind)")
      }
    }
  }
}

private let table: [(String, [(any Sendable)?], [Int])] = [
    ("age > 3", [], [2, 3, 5, 6, 7]),
    ("age >= 5", [], [2, 3, 5, 6, 7]),
    ("age < 5", [], [1, 4, 8]),
    ("age <= 5", [], [1, 3, 4, 6, 8]),
    ("age == 5", [], [3, 6]),
    ("age = 5", [], [3, 6]),
    ("age != 5", [], [1, 2, 4, 5, 7, 8]),
    ("age <> 5", [], [1, 2, 4, 5, 7, 8]),
    ("age =< 3", [], [1, 4, 8]),
    ("age => 9", [], [5, 7]),
    ("weight > 100.5", [], [2, 4, 7]),
    ("weight < 1", [], [1]),
    ("weight == 30", [], [3]),
    ("weight == 30.0", [], [3]),
    ("id == 0x3", [], [3]),
    ("age > -1", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("weight >= 4.5E0", [], [2, 3, 4, 5, 6, 7, 8]),
    ("weight > 1e2", [], [2, 4, 7]),
    ("age == 5.0", [], [3, 6]),
    ("age > 4.5", [], [2, 3, 5, 6, 7]),
    ("name == 'Rex'", [], [3]),
    ("name == \"Rex\"", [], [3]),
    ("name != 'Rex'", [], [1, 2, 4, 5, 6, 7, 8]),
    ("name < 'M'", [], [2, 4]),
    ("name >= 'a'", [], [5, 7]),
    ("nickname == nil", [], [2, 4, 6]),
    ("nickname != nil", [], [1, 3, 5, 7, 8]),
    ("nickname == NULL", [], [2, 4, 6]),
    ("owner == nil", [], [3, 5]),
    ("owner != nil", [], [1, 2, 4, 6, 7, 8]),
    ("owner.city == 'Oslo'", [], [2, 4]),
    ("owner.city != 'Oslo'", [], [1, 3, 5, 6, 7, 8]),
    ("owner.name == 'Ann'", [], [2, 4]),
    ("nickname < 'N'", [], [1, 5]),
    ("3 < age", [], [2, 3, 5, 6, 7]),
    ("'Rex' == name", [], [3]),
    ("5 >= age", [], [1, 3, 4, 6, 8]),
    ("  age>3\t\n", [], [2, 3, 5, 6, 7]),
    ("age > 3 and species == 'Dog'", [], [3, 6]),
    ("age > 3 AnD species == 'Dog'", [], [3, 6]),
    ("age > 3 && species == 'Dog'", [], [3, 6]),
    ("species == 'Cow' OR species == 'Cat'", [], [2, 4, 5]),
    ("species == 'Cow' || species == 'Cat'", [], [2, 4, 5]),
    ("species == 'Cow' or age > 10", [], [2, 4, 5]),
    ("NOT species == 'Cow'", [], [1, 3, 5, 6, 7, 8]),
    ("!(species == 'Cow')", [], [1, 3, 5, 6, 7, 8]),
    ("not (species == 'Cow' or species == 'Dog')", [], [1, 5, 7]),
    ("NOT NOT age > 3", [], [2, 3, 5, 6, 7]),
    ("species == 'Dog' OR species == 'Cow' AND age > 5", [], [2, 3, 6, 8]),
    ("(species == 'Dog' OR species == 'Cow') AND age > 5", [], [2]),
    ("((age > 1))", [], [1, 2, 3, 4, 5, 6, 7]),
    ("age > 3 AND (species == 'Dog' OR (species == 'Cow' AND weight > 500))", [], [2, 3, 6]),
    ("species == 'Dog' AND NOT (age == 5 AND name == 'Zed')", [], [3, 8]),
    ("TRUEPREDICATE", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("FALSEPREDICATE", [], []),
    ("truepredicate", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("TRUEPREDICATE AND age < 3", [], [4, 8]),
    ("FALSEPREDICATE OR age < 3", [], [4, 8]),
    ("NOT FALSEPREDICATE", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("1 == 1", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("1 == 2", [], []),
    ("'a' < 'b'", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("nil == nil", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("TRUE == YES", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("false == NO AND age < 3", [], [4, 8]),
    ("age BETWEEN {3, 7}", [], [1, 2, 3, 6]),
    ("age between {5, 5}", [], [3, 6]),
    ("weight BETWEEN {4.5, 30}", [], [3, 5, 6, 8]),
    ("name BETWEEN {'B', 'N'}", [], [1, 2, 4, 8]),
    ("age BETWEEN %@", [[2, 3]], [1, 4]),
    ("age BETWEEN {%d, %d}", [2, 5], [1, 3, 4, 6]),
    ("NOT age BETWEEN {3, 7}", [], [4, 5, 7, 8]),
    ("owner.city BETWEEN {'A', 'P'}", [], [1, 2, 4, 6]),
    ("age BETWEEN %@", [2...5], [1, 3, 4, 6]),
    ("species IN {'Cow', 'Dog'}", [], [2, 3, 4, 6, 8]),
    ("species IN %@", [["Cow", "Cat"]], [2, 4, 5]),
    ("age IN {3, 5, 12}", [], [1, 3, 5, 6]),
    ("age IN {}", [], []),
    ("age IN {2, 3, 5, 7, 9, 11, 13}", [], [1, 2, 3, 4, 6, 7]),
    ("name IN[c] {'rex', 'ALICE'}", [], [3, 5]),
    ("nickname IN {nil, 'Al'}", [], [2, 4, 5, 6]),
    ("NOT species IN {'Cow', 'Dog'}", [], [1, 5, 7]),
    ("'farm' IN tags", [], [2, 3, 7]),
    ("'small' IN tags AND age > 3", [], [6]),
    ("name IN 'Rex and Bella'", [], [3, 4]),
    ("weight IN {30, 25.0}", [], [3, 6]),
    ("species IN %@", [Set(["Cat"])], [5]),
    ("id IN %@", [[1, 2, 3]], [1, 2, 3]),
    ("name IN {'Rex', \"Zed\"}", [], [3, 6]),
    ("name CONTAINS 'e'", [], [3, 4, 5, 6, 7]),
    ("name CONTAINS[c] 'E'", [], [3, 4, 5, 6, 7]),
    ("name CONTAINS 'E'", [], []),
    ("name CONTAINS[cd] 'e'", [], [3, 4, 5, 6, 7]),
    ("name CONTAINS[d] 'Em'", [], [7]),
    ("name CONTAINS ''", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("tags CONTAINS 'farm'", [], [2, 3, 7]),
    ("tags CONTAINS[c] 'FARM'", [], [2, 3, 7]),
    ("owner.city CONTAINS 'u'", [], [1]),
    ("owner.city CONTAINS[d] 'u'", [], [1, 7]),
    ("nickname CONTAINS 'e'", [], [3]),
    ("'Micky Mouse' CONTAINS name", [], [1]),
    ("name BEGINSWITH 'Mi'", [], [1]),
    ("name BEGINSWITH[c] 'mi'", [], [1]),
    ("name BEGINSWITH[c] 'A'", [], [5]),
    ("name BEGINSWITH 'E'", [], []),
    ("name BEGINSWITH[d] 'E'", [], [7]),
    ("name BEGINSWITH[cd] 'em'", [], [7]),
    ("name ENDSWITH 'y'", [], [1, 2]),
    ("name ENDSWITH[c] 'E'", [], [5, 7]),
    ("species ENDSWITH 'e'", [], [1, 7]),
    ("nickname BEGINSWITH 'R'", [], [3]),
    ("nickname ENDSWITH 'y'", [], [3]),
    ("name beginswith %@", ["B"], [4]),
    ("%K BEGINSWITH %s", ["species", "C"], [2, 4, 5]),
    ("name LIKE 'R?x'", [], [3]),
    ("name LIKE '*y'", [], [1, 2]),
    ("name LIKE 'M*'", [], [1, 8]),
    ("name LIKE '*e*'", [], [3, 4, 5, 6, 7]),
    ("name LIKE[c] 'a*'", [], [5]),
    ("name LIKE '?e*'", [], [3, 4, 6]),
    ("name LIKE 'D*s?'", [], [2]),
    ("name LIKE '*'", [], [1, 2, 3, 4, 5, 6, 7, 8]),
    ("name LIKE ''", [], []),
    (#"nickname LIKE 'a\*b\?'"#, [], [8]),
    ("nickname LIKE 'a*b?'", [], [8]),
    ("nickname LIKE '??'", [], [5]),
    ("name LIKE[cd] 'emile'", [], [7]),
    ("name LIKE 'É*'", [], [7]),
    ("name LIKE[c] '*I*'", [], [1, 2, 5, 7]),
    ("name MATCHES '[A-Z][a-z]+'", [], [1, 2, 3, 4, 6, 8]),
    ("name MATCHES 'R.x'", [], [3]),
    ("name MATCHES 'e'", [], []),
    ("name MATCHES '.*e.*'", [], [3, 4, 5, 6, 7]),
    ("name MATCHES[c] 'REX|ZED'", [], [3, 6]),
    (#"name MATCHES '\w{3}'"#, [], [3, 6, 8]),
    ("species MATCHES 'C.w|D.g'", [], [2, 3, 4, 6, 8]),
    ("name MATCHES[d] 'Emile'", [], [7]),
    ("ANY tags == 'farm'", [], [2, 3, 7]),
    ("SOME tags == 'small'", [], [1, 6, 8]),
    ("ALL tags == 'farm'", [], [3, 4, 5]),
    ("NONE tags == 'farm'", [], [1, 4, 5, 6, 8]),
    ("ANY tags BEGINSWITH 'b'", [], [2, 7]),
    ("ALL tags IN {'farm', 'big'}", [], [2, 3, 4, 5]),
    ("any tags ==[c] 'OLD'", [], [6, 7]),
    ("ANY tags LIKE '*a*'", [], [1, 2, 3, 6, 7, 8]),
    ("NOT ANY tags == 'small'", [], [2, 3, 4, 5, 7]),
    ("ANY tags == %@", ["old"], [6, 7]),
    ("tags.@count == 0", [], [4, 5]),
    ("tags.@count > 1", [], [2, 6, 7]),
    ("tags.@count >= 1 AND age < 6", [], [1, 3, 6, 8]),
    ("tags.@count BETWEEN {1, 2}", [], [1, 2, 3, 6, 8]),
    ("%K > 1", ["tags.@count"], [2, 6, 7]),
    ("age > %d", [3], [2, 3, 5, 6, 7]),
    ("age > %i", [3], [2, 3, 5, 6, 7]),
    ("age > %ld", [3], [2, 3, 5, 6, 7]),
    ("weight < %f", [5.0], [1, 5]),
    ("weight < %f", [5], [1, 5]),
    ("name == %s", ["Rex"], [3]),
    ("%K == %@", ["name", "Rex"], [3]),
    ("%K == %@", ["owner.city", "Oslo"], [2, 4]),
    ("nickname == %@", [nil], [2, 4, 6]),
    ("name == %@ OR name == %@", ["Rex", "Zed"], [3, 6]),
    ("age == %@", [5.0], [3, 6]),
    ("weight == %@", [30], [3]),
    ("species ==[c] %@", ["dog"], [3, 6, 8]),
    ("age > %@ AND name BEGINSWITH[c] %@", [2, "mi"], [1]),
    ("name ==[c] 'REX'", [], [3]),
    ("name ==[cd] 'emile'", [], [7]),
    ("name ==[d] 'Emile'", [], [7]),
    ("name !=[c] 'rex'", [], [1, 2, 4, 5, 6, 7, 8]),
    ("name <[c] 'b'", [], [5]),
    ("name >=[c] 'm'", [], [1, 3, 6, 8]),
    ("owner.city ==[c] 'OSLO'", [], [2, 4, 8]),
    ("#name == 'Rex'", [], [3]),
    ("nickname == \"a*b?\"", [], [8]),
    ("nickname == 'a*b?' OR nickname == 'Al'", [], [5, 8]),
    (#"name == 'Zo\u00EB' OR owner.name == 'Zo\u00EB'"#, [], [7]),
    ("owner.city == 'Zürich'", [], [7]),
    ("owner.name BEGINSWITH[c] 'b'", [], [6, 8]),
    ("weight BETWEEN {0, 1} OR weight BETWEEN {500, 1000}", [], [1, 2]),
    ("NOT (nickname == nil) AND NOT (owner == nil)", [], [1, 7, 8]),
]
