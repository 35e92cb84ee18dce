import RequestSet
import Testing

/// Sectioned live sets: the sections equal a fresh fetch grouped by the key, and the
/// section and row changes, applied to the previous sections as a table view's batch
/// update applies them, give the new ones; on every store, over random commits.
@Suite(.ownThreads) struct SectionTests {
  typealias Sections = [(key: FieldValue, ids: [Int])]

  /// Groups records by species, in order of first appearance.
  static func grouped(_ records: [Animal]) -> Sections {
    var out: Sections = []
    for r in records {
      if let i = out.firstIndex(where: { $0.key == .string(r.species) }) {
        out[i].ids.append(r.id)
      } else {
        out.append((.string(r.species), [r.id]))
      }
    }
    return out
  }

  /// What a batch update makes of `old`: deletes and move sources first (at old
  /// places), then inserts and move targets in ascending order (at new places).
  static func apply(_ state: SectionedSnapshot<Animal, FieldValue>, to old: Sections) -> Sections {
    var sections: [(key: FieldValue, ids: [Int?])?] = old.map { ($0.key, $0.ids.map { $0 }) }
    let oldIDs = old.map(\.ids)
    for path in state.deletedRows { sections[path.section]!.ids[path.row] = nil }
    for move in state.movedRows { sections[move.from.section]!.ids[move.from.row] = nil }
    var movedSections: [Int: (key: FieldValue, ids: [Int?])] = [:]
    for move in state.movedSections { movedSections[move.to] = sections[move.from] }
    for i in state.deletedSections { sections[i] = nil }
    for move in state.movedSections { sections[move.from] = nil }
    var remaining: [(key: FieldValue, ids: [Int])] = sections.compactMap { $0.map { ($0.key, $0.ids.compactMap { $0 }) } }
    let new = state.sections
    for n in 0..<new.count {
      if state.insertedSections.contains(n) {
        remaining.insert((new[n].key, new[n].records.map(\.id)), at: n)
      } else if let moved = movedSections[n] {
        remaining.insert((moved.key, moved.ids.compactMap { $0 }), at: n)
      }
    }
    var targets: [(SectionedRow, Int)] = state.insertedRows.map { ($0, new[$0.section].records[$0.row].id) }
    targets += state.movedRows.map { ($0.to, oldIDs[$0.from.section][$0.from.row]) }
    for (path, id) in targets.sorted(by: { $0.0 < $1.0 }) { remaining[path.section].ids.insert(id, at: path.row) }
    return remaining
  }

  @Test(arguments: StoreKind.writable)
  func changesRebuildTheSectionsOfAFreshFetch(kind: StoreKind) async throws {
    let store = try kind.makeStore()
    defer { store.close() }
    try store.insert(contentsOf: Animal.random(count: 24, seed: 11))
    let set = RequestSet(store).filter(\.age < 9).sortBy("species", "age", "id")
    var states = set.sectioned(by: "species").makeAsyncIterator()
    let first = try #require(try await states.next())
    #expect(first.isInitial)
    var held = Self.grouped(try set.refreshed().fetch())
    #expect(first.sections.map(\.key) == held.map(\.key))
    #expect(first.insertedSections == Array(held.indices))
    var heldRecords = try set.refreshed().fetch()
    var rng = SeededRandom(seed: 1_234)
    var nextID = 500
    for step in 0..<TestScale.pick(quick: 30, soak: 120) {
      let all = try RequestSet(store).sortBy(\.id).fetch()
      var changes: [RecordChange<Animal>] = []
      for _ in 0..<Int.random(in: 1...3, using: &rng) {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
          nextID += 1
          changes.append(.insert(Animal(
            id: nextID, name: "N", species: Animal.speciesPool.randomElement(using: &rng)!,
            age: Int.random(in: 0..<12, using: &rng))))
        case 1:
          if let victim = all.randomElement(using: &rng), !changes.contains(where: { $0.id == victim.id }) {
            changes.append(.delete(id: victim.id))
          }
        default:
          // Always a real change: a new species or age (never the same record again).
          if var r = all.randomElement(using: &rng), !changes.contains(where: { $0.id == r.id }) {
            if Bool.random(using: &rng) {
              r.species = Animal.speciesPool.filter { $0 != r.species }.randomElement(using: &rng)!
            } else {
              r.age = (r.age + Int.random(in: 1...5, using: &rng)) % 12
            }
            changes.append(.save(r))
          }
        }
      }
      try store.apply(changes, ifVersion: nil)
      let fresh = try set.refreshed().fetch()
      guard fresh != heldRecords else { continue }  // nothing the sections show changed
      let state = try #require(try await states.next(), "step \(step)")
      let version = try store.snapshot().version
      #expect(state.version == version, "step \(step)")
      let expected = Self.grouped(fresh)
      #expect(state.sections.map(\.key) == expected.map(\.key), "step \(step)")
      #expect(state.sections.map { $0.records.map(\.id) } == expected.map(\.ids), "step \(step)")
      let rebuilt = Self.apply(state, to: held)
      #expect(rebuilt.map(\.key) == expected.map(\.key), "step \(step): \(state.movedSections)")
      #expect(rebuilt.map(\.ids) == expected.map(\.ids), "step \(step)")
      // Updated: records whose fields changed, in a section both states hold, and held
      // before in a section both states hold.
      let before = Dictionary(uniqueKeysWithValues: heldRecords.map { ($0.id, $0) })
      let heldKeys = Set(held.map(\.key))
      let newKeys = Set(expected.map(\.key))
      let survivingBefore = Set(held.filter { newKeys.contains($0.key) }.flatMap(\.ids))
      var updated: [SectionedRow] = []
      for (s, section) in state.sections.enumerated() where heldKeys.contains(section.key) {
        for (r, record) in section.records.enumerated() where survivingBefore.contains(record.id) {
          if before[record.id] != record { updated.append(SectionedRow(section: s, row: r)) }
        }
      }
      #expect(state.updatedRows == updated, "step \(step)")
      held = expected
      heldRecords = fresh
    }
  }

  @Test func keyPathSectionsAndAnUnknownKey() async throws {
    let store = MemoryStore<Animal>()
    try store.insert(contentsOf: Animal.zoo)
    var byPath = RequestSet(store).sortBy(\.species).sectioned(by: \.species).makeAsyncIterator()
    let state = try #require(try await byPath.next())
    #expect(state.sections.map(\.key) == ["Cat", "Cow", "Dog", "Mouse"])
    #expect(state.records.map(\.id) == (try RequestSet(store).sortBy(\.species).fetch()).map(\.id))
    var unknown = RequestSet(store).sectioned(by: "nope").makeAsyncIterator()
    let error = await #expect(throws: RequestSetError.self) { try await unknown.next() }
    #expect(error?.code == .unknownKey)
  }
}
