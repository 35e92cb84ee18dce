import Foundation
import Testing
@testable import RequestSet

/// Bad format strings: the exact error, with what was expected, the character offset and
/// the text around it.
@Suite(.ownThreads) struct FormatStringErrorTests {
  /// Parses `format`, expecting it to throw, and returns the error.
  func parseError(_ format: String, _ arguments: [(any Sendable)?] = []) throws -> RequestSetError {
    try #require(throws: RequestSetError.self) { try RequestFilter<Animal>(format: format, arguments: arguments) }
  }

  static let syntax: [(String, [(any Sendable)?], RequestSetError.Code, String)] = [
    ("age > AND name == 'x'", [], .invalidFormat,
     #"Expected a key or a value after ">" but found "AND" at offset 6, near "age > AND name == 'x'". Write a key, a number, a quoted string, nil, true or false, a list {…}, or a substitution such as %@."#),
    ("(age > 3", [], .invalidFormat,
     #"Unbalanced parentheses: this "(" is never closed at offset 0, near "(age > 3". Add a ")" after the grouped comparisons, or remove the "("."#),
    ("age > 3)", [], .invalidFormat,
     #"Unbalanced parentheses: this ")" has no matching "(" at offset 7, near "age > 3)". Remove it, or add a "(" before it."#),
    ("(age > 3 AND (name == 'x')", [], .invalidFormat,
     #"Unbalanced parentheses: this "(" is never closed at offset 0, near "(age > 3 AND (name == 'x…". Add a ")" after the grouped comparisons, or remove the "("."#),
    ("name IS 'x'", [], .invalidFormat,
     #"Unknown operator "IS" after "name" at offset 5, near "name IS 'x'". Use ==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE or MATCHES."#),
    ("name NOT IN {'a'}", [], .invalidFormat,
     #"Unknown operator "NOT" after "name" at offset 5, near "name NOT IN {'a'}". Put NOT before the whole comparison, as in NOT (name IN {'a', 'b'})."#),
    ("age", [], .invalidFormat,
     #"Expected an operator after "age" but found the end of the format string at offset 3, near "age". Use ==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE or MATCHES."#),
    ("", [], .invalidFormat,
     #"Expected a predicate but found the end of the format string at offset 0, near "". Write a comparison such as age > 3, or TRUEPREDICATE."#),
    ("age > 3 name", [], .invalidFormat,
     #"Expected AND, OR or the end after "3" but found "name" at offset 8, near "age > 3 name". Join comparisons with AND or OR, and quote text with ' or "."#),
    ("age > %d", [], .argumentCount,
     #"Missing argument: 0 arguments were given, but %d is substitution 1 at offset 6, near "age > %d". Pass one argument for each %@, %K, %d, %i, %ld, %f and %s, in order."#),
    ("%K == %@ OR %K == %@", ["name", "Rex", "name"], .argumentCount,
     #"Missing argument: 3 arguments were given, but %@ is substitution 4 at offset 18, near "%K == %@ OR %K == %@". Pass one argument for each %@, %K, %d, %i, %ld, %f and %s, in order."#),
    ("age > %d", [1, 2], .argumentCount,
     #"The format string has 1 substitution but 2 arguments were given, in "age > %d". Remove the extra arguments, or add a substitution such as %@ for each."#),
    ("age > 3", [1], .argumentCount,
     #"The format string has 0 substitutions but 1 argument was given, in "age > 3". Remove the extra arguments, or add a substitution such as %@ for each."#),
    ("age > %d", ["three"], .typeMismatch,
     #"%d expects an integer but argument 1 is "three" (String) at offset 6, near "age > %d". Pass an Int, or use %@ for a value of any type."#),
    ("weight > %f", ["heavy"], .typeMismatch,
     #"%f expects a floating-point number but argument 1 is "heavy" (String) at offset 9, near "weight > %f". Pass a Double, or use %@ for a value of any type."#),
    ("name == %s", [3], .typeMismatch,
     #"%s expects a String but argument 1 is 3 (Int) at offset 8, near "name == %s". Pass a String, or use %@ for a value of any type."#),
    ("%K == 3", [3], .typeMismatch,
     #"%K expects a key name (a String) but argument 1 is 3 (Int) at offset 0, near "%K == 3". Pass the key as a String, such as "name" or "owner.city"."#),
    ("name == 'Mick", [], .invalidFormat,
     #"Unterminated string: this ' is never closed at offset 8, near "name == 'Mick". Close the string with ', and write \' for a ' inside it."#),
    ("age ^ 3", [], .invalidFormat,
     #"Unexpected character "^" at offset 4, near "age ^ 3". Quote text with ' or ", and use ==, !=, <, <=, >, >=, AND, OR, NOT and parentheses."#),
    ("age > 3 & age < 5", [], .invalidFormat,
     #"Unexpected character "&" at offset 8, near "age > 3 & age < 5". Write && (or AND) to combine comparisons."#),
    ("age BETWEEN 3", [], .invalidFormat,
     #"BETWEEN expects two values {lower, upper} but found "3" at offset 12, near "age BETWEEN 3". Write age BETWEEN {1, 5}, or pass a two-element array."#),
    ("age BETWEEN {1, 2, 3}", [], .invalidFormat,
     #"BETWEEN expects two values {lower, upper} but found "{" at offset 12, near "age BETWEEN {1, 2, 3}". Write age BETWEEN {1, 5}, or pass a two-element array."#),
    ("age IN 3", [], .invalidFormat,
     #"IN expects a list but found "3" at offset 7, near "age IN 3". Write a list such as {1, 2}, or pass an array with %@."#),
    ("name BEGINSWITH 3", [], .typeMismatch,
     #"BEGINSWITH compares text but found "3", a number, at offset 16, near "name BEGINSWITH 3". Quote the text, or use == to compare numbers."#),
    ("name MATCHES '('", [], .invalidFormat,
     #"Invalid regular expression "(" for MATCHES at offset 13, near "name MATCHES '('". Fix the pattern (ICU syntax; it must match the whole string)."#),
    ("name ==[x] 'a'", [], .invalidFormat,
     #"Unknown comparison option "[x]" at offset 7, near "name ==[x] 'a'". Use [c] (case-insensitive), [d] (diacritic-insensitive) or [cd] right after the operator, or [fts] after MATCHES for full-text search."#),
    ("tags.@median > 1", [], .invalidFormat,
     #"Unknown collection operator or date part "@median" in "tags.@median" at offset 0, near "tags.@median > 1". Use @count, @sum, @avg, @min or @max, as in scores.@avg > 3, or a date part (@year, @month, @day, @weekday, @isoWeekday, @hour, @minute, @second), as in born.@year == 1990."#),
    ("age == %x", [], .invalidFormat,
     #"Unknown substitution "%x" at offset 7, near "age == %x". Use %@ (any value), %K (a key), %d, %i or %ld (an integer), %f (a Double) or %s (a String)."#),
    ("name == %%", [], .invalidFormat,
     #""%%" (a literal percent sign) outside a quoted string at offset 8, near "name == %%". Write it inside quotes, as in name LIKE '*100%%*'."#),
    ("age IN {1 2}", [], .invalidFormat,
     #"Expected "," or "}" in the list but found "2" at offset 10, near "age IN {1 2}". Separate list values with commas and close the list with "}"."#),
    ("age IN {1, 2", [], .invalidFormat,
     #"Unbalanced braces: this "{" is never closed at offset 7, near "age IN {1, 2". Close the list with "}"."#),
    ("3 BEGINSWITH name", [], .invalidFormat,
     #""BEGINSWITH" needs the key on its left, but found the value "3" at offset 0, near "3 BEGINSWITH name". Write the key first, as in name BEGINSWITH 'M'."#),
    ("ANY 'x' == tags", [], .invalidFormat,
     #"ANY needs a key right after it but found "'x'" at offset 4, near "ANY 'x' == tags". Write ANY tags == 'x', with the array key first."#),
    ("age > -'x'", [], .invalidFormat,
     #"Expected a number after "-" but found "'x'" at offset 7, near "age > -'x'". Write a negative number as -3 or -2.5."#),
    // Offsets count characters, not bytes: "Émile" is 5 characters and 6 UTF-8 bytes.
    ("Émile == 'x' AND ^^", [], .invalidFormat,
     #"Unexpected character "^" at offset 17, near "Émile == 'x' AND ^^". Quote text with ' or ", and use ==, !=, <, <=, >, >=, AND, OR, NOT and parentheses."#),
    ("name == 'a very long value that goes on' AND age >> 3", [], .invalidFormat,
     #"Expected a key or a value after ">" but found ">" at offset 50, near "… that goes on' AND age >> 3". Write a key, a number, a quoted string, nil, true or false, a list {…}, or a substitution such as %@."#),
  ]

  @Test func syntaxAndArgumentErrorsSayWhatWhereAndHow() throws {
    for (format, arguments, code, message) in Self.syntax {
      let error = try parseError(format, arguments)
      #expect(error.code == code, "\(format)")
      #expect(error.message == message, "\(format)")
    }
  }

  @Test func nestingIsLimitedInsteadOfExhaustingTheStack() throws {
    let deep = String(repeating: "(", count: 100_000) + "age > 3" + String(repeating: ")", count: 100_000)
    let error = try parseError(deep)
    #expect(error.code == .invalidFormat)
    #expect(error.message.hasPrefix("Nesting deeper than 64 levels at offset 64, near \"…(((("))
    let nots = try parseError(String(repeating: "NOT ", count: 50_000) + "age > 3")
    #expect(nots.message.hasPrefix("Nesting deeper than 64 levels at offset 256"))
    let lists = try parseError("age IN " + String(repeating: "{", count: 10_000))
    #expect(lists.message.hasPrefix("Nesting deeper than 64 levels at offset 71"))
    // 64 levels are fine.
    let fine = String(repeating: "(", count: 64) + "age > 3" + String(repeating: ")", count: 64)
    #expect(try RequestSet(Animal.zoo).filter(RequestFilter(format: fine)).count == 4)
  }

  @Test func aRegularExpressionErrorKeepsItsCause() throws {
    let error = try parseError("name MATCHES 'a)('")
    #expect(error.underlying != nil)
  }

  /// Keys and the kinds of value they hold are known only to a store: these errors come
  /// from evaluation, with the core's list of keys.
  @Test(arguments: StoreKind.checkingKeys)
  func keyAndTypeErrorsComeFromEvaluation(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo)
    let cases: [(String, RequestSetError.Code, String)] = [
      ("SPECIES == 'Dog'", .unknownKey,
       #"Unknown key "SPECIES" for Animal. Known keys: age, id, name, nickname, owner, owner.city, owner.name, species, tags, weight. Use one of them, or a dotted path into a nested value."#),
      ("owner.town == 'Oslo'", .unknownKey,
       #"Unknown key "owner.town" for Animal. Known keys: age, id, name, nickname, owner, owner.city, owner.name, species, tags, weight. Use one of them, or a dotted path into a nested value."#),
      ("age == 'x'", .typeMismatch,
       #"Key "age" of Animal holds number values, so it can never match "x", which is a String. Pass a number or nil."#),
      ("age IN {1, 'a'}", .typeMismatch,
       #"Key "age" of Animal holds number values, so it can never match "a", which is a String. Pass a number or nil."#),
      ("age BETWEEN {'a', 'z'}", .typeMismatch,
       #"Key "age" of Animal holds number values, so it can never match "a", which is a String. Pass a number or nil."#),
      ("name CONTAINS 3", .typeMismatch,
       #"Key "name" of Animal holds String values, so it can never match 3, which is a number. Pass a String or nil."#),
      ("name BEGINSWITH 'x' AND age CONTAINS 'a'", .typeMismatch,
       #"Key "age" of Animal holds number values, but CONTAINS tests text, so it can never match. Compare it with ==, <, > or BETWEEN instead."#),
      ("weight LIKE '1*'", .typeMismatch,
       #"Key "weight" of Animal holds number values, but LIKE tests text, so it can never match. Compare it with ==, <, > or BETWEEN instead."#),
      ("ANY name == 'x'", .typeMismatch,
       #"Key "name" of Animal holds String values, but ANY tests the elements of an array, so it can never match. Drop ANY to test the value itself."#),
      ("name.@count > 1", .typeMismatch,
       #"Key "name" of Animal holds String values, but name.@count counts the elements of an array, so it can never match. Use @count on an array key."#),
      ("tags.@count == 'two'", .typeMismatch,
       #"tags.@count of Animal is a number, so it can never match "two", which is a String. Compare it with a number."#),
      ("age IN 'abc'", .typeMismatch,
       #"Key "age" of Animal holds number values, but IN with a String tests for a substring, so it can never match. Pass a list such as {1, 2} or an array argument."#),
    ]
    for (format, code, message) in cases {
      let error = try #require(throws: RequestSetError.self, "\(format)") { try set.filter(format).fetch() }
      #expect(error.code == code, "\(format)")
      #expect(error.message == message, "\(format)")
      // The throwing initializer parses fine: the problem is only visible against a store.
      #expect(throws: RequestSetError.self) { try set.filter(RequestFilter(format: format)).fetch() }
    }
  }

  @Test func aBadFormatStringThroughFilterBehavesLikeOtherBadInput() throws {
    let set = RequestSet(Animal.zoo).filter("age > %d AND", 3)
    let error = try #require(throws: RequestSetError.self) { try set.fetch() }
    #expect(error.code == .invalidFormat)
    #expect(error.message.hasPrefix(#"Expected a comparison but found the end of the format string at offset 12"#))
    #expect(set.explain().contains("filter: INVALID(invalidFormat)"))
    // The collection members cannot throw: they stop with the message (in a child, see
    // `Tests/AdversaryWorker/Scenarios+Traps.swift`).
    let child = try AdversaryChild.run("trap.count.badFormat")
    #expect(child.stopped && child.lines.isEmpty, "\(child)")
    #expect(
      child.standardError.contains(
        #"RequestSetError.invalidFormat: Expected a key or a value after ">" but found ">" at offset 5"#),
      "\(child)")
  }
}
