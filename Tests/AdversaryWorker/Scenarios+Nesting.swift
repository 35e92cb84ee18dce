// Scenarios for values nested past every store's limit (issue 27, rows 0, 4 and 5): a
// record whose value nests 30,000 levels deep, built from input, and a record type that
// nests a tree. Each must give a typed error or the answer, never a crash.
//
//   AdversaryWorker nesting.deep <memory|log|array> <levels>
//   AdversaryWorker nesting.tree <memory|log|array>

import Foundation
import RequestSet

/// A record with a value of any shape.
struct AnyDoc: Record {
  var id: Int
  var body: FieldValue
}

/// A category tree inside a record.
struct TreeNode: Codable, Sendable, Equatable {
  var name: String
  var children: [TreeNode]
}
struct TreeRecord: Record, Equatable {
  var id: Int
  var root: TreeNode
}

extension Scenarios {
  static let nesting: [String: Scenario] = [
    "nesting.deep": { args in
      let kind = args.first ?? "memory"
      let levels = args.count > 1 ? Int(args[1]) ?? 30_000 : 30_000
      var deep = FieldValue.int(0)
      for _ in 0..<levels { deep = .array([deep]) }
      let records = [AnyDoc(id: 1, body: .string("flat")), AnyDoc(id: 2, body: deep)]
      let set: RequestSet<AnyDoc>
      switch kind {
      case "array":
        set = RequestSet(records)
        do {
          say("count \(try set.filter("id", value: 1).fetchCount())")
        } catch let error as RequestSetError {
          say("read \(error.code)")
        }
      default:
        let store: any RecordStore<AnyDoc>
        if kind == "log" {
          let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("adversary-nesting-\(getpid())-\(UUID().uuidString).rslog").path
          store = try LogStore<AnyDoc>(path: path)
        } else {
          store = MemoryStore<AnyDoc>()
        }
        do {
          try store.insert(contentsOf: records)
          say("inserted")
        } catch let error as RequestSetError {
          say("insert \(error.code)")
        }
        do {
          try store.insert(records[1])
          say("inserted")
        } catch let error as RequestSetError {
          say("insert \(error.code)")
        }
        try store.insert(records[0])
        set = RequestSet(store)
        say("count \(try set.filter("id", value: 1).fetchCount())")
      }
      // Filtering with the deep value as the value to compare with.
      do {
        say("filter \(try set.filter("body", value: deep).fetchCount())")
      } catch let error as RequestSetError {
        say("filter \(error.code)")
      }
    },
    "nesting.tree": { args in
      var root = TreeNode(name: "leaf", children: [])
      for i in 0..<50 { root = TreeNode(name: "n\(i)", children: [root, TreeNode(name: "x\(i)", children: [])]) }
      let records = (0..<20).map { TreeRecord(id: $0, root: $0 % 2 == 0 ? root : TreeNode(name: "B", children: [])) }
      let set: RequestSet<TreeRecord>
      switch args.first ?? "memory" {
      case "array": set = RequestSet(records)
      case "log":
        let path = FileManager.default.temporaryDirectory
          .appendingPathComponent("adversary-tree-\(getpid())-\(UUID().uuidString).rslog").path
        let store = try LogStore<TreeRecord>(path: path)
        try store.insert(contentsOf: records)
        set = RequestSet(store)
      default:
        let store = MemoryStore<TreeRecord>()
        try store.insert(contentsOf: records)
        set = RequestSet(store)
      }
      say("B \(set.filter("root.name", value: "B").count)")
      say("typed \(set.filter(\.id >= 10).count)")
      say("same \(try set.sortBy("id").fetch() == records)")
    },
  ]
}
