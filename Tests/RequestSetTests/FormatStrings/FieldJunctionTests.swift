import Foundation
import Testing
@testable import RequestSet

/// ANDs and ORs of string-key conditions: what format strings and string keys build most.
/// In memory they run as one fused test over the field table's columns (as a typed AND
/// runs as one test over the records); every backend must still give the answers a plain
/// Swift closure gives.
@Suite(.ownThreads) struct FieldJunctionTests {
  static let data = Animal.random(count: 240, seed: 0xF05E)

  /// A format string, its arguments, and the same test written as a Swift closure.
  static let cases: [(String, [(any Sendable)?], @Sendable (Animal) -> Bool)] = [
    ("age > %d AND species == %@", [10, "Cow"], { $0.age > 10 && $0.species == "Cow" }),
    ("age > %d OR species == %@", [10, "Cow"], { $0.age > 10 || $0.species == "Cow" }),
    ("age <= 4 AND nickname == nil", [], { $0.age <= 4 && $0.nickname == nil }),
    ("nickname != nil OR age == 20", [], { $0.nickname != nil || $0.age == 20 }),
    ("age >= 3 AND age < 9 AND weight > 50", [], { $0.age >= 3 && $0.age < 9 && $0.weight > 50 }),
    ("species == 'Dog' OR species == 'Cat' OR age > 18", [], { ["Dog", "Cat"].contains($0.species) || $0.age > 18 }),
    (
      "age > 2 AND weight < 90 AND name BEGINSWITH[c] 'm' AND owner.city != nil", [],
      { $0.age > 2 && $0.weight < 90 && $0.name.lowercased().hasPrefix("m") && $0.owner?.city != nil }
    ),
    (
      "age == 1 OR age == 2 OR weight == 0 OR name ENDSWITH 'y' OR owner.city == 'Oslo'", [],
      { $0.age == 1 || $0.age == 2 || $0.weight == 0 || $0.name.hasSuffix("y") || $0.owner?.city == "Oslo" }
    ),
    ("ANY tags == 'farm' AND age > 5", [], { $0.tags.contains("farm") && $0.age > 5 }),
    ("tags.@count > 1 OR age < 2", [], { $0.tags.count > 1 || $0.age < 2 }),
    ("age > 5 AND age + 1 > 12", [], { $0.age > 5 && $0.age + 1 > 12 }),
    ("NOT (age > 5 AND species == 'Cow') OR weight > 80", [], { !($0.age > 5 && $0.species == "Cow") || $0.weight > 80 }),
  ]

  @Test(arguments: StoreKind.allCases)
  func junctionsOfFieldConditionsMatchSwiftClosures(kind: StoreKind) throws {
    let set = try kind.makeSet(Self.data)
    for (format, arguments, test) in Self.cases {
      let expected = Self.data.filter(test).map(\.id)
      #expect(!expected.isEmpty && expected.count < Self.data.count, "\(format) should select some records")
      let filter = try RequestFilter<Animal>(format: format, arguments: arguments)
      #expect(try set.filter(filter).fetch().map(\.id) == expected, "\(format) on \(kind)")
      #expect(set.filter(filter).count == expected.count, "\(format) on \(kind), count")
      let others = Self.data.filter { !test($0) }.map(\.id)
      #expect(try set.exclude(filter).fetch().map(\.id) == others, "NOT \(format) on \(kind)")
    }
  }

  /// `_fusedColumns` for the junction `format` parses into, over a MemoryStore of `data`,
  /// with the slots it selects (nil when it does not fuse the junction).
  private func fused(_ format: String) throws -> [Int]? {
    let snapshot = try MemoryStore(Self.data).snapshot()
    let node = _FilterNode<Animal>(try _FormatParser.parse(format, arguments: []))
    return try _RecordCursor.with(snapshot) { cursor -> [Int]? in
      var compiler = _FilterCompiler(cursor: cursor)
      let matcher: _Matcher<Animal>?
      switch node {
      case .and(let j): matcher = try compiler._fusedColumns(j.terms, isAnd: true)
      case .or(let j): matcher = try compiler._fusedColumns(j.terms, isAnd: false)
      default: throw RequestSetError(.invalidFormat, "\(format) is not a junction")
      }
      guard let matcher else { return nil }
      guard case .general(let test) = matcher else { throw RequestSetError(.invalidFormat, "not a slot test") }
      return try Self.data.indices.filter(test)
    }
  }

  @Test func inMemoryJunctionsOfFieldConditionsAreOneFusedTest() throws {
    for (format, arguments, test) in Self.cases where arguments.isEmpty && !format.contains("+") && !format.hasPrefix("NOT") {
      let expected = Self.data.indices.filter { test(Self.data[$0]) }
      #expect(try fused(format) == expected, "\(format)")
    }
  }

  @Test func aJunctionWithAComputedOperandIsCompiledOperandByOperand() throws {
    #expect(try fused("age > 5 AND age + 1 > 12") == nil)
    #expect(try fused("age > 5 OR (species == 'Cow' AND age < 3)") == nil)
  }

  @Test func aFusedJunctionStillChecksEveryKeyAndValue() throws {
    // A key no record holds is left to the operand-by-operand path, which names it.
    #expect(try fused("age > 5 AND agee == 3") == nil)
    let set = try StoreKind.memory.makeSet(Self.data)
    let unknown = #expect(throws: RequestSetError.self) { try set.filter("age > 5 AND agee == 3").fetch() }
    #expect(unknown?.code == .unknownKey)
    let mismatch = #expect(throws: RequestSetError.self) { try fused("age > 5 OR species == 3") }
    #expect(mismatch?.code == .typeMismatch)
  }
}
