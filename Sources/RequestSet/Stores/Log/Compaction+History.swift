import Foundation

/// What a compaction that keeps history writes: the records of the oldest commit it keeps,
/// then every frame from that commit's end on.
struct _KeptHistory<ID: Hashable & Sendable> {
  /// The store as it was at the oldest commit kept.
  var base: _LogIndex<ID>
  /// That commit's version and time (0 when unknown).
  var stamp: _LogFormat.CommitStamp
  /// Where the commits after it start in the current file.
  var tailStart: Int
}

extension _LogState {
  /// The history `options.keepHistory` asks compaction to keep, or nil when it keeps only
  /// the newest commit (then compaction writes the current records, as without history).
  func keptHistory(_ source: _Mapping?) throws -> _KeptHistory<Element.ID>? {
    guard options.keepHistory != .none, let source else { return nil }
    let bytes = source.bytes(0, index.end)
    let commits = try _Recovery.replay(
      bytes, header: header, mode: options.recovery, path: path, idType: Element.ID.self, collectHistory: true
    ).history
    let first: Int
    switch options.keepHistory {
    case .none: return nil
    case .all: first = 0
    case .versions(let n): first = Swift.max(0, commits.count - n)
    case .since(let date):
      let micros = _LogFormat.micros(date)
      first = commits.lastIndex { ($0.time ?? 0) <= micros } ?? 0
    }
    guard first < commits.count - 1 else { return nil }
    let oldest = commits[first]
    let base = try _Recovery.replay(
      bytes, header: header, mode: options.recovery, path: path, idType: Element.ID.self, until: oldest.version
    ).index
    return _KeptHistory(
      base: base, stamp: .init(time: oldest.time ?? 0, version: oldest.version), tailStart: oldest.end)
  }

  /// Copies the kept commits' frames after the base, renumbered and checksummed for the
  /// new file. Key and index definitions are left out: the new file defines every key and
  /// the current indexes before its records.
  func appendHistory(
    _ kept: _KeptHistory<Element.ID>, from source: _Mapping, salt: UInt32, sequence: inout UInt64,
    to buffer: _ByteBuffer, flush: () throws -> Void
  ) throws {
    let bytes = source.bytes(0, index.end)
    var at = kept.tailStart
    while at < index.end {
      guard case .frame(let f) = _LogFormat.parseFrame(bytes, at: at, saltState: saltState) else {
        throw RequestSetError(
          .corruptLog,
          "Compaction of \(path) met a frame at offset \(at) that no longer verifies, so it keeps no history and the "
            + "log is unchanged. Reopen the store to see what the file holds.")
      }
      at = f.end
      if f.type == .keys || f.type == .indexes { continue }
      sequence += 1
      _LogFormat.appendFrame(
        f.type, sequence: sequence, payload: UnsafeRawBufferPointer(rebasing: bytes[f.payloadStart..<f.end]),
        saltState: salt, to: buffer)
      if buffer.count >= 4 << 20 { try flush() }
    }
  }

  /// Replays the new file, before it replaces the log: its index is the store's from then
  /// on, and `slotMap` maps each current slot to the record's slot in it.
  func replayCompacted(
    _ target: _FileDescriptor, size: Int, header newHeader: _LogFormat.Header, into slotMap: inout [Int]
  ) throws -> _LogIndex<Element.ID> {
    let mapping = try _Mapping(target, length: size)
    let replayed = try withExtendedLifetime(mapping) {
      try _Recovery.replay(
        mapping.bytes(0, size), header: newHeader, mode: .failOnAnyDamage, path: target.path, idType: Element.ID.self)
    }
    for i in slotMap.indices { slotMap[i] = -1 }
    for (id, slot) in index.slots {
      guard let new = replayed.index.slots[id] else {
        throw RequestSetError(
          .ioFailure,
          "Compaction of \(path) wrote a file that lacks the record with id \(id), so it was not used; the log is "
            + "unchanged. Compact again; if this repeats, report it with the log file.")
      }
      slotMap[slot] = new
    }
    return replayed.index
  }

  /// Takes the replayed index of a compaction that kept history. Its dead space (the
  /// history kept) counts as live, so automatic compaction waits for new dead space.
  mutating func adoptCompacted(_ replayed: _LogIndex<Element.ID>) {
    index = replayed
    index.liveBytes = index.end - _LogFormat.headerSize
  }
}

extension _LogFormat {
  /// A date in microseconds since 1970, as commit stamps hold it (clamped at 0).
  static func micros(_ date: Date) -> UInt64 {
    let value = date.timeIntervalSince1970 * 1_000_000
    return value.isFinite && value > 0 ? UInt64(Swift.min(value, 1.8e19)) : 0
  }

  /// A commit stamp's time as a date; nil for 0, which stands for "unknown".
  static func date(micros: UInt64?) -> Date? {
    guard let micros, micros > 0 else { return nil }
    return Date(timeIntervalSince1970: Double(micros) / 1_000_000)
  }
}
