import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A ``LogStore`` snapshot's records: read from the file on demand, by slot.
///
/// It holds its own mapping of the file it was taken from and its own copy of the index,
/// so it keeps working whatever the store does next: appends land past the bytes it
/// reads, and compaction renames a new file over the path while this mapping stays on the
/// old one (which the kernel keeps until the last mapping goes).
struct _LogRecords<Element: Record>: _ExternalRecords {
  let path: String
  let mapping: _Mapping?
  let locations: [_RecordLocation]
  /// The end of the last indexed frame when the snapshot was taken.
  let end: Int
  let names: [String?]
  let ids: [String: UInt32]
  let probedKinds: [String: _KindSet]
  let writtenKinds: _KindAccumulator
  let openKinds: _OpenKinds
  /// The shapes of the dynamic records decoded so far (see `_DynamicRecordTemplate`).
  let dynamicTemplates = _DynamicRecordTemplates()

  /// The record value's bytes in a slot (the payload after its id).
  ///
  /// Every string-key scan calls this once per record, so the common case (the slot in
  /// the mapping, an integer id) touches nothing but the location and the id's bytes: no
  /// path, no error, no call (a scan of a 1M-record log spent a sixth of its time here).
  @inline(__always)
  func recordReader(_ slot: Int) throws -> _ByteReader {
    let location = locations[slot]
    if let mapping, location.offset + Int(location.length) <= mapping.length {
      var r = _ByteReader(mapping.bytes(location.offset, Int(location.length)))
      if _BinaryValue.skipInteger(&r) { return r }
    }
    return try _recordValueReader(mapping, location, path: path)
  }

  func record(at slot: Int) throws -> Element {
    let location = locations[slot]
    try mapping?.check(covers: location.offset + Int(location.length))
    let r = try recordReader(slot)
    let bytes = UnsafeRawBufferPointer(start: r.base + r.position, count: r.end - r.position)
    if Element.self == DynamicRecord.self, let record = dynamicTemplates.decode(bytes, names: names) {
      return unsafeBitCast(record, to: Element.self)
    }
    do {
      return try _BinaryDecoder.decode(Element.self, from: bytes, names: names)
    } catch let DecodingError.dataCorrupted(context) where context.underlyingError is _CodecError {
      throw _damagedRecord(path, locations[slot], context.underlyingError as! _CodecError)
    } catch {
      throw RequestSetError(
        .decodingFailed,
        "Could not decode \(_withArticle(Element.self)) from the record at offset \(locations[slot].offset) of \(path): \(error). "
          + "If \(Element.self) changed since the record was written, register a Migration that brings old records "
          + "to the new shape (LogStoreOptions.migrations), or make new properties optional (or give them defaults in "
          + "init(from:)); old records then still decode.",
        underlying: error)
    }
  }

  /// Drops the mapping's resident pages (the file's bytes stay in the page cache), so a
  /// stream over a large log holds a batch's pages, not the whole file's.
  func releaseResidentMemory() { mapping?.releaseResidentPages() }

  func fields() throws -> any _FieldAccess {
    // Once per evaluation, before its readers walk the records (see `_Mapping`).
    try mapping?.check(covers: end)
    return _LogFieldAccess(
      kinds: try openKinds.fieldKinds(written: writtenKinds, names: names, probed: probedKinds), records: self)
  }
}

/// A reader at the record value of a frame payload (past its id), in a mapping.
@inline(__always)
func _recordValueReader(_ mapping: _Mapping?, _ location: _RecordLocation, path: String) throws -> _ByteReader {
  guard let mapping, location.offset + Int(location.length) <= mapping.length else {
    throw RequestSetError(
      .storeUnavailable, "The LogStore at \(path) cannot reach the record at offset \(location.offset).")
  }
  var r = _ByteReader(mapping.bytes(location.offset, Int(location.length)))
  do throws(_CodecError) {
    try _BinaryValue.skip(&r)
  } catch {
    throw _damagedRecord(path, location, error)
  }
  return r
}

/// The key ids of a dotted key, or nil when some part names no key in the log (no record
/// holds it: every value is nil).
func _keyIDs(_ key: String, _ ids: [String: UInt32]) -> [Int]? {
  var path: [Int] = []
  for part in _DottedKey.split(key) {
    guard let id = ids[part] else { return nil }
    path.append(Int(id))
  }
  return path
}

func _damagedRecord(_ path: String, _ location: _RecordLocation, _ error: _CodecError) -> RequestSetError {
  RequestSetError(
    .corruptLog,
    "The record at offset \(location.offset) of \(path) does not parse (\(error.reason) at byte \(error.offset) of "
      + "it) although its frame checksum holds, so it was written that way: by another program, or by a newer "
      + "version of RequestSet. Open the log with the version that wrote it; no recovery mode changes such a record.",
    underlying: error)
}

/// String-key access to a log snapshot: each key becomes a path of key ids, looked up
/// once; each read walks one record's bytes to that path without decoding the record.
struct _LogFieldAccess<Element: Record>: _FieldAccess {
  let kinds: [String: _KindSet]
  let records: _LogRecords<Element>

