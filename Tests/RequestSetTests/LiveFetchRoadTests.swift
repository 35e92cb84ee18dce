import Foundation
import RequestSetPostgres
import RequestSetSQLite
import Testing

@testable import RequestSet

/// A live query is the fetch, re-run (issue 35): a live set's first state and every re-read
/// after a commit evaluate the set as `fetch()` does, so a SQL store runs the filter, sort
/// and window itself and hands over the result, not every row of its table.
@Suite(.serialized, .timeLimit(.minutes(30)), .ownThreads(servedFirst: true)) struct LiveFetchRoadTests {
  /// The stores that run queries in SQL.
  static var sqlKinds: [StoreKind] {
    StoreKind.writable.filter { [.sqlite, .indexedSQLite, .postgres].contains($0) }
  }

  /// A store of `kind` and the object that writes to it in the tests: for a SQL store a
  /// second store object on the same database (another connection, whose commits the live
  /// set hears as another process's, through `requestset_changes`); an in-process store,
  /// which one object owns, writes through itself. `close` closes both.
  static func pair<R: Record>(_ kind: StoreKind, of type: R.Type, indexes: [String]? = nil) throws
    -> (observed: any RecordStore<R>, writer: any RecordStore<R>, close: () -> Void)
  {
    switch kind {
    case .sqlite, .indexedSQLite:
      let path = TemporaryLogDirectory.freshPath("store.sqlite")
      let store = try SQLiteStore<R>(path: path)
      if kind == .indexedSQLite {
        for key in indexes ?? StoreKind.indexedKeys(R.self) { try store.createIndex(key) }
      }
      let writer = try SQLiteStore<R>(path: path)
      return (
        store, writer,
        {
          writer.close()
          store.close()
        }
      )
    case .postgres:
      let (url, table) = (try PostgresServer.url(), PostgresServer.freshTable())
      let store = try PostgresStore<R>(url: url, table: table)
      let writer = try PostgresStore<R>(url: url, table: table)
      return (
        store, writer,
        {
          writer.close()
          store.close()
        }
      )
    default:
      let store = try kind.makeStore(of: R.self)
      return (store, store, { store.close() })
    }
  }

  /// The store's version now, read without decoding a record (a SQL store's reader).
  static func version<R: Record>(_ store: any RecordStore<R>) throws -> UInt64 {
    if let pushdown = store as? any QueryPushdownStore<R> { return try pushdown.queryReader().version }
    return try store.snapshot().version
  }

  /// Counts the rows decoded for a live set's first state and for its re-read after
  /// another connection's commit: no more than its `fetch()` decodes (5 of 2,000 rows).
  /// Before issue 35 both read `store.snapshot()` and decoded all 2,000.
  @Test(arguments: sqlKinds)
  func aLiveSetOverSQLDecodesWhatItsFetchDecodes(kind: StoreKind) async throws {
    let (store, writer, close) = try Self.pair(kind, of: DecodeCountedRow.self, indexes: ["group", "rank"])
    defer { close() }
    let n = 2_000
    try store.insert(
      contentsOf: (0..<n).map {
        DecodeCountedRow(id: $0, group: $0 % 10, rank: ($0 * 7_919) % n, name: "r\($0)")
      })
    let set = RequestSet(store).filter("group", value: 3).sortBy("rank").limit(5)

    var before = DecodeCountedRow.decodes.value
    let fetched = try set.fetch()
    let fetchDecodes = DecodeCountedRow.decodes.value - before
    #expect(fetched.count == 5 && fetchDecodes < 50, "fetch decoded \(fetchDecodes) rows")

    let reader = StateReader(set)
    before = DecodeCountedRow.decodes.value
    let first = try #require(try await reader.next())
    let firstDecodes = DecodeCountedRow.decodes.value - before
    #expect(first.records == fetched)
    #expect(
      firstDecodes <= fetchDecodes,
      "the first state decoded \(firstDecodes) of \(n) rows, its fetch \(fetchDecodes)")

    // Another connection saves a record the set holds: a change the set cannot merge into
    // its result, so it reads the store again.
    var moved = first.records[0]
    moved.name = "moved"
    try writer.save(moved)
    let committed = try Self.version(writer)
    #expect(try await reader.heard(committed))
    before = DecodeCountedRow.decodes.value
    let reread = try #require(try await reader.next())
    let rereadDecodes = DecodeCountedRow.decodes.value - before
    #expect(
      rereadDecodes <= fetchDecodes,
      "the re-read decoded \(rereadDecodes) of \(n) rows, a fetch \(fetchDecodes)")
    #expect(reread.records == (try set.refreshed().fetch()) && reread.records.first?.name == "moved")
    #expect(reread.version == committed && reread.updated == [0])
  }

  /// A live set runs what `fetch()` runs, checks included: a `requiringPushdown()` set over
  /// a store that runs no query itself throws `.notPushedDown` from its first read, as its
  /// `fetch()` does (the live set used to run it in process and answer).
  @Test func aLiveSetChecksWhatItsFetchChecks() async throws {
    let set = RequestSet(try MemoryStore(Animal.zoo)).filter("species", value: "Cow").requiringPushdown()
    #expect(throws: RequestSetError.self) { try set.fetch() }
    var states = set.changes.makeAsyncIterator()
    do {
      _ = try await states.next()
      Issue.record("the live set answered a query its fetch refuses")
    } catch let error as RequestSetError {
      #expect(error.code == .notPushedDown)
    }
  }

  /// The queries the differential test follows: a merged shape (filter, sort, limit), an
  /// unlimited one, one with an offset (never merged), a filter without a sort, and one
  /// with a closure the SQL stores leave in process.
  static let queries: [@Sendable (RequestSet<Animal>) -> RequestSet<Animal>] = [
    { $0.filter("species", value: "Cow").sortBy(\.age).limit(5) },
    { $0.filter(\.age > 8).sortBy("name", order: .descending) },
    { $0.sortBy(\.weight).offset(3).limit(6) },
    { $0.filter("age", .lessThan, 12).filter("species", value: "Dog") },
    { $0.filter { $0.age % 3 == 0 }.sortBy("species").limit(7) },
  ]

  /// On every store: a live set's first state, and each state after random commits from
  /// the writing object (another connection on the SQL stores), equals `fetch()` of the
  /// same set at the same version.
  @Test(arguments: StoreKind.writable, 0..<queries.count)
  func everyStateOfALiveSetIsItsFetch(kind: StoreKind, queryIndex: Int) async throws {
    let query = Self.queries[queryIndex]
    var rng = SeededRandom(seed: UInt64(queryIndex) &+ 35)
    let (store, writer, close) = try Self.pair(kind, of: Animal.self)
    defer { close() }
    try store.insert(contentsOf: Animal.random(count: 80, seed: UInt64(queryIndex)))
    let reader = StateReader(query(RequestSet(store)))
    let first = try #require(try await reader.next())
    #expect(first.records == (try query(RequestSet(store)).fetch()), "first state on \(kind)")
    #expect(first.version == (try Self.version(store)))
    var seen = first.records
    var nextID = 1_000
    for step in 0..<30 {
      switch Int.random(in: 0..<4, using: &rng) {
      case 0:
        nextID += 1
        var a = Animal.random(count: 1, seed: UInt64(step) &+ 500)[0]
        a.id = nextID
        try writer.insert(a)
      case 1:
        let ids = try RequestSet(writer).ids()
        _ = try writer.delete(id: ids.randomElement(using: &rng)!)
      case 2:
        let ids = try RequestSet(writer).ids()
        var a = try writer.fetch(id: ids.randomElement(using: &rng)!)!
        a.age = Int.random(in: 0...20, using: &rng)
        a.species = Animal.speciesPool.randomElement(using: &rng)!
        try writer.save(a)
      default:
        try writer.apply(
          (0..<3).map { _ in
            nextID += 1
            return .insert(
              Animal(
                id: nextID, name: "b\(nextID)", species: "Cow", age: Int.random(in: 0...20, using: &rng),
                weight: Double(Int.random(in: 1...900, using: &rng))))
          }, ifVersion: nil)
      }
      let committed = try Self.version(writer)
      #expect(try await reader.heard(committed), "step \(step) on \(kind)")
      let expected = try query(RequestSet(writer)).fetch()
      // A commit that leaves the result as it was yields no state: the next one does.
      guard expected != seen else { continue }
      let state = try #require(try await reader.next(), "step \(step) on \(kind): no state for a change")
      #expect(state.records == expected, "step \(step) on \(kind)")
      #expect(state.version == committed, "step \(step) on \(kind)")
      seen = state.records
    }
  }

  /// Another process commits (SQLWorker's `bump`: closure updates of five records): the
  /// live set reads the store again and its state is the fetch's.
  @Test(arguments: SharedSQLDatabase.engines)
  func anotherProcesssCommitsAreReadAsTheFetchReadsThem(engine: SharedSQLDatabase.Engine) async throws {
    let db = try SharedSQLDatabase.fresh(engine)
    let store = try db.open()
    defer { store.close() }
    try store.insert(
      contentsOf: (0..<40).map {
        DynamicRecord(id: .int($0), fields: ["count": .int(0), "group": .int($0 % 4)])
      })
    let set = RequestSet(store).filter("group", value: 1).sortBy("count", order: .descending).limit(3)
    let reader = StateReader(set)
    let first = try #require(try await reader.next())
    #expect(first.records == (try set.refreshed().fetch()))
    // Records 5..<10 counted up twice; the child waits until its own live set shows 9 at 2.
    let child = try db.child("bump", "5", "10", "2", "9", "2")
    #expect(child.wait(timeout: .seconds(eventLimit)) == 0, "\(child)")
    let committed = try Self.version(store)
    #expect(try await reader.heard(committed))
    let state = try #require(try await reader.next())
    #expect(state.records == (try set.refreshed().fetch()), "on \(db)")
    #expect(state.records.map(\.id) == [.int(5), .int(9), .int(1)] && state.version == committed, "on \(db)")
  }
}

/// A record whose decoding counts itself: how many rows a read decoded.
struct DecodeCountedRow: Record, Equatable {
  var id: Int
  var group: Int
  var rank: Int
  var name: String

  init(id: Int, group: Int, rank: Int, name: String) {
    self.id = id
    self.group = group
    self.rank = rank
    self.name = name
  }

  init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    id = try c.decode(Int.self, forKey: .id)
    group = try c.decode(Int.self, forKey: .group)
    rank = try c.decode(Int.self, forKey: .rank)
    name = try c.decode(String.self, forKey: .name)
    Self.decodes.add()
  }

  /// Every decode of this type in the process (only `LiveFetchRoadTests`, serialized, uses it).
  static let decodes = SharedCounter()
}
