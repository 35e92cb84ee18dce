/// Where a record's frame payload (id value, then record value) lies in a log file.
///
/// Packed into 12 bytes (a 48-bit offset, a 32-bit length and the frame header's size),
/// not 16: a log keeps one per slot, so at 10,000,000 records that is 40 MB less.
struct _RecordLocation: Sendable {
  private var offsetLow: UInt32
  private var _length: UInt32
  private var offsetHigh: UInt16
  /// The frame's bytes before its payload (crc, type and two varints: at most
  /// `_LogFormat.maxFrameHeader`).
  private var headerLength: UInt8

  /// - Precondition: `offset` below 2^48 (no file system holds a larger file) and a frame
  ///   header of at most 255 bytes: both hold for every frame a log can parse or write.
  init(offset: Int, length: UInt32, frameLength: UInt32) {
    precondition(
      offset >= 0 && offset < 1 << 48 && frameLength >= length && frameLength - length <= 255,
      "a record location no log can hold")
    offsetLow = UInt32(truncatingIfNeeded: offset)
    offsetHigh = UInt16(truncatingIfNeeded: offset >> 32)
    _length = length
    headerLength = UInt8(frameLength - length)
  }

  /// File offset of the payload.
  var offset: Int { Int(offsetHigh) << 32 | Int(offsetLow) }
  /// The payload's size.
  var length: UInt32 { _length }
  /// The whole frame's size, for the dead-space count.
  var frameLength: UInt32 { _length + UInt32(headerLength) }
}

/// The in-memory index of a log: per slot (store order) the record's location, which
/// slots are live, and id → slot. Records themselves stay in the file.
struct _LogIndex<ID: Hashable & Sendable>: Sendable {
  var keys = _KeyTable()
  var locations: [_RecordLocation] = []
  var live = _Bitset()
  var liveCount = 0
  /// id → slot; empty while ``slotsPending`` (see ``slots``).
  private var _slots = _IDMap<ID>()
  /// True for an index restored from a checkpoint, which holds no ids: the id map is read
  /// from the records' bytes by ``loadSlots(from:path:)`` when a write or an id lookup
  /// first needs it, so that opening costs no pass over every record.
  private(set) var slotsPending = false
  /// The sum of live records' frame sizes: the file minus this is dead space.
  var liveBytes = 0
  /// The last frame's sequence number.
  var sequence: UInt64 = 0
  /// Where the next frame goes.
  var end = _LogFormat.headerSize
  /// The secondary indexes the last `.indexes` frame defined.
  var indexDefinitions: [RequestIndex] = []
  /// The version the last commit made (see `_LogFormat.CommitStamp`); 0 before any.
  var version: UInt64 = 0
  /// The last stamped commit's time, in microseconds since 1970: the next commit's
  /// time is never less.
  var time: UInt64 = 0

  /// id → slot. Only read once the map is loaded (`_LogState.loadSlots()`); every path
  /// that needs it loads it first, so a pending map here is a bug in the store.
  var slots: _IDMap<ID> {
    get {
      precondition(!slotsPending, "the id map is read before it was loaded")
      return _slots
    }
    _modify {
      precondition(!slotsPending, "the id map is read before it was loaded")
      yield &_slots
    }
  }

  /// An index restored from a checkpoint, whose id map is read on first use.
  init(checkpoint c: _Checkpoint.Contents, keys: _KeyTable) {
    self.keys = keys
    locations = c.locations
    live = c.live
    liveCount = c.liveCount
    liveBytes = c.liveBytes
    sequence = c.sequence
    version = c.version
    time = c.time
    end = c.end
    indexDefinitions = c.indexDefinitions
    slotsPending = liveCount > 0
  }

  init() {}

  /// Reads the id of every live record from its bytes in `mapping` into the id map.
  ///
  /// - Throws: ``RequestSetError`` `.corruptLog` or `.schemaMismatch` when an id does not
  ///   read as `ID` (the log changed under the store).
  mutating func loadSlots(from mapping: _Mapping?, path: String) throws where ID: Decodable {
    guard slotsPending else { return }
    var slots = _IDMap<ID>()
    slots.reserveCapacity(liveCount)
    let names = keys.names
    for slot in 0..<locations.count where live[slot] {
      // An async call cancelled meanwhile stops here (the ids stay pending for the next).
      if slot & 0xFFF == 0 { try _CancelToken.throwIfCancelled() }
      let location = locations[slot]
      let r = try _recordValueReader(mapping, location, path: path)  // just past the id
      let id: ID
      do {
        id = try _readID(UnsafeRawBufferPointer(start: r.base, count: r.position), names: names)
      } catch {
        throw RequestSetError(
          .schemaMismatch,
          "The record id at offset \(location.offset) of \(path) does not read as \(ID.self): \(error). Open the log "
            + "with the record type that wrote it.", underlying: error)
      }
      guard slots.insertIfAbsent(slot, forKey: id) == nil else {
        throw RequestSetError(
          .corruptLog,
          "The log \(path) holds two live records with the id \(id) (at offset \(location.offset)), which its "
            + "checkpoint cannot have described. Delete \(path).checkpoint and open the log again.")
      }
    }
    _slots = slots
    slotsPending = false
  }

