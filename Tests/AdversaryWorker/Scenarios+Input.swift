// Scenarios for issue 12, "crashes on input": filters built in a loop from input (100,000
// terms), windows and sums at the limits of `Int`, invalid sets read through `validated()`.
//
//   AdversaryWorker input.filterChain <shape> <terms> <store> [smallStack]
//   AdversaryWorker input.windows <store>     limits and offsets at Int.min, -1, Int.max
//   AdversaryWorker input.sums <store>        integer sums past Int.max
//   AdversaryWorker input.validated <store>   every kind of invalid set, then reads of a valid one
//
// `shape` says how the filter is built (see `InputScenarios.build`), `store` is memory,
// log or array, and `smallStack` runs everything on a thread with a 512 KiB stack (the
// size of a background thread on Apple platforms). Each prints `count N` for the chain
// and `in N` for the same question asked with `filter(\.id, in:)` or its complement, and
// the lines of what else it read.

import Foundation
import RequestSet

/// A record with the values that break arithmetic and comparisons.
struct Measure: Record {
  var id: Int
  var w: Double
  var text: String
  var n: Int
}

/// The record the input scenarios query.
struct Item: Record, Hashable {
  var id: Int
  var group: Int
  var name: String
  var big: Int = 0
  var small: Int8 = 0
  var note: String? = nil
}

extension Scenarios {
  static let input: [String: Scenario] = [
    "input.windows": { arguments in try InputScenarios.windows(try InputScenarios.makeSet(arguments.first ?? "memory")) },
    "input.sums": { arguments in try InputScenarios.sums(arguments.first ?? "memory") },
    "input.validated": { arguments in try InputScenarios.validated(arguments.first ?? "memory") },
    "input.odd": { arguments in try InputScenarios.odd(arguments.first ?? "memory") },
    "input.filterChain": { arguments in
      guard arguments.count >= 3, let terms = Int(arguments[1]) else {
        say("usage: input.filterChain <shape> <terms> <store> [smallStack]")
        return
      }
      let work: @Sendable () throws -> Void = {
        try InputScenarios.filterChain(shape: arguments[0], terms: terms, store: arguments[2])
      }
      if arguments.count > 3 && arguments[3] == "smallStack" {
        try InputScenarios.onSmallStack(work)
      } else {
        try work()
      }
    }
  ]
}

enum InputScenarios {
  /// How many records the scenarios' stores hold.
  static let records = 3_000

  static func makeSet(_ store: String, _ given: [Item]? = nil) throws -> RequestSet<Item> {
    let items = given ?? (0..<records).map { Item(id: $0, group: $0 % 7, name: "item \($0)") }
    switch store {
    case "array": return RequestSet(items)
    case "log":
      let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("adversary-input-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).rslog").path
      let log = try LogStore<Item>(path: path)
      try log.insert(contentsOf: items)
      return RequestSet(log)
    default:
      let memory = MemoryStore<Item>()
      try memory.insert(contentsOf: items)
      return RequestSet(memory)
    }
  }

  /// The ids a chain of `terms` terms names: every third, past the records' end too.
  static func ids(_ terms: Int) -> [Int] { (0..<terms).map { $0 * 3 } }

