import Foundation
import Testing
@testable import RequestSet

/// The expression forms' errors (same standard as the rest of the grammar: what, where,
/// how to fix), their nesting limit, variables left unbound, and what explain() shows.
@Suite(.ownThreads) struct FormatExpressionErrorTests {
  func parseError(_ format: String, _ arguments: [(any Sendable)?] = []) throws -> RequestSetError {
    try #require(throws: RequestSetError.self) { try RequestFilter<Animal>(format: format, arguments: arguments) }
  }

  static let syntax: [(String, RequestSetError.Code, String)] = [
    ("'a' + 1 > 3", .typeMismatch,
     #""+" computes with numbers but found "a", a String at offset 4, near "'a' + 1 > 3". Pass a number, or a key that holds numbers."#),
    ("sqrt:('x') > 1", .typeMismatch,
     #"sqrt: computes with numbers but found "x", a String at offset 0, near "sqrt:('x') > 1". Pass a number, or a key that holds numbers."#),
    ("sum(tags) > 1", .invalidFormat,
     #"Unknown function "sum" at offset 0, near "sum(tags) > 1". Write the function with its colon, as in sum:(…)."#),
    ("FUNCTION(age, 'abs:') > 1", .invalidFormat,
     #"Unknown function "FUNCTION" at offset 0, near "FUNCTION(age, 'abs:') > …". FUNCTION(…) is not supported; write a built-in function as name:(arguments), as in sum:(scores)."#),
    ("raise:toPower:(2) > 1", .invalidFormat,
     #"raise:toPower: takes 2 arguments but 1 was given at offset 0, near "raise:toPower:(2) > 1". Pass 2 arguments, as in raise:toPower:(2, 3)."#),
    ("average:() > 1", .invalidFormat,
     #"average: takes at least 1 argument but 0 were given at offset 0, near "average:() > 1". Pass at least 1 argument, as in average:(scores)."#),
    ("abs:(age > 1", .invalidFormat,
     #"Expected "," or ")" in the arguments of abs: but found ">" at offset 9, near "abs:(age > 1". Separate arguments with commas and close them with ")"."#),
    ("SUBQUERY(tags, t, t == 'x').@count > 0", .invalidFormat,
     #"Expected a variable such as $x as the SUBQUERY's second argument but found "t" at offset 15, near "SUBQUERY(tags, t, t == 'x').@count > 0". Write SUBQUERY(collection, $x, predicate), as in SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0."#),
    ("SUBQUERY(tags, $t, $t == 'x' > 0", .invalidFormat,
     #"Expected ")" to close the SUBQUERY but found ">" at offset 29, near "…ERY(tags, $t, $t == 'x' > 0". Write SUBQUERY(collection, $x, predicate), as in SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0."#),
    ("tags[FIRST > 'a'", .invalidFormat,
     #"Expected "]" after the subscript but found ">" at offset 11, near "tags[FIRST > 'a'". Write a subscript as [FIRST], [LAST], [SIZE] or [n], with n a number."#),
    ("$ > 3", .invalidFormat,
     #"Expected a variable name after "$" in "$" at offset 0, near "$ > 3". Name the variable, as in age > $minimum."#),
    ("(age + 1 > 3", .invalidFormat,
     #"Unbalanced parentheses: this "(" is never closed at offset 0, near "(age + 1 > 3". Add a ")" after the grouped comparisons, or remove the "("."#),
    ("(age + 1) * > 3", .invalidFormat,
     #"Expected a key or a value after "*" but found ">" at offset 12, near "(age + 1) * > 3". Write a key, a number, a quoted string, nil, true or false, a list {…}, or a substitution such as %@."#),
  ]

  @Test func syntaxAndTypeErrorsSayWhatWhereAndHow() throws {
    for (format, code, message) in Self.syntax {
      let error = try parseError(format)
      #expect(error.code == code, "\(format)")
      #expect(error.message == message, "\(format)")
    }
  }

  /// Keys and kinds are known only to a store, so these come from evaluation.
  @Test(arguments: StoreKind.allCases)
  func keyErrorsComeFromEvaluation(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo)
    let cases: [(String, RequestSetError.Code, String)] = [
      ("name == age", .typeMismatch,
       #"Keys "name" and "age" of Animal hold String and number values, so comparing them can never match. Compare keys that hold the same kind of value."#),
      ("name * 2 > 3", .typeMismatch,
       #"Key "name" of Animal holds String values, but "*" computes with numbers, so it can never match. Use a key that holds numbers."#),
      ("uppercase:(age) == 'A'", .typeMismatch,
       #"Key "age" of Animal holds number values, but uppercase: computes with text, so it can never match. Use a key that holds text."#),
      ("nmae + 1 > 3", .unknownKey,
       #"Unknown key "nmae" for Animal. Known keys: age, id, name, nickname, owner, owner.city, owner.name, species, tags, weight. Use one of them, or a dotted path into a nested value."#),
      ("age > $min", .unboundVariable,
       #"The variable $min has no value. Bind it with .substituting(["min": value]) on the filter, or pass variables: ["min": value] to filter(_:variables:)."#),
      ("SUBQUERY(tags, $t, $t == $wanted).@count > 0", .unboundVariable,
       #"The variable $wanted has no value. Bind it with .substituting(["wanted": value]) on the filter, or pass variables: ["wanted": value] to filter(_:variables:)."#),
    ]
    for (format, code, message) in cases {
      let error = try #require(throws: RequestSetError.self, "\(format)") { try set.filter(format).fetch() }
      #expect(error.code == code, "\(format)")
      #expect(error.message == message, "\(format)")
    }
  }

  @Test func aSubstitutionTheOperatorCannotTakeMakesTheFilterInvalid() throws {
    let filter = try RequestFilter<Animal>(format: "name BEGINSWITH $p").substituting(["p": 3])
    let error = try #require(throws: RequestSetError.self) { try RequestSet(Animal.zoo).filter(filter).fetch() }
    #expect(error.code == .typeMismatch)
    #expect(error.message == "BEGINSWITH compares text but found 3, a number, in name BEGINSWITH 3. Pass a String, or use == to compare numbers.")
  }

  @Test func substitutionKeepsWhatIsNotBoundAndCanBeRepeated() throws {
    let template = try RequestFilter<Animal>(format: "age > $min AND species == $kind")
    let half = template.substituting(["min": 3])
    #expect(half.description == #"age > 3 AND species == $kind [computed on each record]"#)
    let error = try #require(throws: RequestSetError.self) { try RequestSet(Animal.zoo).filter(half).fetch() }
    #expect(error.message.hasPrefix("The variable $kind has no value."))
    let full = half.substituting(["kind": "Dog"])
    #expect(full.description == #"age > 3 AND species == "Dog""#)
    #expect(try RequestSet(Animal.zoo).filter(full).fetch().map(\.id) == [3, 6])
    // A filter combined in code carries its variables too.
    let combined = (template || (try RequestFilter(format: "id == $id"))).substituting(["min": 20, "kind": "x", "id": 1])
    #expect(try RequestSet(Animal.zoo).filter(combined).fetch().map(\.id) == [1])
  }

  /// Arithmetic chains, unary minus, function calls, subscripts, SUBQUERY and
  /// parenthesized expressions each count as nesting: 100,000 deep is refused cleanly.
  @Test func nestingOfEveryNewFormIsLimited() throws {
    let n = 100_000
    let deep: [String] = [
      "age > " + String(repeating: "1 + ", count: n) + "1",
      "age > " + String(repeating: "age * ", count: n) + "1",
      "age > " + String(repeating: "2 ** ", count: n) + "1",
      "age > " + String(repeating: "-", count: n) + "1",
      "age > " + String(repeating: "abs:(", count: n) + "1" + String(repeating: ")", count: n),
      "tags" + String(repeating: "[0]", count: n) + " == 'x'",
      String(repeating: "SUBQUERY(tags, $t, ", count: n) + "$t == 'x'" + String(repeating: ").@count > 0", count: n),
      "age > " + String(repeating: "(", count: n) + "1" + String(repeating: ")", count: n),
      String(repeating: "(", count: n) + "age + 1" + String(repeating: ")", count: n) + " > 3",
      "age IN {" + String(repeating: "{", count: n),
    ]
    for format in deep {
      let error = try parseError(format)
      #expect(error.code == .invalidFormat, "\(format.prefix(40))")
      #expect(error.message.hasPrefix("Nesting deeper than 64 levels at offset "), "\(format.prefix(40)): \(error)")
    }
    // 60 chained operators are fine, and evaluate.
    let sixty = "age + " + String(repeating: "0 + ", count: 59) + "0 > 4"
    #expect(try RequestSet(Animal.zoo).filter(RequestFilter(format: sixty)).fetch().map(\.id) == [2, 3, 5, 6])
  }

  @Test func explainShowsFoldedConstantsOnIndexesAndComputedComparisons() throws {
    let set = try StoreKind.indexedMemory.makeSet(Animal.zoo)
    #expect(
      set.filter("age > 10 + 1").explain() == """
        RequestSet<Animal> over MemoryStore<Animal>
        stage 1: index range on age (~1 of 6 records)
          index answers: age > 11
        """)
    let bound = try RequestFilter<Animal>(format: "species == $kind").substituting(["kind": "Cow"])
    #expect(set.filter(bound).explain().contains(#"index answers: species == "Cow""#))
    #expect(
      set.filter("weight > age * 2 AND species == 'Dog'").explain() == """
        RequestSet<Animal> over MemoryStore<Animal>
        stage 1: index lookup on species (~2 of 6 records)
          index answers: species == "Dog"
          filter: weight > age * 2 [computed on each record]
        """)
    #expect(
      set.filter("SUBQUERY(tags, $t, $t BEGINSWITH 'f').@count > 0").explain() == """
        RequestSet<Animal> over MemoryStore<Animal>
        stage 1: scan all records (~6 records)
          filter: SUBQUERY(tags, $t, $t BEGINSWITH "f").@count > 0 [computed on each record]
        """)
  }
}
