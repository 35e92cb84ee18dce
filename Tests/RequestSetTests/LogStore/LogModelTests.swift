import Foundation
import Testing

@testable import RequestSet

/// Random inserts, saves, deletes, batches, changes through `apply`, reopens and
/// compactions against a Dictionary (contents) and a MemoryStore (store order).
@Suite(.ownThreads) struct LogModelTests {
  @Test(arguments: [LogDurability.flush, .fsync])
  func randomOperationsMatchTheModel(durability: LogDurability) throws {
    let seed = testSeed("randomOperationsMatchTheModel(\(durability))")
    var rng = SeededRandom(seed: seed)
    let dir = try LogTempDir()
    let options = LogStoreOptions(durability: durability, autoCompactDeadRatio: 0.3, autoCompactMinimumBytes: 8 << 10)
    var store: LogStore<Beast>? = try LogStore<Beast>(path: dir.file(), options: options)
    var model: [Int: Beast] = [:]
    let order = MemoryStore<Beast>()
    let steps = durability == .fsync ? 300 : 3_000
    func beast(_ id: Int) -> Beast {
      Beast(id: id, name: "n\(rng.next() % 50)", species: ["Mouse", "Dog", "Cow"][Int(rng.next() % 3)], age: Int(rng.next() % 30))
    }
    for step in 0..<steps {
      let id = Int(rng.next() % 150)
      let op = rng.next() % 12
      if op == 8 {
        store = nil  // closes the file and releases the lock
        store = try LogStore<Beast>(path: dir.file(), options: options)
        #expect(store!.recoveryReport.isClean, "seed \(seed), step \(step)")
        continue
      }
      let s = store!
      switch op {
      case 0, 1:
        let b = beast(id)
        if model[id] == nil {
          try s.insert(b)
          model[id] = b
          try order.insert(b)
        } else {
          #expect(throws: RequestSetError.self, "seed \(seed), step \(step)") { try s.insert(b) }
        }
      case 2, 3:
        let b = beast(id)
        try s.save(b)
        model[id] = b
        try order.save(b)
      case 4, 5:
        #expect(try s.delete(id: id) == (model.removeValue(forKey: id) != nil), "seed \(seed), step \(step)")
        try order.delete(id: id)
      case 6:
        let batch = (0..<Int(rng.next() % 6)).map { _ in beast(Int(rng.next() % 150)) }
        let unique = Set(batch.map(\.id)).count == batch.count
        if unique && batch.allSatisfy({ model[$0.id] == nil }) {
          try s.insert(contentsOf: batch)
          for b in batch { model[b.id] = b }
          try order.insert(contentsOf: batch)
        } else {
          let before = s.fileSize
          #expect(throws: RequestSetError.self, "seed \(seed), step \(step)") { try s.insert(contentsOf: batch) }
          #expect(s.fileSize == before)
        }
      case 7:
        var changes: [RecordChange<Beast>] = []
        for _ in 0..<Int(1 + rng.next() % 4) {
          let cid = Int(rng.next() % 150)
          changes.append(rng.next() % 2 == 0 ? .save(beast(cid)) : .delete(id: cid))
        }
        try s.apply(changes, ifVersion: nil)
        try order.apply(changes, ifVersion: nil)
        for c in changes {
          switch c {
          case .save(let b), .insert(let b): model[b.id] = b
          case .delete(let cid): model[cid] = nil
          }
        }
      case 9:
        try s.compact()
      case 10:
        #expect(try s.fetch(id: id) == model[id], "seed \(seed), step \(step)")
      default:
        let species = ["Mouse", "Dog", "Cow"][Int(rng.next() % 3)]
        let found = try RequestSet(s).filter("species", value: species).filter("age", .greaterThan, 10).fetch()
        let expected = try RequestSet(order).filter(\.species == species).filter(\.age > 10).fetch()
        #expect(found == expected, "seed \(seed), step \(step)")
      }
      if step % 50 == 0 {
        let contents = try RequestSet(store!).fetch()
        #expect(Dictionary(uniqueKeysWithValues: contents.map { ($0.id, $0) }) == model, "seed \(seed), step \(step)")
        #expect(contents == (try RequestSet(order).fetch()), "seed \(seed), step \(step): store order")
      }
    }
    store = nil
    let reopened = try LogStore<Beast>(path: dir.file())
    #expect(try RequestSet(reopened).fetch() == RequestSet(order).fetch(), "seed \(seed)")
    #expect(reopened.count == model.count)
  }
}
