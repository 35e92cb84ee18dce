#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What a log file holds, and what is wrong with it, read without opening a store: the
/// report behind `requestset info` and `requestset verify`.
///
/// Inspecting reads every frame and checks every checksum, walks every live record's
/// bytes, and works out what each ``LogRecoveryMode`` would do with the file, by running
/// the same replay a store runs on open. It changes nothing, takes no lock and writes no
/// side file, so it is safe on a log another process is writing (it sees the log as it
/// was when it read it), on a damaged log, and on a file that is no log at all (which
/// throws).
///
/// ```swift
/// let report = try LogStore<DynamicRecord>.inspect(path: "animals.rslog")
/// report.recordCount                    // 3
/// report.keys.map(\.key)                // ["age", "id", "name", "owner", "owner.city", "species"]
/// report.isClean                        // true: nothing damaged, nothing torn
/// report.recovery.first { $0.mode == .truncateTornTail }?.opens   // true
/// ```
public struct LogInspection: Sendable, Equatable {
  /// A string key that some live record holds.
  public struct Key: Sendable, Equatable {
    /// The key: a top-level field name, or a dotted path into nested objects (`owner.city`).
    public var key: String
    /// The kinds of value the key holds, sorted: `array`, `bool`, `decimal`, `double`,
    /// `int`, `null`, `object`, `string`, `uint`.
    public var kinds: [String]
    /// How many live records hold the key (with any value, `null` included).
    public var recordCount: Int
  }

  /// What opening the file with one recovery mode would do.
  public struct RecoveryOutcome: Sendable, Equatable {
    /// The mode.
    public var mode: LogRecoveryMode
    /// Whether a store would open with it; false when the mode refuses the damage.
    public var opens: Bool
    /// The records a store would hold after opening (0 when it does not open).
    public var recordCount: Int
    /// Where a writable store would cut the file (after copying the cut bytes to
    /// `<log>.damaged-<offset>`); nil when nothing is cut.
    public var cutAt: Int?
    /// Whether a writable store would rewrite the file without the damage (after copying
    /// it whole to `<log>.damaged-0`).
    public var rewrites: Bool
    /// Records of incomplete batches, or that use a lost field name, that would be left out.
    public var droppedRecords: Int
    /// Why the mode refuses the file, when it does: the message opening would throw.
    public var refusal: String?
  }

  /// The path inspected.
  public var path: String
  /// The file's size in bytes.
  public var fileSize: Int
  /// The header's format version.
  public var formatVersion: Int
  /// The header's generation: 1 for a new log, one more after each compaction.
  public var generation: UInt64
  /// The intact frames read (with ``LogRecoveryMode/skipDamagedFrames``, which reads past
  /// damage).
  public var frameCount: Int
  /// The live records every intact frame gives (what ``LogRecoveryMode/skipDamagedFrames``
  /// keeps).
  public var recordCount: Int
  /// The end of the last complete write: where appends continue.
  public var committedEnd: Int
  /// The bytes of the live records' frames.
  public var liveBytes: Int
  /// The secondary indexes the log defines.
  public var indexes: [RequestIndex]
  /// Every key a live record holds, sorted by key.
  public var keys: [Key]
  /// An interrupted last write, if the file ends in one.
  public var tornTail: LogRecoveryReport.TornTail?
  /// Damaged stretches before the tail, in file order.
  public var damage: [LogRecoveryReport.Damage]
  /// The offsets of live records whose frame is intact but whose value does not parse
  /// (written by another program, or by a newer version of RequestSet).
  public var unreadableRecords: [Int]
  /// What each recovery mode would do, in the order `truncateTornTail`, `failOnAnyDamage`,
  /// `stopAtFirstDamage`, `skipDamagedFrames`.
  public var recovery: [RecoveryOutcome]

  /// Bytes between the header and the committed end that hold no live record: replaced and
  /// deleted records, delete, key, commit and index frames. ``LogStore/compact()`` reclaims
  /// most of it.
  public var deadBytes: Int { Swift.max(0, committedEnd - _LogFormat.headerSize - liveBytes) }

