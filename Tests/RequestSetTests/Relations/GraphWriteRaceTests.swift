import Foundation
import RequestSetSQLite
import Synchronization
import Testing

@testable import RequestSet

/// Writes through a graph that race: one thread inserts visits of a pet while another
/// deletes the pet. Whatever the interleaving, a `.cascade` delete leaves no visit pointing
/// at the deleted pet, and a `.deny` delete never happens while a visit points at it.
@Suite(.ownThreads) struct GraphWriteRaceTests {
  /// The stores the races run on: each kind of storage a graph writes to.
  static let kinds: [StoreKind] = [.memory, .log, .sqlite] + (PostgresServer.testsRun ? [.postgres] : [])

  /// Trials per store and rule: at least 200 in all, across the three in-process kinds.
  static let trials = TestScale.pick(quick: 34, soak: 200)

  @Test(arguments: kinds)
  func aCascadeThatRacesAnInsertLeavesNoDanglingVisit(kind: StoreKind) async throws {
    let (pets, visits) = (try kind.makeStore(of: RacePet.self), try kind.makeStore(of: RaceCascadeVisit.self))
    let graph = try RecordGraph(pets, visits)
    let outcome = try await onOwnThread {
      try RaceTrials.run(RaceCascadeVisit.self, Self.trials, inserting: graph, deleting: graph)
    }
    outcome.expectClean("\(kind)")
  }

  @Test(arguments: kinds)
  func aDenyThatRacesAnInsertNeverDeletesAPetPointedAt(kind: StoreKind) async throws {
    let (pets, visits) = (try kind.makeStore(of: RacePet.self), try kind.makeStore(of: RaceDenyVisit.self))
    let graph = try RecordGraph(pets, visits)
    let outcome = try await onOwnThread {
      try RaceTrials.run(RaceDenyVisit.self, Self.trials, inserting: graph, deleting: graph)
    }
    outcome.expectClean("\(kind)")
  }

  /// Two graphs over the same stores: the inserts go through one, the deletes through the
  /// other, and still exclude each other.
  @Test(arguments: [StoreKind.memory, .sqlite])
  func twoGraphsOverTheSameStoresExcludeEachOther(kind: StoreKind) async throws {
    let pets = try kind.makeStore(of: RacePet.self)
    let cascading = try kind.makeStore(of: RaceCascadeVisit.self)
    let denying = try kind.makeStore(of: RaceDenyVisit.self)
    let cascade = try await onOwnThread {
      try RaceTrials.run(
        RaceCascadeVisit.self, Self.trials, inserting: try RecordGraph(pets, cascading),
        deleting: try RecordGraph(pets, cascading))
    }
    cascade.expectClean("\(kind) cascade")
    let deny = try await onOwnThread {
      try RaceTrials.run(
        RaceDenyVisit.self,
        Self.trials, firstPet: 1_000_000, inserting: try RecordGraph(pets, denying),
        deleting: try RecordGraph(pets, denying))
    }
    deny.expectClean("\(kind) deny")
  }

  /// Two graphs over two sets of store objects that open the same SQLite tables: the lock
  /// is the process's, not a store object's.
  @Test func twoGraphsOverTwoStoreObjectsOfTheSameTablesExcludeEachOther() async throws {
    let path = TemporaryLogDirectory.freshPath("race.sqlite")
    let first = try RecordGraph(
      try SQLiteStore<RacePet>(path: path, table: "pets"),
      try SQLiteStore<RaceCascadeVisit>(path: path, table: "visits"))
    let second = try RecordGraph(
      try SQLiteStore<RacePet>(path: path, table: "pets"),
      try SQLiteStore<RaceCascadeVisit>(path: path, table: "visits"))
    let outcome = try await onOwnThread {
      try RaceTrials.run(RaceCascadeVisit.self, Self.trials, inserting: first, deleting: second)
    }
    outcome.expectClean("two store objects per table")
  }