  func reader(for key: String) -> ((Int) throws -> FieldValue)? {
    guard let path = _keyIDs(key, records.ids) else { return nil }  // no record holds it
    let records = self.records
    let names = records.names
    return { slot in
      var r = try records.recordReader(slot)
      do throws(_CodecError) {
        guard try _BinaryValue.seek(&r, path: path) else { return .null }
        // A small integer (below 128: ages, counts, flags), the value sorts read most, inline.
        if r.position < r.end, r.base[r.position] >= _Tag.smallInt { return .int(Int(r.base[r.position] & 0x7F)) }
        return try _BinaryValue.read(&r, names: names)
      } catch {
        throw _damagedRecord(records.path, records.locations[slot], error)
      }
    }
  }
}

extension _LogFieldAccess {
  /// `key == "text"` and `key != "text"` (binary collation) as a comparison of the stored
  /// string's UTF-8 bytes, with no String built per record. Equal bytes are equal strings,
  /// and two different ASCII strings are different; anything else (non-ASCII text, which
  /// Swift compares by canonical equivalence, or a value of another kind) is read as a
  /// ``FieldValue`` and tested by the condition itself.
  func matcher(for condition: _FieldCondition) -> ((Int) throws -> Bool)? {
    guard let comparison = condition.comparison, comparison == .equal || comparison == .notEqual,
      condition.collation == .binary, case .string(let text) = condition.value,
      let path = _keyIDs(condition.key, records.ids)
    else { return nil }
    let wanted = Array(text.utf8)
    let wantedASCII = wanted.allSatisfy { $0 < 0x80 }
    let equal = comparison == .equal
    let records = self.records
    let names = records.names
    return { slot in
      var r = try records.recordReader(slot)
      do throws(_CodecError) {
        guard try _BinaryValue.seek(&r, path: path) else { return condition.matches(.null) }
        let valueAt = r
        if try r.readByte() == _Tag.string {
          let n = try r.readLength(max: r.remaining)
          let bytes = try r.readBytes(n)
          // Byte by byte: the strings compared are short, and a memcmp call costs more.
          var same = n == wanted.count
          if same {
            wanted.withUnsafeBufferPointer { w in
              for i in 0..<n where w[i] != bytes[i] {
                same = false
                break
              }
            }
          }
          if same { return equal }
          if wantedASCII {
            // Whether every byte is ASCII, without a branch per byte.
            var high: UInt8 = 0
            for b in bytes { high |= b }
            if high < 0x80 { return !equal }
          }
        }
        r = valueAt
        return condition.matches(try _BinaryValue.read(&r, names: names))
      } catch {
        throw _damagedRecord(records.path, records.locations[slot], error)
      }
    }
  }
}

/// The kinds of value per key in the records that were live when a store opened, learned
/// once, on the first string-key query, by walking those records' bytes.
final class _OpenKinds: Sendable {
  private enum State: Sendable {
    case pending(path: String, mapping: _Mapping?, locations: [_RecordLocation], names: [String?])
    case learned(_KindAccumulator)
  }
  private let state: _Lock<State>

  init(path: String, mapping: _Mapping?, locations: [_RecordLocation], names: [String?]) {
    state = _Lock(.pending(path: path, mapping: mapping, locations: locations, names: names))
  }

  static let empty = _OpenKinds(learned: _KindAccumulator())

  init(learned: _KindAccumulator) {
    state = _Lock(.learned(learned))
  }

  /// The kinds when they are known without walking any record: learned already, or no
  /// record to learn from. Nil while a walk is pending.
  func knownValue() -> _KindAccumulator? {
    state.withLock { state in
      switch state {
      case .learned(let kinds): return kinds
      case .pending(_, _, let locations, _): return locations.isEmpty ? _KindAccumulator() : nil
      }
    }
  }

  /// The kinds by dotted key of a snapshot that wrote `written` on top of what the open
  /// learned, with key names `names`, merged into `probed` (see
  /// `_KindAccumulator.materialize`).
  ///
  /// Every query asks once or twice, and snapshots taken between two writes ask with the
  /// same arguments: the last answer is kept and handed out again while they are equal,
  /// so a small query does not rebuild the dictionary.
  func fieldKinds(
    written: _KindAccumulator, names: [String?], probed: [String: _KindSet]
  ) throws -> [String: _KindSet] {
    if let last = lastFieldKinds.withLock({ $0 }), last.written.top == written.top,
      last.written.nested == written.nested, last.names == names, last.probed == probed
    {
      return last.kinds
    }
    var kinds = try value()
    kinds.formUnion(written)
    let materialized = kinds.materialize(names: names, base: probed)
    lastFieldKinds.withLock { $0 = (written, names, probed, materialized) }
    return materialized
  }

  /// The arguments and answer of the last ``fieldKinds(written:names:probed:)``.
  private let lastFieldKinds = _Lock<
    (written: _KindAccumulator, names: [String?], probed: [String: _KindSet], kinds: [String: _KindSet])?
  >(nil)

  func value() throws -> _KindAccumulator {
    try state.withLock { state in
      switch state {
      case .learned(let kinds):
        return kinds
      case .pending(let path, let mapping, let locations, let names):
        var kinds = _KindAccumulator()
        if let mapping {
          for (i, location) in locations.enumerated() {
            // An async call cancelled meanwhile stops here (the walk stays pending).
            if i & 0xFF == 0 { try _CancelToken.throwIfCancelled() }
            var r = _ByteReader(mapping.bytes(location.offset, Int(location.length)))
            do throws(_CodecError) {
              try _BinaryValue.skip(&r)
              try _BinaryValue.collectKinds(&r, names: names, into: &kinds)
            } catch {
              throw _damagedRecord(path, location, error)
            }
          }
        }
        state = .learned(kinds)
        return kinds
      }
    }
  }
}
