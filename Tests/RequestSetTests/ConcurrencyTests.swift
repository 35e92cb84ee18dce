import Foundation
import Testing
@testable import RequestSet

@Suite(.ownThreads) struct ConcurrencyTests {
  /// Writers and readers at once: every snapshot a reader sees is internally consistent
  /// (count, iteration and fetch agree), and the final state holds every write. Four
  /// writers of 60 records each (250 with `REQUESTSET_SOAK=1`).
  @Test(arguments: StoreKind.writable)
  func concurrentReadersAndWriters(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    let writers = 4, perWriter = TestScale.pick(quick: 60, soak: 250)
    await withThrowingTaskGroup(of: Void.self) { group in
      for w in 0..<writers {
        group.addTask {
          for i in 0..<perWriter {
            let id = w * perWriter + i
            try store.insert(Animal(id: id, name: "n\(id)", species: w % 2 == 0 ? "Cow" : "Dog", age: i % 20))
            if i % 10 == 0 { try store.save(Animal(id: id, name: "s\(id)", species: "Cow", age: 99)) }
          }
        }
      }
      for _ in 0..<4 {
        group.addTask {
          for _ in 0..<50 {
            let set = RequestSet(store).filter("species", value: "Cow").sortBy(\.id)
            let n = set.count
            let listed = set.map(\.id)
            let fetched = try set.fetch().map(\.id)
            #expect(listed.count == n && fetched == listed)
            #expect(listed == listed.sorted())
            await Task.yield()
          }
        }
      }
    }
    let all = RequestSet(store)
    #expect(all.count == writers * perWriter)
    #expect(Set(all.map(\.id)) == Set(0..<(writers * perWriter)))
    #expect(all.filter(\.age == 99).count == writers * (perWriter / 10))
  }

  /// A snapshot read on one thread while another appends keeps the records it was taken
  /// with: it shares the store's arrays until the store writes again, and the writer then
  /// copies them, or appends in place once every reader has let go. Each reader evaluates a
  /// set, reads it whole, pauses, evaluates the next; the first set, evaluated before any of the
  /// writes, is read again at the end. (Under ThreadSanitizer this is the pattern that
  /// `.ci/tsan-suppressions.txt` explains.)
  @Test(arguments: StoreKind.writable)
  func snapshotsReadWhileAWriterAppendsKeepTheirRecords(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    let total = TestScale.pick(quick: 300, soak: 1_500)
    try store.insert(Animal(id: 0, name: "n0", species: "Cow", age: 0))
    let first = RequestSet(store)
    #expect(first.map(\.id) == [0])  // evaluated: the set keeps this snapshot from here on
    // Detached: the test's own thread would run the writer and readers one after another.
    let writer = Task.detached {
      for id in 1..<total { try store.insert(Animal(id: id, name: "n\(id)", species: "Cow", age: id % 20)) }
    }
    let readers = (0..<2).map { _ in
      Task.detached {
        var seen = 0
        while seen < total {
          try Task.checkCancellation()
          let ids = try RequestSet(store).fetch().map(\.id)
          #expect(ids == Array(0..<ids.count), "a snapshot holds a prefix of the writes, in order")
          #expect(ids.count >= seen, "a later snapshot never holds fewer records")
          seen = ids.count
          // A pause with the snapshot let go and the store unlocked, as an app's reader
          // has between reads: the writer appends meanwhile, in place.
          try await Task.sleep(for: .microseconds(200))
        }
      }
    }
    do {
      try await writer.value
    } catch {
      for reader in readers { reader.cancel() }
      throw error
    }
    for reader in readers { try await reader.value }
    #expect(first.map(\.id) == [0] && first.count == 1)
    #expect(RequestSet(store).count == total)
  }

  @Test func requestSetsAndStoresAreSendable() async throws {
    let store = try MemoryStore(Animal.zoo)
    let set = RequestSet(store).filter(\.age > 3)
    let counted = await Task.detached { set.count }.value
    #expect(counted == 4)
  }
}

@Suite(.ownThreads) struct ExplainTests {
  @Test func thePlanTextIsStable() {
    let store = MemoryStore<Animal>()
    let plan = RequestSet(store)
      .filter([("species", "Cow"), ("species", "Dog")], mode: .or)
      .filter(\.age > 3)
      .exclude("name", value: "Rex")
      .sortBy("name", collation: .caseInsensitive)
      .sortBy(\.age, order: .descending)
      .offset(10)
      .limit(3)
      .explain()
    #expect(
      plan == """
        RequestSet<Animal> over MemoryStore<Animal>
        stage 1: scan all records (~0 records)
          filter: (species == "Cow" OR species == "Dog") AND \\Animal.age > 3 AND NOT name == "Rex"
          sort: name ASC [caseInsensitive], \\Animal.age DESC (top-k heap, k = 13)
          window: offset 10, limit 3
        """)
    #expect(
      RequestSet(Animal.zoo).filter(#Predicate<Animal> { $0.age > 1 }).filter { _ in true }.sortBy("age").explain()
        == """
        RequestSet<Animal> over Array<Animal>
        stage 1: scan all records (~6 records)
          filter: #Predicate<Animal>(age > 1) AND { closure }
          sort: age ASC (stable sort)
        """)
  }
}
