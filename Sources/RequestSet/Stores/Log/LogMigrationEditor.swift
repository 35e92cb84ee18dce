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
    /// `value` indexes ``defaults``.
    case add(id: UInt32, value: Int)
    case rename(from: UInt32?, to: UInt32, fromName: String, toName: String)
    case remove(id: UInt32?)
    case convert(id: UInt32?, key: String, conversion: Migration.Conversion)
  }

  /// Where a field's value is: bytes of the stored record, or a value to encode.
  enum _Source {
    case stored(Int, Int)
    case value(FieldValue)
  }

  /// The steps, resolved, in order; ``origins`` says which migration and step each is.
  let steps: [_Step]
  let origins: [(migration: Migration, step: Migration.Step)]
  /// The encoded default of each add step.
  let defaults: [[UInt8]]

  /// The editor for `run`, or nil when a step needs the general path. New key names
  /// (rename targets, added keys, and names inside added defaults) are defined in
  /// `encoder.keys`.
  init?(_ run: _MigrationRun, encoder: _BinaryEncoder, ids: [String: UInt32]) throws {
    var steps: [_Step] = []
    var origins: [(Migration, Migration.Step)] = []
    var defaults: [[UInt8]] = []
    func single(_ key: String) -> String? {
      let names = FieldValue.fieldNames(inKey: key)
      return names.count == 1 ? names[0] : nil
    }
    // The keys a record may hold *at this step*: the log's, plus what earlier steps added
    // or renamed to, less what they removed or renamed away. Resolving a later step
    // against the log's keys alone skipped `.convert("weightKg", …)` after
    // `.rename("weight", to: "weightKg")` (weightKg was in no record yet), and likewise
    // `add x` then `convert x`, and `rename a→b` then `remove b`.
    var held = ids
    for m in run.migrations {
      for step in m.steps {
        switch step._kind {
        case .add(let key, let value):
          guard let name = single(key) else { return nil }
          let id = try encoder.keys.intern(name)
          let out = encoder.out
          let mark = out.count
          try encoder.write(value, depth: 1)
          defaults.append(Array(UnsafeRawBufferPointer(start: out.base + mark, count: out.count - mark)))
          out.count = mark
          steps.append(.add(id: id, value: defaults.count - 1))
          held[name] = id
        case .rename(let from, let to):
          guard let a = single(from), let b = single(to) else { return nil }
          let target = try encoder.keys.intern(b)
          steps.append(.rename(from: held[a], to: target, fromName: from, toName: to))
          if held[a] != nil && a != b {
            held[b] = target
            held[a] = nil
          }
        case .remove(let key):
          guard let name = single(key) else { return nil }
          steps.append(.remove(id: held[name]))
          held[name] = nil
        case .convert(let key, let conversion):
          guard let name = single(key) else { return nil }
          steps.append(.convert(id: held[name], key: key, conversion: conversion))
        case .transform:
          return nil
        }
        origins.append((m, step))
      }
    }
    self.steps = steps
    self.origins = origins
    self.defaults = defaults
  }

  /// The fields of the record being edited, kept from one record to the next so that no
  /// record allocates: key ids, where each value is, and which added default (a step's
  /// index in ``steps``, or -1) stands for it.
  final class _Scratch {
    var keys: [UInt32] = []
    var sources: [_Source] = []
    var added: [Int] = []
  }
  let scratch = _Scratch()

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
    var keys = scratch.keys
    var sources = scratch.sources
    var added = scratch.added
    scratch.keys = []
    scratch.sources = []
    scratch.added = []
    defer {
      scratch.keys = keys
      scratch.sources = sources
      scratch.added = added
    }
    keys.removeAll(keepingCapacity: true)
    sources.removeAll(keepingCapacity: true)
    added.removeAll(keepingCapacity: true)
    guard try r.readByte() == _Tag.object else { throw r.error("the record is not an object", at: 0) }
    while true {
      let k = try r.readVarint()
      if k == 0 { break }
      let start = r.position
      try _BinaryValue.skip(&r, depth: 1)
      keys.append(UInt32(truncatingIfNeeded: k - 1))
      sources.append(.stored(start, r.position))
      added.append(-1)
    }
    func encoded(_ i: Int) -> [UInt8]? { added[i] >= 0 ? defaults[added[i]] : nil }
    func isNull(_ i: Int) -> Bool {
      if let bytes = encoded(i) { return bytes == [_Tag.null] }
      switch sources[i] {
      case .stored(let start, _): return record[start] == _Tag.null
      case .value(let v): return v == .null
      }
    }
    func current(_ i: Int) throws -> FieldValue {
      if let bytes = encoded(i) { return try Self.decodeAdded(bytes, names: encoder.keys.names) }
      switch sources[i] {
      case .stored(let start, let end):
        var reader = _ByteReader(UnsafeRawBufferPointer(rebasing: record[start..<end]))
        return try _BinaryValue.read(&reader, names: names, depth: 1)
      case .value(let v): return v
      }
    }
    func remove(_ i: Int) {
      keys.remove(at: i)
      sources.remove(at: i)
      added.remove(at: i)
    }
    for s in steps.indices {
      do {
        switch steps[s] {
        case .add(let id, let value):
          if let i = keys.firstIndex(of: id) {
            guard isNull(i) else { continue }
            added[i] = value
          } else {
            keys.append(id)
            sources.append(.value(.null))
            added.append(value)
          }
        case .rename(let from, let to, let fromName, let toName):
          guard let from, keys.contains(from), from != to else { continue }
          if let j = keys.firstIndex(of: to) {
            guard isNull(j) else {
              throw _MigrationRun._StepFailure(
                reason: "the record holds both \(fromName) and \(toName) (\(try current(j))); remove one first")
            }
            remove(j)
          }
          keys[keys.firstIndex(of: from)!] = to
        case .remove(let id):
          guard let id, let i = keys.firstIndex(of: id) else { continue }
          remove(i)
        case .convert(let id, let key, let conversion):
          guard let id, let i = keys.firstIndex(of: id) else { continue }
          let held = try current(i)
          guard held != .null else { continue }
          sources[i] = .value(try _MigrationRun.convert(held, key: key, conversion))
          added[i] = -1
        }
      } catch let failure as _MigrationRun._StepFailure {
        throw _MigrationRun.failed(origins[s].migration, origins[s].step, id: id(), failure)
      } catch let error as _CodecError {
        throw error
      } catch let error as RequestSetError {
        throw error
      } catch {
        throw _MigrationRun.failed(
          origins[s].migration, origins[s].step, id: id(), _MigrationRun._StepFailure(reason: "\(error)", underlying: error))
      }
    }
    let out = encoder.out
    out.append(_Tag.object)
    for i in keys.indices {
      out.appendVarint(UInt64(keys[i]) + 1)
      if added[i] >= 0 {
        defaults[added[i]].withUnsafeBytes { out.append($0) }
        continue
      }
      switch sources[i] {
      case .stored(let start, let end): out.append(UnsafeRawBufferPointer(rebasing: record[start..<end]))
      case .value(let v): try encoder.write(v, depth: 1)
      }
    }
    out.append(0)
  }

  private static func decodeAdded(_ bytes: [UInt8], names: [String?]) throws -> FieldValue {
    try bytes.withUnsafeBytes { raw in
      var r = _ByteReader(raw)
      return try _BinaryValue.read(&r, names: names, depth: 1)
    }
  }
}
