/// The fields of records held in memory, as string keys reach them: a reflected field is
/// read straight from the record (see `_FieldModel`); a field that goes through `Codable`
/// is read from a table of encoded fields kept per record for it alone. The table also
/// holds the kinds of value seen under every key, reflected or not.
struct _StoredFields: Sendable {
  /// The field model the table was kept for.
  var plan: _FieldPlan
  /// The encoded fields of the keys read through `Codable`, by slot, and every key's kinds.
  var table: _FieldTable
}

/// Reads a value by slot without throwing, straight from memory: what a scan of records
/// in memory calls per record.
protocol _DirectFieldAccess: _FieldAccess {
  /// The reader of a key's value by slot, or nil when no record can hold the key.
  func directReader(for key: String) -> ((Int) -> FieldValue)?
}

extension _FieldTable: _DirectFieldAccess {
  func directReader(for key: String) -> ((Int) -> FieldValue)? {
    guard let column = column(key) else { return nil }
    return { column[$0] }
  }
}

/// String-key access to records in memory (a ``MemoryStore``'s or an array's).
struct _RecordFields<Element>: _DirectFieldAccess {
  let records: ContiguousArray<Element>
  let stored: _StoredFields

  var kinds: [String: _KindSet] { stored.table.kinds }

  func reader(for key: String) -> ((Int) throws -> FieldValue)? {
    directReader(for: key)
  }

  func directReader(for key: String) -> ((Int) -> FieldValue)? {
    switch stored.plan.route(key) {
    case .reflected(let read, _):
      guard !records.isEmpty else { return { _ in .null } }
      // The records are a `let` that the closure keeps alive, so their buffer never moves.
      let records = self.records
      let base = records.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) }
      let stride = MemoryLayout<Element>.stride
      return { slot in withExtendedLifetime(records) { read(base + slot &* stride) } }
    case .encoded:
      return stored.table.directReader(for: key)
    }
  }

  /// How each key the filter names is read, for `explain()`: the keys that go through
  /// `Codable` and the keys read from the records, when some key goes through `Codable`.
  func routes(of keys: [String]) -> (reflected: [String], encoded: [String]) {
    var reflected: [String] = []
    var encoded: [String] = []
    for key in keys {
      if case .reflected = stored.plan.route(key) { reflected.append(key) } else { encoded.append(key) }
    }
    return (reflected, encoded)
  }
}

extension _StoredFields {
  /// The fields of a fixed array of records: checks the type's field model against the
  /// first records while it still checks, keeps encoded fields only for what the model
  /// reads through `Codable`, and learns the kinds of value under each key.
  ///
  /// - Throws: ``RequestSetError`` `.encodingFailed` when a record that must be encoded
  ///   cannot be.
  static func build<Element: Encodable & Sendable>(_ records: ContiguousArray<Element>) throws -> _StoredFields {
    let model = _FieldModel.of(Element.self)
    var plan = model.plan
    var i = 0
    while plan.checking && plan.shape != nil && i < records.count {
      let row = try _FieldEncoder.encodeRow(records[i])
      plan = records.withUnsafeBufferPointer { model.check(UnsafeRawPointer($0.baseAddress! + i), row: row) }
      i += 1
    }
    var table = _FieldTable(probedKinds: [:])
    if plan.encodesEverything || !plan.encodedOnly.isEmpty {
      for r in records { table.append(plan.kept(try _FieldEncoder.encodeRow(r))) }
    } else {
      table.appendEmptyRows(records.count)
    }
    if let first = records.first, let decodable = Element.self as? any Decodable.Type {
      table.addProbed(_SchemaProbe.learn(decodable, from: try _FieldEncoder.encode(first)))
    }
    var kinds = _SeenKinds(plan)
    records.withUnsafeBufferPointer { buffer in
      for r in buffer.indices where !kinds.isComplete {
        kinds.observe(UnsafeRawPointer(buffer.baseAddress! + r), plan, into: &table)
      }
    }
    return _StoredFields(plan: plan, table: table)
  }
}

/// Which reflected keys have been seen holding a value, so that a store notes each key's
/// kind once and then stops looking.
struct _SeenKinds: Sendable {
  private(set) var keys: [String]
  private var seen: [Bool]
  private var unseen: Int

  init(_ plan: _FieldPlan) {
    keys = plan.reflectedKeys
    seen = Array(repeating: false, count: keys.count)
    unseen = keys.count
  }

  /// Every reflected key has been seen: nothing more to note.
  var isComplete: Bool { unseen == 0 }

  /// Notes in `table` the kind of each reflected key `record` holds that no earlier
  /// record held.
  mutating func observe(_ record: UnsafeRawPointer, _ plan: _FieldPlan, into table: inout _FieldTable) {
    guard unseen > 0 else { return }
    plan.forEachKind(record) { i, kind in
      guard !seen[i] else { return }
      seen[i] = true
      unseen -= 1
      table.noteKind(keys[i], kind)
    }
  }
}

/// A fixed array's fields, built on the first query that needs them, then shared by
/// every query on the array.
final class _LazyFields: Sendable {
  private let build: @Sendable () throws -> _StoredFields
  private let state = _Lock<_StoredFields?>(nil)

  init<Element: Encodable & Sendable>(_ records: ContiguousArray<Element>) {
    build = { try _StoredFields.build(records) }
  }

  /// The fields if a query has built them already, else nil.
  var built: _StoredFields? { state.withLock { $0 } }

  func fields() throws -> _StoredFields {
    if let built { return built }
    let made = try build()
    return state.withLock { current in
      if let current { return current }
      current = made
      return made
    }
  }
}