  /// Inserts, or replaces in place (keeping the slot).
  @inline(__always)
  mutating func put(_ id: ID, _ location: _RecordLocation) {
    // One lookup at most for a new id (the common case: imports, replays of fresh logs).
    if let slot = slots.insertIfAbsent(locations.count, forKey: id) {
      liveBytes -= Int(locations[slot].frameLength)
      locations[slot] = location
    } else {
      locations.append(location)
      live.append(true)
      liveCount += 1
    }
    liveBytes += Int(location.frameLength)
  }

  @discardableResult
  mutating func delete(_ id: ID) -> Bool {
    guard let slot = slots.removeValue(forKey: id) else { return false }
    live[slot] = false
    liveCount -= 1
    liveBytes -= Int(locations[slot].frameLength)
    return true
  }

  /// Makes room for `n` more records.
  ///
  /// Locations grow by half at least: reserving exactly `count + n` per batch copied the
  /// whole array at every commit, and the freed copies, each a little smaller than the
  /// next, fragmented the heap (an import of 1M records in batches of 20,000 peaked tens of
  /// MB higher). The id map grows by powers of two anyway.
  mutating func reserve(_ n: Int) {
    let needed = locations.count + n
    if locations.capacity < needed {
      locations.reserveCapacity(Swift.max(needed, locations.capacity + locations.capacity / 2))
    }
    slots.reserveCapacity(slots.count + n)
  }

  /// The locations of the live records, in store order.
  var liveLocations: [_RecordLocation] {
    if liveCount == locations.count { return locations }
    var out: [_RecordLocation] = []
    out.reserveCapacity(liveCount)
    for s in 0..<locations.count where live[s] { out.append(locations[s]) }
    return out
  }
}

/// Reads a record id from its encoded bytes: the decoder, short-cut for `Int` ids.
@inline(__always)
func _readID<ID: Decodable>(_ bytes: UnsafeRawBufferPointer, names: [String?]) throws -> ID {
  if ID.self == Int.self, let first = bytes.first {
    if first >= _Tag.smallInt, bytes.count == 1 { return unsafeBitCast(Int(first & 0x7F), to: ID.self) }
    if first == _Tag.int {
      var r = _ByteReader(bytes, position: 1)
      return unsafeBitCast(Int(_unzigzag(try r.readVarint())), to: ID.self)
    }
  }
  if ID.self == FieldValue.self {
    // A DynamicRecord's id: any well-formed value, read without a decoder.
    var r = _ByteReader(bytes)
    return try _BinaryValue.read(&r, names: names) as! ID
  }
  return try _BinaryDecoder.decode(ID.self, from: bytes, names: names)
}

/// One commit that replay found: what `LogStore.history()` lists, and where it ends.
struct _CommitEntry: Equatable {
  var version: UInt64
  /// Microseconds since 1970; nil for a commit written without a stamp.
  var time: UInt64?
  var recordsChanged: Int
  /// The offset just past the commit's last frame: replaying the file up to here gives
  /// the store as it was at this commit.
  var end: Int
}

/// Replays a log file into an index, applying a recovery mode to whatever damage it finds.
enum _Recovery {
  struct Outcome<ID: Hashable & Sendable> {
    var index: _LogIndex<ID>
    var report: LogRecoveryReport
    /// Where the file must be cut (a torn tail, or everything after the first damage).
    var cutAt: Int?
    /// Every commit read, oldest first, when replay was asked to collect them.
    var history: [_CommitEntry] = []
    /// The version of the first commit read; nil when the log holds none.
    var firstVersion: UInt64?
  }

  /// A frame's payload that does not parse although its checksum holds.
  struct BadPayload: Error { var reason: String }

