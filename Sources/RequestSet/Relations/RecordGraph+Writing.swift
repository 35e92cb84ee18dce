// Writes through a graph: foreign keys checked, delete rules applied.
//
// What is atomic:
// - The changes to one store are one `apply`: all or none, as that store's own writes are.
// - A write that changes several stores (a delete that cascades into visits, or nullifies
//   animals' owner) applies them store by store, referrers first. If a store refuses its
//   changes, the stores already changed are changed back (their records re-inserted or
//   re-saved) before the error is thrown. A crash between two stores' applies is not
//   covered: each store keeps its own log or database, and there is no log that spans
//   them, so a crash can leave the referrers changed and the record still there (which a
//   retried delete finishes). The SQL stores keep one table each and commit separately,
//   even in one database file.
//
// What is isolated, in one process:
// - Every write through a graph (`insert`, `save`, both `delete`s) holds one process-wide
//   lock (`_GraphWriteLock`) from its first check to its last change, so what it checked
//   still holds when it writes: an insert's target cannot be deleted between the check and
//   the insert, a `.deny` delete sees every record that points at the target, and a
//   cascade reaches every referrer. `.deny` never deletes a record something points at,
//   and a cascade leaves no dangling reference, under any interleaving of graph writes.
// - The lock is the process's, not a graph's or a store object's: two graphs over the
//   same stores, or over separate store objects of the same files or tables, exclude each
//   other (`_GraphWriteLock` says why one lock). Graph writes of one process therefore run
//   one at a time; reads never wait for them.
// - Writes made through a store or a request set directly (`store.insert`,
//   `store.delete(id:)`, `set.delete()`, `set.update`) do not take the lock, just as they
//   do not see relations: nothing is checked and no rule runs. Check and cascade through
//   the graph.
//
// What is not isolated: writes from several processes. Each process's graphs hold that
// process's lock only, and no store locks what another store's query read, so a check in
// one process and a write in another can interleave:
// - SQLite and PostgreSQL: several processes may write the same tables. An insert in one
//   can land just after a delete in another checked for referrers (a dangling reference,
//   or a `.deny` delete that went past a new referrer), and a cascade can miss a referrer
//   inserted meanwhile. Each table's own changes stay atomic; nothing spans two tables.
// - LogStore: one process writes a log (a second writer gets `.locked`), so the stores of
//   one graph can only be written from two processes when each owns a different log of
//   it and opens the others read-only; its reads of those see the other process's commits
//   as of the read, and the same interleavings follow. A graph write that would change a
//   read-only store throws `.readOnly` and changes nothing.
// To keep a graph consistent across processes, make its writes in one process. A query
// finds what a race left: `graph.records(Visit.self).filter("pet == nil")` lists the
// visits whose pet is gone (a required key reads nil when its record is missing).

extension RecordGraph {
  /// Inserts a record after checking that each of its to-one keys names a stored record.
  ///
  /// ```swift
  /// try graph.insert(Animal(id: 9, name: "Bo", ownerID: 3))   // Owner 3 must exist
  /// ```
  /// - Throws: `.danglingReference` naming the relation and the missing id (unless the
  ///   relation allows it), `.duplicateID`, or the store's error; nothing is written then.
  public func insert<T: Record>(_ record: T) throws {
    try insert(contentsOf: [record])
  }

  /// Inserts records, all or none, after checking their to-one keys in one query per
  /// relation.
  ///
  /// ```swift
  /// try graph.insert(contentsOf: visits)
  /// ```
  /// A key may name a record of the same batch (an employee's manager inserted with them).
  /// The write holds the process's graph write lock from the check to the insert, so no
  /// graph write (of this graph or another) deletes a checked record in between.
  /// - Throws: `.danglingReference`, `.duplicateID`, or the store's error; nothing is
  ///   written then.
  public func insert<T: Record>(contentsOf records: some Sequence<T>) throws {
    let records = Array(records)
    let entry = try _entry(T.self)
    try _GraphWriteLock.shared.hold {
      try _checkReferences(records)
      try entry.store.insert(contentsOf: records)
    }
  }

  /// Inserts or replaces a record after checking its to-one keys.
  ///
  /// ```swift
  /// animal.ownerID = 4
  /// try graph.save(animal)
  /// ```
  /// - Throws: `.danglingReference` or the store's error; nothing is written then.
  public func save<T: Record>(_ record: T) throws {
    let entry = try _entry(T.self)
    try _GraphWriteLock.shared.hold {
      try _checkReferences([record])
      try entry.store.save(record)
    }
  }

