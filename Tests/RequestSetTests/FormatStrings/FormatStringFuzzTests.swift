import Foundation
import Testing
@testable import RequestSet

/// Seeded random input for the parser: generated, mutated and random strings that must
/// never trap or hang, and must either parse or throw a located ``RequestSetError``.
@Suite(.ownThreads) struct FormatStringFuzzTests {
  /// 30,000 generated and mutated strings (100,000 with `REQUESTSET_SOAK=1`).
  static let inputCount = TestScale.pick(quick: 30_000, soak: 100_000)

  static let fragments: [String] = [
    "age", "name", "species", "nickname", "owner", "owner.city", "tags", "tags.@count", "weight", "id", "#in",
    "==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "BETWEEN", "IN", "CONTAINS", "BEGINSWITH",
    "ENDSWITH", "LIKE", "MATCHES", "[c]", "[d]", "[cd]", "[x]", "AND", "OR", "NOT", "&&", "||", "!", "(", ")",
    "{", "}", ",", "ANY", "SOME", "ALL", "NONE", "nil", "NULL", "TRUEPREDICATE", "FALSEPREDICATE", "true",
    "false", "YES", "NO", "3", "-2", "4.5", "1e3", "0x1F", "'Rex'", "\"Cow\"", "'a*b?'", "'[a-z]+'", "'('",
    "'\\''", "'\\u00E9'", "%@", "%K", "%d", "%i", "%ld", "%f", "%s", "%%", "%x", "@sum", ".", "-", "'", "\"",
    "\\", "[", "]", "é", "ü", "😀", "\0", "\n", " ",
  ]

  static func randomArgument(_ rng: inout SeededRandom) -> (any Sendable)? {
    switch Int.random(in: 0..<9, using: &rng) {
    case 0: return nil
    case 1: return Int.random(in: -5...20, using: &rng)
    case 2: return Double(Int.random(in: 0...100, using: &rng)) / 4
    case 3: return ["name", "age", "tags", "owner.city", "nope", "tags.@count"].randomElement(using: &rng)!
    case 4: return ["Rex", "Cow", "farm", "a*", "(", ""].randomElement(using: &rng)!
    case 5: return [1, 5]
    case 6: return ["Cow", "Dog"]
    case 7: return Bool.random(using: &rng)
    default: return Date(timeIntervalSinceReferenceDate: 0)
    }
  }

  /// A string of grammar fragments, mostly plausible.
  static func generated(_ rng: inout SeededRandom) -> String {
    var parts: [String] = []
    for _ in 0..<Int.random(in: 1...12, using: &rng) {
      parts.append(fragments.randomElement(using: &rng)!)
    }
    return parts.joined(separator: Int.random(in: 0..<4, using: &rng) == 0 ? "" : " ")
  }

  /// A table row or a generated string with bytes flipped, dropped, repeated or cut.
  static func mutated(_ base: String, _ rng: inout SeededRandom) -> String {
    var chars = Array(base)
    for _ in 0..<Int.random(in: 1...4, using: &rng) {
      let i = chars.isEmpty ? 0 : Int.random(in: 0..<chars.count, using: &rng)
      switch Int.random(in: 0..<6, using: &rng) {
      case 0 where !chars.isEmpty: chars.remove(at: i)
      case 1: chars.insert(Array(fragments.randomElement(using: &rng)!).first ?? " ", at: i)
      case 2 where !chars.isEmpty: chars[i] = Character(UnicodeScalar(UInt8.random(in: 32...126, using: &rng)))
      case 3: chars = Array(chars.prefix(i))
      case 4 where !chars.isEmpty: chars.insert(contentsOf: chars[i...].prefix(8), at: i)
      default: chars.insert(contentsOf: fragments.randomElement(using: &rng)!, at: i)
      }
    }
    return String(chars)
  }