  /// True when nothing is damaged, torn or unreadable: every mode opens the file as it is.
  public var isClean: Bool { tornTail == nil && damage.isEmpty && unreadableRecords.isEmpty }
}

extension LogStore {
  /// Reads a log file and reports what it holds and what is wrong with it, without opening
  /// a store or changing anything.
  ///
  /// The record type plays no part: every log inspects alike, so call it on
  /// `LogStore<DynamicRecord>` (or on the log's own type).
  ///
  /// ```swift
  /// let report = try LogStore<DynamicRecord>.inspect(path: "animals.rslog")
  /// for d in report.damage { print("damaged at \(d.offset), \(d.byteCount) bytes: \(d.reason)") }
  /// ```
  /// - Parameter path: The log file.
  /// - Returns: The report.
  /// - Throws: ``RequestSetError`` `.invalidPath` for a path that is empty or names no
  ///   regular file; `.ioFailure` when the file is missing or cannot be read; `.corruptLog`
  ///   when it is not a RequestSet log (its header is missing or damaged).
  /// - Complexity: O(*n*) in the file's size: one replay, and one walk over the live records'
  ///   bytes; a damaged file is replayed once more per recovery mode.
  public static func inspect(path: String) throws -> LogInspection {
    try _inspect(path: path, replayEveryMode: false)
  }

  /// ``inspect(path:)``, optionally replaying a clean file once per recovery mode as a
  /// damaged one is (tests check that this gives the same report).
  static func _inspect(path: String, replayEveryMode: Bool) throws -> LogInspection {
    try _FileIO.checkPath(path)
    try _FileIO.checkNotSpecial(path)
    guard _FileIO.exists(path) else {
      throw RequestSetError(.ioFailure, "There is no log at \(path). Check the path.")
    }
    let file = try _FileIO.open(path, O_RDONLY | O_NONBLOCK, hint: "Check the path and its permissions.")
    try _FileIO.checkRegular(file)
    let size = try _FileIO.size(file)
    let (mapping, bytes, header) = try _LogFormat.mapHeader(file, size: size, path: path)
    defer { withExtendedLifetime(mapping) {} }

    // Every intact frame, past any damage.
    let outcome: _Recovery.Outcome<FieldValue> = try _Recovery.replay(
      bytes, header: header, mode: .skipDamagedFrames, path: path)
    let index = outcome.index

    var census = _KeyCensus(names: index.keys.names)
    var unreadable: [Int] = []
    // The replay read the whole file through the mapping; the walk lets the pages go
    // every 65,536 records, so inspecting holds a bounded part of the file.
    mapping?.releaseResidentPages()
    for (i, location) in index.liveLocations.enumerated() {
      if i & 0xFFFF == 0xFFFF { mapping?.releaseResidentPages() }
      let payload = UnsafeRawBufferPointer(rebasing: bytes[location.offset..<(location.offset + Int(location.length))])
      if !census.count(payload) { unreadable.append(location.offset) }
    }
    unreadable.sort()

    let skipped = outcome.report
    let recovery = try _recoveryOutcomes(
      bytes, header: header, path: path, skipping: outcome, replayEveryMode: replayEveryMode)

    return LogInspection(
      path: path, fileSize: size, formatVersion: Int(_LogFormat.version), generation: header.generation,
      frameCount: skipped.frameCount, recordCount: index.liveCount, committedEnd: index.end,
      liveBytes: index.liveBytes, indexes: index.indexDefinitions.filter { _TextIndex.keys(of: $0) == nil },
      keys: census.keys,
      tornTail: skipped.tornTail, damage: skipped.damage, unreadableRecords: unreadable, recovery: recovery)
  }

