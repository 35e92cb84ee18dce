import BenchmarkSupport
import Foundation
import RequestSet

/// The delay between a commit and the moment observers hold the new state.
func liveRows() throws -> [Row] {
  var rows: [Row] = []
  let animals = makeAnimals(100_000)
  for observers in [1, 100] {
    for (label, incremental) in [("insert into a sorted, limited set", true), ("save that moves a record", false)] {
      let (delay, rerun) = try measureDelay(animals, observers: observers, incremental: incremental)
      rows.append(Row("\(label), \(observers) observer(s)", delay, "re-running the query once", rerun, target: "-"))
    }
  }
  return rows
}

/// Median delay (ms) from a write's start until every observer has the state after it,
/// beside the cost of evaluating the observed query once.
private func measureDelay(_ animals: [Animal], observers: Int, incremental: Bool) throws -> (Double, Double) {
  let store = try MemoryStore(animals)
  let query = RequestSet(store).filter("species", value: "Cow").sortBy(\.age, order: .descending).limit(10)
  let received = Counter()
  let tasks = (0..<observers).map { _ in
    Task {
      for try await _ in query.changes { received.increment() }
    }
  }
  func waitFor(_ count: Int) {
    while received.value < count { usleep(20) }
  }
  waitFor(observers)  // every observer has its first state
  var delays: [Double] = []
  var nextID = animals.count
  for i in 0..<30 {
    let before = received.value
    let start = DispatchTime.now().uptimeNanoseconds
    if incremental {
      nextID += 1
      try store.insert(Animal(id: nextID, name: "new", species: "Cow", age: 200 + i, weight: 1, tags: []))
    } else {
      let id = try query.refreshed().ids()[0]
      var top = try store.fetch(id: id)!
      top.age = -i
      try store.save(top)
    }
    waitFor(before + observers)
    delays.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
  }
  tasks.forEach { $0.cancel() }
  delays.sort()
  let rerun = median { keep(query.refreshed().count) }
  return (delays[delays.count / 2], rerun)
}

final class Counter: @unchecked Sendable {
  // @unchecked: `count` is only touched under `lock`.
  private let lock = NSLock()
  private var count = 0
  func increment() { lock.withLock { count += 1 } }
  var value: Int { lock.withLock { count } }
}
