// Scenarios for keys through relations built from input: a path that walks a relation
// thousands of times (`owner.pets.owner.pets…`), a format string and a sort key doing the
// same, and a list of 200,000 ids. Each must give a typed error or the answer, never a
// crash.
//
//   AdversaryWorker relations.hops <memory|log|sqlite> <hops>

import Foundation
import RequestSet
import RequestSetSQLite

struct Keeper: Record {
  var id: Int
  var city: String
}

struct Critter: Record {
  var id: Int
  var keeperID: Int?
}

extension Critter: RelatedRecord {
  static let keeper = ToOne<Critter, Keeper>("keeper", \.keeperID)
  static let relations: [any Relation<Critter>] = [keeper]
}

extension Keeper: RelatedRecord {
  static let critters = ToMany<Keeper, Critter>("critters", inverse: \.keeperID)
  static let relations: [any Relation<Keeper>] = [critters]
}

extension Scenarios {
  static let relations: [String: Scenario] = [
    "relations.hops": { args in
      let kind = args.first ?? "memory"
      let hops = args.count > 1 ? Int(args[1]) ?? 10_000 : 10_000
      func store<R: Record>(_ type: R.Type) throws -> any RecordStore<R> {
        let path = FileManager.default.temporaryDirectory
          .appendingPathComponent("adversary-relations-\(getpid())-\(R.self)-\(UUID().uuidString)").path
        switch kind {
        case "log": return try LogStore<R>(path: path + ".rslog")
        case "sqlite": return try SQLiteStore<R>(path: path + ".sqlite")
        default: return MemoryStore<R>()
        }
      }
      let graph = try RecordGraph([try store(Keeper.self), try store(Critter.self)])
      try graph.insert(contentsOf: (1...50).map { Keeper(id: $0, city: $0 % 2 == 0 ? "Oslo" : "Rome") })
      try graph.insert(contentsOf: (1...200).map { Critter(id: $0, keeperID: $0 % 7 == 0 ? nil : $0 % 50 + 1) })
      let critters = graph.records(Critter.self)
      // keeper.critters.keeper.critters… then .keeper.city: `hops` relations.
      var path = "keeper"
      for i in 1..<hops { path += i % 2 == 1 ? ".critters" : ".keeper" }
      path += hops % 2 == 1 ? ".city" : ".id"
      let quantified = hops > 1 ? "ANY " : ""
      for (label, read) in [
        ("key", { try critters.filter(quantified + path + " == 'Oslo'").fetchCount() }),
        ("sort", { try critters.sortBy(path).limit(1).fetch().count }),
        ("values", { try critters.values(path).count }),
      ] as [(String, () throws -> Int)] {
        do {
          say("\(label) \(try read())")
        } catch let error as RequestSetError {
          say("\(label) \(error.code)")
        }
      }
      // A semi-join whose list holds 200,000 ids, on the store's own side.
      let many = (1...200_000).map { Keeper(id: 1_000 + $0, city: "Oslo") }
      try graph.insert(contentsOf: many)
      say("oslo \(try critters.filter("keeper.city", value: "Oslo").fetchCount())")
    },
  ]
}
