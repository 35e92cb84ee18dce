import Foundation
import Testing
@testable import RequestSet

/// Cases of NSPredicate's documented behaviour (Apple's "Predicate Format String Syntax"
/// and NSExpression function table, the well-known NSExpression statistics example, and
/// the MATCHES line-anchor cases GNUstep checks), written here as predicates of constants,
/// so each is true or false for every record. Evaluated over a store, they go through the
/// whole engine: parsing, folding, the planner, evaluation.
@Suite(.ownThreads) struct NSPredicateCorpusTests {
  static let statistics = "{1, 2, 3, 4, 4, 5, 9, 11}"

  static let cases: [(String, Bool)] = [
    ("4 + 5 - 2**3 == 1", true),
    ("7 / 2 == 3.5", true),
    ("2 + 3 * 4 == 14", true),
    ("(2 + 3) * 4 == 20", true),
    ("-2 ** 2 == -4", true),
    ("10 - 2 - 3 == 5", true),
    ("sum:(\(statistics)) == 39", true),
    ("count:(\(statistics)) == 8", true),
    ("min:(\(statistics)) == 1", true),
    ("max:(\(statistics)) == 11", true),
    ("average:(\(statistics)) == 4.875", true),
    ("median:(\(statistics)) == 4", true),
    ("mode:(\(statistics)) == {4}", true),
    ("stddev:(\(statistics)) BETWEEN {3.2185, 3.2186}", true),
    ("sum:(1, 2, 3) == 6", true),
    ("max:(1, 7, 3) == 7", true),
    ("count:(nil) == 0", true),
    ("average:({}) == nil", true),
    ("sum:({}) == 0", true),
    ("sqrt:(16) == 4", true),
    ("log:(1000) == 3", true),
    ("ln:(1) == 0", true),
    ("exp:(0) == 1", true),
    ("raise:toPower:(2, 10) == 1024", true),
    ("floor:(2.7) == 2", true),
    ("ceiling:(2.1) == 3", true),
    ("abs:(-3) == 3", true),
    ("trunc:(-2.7) == -2", true),
    ("modulus:by:(10, 3) == 1", true),
    ("add:to:(2, 3) == 5 AND from:subtract:(5, 3) == 2", true),
    ("multiply:by:(4, 2) == 8 AND divide:by:(8, 2) == 4", true),
    ("uppercase:('abc') == 'ABC'", true),
    ("lowercase:('ABC') == 'abc'", true),
    ("now() > 0", true),
    ("1 BETWEEN {0, 33}", true),
    ("{1, 2, 3}[FIRST] == 1 AND {1, 2, 3}[LAST] == 3 AND {1, 2, 3}[SIZE] == 3 AND {1, 2, 3}[1] == 2", true),
    ("{1, 2, 3}.@count == 3 AND {1, 2, 3}.@sum == 6 AND {1, 2, 3}.@avg == 2", true),
    ("{1, 2, 3}.@min == 1 AND {1, 2, 3}.@max == 3", true),
    ("SUBQUERY({1, 5, 9}, $x, $x > 4).@count == 2", true),
    ("ANY {1, 5, 9} > 8", true),
    ("ALL {1, 5, 9} > 0", true),
    ("NONE {1, 5, 9} > 9", true),
    ("'a\\nb' MATCHES 'a.b'", true),
    ("'a\\nb' MATCHES '.*^b$'", true),
    ("'a\\nb' MATCHES '^a$.*'", true),
    ("'a\\nb' MATCHES 'a$\\\\nb'", true),
    ("'a\\nb' MATCHES 'a\\\\n^b'", true),
    ("'ab' MATCHES '^ab$'", true),
    ("'a\\nb' MATCHES '^b$'", false),
    ("'a\\nb' MATCHES '^a$'", false),
    ("'abc' LIKE 'a?c' AND 'abc' LIKE[c] 'A*'", true),
    ("'Micky Mouse' CONTAINS 'Mouse'", true),
    ("'Micky' BEGINSWITH[cd] 'MI'", true),
    ("3 IN {1, 2}", false),
    ("2 + 2 == 5", false),
    ("sqrt:(2) * sqrt:(2) == 2", false),
  ]

  @Test(arguments: StoreKind.allCases)
  func everyCaseAgreesWithNSPredicate(kind: StoreKind) throws {
    let set = try kind.makeSet(Animal.zoo)
    for (format, expected) in Self.cases {
      let ids = try set.filter(RequestFilter(format: format)).fetch().map(\.id)
      #expect(ids == (expected ? Animal.zoo.map(\.id) : []), "\(format) on \(kind)")
    }
  }

  /// `$x.age > 40` is a variable's key path, never a key named "$x.age": unbound, it
  /// names the variable; bound, it compares.
  @Test func aDollarKeyPathIsAVariable() throws {
    let filter = try RequestFilter<Animal>(format: "$x.age > 40")
    let error = try #require(throws: RequestSetError.self) { try RequestSet(Animal.zoo).filter(filter).fetch() }
    #expect(error.code == .unboundVariable)
    #expect(error.message.hasPrefix("The variable $x has no value."))
    let old = filter.substituting(["x": Animal.zoo[4].withAge(41)])
    #expect(RequestSet(Animal.zoo).filter(old).count == Animal.zoo.count)
    #expect(RequestSet(Animal.zoo).filter(filter.substituting(["x": Animal.zoo[0]])).count == 0)
  }
}

/// `#` escapes the reserved words SELF and SUBQUERY (and `$`) used as keys.
@Suite(.ownThreads) struct EscapedKeyTests {
  struct Odd: Record {
    var id: Int
    var `self`: Int
    var subquery: String
  }

  @Test func anEscapedReservedWordIsAKey() throws {
    let set = RequestSet([Odd(id: 1, self: 5, subquery: "a"), Odd(id: 2, self: 9, subquery: "b")])
    #expect(try set.filter(RequestFilter(format: "#self > 6")).fetch().map(\.id) == [2])
    #expect(try set.filter(RequestFilter(format: "#subquery == 'a' AND #self < 6")).fetch().map(\.id) == [1])
  }
}

extension Animal {
  func withAge(_ age: Int) -> Animal {
    var copy = self
    copy.age = age
    return copy
  }
}
