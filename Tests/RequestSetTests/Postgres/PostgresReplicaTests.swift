import Foundation
import Testing

@testable import RequestSet
@testable import RequestSetPostgres

/// A `PostgresStore` with read replicas (`PostgresConnectionOptions.replicas`): each test
/// starts a hot standby of the test server (`pg_basebackup -R`) after making its own
/// database, and stops it (removing its folder) at the end.
@Suite(.enabled(if: PostgresServer.testsRun), .ownThreads) struct PostgresReplicaTests {
  /// A fresh database holding `Animal.zoo` in the table `animals`, a standby of the
  /// server that has it, and their URLs.
  static func standbyPair() throws -> (primary: String, replica: String, standby: PostgresServer) {
    let database = try PostgresPoolTests.freshDatabase()
    let primary = try PostgresServer.url(database: database)
    let seed = try PostgresStore<Animal>(url: primary, table: "animals")
    try seed.insert(contentsOf: Animal.zoo)
    seed.close()
    let standby = try PostgresServer.shared.get().startStandby()
    return (primary, standby.url(database: database), standby)
  }

  /// Whether the store's raw SQL read ran on a standby.
  static func readsOnStandby(_ store: PostgresStore<Animal>) throws -> Bool {
    let rows = try store.rows(sql: "SELECT pg_is_in_recovery() AS standby").fetch()
    return rows.first?["standby"] == .bool(true)
  }

  /// Reads of every form run on the standby (it says it is in recovery, and the store's
  /// counters and `lastReadServer` agree); writes go to the primary (a standby would refuse
  /// them); the same store without replicas reads the primary.
  @Test func readsLandOnTheStandbyAndWritesOnThePrimary() async throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(replicas: [replica], replicaWait: .seconds(30)))
    defer { store.close() }
    let replicas = try #require(store._replicas)
    #expect(try Self.readsOnStandby(store))
    #expect(store.lastReadServer == replica)
    try store.insert(Animal(id: 100, name: "Nemo", species: "Fish", age: 1))
    #expect(try store.fetch(id: 100)?.name == "Nemo")
    let cows = RequestSet(store).filter(\.species == "Cow")
    #expect(try cows.fetchCount() == Animal.zoo.filter { $0.species == "Cow" }.count)
    #expect(try await cows.async.fetchCount() == Animal.zoo.filter { $0.species == "Cow" }.count)
    #expect(try RequestSet(store).sum(\.age) == Animal.zoo.map(\.age).reduce(1, +))
    #expect(
      try RequestSet(store).groupBy("species").aggregate(.count).fetch().count
        == Set(Animal.zoo.map(\.species) + ["Fish"]).count)
    #expect(try store.snapshot().count == Animal.zoo.count + 1)
    #expect(
      try store.records(sql: "SELECT body FROM animals ORDER BY seq").fetch().count == Animal.zoo.count + 1)
    #expect(replicas._primaryReads.load(ordering: .relaxed) == 0)
    #expect(replicas._replicaReads.load(ordering: .relaxed) > 0)
    #expect(store.lastReadServer == replica)

    let plain = try PostgresStore<Animal>(url: primary, table: "animals")
    defer { plain.close() }
    #expect(try !Self.readsOnStandby(plain))
    #expect(plain.lastReadServer == primary)
  }

  /// Read-your-writes: 200 random writes (inserts, saves, deletes, some through a query),
  /// each followed by a random read through the replica-backed store, which must see it.
  /// With a generous bound every read runs on the standby, after it replayed the write.
  @Test func readYourWritesHoldsAcross200RandomWritesAndReads() throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(replicas: [replica], replicaWait: .seconds(30)))
    defer { store.close() }
    var random = SeededRandom(seed: 37)
    var reference = Dictionary(uniqueKeysWithValues: Animal.zoo.map { ($0.id, $0) })
    let species = ["Cow", "Dog", "Cat", "Fish"]
    var nextID = 1000
    for trial in 0..<200 {
      // A write.
      switch Int.random(in: 0..<4, using: &random) {
      case 0:
        nextID += 1
        let animal = Animal(
          id: nextID, name: "N\(nextID)", species: species.randomElement(using: &random)!,
          age: Int.random(in: 0...20, using: &random))
        try store.insert(animal)
        reference[animal.id] = animal
      case 1:
        guard var animal = reference.values.randomElement(using: &random) else { continue }
        animal.age = Int.random(in: 0...20, using: &random)
        try store.save(animal)
        reference[animal.id] = animal
      case 2:
        guard let id = reference.keys.randomElement(using: &random) else { continue }
        try store.delete(id: id)
        reference[id] = nil
      default:
        let kind = species.randomElement(using: &random)!
        let age = Int.random(in: 0...20, using: &random)
        try RequestSet(store).filter(\.species == kind).update("age", value: age)
        for (id, animal) in reference where animal.species == kind { reference[id]?.age = age }
      }
      // A read that must see it.
      let kind = species.randomElement(using: &random)!
      switch Int.random(in: 0..<4, using: &random) {
      case 0:
        let id = reference.keys.randomElement(using: &random) ?? 1
        #expect(try store.fetch(id: id) == reference[id], "trial \(trial)")
      case 1:
        #expect(
          try RequestSet(store).filter(\.species == kind).fetchCount()
            == reference.values.filter { $0.species == kind }.count, "trial \(trial)")
      case 2:
        #expect(
          try RequestSet(store).sortBy(\.id).fetch() == reference.values.sorted { $0.id < $1.id },
          "trial \(trial)")
      default:
        #expect(
          try store.records(sql: "SELECT body FROM animals ORDER BY seq").fetch().count == reference.count,
          "trial \(trial)")
      }
    }
    let replicas = try #require(store._replicas)
    #expect(replicas._primaryReads.load(ordering: .relaxed) == 0)
    #expect(replicas._replicaReads.load(ordering: .relaxed) >= 200)
  }

  /// A standby stopped mid-use: reads fall back to the primary with no error and answer
  /// right (a write included); once the standby is back and `replicaRetry` has passed,
  /// reads go to it again.
  @Test func aStoppedReplicaFallsBackToThePrimaryAndIsTriedAgain() async throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(
        replicas: [replica], replicaWait: .seconds(30), replicaRetry: .milliseconds(200)))
    defer { store.close() }
    #expect(try Self.readsOnStandby(store))
    try standby.pause()
    #expect(try !Self.readsOnStandby(store))
    #expect(store.lastReadServer == primary)
    try store.insert(Animal(id: 100, name: "Nemo", species: "Fish", age: 1))
    #expect(try store.fetch(id: 100)?.name == "Nemo")
    #expect(try RequestSet(store).fetchCount() == Animal.zoo.count + 1)
    #expect(try await RequestSet(store).filter(\.species == "Fish").async.fetch().map(\.id) == [100])
    try standby.resume()
    #expect(try await eventually { try Self.readsOnStandby(store) })
    #expect(try store.fetch(id: 100)?.name == "Nemo")
  }

  /// A standby frozen with SIGSTOP (it still accepts connections, and answers nothing):
  /// the read under way on it gives up after the statement timeout, and it and later reads
  /// run on the primary, with no error; the standby is skipped meanwhile.
  @Test func aFrozenReplicaFallsBackToThePrimary() throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(
        connectTimeout: .seconds(2), statementTimeout: .seconds(2), replicas: [replica],
        replicaWait: .seconds(30)))
    defer { store.close() }
    #expect(try Self.readsOnStandby(store))
    try standby.freeze()
    #expect(try RequestSet(store).sortBy(\.id).fetch() == Animal.zoo.sorted { $0.id < $1.id })
    #expect(store.lastReadServer == primary)
    try store.insert(Animal(id: 100, name: "Nemo", species: "Fish", age: 1))
    #expect(try store.fetch(id: 100)?.name == "Nemo")
    #expect(try !Self.readsOnStandby(store))
    standby.thaw()
  }

  /// A standby whose replay is paused (`pg_wal_replay_pause()`), so it lags: a read with
  /// nothing of this store's to wait for sees it as it is, without another process's
  /// commit (the documented staleness); a read after this store's own write waits
  /// `replicaWait` for it, then reads the primary and sees the write; a write through a
  /// query that read the stale standby first (its version check fails) reads again after
  /// the commit it missed, and goes through.
  @Test func aLaggingReplicaIsWaitedForThenThePrimaryIsRead() async throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(replicas: [replica], replicaWait: .milliseconds(300)))
    defer { store.close() }
    let other = try PostgresStore<Animal>(url: primary, table: "animals")
    defer { other.close() }
    // The standby has replayed the store's opening before it is paused.
    #expect(try await eventually { try Self.readsOnStandby(store) })
    let control = try _PGConnection(_ConnectionString(replica))
    try control.execute("SELECT pg_wal_replay_pause()")
    defer { _ = try? control.execute("SELECT pg_wal_replay_resume()") }

    let cow = try #require(Animal.zoo.first { $0.species == "Cow" })
    var older = cow
    older.age += 40
    try other.save(older)
    try other.insert(Animal(id: 200, name: "Other", species: "Fish", age: 2))
    #expect(try store.fetch(id: 200) == nil)  // the standby's state: it lags
    #expect(try store.fetch(id: cow.id)?.age == cow.age)
    #expect(store.lastReadServer == replica)

    // Read on the standby (stale), refused by the version check, read again after the
    // commit it missed (the primary, as the standby is paused), applied.
    let cows = Animal.zoo.filter { $0.species == "Cow" }.count
    #expect(try RequestSet(store).filter(\.species == "Cow").update { $0.age += 10 } == cows)
    #expect(try other.fetch(id: cow.id)?.age == cow.age + 50)

    try store.insert(Animal(id: 100, name: "Nemo", species: "Fish", age: 1))
    #expect(try store.fetch(id: 100)?.name == "Nemo")  // waited, then read the primary
    #expect(store.lastReadServer == primary)
    #expect(try RequestSet(store).filter(\.species == "Fish").fetchCount() == 2)

    try control.execute("SELECT pg_wal_replay_resume()")
    #expect(try RequestSet(store).filter(\.species == "Fish").sortBy(\.id).fetch().map(\.id) == [100, 200])
    #expect(store.lastReadServer == replica)
  }

  /// A replica that is not a standby is refused at open, with a message that says how to
  /// fix it; a connection string libpq cannot parse is `.invalidFormat`; a bound that is
  /// not positive is `.invalidOptions`. A replica that does not answer at open is no
  /// error: reads go to the primary.
  @Test func aReplicaThatIsNotAStandbyIsRefused() throws {
    let database = try PostgresPoolTests.freshDatabase()
    let primary = try PostgresServer.url(database: database)
    let notStandby = #expect(throws: RequestSetError.self) {
      try PostgresStore<Animal>(url: primary, options: PostgresConnectionOptions(replicas: [primary]))
    }
    #expect(notStandby?.code == .invalidOptions)
    #expect(
      notStandby?.message
        == "The replica \(primary) is not a hot standby (pg_is_in_recovery() is false there), so reads from it "
        + "would not follow the primary's writes. Pass the connection string of a standby of the primary (one made "
        + "with pg_basebackup -R, whose data folder holds standby.signal), or remove it from "
        + "PostgresConnectionOptions.replicas.")
    let badString = #expect(throws: RequestSetError.self) {
      try PostgresStore<Animal>(url: primary, options: PostgresConnectionOptions(replicas: ["host=x port"]))
    }
    #expect(badString?.code == .invalidFormat)
    #expect(
      badString?.message.hasPrefix(
        "The connection string of replica 0 (host=x port) in PostgresConnectionOptions.replicas is not usable: libpq cannot parse it"
      ) == true)
    let zero = #expect(throws: RequestSetError.self) {
      try PostgresStore<Animal>(
        url: primary, options: PostgresConnectionOptions(replicas: [primary], replicaWait: .zero))
    }
    #expect(zero?.message == "PostgresConnectionOptions.replicaWait is 0.0 seconds; it must be positive.")

    let unreachable = "postgresql://postgres@127.0.0.1:1/\(database)?connect_timeout=5"
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals", options: PostgresConnectionOptions(replicas: [unreachable]))
    defer { store.close() }
    try store.insert(contentsOf: Animal.zoo)
    #expect(try RequestSet(store).fetchCount() == Animal.zoo.count)
    #expect(store.lastReadServer == primary)
    // Its reads wait for its own commits only, so relations through it are semi-joins, not
    // one statement over another store's table (see `PostgresStore.location`).
    #expect(store.location == nil)
    let plain = try PostgresStore<Animal>(url: primary, table: "animals")
    defer { plain.close() }
    #expect(plain.location != nil)
  }

  /// Random queries (filters, sorts, counts, aggregates, groups, raw SQL, async) answer
  /// the same on the replica-backed store as on the same table without replicas.
  @Test func randomQueriesAnswerAsWithoutReplicas() async throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let replicated = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(replicas: [replica], replicaWait: .seconds(30)))
    defer { replicated.close() }
    let direct = try PostgresStore<Animal>(url: primary, table: "animals")
    defer { direct.close() }
    var random = SeededRandom(seed: 3737)
    let more = (0..<150).map { i in
      Animal(
        id: 100 + i, name: "A\(Int.random(in: 0..<40, using: &random))",
        species: ["Cow", "Dog", "Cat", "Fish"].randomElement(using: &random)!,
        age: Int.random(in: 0...20, using: &random),
        weight: Double(Int.random(in: 1...900, using: &random)),
        nickname: Bool.random(using: &random) ? "n" : nil)
    }
    try replicated.insert(contentsOf: more)
    for trial in 0..<60 {
      let age = Int.random(in: 0...20, using: &random)
      let kind = ["Cow", "Dog", "Cat", "Fish", "Mouse"].randomElement(using: &random)!
      let (byAge, bySpecies) = (Bool.random(using: &random), Bool.random(using: &random))
      func query(_ store: PostgresStore<Animal>) -> RequestSet<Animal> {
        var set = RequestSet(store)
        if byAge { set = set.filter(\.age > age) }
        if bySpecies { set = set.filter(\.species == kind) }
        return set.sortBy(["-age", "name", "id"])
      }
      let a = query(replicated)
      let b = query(direct)
      #expect(try a.fetch() == b.fetch(), "trial \(trial)")
      #expect(try a.fetchCount() == b.fetchCount(), "trial \(trial)")
      #expect(try a.sum(\.weight) == b.sum(\.weight), "trial \(trial)")
      #expect(try await a.async.fetch() == b.fetch(), "trial \(trial)")
      let groups = { (set: RequestSet<Animal>) in
        try set.groupBy("species").aggregate(.count, .max("age")).sortBy("species").fetch().map { "\($0)" }
      }
      #expect(try groups(a) == groups(b), "trial \(trial)")
      let sql = "SELECT body FROM animals WHERE (body->>'age')::int <= $1 ORDER BY seq"
      #expect(
        try replicated.records(sql: sql, arguments: [age]).fetch()
          == direct.records(sql: sql, arguments: [age]).fetch(), "trial \(trial)")
    }
    #expect(try Self.readsOnStandby(replicated))
    #expect(try #require(replicated._replicas)._primaryReads.load(ordering: .relaxed) == 0)
  }

  /// A live set over the replica-backed store sees each commit of another process (a
  /// store without replicas) when it re-reads: the re-read waits for the standby to replay
  /// the commit its listener (on the primary) heard of.
  @Test func aLiveSetOnAReplicaSeesEachCommit() async throws {
    let (primary, replica, standby) = try Self.standbyPair()
    defer { standby.stop() }
    let store = try PostgresStore<Animal>(
      url: primary, table: "animals",
      options: PostgresConnectionOptions(replicas: [replica], replicaWait: .seconds(30)))
    defer { store.close() }
    let writer = try PostgresStore<Animal>(url: primary, table: "animals")
    defer { writer.close() }
    let reader = StateReader(RequestSet(store).filter(\.species == "Fish").sortBy(\.id))
    #expect(try await reader.next()?.records.map(\.id) == [])
    for id in 100..<105 {
      try writer.insert(Animal(id: id, name: "F\(id)", species: "Fish", age: 1))
      #expect(try await reader.next()?.records.map(\.id) == Array(100...id))
    }
    #expect(try #require(store._replicas)._replicaReads.load(ordering: .relaxed) > 0)
  }
}
