// Schema migrations on a log: the pending migrations of `LogStoreOptions.migrations` run as
// one rewrite of the file, swapped in atomically as compaction swaps (Compaction.swift), so
// a crash at any point leaves the old log, migrations pending, or the new one, all run.

extension _LogState {
  /// The migrations this log has run, in order (see `_MigrationMarker`).
  var appliedMigrations: [String] { _MigrationMarker.applied(in: index.keys.names) }

  /// The registered migrations this log has not run.
  var pendingMigrations: [Migration] { options.migrations.pending(after: appliedMigrations) }

  /// Runs every pending migration in one rewrite; returns the names it ran.
  ///
  /// - Throws: `.migrationFailed` (the log unchanged) and what compaction throws.
  mutating func migrate() throws -> [String] {
    try checkUsable()
    let run = try _MigrationRun(pendingMigrations, in: options.migrations)
    guard !run.isEmpty else {
      migrationHold = nil
      return []
    }
    let hold = migrationHold
    migrationHold = nil
    do {
      try compact(keepingHistory: false, migrating: run)
    } catch {
      migrationHold = hold
      throw error
    }
    return run.names
  }

  /// The record in `payload` (an id value, then the record value), changed by `run` and
  /// encoded again with `encoder`'s key table; the bytes live in `encoder.out` until its
  /// next use.
  static func migrate(
    _ payload: UnsafeRawBufferPointer, names: [String?], run: _MigrationRun, editor: _LogMigrationEditor?,
    encoder: _BinaryEncoder, path: String, at offset: Int
  ) throws -> UnsafeRawBufferPointer {
    var r = _ByteReader(payload)
    let idLength: Int
    do throws(_CodecError) {
      try _BinaryValue.skip(&r)
      idLength = r.position
    } catch {
      throw _damagedRecord(path, _RecordLocation(offset: offset, length: UInt32(payload.count), frameLength: 0), error)
    }
    let out = encoder.out
    out.count = 0
    out.append(UnsafeRawBufferPointer(rebasing: payload[0..<idLength]))
    func id() -> FieldValue {
      var idReader = _ByteReader(payload)
      return (try? _BinaryValue.read(&idReader, names: names)) ?? .null
    }
    let record = UnsafeRawBufferPointer(rebasing: payload[idLength...])
    do {
      if let editor {
        try editor.rewrite(record, names: names, encoder: encoder, id: id)
      } else {
        var reader = _ByteReader(record)
        let value = try _BinaryValue.read(&reader, names: names)
        guard case .object(var object) = value else {
          throw RequestSetError(
            .migrationFailed,
            "The record at offset \(offset) of \(path) is \(value), not an object with fields, so no migration can "
              + "change it by key. Migrate it with a LogStore<DynamicRecord> by hand; the log is unchanged.")
        }
        try run.apply(to: &object)
        let id = object.removeValue(forKey: "id") ?? .null
        try encoder.encodeDynamicRecord(DynamicRecord(_id: id, fields: object))
      }
    } catch let error as _CodecError {
      throw _damagedRecord(path, _RecordLocation(offset: offset, length: UInt32(payload.count), frameLength: 0), error)
    } catch let error as RequestSetError where error.code != .migrationFailed {
      throw RequestSetError(
        .migrationFailed,
        "A migration made the record with id \(id()) into a value the log cannot store: \(error.message) The log is "
          + "unchanged.", underlying: error)
    }
    guard out.count <= _LogFormat.maxPayload else {
      throw RequestSetError(
        .migrationFailed,
        "A migration made the record with id \(id()) \(out.count) bytes long, past the log's \(_LogFormat.maxPayload)-"
          + "byte limit for one record. The log is unchanged.")
    }
    return out.bytes
  }

  /// The error a write meets while migrations are pending and not run.
  func migrationPendingError(_ name: String) -> RequestSetError {
    RequestSetError(
      .migrationPending,
      "The log \(path) has not run the migration \(name.debugDescription) (and maybe later ones), so it cannot be "
        + "written yet. Call migrate() on the store, open it with LogStoreOptions.migratesOnOpen on, or run "
        + "`requestset migrate \(path) --plan FILE`.")
  }
}

extension LogStore {
  /// The names of the migrations this log has run, oldest first.
  ///
  /// ```swift
  /// store.appliedMigrations   // ["v2: legs", "v3: kg"]
  /// ```
  /// - Complexity: O(*k*) for *k* key names in the log.
  public var appliedMigrations: [String] { _state.withLock { $0.appliedMigrations } }

