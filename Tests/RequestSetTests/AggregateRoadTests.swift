import Foundation
import RequestSet
import Testing

/// Every aggregate answers alike on every road: synchronous, `.async`, and through a
/// generic caller that can only name the widest overload (`AdditiveArithmetic`,
/// `Comparable`), as `.async` itself once did. Seeded random records on every store, with
/// totals that overflow and NaNs; each outcome is a value or an error code.
@Suite(.ownThreads) struct AggregateRoadTests {
  struct Gauge: Record, Equatable {
    var id: Int
    var count: Int
    var small: Int8
    var reading: Double
    var ratio: Float
    var name: String
  }

  /// A value or the code of the error that replaced it.
  enum Outcome<Value: Equatable>: Equatable, CustomStringConvertible {
    case value(Value)
    case error(RequestSetError.Code)
    case other(String)

    init(_ body: () throws -> Value) {
      do { self = .value(try body()) } catch let error as RequestSetError { self = .error(error.code) } catch {
        self = .other("\(error)")
      }
    }

    init(async body: () async throws -> Value) async {
      do { self = .value(try await body()) } catch let error as RequestSetError { self = .error(error.code) } catch {
        self = .other("\(error)")
      }
    }

    var description: String {
      switch self {
      case .value(let v): return "\(v)"
      case .error(let c): return "error \(c)"
      case .other(let e): return "other \(e)"
      }
    }
  }

  /// The generic road: a caller that knows only `AdditiveArithmetic` or `Comparable`.
  static func genericSum<V: AdditiveArithmetic>(_ set: RequestSet<Gauge>, _ keyPath: KeyPath<Gauge, V> & Sendable)
    throws -> V
  { try set.sum(keyPath) }
  static func genericMin<V: Comparable>(_ set: RequestSet<Gauge>, _ keyPath: KeyPath<Gauge, V> & Sendable) throws -> V?
  { try set.min(keyPath) }
  static func genericMax<V: Comparable>(_ set: RequestSet<Gauge>, _ keyPath: KeyPath<Gauge, V> & Sendable) throws -> V?
  { try set.max(keyPath) }

  /// NaN-aware equality for the optional floating answers.
  static func same<F: BinaryFloatingPoint>(_ a: Outcome<F?>, _ b: Outcome<F?>) -> Bool {
    switch (a, b) {
    case (.value(let x?), .value(let y?)): return x == y || (x.isNaN && y.isNaN)
    default: return a == b
    }
  }

  static func gauges(seed: UInt64) -> [Gauge] {
    var rng = SeededRandom(seed: seed)
    return (0..<Int.random(in: 0...30, using: &rng)).map { i in
      let big = Int.random(in: 0..<4, using: &rng) == 0
      return Gauge(
        id: i,
        count: big ? Int.max - Int.random(in: 0...3, using: &rng) : Int.random(in: -50...50, using: &rng),
        small: Int8.random(in: -40...40, using: &rng),
        reading: Int.random(in: 0..<6, using: &rng) == 0 ? .nan : Double(Int.random(in: -9...9, using: &rng)) / 4,
        ratio: Int.random(in: 0..<6, using: &rng) == 0 ? .nan : Float(Int.random(in: -9...9, using: &rng)),
        name: ["ox", "ant", "yak", "emu"].randomElement(using: &rng)!)
    }
  }

  @Test(arguments: StoreKind.writable)
  func syncAsyncAndGenericAggregatesAgree(kind: StoreKind) async throws {
    for seed in UInt64(1)...UInt64(TestScale.pick(quick: 12, soak: 60)) {
      let store = try kind.makeStore(of: Gauge.self)
      defer { store.close() }
      let records = Self.gauges(seed: seed)
      try store.insert(contentsOf: records)
      var rng = SeededRandom(seed: seed &* 7)
      let bound = Int.random(in: -60...60, using: &rng)
      let sets = [RequestSet(store), RequestSet(store).filter(\.small > Int8(clamping: bound / 2))]
      for set in sets {
        let at = "\(kind) seed \(seed)"
        // Integer sums: exact, or .overflow, on every road.
        let sum = Outcome { try set.refreshed().sum(\.count) }
        #expect(await Outcome(async: { try await set.refreshed().async.sum(\.count) }) == sum, "\(at)")
        #expect(Outcome { try Self.genericSum(set.refreshed(), \.count) } == sum, "\(at)")
        #expect(Outcome { try set.refreshed().sum("count") } == sum.map { .int($0) }, "\(at)")
        let small = Outcome { try set.refreshed().sum(\.small) }
        #expect(await Outcome(async: { try await set.refreshed().async.sum(\.small) }) == small, "\(at)")
        #expect(Outcome { try Self.genericSum(set.refreshed(), \.small) } == small, "\(at)")
        // Floating min and max skip NaN on every road.
        do {
          let keyPath = \Gauge.reading
          let min = Outcome { try set.refreshed().min(keyPath) }
          #expect(Self.same(await Outcome(async: { try await set.refreshed().async.min(keyPath) }), min), "\(at)")
          #expect(Self.same(Outcome { try Self.genericMin(set.refreshed(), keyPath) }, min), "\(at)")
          let max = Outcome { try set.refreshed().max(keyPath) }
          #expect(Self.same(await Outcome(async: { try await set.refreshed().async.max(keyPath) }), max), "\(at)")
          #expect(Self.same(Outcome { try Self.genericMax(set.refreshed(), keyPath) }, max), "\(at)")
          let members = Set(try set.refreshed().ids())
          let reference = records.filter { members.contains($0.id) }.map(\.reading).filter { !$0.isNaN }
          #expect(Self.same(min, .value(reference.min())), "\(at)")
        }
        let ratioMax = Outcome { try set.refreshed().max(\.ratio) }
        #expect(Self.same(await Outcome(async: { try await set.refreshed().async.max(\.ratio) }), ratioMax), "\(at)")
        #expect(Self.same(Outcome { try Self.genericMax(set.refreshed(), \.ratio) }, ratioMax), "\(at)")
        // Averages, string keys, min/max of integers and strings.
        #expect(
          await Outcome(async: { try await set.refreshed().async.average(\.count) })
            == Outcome { try set.refreshed().average(\.count) }, "\(at)")
        #expect(
          await Outcome(async: { try await set.refreshed().async.min(\.name) })
            == Outcome { try set.refreshed().min(\.name) }, "\(at)")
        #expect(
          await Outcome(async: { try await set.refreshed().async.max(\.count) })
            == Outcome { try set.refreshed().max(\.count) }, "\(at)")
        #expect(
          await Outcome(async: { try await set.refreshed().async.sum("small") })
            == Outcome { try set.refreshed().sum("small") }, "\(at)")
      }
    }
  }

  @Test func asyncSumOfTwoNearMaxIntsThrowsOverflowInAChildProcess() throws {
    let result = try AdversaryChild.run("asyncSumOverflow")
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.first == "error overflow", "\(result)")
  }
}

extension AggregateRoadTests.Outcome {
  func map<T: Equatable>(_ transform: (Value) -> T) -> AggregateRoadTests.Outcome<T> {
    switch self {
    case .value(let v): return .value(transform(v))
    case .error(let c): return .error(c)
    case .other(let e): return .other(e)
    }
  }
}
