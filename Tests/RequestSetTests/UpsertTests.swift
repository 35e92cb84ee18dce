import Foundation
import RequestSetPostgres
import RequestSetSQLite
import Testing

@testable import RequestSet

/// A record with a natural key (`email`) besides its id, and a composite one (`team`, `seat`).
struct Subscriber: Record, Equatable {
  var id: Int
  var email: String?
  var name: String
  var visits: Int
  var team: String
  var seat: Int
}

/// `store.upsert(records, on: …)` on every store: a differential test against a plain
/// array, one commit for a batch, one SQL statement per batch where a unique index allows
/// it, and typed errors that write nothing.
@Suite(.ownThreads) struct UpsertTests {
  /// A fresh store of `kind` for members, with a unique index on `email` when `indexed`.
  static func store(_ kind: StoreKind, uniqueOn keys: [String] = ["email"]) throws -> any RecordStore<
    Subscriber
  > {
    let store = try kind.makeStore(of: Subscriber.self)
    for key in keys {
      switch store {
      case let s as MemoryStore<Subscriber>: try s.createIndex(key, unique: true)
      case let s as LogStore<Subscriber>: try s.createIndex(key, unique: true)
      case let s as SQLiteStore<Subscriber>: try s.createIndex(key, unique: true)
      case let s as PostgresStore<Subscriber>: try s.createIndex(key, unique: true)
      case let s as PushdownMemoryStore<Subscriber>: try s.base.createIndex(key, unique: true)
      default: Issue.record("no unique index on \(kind)")
      }
    }
    return store
  }

  /// What an upsert does, written over an array: the reference the stores must agree with.
  static func reference(
    _ stored: inout [Subscriber], _ batch: [Subscriber],
    merge: ((Subscriber, Subscriber) -> Subscriber)? = nil
  ) -> UpsertResult {
    var result = UpsertResult(inserted: 0, updated: 0)
    // The first stored record with each email: what `firstIndex(where:)` finds, without a
    // scan per record (10,000 records into 15,000 took a minute of CPU in a debug build).
    var first: [String?: Int] = [:]
    for (i, record) in stored.enumerated() where first[record.email] == nil { first[record.email] = i }
    for record in batch {
      if let i = first[record.email] {
        var replacement = merge?(stored[i], record) ?? record
        replacement.id = stored[i].id
        stored[i] = replacement
        if replacement.email != record.email {
          first = [:]
          for (j, kept) in stored.enumerated() where first[kept.email] == nil { first[kept.email] = j }
        }
        result.updated += 1
      } else {
        first[record.email] = stored.count
        stored.append(record)
        result.inserted += 1
      }
    }
    return result
  }

  /// A merge: the new record, with the stored record's visits added.
  @Sendable static func addVisits(_ stored: Subscriber, _ new: Subscriber) -> Subscriber {
    var merged = new
    merged.visits += stored.visits
    return merged
  }

  static func subscriber(_ id: Int, _ email: String?, visits: Int = 1, team: String = "a", seat: Int? = nil)
    -> Subscriber
  {
    Subscriber(id: id, email: email, name: "m\(id)", visits: visits, team: team, seat: seat ?? id)
  }