  // The limit is a backstop against a hang (input that sends the parser into a loop), not
  // a timing: alone on a loaded 2-core machine the test ran 142 s and failed a 2-minute
  // limit.
  @Test(.timeLimit(.minutes(30)))
  func randomInputNeverTrapsAndEveryErrorIsLocated() throws {
    var rng = SeededRandom(seed: 0xF0_2A_11)
    let set = RequestSet(Animal.formatZoo)
    let total = Animal.formatZoo.count
    let rows = FormatStringTableTests.rows.map(\.format)
    var parsed = 0, evaluated = 0, rejected = 0
    var codes: [String: Int] = [:]
    for i in 0..<Self.inputCount {
      var input: String
      var given: [(any Sendable)?]? = nil
      switch i % 5 {
      case 0: input = Self.generated(&rng)
      case 1: input = Self.mutated(rows.randomElement(using: &rng)!, &rng)
      case 2, 3:
        // A valid predicate of the differential generator, mutated half of the time.
        let g = FormatStringDifferentialTests.predicate(depth: 0, &rng)
        input = i % 5 == 2 ? Self.mutated(g.format, &rng) : g.format
        given = g.arguments
      default:
        // Random bytes, decoded leniently, so any scalar can appear.
        let bytes = (0..<Int.random(in: 0...24, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        input = String(decoding: bytes, as: UTF8.self)
      }
      if given == nil {
        // Mostly as many arguments as the input has substitutions, so more inputs parse.
        let substitutions = input.utf8.filter { $0 == UInt8(ascii: "%") }.count
        let count = Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: 0...3, using: &rng) : substitutions
        given = (0..<count).map { _ in Self.randomArgument(&rng) }
      }
      let arguments = given!
      let filter: RequestFilter<Animal>
      do {
        filter = try RequestFilter(format: input, arguments: arguments)
        parsed += 1
      } catch let error as RequestSetError {
        rejected += 1
        codes[error.code.description, default: 0] += 1
        #expect(
          [.invalidFormat, .argumentCount, .typeMismatch].contains(error.code), "\(input.debugDescription): \(error)")
        #expect(
          error.message.contains(" at offset ") || error.message.hasPrefix("The format string has "),
          "\(input.debugDescription): \(error)")
        continue
      }
      do {
        let ids = try set.filter(filter).fetch().map(\.id)
        let excluded = try set.exclude(filter).fetch().map(\.id)
        #expect(ids.count + excluded.count == total, "\(input.debugDescription)")
        #expect(set.filter(filter).count == ids.count, "\(input.debugDescription)")
        evaluated += 1
      } catch let error as RequestSetError {
        // A `$name` in random input is a variable nothing binds.
        #expect(
          [.unknownKey, .typeMismatch, .unboundVariable].contains(error.code), "\(input.debugDescription): \(error)")
      }
    }
    #expect(parsed + rejected == Self.inputCount)
    // The generator reaches both sides of the parser, and evaluation.
    #expect(parsed > Self.inputCount / 5, "parsed \(parsed)")
    #expect(evaluated > Self.inputCount / 5, "evaluated \(evaluated)")
    #expect(codes.count == 3, "\(codes)")
  }
}

/// Random format strings written together with their meaning, checked against a plain
/// evaluation over an array.
@Suite(.ownThreads) struct FormatStringDifferentialTests {
  static let data = Animal.random(count: 200, seed: 0xF0F0)

  /// A random predicate: its format string, its arguments, and a plain-Swift closure.
  struct Generated {
    var format: String
    var arguments: [(any Sendable)?]
    var matches: (Animal) -> Bool
  }

  static func fold(_ s: String) -> String { s.folding(options: .caseInsensitive, locale: nil) }

  static func spell(_ word: String, _ rng: inout SeededRandom) -> String {
    switch Int.random(in: 0..<3, using: &rng) {
    case 0: return word.lowercased()
    case 1: return word
    default: return String(word.enumerated().map { $0.offset % 2 == 0 ? Character($0.element.lowercased()) : $0.element })
    }
  }

