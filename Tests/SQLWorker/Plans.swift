// The plans scenario of SQLWorker (Tests/RequestSetTests/OnePlanTests.swift): a query
// built before the process has read any record of its type must plan as the same query
// built after a read, in a process whose schema probe has seen nothing else.
//
//   plans fill      fills the table with 200 `PlanAnimal`s, and ends
//   plans explain   for a typed query and a `#Predicate` query: builds it, prints
//                   "<query>-before <line>" for each line of its explain(), reads other
//                   records, builds it again and prints "<query>-after <line>" lines, then
//                   the ids each returned ("<query>-records-before/after <ids>")
import Foundation
import RequestSet
import RequestSetPostgres
import RequestSetSQLite

/// A record type only this scenario uses, so that nothing else in the process has shown
/// one to the schema probe.
struct PlanAnimal: Record {
  var id: Int
  var name: String
  var species: String
  var age: Int
}

func plansScenario(kind: String, location: String, table: String, _ rest: [String]) throws {
  let store: any RecordStore<PlanAnimal>
  switch kind {
  case "sqlite": store = try SQLiteStore<PlanAnimal>(path: location, table: table)
  case "postgres": store = try PostgresStore<PlanAnimal>(url: location, table: table, connections: 2)
  default: fail("plans runs on sqlite or postgres", status: 2)
  }
  defer { store.close() }
  switch rest.first {
  case "fill":
    let species = ["Cow", "Dog", "Cat"]
    try store.insert(contentsOf: (0..<200).map { i in
      PlanAnimal(id: i, name: "n\((i * 37) % 200)", species: species[i % 3], age: i % 17)
    })
  case "explain":
    let queries: [(String, () -> RequestSet<PlanAnimal>)] = [
      ("typed", { RequestSet(store).filter("species", value: "Cow").filter(\.age > 3).sortBy(\.name).limit(10) }),
      ("predicate", { RequestSet(store).filter(#Predicate<PlanAnimal> { $0.age > 3 }).sortBy(\.age).limit(7) }),
    ]
    var built: [(String, RequestSet<PlanAnimal>)] = []
    // Every query is built before the process reads any record.
    for (name, make) in queries { built.append((name, make())) }
    for (name, set) in built {
      for line in set.explain().split(separator: "\n") { say("\(name)-before \(line)") }
      say("\(name)-records-before " + (try set.fetch()).map { "\($0.id)" }.joined(separator: " "))
    }
    // Another read, then the same queries again.
    _ = try RequestSet(store).filter("species", value: "Dog").fetch()
    for (name, make) in queries {
      let set = make()
      for line in set.explain().split(separator: "\n") { say("\(name)-after \(line)") }
      say("\(name)-records-after " + (try set.fetch()).map { "\($0.id)" }.joined(separator: " "))
    }
  default:
    fail("plans <fill|explain>", status: 2)
  }
}