  /// The names of the migrations in ``LogStoreOptions/migrations`` this log has not run,
  /// in the order they will run: empty once a writable store has opened with
  /// ``LogStoreOptions/migratesOnOpen`` on.
  ///
  /// ```swift
  /// store.pendingMigrations   // ["v3: kg"]
  /// try store.migrate()
  /// store.pendingMigrations   // []
  /// ```
  /// - Complexity: O(*m* + *k*) for *m* migrations and *k* key names in the log.
  public var pendingMigrations: [String] { _state.withLock { $0.pendingMigrations.map(\.name) } }

  /// Runs the pending migrations of ``LogStoreOptions/migrations`` now, all in one
  /// rewrite of the log swapped in atomically (as ``compact()`` swaps), and returns their
  /// names.
  ///
  /// Every live record is decoded by key, changed by each pending migration's steps in
  /// order, and encoded again; the names are recorded in the log; indexes follow renamed
  /// keys and are rebuilt. The rewrite is one commit: live request sets re-read, and the
  /// history before it is not kept (older commits hold records of the old shape).
  ///
  /// ```swift
  /// let store = try LogStore<DynamicRecord>(path: "animals.rslog", options: .init(migrations: migrator, migratesOnOpen: false))
  /// store.pendingMigrations   // ["v2: legs"]
  /// try store.migrate()       // ["v2: legs"]
  /// ```
  /// - Returns: The names run, in order; empty when none were pending.
  /// - Throws: ``RequestSetError`` `.migrationFailed` naming the migration, the record and
  ///   the key when a step cannot change a record (the log is unchanged and the migrations
  ///   stay pending); `.ioFailure` when the new file cannot be written (the log is
  ///   unchanged); `.readOnly`; `.closed`.
  /// - Complexity: O(*n*) in the live records' bytes.
  @discardableResult
  public func migrate() throws -> [String] {
    let (names, version) = try _state.withLock { state in (try state.migrate(), state.version) }
    if !names.isEmpty, _feed.isObserved { _feed.publish(StoreCommit(version: version, changes: nil)) }
    return names
  }

  /// Decodes every record as `Element`, in store order, and throws at the first that
  /// does not decode, naming its id and the key: a check of a whole log after a type
  /// changed, which opening (that decodes only the first and last records) does not make.
  ///
  /// ```swift
  /// try store.checkDecoding()   // throws .decodingFailed: "… the record with id 7 … key legs …"
  /// ```
  /// - Throws: ``RequestSetError`` `.decodingFailed`; `.closed`.
  /// - Complexity: O(*n*): every record is decoded once.
  public func checkDecoding() throws {
    try _state.withLock { state in
      let records = try state.records()
      for slot in state.index.locations.indices where state.index.live[slot] {
        try records.checkDecodes(slot: slot)
      }
    }
  }
}

extension _LogRecords {
  /// Throws `.decodingFailed` naming the record's id and the key when the record in
  /// `slot` does not decode as `Element`.
  func checkDecodes(slot: Int) throws {
    guard Element.self != DynamicRecord.self else { return }
    let location = locations[slot]
    let r = try recordReader(slot)
    let bytes = UnsafeRawBufferPointer(start: r.base + r.position, count: r.end - r.position)
    do {
      _ = try _BinaryDecoder.decode(Element.self, from: bytes, names: names)
    } catch let DecodingError.dataCorrupted(context) where context.underlyingError is _CodecError {
      throw _damagedRecord(path, location, context.underlyingError as! _CodecError)
    } catch {
      var id = FieldValue.null
      if let mapping {
        var idReader = _ByteReader(mapping.bytes(location.offset, Int(location.length)))
        id = (try? _BinaryValue.read(&idReader, names: names)) ?? .null
      }
      throw _DecodingFailure.error(error, type: Element.self, id: id, store: "the log \(path)")
    }
  }
}

extension _LogState {
  /// Opening's check that the stored records still decode as `Element`: the first and
  /// the last live record are decoded, and a failure names the record and the key.
  mutating func checkOpenDecoding() throws {
    guard Element.self != DynamicRecord.self, index.liveCount > 0 else { return }
    let records = try records()
    let live = index.live
    guard let first = index.locations.indices.first(where: { live[$0] }) else { return }
    try records.checkDecodes(slot: first)
    if let last = index.locations.indices.reversed().first(where: { live[$0] }), last != first {
      try records.checkDecodes(slot: last)
    }
  }
}
