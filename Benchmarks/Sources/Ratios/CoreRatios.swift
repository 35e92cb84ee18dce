import Foundation
import BenchmarkSupport
import RequestSet

func coreRows(_ animals: [Animal]) throws -> [Row] {
  let store = try MemoryStore(animals)
  var rows: [Row] = []

  let handGreater = median {
    var c = 0
    for a in animals where a.age > 30 { c += 1 }
    keep(c)
  }
  let typed = median { keep(RequestSet(store).filter(\.age > 30).count) }
  rows.append(Row("filter(\\.age > 30).count", typed, "hand-written loop", handGreater, target: "within 1.5x"))

  let handEqual = median {
    var c = 0
    for a in animals where a.age == 30 { c += 1 }
    keep(c)
  }
  let keyed = median { keep(RequestSet(store).filter("age", value: 30).count) }
  rows.append(Row("filter(\"age\", value: 30).count", keyed, "hand-written loop", handEqual, target: "within 3x"))

  let sortedPrefix = median(runs: 3) { keep(Array(animals.sorted { $0.age < $1.age }.prefix(10))) }
  let topK = median { keep(Array(RequestSet(store).sortBy(\.age).limit(10))) }
  rows.append(Row("sortBy(\\.age).limit(10)", topK, "sorted().prefix(10)", sortedPrefix, target: "10x faster"))
  let topKKey = median { keep(Array(RequestSet(store).sortBy("age").limit(10))) }
  rows.append(Row("sortBy(\"age\").limit(10)", topKKey, "sorted().prefix(10)", sortedPrefix, target: "(string key)"))

  let predicate = median { keep(RequestSet(store).filter(#Predicate<Animal> { $0.age > 30 }).count) }
  rows.append(Row("filter(#Predicate { $0.age > 30 }).count", predicate, "hand-written loop", handGreater, target: "-"))
  let closure = median { keep(RequestSet(store).filter { $0.age > 30 }.count) }
  rows.append(Row("filter { $0.age > 30 }.count", closure, "hand-written loop", handGreater, target: "-"))
  let fetched = median { keep(try! RequestSet(store).filter(\.age > 30).fetch().count) }
  let eager = median { keep(animals.filter { $0.age > 30 }.count) }
  rows.append(Row("filter(\\.age > 30).fetch()", fetched, "Array.filter", eager, target: "-"))
  let insert = median(runs: 3) { keep(try! MemoryStore(animals)) }
  let json = try median(runs: 3) { try jsonEncodePass(animals) }
  rows.append(Row("MemoryStore(records): insert, encoding fields", insert, "JSONEncoder, every record", json, target: "-"))
  return rows
}

/// One `JSONEncoder` pass over `animals`, a record at a time: the cost a store that encodes
/// every record on insert is measured against.
func jsonEncodePass(_ animals: [Animal]) throws {
  let encoder = JSONEncoder()
  for a in animals { keep(try encoder.encode(a)) }
}