  /// Deletes a record and applies the delete rule of every relation that points at it:
  /// `.cascade` deletes the referrers (and theirs, by their rules), `.nullify` sets their
  /// key to nil, `.deny` refuses while any remains.
  ///
  /// ```swift
  /// try graph.delete(Owner.self, id: 3)   // animals' ownerID becomes nil (.nullify)
  /// try graph.delete(Animal.self, id: 9)  // its visits go too (.cascade)
  /// ```
  /// The delete holds the process's graph write lock from reading the referrers to its last
  /// change, so no graph write (of this graph or another) adds a referrer in between.
  /// - Returns: Whether the record was stored.
  /// - Throws: `.deleteDenied` naming the relation and how many records point at it;
  ///   any store's error. Nothing is deleted then (see the atomicity notes above).
  @discardableResult
  public func delete<T: Record>(_ type: T.Type, id: T.ID) throws -> Bool {
    let entry = try _entry(T.self)
    return try _GraphWriteLock.shared.hold {
      guard let record = try entry.store.fetch(id: id) else { return false }
      var plan = _DeletePlan()
      plan.delete(entry, [(_encodedID(record.id), record)])
      try _planReferrers(&plan)
      try plan.apply()
      return true
    }
  }

  /// Deletes every record of a graph's set, applying delete rules as
  /// ``delete(_:id:)`` does.
  ///
  /// ```swift
  /// try graph.delete(graph.records(Owner.self).filter("city", value: "Oslo"))
  /// ```
  /// - Returns: How many records of the set were deleted.
  @discardableResult
  public func delete<T: Record>(_ set: RequestSet<T>) throws -> Int {
    let entry = try _entry(T.self)
    return try _GraphWriteLock.shared.hold {
      let records = try set.refreshed().fetch()
      guard !records.isEmpty else { return 0 }
      var plan = _DeletePlan()
      plan.delete(entry, records.map { (_encodedID($0.id), $0) })
      try _planReferrers(&plan)
      try plan.apply()
      return records.count
    }
  }

  private func _entry<T: Record>(_ type: T.Type) throws -> _Entry<T> {
    if let asOfTime {
      throw RequestSetError(
        .readOnly, "This graph reads the stores as of \(asOfTime): it cannot write. Write through the graph itself.")
    }
    guard let entry = entries[ObjectIdentifier(T.self)] as? _Entry<T> else { throw Self.missingStore(T.self, for: nil) }
    return entry
  }

  /// Refuses records whose to-one keys name no stored record (nor one of `records`).
  func _checkReferences<T: Record>(_ records: [T]) throws {
    guard !records.isEmpty else { return }
    for relation in relations(of: T.self).values.sorted(by: { $0.name < $1.name }) {
      guard case .toOne(let key, _, _, let allowsDangling) = relation.kind, !allowsDangling,
        let read = relation.read as? @Sendable (T) -> FieldValue
      else { continue }
      let keys = Set(records.map(read)).subtracting([.null])
      guard !keys.isEmpty else { continue }
      var unexplained: [String] = []
      var found = Set(
        try targetEntry(relation).column(
          "id", where: .field(try _FieldCondition(key: "id", op: .in, value: .array(Array(keys)))), graph: self,
          notes: &unexplained))
      if relation.target == T.self { found.formUnion(records.map { _encodedID($0.id) }) }
      guard let record = records.first(where: { !found.contains(read($0)) && read($0) != .null }) else { continue }
      throw RequestSetError(
        .danglingReference,
        "\(T.self) \(record.id)'s \(relation.name) (\(key) = \(read(record))) names no \(relation.targetName). "
          + "Insert that \(relation.targetName) first, set \(key) to an existing id"
          + (relation.isToOne && { if case .toOne(_, false, _, _) = relation.kind { return true } else { return false } }()
            ? " or nil" : "")
          + ", or declare the relation with allowsDangling: true.")
    }
  }

