// A LogStore's secondary indexes: defined by `.indexes` frames in the log, and rebuilt from
// the records whenever the store opens by replay or follows its writer. Index entries are
// never written to the log; a checkpoint keeps them (see Checkpoint.swift), and it is used
// only for the exact log bytes it describes, so there is no persisted index that damage
// could make lie.

extension _LogState {
  /// The key ids of a dotted key in this log (see `_keyIDs`).
  func keyIDs(_ key: String) -> [Int]? { _keyIDs(key, index.keys.ids) }

  /// The value at a key path in a record's bytes (`r` is at the record value).
  static func value(_ r: _ByteReader, _ path: [Int]?, names: [String?]) throws(_CodecError) -> FieldValue {
    guard let path else { return .null }
    var r = r
    guard try _BinaryValue.seek(&r, path: path) else { return .null }
    return try _BinaryValue.read(&r, names: names)
  }

  /// An index's value in a record's bytes (`r` is at the record value), from the key ids
  /// of each of its keys: the key's value, or for a composite index an array of them.
  static func indexValue(_ r: _ByteReader, _ paths: [[Int]?], names: [String?]) throws(_CodecError) -> FieldValue {
    if paths.count == 1 { return try value(r, paths[0], names: names) }
    var values: [FieldValue] = []
    values.reserveCapacity(paths.count)
    for p in paths { values.append(try value(r, p, names: names)) }
    return .array(values)
  }

  /// The stored values of indexes for a slot: one per index, from the key ids of its keys.
  func storedIndexValues(slot: Int, mapping: _Mapping?, paths: [[[Int]?]]) throws -> [FieldValue] {
    let location = index.locations[slot]
    let r = try _recordValueReader(mapping, location, path: path)
    let names = index.keys.names
    do throws(_CodecError) {
      return try paths.map { p throws(_CodecError) in try Self.indexValue(r, p, names: names) }
    } catch {
      throw _damagedRecord(path, location, error)
    }
  }

  /// Builds every defined index from the live records. A unique index over records that
  /// share a value (which only a salvaged log can hold) is kept, without its unique check
  /// on those records; later writes are checked.
  mutating func rebuildIndexes() throws {
    indexes = _IndexCatalog()
    guard !index.indexDefinitions.isEmpty else { return }
    let mapping = try currentMapping()
    for definition in index.indexDefinitions {
      try indexes.add(
        key: definition._identity, unique: definition.unique,
        entries: try entries(for: definition._identity, mapping: mapping),
        typeName: "\(Element.self)", checkingExisting: false)
    }
  }

  /// Every live slot's value of an index's key (or a composite index's keys).
  func entries(for key: String, mapping: _Mapping?) throws -> [_IndexEntry] {
    let paths = [_CompositeKey.keys(of: key).map { keyIDs($0) }]
    var entries: [_IndexEntry] = []
    entries.reserveCapacity(index.liveCount)
    for slot in 0..<index.locations.count where index.live[slot] {
      let value = try storedIndexValues(slot: slot, mapping: mapping, paths: paths)[0]
      entries.append(_IndexEntry(value: value, slot: slot))
    }
    return entries
  }

  mutating func createIndex(_ key: String, unique: Bool) throws {
    try checkWritable()
    if let existing = indexes.index(for: key) {
      if existing.unique == unique { return }
      throw _indexExists(key, unique: existing.unique)  // the name, composite or not
    }
    let fields = try records().fields()
    // A store that has held no record knows no keys yet (see `_SchemaProbe`).
    for k in _CompositeKey.keys(of: key) {
      guard fields.kinds[k] != nil || fields.kinds.isEmpty else {
        throw RequestSetError.unknownKey(k, type: Element.self, known: fields.knownKeys)
      }
    }
    var catalog = indexes
    try catalog.add(
      key: key, unique: unique, entries: try entries(for: key, mapping: try currentMapping()), typeName: "\(Element.self)")
    try writeIndexDefinitions(catalog.descriptions)
    indexes = catalog
  }

  mutating func dropIndex(_ key: String) throws -> Bool {
    try checkWritable()
    var catalog = indexes
    guard catalog.remove(key: key) else { return false }
    try writeIndexDefinitions(catalog.descriptions)
    indexes = catalog
    return true
  }

  /// Appends an `.indexes` frame: the whole set of definitions, committed on its own.
  private mutating func writeIndexDefinitions(_ definitions: [RequestIndex]) throws {
    out.count = 0
    let sequence = index.sequence + 1
    let payload = _LogFormat.indexDefinitionsPayload(definitions)
    withExtendedLifetime(payload) {
      _ = _LogFormat.appendFrame(.indexes, sequence: sequence, payload: payload.bytes, saltState: saltState, to: out)
    }
    try writeOut()
    index.sequence = sequence
    index.end += out.count
    index.indexDefinitions = definitions
  }
}
