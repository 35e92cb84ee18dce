#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How often a write through a query re-reads after losing a race with another writer.
let _maxWriteAttempts = 64

/// Waits a random time that doubles with each attempt (up to about 130 ms), so that
/// writers racing for the same records spread out instead of colliding again.
///
/// The ceiling is well above one read-and-write through a database: with eight writers
/// updating the same PostgreSQL table on a busy two-core machine, a read and its write
/// took longer than the 4 ms ceiling this once had, so the waits no longer spread the
/// writers apart and one of them could lose all 64 attempts (a `.conflict` thrown to the
/// caller, seen in `WritingTests.concurrentUpdatesLoseNothing`).
func _backOff(_ attempt: Int) {
  let ceiling = UInt32(1) << UInt32(min(attempt, 17))
  usleep(UInt32.random(in: 0..<ceiling))
}

extension RequestSet where Element: Record {
  /// The store behind the set, or `.readOnly` for a set over a plain array.
  func _store() throws -> any RecordStore<Element> {
    if let version = _source.pastVersion {
      throw RequestSetError(
        .readOnly,
        "This RequestSet reads \(_source.name), the store as it was at version \(version), which cannot change. "
          + "Write to the store itself, or through RequestSet(store), which reads its current state.")
    }
    guard let store = _source.store as? any RecordStore<Element> else {
      throw RequestSetError(
        .readOnly,
        "This RequestSet reads \(_source.name), which has no store to write to. "
          + "Query a store (RequestSet(store)) to update, delete or insert through it.")
    }
    return store
  }

  /// The store behind the set, for a write through the query: every such write starts
  /// here, on either road (pushed down, or read and applied), so the store's own refusal
  /// (`.migrationPending`, `.readOnly`, `.closed`) comes before any record is read.
  func _writableStore() throws -> any RecordStore<Element> {
    let store = try _store()
    try store._checkWritable()
    return store
  }

  /// Evaluates the query on the store's current contents and applies the changes it
  /// yields, atomically, if the store has not changed meanwhile; otherwise tries again.
  ///
  /// No user code runs under the store's lock, yet no concurrent write is lost: a write
  /// that lands between the read and the apply makes the apply fail with `.conflict`,
  /// and the query is read again.
  func _write(
    _ makeChanges: (StoreSnapshot<Element>, [Int]) throws -> [RecordChange<Element>]
  ) throws -> Int {
    let store = try _writableStore()
    var lastConflict: RequestSetError?
    for attempt in 0..<_maxWriteAttempts {
      if attempt > 0 { _backOff(attempt) }
      let snapshot = try store.snapshot()
      let slots = try _Executor.slots(_query, in: snapshot)
      let changes = try makeChanges(snapshot, slots)
      if changes.isEmpty { return 0 }
      try _CancelToken.checkBeforeWriting()
      do {
        try store.apply(changes, ifVersion: snapshot.version)
        return changes.count
      } catch let error as RequestSetError where error.code == .conflict {
        lastConflict = error
      }
    }
    throw lastConflict!
  }

  /// Changes every record of the set with `transform`, atomically, and returns how many
  /// records it changed.
  ///
  /// ```swift
  /// let n = try animals.filter(\.age > 20).update { $0.species = "Elder" }
  /// ```
  /// The set is read afresh from the store (not from an earlier evaluation). `transform`
  /// may run more than once per record when another writer changes the store meanwhile;
  /// keep it free of side effects.
  /// - Throws: ``RequestSetError`` `.invalidUpdate` when `transform` changes an id,
  ///   `.readOnly` for a set over an array, or what `transform` throws; nothing is
  ///   written then.
  @discardableResult
  public func update(_ transform: (inout Element) throws -> Void) throws -> Int {
    try _write { snapshot, slots in
      try slots.map { slot in
        try _CancelToken.throwIfCancelled()
        let original = try snapshot._record(at: slot)
        var record = original
        try transform(&record)
        guard record.id == original.id else {
          throw RequestSetError(
            .invalidUpdate,
            "update changed a record's id from \(original.id) to \(record.id). "
              + "Ids identify records; insert a new record and delete the old one instead.")
        }
        return .save(record)
      }
    }
  }

  /// Sets a field of every record of the set, atomically, and returns how many records
  /// it changed.
  ///
  /// ```swift
  /// try animals.filter("species", value: "Calf").update("species", value: "Cow")
  /// ```
  /// - Throws: ``RequestSetError`` `.unknownKey`, `.typeMismatch` or `.decodingFailed`
  ///   when the key or value does not fit the record; nothing is written then.
  @discardableResult
  public func update(_ key: String, value: (any Encodable & Sendable)?) throws -> Int {
    try update([(key, value)])
  }

  /// Sets several fields of every record of the set, atomically.
  ///
  /// ```swift
  /// try animals.filter(\.id == 3).update([("name", "Rexford"), ("nickname", nil)])
  /// ```
  @discardableResult
  public func update(_ pairs: [(String, (any Encodable & Sendable)?)]) throws -> Int {
    let encoded = try pairs.map { ($0.0, try $0.1.map { try FieldValue(encoding: $0) } ?? .null) }
    if _source.pushdown != nil {
      for (key, _) in encoded where key == "id" || key.hasPrefix("id.") {
        throw RequestSetError(.invalidUpdate, "update cannot set \"id\": ids identify records.")
      }
      let assignments = encoded.map { (key: $0.0, value: $0.1) }
      let checkAssignments = { (fields: any _FieldAccess) throws in
        for (key, value) in encoded { try _FilterCompiler<Element>.validate(key, value: value, in: fields) }
      }
      if let n = try _pushdownWrite(validate: checkAssignments, { try $0.update($1, assignments) }) { return n }
    }
    return try _write { snapshot, slots in
      let fields = try snapshot._fields()
      for (key, value) in encoded {
        try _FilterCompiler<Element>.validate(key, value: value, in: fields)
        if key == "id" || key.hasPrefix("id.") {
          throw RequestSetError(.invalidUpdate, "update cannot set \"id\": ids identify records.")
        }
      }
      return try slots.map { slot in
        try _CancelToken.throwIfCancelled()
        var tree = try FieldValue(encoding: try snapshot._record(at: slot))
        for (key, value) in encoded { tree = tree._setting(value, at: key[...]) }
        return .save(
          try _decodeRecord(Element.self, from: tree, purpose: "update", alternative: "update { … } with a closure"))
      }
    }
  }

