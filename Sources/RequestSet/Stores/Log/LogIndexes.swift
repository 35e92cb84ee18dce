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
  static func indexValue(_ r: _ByteReader, _ paths: [[Int]?], names: [String?]) throws(_CodecError)
    -> FieldValue
  {
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
    textIndex = nil
    guard !index.indexDefinitions.isEmpty else { return }
    let mapping = try currentMapping()
    for definition in index.indexDefinitions {
      if let keys = _TextIndex.keys(of: definition) {
        textIndex = try buildTextIndex(keys, mapping: mapping)
        continue
      }
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
      key: key, unique: unique, entries: try entries(for: key, mapping: try currentMapping()),
      typeName: "\(Element.self)")
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
  mutating func writeIndexDefinitions(_ definitions: [RequestIndex]) throws {
    // The text index's definition rides along (see `_TextIndex.definition(_:)`).
    let definitions = definitions + (textIndex.map { [_TextIndex.definition($0.keys)] } ?? [])
    out.count = 0
    let sequence = index.sequence + 1
    let payload = _LogFormat.indexDefinitionsPayload(definitions)
    withExtendedLifetime(payload) {
      _ = _LogFormat.appendFrame(
        .indexes, sequence: sequence, payload: payload.bytes, saltState: saltState, to: out)
    }
    try writeOut()
    index.sequence = sequence
    index.end += out.count
    index.indexDefinitions = definitions
  }
}

// MARK: - The text index
//
// Its definition is one more entry of the `.indexes` frame (see `_TextIndex.definition`),
// so it is written, compacted and checkpointed with the other definitions, and its words
// are found again from the records whenever the store opens or follows its writer.

extension _LogState {
  /// The text index on `keys`, from every live record.
  func buildTextIndex(_ keys: [String], mapping: _Mapping?) throws -> _TextIndex {
    var text = _TextIndex(keys: keys)
    let paths = keys.map { keyIDs($0) }
    for slot in 0..<index.locations.count where index.live[slot] {
      text.update(
        slot: slot, old: nil,
        new: try storedIndexValues(slot: slot, mapping: mapping, paths: paths.map { [$0] }))
    }
    text.trim()
    return text
  }

  /// One record's change in the text index, during a batch write: the slot's old values
  /// read from its bytes (nil for a new record), the new ones from the payload just written
  /// (`written` at the record's id; nil for a delete).
  mutating func updateTextIndex(slot: Int?, paths: [[Int]?], mapping: _Mapping?, written: _ByteReader?) {
    let newSlot = slot ?? index.locations.count
    let old = slot.map {
      (try? storedIndexValues(slot: $0, mapping: mapping, paths: paths.map { [$0] })) ?? []
    }
    var new: [FieldValue]? = nil
    if var r = written {
      let names = index.keys.names
      new =
        (try? { () throws(_CodecError) -> [FieldValue] in
          try _BinaryValue.skip(&r)
          return try paths.map { p throws(_CodecError) in try Self.value(r, p, names: names) }
        }()) ?? []
    }
    textIndex?.update(slot: newSlot, old: old, new: new)
  }

  mutating func createTextIndex(_ keys: [String]) throws {
    try checkWritable()
    if let existing = textIndex {
      if existing.keys == keys { return }
      throw _textIndexExists(existing.keys, keys)
    }
    guard !keys.isEmpty else { throw _textIndexNeedsKeys() }
    let fields = try records().fields()
    for key in keys where fields.kinds[key] == nil && !fields.kinds.isEmpty {
      throw RequestSetError.unknownKey(key, type: Element.self, known: fields.knownKeys)
    }
    textIndex = try buildTextIndex(keys, mapping: try currentMapping())
    do {
      try writeIndexDefinitions(indexes.descriptions)
    } catch {
      textIndex = nil
      throw error
    }
  }

  mutating func dropTextIndex() throws -> Bool {
    try checkWritable()
    guard let kept = textIndex else { return false }
    textIndex = nil
    do {
      try writeIndexDefinitions(indexes.descriptions)
    } catch {
      textIndex = kept
      throw error
    }
    return true
  }
}