  static func leaf(_ rng: inout SeededRandom) -> Generated {
    let names = Animal.namePool
    switch Int.random(in: 0..<10, using: &rng) {
    case 0:
      let v = Int.random(in: 0...20, using: &rng)
      let ops: [(String, (Int, Int) -> Bool)] = [
        ("==", (==)), ("!=", (!=)), ("<", (<)), ("<=", (<=)), (">", (>)), (">=", (>=)), ("=<", (<=)), ("=>", (>=)),
      ]
      let (op, f) = ops.randomElement(using: &rng)!
      return Bool.random(using: &rng)
        ? Generated(format: "age \(op) %d", arguments: [v]) { f($0.age, v) }
        : Generated(format: "%K \(op) \(v)", arguments: ["age"]) { f($0.age, v) }
    case 1:
      let a = Int.random(in: 0...20, using: &rng), b = Int.random(in: 0...20, using: &rng)
      return Generated(format: "age \(spell("BETWEEN", &rng)) {\(a), \(b)}", arguments: []) { $0.age >= a && $0.age <= b }
    case 2:
      let pick = Array(Animal.speciesPool.shuffled(using: &rng).prefix(Int.random(in: 0...3, using: &rng)))
      return Bool.random(using: &rng)
        ? Generated(format: "species \(spell("IN", &rng)) %@", arguments: [pick]) { pick.contains($0.species) }
        : Generated(format: "species IN {\(pick.map { "'\($0)'" }.joined(separator: ", "))}", arguments: []) {
          pick.contains($0.species)
        }
    case 3:
      let name = names.randomElement(using: &rng)!
      let prefix = String(name.prefix(Int.random(in: 0...2, using: &rng)))
      let ci = Bool.random(using: &rng)
      return Generated(format: "name \(spell("BEGINSWITH", &rng))\(ci ? "[c]" : "") %@", arguments: [prefix]) {
        ci ? fold($0.name).hasPrefix(fold(prefix)) : $0.name.hasPrefix(prefix)
      }
    case 4:
      let part = ["o", "b", "ic", "E", "x", "ll"].randomElement(using: &rng)!
      let ci = Bool.random(using: &rng)
      return Generated(format: "nickname \(spell("CONTAINS", &rng))\(ci ? "[c]" : "") '\(part)'", arguments: []) {
        guard let n = $0.nickname else { return false }
        return ci ? fold(n).contains(fold(part)) : n.contains(part)
      }
    case 5:
      let tag = ["farm", "small", "big", "old"].randomElement(using: &rng)!
      switch Int.random(in: 0..<3, using: &rng) {
      case 0: return Generated(format: "ANY tags == %@", arguments: [tag]) { $0.tags.contains(tag) }
      case 1: return Generated(format: "ALL tags != %@", arguments: [tag]) { !$0.tags.contains(tag) }
      default: return Generated(format: "%@ IN tags", arguments: [tag]) { $0.tags.contains(tag) }
      }
    case 6:
      let n = Int.random(in: 0...2, using: &rng)
      return Generated(format: "tags.@count >= \(n)", arguments: []) { $0.tags.count >= n }
    case 7:
      let city = Animal.cityPool.randomElement(using: &rng)!
      let ci = Bool.random(using: &rng)
      return Generated(format: "owner.city ==\(ci ? "[c]" : "") %@", arguments: [city]) {
        guard let c = $0.owner?.city else { return false }
        return ci ? fold(c) == fold(city) : c == city
      }
    case 8:
      let w = Double(Int.random(in: 0...400, using: &rng)) / 4
      return Generated(format: "weight < %f", arguments: [w]) { $0.weight < w }
    default:
      let isNil = Bool.random(using: &rng)
      return Generated(format: "nickname \(isNil ? "==" : "!=") \(spell("nil", &rng))", arguments: []) {
        ($0.nickname == nil) == isNil
      }
    }
  }

  static func predicate(depth: Int, _ rng: inout SeededRandom) -> Generated {
    let roll = Int.random(in: 0..<10, using: &rng)
    if depth < 3 && roll < 3 {
      let parts = (0..<Int.random(in: 2...3, using: &rng)).map { _ in predicate(depth: depth + 1, &rng) }
      let isAnd = Bool.random(using: &rng)
      let joiner = isAnd ? [" AND ", " && ", " and "].randomElement(using: &rng)! : [" OR ", " || ", " or "].randomElement(using: &rng)!
      let tests = parts.map(\.matches)
      return Generated(
        format: "(" + parts.map(\.format).joined(separator: joiner) + ")",
        arguments: parts.flatMap(\.arguments),
        matches: isAnd ? { a in tests.allSatisfy { $0(a) } } : { a in tests.contains { $0(a) } })
    }
    if depth < 3 && roll < 4 {
      let inner = predicate(depth: depth + 1, &rng)
      let not = ["NOT ", "!", "not "].randomElement(using: &rng)!
      return Generated(format: not + "(" + inner.format + ")", arguments: inner.arguments) { !inner.matches($0) }
    }
    return leaf(&rng)
  }

  @Test(arguments: StoreKind.allCases)
  func randomFormatStringsMatchAPlainEvaluation(kind: StoreKind) throws {
    let set = try kind.makeSet(Self.data)
    var rng = SeededRandom(seed: 0xF0_2A_22)
    var nonTrivial = 0
    // 250 seeded predicates per store (600 with `REQUESTSET_SOAK=1`).
    let count = TestScale.pick(quick: 250, soak: 600)
    for _ in 0..<count {
      let g = Self.predicate(depth: 0, &rng)
      let expected = Self.data.filter(g.matches).map(\.id)
      let filter = try RequestFilter<Animal>(format: g.format, arguments: g.arguments)
      #expect(try set.filter(filter).fetch().map(\.id) == expected, "\(g.format) \(g.arguments)")
      if !expected.isEmpty && expected.count < Self.data.count { nonTrivial += 1 }
    }
    #expect(nonTrivial > count / 2)
  }
}