  /// Deletes every record of the set, atomically, and returns how many it deleted.
  ///
  /// ```swift
  /// let removed = try animals.filter("species", value: "Dodo").delete()
  /// ```
  @discardableResult
  public func delete() throws -> Int {
    if _source.pushdown != nil, let n = try _pushdownWrite({ try $0.delete($1) }) { return n }
    return try _write { snapshot, slots in
      try slots.map { slot in
        try _CancelToken.throwIfCancelled()
        return .delete(id: try snapshot._record(at: slot).id)
      }
    }
  }

  /// The first record of the set, or a new record, inserted, whose fields are set from
  /// the query's equality conditions on top of the record `makeRecord` returns.
  ///
  /// ```swift
  /// let bob = try animals.filter("name", value: "Bob").filter(\.species == "Cat")
  ///   .firstOrInsert { Animal(id: nextID(), name: "", species: "", age: 0) }
  /// // bob.name == "Bob", bob.species == "Cat"
  /// ```
  /// - Throws: ``RequestSetError`` `.tooComplex` when the conditions do not determine
  ///   field values (an inequality, an OR, a NOT, a predicate, a closure, a condition
  ///   after a limit) or the new record would not match the query; `.duplicateID` when
  ///   the new record's id is taken.
  public func firstOrInsert(_ makeRecord: () throws -> Element) throws -> Element {
    try _firstOrInsert { assignments in
      var tree = try FieldValue(encoding: try makeRecord())
      for (key, value) in assignments { tree = tree._setting(value, at: key[...]) }
      return try _decodeRecord(
        Element.self, from: tree, purpose: "firstOrInsert", alternative: "firstOrInsert { … } with a record")
    }
  }

  /// The first record of the set, or a new record made from the query's equality
  /// conditions alone: for records whose other fields are optional.
  ///
  /// ```swift
  /// let tag = try tags.filter("id", value: "swift").filter("label", value: "Swift").firstOrInsert()
  /// ```
  /// - Throws: As ``firstOrInsert(_:)``, and `.decodingFailed`, naming the missing
  ///   field, when the conditions do not give every non-optional field.
  public func firstOrInsert() throws -> Element {
    try _firstOrInsert { assignments in
      var tree = FieldValue.object([:])
      for (key, value) in assignments { tree = tree._setting(value, at: key[...]) }
      return try _decodeRecord(
        Element.self, from: tree, purpose: "firstOrInsert()", alternative: "firstOrInsert { … } with a record")
    }
  }

  private func _firstOrInsert(_ build: ([(String, FieldValue)]) throws -> Element) throws -> Element {
    guard _query.stages.count == 1, let stage = _query.stages.first else {
      throw RequestSetError(
        .tooComplex,
        "firstOrInsert cannot tell a new record's fields from filters written after limit or offset. "
          + "Filter before windowing.")
    }
    var fields: [(String, FieldValue)] = []
    var setters: [@Sendable (inout Element) -> Void] = []
    try _collectAssignments(stage.filter, &fields, &setters)
    let store = try _writableStore()
    for attempt in 0..<_maxWriteAttempts {
      if attempt > 0 { _backOff(attempt) }
      let snapshot = try store.snapshot()
      if let slot = try _Executor.slots(limit(1)._query, in: snapshot).first {
        return try snapshot._record(at: slot)
      }
      var record = try build(fields)
      for set in setters { set(&record) }
      // Whatever the conditions, the new record must be one the query would find.
      guard try RequestSet([record]).filter(RequestFilter(_node: stage.filter ?? .constant(true))).fetchCount() == 1
      else {
        throw RequestSetError(
          .tooComplex,
          "firstOrInsert built a record the query would not find (the conditions \(stage.filter?.summary ?? "") "
            + "contradict each other or the record's other fields). Adjust the conditions.")
      }
      try _CancelToken.checkBeforeWriting()
      do {
        try store.apply([.insert(record)], ifVersion: snapshot.version)
        return record
      } catch let error as RequestSetError where error.code == .conflict {
        continue  // something was written meanwhile: look again
      }
    }
    throw RequestSetError(.conflict, "firstOrInsert kept losing races with other writers; try again.")
  }

  private func _collectAssignments(
    _ node: _FilterNode<Element>?, _ fields: inout [(String, FieldValue)],
    _ setters: inout [@Sendable (inout Element) -> Void]
  ) throws {
    guard let node else { return }
    switch node {
    case .constant(true): return
    case .and(let j): for p in j.terms { try _collectAssignments(p, &fields, &setters) }
    case .field(let c) where c.comparison == .equal && c.collation == .binary:
      fields.append((c.key, c.value))
    case .typed(let c) where c.assign != nil:
      setters.append(c.assign!)
    case .invalid(let error):
      throw error
    default:
      throw RequestSetError(
        .tooComplex,
        "firstOrInsert cannot tell a new record's fields from \(node.summary): only equality conditions "
          + "joined with AND (on string keys or writable key paths) determine them.")
    }
  }
}
