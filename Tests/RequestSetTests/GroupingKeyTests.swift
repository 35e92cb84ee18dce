import Foundation
import RequestSet
import RequestSetSQLite
import Testing

/// Everything that puts values in buckets (sections, their diff, groups, distinct, unique
/// indexes, `mode:`) treats NaN, -0.0, numbers of mixed kinds and nil as `groupBy` does:
/// every NaN is one value, at any depth; -0.0 is 0; 1 is 1.0.
@Suite(.ownThreads) struct GroupingKeyTests {
  struct Reading: Record, Equatable {
    var id: Int
    var value: Double
    var series: [Double]
    var label: String?
  }

  static let readings: [Reading] = [
    Reading(id: 1, value: .nan, series: [1, .nan], label: nil),
    Reading(id: 2, value: 1, series: [1, 2], label: "a"),
    Reading(id: 3, value: .nan, series: [1, .nan], label: nil),
    Reading(id: 4, value: -0.0, series: [.nan], label: "a"),
    Reading(id: 5, value: 0, series: [1, 2], label: "b"),
    Reading(id: 6, value: .nan, series: [.nan], label: nil),
  ]

  /// The buckets a plain Swift reference makes: NaN with NaN, -0.0 with 0.
  static func referenceGroups(_ values: [Double]) -> [[Int]] {
    var keys: [Double] = []
    var groups: [[Int]] = []
    for (i, v) in values.enumerated() {
      if let g = keys.firstIndex(where: { $0 == v || ($0.isNaN && v.isNaN) }) {
        groups[g].append(Self.readings[i].id)
      } else {
        keys.append(v)
        groups.append([Self.readings[i].id])
      }
    }
    return groups
  }

  @Test func sectionsWithNaNKeysDoNotTrapInAChildProcess() throws {
    let result = try AdversaryChild.run("sectionsNaN")
    #expect(result.exitedNormally, "\(result)")
    #expect(result.lines.contains("key nan:1,3 1.0:2 -0.0:4,5"), "\(result)")
    #expect(result.lines.contains("path nan:1,3 1.0:2 -0.0:4,5"), "\(result)")
  }

  @Test(arguments: StoreKind.writable)
  func sectionsAndTheirChangesKeepOneNaNSection(kind: StoreKind) async throws {
    let store = try kind.makeStore(of: Reading.self)
    defer { store.close() }
    try store.insert(contentsOf: Self.readings)
    let set = RequestSet(store).sortBy(\.id)
    let expected = Self.referenceGroups(Self.readings.map(\.value))

    var byKey = set.sectioned(by: "value").makeAsyncIterator()
    let first = try #require(try await byKey.next())
    #expect(first.sections.map { $0.records.map(\.id) } == expected)
    var byPath = set.sectioned(by: \.value).makeAsyncIterator()
    let firstByPath = try #require(try await byPath.next())
    #expect(firstByPath.sections.map { $0.records.map(\.id) } == expected)

    // A new NaN record joins the NaN section: a row inserted, no section deleted or added.
    try store.insert(Reading(id: 7, value: .nan, series: [], label: nil))
    Self.expectJoinedTheNaNSection(try #require(try await byKey.next()))
    Self.expectJoinedTheNaNSection(try #require(try await byPath.next()))
  }

  static func expectJoinedTheNaNSection<Key>(_ state: SectionedSnapshot<Reading, Key>) {
    #expect(state.sections.map { $0.records.map(\.id) } == [[1, 3, 6, 7], [2], [4, 5]])
    #expect(state.insertedSections.isEmpty && state.deletedSections.isEmpty && state.movedSections.isEmpty)
    #expect(state.insertedRows == [SectionedRow(section: 0, row: 3)])
  }

  @Test(arguments: StoreKind.writable)
  func groupsAndDistinctTieNaNAtAnyDepth(kind: StoreKind) throws {
    let store = try kind.makeStore(of: Reading.self)
    defer { store.close() }
    try store.insert(contentsOf: Self.readings)
    let set = RequestSet(store).sortBy(\.id)

    // Rows in key order (NaN last): 0 and -0.0, then 1, then the three NaNs.
    let byValue = try set.groupBy("value").aggregate(.count).fetch()
    #expect(byValue.map { $0["count"] } == [.int(2), .int(1), .int(3)])

    // An array holding NaN: [1, NaN] twice is one value to `distinct`, [NaN] twice another.
    #expect(try set.distinct("series").fetchCount() == 3)
    #expect(try set.distinct("value").fetchCount() == 3)
    #expect(try set.distinct(\.value).fetchCount() == 3)
  }

  @Test func modeCountsEveryNaNAsOneValue() throws {
    let set = RequestSet([Reading(id: 1, value: 0, series: [.nan, 2, .nan], label: nil)])
    // NaN appears twice, 2 once: the mode is NaN (one value), not every value once each.
    let modes = try set.filter("mode:(series).@count == 1").fetchCount()
    #expect(modes == 1)
  }

  @Test func aUniqueIndexCountsEveryNaNAsOneValue() throws {
    let memory = MemoryStore<Reading>()
    let log = try LogStore<Reading>(path: TemporaryLogDirectory.freshPath())
    let sqlite = try SQLiteStore<Reading>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    defer { log.close(); sqlite.close() }

    // Creating a unique index over two NaNs is refused, as two equal values are.
    let nans = [Reading(id: 1, value: .nan, series: [], label: nil), Reading(id: 2, value: .nan, series: [], label: nil)]
    try memory.insert(contentsOf: nans)
    try log.insert(contentsOf: nans)
    try sqlite.insert(contentsOf: nans)
    for create in [{ try memory.createIndex("value", unique: true) }, { try log.createIndex("value", unique: true) },
      { try sqlite.createIndex("value", unique: true) }] as [() throws -> Void]
    {
      let error = #expect(throws: RequestSetError.self) { try create() }
      #expect(error?.code == .uniqueViolation)
    }

    // With the index in place, one batch holding two NaNs is refused whole.
    let freshMemory = MemoryStore<Reading>()
    let freshLog = try LogStore<Reading>(path: TemporaryLogDirectory.freshPath())
    let freshSQLite = try SQLiteStore<Reading>(path: TemporaryLogDirectory.freshPath("store.sqlite"))
    defer { freshLog.close(); freshSQLite.close() }
    try freshMemory.createIndex("value", unique: true)
    try freshLog.createIndex("value", unique: true)
    try freshSQLite.createIndex("value", unique: true)
    let stores: [any RecordStore<Reading>] = [freshMemory, freshLog, freshSQLite]
    for store in stores {
      let error = #expect(throws: RequestSetError.self) { try store.insert(contentsOf: nans) }
      #expect(error?.code == .uniqueViolation, "\(type(of: store))")
      #expect(try RequestSet(store).fetchCount() == 0, "\(type(of: store)): nothing written")
    }
  }
}