  /// Seeded random batches, half new keys and half stored ones (with fresh ids, as a feed
  /// of records from elsewhere has), some merged; with and without a unique index (the
  /// engine's road on every store, and the SQL stores' one statement).
  @Test(arguments: StoreKind.writable, [true, false])
  func randomBatchesAgreeWithAnArray(kind: StoreKind, indexed: Bool) throws {
    let store = try Self.store(kind, uniqueOn: indexed ? ["email"] : [])
    defer { store.close() }
    var random = SeededRandom(seed: 38)
    var expected: [Subscriber] = []
    var nextID = 1
    for round in 0..<12 {
      var batch: [Subscriber] = []
      var emails = Set<String>()
      for _ in 0..<Int.random(in: 1...40, using: &random) {
        let email = "u\(Int.random(in: 0..<150, using: &random))@x"
        guard emails.insert(email).inserted else { continue }
        batch.append(Self.subscriber(nextID, email, visits: Int.random(in: 1...9, using: &random)))
        nextID += 1
      }
      let merge: (@Sendable (Subscriber, Subscriber) -> Subscriber)? = round % 3 == 2 ? Self.addVisits : nil
      let before = try store.snapshot().version
      let wanted = Self.reference(&expected, batch, merge: merge)
      let result = try store.upsert(batch, on: \.email, merge: merge)
      #expect(
        result
          == UpsertResult(inserted: wanted.inserted, updated: wanted.updated, _statements: result._statements)
      )
      #expect(try store.snapshot().version == before + 1, "round \(round): one commit")
      #expect(try RequestSet(store).fetch() == expected, "round \(round)")
    }
  }

  /// The issue's case: 10,000 records, half new and half conflicting, in one call: one
  /// commit, the right result, and on a SQL store with a unique index one statement.
  @Test(arguments: StoreKind.writable)
  func tenThousandHalfNewHalfConflictingIsOneCommit(kind: StoreKind) throws {
    let store = try Self.store(kind)
    defer { store.close() }
    var expected = (0..<5_000).map { Self.subscriber($0, "u\($0)@x") }
    try store.insert(contentsOf: expected)
    // Odd emails are stored; even ones from 10,000 up are new. Every record has a new id.
    let batch = (0..<10_000).map { i in
      Self.subscriber(100_000 + i, i % 2 == 1 ? "u\(i / 2)@x" : "u\(10_000 + i)@x", visits: 7)
    }
    let before = try store.snapshot().version
    let result = try store.upsert(batch, on: "email")
    #expect(result.inserted == 5_000 && result.updated == 5_000)
    #expect(result._statements == ([.sqlite, .indexedSQLite, .postgres].contains(kind) ? 1 : 0))
    #expect(try store.snapshot().version == before + 1)
    _ = Self.reference(&expected, batch)
    #expect(try RequestSet(store).fetch() == expected)
    #expect(try store.fetch(id: 0)?.visits == 7)  // replaced, keeping its id
    #expect(try store.fetch(id: 100_001) == nil)  // the conflicting record's own id is not stored
  }

  /// A composite key: key paths or string keys that match together.
  @Test(arguments: StoreKind.writable)
  func aCompositeKeyMatchesOnEveryKey(kind: StoreKind) throws {
    let store = try Self.store(kind, uniqueOn: [])
    defer { store.close() }
    try store.insert(contentsOf: [
      Self.subscriber(1, "a@x", team: "red", seat: 1), Self.subscriber(2, "b@x", team: "red", seat: 2),
    ])
    let result = try store.upsert(
      [
        Self.subscriber(10, "c@x", visits: 5, team: "red", seat: 2),
        Self.subscriber(11, "d@x", team: "blue", seat: 1),
      ],
      on: \.team, \.seat)
    #expect(result == UpsertResult(inserted: 1, updated: 1))
    #expect(try RequestSet(store).fetch().map(\.id) == [1, 2, 11])
    #expect(try store.fetch(id: 2)?.email == "c@x")
    let again = try store.upsert([Self.subscriber(12, "e@x", team: "blue", seat: 1)], on: "team", "seat")
    #expect(again.updated == 1)
    #expect(try store.fetch(id: 11)?.email == "e@x")
  }

  /// Bad input throws a typed error that says how to fix it, and writes nothing.
  @Test(arguments: StoreKind.writable)
  func badInputWritesNothing(kind: StoreKind) throws {
    let store = try Self.store(kind)
    defer { store.close() }
    let stored = [Self.subscriber(1, "a@x"), Self.subscriber(2, "b@x")]
    try store.insert(contentsOf: stored)
    let version = try store.snapshot().version
    func expectNothingWritten() throws {
      #expect(try store.snapshot().version == version)
      #expect(try RequestSet(store).fetch() == stored)
    }

    let nilKey = try #require(throws: RequestSetError.self) {
      try store.upsert([Self.subscriber(3, "c@x"), Self.subscriber(4, nil)], on: \.email)
    }
    #expect(nilKey.code == .invalidUpsert)
    #expect(
      nilKey.message
        == "The Subscriber with id 4 has no value at \"email\" (nil), so upsert cannot match it. Give it a value, or "
        + "insert it with insert(_:); nothing was written.")
    try expectNothingWritten()

    let twice = try #require(throws: RequestSetError.self) {
      try store.upsert([Self.subscriber(3, "c@x"), Self.subscriber(4, "c@x")], on: "email")
    }
    #expect(twice.code == .invalidUpsert)
    #expect(
      twice.message
        == "The batch holds two records with email == \"c@x\" (ids 3 and 4). Give each record its own key value, "
        + "or merge them before upserting; nothing was written.")
    try expectNothingWritten()

    let unknown = try #require(throws: RequestSetError.self) {
      try store.upsert([Self.subscriber(3, "c@x")], on: "emial")
    }
    #expect(unknown.code == .unknownKey)
    #expect(unknown.message.hasPrefix("Unknown key \"emial\" for Subscriber. Known keys: "))
    try expectNothingWritten()

    // A new record (its email is not stored) whose id is: nothing of the batch is written.
    let takenID = try #require(throws: RequestSetError.self) {
      try store.upsert([Self.subscriber(5, "a@x", visits: 9), Self.subscriber(2, "new@x")], on: \.email)
    }
    #expect(takenID.code == .duplicateID)
    try expectNothingWritten()

  }

  /// Without a unique index the store may hold two records with one key value: upsert
  /// cannot tell which to replace, and says to create the index.
  @Test(arguments: StoreKind.writable)
  func storedDuplicatesWithoutAUniqueIndexThrow(kind: StoreKind) throws {
    let store = try Self.store(kind, uniqueOn: [])
    defer { store.close() }
    let stored = [Self.subscriber(1, "a@x"), Self.subscriber(2, "a@x")]
    try store.insert(contentsOf: stored)
    let error = try #require(throws: RequestSetError.self) {
      try store.upsert([Self.subscriber(3, "a@x")], on: \.email)
    }
    #expect(error.code == .invalidUpsert)
    #expect(
      error.message
        == "More than one stored Subscriber has email == \"a@x\", so upsert cannot tell which to replace. Make the "
        + "stored values distinct and create a unique index on email; nothing was written.")
    #expect(try RequestSet(store).fetch() == stored)
  }

  /// Live sets see an upsert as one commit with its inserts and saves.
  @Test(arguments: StoreKind.writable)
  func aLiveSetSeesTheUpsert(kind: StoreKind) async throws {
    let store = try Self.store(kind)
    defer { store.close() }
    try store.insert(contentsOf: [Self.subscriber(1, "a@x")])
    let watcher = Task {
      for try await snapshot in RequestSet(store).sortBy(\.id).changes where snapshot.records.count == 2 {
        return snapshot.records
      }
      return []
    }
    try await Task.sleep(for: .milliseconds(50))
    try await store.async.upsert(
      [Self.subscriber(7, "a@x", visits: 3), Self.subscriber(8, "b@x")], on: \.email)
    #expect(
      try await watcher.value
        == [
          Subscriber(id: 1, email: "a@x", name: "m7", visits: 3, team: "a", seat: 7),
          Self.subscriber(8, "b@x"),
        ])
  }

  /// The async form, and a cancelled one, which writes nothing.
  @Test(arguments: StoreKind.writable)
  func asyncUpsertAndCancellation(kind: StoreKind) async throws {
    let store = try Self.store(kind)
    defer { store.close() }
    try store.insert(contentsOf: [Self.subscriber(1, "a@x")])
    let result = try await store.async.upsert(
      [Self.subscriber(2, "a@x", visits: 4), Self.subscriber(3, "c@x")], on: "email")
    #expect(result.inserted == 1 && result.updated == 1)
    let version = try store.snapshot().version
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await store.async.upsert([Self.subscriber(4, "d@x")], on: \.email)
    }
    await #expect(throws: CancellationError.self) { try await task.value }
    // Cancelled while the merge closure runs: the engine checks before it writes.
    let merging = Task {
      try await store.async.upsert([Self.subscriber(5, "a@x")], on: \.email) { _, new in
        let deadline = ContinuousClock.now + .seconds(120)
        while !StoreThreads.isCancelled && ContinuousClock.now < deadline { usleep(1_000) }
        return new
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    merging.cancel()
    await #expect(throws: CancellationError.self) { try await merging.value }
    #expect(try store.snapshot().version == version)
    #expect(try RequestSet(store).fetchCount() == 2)
  }
}