  /// Adds to the plan what every relation pointing at a planned delete does, until
  /// nothing new is reached.
  private func _planReferrers(_ plan: inout _DeletePlan) throws {
    while let (type, ids) = plan.nextWave() {
      for relation in (referrers[ObjectIdentifier(type)] ?? []).sorted(by: { $0.name < $1.name }) {
        guard case .toOne(let key, _, let rule, _) = relation.kind, let source = entry(relation.source) else { continue }
        let pointing = try source.records(
          where: .field(try _FieldCondition(key: key, op: .in, value: .array(ids))), graph: self
        ).filter { !plan.isDeleted(relation.source, $0.id) }
        guard !pointing.isEmpty else { continue }
        switch rule {
        case .deny:
          throw RequestSetError(
            .deleteDenied,
            "\(pointing.count) \(relation.sourceName) record(s) still point at the \(relation.targetName) being deleted "
              + "through \(relation.sourceName).\(relation.name), whose rule is .deny. Delete them or point them "
              + "elsewhere first, or declare the relation with onDelete: .cascade or .nullify.")
        case .cascade:
          plan.delete(source, pointing)
        case .nullify:
          guard let nullify = relation.nullify else { continue }
          plan.nullify(source, pointing, with: nullify)
        }
      }
    }
  }
}

/// The records a delete reaches, by store, and the changes it makes to each.
struct _DeletePlan {
  private var order: [ObjectIdentifier] = []
  private var entries: [ObjectIdentifier: any _GraphEntry] = [:]
  private var deleted: [ObjectIdentifier: [FieldValue: any Sendable]] = [:]
  private var saved: [ObjectIdentifier: [FieldValue: (old: any Sendable, new: any Sendable)]] = [:]
  /// Deletes whose referrers are not planned yet.
  private var pending: [(Any.Type, [FieldValue])] = []

  private mutating func _note(_ entry: any _GraphEntry) -> ObjectIdentifier {
    let id = ObjectIdentifier(entry.type)
    if entries[id] == nil {
      entries[id] = entry
      order.append(id)
    }
    return id
  }

  mutating func delete(_ entry: any _GraphEntry, _ records: [(id: FieldValue, record: any Sendable)]) {
    let type = _note(entry)
    var fresh: [FieldValue] = []
    for (id, record) in records where deleted[type]?[id] == nil {
      deleted[type, default: [:]][id] = record
      saved[type]?[id] = nil
      fresh.append(id)
    }
    if !fresh.isEmpty { pending.append((entry.type, fresh)) }
  }

  mutating func nullify(_ entry: any _GraphEntry, _ records: [(id: FieldValue, record: any Sendable)], with nullify: any Sendable) {
    let type = _note(entry)
    for (id, record) in records where deleted[type]?[id] == nil {
      let old = saved[type]?[id]?.old ?? record
      let current = saved[type]?[id]?.new ?? record
      saved[type, default: [:]][id] = (old, entry.nullified(current, by: nullify))
    }
  }

  func isDeleted(_ type: Any.Type, _ id: FieldValue) -> Bool { deleted[ObjectIdentifier(type)]?[id] != nil }

  mutating func nextWave() -> (Any.Type, [FieldValue])? {
    pending.isEmpty ? nil : pending.removeFirst()
  }

  /// Applies each store's changes, referrers first (the reverse of the order reached); on
  /// a failure, changes back the stores already changed and rethrows.
  func apply() throws {
    var done: [(any _GraphEntry, any Sendable)] = []
    for type in order.reversed() {
      let entry = entries[type]!
      let saves = Array((saved[type] ?? [:]).values)
      let deletes = Array((deleted[type] ?? [:]).values)
      let (changes, undo) = entry.changes(saving: saves.map(\.new), deleting: deletes, restoring: saves.map(\.old))
      do {
        try entry.apply(changes)
        done.append((entry, undo))
      } catch {
        for (applied, undo) in done.reversed() { try? applied.apply(undo) }
        throw error
      }
    }
  }
}

extension _GraphEntry {
  func nullified(_ record: any Sendable, by nullify: any Sendable) -> any Sendable {
    _nullified(record, nullify)
  }
}

extension _Entry {
  func _nullified(_ record: any Sendable, _ nullify: any Sendable) -> any Sendable {
    guard let record = record as? T, let nullify = nullify as? @Sendable (T) -> T else { return record }
    return nullify(record)
  }

  func changes(saving: [any Sendable], deleting: [any Sendable], restoring: [any Sendable]) -> (any Sendable, any Sendable) {
    let saves = saving.compactMap { $0 as? T }
    let deletes = deleting.compactMap { $0 as? T }
    let changes: [RecordChange<T>] = saves.map { .save($0) } + deletes.map { .delete(id: $0.id) }
    let undo: [RecordChange<T>] = restoring.compactMap { $0 as? T }.map { .save($0) } + deletes.map { .insert($0) }
    return (changes, undo)
  }
}
