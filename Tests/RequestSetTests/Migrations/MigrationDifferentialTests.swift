import Foundation
import RequestSet
import Testing

/// Seeded random migrations on random records: every store gives what
/// `Migrator.migrate(_:)` computes in memory, record for record, and fails where it fails
/// with the same message. On a log, migrations of top-level keys take the byte-editing
/// path and the others the decoding one; on the SQL stores, statements and the
/// record-by-record path.
@Suite(.ownThreads) struct MigrationDifferentialTests {
  static let keys = ["a", "b", "c", "d", "e"]
  /// Keys no record holds before the migration: only a step can bring them in, so later
  /// steps must see what earlier ones did (`rename a→f` then `convert f`).
  static let newKeys = ["f", "g"]
  static let values: [FieldValue] = [
    .null, .int(1), .int(-7), .double(2.5), .double(3), .string("x"), .bool(true), .array([.int(1), .null]),
    .object(["c": .int(3), "a": .string("in")]), .decimal(Decimal(string: "1.25")!), .uint(UInt64.max), .array([]),
  ]

  static func records(_ rng: inout SeededRandom, count: Int) -> [DynamicRecord] {
    (0..<count).map { i in
      var fields: [String: FieldValue] = [:]
      for key in keys where rng.next() % 3 != 0 {
        fields[key] = values[Int(rng.next() % UInt64(values.count))]
      }
      return DynamicRecord(id: .int(i), fields: fields)
    }
  }

  static func migration(_ rng: inout SeededRandom, round: Int, nested: Bool) -> Migration {
    let pool = keys + newKeys
    func key() -> String {
      let k = pool[Int(rng.next() % UInt64(pool.count))]
      return nested && rng.next() % 3 == 0 ? "\(k).\(keys[Int(rng.next() % 2)])" : k
    }
    let conversions: [Migration.Conversion] = [.toDouble, .toString, .toArray, .toInt]
    var steps: [Migration.Step] = []
    for _ in 0..<(1 + Int(rng.next() % 6)) {
      switch rng.next() % 4 {
      case 0: steps.append(.add(key(), default: values[Int(rng.next() % UInt64(values.count))]))
      case 1: steps.append(.rename(key(), to: key()))
      case 2: steps.append(.remove(key()))
      default: steps.append(.convert(key(), conversions[Int(rng.next() % UInt64(conversions.count))]))
      }
    }
    return Migration("round \(round)", steps: steps)
  }

  /// With `sameFailure`, a failure must carry the same message; the SQL stores run one
  /// step on every record before the next, so when two steps fail on different records
  /// they may name the other one (the migration and the error code are the same).
  func check(
    _ kind: String, round: Int, nested: Bool, sameFailure: Bool = true,
    open: (Migrator, [DynamicRecord]) throws -> [DynamicRecord]
  ) {
    var rng = SeededRandom(seed: UInt64(1000 + round))
    let records = Self.records(&rng, count: 40)
    let migration = Self.migration(&rng, round: round, nested: nested)
    let migrator = Migrator([migration])
    let expected = Result { try migrator.migrate(records) }
    let actual = Result { try open(migrator, records) }
    switch (expected, actual) {
    case (.success(let e), .success(let a)):
      // Strictly: `FieldValue`'s == holds 30 == 30.0, which hid a convert to Double that
      // left an Int.
      #expect(a.count == e.count && zip(a, e).allSatisfy { Self.strictlyEqual(.object($0.fields), .object($1.fields)) },
        "\(kind): \(migration)\n\(a)\n\(e)")
    case (.failure(let e as RequestSetError), .failure(let a as RequestSetError)):
      #expect(a.code == .migrationFailed && (a.message == e.message || !sameFailure), "\(kind): \(migration)\n\(a)\n\(e)")
      #expect(a.message.contains("The migration \"\(migration.name)\" failed on the record with id"))
    default:
      Issue.record("\(kind): \(migration): expected \(expected), got \(actual)")
    }
  }

  /// Equal with every value of the same kind: `.int(30)` is not `.double(30)`.
  static func strictlyEqual(_ a: FieldValue, _ b: FieldValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.int(let x), .int(let y)): return x == y
    case (.uint(let x), .uint(let y)): return x == y
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern || x == y
    case (.decimal(let x), .decimal(let y)): return x == y
    case (.string(let x), .string(let y)): return x == y
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { strictlyEqual($0, $1) }
    case (.object(let x), .object(let y)):
      return Set(x.keys) == Set(y.keys) && x.keys.allSatisfy { strictlyEqual(x[$0]!, y[$0]!) }
    default: return false
    }
  }

  /// The README's migration and the step orders that once went wrong on a log's byte
  /// editor, each against `Migrator.migrate`.
  @Test func chainedStepsOnALogMigrateAsPlainSwiftComputes() throws {
    let cases: [[Migration.Step]] = [
      [.rename("a", to: "f"), .convert("f", .toDouble)],
      [.add("f", default: .int(3)), .convert("f", .toString)],
      [.rename("a", to: "f"), .remove("f")],
      [.rename("a", to: "g"), .rename("b", to: "a"), .rename("g", to: "b")],
      [.rename("a", to: "f"), .rename("f", to: "g"), .convert("g", .toArray)],
      [.remove("a"), .add("a", default: .string("new")), .convert("a", .toArray)],
    ]
    for (n, steps) in cases.enumerated() {
      let records = (0..<6).map { i in
        DynamicRecord(id: .int(i), fields: ["a": .int(30 + i), "b": i % 2 == 0 ? .string("b\(i)") : .null])
      }
      let migrator = Migrator([Migration("case \(n)", steps: steps)])
      let expected = try migrator.migrate(records)
      let path = TemporaryLogDirectory.freshPath()
      let store = try LogStore<DynamicRecord>(path: path, options: .init())
      try store.insert(contentsOf: records)
      store.close()
      let migrated = try LogStore<DynamicRecord>(path: path, options: .init(migrations: migrator))
      defer { migrated.close() }
      let actual = try RequestSet(migrated).sortBy("id").fetch()
      #expect(
        actual.count == expected.count
          && zip(actual, expected).allSatisfy { Self.strictlyEqual(.object($0.fields), .object($1.fields)) },
        "case \(n): \(steps)\n\(actual)\n\(expected)")
    }
  }

  @Test(arguments: 0..<60)
  func aLogMigratesAsPlainSwiftComputes(round: Int) throws {
    for nested in [false, true] {
      check("log", round: round, nested: nested) { migrator, records in
        let path = TemporaryLogDirectory.freshPath()
        let store = try LogStore<DynamicRecord>(path: path, options: .init())
        try store.insert(contentsOf: records)
        store.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
          let migrated = try LogStore<DynamicRecord>(path: path, options: .init(migrations: migrator))
          return try RequestSet(migrated).fetch()
        } catch {
          #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
          throw error
        }
      }
    }
  }

  @Test(arguments: SQLMigrationKind.available)
  func theSQLStoresMigrateAsPlainSwiftComputes(_ kind: SQLMigrationKind) throws {
    for round in 0..<30 {
      for nested in [false, true] {
        check("\(kind)", round: round, nested: nested, sameFailure: false) { migrator, records in
          let location = kind.freshLocation()
          let store = try kind.open(DynamicRecord.self, at: location)
          try store.insert(contentsOf: records)
          store.close()
          let migrated = try kind.open(DynamicRecord.self, at: location, migrations: migrator)
          defer { migrated.close() }
          return try RequestSet(migrated).sortBy("id").fetch()
        }
      }
    }
  }
}