  /// A write made to a store directly checks nothing (the lock and the relations are the
  /// graph's); the query the docs give finds the visits it left pointing at no pet.
  @Test func aQueryFindsTheVisitsADirectWriteLeftDangling() throws {
    let visits = MemoryStore<RaceCascadeVisit>()
    let graph = try RecordGraph(MemoryStore<RacePet>(), visits)
    try graph.insert(contentsOf: [RacePet(id: 1), RacePet(id: 2)])
    try graph.insert(contentsOf: [RaceCascadeVisit(id: 1, petID: 1), RaceCascadeVisit(id: 2, petID: 2)])
    try visits.insert(RaceCascadeVisit(id: 3, petID: 77))
    #expect(try graph.records(RaceCascadeVisit.self).filter("pet == nil").fetch().map(\.id) == [3])
  }

  /// A graph write made from inside another on the same thread (here from the filter
  /// closure of the set being deleted) throws `.locked` rather than waiting on itself.
  @Test func aGraphWriteInsideAGraphWriteThrowsInsteadOfDeadlocking() throws {
    let graph = try RecordGraph(MemoryStore<RacePet>(), MemoryStore<RaceCascadeVisit>())
    try graph.insert(contentsOf: [RacePet(id: 1), RacePet(id: 2)])
    let inner = _Lock<RequestSetError?>(nil)
    let deleted = try graph.delete(
      graph.records(RacePet.self).filter { pet in
        if pet.id == 1 {
          do { try graph.insert(RaceCascadeVisit(id: 1, petID: 2)) } catch {
            inner.withLock { $0 = error as? RequestSetError }
          }
        }
        return pet.id == 1
      })
    #expect(deleted == 1)
    let error = inner.withLock { $0 }
    #expect(error?.code == .locked)
    #expect(error?.message.contains("inside another graph write") == true, "\(error?.message ?? "")")
    #expect(graph.records(RaceCascadeVisit.self).count == 0)
    // The lock was released: the same write now succeeds.
    try graph.insert(RaceCascadeVisit(id: 1, petID: 2))
  }
}

struct RacePet: Record, Equatable {
  var id: Int
}

/// A visit of the races, generic over its relation's delete rule.
protocol RaceVisit: Record where ID == Int {
  init(id: Int, petID: Int)
  var petID: Int { get }
}

struct RaceCascadeVisit: RaceVisit, Equatable {
  var id: Int
  var petID: Int
}

extension RaceCascadeVisit: RelatedRecord {
  static let relations: [any Relation<RaceCascadeVisit>] = [
    ToOne<RaceCascadeVisit, RacePet>("pet", \.petID, onDelete: .cascade)
  ]
}

struct RaceDenyVisit: RaceVisit, Equatable {
  var id: Int
  var petID: Int
}

extension RaceDenyVisit: RelatedRecord {
  static let relations: [any Relation<RaceDenyVisit>] = [
    ToOne<RaceDenyVisit, RacePet>("pet", \.petID, onDelete: .deny)
  ]
}

/// Runs trials of one thread inserting a pet's visits while another deletes the pet.
enum RaceTrials {
  /// What the trials left.
  struct Outcome: CustomStringConvertible {
    var trials = 0
    /// Visits that point at a pet the race deleted: dangling references, or visits a
    /// `.deny` delete went past.
    var pointingAtDeletedPets = 0
    /// Trials whose delete went through.
    var deletes = 0
    /// Visits left in the stores in all.
    var left = 0
    /// Errors neither side should meet: anything but `.danglingReference` on the insert
    /// side (the pet is gone) and `.deleteDenied` on the delete side.
    var unexpected: [String] = []

