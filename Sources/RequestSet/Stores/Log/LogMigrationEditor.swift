/// A log migration's fast path: migrations whose steps all name top-level keys (add,
/// rename, remove, convert) edit a record's bytes field by field, copying every value
/// they do not touch as it is stored, instead of decoding the whole record into a
/// ``FieldValue`` and encoding it again.
///
/// The new file keeps the old file's key ids (compaction copies its key table), so copied
/// bytes, nested objects included, keep their meaning. Each step means here exactly what
/// ``_MigrationRun/apply(to:)`` makes it mean (a differential test holds the two to each
/// other on random records); a run with any other step (a dotted key, a transform) takes
/// the general path.
///
/// ```swift
/// let editor = try _LogMigrationEditor(run, encoder: encoder, ids: index.keys.ids)   // nil: general path
/// try editor?.rewrite(recordValue, payloadID: idBytes, names: names, into: encoder.out)
/// ```
struct _LogMigrationEditor {
  /// A step with its keys resolved to key ids (nil: a key no record of the log holds).
  enum _Step {
    case add(id: UInt32, encoded: [UInt8])
    case rename(from: UInt32?, to: UInt32, fromName: String, toName: String)
    case remove(id: UInt32?)
    case convert(id: UInt32?, key: String, conversion: Migration.Conversion)
  }

  /// Where a field's value is: bytes of the stored record, or a value to encode.
  enum _Source {
    case stored(Int, Int)
    case value(FieldValue)
  }

  let steps: [(migration: Migration, step: Migration.Step, resolved: _Step)]

  /// The editor for `run`, or nil when a step needs the general path. New key names
  /// (rename targets, added keys, and names inside added defaults) are defined in
  /// `encoder.keys`.
  init?(_ run: _MigrationRun, encoder: _BinaryEncoder, ids: [String: UInt32]) throws {
    var steps: [(Migration, Migration.Step, _Step)] = []
    func single(_ key: String) -> String? {
      let names = FieldValue.fieldNames(inKey: key)
      return names.count == 1 ? names[0] : nil
    }
    for m in run.migrations {
      for step in m.steps {
        switch step._kind {
        case .add(let key, let value):
          guard let name = single(key) else { return nil }
          let id = try encoder.keys.intern(name)
          let out = encoder.out
          let mark = out.count
          try encoder.write(value, depth: 1)
          let encoded = Array(UnsafeRawBufferPointer(start: out.base + mark, count: out.count - mark))
          out.count = mark
          steps.append((m, step, .add(id: id, encoded: encoded)))
        case .rename(let from, let to):
          guard let a = single(from), let b = single(to) else { return nil }
          steps.append((m, step, .rename(from: ids[a], to: try encoder.keys.intern(b), fromName: from, toName: to)))
        case .remove(let key):
          guard let name = single(key) else { return nil }
          steps.append((m, step, .remove(id: ids[name])))
        case .convert(let key, let conversion):
          guard let name = single(key) else { return nil }
          steps.append((m, step, .convert(id: ids[name], key: key, conversion: conversion)))
        case .transform:
          return nil
        }
      }
    }
    self.steps = steps
  }

