import Synchronization
import Testing

@testable import RequestSet

/// Counting a plain filtered scan keeps its matches as one bit per record (see
/// `_Executor.firstStageMatchBits`): no list of positions, and a later read tests no
/// record again.
@Suite(.ownThreads) struct CountBitsTests {
  static let animals = Animal.random(count: 700, seed: 0xB175)

  @Test(arguments: StoreKind.allCases)
  func countingAPlainScanKeepsBitsAndReadsTestNothingAgain(kind: StoreKind) throws {
    let tests = Atomic<Int>(0)
    let set = try kind.makeSet(Self.animals).filter {
      tests.add(1, ordering: .relaxed)
      return $0.age > 3 && $0.species != "Dog"
    }
    let expected = Self.animals.filter { $0.age > 3 && $0.species != "Dog" }.map(\.id)
    #expect(expected.count > 100 && expected.count < Self.animals.count)
    #expect(set.count == expected.count)
    #expect(tests.load(ordering: .relaxed) == Self.animals.count)
    // The count kept bits, not an evaluated result (a pushdown store's evaluation runs the
    // closure over the records its reader returned, and keeps that result).
    if !kind.pushesDown {
      #expect(set._cache.peekEvaluation() == nil)
      #expect(set._cache.hasRun())
    }
    #expect(set.map(\.id) == expected)
    #expect(set.last?.id == expected.last)
    #expect(tests.load(ordering: .relaxed) == Self.animals.count)
  }

  @Test(arguments: StoreKind.allCases)
  func typedAndStringKeyCountsMatchTheArray(kind: StoreKind) throws {
    let all = try kind.makeSet(Self.animals)
    let typed = all.filter(\.age > 4 && \.species == "Cow")
    let keyed = all.filter("age", value: 5)
    #expect(typed.count == Self.animals.filter { $0.age > 4 && $0.species == "Cow" }.count)
    #expect(keyed.count == Self.animals.filter { $0.age == 5 }.count)
    #expect(typed.map(\.id) == Self.animals.filter { $0.age > 4 && $0.species == "Cow" }.map(\.id))
    #expect(keyed.map(\.id) == Self.animals.filter { $0.age == 5 }.map(\.id))
    // With a window, a sort or an id condition the count is not a plain scan.
    #expect(all.filter(\.age > 4).limit(3).count == 3)
    #expect(all.filter(\.id == 9).count == 1)
  }

  /// Deleted records leave slots that are not live: whole words of them, words with some,
  /// and words with none.
  @Test(arguments: StoreKind.writable)
  func countingSkipsDeletedRecords(kind: StoreKind) throws {
    let store = try kind.makeStore()
    try store.insert(contentsOf: Self.animals)
    let gone = Self.animals.filter { ($0.id >= 64 && $0.id < 192) || $0.id % 7 == 0 }.map(\.id)
    for id in gone { _ = try store.delete(id: id) }
    let left = Self.animals.filter { !gone.contains($0.id) }
    let set = RequestSet(store).filter { $0.age > 3 }
    #expect(set.count == left.filter { $0.age > 3 }.count)
    #expect(set.map(\.id) == left.filter { $0.age > 3 }.map(\.id))
    #expect(RequestSet(store).filter("age", value: 5).count == left.filter { $0.age == 5 }.count)
  }

  @Test func bitsTurnBackIntoTheSlotsTheyHold() {
    let bits: [UInt64] = [0b1011, 0, 1 << 63, 1]
    #expect(_Executor.slots(fromBits: bits, count: 5) == [0, 1, 3, 191, 192])
    #expect(_Executor.slots(fromBits: [], count: 0) == [])
  }
}

/// A count of key-path comparisons on stored properties fills its bits a word at a time in
/// one specialized loop per condition (see `_fillWords`), each later operand of an AND
/// testing only what the earlier ones kept. It must answer as the array does: with deleted
/// records, with record counts that are no multiple of 64, and for every operator.
@Suite(.ownThreads) struct WordFillTests {
  @Test(arguments: StoreKind.allCases)
  func countsOfKeyPathComparisonsFilledWordByWordMatchTheArray(kind: StoreKind) throws {
    var rng = SeededRandom(seed: 0xF111)
    for size in [0, 1, 63, 64, 65, 129, 700] {
      var records = Animal.random(count: size, seed: UInt64(size) &+ 9)
      let set: RequestSet<Animal>
      if kind == .array {
        set = RequestSet(records)
      } else {
        let store = try kind.makeStore()
        try store.insert(contentsOf: records)
        // Deleted records leave dead slots the fill must not count.
        for record in records where record.id % 5 == 2 { #expect(try store.delete(id: record.id)) }
        records.removeAll { $0.id % 5 == 2 }
        set = RequestSet(store)
      }
      for _ in 0..<12 {
        let age = Int(rng.next() % 25)
        let weight = Double(rng.next() % 40)
        let species = ["Cow", "Dog", "Cat", "Eel"][Int(rng.next() % 4)]
        let cases: [(String, RequestFilter<Animal>, (Animal) -> Bool)] = [
          ("age == \(age)", \.age == age, { $0.age == age }),
          ("age != \(age)", \.age != age, { $0.age != age }),
          ("age < \(age)", \.age < age, { $0.age < age }),
          ("age <= \(age)", \.age <= age, { $0.age <= age }),
          ("weight > \(weight)", \.weight > weight, { $0.weight > weight }),
          ("weight >= \(weight)", \.weight >= weight, { $0.weight >= weight }),
          ("age > \(age) && species == \(species)", \.age > age && \.species == species,
           { $0.age > age && $0.species == species }),
          ("age >= \(age) && weight < \(weight) && species != \(species)",
           \.age >= age && \.weight < weight && \.species != species,
           { $0.age >= age && $0.weight < weight && $0.species != species }),
          // String keys: fields the records hold as Int or String, filled the same way.
          ("format age > \(age) AND species == \(species)",
           try RequestFilter(format: "age > %d AND species == %@", arguments: [age, species]),
           { $0.age > age && $0.species == species }),
          ("format species != \(species)", try RequestFilter(format: "species != %@", arguments: [species]),
           { $0.species != species }),
          ("format age <= \(age) && weight < \(weight)",
           try RequestFilter(format: "age <= %d", arguments: [age]) && \.weight < weight,
           { $0.age <= age && $0.weight < weight }),
        ]
        for (name, filter, test) in cases {
          let expected = records.filter(test)
          let counted = set.filter(filter)
          #expect(counted.count == expected.count, "\(kind) \(size) records: \(name)")
          #expect(counted.map(\.id) == expected.map(\.id), "\(kind) \(size) records: \(name)")
        }
      }
    }
  }
}
