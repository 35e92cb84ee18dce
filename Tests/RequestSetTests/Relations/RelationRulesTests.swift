import Foundation
import RequestSet
import Testing

/// The rules the Relationships article and docs/FORMAT-STRINGS.md state about keys through
/// relations, each pinned on every store: what a record with no related record sorts as,
/// the limit of relations per key, typed keys through a many-to-many, what `explain()`
/// shows of each step, which values collection operators skip, and what a bare key names
/// inside a SUBQUERY.
@Suite(.ownThreads) struct RelationRulesTests {
  /// The small clinic, plus Odd (no visits) and Neg (one visit of negative cost, no vet).
  static func clinic(_ kind: StoreKind) throws -> RecordGraph {
    let graph = try RelationshipBehaviourTests.smallClinic(kind)
    try graph.insert(contentsOf: [
      Pet(id: 4, name: "Odd", species: "Fish", age: 2, ownerID: nil),
      Pet(id: 5, name: "Neg", species: "Dog", age: 4, ownerID: 2),
    ])
    try graph.insert(Visit(id: 5, petID: 5, vetID: nil, cost: -4, day: 5))
    return graph
  }

  static func ids(_ set: RequestSet<Pet>) throws -> [Int] { try set.fetch().map(\.id) }

  // MARK: Empty collections sort as their filters read them

