import Foundation
import Synchronization
import Testing

@testable import RequestSet

// The backend of "Writing a backend" (RequestSet.docc/WritingABackend.md), verbatim: the
// test below checks that the article still shows this code, and that the store answers
// as a MemoryStore does.

/// Animals (see the test suites) kept in an array behind a lock.
final class ArchiveStore: RecordStore {
  typealias Element = Animal
  private let state = Mutex<(records: [Animal], version: UInt64)>(([], 0))

  func insert(_ record: Animal) throws { try apply([.insert(record)], ifVersion: nil) }
  func insert(contentsOf records: some Sequence<Animal>) throws {
    try apply(records.map { .insert($0) }, ifVersion: nil)
  }
  func save(_ record: Animal) throws { try apply([.save(record)], ifVersion: nil) }
  func delete(id: Int) throws -> Bool {
    guard try fetch(id: id) != nil else { return false }
    try apply([.delete(id: id)], ifVersion: nil)
    return true
  }

  /// All or nothing; `.conflict` when `expectedVersion` is stale.
  func apply(_ changes: [RecordChange<Animal>], ifVersion expectedVersion: UInt64?) throws {
    try state.withLock { state in
      if let expectedVersion, expectedVersion != state.version {
        throw RequestSetError(
          .conflict, "The archive changed since version \(expectedVersion). Read it again.")
      }
      var records = state.records
      for change in changes {
        let index = records.firstIndex { $0.id == change.id }
        switch change {
        case .insert(let record):
          if index != nil { throw RequestSetError(.duplicateID, "Animal \(record.id) is archived already.") }
          records.append(record)
        case .save(let record):
          if let index { records[index] = record } else { records.append(record) }
        case .delete:
          if let index { records.remove(at: index) }
        }
      }
      state = (records, state.version + 1)
    }
  }

  func snapshot() throws -> StoreSnapshot<Animal> {
    state.withLock { StoreSnapshot(records: $0.records, version: $0.version) }
  }
}

extension ArchiveStore: QueryPushdownStore {
  func queryReader() throws -> any StoreQueryReader<Animal> {
    state.withLock { ArchiveReader(records: $0.records, version: $0.version) }
  }
}

/// One state of the archive, read for one evaluation.
final class ArchiveReader: StoreQueryReader {
  let rows: [(record: Animal, fields: FieldValue)]
  let version: UInt64

  init(records: [Animal], version: UInt64) {
    rows = records.map { ($0, (try? FieldValue(encoding: $0)) ?? .null) }
    self.version = version
  }

  func support(for condition: StoreCondition) -> PushdownSupport {
    guard case .compare = condition.operator, condition.quantifier == nil, !condition.countsElements,
      !condition.caseInsensitive, !condition.diacriticInsensitive, condition.collation == .binary
    else { return .none(reason: "the archive runs plain comparisons only") }
    return .exact
  }

  func support(for sort: StoreSortKey) -> PushdownSupport {
    sort.collation == .binary ? .exact : .none(reason: "the archive sorts binary text only")
  }

  func count(_ query: StoreQuery) throws -> Int { selected(query).count }

  func records(_ query: StoreQuery, _ body: (Animal) throws -> Bool) throws {
    for i in selected(query) where try !body(rows[i].record) { return }
  }

  func explain(_ query: StoreQuery) throws -> StoreExplanation {
    StoreExplanation(statement: "scan \(query)", plan: ["scan \(rows.count) records"])
  }

  /// The keys and kinds of this state's records: the engine checks every query against
  /// them, so a misspelt key throws `.unknownKey` as it does in memory. (A store keeps them
  /// with its records, noting each record it writes, rather than noting all of them here.)
  func fieldKinds() throws -> StoreFieldKinds? {
    var kinds = StoreFieldKinds()
    for row in rows { kinds.note(row.fields, as: Animal.self) }
    return kinds
  }

  /// The positions `query` selects: filter, sort (ties in store order), window.
  private func selected(_ query: StoreQuery) -> [Int] {
    func value(_ i: Int, _ key: String) -> FieldValue { rows[i].fields[path: key] ?? .null }
    func test(_ filter: StoreFilter, _ i: Int) -> Bool {
      switch filter {
      case .constant(let b): return b
      case .condition(let c): return c.matches(value(i, c.key))
      case .and(let terms): return terms.allSatisfy { test($0, i) }
      case .or(let terms): return terms.contains { test($0, i) }
      case .not(let inner): return !test(inner, i)
      case .search(let s): return s.matches(s.keys.map { value(i, $0) })
      case .subquery: return false  // never received: the reader supports none
      }
    }
    var picked = rows.indices.filter { i in query.filter.map { test($0, i) } ?? true }
    picked.sort { a, b in
      for key in query.sort {
        let c = key.compare(value(a, key.key), value(b, key.key))
        if c != 0 { return c < 0 }
      }
      return a < b
    }
    let start = min(query.offset, picked.count)
    let end = query.limit.map { min(picked.count, start + min($0, picked.count)) } ?? picked.count
    return Array(picked[start..<end])
  }
}

@Suite(.ownThreads) struct BackendExampleTests {
  @Test func theArticlesStoreAnswersAsAMemoryStore() throws {
    let archive = ArchiveStore()
    try archive.insert(contentsOf: Animal.zoo)
    let memory = try MemoryStore(Animal.zoo)
    let queries: [(RequestSet<Animal>) -> RequestSet<Animal>] = [
      { $0.filter("age", .greaterThan, 3).sortBy("name").limit(10) },
      { $0.filter("name CONTAINS[c] 'a'").sortBy("species").sortBy("age", order: .descending) },
      { $0.filter { $0.weight > 20 }.offset(1) },
    ]
    for query in queries {
      #expect(try query(RequestSet(archive)).fetch() == query(RequestSet(memory)).fetch())
    }
    // Its fieldKinds() makes a misspelt key and a value of the wrong kind errors, as in memory.
    for bad in ["nmae == 'Rex'", "age == 'old'"] {
      let archived = try #require(throws: RequestSetError.self) { try RequestSet(archive).filter(bad).fetch() }
      let inMemory = try #require(throws: RequestSetError.self) { try RequestSet(memory).filter(bad).fetch() }
      #expect(archived.code == inMemory.code)
      #expect(archived.message == inMemory.message)
    }
    #expect(
      RequestSet(archive).filter("age", .greaterThan, 3).sortBy("name").limit(10).explain()
        == """
        RequestSet<Animal> over ArchiveStore
        stage 1: pushed to ArchiveStore: WHERE age > 3 ORDER BY name ASC LIMIT 10
          statement: scan WHERE age > 3 ORDER BY name ASC LIMIT 10
          plan: scan 6 records
        """)
  }

  @Test func theArticleShowsThisCode() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let article = try String(
      contentsOf: root.appendingPathComponent("Sources/RequestSet/RequestSet.docc/WritingABackend.md"),
      encoding: .utf8)
    let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
    let start = try #require(source.range(of: "extension ArchiveStore: QueryPushdownStore {"))
    let end = try #require(source.range(of: "\n@Suite(.ownThreads) struct BackendExampleTests"))
    #expect(article.contains(String(source[start.lowerBound..<end.lowerBound])))
  }
}