  /// Appends the migrated record value to `encoder.out`.
  ///
  /// - Parameters:
  ///   - record: The stored record value (an object).
  ///   - names: The key names by id (the old file's; ids the new file keeps).
  ///   - id: The record's id, for errors.
  /// - Throws: `.migrationFailed` as ``_MigrationRun/apply(to:)`` throws it; a
  ///   `_CodecError` for bytes that do not read.
  func rewrite(_ record: UnsafeRawBufferPointer, names: [String?], encoder: _BinaryEncoder, id: () -> FieldValue) throws {
    var r = _ByteReader(record)
    var keys: [UInt32] = []
    var sources: [_Source] = []
    keys.reserveCapacity(16)
    sources.reserveCapacity(16)
    guard try r.readByte() == _Tag.object else { throw r.error("the record is not an object", at: 0) }
    while true {
      let k = try r.readVarint()
      if k == 0 { break }
      let start = r.position
      try _BinaryValue.skip(&r, depth: 1)
      keys.append(UInt32(k - 1))
      sources.append(.stored(start, r.position))
    }
    var added: [Int: [UInt8]] = [:]
    func isNull(_ i: Int) -> Bool {
      if let bytes = added[i] { return bytes == [_Tag.null] }
      switch sources[i] {
      case .stored(let start, _): return record[start] == _Tag.null
      case .value(let v): return v == .null
      }
    }
    func value(_ source: _Source) throws -> FieldValue {
      switch source {
      case .stored(let start, let end):
        var reader = _ByteReader(UnsafeRawBufferPointer(rebasing: record[start..<end]))
        return try _BinaryValue.read(&reader, names: names, depth: 1)
      case .value(let v): return v
      }
    }
    func current(_ i: Int) throws -> FieldValue {
      if let bytes = added[i] { return try Self.decodeAdded(bytes, names: encoder.keys.names) }
      return try value(sources[i])
    }
    for (m, step, resolved) in steps {
      do {
        switch resolved {
        case .add(let id, let encoded):
          if let i = keys.firstIndex(of: id) {
            guard isNull(i) else { continue }
            sources[i] = .value(.null)
            added[i] = encoded
          } else {
            keys.append(id)
            sources.append(.value(.null))
            added[sources.count - 1] = encoded
          }
        case .rename(let from, let to, let fromName, let toName):
          guard let from, keys.contains(from), from != to else { continue }
          if let j = keys.firstIndex(of: to) {
            guard isNull(j) else {
              throw _MigrationRun._StepFailure(
                reason: "the record holds both \(fromName) and \(toName) (\(try current(j))); remove one first")
            }
            keys.remove(at: j)
            sources.remove(at: j)
            added = Self.shifted(added, removing: j)
          }
          keys[keys.firstIndex(of: from)!] = to
        case .remove(let id):
          guard let id, let i = keys.firstIndex(of: id) else { continue }
          keys.remove(at: i)
          sources.remove(at: i)
          added = Self.shifted(added, removing: i)
        case .convert(let id, let key, let conversion):
          guard let id, let i = keys.firstIndex(of: id) else { continue }
          let held = try current(i)
          guard held != .null else { continue }
          sources[i] = .value(try _MigrationRun.convert(held, key: key, conversion))
          added[i] = nil
        }
      } catch let failure as _MigrationRun._StepFailure {
        throw _MigrationRun.failed(m, step, id: id(), failure)
      } catch let error as _CodecError {
        throw error
      } catch let error as RequestSetError {
        throw error
      } catch {
        throw _MigrationRun.failed(m, step, id: id(), _MigrationRun._StepFailure(reason: "\(error)", underlying: error))
      }
    }
    let out = encoder.out
    out.append(_Tag.object)
    for (i, key) in keys.enumerated() {
      out.appendVarint(UInt64(key) + 1)
      if let bytes = added[i] {
        bytes.withUnsafeBytes { out.append($0) }
        continue
      }
      switch sources[i] {
      case .stored(let start, let end): out.append(UnsafeRawBufferPointer(rebasing: record[start..<end]))
      case .value(let v): try encoder.write(v, depth: 1)
      }
    }
    out.append(0)
  }

  /// `added` with the field at `index` gone and the later ones moved down.
  private static func shifted(_ added: [Int: [UInt8]], removing index: Int) -> [Int: [UInt8]] {
    guard !added.isEmpty else { return added }
    var out: [Int: [UInt8]] = [:]
    for (i, bytes) in added where i != index { out[i > index ? i - 1 : i] = bytes }
    return out
  }

  private static func decodeAdded(_ bytes: [UInt8], names: [String?]) throws -> FieldValue {
    try bytes.withUnsafeBytes { raw in
      var r = _ByteReader(raw)
      return try _BinaryValue.read(&r, names: names, depth: 1)
    }
  }
}