  /// What each recovery mode would do with the file, given what `.skipDamagedFrames` did.
  ///
  /// When that replay met nothing wrong (no damage, no torn tail, no dropped batch, and
  /// frames numbered 1, 2, 3, … without a gap, which only `.skipDamagedFrames` forgives),
  /// no mode has anything to decide: each keeps every record, cuts and rewrites nothing.
  /// Only then is the answer given without replaying the file once per mode.
  ///
  /// - Parameter replayEveryMode: Replays the file once per mode even when it is clean
  ///   (tests compare the two answers).
  static func _recoveryOutcomes(
    _ bytes: UnsafeRawBufferPointer, header: _LogFormat.Header, path: String,
    skipping outcome: _Recovery.Outcome<FieldValue>, replayEveryMode: Bool
  ) throws -> [LogInspection.RecoveryOutcome] {
    let modes: [LogRecoveryMode] = [.truncateTornTail, .failOnAnyDamage, .stopAtFirstDamage, .skipDamagedFrames]
    let report = outcome.report
    let clean =
      report.damage.isEmpty && report.tornTail == nil && report.droppedRecords == 0 && outcome.cutAt == nil
      && outcome.index.sequence == UInt64(report.frameCount)
    if clean && !replayEveryMode {
      return modes.map {
        .init(
          mode: $0, opens: true, recordCount: report.recordCount, cutAt: nil, rewrites: false, droppedRecords: 0,
          refusal: nil)
      }
    }
    var recovery: [LogInspection.RecoveryOutcome] = []
    for mode in modes {
      do {
        let o: _Recovery.Outcome<FieldValue> =
          mode == .skipDamagedFrames ? outcome : try _Recovery.replay(bytes, header: header, mode: mode, path: path)
        let rewrites = mode == .skipDamagedFrames && (!o.report.damage.isEmpty || o.report.droppedRecords > 0)
        recovery.append(
          .init(
            mode: mode, opens: true, recordCount: o.report.recordCount, cutAt: o.cutAt, rewrites: rewrites,
            droppedRecords: o.report.droppedRecords, refusal: nil))
      } catch let error as RequestSetError {
        recovery.append(
          .init(
            mode: mode, opens: false, recordCount: 0, cutAt: nil, rewrites: false, droppedRecords: 0,
            refusal: error.message))
      }
    }
    return recovery
  }
}

extension _LogFormat {
  /// Maps a log file's first `size` bytes and reads its header.
  ///
  /// - Throws: `.corruptLog` when the file is no RequestSet log; `.ioFailure` when it
  ///   cannot be mapped.
  static func mapHeader(_ file: _FileDescriptor, size: Int, path: String) throws
    -> (_Mapping?, UnsafeRawBufferPointer, Header)
  {
    let mapping = size > 0 ? try _Mapping(file, length: size) : nil
    let bytes = mapping.map { $0.bytes(0, size) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
    switch Header.parse(bytes) {
    case .success(let header): return (mapping, bytes, header)
    case .failure(let reason):
      throw RequestSetError(
        .corruptLog,
        "\(path) is not a readable RequestSet log: \(reason.reason). Check the path; LogStore never "
          + "overwrites a file it does not recognise.")
    }
  }
}

extension LogStore where Element == DynamicRecord {
  /// Opens any log, whatever record type wrote it, read-only: the store never changes the
  /// file, takes no write lock, writes no side file, and its writes throw `.readOnly`.
  ///
  /// This is the default for dynamic records because a program that does not know a log's
  /// type is usually looking into it, not maintaining it. To write through dynamic records
  /// (which keeps the log readable by its own type), pass options:
  /// `LogStore<DynamicRecord>(path: path, options: .init())`.
  ///
  /// ```swift
  /// let store = try LogStore<DynamicRecord>(path: "animals.rslog")
  /// try RequestSet(store).filter("age > 3").count
  /// ```
  /// - Parameter path: The log file; it must exist.
  /// - Throws: What ``init(path:options:)`` throws for a read-only store: `.ioFailure` when
  ///   the file is missing, `.corruptLog` for a file that is no log or is damaged beyond a
  ///   torn tail.
  public convenience init(path: String) throws {
    try self.init(path: path, options: .init(readOnly: true))
  }
}
