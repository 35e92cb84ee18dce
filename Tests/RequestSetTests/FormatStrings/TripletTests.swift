import Foundation
import Testing
@testable import RequestSet

/// KEYShadow's triplet queries and string sort keys with "desc:" prefixes.
@Suite(.ownThreads) struct TripletTests {
  static var cases: [([Any], [Int])] { [
    (["name", "contains[c]", "MI", "and not", "species", "in", ["Cow", "Dog"]], [1, 7]),
    (["name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"]], [1]),
    (["species", "==", "Dog", "age", ">", 4], [3, 6]),  // "and" is the default
    (["species", "==", "Dog", "and", "age", ">", 4], [3, 6]),
    (["species", "==", "Dog", "or", "species", "==", "Cat"], [3, 5, 6, 8]),
    (["species", "==", "Dog", "or not", "age", ">", 4], [1, 3, 4, 6, 8]),
    (["not", "species", "==", "Dog"], [1, 2, 4, 5, 7]),
    (["species", "==", "Dog", "not", "name", "==", "Rex"], [6, 8]),
    // AND binds tighter than OR; a nested array groups.
    (["species", "==", "Cat", "or", "species", "==", "Dog", "and", "age", "==", 5], [3, 5, 6]),
    ([["species", "==", "Cat", "or", "species", "==", "Dog"], "and", "age", "==", 5], [3, 6]),
    (["age", "<", 10, "and not", ["species", "==", "Dog", "or", "species", "==", "Cow"]], [1, 7]),
    (["nickname", "==", "nil"], [2, 4, 6]),
    (["owner", "!=", "nil", "and", "owner.city", "==[c]", "oslo"], [2, 4, 8]),
    (["any", "tags", "==", "farm"], [2, 3, 7]),
    ([["any", "tags", "==", "small"]], [1, 6, 8]),
    (["ALL", "tags", "in", ["farm", "big"], "and", "tags.@count", ">", 0], [2, 3]),
    (["age", "between", [3, 7]], [1, 2, 3, 6]),
    (["name", "like[c]", "*e*", "and", "name", "matches", "[A-Z].*"], [3, 4, 6]),
    (["name", "BEGINSWITH[cd]", "em"], [7]),
    (["weight", ">=", 380.5], [2, 4, 7]),
    ([], [1, 2, 3, 4, 5, 6, 7, 8]),
  ] }

  @Test(arguments: StoreKind.allCases)
  func tripletQueriesSelectTheExpectedRecords(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.formatZoo)
    for (triplets, ids) in Self.cases {
      #expect(try set.filter(where: triplets).fetch().map(\.id) == ids, "\(triplets)")
      #expect(try set.filter(RequestFilter(triplets: triplets)).fetch().map(\.id) == ids, "\(triplets)")
      let rest = Animal.formatZoo.map(\.id).filter { !ids.contains($0) }
      #expect(try set.exclude(where: triplets).fetch().map(\.id) == rest, "\(triplets)")
    }
  }

  @Test func aTripletQueryExplainsAsAFormatString() throws {
    let f = try RequestFilter<Animal>(triplets: [
      "name", "contains[c]", "Micky", "and not", "species", "in", ["Cow", "Dog"],
    ])
    #expect(f.description == #"name CONTAINS[c] "Micky" AND NOT species IN {"Cow", "Dog"}"#)
    let g = try RequestFilter<Animal>(triplets: [["age", ">", 3, "or", "any", "tags", "==", "farm"], "owner", "!=", "nil"])
    #expect(g.description == #"(age > 3 OR ANY tags == "farm") AND owner != nil"#)
  }

  @Test func malformedTripletsSayWhereAndHow() throws {
    let suffix =
      #" Write [key, operator, value] triplets, joined by "and" (the default), "and not", "or", "or not" or "not", with nested arrays for grouping."#
    let cases: [([Any], RequestSetError.Code, String)] = [
      (["name", "=="], .invalidFormat,
       "Triplet query: expected a triplet [key, operator, value] but found only 2 element(s) at index 0." + suffix),
      (["name", 3, "x"], .invalidFormat,
       #"Triplet query: expected an operator such as "==", "in" or "contains[c]" but found 3 (Int) at index 1."# + suffix),
      (["name", "== 3 OR", "x"], .invalidFormat,
       #"Triplet query: expected an operator such as "==", "in" or "contains[c]" but found "== 3 OR" (String) at index 1."# + suffix),
      ([3, "==", 3], .invalidFormat, "Triplet query: expected a key (a String) or a nested array but found 3 (Int) at index 0." + suffix),
      (["age", ">", 3, "and"], .invalidFormat, "Triplet query: expected a triplet after the last connector at index 4." + suffix),
      (["age", ">", 3, "or", [1, "==", 2]], .invalidFormat,
       "Triplet query: expected a key (a String) or a nested array but found 1 (Int) at index 4.0." + suffix),
      (["name", "resembles", "x"], .invalidFormat,
       #"Triplet query: the triplet at index 0 ["name", "resembles", "x" (String)] is invalid: Unknown operator "resembles" after "%K" at offset 3, near "%K resembles %@". Use ==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE or MATCHES."#),
      (["age", "between", 3], .invalidFormat,
       #"Triplet query: the triplet at index 0 ["age", "between", 3 (Int)] is invalid: BETWEEN expects two values {lower, upper} but found "%@" at offset 11, near "%K between %@". Write age BETWEEN {1, 5}, or pass a two-element array."#),
    ]
    for (triplets, code, message) in cases {
      let error = try #require(throws: RequestSetError.self) { try RequestFilter<Animal>(triplets: triplets) }
      #expect(error.code == code, "\(triplets)")
      #expect(error.message == message, "\(triplets)")
      // Through filter(where:), the same error comes from fetch().
      let fetched = try #require(throws: RequestSetError.self) { try RequestSet(Animal.zoo).filter(where: triplets).fetch() }
      #expect(fetched.message == message)
    }
  }

  @Test(arguments: StoreKind.allCases)
  func sortKeyStringsTakeDescAndDashPrefixes(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.formatZoo)
    #expect(try set.sortBy("age").fetch().map(\.id) == [8, 4, 1, 3, 6, 2, 7, 5])
    #expect(try set.sortBy("desc:age").fetch().map(\.id) == [5, 7, 2, 3, 6, 1, 4, 8])
    #expect(try set.sortBy("-age").fetch().map(\.id) == [5, 7, 2, 3, 6, 1, 4, 8])
    #expect(try set.sortBy("asc:age", order: .descending).fetch().map(\.id) == [8, 4, 1, 3, 6, 2, 7, 5])
    #expect(try set.sortBy("species", "desc:age").fetch().map(\.id) == [5, 2, 4, 3, 6, 8, 7, 1])
    #expect(try set.sortBy(["-species", "name"]).fetch().map(\.id) == [1, 7, 8, 3, 6, 4, 2, 5])
    #expect(try set.sortBy("desc[c]:name").fetch().map(\.id) == [6, 3, 1, 8, 7, 2, 4, 5])
    let plan = set.sortBy("species", "desc[n]:name", "-weight").explain()
    #expect(
      plan.contains(
        kind == .sqlite || kind == .indexedSQLite
          ? "pushed to SQLiteStore<Animal>: ORDER BY species ASC, name DESC [localizedStandard], weight DESC"
          : kind == .pushdownMemory
          ? "in process: sort species ASC, name DESC [localizedStandard], weight DESC "
            + "(name DESC [localizedStandard]: PushdownMemoryStore sorts binary text on plain keys only)"
          : kind == .postgres
          ? "in process: sort species ASC, name DESC [localizedStandard], weight DESC (name DESC "
            + #"[localizedStandard]: the collation localizedStandard is Swift's; PostgreSQL sorts only binary (COLLATE "C"))"#
          : kind.pushesDown
            ? "in process: sort species ASC, name DESC [localizedStandard], weight DESC (name DESC [localizedStandard]: "
          : "sort: species ASC, name DESC [localizedStandard], weight DESC (stable sort)"))
    // An unknown prefix is part of the key, and reported as such.
    guard StoreKind.checkingKeys.contains(kind) else { return }
    let error = try #require(throws: RequestSetError.self) { try set.sortBy("down:age").fetch() }
    #expect(error.code == .unknownKey)
    #expect(error.message.hasPrefix(#"Unknown key "down:age" for Animal."#))
  }

  @Test func numericAwareSortOrdersNumbersByValue() throws {
    let files = ["file10", "file2", "file1"].enumerated().map { Animal(id: $0.offset, name: $0.element, species: "x", age: 0) }
    #expect(try RequestSet(files).sortBy("asc[n]:name").fetch().map(\.name) == ["file1", "file2", "file10"])
    #expect(try RequestSet(files).sortBy("desc[n]:name").fetch().map(\.name) == ["file10", "file2", "file1"])
    #expect(try RequestSet(files).sortBy("name").fetch().map(\.name) == ["file1", "file10", "file2"])
  }
}