  /// A collection operator over no related record gives what it gives in a filter: 0 for
  /// `@count`, `@sum` and `@avg`, nil (first ascending) for `@min` and `@max`. Neg's
  /// negative sum puts 0 between it and the others, so nil-first would show.
  @Test(arguments: StoreKind.writable)
  func aPetWithNoVisitsSortsAsItsFiltersReadIt(kind: StoreKind) throws {
    let pets = try Self.clinic(kind).records(Pet.self)
    // Sums: Rex 40, Tom 5, Kit 7, Odd 0 (no visits), Neg -4.
    #expect(try Self.ids(pets.sortBy(Pet.visits.sum(\.cost)).sortBy("id")) == [5, 4, 2, 3, 1])
    #expect(try Self.ids(pets.sortBy("visits.@sum.cost").sortBy("id")) == [5, 4, 2, 3, 1])
    #expect(try Self.ids(pets.filter("visits.@sum.cost == 0")) == [4])
    #expect(try Self.ids(pets.filter(Pet.visits.sum(\.cost) < 1).sortBy("id")) == [4, 5])
    // Averages: Rex 20, Tom 5, Kit 7, Odd 0, Neg -4.
    #expect(try Self.ids(pets.sortBy(Pet.visits.average(\.cost)).sortBy("id")) == [5, 4, 2, 3, 1])
    #expect(try Self.ids(pets.filter("visits.@avg.cost == 0")) == [4])
    // Counts: Odd 0 first.
    #expect(try Self.ids(pets.sortBy(Pet.visits.count).sortBy("id")) == [4, 2, 3, 5, 1])
    // The least cost: Odd has none (nil), first ascending and last descending.
    #expect(try Self.ids(pets.sortBy(Pet.visits.min(\.cost)).sortBy("id")) == [4, 5, 2, 3, 1])
    #expect(
      try Self.ids(pets.sortBy(Pet.visits.min(\.cost), order: .descending).sortBy("id")) == [1, 3, 2, 5, 4])
    #expect(try Self.ids(pets.filter("visits.@min.cost == nil")) == [4])
    // values reads the same.
    #expect(
      try pets.sortBy("id").values("visits.@sum.cost").map { $0["visits.@sum.cost"]! } == [
        .double(40), .double(5), .double(7), .int(0), .double(-4),
      ])
  }

  /// The docs are the contract: the Relationships article and docs/FORMAT-STRINGS.md state
  /// the rules this suite pins (an empty collection sorts as its operator's answer, the
  /// limit of relations, what collection operators skip, what a bare key names inside a
  /// SUBQUERY), and no longer the rules the code never followed.
  @Test func theDocsStateTheseRules() throws {
    func text(_ path: String) throws -> String {
      try String(contentsOf: DocumentationTests.root.appendingPathComponent(path), encoding: .utf8)
        .replacingOccurrences(of: "\n", with: " ")
    }
    let article = try text("Sources/RequestSet/RequestSet.docc/Relationships.md")
    let grammar = try text("docs/FORMAT-STRINGS.md")
    #expect(
      !article.contains("A record with no related record sorts as nil, first in ascending order; a count"))
    #expect(
      article.contains(
        "A collection operator sorts as the value it gives for no related record: 0 for `@count`, `@sum` and `@avg`"
      ))
    #expect(article.contains("A key walks at most 16 relations"))
    #expect(
      article.contains(
        "`@sum`, `@avg`, `@min` and `@max` skip nil values, and `@avg` divides by the values it kept"))
    #expect(article.contains("`vets.@count` counts the vets they reach, so a visit with no vet adds none"))
    #expect(article.contains("`Pet.vets.any.name`"))
    #expect(grammar.contains("**nil elements are skipped** by every collection operator"))
    #expect(grammar.contains("**Inside `SUBQUERY`, a bare key names the record**"))
    #expect(!grammar.contains("inside it `$m` and `SELF` are the element"))
  }

  // MARK: The limit of relations per key

  /// `owner.pets.owner…`: `n` relations, ending at a person when `n` is odd.
  static func chain(_ n: Int) -> String {
    (0..<n).map { $0 % 2 == 0 ? "owner" : "pets" }.joined(separator: ".")
  }

  /// Every form of key that walks more than 16 relations throws `.invalidRelation`, the
  /// keys of conditions computed on each record (SUBQUERY included) as well.
  @Test(arguments: StoreKind.writable)
  func everyFormPastSixteenRelationsThrows(kind: StoreKind) throws {
    let pets = try Self.clinic(kind).records(Pet.self)
    let long = Self.chain(17)  // ends at a person
    let message =
      "walks more than 16 relations from Pet; each is a query. Shorten the path, or query the related type's set directly."
    let forms: [(String, RequestSet<Pet>)] = [
      ("key", pets.filter("\(long).city", value: "Oslo")),
      ("format", pets.filter("ANY \(long).city == 'Oslo'")),
      ("triplet", pets.filter(where: ["any", "\(long).city", "==", "Oslo"])),
      ("sort", pets.sortBy("\(long).city")),
      ("key against key", pets.filter("ANY \(long).city == name")),
      ("arithmetic", pets.filter("ANY \(long).age + 1 > 3")),
      ("collection operator", pets.filter("\(long).pets.@sum.age > 3")),
      ("SUBQUERY collection", pets.filter("SUBQUERY(\(long).pets, $p, $p.age > 1).@count > 0")),
      (
        "SUBQUERY variable",
        pets.filter("SUBQUERY(visits, $v, $v.pet.\(Self.chain(16)).city == 'Oslo').@count > 0")
      ),
      ("SUBQUERY bare key", pets.filter("SUBQUERY(visits, $v, ANY \(long).city == 'Oslo').@count > 0")),
      ("many-to-many", pets.filter("ANY vets.visits.pet.\(Self.chain(14)).city == 'Oslo'")),
      ("nested SUBQUERY", pets.filter(Self.nested(7, innermost: "owner.pets.owner.city == 'Oslo'"))),
    ]
    for (form, set) in forms {
      let error = #expect(throws: RequestSetError.self, "\(form) on \(kind)") { try set.fetch() }
      #expect(error?.code == .invalidRelation, "\(form) on \(kind): \(String(describing: error))")
      #expect(error?.message.hasSuffix(message) == true, "\(form) on \(kind): \(error?.message ?? "")")
    }
    #expect(throws: RequestSetError.self) { try pets.values("\(long).city") }
  }

  /// At the limit, keys run, and a computed condition reads related records as deep as its
  /// keys walk, however few names they repeat (`owner.pets.owner…`).
  @Test(arguments: StoreKind.writable)
  func keysUpToSixteenRelationsRunToTheEnd(kind: StoreKind) throws {
    let pets = try Self.clinic(kind).records(Pet.self)
    // Ann (Oslo) owns Rex and Tom, Bo (Rome) owns Neg; walking from a pet to its owner's
    // pets and back stays with that owner.
    #expect(try Self.ids(pets.filter("ANY \(Self.chain(16)).name == 'Neg'")) == [5])
    #expect(try Self.ids(pets.filter(Self.nested(7)).sortBy("id")) == [1, 2])
    // Eight relations through two names: read to the end, not cut at the third.
    #expect(try Self.ids(pets.filter(Self.nested(3)).sortBy("id")) == [1, 2])
  }

  /// SUBQUERYs nested `levels` deep, each over its variable's owner's pets, the innermost
  /// counting its variable's owner's pets: `2 × levels + 2` relations, true for the pets
  /// of an owner of two pets (Rex and Tom).
  static func nested(_ levels: Int, innermost: String = "owner.pets.@count == 2") -> String {
    var text = "$p\(levels).\(innermost)"
    for level in stride(from: levels, through: 1, by: -1) {
      let collection = level == 1 ? "owner.pets" : "$p\(level - 1).owner.pets"
      text = "SUBQUERY(\(collection), $p\(level), \(text)).@count == 2"
    }
    return text
  }

  // MARK: Typed keys through a many-to-many

  /// `Pet.vets.any.name` builds the condition `ANY vets.name` builds, and so does every
  /// typed key of a to-many.
  @Test(arguments: StoreKind.writable)
  func typedKeysReachAManyToMany(kind: StoreKind) throws {
    let graph = try Self.clinic(kind)
    try graph.insert(Visit(id: 6, petID: 2, vetID: 1, cost: 2, day: 6))
    let pets = graph.records(Pet.self)
    // Vets: Rex [Vera, Max], Tom [Max, Vera], Kit [] (a visit with no vet), Odd [], Neg [].
    let pairs: [(RequestFilter<Pet>, String, [Int])] = [
      (Pet.vets.any.name == "Vera", "ANY vets.name == 'Vera'", [1, 2]),
      (Pet.vets.all.name != "Max", "ALL vets.name != 'Max'", [3, 4, 5]),
      (Pet.vets.none.name == "Vera", "NONE vets.name == 'Vera'", [3, 4, 5]),
      (Pet.vets.any.clinic == "North", "ANY vets.clinic == 'North'", [1, 2]),
      (Pet.vets.count == 2, "vets.@count == 2", [1, 2]),
      (Pet.vets.isEmpty, "vets.@count == 0", [3, 4, 5]),
      (Pet.vets.exists, "vets.@count > 0", [1, 2]),
      (Pet.vets.sum(\.id) == 3, "vets.@sum.id == 3", [1, 2]),
      (Pet.vets.average(\.id) == 0, "vets.@avg.id == 0", [3, 4, 5]),
      (Pet.vets.min(\.name) == "Max", "vets.@min.name == 'Max'", [1, 2]),
      (Pet.vets.max(\.id) == 2, "vets.@max.id == 2", [1, 2]),
    ]
    for (typed, format, expected) in pairs {
      #expect(try Self.ids(pets.filter(typed).sortBy("id")) == expected, "\(format) typed on \(kind)")
      #expect(try Self.ids(pets.filter(format).sortBy("id")) == expected, "\(format) on \(kind)")
    }
    #expect(Pet.vets.any.name.key == "vets.name")
    #expect(Pet.vets.count.key == "vets.@count")
    #expect(Pet.vets.sum(\.id).key == "vets.@sum.id")
    let typedSort = try Self.ids(pets.sortBy(Pet.vets.count, order: .descending).sortBy("id"))
    #expect(typedSort == [1, 2, 3, 4, 5])
    #expect(try Self.ids(pets.sortBy("vets.@count", order: .descending).sortBy("id")) == typedSort)
  }

  // MARK: explain shows every step

  /// `ANY vets.name` runs through the visits, and the visits' query through their vet:
  /// each step has its line, indented below the step that ran it.
  @Test(arguments: StoreKind.writable)
  func explainShowsEveryStepOfAManyToMany(kind: StoreKind) throws {
    let graph = try Self.clinic(kind)
    let visits = "\(type(of: graph.store(for: Visit.self)!))"
    let vets = "\(type(of: graph.store(for: Vet.self)!))"
    let text = graph.records(Pet.self).filter("ANY vets.name == 'Vera'").explain()
    let relations = text.split(separator: "\n").filter {
      $0.trimmingCharacters(in: .whitespaces).hasPrefix("relation ")
    }
    // Stores in one database (PostgreSQL's here) run the visits' step as a subquery in the
    // pets' statement: its line and its own steps' follow the first line, not below it.
    func location<R: Record>(_ type: R.Type) -> StoreLocation? {
      (graph.store(for: type) as? any QueryPushdownStore)?.location
    }
    if ClinicStores.sharesDatabase(graph), let v = location(Visit.self), let w = location(Vet.self) {
      #expect(
        relations.joined(separator: "\n") == """
          relation Pet.vets (to-many through visits.vet → Vet): ANY vets.name == "Vera" runs as ANY visits.vet.name == "Vera", over the visits that reach a vet
          relation Pet.visits (to-many → Visit): in the statement, as a subquery on \(v.table): id IN (SELECT petID FROM \(v.table) WHERE vetID IN (SELECT id FROM \(w.table) WHERE id != nil) AND vetID IN (SELECT id FROM \(w.table) WHERE name == "Vera"))
            relation Visit.vet (to-one → Vet): in the statement, as a subquery on \(w.table): vetID IN (SELECT id FROM \(w.table) WHERE id != nil)
            relation Visit.vet (to-one → Vet): in the statement, as a subquery on \(w.table): vetID IN (SELECT id FROM \(w.table) WHERE name == "Vera")
          """, "\(text)")
    } else {
      #expect(
        relations.joined(separator: "\n") == """
          relation Pet.vets (to-many through visits.vet → Vet): ANY vets.name == "Vera" runs as ANY visits.vet.name == "Vera", over the visits that reach a vet
            relation Pet.visits (to-many → Visit): semi-join, 1 query on \(visits) for vet.id != nil AND vet.name == "Vera" → id IN {1 ids}
              relation Visit.vet (to-one → Vet): semi-join, 1 query on \(vets) for vet.id != nil → vetID IN {2 ids}
              relation Visit.vet (to-one → Vet): semi-join, 1 query on \(vets) for vet.name == "Vera" → vetID IN {1 ids}
          """, "\(text)")
    }
    let count = graph.records(Pet.self).filter("vets.@count == 2").explain()
    #expect(
      count.contains(
        "relation Pet.vets (to-many through visits.vet → Vet): 1 query on \(visits) for vets.@count"),
      "\(count)")
    #expect(
      count.contains("\n  relation Visit.vet (to-one → Vet): read vet.id, 1 query on \(vets)"), "\(count)")
  }

  // MARK: What collection operators skip

  /// `vets.@count` counts the vets the visits reach (a visit with no vet adds none, a vet
  /// seen twice counts twice); `@avg`, `@sum`, `@min` and `@max` skip nil values, and
  /// `@avg` divides by the values it kept.
  @Test(arguments: StoreKind.writable)
  func collectionOperatorsSkipWhatIsMissing(kind: StoreKind) throws {
    let graph = try Self.clinic(kind)
    try graph.insert(contentsOf: [
      Visit(id: 6, petID: 4, vetID: 1, cost: 1, day: 1), Visit(id: 7, petID: 4, vetID: nil, cost: 2, day: 2),
      Visit(id: 8, petID: 4, vetID: 1, cost: 3, day: 3),
    ])
    let pets = graph.records(Pet.self).sortBy("id")
    func column(_ key: String) throws -> [FieldValue] { try pets.values(key).map { $0[key]! } }
    // Visits' vets: Rex [1, 2], Tom [2], Kit [nil], Odd [1, nil, 1], Neg [nil].
    #expect(try column("visits.@count") == [2, 1, 1, 3, 1].map { .int($0) })
    #expect(try column("vets.@count") == [2, 1, 0, 2, 0].map { .int($0) })
    #expect(try column("visits.@avg.vetID") == [1.5, 2, 0, 1, 0].map { .double($0) })
    #expect(try column("visits.@sum.vetID") == [3, 2, 0, 2, 0].map { .int($0) })
    #expect(try column("visits.@min.vetID") == [.int(1), .int(2), .null, .int(1), .null])
    #expect(try Self.ids(pets.filter("visits.@avg.vetID == 1")) == [4])
    #expect(try Self.ids(pets.filter("vets.@count == 2")) == [1, 4])
    let byAverage = graph.records(Pet.self).sortBy("visits.@avg.vetID", order: .descending).sortBy("id")
    #expect(try Self.ids(byAverage) == [2, 1, 4, 3, 5])
  }

  // MARK: SUBQUERY: a bare key names the record

  /// Inside `SUBQUERY(visits, $v, …)`, `$v.cost` is the visit's and `age`, `SELF.age`,
  /// `species` and `owner.age` are the pet's: "visits that cost more than the pet's age
  /// times five".
  @Test(arguments: StoreKind.writable)
  func aBareKeyInsideASubqueryIsThePets(kind: StoreKind) throws {
    let pets = try Self.clinic(kind).records(Pet.self)
    // Rex (3): 10, 30; Tom (5): 5; Kit (1): 7; Odd (2): none; Neg (4): -4.
    #expect(
      try Self.ids(pets.filter("SUBQUERY(visits, $v, $v.cost > age * 5).@count == 1").sortBy("id")) == [1, 3])
    #expect(
      try Self.ids(pets.filter("SUBQUERY(visits, $v, $v.cost > SELF.age * 5).@count == 1").sortBy("id")) == [
        1, 3,
      ])
    #expect(
      try Self.ids(pets.filter("SUBQUERY(visits, $v, $v.vet.name == 'Max' AND species == 'Cat').@count > 0"))
        == [2])
    // A bare key walks the pet's relations: Rex and Tom's owner is 40, Neg's has no age.
    #expect(
      try Self.ids(pets.filter("SUBQUERY(visits, $v, $v.day < owner.age).@count > 0").sortBy("id")) == [1, 2])
  }
}
