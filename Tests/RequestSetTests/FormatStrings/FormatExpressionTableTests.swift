import Foundation
import Testing
@testable import RequestSet

/// One row: a format string with its arguments and variables, and a plain Swift closure
/// that says which teams it selects (written from NSPredicate's documented meaning, with
/// no RequestSet code).
struct ExpressionRow: CustomStringConvertible, @unchecked Sendable {
  // @unchecked: the arguments are literals of value types, never mutated after the table is built.
  var format: String
  var arguments: [(any Sendable)?] = []
  var variables: [String: (any Sendable)?] = [:]
  var oracle: @Sendable (Team) -> Bool

  var description: String { "\(format) \(arguments.map { String(describing: $0) }) \(variables.keys.sorted())" }
}

private func mean(_ xs: [Double]) -> Double? { xs.isEmpty ? nil : xs.reduce(0, +) / Double(xs.count) }
private func doubles(_ xs: [Int]) -> [Double] { xs.map(Double.init) }
private func since(_ d: Date) -> Double { d.timeIntervalSinceReferenceDate }

/// The expression forms of the format grammar (issue 15), on every backend.
@Suite(.ownThreads) struct FormatExpressionTableTests {
  static let rows: [ExpressionRow] = [
    // Collection operators on an array of numbers; KVC's @avg of an empty array is 0.
    ExpressionRow(format: "scores.@sum > 10") { $0.scores.reduce(0, +) > 10 },
    ExpressionRow(format: "scores.@avg >= 5") { (mean(doubles($0.scores)) ?? 0) >= 5 },
    ExpressionRow(format: "scores.@avg == 0") { (mean(doubles($0.scores)) ?? 0) == 0 },
    ExpressionRow(format: "scores.@min == 1") { $0.scores.min() == 1 },
    ExpressionRow(format: "scores.@max == 10") { $0.scores.max() == 10 },
    ExpressionRow(format: "scores.@min == nil") { $0.scores.isEmpty },
    ExpressionRow(format: "scores.@count == 0") { $0.scores.isEmpty },
    ExpressionRow(format: "scores[SIZE] == 2") { $0.scores.count == 2 },
    ExpressionRow(format: "members.@count >= 2") { $0.members.count >= 2 },
    // Functions, in the FUNCTION-free form.
    ExpressionRow(format: "sum:(scores) == 15") { $0.scores.reduce(0, +) == 15 },
    ExpressionRow(format: "count:(scores) == 3") { $0.scores.count == 3 },
    ExpressionRow(format: "min:(scores) < 3") { ($0.scores.min() ?? .max) < 3 },
    ExpressionRow(format: "max:(scores) >= 7") { ($0.scores.max() ?? .min) >= 7 },
    ExpressionRow(format: "average:(scores) > 4") { (mean(doubles($0.scores)) ?? -.infinity) > 4 },
    ExpressionRow(format: "average:(scores) == nil") { $0.scores.isEmpty },
    ExpressionRow(format: "median:(scores) == 5") { t in
      let s = t.scores.sorted()
      return !s.isEmpty && (s.count % 2 == 1 ? Double(s[s.count / 2]) : Double(s[s.count / 2 - 1] + s[s.count / 2]) / 2) == 5
    },
    ExpressionRow(format: "median:(scores) == 3") { t in
      let s = t.scores.sorted()
      return !s.isEmpty && (s.count % 2 == 1 ? Double(s[s.count / 2]) : Double(s[s.count / 2 - 1] + s[s.count / 2]) / 2) == 3
    },
    ExpressionRow(format: "10 IN mode:(scores)") { t in
      let top = t.scores.map { x in t.scores.filter { $0 == x }.count }.max() ?? 0
      return t.scores.filter { $0 == 10 }.count == top && top > 0
    },
    ExpressionRow(format: "mode:(scores) == {2, 4}") { $0.scores == [2, 4] },
    ExpressionRow(format: "mode:(scores).@count == 3") { Set($0.scores).count == 3 },
    ExpressionRow(format: "stddev:(scores) == 1") { t in
      guard let m = mean(doubles(t.scores)) else { return false }
      return (doubles(t.scores).map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(t.scores.count)).squareRoot() == 1
    },
    ExpressionRow(format: "sqrt:(scores.@sum) > 4") { Double($0.scores.reduce(0, +)).squareRoot() > 4 },
    ExpressionRow(format: "raise:toPower:(scores.@count, 2) == 9") { $0.scores.count * $0.scores.count == 9 },
    ExpressionRow(format: "log:(100) == 2 AND exp:(0) == 1 AND ln:(1) == 0 AND name == 'Ants'") { $0.name == "Ants" },
    ExpressionRow(format: "floor:(ratings.@avg) == 4") { (mean($0.ratings) ?? 0).rounded(.down) == 4 },
    ExpressionRow(format: "ceiling:(ratings.@avg) == 5") { (mean($0.ratings) ?? 0).rounded(.up) == 5 },
    ExpressionRow(format: "trunc:(ratings[FIRST]) == 4") { $0.ratings.first.map { $0.rounded(.towardZero) } == 4 },
    ExpressionRow(format: "abs:(end - start) > 1000") { abs(since($0.end) - since($0.start)) > 1000 },
    ExpressionRow(format: "uppercase:(name) == 'ANTS'") { $0.name.uppercased() == "ANTS" },
    ExpressionRow(format: "lowercase:(motto) == 'woof'") { $0.motto.lowercased() == "woof" },
    ExpressionRow(format: "modulus:by:(scores.@sum, 4) == 3") { $0.scores.reduce(0, +) % 4 == 3 },
    ExpressionRow(format: "modulus:by:(scores.@sum, 0) == nil") { _ in true },
    ExpressionRow(format: "start < now() AND now() > end") { _ in true },
    // Key-to-key comparisons, with arithmetic on either side.
    ExpressionRow(format: "end < start") { $0.end < $0.start },
    ExpressionRow(format: "start == end") { $0.start == $0.end },
    ExpressionRow(format: "end - start > 3600") { since($0.end) - since($0.start) > 3600 },
    ExpressionRow(format: "end > start + 60") { since($0.end) > since($0.start) + 60 },
    ExpressionRow(format: "lead.age > members.@avg.age") { t in
      guard let lead = t.lead else { return false }
      return Double(lead.age) > (mean(t.members.map { Double($0.age) }) ?? 0)
    },
    ExpressionRow(format: "scores.@sum + scores.@count * 2 == 21") { $0.scores.reduce(0, +) + $0.scores.count * 2 == 21 },
    ExpressionRow(format: "scores.@sum / 2 == 7.5") { Double($0.scores.reduce(0, +)) / 2 == 7.5 },
    ExpressionRow(format: "-scores.@sum < -20") { -$0.scores.reduce(0, +) < -20 },
    ExpressionRow(format: "2 ** scores.@count == 8") { $0.scores.count == 3 },
    ExpressionRow(format: "(scores.@count + 1) * 2 == 6") { ($0.scores.count + 1) * 2 == 6 },
    ExpressionRow(format: "scores.@count * 2 - 1 == -1") { $0.scores.count * 2 - 1 == -1 },
    ExpressionRow(format: "id * 100 < end - start") { Double($0.id * 100) < since($0.end) - since($0.start) },
    // Constants fold before planning.
    ExpressionRow(format: "id > 1 + 1") { $0.id > 2 },
    ExpressionRow(format: "id == 10 / 4 + 0.5") { $0.id == 3 },
    ExpressionRow(format: "id == 2 ** 2") { $0.id == 4 },
    ExpressionRow(format: "id IN {1 + 1, 2 * 2}") { [2, 4].contains($0.id) },
    ExpressionRow(format: "id BETWEEN {-1 + 2, 6 / 3}") { (1...2).contains($0.id) },
    // Subscripts.
    ExpressionRow(format: "scores[FIRST] == 3") { $0.scores.first == 3 },
    ExpressionRow(format: "scores[LAST] == 1") { $0.scores.last == 1 },
    ExpressionRow(format: "scores[1] == 4") { $0.scores.count > 1 && $0.scores[1] == 4 },
    ExpressionRow(format: "scores[5] == nil") { $0.scores.count <= 5 },
    ExpressionRow(format: "scores[0] == nil") { $0.scores.isEmpty },
    ExpressionRow(format: "scores[%d] == %d", arguments: [2, 7]) { $0.scores.count > 2 && $0.scores[2] == 7 },
    ExpressionRow(format: "lead['name'] == 'Ann'") { $0.lead?.name == "Ann" },
    ExpressionRow(format: "members[FIRST].name == 'Ann'") { $0.members.first?.name == "Ann" },
    ExpressionRow(format: "members[LAST].age > 50") { ($0.members.last?.age ?? 0) > 50 },
    // Key paths through arrays of structs read every element's value.
    ExpressionRow(format: "members.name CONTAINS 'Cy'") { $0.members.map(\.name).contains("Cy") },
    ExpressionRow(format: "ANY members.age > 50") { $0.members.contains { $0.age > 50 } },
    ExpressionRow(format: "ALL members.age >= 20") { $0.members.allSatisfy { $0.age >= 20 } },
    ExpressionRow(format: "NONE members.name BEGINSWITH 'B'") { !$0.members.contains { $0.name.hasPrefix("B") } },
    ExpressionRow(format: "members.@avg.age > 40") { (mean($0.members.map { Double($0.age) }) ?? 0) > 40 },
    ExpressionRow(format: "members.@max.age == 52") { $0.members.map(\.age).max() == 52 },
    ExpressionRow(format: "members.@sum.age == 19") { $0.members.map(\.age).reduce(0, +) == 19 },
    // SUBQUERY over arrays of structs and of scalars; inside it `$m` is the element, while a
    // bare key and SELF name the team (the correlated reading GNUstep's NSPredicate tests assert).
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age > 40).@count >= 1") { $0.members.contains { $0.age > 40 } },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age > 40 AND $m.name BEGINSWITH 'E').@count == 1") {
      $0.members.filter { $0.age > 40 && $0.name.hasPrefix("E") }.count == 1
    },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age < 30).@count > 0") { $0.members.contains { $0.age < 30 } },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age > id * 10)[SIZE] >= 2") { t in
      t.members.filter { $0.age > t.id * 10 }.count >= 2
    },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age < SELF.lead.age).@count > 0") { t in
      t.members.contains { m in t.lead.map { m.age < $0.age } ?? false }
    },
    ExpressionRow(format: "SUBQUERY(scores, $s, $s > 4).@count == 2") { $0.scores.filter { $0 > 4 }.count == 2 },
    ExpressionRow(format: "SUBQUERY(scores, $s, $s > scores.@avg).@count == 1") { t in
      let avg = Double(t.scores.reduce(0, +)) / Double(max(t.scores.count, 1))
      return t.scores.filter { Double($0) > avg }.count == 1
    },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age > $limit).@count == 2", variables: ["limit": 30]) {
      $0.members.filter { $0.age > 30 }.count == 2
    },
    // The SUBQUERY's own $m is never substituted; the $m outside it is.
    ExpressionRow(format: "SUBQUERY(members, $m, $m.age > 40).@count >= $m", variables: ["m": 1]) {
      $0.members.filter { $0.age > 40 }.count >= 1
    },
    // An inner SUBQUERY's $s shadows the outer one: {1, 2, 3} always has one element > 2.
    ExpressionRow(format: "SUBQUERY(scores, $s, SUBQUERY({1, 2, 3}, $s, $s > 2).@count == 1).@count == scores.@count") {
      _ in true
    },
    // Inside a SUBQUERY a bare key compared with a value is the team's too.
    ExpressionRow(format: "SUBQUERY(members, $m, name == 'Cats').@count == 3") { t in
      t.name == "Cats" && t.members.count == 3
    },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.name == lead.name).@count == 1") { t in
      t.members.filter { $0.name == t.lead?.name }.count == 1
    },
    ExpressionRow(format: "SUBQUERY(members, $m, $m.name IN %@).@count == 1", arguments: [["Ann", "Fay"]]) {
      $0.members.filter { ["Ann", "Fay"].contains($0.name) }.count == 1
    },
    // SELF: the record.
    ExpressionRow(format: "SELF.name == 'Ants'") { $0.name == "Ants" },
    ExpressionRow(format: "SELF == %@", arguments: [Team.league[3]]) { $0 == Team.league[3] },
    ExpressionRow(format: "SELF != %@", arguments: [Team.league[0]]) { $0 != Team.league[0] },
    ExpressionRow(format: "%@ IN SELF.scores", arguments: [10]) { $0.scores.contains(10) },
    ExpressionRow(format: "ANY SELF.scores > 9") { $0.scores.contains { $0 > 9 } },
    // MATCHES: "." matches a line break, ^ and $ match at lines, the match covers the text.
    ExpressionRow(format: "motto MATCHES 'a.b'") { $0.motto == "a\nb" },
    ExpressionRow(format: "motto MATCHES '.*^b$'") { $0.motto.hasSuffix("\nb") },
    ExpressionRow(format: "motto MATCHES '^a$.*'") { $0.motto.hasPrefix("a\n") },
    ExpressionRow(format: "motto MATCHES '^b$'") { $0.motto == "b" },
    ExpressionRow(format: "motto MATCHES 'x$.*^z'") { $0.motto == "x\ny\nz" },
    // Variables, bound with substituting(_:).
    ExpressionRow(format: "id > $min", variables: ["min": 2]) { $0.id > 2 },
    ExpressionRow(format: "name BEGINSWITH[c] $p", variables: ["p": "a"]) { $0.name.lowercased().hasPrefix("a") },
    ExpressionRow(format: "$low < scores.@sum AND scores.@sum < $high", variables: ["low": 5, "high": 20]) {
      (6...19).contains($0.scores.reduce(0, +))
    },
  ]

  @Test(arguments: StoreKind.allCases)
  func everyRowSelectsWhatItsClosureSelects(kind: StoreKind) throws {
    let set = try kind.makeSet(teams: Team.league)
    for row in Self.rows {
      let expected = Team.league.filter(row.oracle).map(\.id)
      let filter = try RequestFilter<Team>(format: row.format, arguments: row.arguments).substituting(row.variables)
      #expect(try set.filter(filter).fetch().map(\.id) == expected, "\(row) on \(kind)")
      #expect(set.filter(filter).count == expected.count, "\(row) on \(kind), count")
      #expect(
        try set.exclude(filter).fetch().map(\.id) == Team.league.map(\.id).filter { !expected.contains($0) },
        "NOT \(row) on \(kind)")
    }
  }

  /// The table must select a real spread, or it proves little.
  @Test func theRowsAreNotTrivial() {
    let mixed = Self.rows.filter { row in
      let n = Team.league.filter(row.oracle).count
      return n > 0 && n < Team.league.count
    }
    #expect(mixed.count > Self.rows.count * 3 / 4)
    #expect(Set(Self.rows.map(\.description)).count == Self.rows.count, "no duplicate rows")
  }

  @Test func variablesPassThroughFilter() throws {
    let set = RequestSet(Team.league)
    #expect(try set.filter("id > $min AND id < %d", 4, variables: ["min": 1]).fetch().map(\.id) == [2, 3])
  }
}