    /// Checks that no visit points at a deleted pet, that nothing unexpected was thrown,
    /// and that every trial's pet was deleted in the end (the race was run, not skipped).
    func expectClean(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
      #expect(pointingAtDeletedPets == 0, "\(label): \(self)", sourceLocation: sourceLocation)
      #expect(unexpected.isEmpty, "\(label): \(unexpected.prefix(3))", sourceLocation: sourceLocation)
      #expect(deletes == trials, "\(label): \(self)", sourceLocation: sourceLocation)
    }

    var description: String {
      "\(trials) trials: \(pointingAtDeletedPets) visits point at deleted pets; \(deletes) deletes went through, "
        + "\(left) visits left"
    }
  }

  /// The most visits one trial inserts, and the most times it tries the delete.
  static let attemptsPerTrial = 20

  /// Runs `trials` races: pet `firstPet + t` is stored, then two threads are released at
  /// once. One inserts a visit of the pet through `inserting`, checks that the pet is
  /// still there (if not, it stops: the visit is the evidence) and deletes the visit, again
  /// and again; the other deletes the pet through `deleting`, retrying while a `.deny` rule
  /// refuses. Each round trip reopens the window between a check and its write, so one
  /// trial races many times. Afterwards the trial counts the visits that point at the pet
  /// if it is gone.
  static func run<V: RaceVisit>(
    _ visit: V.Type, _ trials: Int, firstPet: Int = 1, inserting: RecordGraph, deleting: RecordGraph
  ) throws -> Outcome {
    guard let pets = inserting.store(for: RacePet.self), let visits = inserting.store(for: V.self) else {
      throw RequestSetError(.invalidRelation, "The race's graph holds no store of RacePet or \(V.self).")
    }
    var outcome = Outcome()
    for t in 0..<trials {
      let pet = firstPet + t
      try inserting.insert(RacePet(id: pet))
      let errors = _Lock<[String]>([])
      let deleted = Atomic<Bool>(false)
      let insertsDone = Atomic<Bool>(false)
      let ready = DispatchSemaphore(value: 0)
      let go = DispatchSemaphore(value: 0)
      let done = DispatchGroup()
      done.enter()
      Thread {
        defer {
          insertsDone.store(true, ordering: .relaxed)
          done.leave()
        }
        ready.signal()
        go.wait()
        for v in 0..<attemptsPerTrial {
          let id = pet * attemptsPerTrial + v
          do {
            try inserting.insert(V(id: id, petID: pet))
            if try pets.fetch(id: pet) == nil { return }
            try inserting.delete(V.self, id: id)
          } catch let error as RequestSetError where error.code == .danglingReference {
            return
          } catch {
            errors.withLock { $0.append("insert: \(error)") }
            return
          }
        }
      }.start()
      done.enter()
      Thread {
        defer { done.leave() }
        ready.signal()
        go.wait()
        for attempt in 0..<attemptsPerTrial {
          do {
            // The last attempt waits for the inserts to end, so that most trials delete.
            if attempt == attemptsPerTrial - 1 { while !insertsDone.load(ordering: .relaxed) { usleep(100) } }
            deleted.store(try deleting.delete(RacePet.self, id: pet), ordering: .relaxed)
            return
          } catch let error as RequestSetError where error.code == .deleteDenied {
            continue
          } catch {
            errors.withLock { $0.append("delete: \(error)") }
            return
          }
        }
      }.start()
      ready.wait()
      ready.wait()
      go.signal()
      go.signal()
      done.wait()
      let pointing = RequestSet(visits).filter("petID", value: pet).count
      let petGone = try pets.fetch(id: pet) == nil
      if petGone { outcome.pointingAtDeletedPets += pointing }
      if deleted.load(ordering: .relaxed) != petGone {
        errors.withLock {
          $0.append("trial \(t): delete returned \(!petGone) but the pet is \(petGone ? "gone" : "there")")
        }
      }
      outcome.trials += 1
      outcome.deletes += petGone ? 1 : 0
      outcome.left += pointing
      outcome.unexpected += errors.withLock { $0 }
    }
    return outcome
  }
}