  static func replay<ID: Hashable & Sendable & Decodable>(
    _ file: UnsafeRawBufferPointer, header: _LogFormat.Header, mode: LogRecoveryMode, path: String,
    idType: ID.Type = ID.self, collectHistory: Bool = false, until target: UInt64? = nil
  ) throws -> Outcome<ID> {
    let salt = _LogFormat.saltState(header.salt)
    var index = _LogIndex<ID>()
    var report = LogRecoveryReport(mode: mode, fileSize: file.count)
    var pos = _LogFormat.headerSize
    var committedEnd = pos
    var committedSequence: UInt64 = 0
    var committedKeyCount = 0
    var stoppedAtDamage = false
    var lastSequence: UInt64 = 0
    // The batch changes read since the last commit; a delete has offset -1. Two arrays, not
    // an array of (ID, location?) tuples, whose generic metadata costs more than the rest.
    var pending: [ID] = []
    var pendingLocations: [_RecordLocation?] = []  // nil for a delete
    var cutAt: Int?
    // History: commits read so far (when collected), the first version, and the plain put
    // and delete frames since the last commit frame, which a commit with count 0 folds into
    // one commit (a compaction's records; see docs/LOG-FORMAT.md).
    var history: [_CommitEntry] = []
    var firstVersion: UInt64?
    var plainRun = 0
    var plainChanged = 0
    var versionBeforeRun: UInt64 = 0
    var firstBeforeRun: UInt64?
    var stoppedAtTarget = false
    var runFolds = false

    func committed(_ version: UInt64, _ stamp: _LogFormat.CommitStamp?, changed: Int, end: Int) {
      index.version = version
      if let stamp { index.time = stamp.time }
      if firstVersion == nil { firstVersion = version }
      if collectHistory {
        // A stamp's time 0 stands for "unknown" (a compaction of commits written unstamped).
        let time = stamp.flatMap { $0.time == 0 ? nil : $0.time }
        history.append(_CommitEntry(version: version, time: time, recordsChanged: changed, end: end))
      }
    }

    /// A put or delete frame: a commit of its own, unless a count-0 commit folds it.
    func plainCommit(_ f: _LogFormat.Frame) {
      if plainRun == 0 {
        versionBeforeRun = index.version
        firstBeforeRun = firstVersion
      }
      plainRun += 1
      plainChanged += 1
      committed(index.version &+ 1, nil, changed: 1, end: f.end)
    }

    func payload(_ f: _LogFormat.Frame) -> UnsafeRawBufferPointer {
      UnsafeRawBufferPointer(rebasing: file[f.payloadStart..<f.end])
    }

    /// Whether the plain frames from `offset` on end in a count-0 commit that folds them
    /// into the commit before: looked ahead only when a read as of a version reaches it.
    func foldsAhead(from offset: Int) -> Bool {
      var at = offset
      while case .frame(let f) = _LogFormat.parseFrame(file, at: at, saltState: salt) {
        switch f.type {
        case .put, .delete: at = f.end
        case .commit: return (try? _LogFormat.parseCommit(payload(f)).count) == 0
        default: return false
        }
      }
      return false
    }

    /// The id at the start of a payload, and the payload's location.
    func idAndLocation(_ f: _LogFormat.Frame, needsRecord: Bool) throws -> (ID, _RecordLocation) {
      let bytes = payload(f)
      var r = _ByteReader(bytes)
      do throws(_CodecError) {
        try _BinaryValue.skip(&r)
      } catch {
        throw BadPayload(reason: "the record id is damaged (\(error))")
      }
      if needsRecord && r.isAtEnd { throw BadPayload(reason: "the frame holds an id but no record") }
      let id: ID
      do {
        id = try _readID(UnsafeRawBufferPointer(rebasing: bytes[..<r.position]), names: index.keys.names)
      } catch {
        // The frame is intact and its id is a well-formed value: it was written with
        // another record type. That is no damage, and no recovery mode may touch it.
        throw schemaMismatch(f, bytes, error)
      }
      return (
        id,
        _RecordLocation(
          offset: f.payloadStart, length: UInt32(f.payloadLength), frameLength: UInt32(f.end - f.start))
      )
    }

    func schemaMismatch(_ f: _LogFormat.Frame, _ bytes: UnsafeRawBufferPointer, _ error: any Error)
      -> RequestSetError
    {
      var r = _ByteReader(bytes)
      let value = (try? _BinaryValue.read(&r, names: index.keys.names)).map { "\($0)" } ?? "?"
      return RequestSetError(
        .schemaMismatch,
        "The log \(path) is intact, but its records were written with another record type: the field \"id\" of the "
          + "record at offset \(f.start) holds \(_describeTag(bytes.first)) (\(value)), and this store reads it as "
          + "\(ID.self). Open the log with the record type that wrote it. Nothing was changed; no recovery mode "
          + "applies, because nothing is damaged.",
        underlying: error)
    }

    func dropPending() {
      report.droppedRecords += pending.count
      pending.removeAll()
      pendingLocations.removeAll()
    }

    /// Applies one verified frame.
    func apply(_ f: _LogFormat.Frame) throws {
      if !pending.isEmpty && f.type != .batchPut && f.type != .batchDelete && f.type != .commit
        && f.type != .keys
      {
        guard mode == .skipDamagedFrames else {
          throw BadPayload(reason: "\(_withArticle("\(f.type)")) frame inside an uncommitted batch")
        }
        dropPending()
      }
      switch f.type {
      case .keys:
        var r = _ByteReader(payload(f))
        do throws(_CodecError) {
          while !r.isAtEnd {
            let id = try r.readLength(max: _KeyTable.maxCount)
            let n = try r.readLength(max: r.remaining)
            let name = String(decoding: try r.readBytes(n), as: UTF8.self)
            try index.keys.define(id: id, name: name)
          }
        } catch {
          throw BadPayload(reason: "bad key definitions (\(error.reason))")
        }
      case .indexes:
        do throws(_CodecError) {
          index.indexDefinitions = try _LogFormat.parseIndexDefinitions(payload(f))
        } catch {
          throw BadPayload(reason: "bad index definitions (\(error.reason))")
        }
      case .put:
        let (id, location) = try idAndLocation(f, needsRecord: true)
        index.put(id, location)
        plainCommit(f)
      case .delete:
        let (id, _) = try idAndLocation(f, needsRecord: false)
        index.delete(id)
        plainCommit(f)
      case .batchPut:
        let (id, location) = try idAndLocation(f, needsRecord: true)
        pending.append(id)
        pendingLocations.append(location)
      case .batchDelete:
        let (id, _) = try idAndLocation(f, needsRecord: false)
        pending.append(id)
        pendingLocations.append(nil)
      case .commit:
        let count: Int
        let stamp: _LogFormat.CommitStamp?
        do throws(_CodecError) {
          (count, stamp) = try _LogFormat.parseCommit(payload(f))
        } catch {
          throw BadPayload(reason: "bad commit payload (\(error.reason))")
        }
        // A count-0 commit after plain frames makes them one commit (a compaction's base).
        let folds = count == 0 && pending.isEmpty && plainRun > 0
        let previous = folds ? versionBeforeRun : index.version
        // Versions grow by commit; only the empty commit that closes a compaction of a
        // store never written to stays at its version (0), and makes no commit.
        let empty = count == 0 && !folds && stamp?.version == previous
        if let stamp, stamp.version < previous || (stamp.version == previous && !empty) {
          throw BadPayload(reason: "commit version \(stamp.version) does not follow version \(previous)")
        }
        guard count == pending.count else {
          guard mode == .skipDamagedFrames else {
            throw BadPayload(reason: "the commit is for \(count) records but \(pending.count) precede it")
          }
          dropPending()
          return
        }
        index.reserve(pending.count)
        for i in 0..<pending.count {
          if let location = pendingLocations[i] {
            index.put(pending[i], location)
          } else {
            index.delete(pending[i])
          }
        }
        pending.removeAll()
        pendingLocations.removeAll()
        if folds {
          if collectHistory { history.removeLast(plainRun) }
          index.version = versionBeforeRun
          firstVersion = firstBeforeRun
        }
        if !empty {
          committed(stamp?.version ?? previous &+ 1, stamp, changed: folds ? plainChanged : count, end: f.end)
        }
      }
      if f.type == .commit || f.type == .indexes {
        plainRun = 0
        plainChanged = 0
        runFolds = false
      }
    }

    /// Damage away from the tail: what the mode says. Returns where to go on, or nil to stop.
    func damaged(at offset: Int, upTo next: Int, _ reason: String) throws -> Int? {
      switch mode {
      case .truncateTornTail, .failOnAnyDamage:
        throw RequestSetError(
          .corruptLog,
          "The log \(path) is damaged at offset \(offset) (\(reason)); intact frames follow at offset \(next), "
            + "so this is not an interrupted write. Nothing was changed. Back the file up, then open it with "
            + "recovery: .skipDamagedFrames to keep every intact record, or .stopAtFirstDamage to keep only "
            + "the records before offset \(offset).")
      case .stopAtFirstDamage:
        report.damage.append(.init(offset: offset, byteCount: next - offset, reason: reason))
        report.discardedFrom = offset
        stoppedAtDamage = true
        return nil
      case .skipDamagedFrames:
        report.damage.append(.init(offset: offset, byteCount: next - offset, reason: reason))
        dropPending()
        return next
      }
    }

    scan: while pos < file.count {
      switch _LogFormat.parseFrame(file, at: pos, saltState: salt) {
      case .frame(let f):
        var problem: String?
        if f.sequence != lastSequence &+ 1 && !(mode == .skipDamagedFrames && f.sequence > lastSequence) {
          problem = "sequence number \(f.sequence) where \(lastSequence &+ 1) was expected"
        } else {
          do { try apply(f) } catch let bad as BadPayload { problem = bad.reason }
        }
        if let problem {
          guard let next = try damaged(at: pos, upTo: f.end, problem) else { break scan }
          pos = next
          continue scan
        }
        report.frameCount += 1
        lastSequence = f.sequence
        pos = f.end
        // Key definitions belong to the write whose records follow them: a write is
        // complete at its put, delete or commit frame.
        if pending.isEmpty && f.type != .keys {
          committedEnd = pos
          committedSequence = lastSequence
          committedKeyCount = index.keys.count
          // Reading as of a version: stop once the store has reached it.
          if let target, index.version >= target {
            if plainRun > 0 && !runFolds { runFolds = foldsAhead(from: pos) }
            if plainRun == 0 || !runFolds {
              stoppedAtTarget = true
              break scan
            }
          }
        }
      case .incomplete(let reason), .damaged(let reason):
        guard
          let next = _LogFormat.resync(file, from: pos + 1, minimumSequence: lastSequence, saltState: salt)
        else {
          break scan  // nothing intact follows: the last write was interrupted
        }
        guard let resume = try damaged(at: pos, upTo: next, reason) else { break scan }
        pos = resume
      }
    }

    if committedEnd < file.count && !stoppedAtDamage && !stoppedAtTarget {
      // An incomplete frame, a batch without its commit frame, or key definitions without
      // their record: the last write was interrupted, and all of it goes.
      if mode == .failOnAnyDamage {
        throw RequestSetError(
          .corruptLog,
          "The log \(path) ends in an incomplete write at offset \(committedEnd) (\(file.count - committedEnd) bytes). "
            + "Nothing was changed. Open it with the default recovery (.truncateTornTail) to cut the "
            + "interrupted write off.")
      }
      report.tornTail = .init(offset: committedEnd, byteCount: file.count - committedEnd)
    }
    pending.removeAll()
    pendingLocations.removeAll()
    // Names defined by frames that are cut off are not in the file any more.
    if committedEnd < file.count { index.keys.rollback(to: committedKeyCount) }
    if mode == .skipDamagedFrames && !report.damage.isEmpty {
      // A skipped key frame takes field names with it: records that use them cannot be
      // read, so they go too, and every record the store keeps reads back.
      let names = index.keys.names
      var unreadable: [ID] = []
      for (id, slot) in index.slots {
        let location = index.locations[slot]
        var r = _ByteReader(
          UnsafeRawBufferPointer(rebasing: file[location.offset..<(location.offset + Int(location.length))]))
        var kinds = _KindAccumulator()
        do throws(_CodecError) {
          try _BinaryValue.skip(&r)
          try _BinaryValue.collectKinds(&r, names: names, into: &kinds)
        } catch {
          unreadable.append(id)
        }
      }
      for id in unreadable { index.delete(id) }
      report.droppedRecords += unreadable.count
    }
    if committedEnd < file.count && !stoppedAtTarget { cutAt = committedEnd }
    index.end = committedEnd
    index.sequence = committedSequence
    report.recordCount = index.liveCount
    return Outcome(index: index, report: report, cutAt: cutAt, history: history, firstVersion: firstVersion)
  }
}

/// What a value's tag byte says it is, for messages.
func _describeTag(_ tag: UInt8?) -> String {
  guard let tag else { return "nothing" }
  switch tag {
  case _Tag.null: return "null"
  case _Tag.false, _Tag.true: return "a Boolean"
  case _Tag.int, _Tag.uint: return "an integer"
  case _Tag.double: return "a floating-point number"
  case _Tag.string: return "a string"
  case _Tag.array: return "an array"
  case _Tag.object: return "an object"
  default: return tag >= _Tag.smallInt ? "an integer" : "an unknown value (tag \(tag))"
  }
}