  static func filterChain(shape: String, terms: Int, store: String) throws {
    let all = try makeSet(store)
    let ids = ids(terms)
    let chained: RequestSet<Item>
    var expected = all.filter(\.id, in: ids)
    switch shape {
    case "keyPathOr":
      // f = f || (\.id == i), the way a program ORs what a user picked.
      var f: RequestFilter<Item> = .none
      for id in ids { f = f || (\.id == id) }
      chained = all.filter(f)
    case "stringOr":
      var s = all.filter("id", value: ids[0])
      for id in ids.dropFirst() { s = s.filter("id", value: id, mode: .or) }
      chained = s
    case "keyPathAnd":
      var f: RequestFilter<Item> = .all
      for id in ids { f = f && (\.id != id) }
      chained = all.filter(f)
      expected = all.exclude(RequestFilter(\.id, in: ids))
    case "exclude":
      var s = all
      for id in ids { s = s.exclude(\.id == id) }
      chained = s
      expected = all.exclude(RequestFilter(\.id, in: ids))
    case "not":
      // NOT NOT … x, an even number of times.
      var f: RequestFilter<Item> = \.id == 3
      for _ in 0..<(terms / 2 * 2) { f = !f }
      chained = all.filter(f)
      expected = all.filter(\.id, in: [3])
    case "alternating":
      // ((… OR a) AND b) OR c …: cannot be flattened, so it nests one level a term.
      var f: RequestFilter<Item> = \.id == 0
      for (i, id) in ids.enumerated() { f = i % 2 == 0 ? f || (\.id == id) : f && (\.group >= 0) }
      chained = all.filter(f)
      expected = all.filter(\.id, in: [0] + ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
    case "format":
      // The deepest a format string may nest: each parenthesis holds an OR of an AND.
      let levels = min(terms, 63)
      var text = ""
      for i in 0..<levels { text += "id == \(ids[i]) OR group >= 0 AND (" }
      text += "id == 0" + String(repeating: ")", count: levels)
      chained = all.filter(try RequestFilter<Item>(format: text, arguments: []))
      expected = all.filter(\.id, in: [0] + ids.prefix(levels))
    case "alternatingChain":
      var s = all.filter("id", value: 0)
      for (i, id) in ids.enumerated() {
        s = i % 2 == 0 ? s.filter("id", value: id, mode: .or) : s.filter("group", .greaterThanOrEqual, 0)
      }
      chained = s
      expected = all.filter(\.id, in: [0] + ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
    default:
      say("unknown shape \(shape)")
      return
    }
    say("explain \(chained.explain().split(separator: "\n").count) lines")
    do {
      say("count \(try chained.fetchCount())")
      say("in \(try expected.fetchCount())")
      // The checked set reads from the result validated() computed: none of these can trap.
      let checked = try chained.validated()
      say("read \(checked.count) \(checked.first?.id ?? -1) \(checked.exists) \(checked.map(\.id).count)")
    } catch let error as RequestSetError {
      say("error \(error.code)")
    }
    do {
      _ = try chained.firstOrInsert { Item(id: -1, group: 0, name: "") }
      say("firstOrInsert ran")
    } catch let error as RequestSetError {
      say("firstOrInsert \(error.code)")
    }
  }

  /// Prints what each window at the limits of `Int` reads, or the error it throws.
  static func windows(_ all: RequestSet<Item>) throws {
    let cases: [(String, RequestSet<Item>)] = [
      ("offset(Int.max).offset(1)", all.offset(Int.max).offset(1)),
      ("sortBy.offset(Int.max).limit(1)", all.sortBy(\.group).offset(Int.max).limit(1)),
      ("sortBy.limit(Int.max).offset(Int.max)", all.sortBy(\.group).limit(Int.max).offset(Int.max)),
      ("sortBy.offset(Int.max).limit(Int.max)", all.sortBy("group").offset(Int.max).limit(Int.max)),
      ("limit(Int.max).offset(5)", all.limit(Int.max).offset(5)),
      ("last(Int.max)", all.sortBy(\.id).last(Int.max)),
      ("first(Int.max).reversed", all.first(Int.max).reversed().limit(2)),
      ("limit(-1)", all.limit(-1)),
      ("offset(-1)", all.offset(-1)),
      ("offset(Int.min)", all.sortBy(\.id).offset(Int.min)),
      ("first(-1)", all.first(-1)),
      ("last(-1)", all.last(-1)),
      ("limit(Int.min).limit(3)", all.limit(Int.min).limit(3)),
    ]
    for (name, set) in cases {
      do {
        let fetched = try set.fetch()
        let checked = try set.validated()
        say("\(name): \(try set.fetchCount()) \(fetched.count) \(checked.count) \(checked.first?.id ?? -1)")
      } catch let error as RequestSetError {
        say("\(name): \(error.code)")
      }
    }
  }

  /// Prints integer sums near `Int.max`, typed and by key, alone and per group.
  static func sums(_ store: String) throws {
    let items = [
      Item(id: 1, group: 0, name: "a", big: Int.max, small: 100),
      Item(id: 2, group: 0, name: "b", big: 1, small: 100),
      Item(id: 3, group: 1, name: "c", big: -1, small: -100),
    ]
    let all = try makeSet(store, items)
    func report(_ name: String, _ body: () throws -> String) {
      do { say("\(name): \(try body())") } catch let error as RequestSetError { say("\(name): \(error.code)") } catch {
        say("\(name): \(error)")
      }
    }
    report("typed all") { "\(try all.sum(\.big))" }
    report("key all") { "\(try all.sum("big"))" }
    report("typed first two") { "\(try all.filter(\.id <= 2).sum(\.big))" }
    report("key first two") { "\(try all.filter(\.id <= 2).sum("big"))" }
    report("typed Int8") { "\(try all.filter(\.id <= 2).sum(\.small))" }
    report("typed Int8 all") { "\(try all.sum(\.small))" }
    report("groups") {
      let rows = try all.groupBy("group").aggregate(.sum("big")).fetch()
      return rows.map { "\($0["sum:big"] ?? .null)" }.joined(separator: " ")
    }
    report("average") { "\(try all.average(\.big) ?? 0 > 0)" }
  }

  /// Prints the error `validated()` throws for each kind of invalid set, then reads a
  /// valid one through every collection member.
  static func validated(_ store: String) throws {
    struct Unencodable: Encodable, Sendable {
      func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "no"))
      }
    }
    let all = try makeSet(store)
    var deep: RequestFilter<Item> = \.id == 0
    for i in 0..<300 { deep = i % 2 == 0 ? deep || (\.id == i) : deep && (\.group >= 0) }
    let invalid: [(String, RequestSet<Item>)] = [
      ("unknown key", all.filter("nmae", value: "x")),
      ("type mismatch", all.filter("group", value: "three")),
      ("operator mismatch", all.filter("group BEGINSWITH 'x'")),
      ("format arguments", all.filter("group == %@")),
      ("format syntax", all.filter("group ==")),
      ("unencodable value", all.filter("name", value: Unencodable())),
      ("too deep", all.filter(deep)),
      ("negative limit", all.limit(-5)),
      ("negative offset after a filter", all.filter(\.group == 1).offset(-1).filter(\.id > 3)),
      ("throwing predicate", all.filter(#Predicate<Item> { $0.note! == "x" })),
      ("unknown sort key", all.sortBy("nmae")),
      ("unknown distinct key", all.distinct("nmae")),
    ]
    for (name, set) in invalid {
      do {
        _ = try set.validated()
        say("\(name): valid")
      } catch let error as RequestSetError {
        say("\(name): \(error.code)")
      }
    }
    let page = try all.filter("group == %@", 3).sortBy(\.id).offset(2).limit(3).validated()
    var iterated: [Int] = []
    for item in page { iterated.append(item.id) }
    say(
      "valid: \(page.count) \(iterated) \(page[0].id) \(page.first?.id ?? -1) \(page.last?.id ?? -1) \(page.exists) "
        + "\(page.isEmpty)")
  }

  /// Odd values where numbers and text come in: NaN, infinities, Int.min and Int.max as
  /// filter values, empty and odd keys, Unicode twins, a huge IN list.
  static func odd(_ store: String) throws {
    let items = [
      Measure(id: 1, w: .nan, text: "é", n: .min),
      Measure(id: 2, w: .nan, text: "e\u{301}", n: .max),
      Measure(id: 3, w: .infinity, text: "", n: 0),
      Measure(id: 4, w: -.infinity, text: "a", n: -1),
      Measure(id: 5, w: 1, text: "ß", n: 1),
    ]
    let all: RequestSet<Measure>
    switch store {
    case "array": all = RequestSet(items)
    case "log":
      let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("adversary-odd-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).rslog").path
      let log = try LogStore<Measure>(path: path)
      try log.insert(contentsOf: items)
      all = RequestSet(log)
    default:
      let memory = MemoryStore<Measure>()
      try memory.insert(contentsOf: items)
      all = RequestSet(memory)
    }
    func report(_ name: String, _ body: () throws -> String) {
      do { say("\(name): \(try body())") } catch let error as RequestSetError { say("\(name): \(error.code)") } catch {
        say("\(name): \(error)")
      }
    }
    report("distinct typed NaN") { "\(try all.distinct(\.w).fetch().map(\.id))" }
    report("distinct key NaN") { "\(try all.distinct("w").fetch().map(\.id))" }
    report("sort typed NaN") { "\(try all.sortBy(\.w).fetch().count)" }
    report("sort key NaN") { "\(try all.sortBy("w").fetch().count)" }
    report("sort key NaN limit") { "\(try all.sortBy("w", order: .descending).limit(2).fetch().count)" }
    report("== NaN typed") { "\(try all.filter(\.w == .nan).fetchCount())" }
    report("== NaN key") { "\(try all.filter("w", value: Double.nan).fetchCount())" }
    report("> -inf key") { "\(try all.filter("w", .greaterThan, -Double.infinity).fetchCount())" }
    report("min/max key NaN") { "\(try all.min("w")) \(try all.max("w"))" }
    report("min/max typed NaN") { "\(try all.min(\.w).map { "\($0)" } ?? "nil") \(try all.max(\.w).map { "\($0)" } ?? "nil")" }
    report("min/max NaN last") {
      let sorted = all.sortBy(\.id, order: .descending)
      return "\(try sorted.min("w")) \(try sorted.min(\.w).map { "\($0)" } ?? "nil")"
    }
    report("sum typed w") { "\(try all.sum(\.w))" }
    report("sum key w") { "\(try all.sum("w"))" }
    report("average typed w") { "\(try all.average(\.w).map { "\($0)" } ?? "nil")" }
    report("average typed n") { "\(try all.average(\.n).map { "\($0)" } ?? "nil")" }
    report("average key n") { "\(try all.average("n").map { "\($0)" } ?? "nil")" }
    report("sum key n") { "\(try all.sum("n"))" }
    report("group w") { "\(try all.groupBy("w").aggregate(.count).fetch().count)" }
    report("Int.min key") { "\(try all.filter("n", value: Int.min).fetchCount())" }
    report("Int.max >=") { "\(try all.filter("n", .greaterThanOrEqual, Int.max).fetchCount())" }
    report("UInt64.max") { "\(try all.filter("n", .lessThan, UInt64.max).fetchCount())" }
    report("empty key") { "\(try all.filter("", value: 1).fetchCount())" }
    report("dots key") { "\(try all.filter("..", value: 1).fetchCount())" }
    report("empty sort key") { "\(try all.sortBy("").fetchCount())" }
    report("empty text") { "\(try all.filter("text", value: "").fetchCount())" }
    report("unicode twins typed") { "\(try all.filter(\.text == "é").fetchCount())" }
    report("unicode twins key") { "\(try all.filter("text", value: "é").fetchCount())" }
    report("unicode twins IN") { "\(try all.filter(\.text, in: ["e\u{301}"]).fetchCount())" }
    report("huge IN") { "\(try all.filter(\.id, in: Array(-500_000..<500_000)).fetchCount())" }
    report("huge IN key") { "\(try all.filter("id IN %@", Array(-200_000..<200_000)).fetchCount())" }
    report("sortBy prefix") { "\(try all.sortBy("-").fetchCount())" }
  }

  /// Runs `work` on a thread with a 512 KiB stack and waits for it; its error is rethrown.
  static func onSmallStack(_ work: @escaping @Sendable () throws -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    let failure = FailureBox()
    let thread = Thread {
      do { try work() } catch { failure.set(error) }
      done.signal()
    }
    thread.stackSize = 512 * 1024
    thread.start()
    done.wait()
    if let error = failure.get() { throw error }
  }
}

/// The error a small-stack thread hands back to the main thread.
final class FailureBox: @unchecked Sendable {
  // Safe: `error` is only read or written while `lock` is held.
  private let lock = NSLock()
  private var error: (any Error)?
  func set(_ e: any Error) { lock.lock(); error = e; lock.unlock() }
  func get() -> (any Error)? { lock.lock(); defer { lock.unlock() }; return error }
}
