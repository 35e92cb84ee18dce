import Foundation

/// When a ``LogStore`` write counts as done.
///
/// ```swift
/// let store = try LogStore<Animal>(path: "animals.rslog", options: .init(durability: .fsync))
/// ```
public enum LogDurability: Sendable, Equatable {
  /// Each write is handed to the operating system (`write(2)`) before it returns: it
  /// survives the process being killed (`kill -9`, a crash), not a power loss or a
  /// kernel panic. The default.
  case flush
  /// Each write is also forced to stable storage (`fdatasync(2)`, `F_FULLFSYNC` on Apple
  /// platforms) before it returns, so it survives a power loss. Much slower per write;
  /// batch with `insert(contentsOf:)` to pay it once for many records.
  case fsync
}

/// What opening a ``LogStore`` does about a damaged log. Modelled on RocksDB's WAL
/// recovery modes, which the names in parentheses refer to.
///
/// Only two kinds of damage are possible without a disk or a bug corrupting the file: a
/// *torn tail* (the last write was cut short by a crash: an incomplete last frame, or a
/// batch without its commit frame) and nothing else. Damage anywhere else means the file
/// was corrupted after it was written, and the default is to refuse to open it.
///
/// ```swift
/// // Salvage a damaged log: keep every record whose frame is intact.
/// let store = try LogStore<Animal>(path: path, options: .init(recovery: .skipDamagedFrames))
/// print(store.recoveryReport)
/// ```
public enum LogRecoveryMode: Sendable, Equatable, CustomStringConvertible {
  /// Cut a torn tail off and report it; fail on damage anywhere else. The default
  /// (RocksDB's `kTolerateCorruptedTailRecords`).
  case truncateTornTail
  /// Fail on any damage, a torn tail included: for a log that must be exactly as it was
  /// last written (`kAbsoluteConsistency`).
  case failOnAnyDamage
  /// Keep the records before the first damaged frame, drop everything from there on and
  /// cut the file there (`kPointInTimeRecovery`).
  case stopAtFirstDamage
  /// Skip damaged frames and keep every intact record after them (a batch that lost a
  /// frame is dropped whole), then rewrite the log without the damage
  /// (`kSkipAnyCorruptedRecords`). Salvage: back the file up first.
  case skipDamagedFrames

  /// A readable summary, as logs and test failures print it.
  public var description: String {
    switch self {
    case .truncateTornTail: return "truncateTornTail"
    case .failOnAnyDamage: return "failOnAnyDamage"
    case .stopAtFirstDamage: return "stopAtFirstDamage"
    case .skipDamagedFrames: return "skipDamagedFrames"
    }
  }
}

/// How much of a ``LogStore``'s history compaction keeps readable by as-of reads
/// (``RequestSet/init(_:asOf:)-(_,UInt64)``).
///
/// The log is append-only, so every commit since the last compaction is in the file and
/// can be read as of its version. Compaction rewrites the file from one commit on: that
/// commit's records become the file's first commit, and the commits after it are copied
/// frame by frame, keeping their versions and times. Everything older is gone.
///
/// ```swift
/// let store = try LogStore<Animal>(path: "animals.rslog", options: .init(keepHistory: .versions(100)))
/// try store.compact()
/// try store.history().count   // at most 100
/// ```
public enum LogHistoryRetention: Sendable, Equatable, CustomStringConvertible {
  /// Keep only the current state: compaction leaves one commit, the newest. The default.
  case none
  /// Keep the newest `n` commits readable (`n` ≥ 1; `.versions(1)` is ``none``). A
  /// smaller `n` makes ``LogStore/init(path:options:)`` throw `.invalidOptions`.
  case versions(Int)
  /// Keep every commit made at or after this time readable, and the newest commit before
  /// it, so that a read as of this very time still resolves. Commits written without a
  /// time (by versions of RequestSet before commits were stamped) count as older.
  case since(Date)
  /// Keep every commit still in the file: compaction then drops only frames that define
  /// keys and indexes again, and the file grows with every write.
  case all

  /// A readable summary, as logs and test failures print it.
  public var description: String {
    switch self {
    case .none: return "none"
    case .versions(let n): return "versions(\(n))"
    case .since(let date): return "since(\(date))"
    case .all: return "all"
    }
  }
}

/// How a ``LogStore`` opens and maintains its file.
///
/// ```swift
/// var options = LogStoreOptions()
/// options.durability = .fsync
/// options.autoCompactDeadRatio = 0.3
/// let store = try LogStore<Animal>(path: "animals.rslog", options: options)
/// ```
public struct LogStoreOptions: Sendable, Equatable {
  /// When a write counts as done; ``LogDurability/flush`` by default.
  public var durability: LogDurability
  /// What opening does about damage; ``LogRecoveryMode/truncateTornTail`` by default.
  public var recovery: LogRecoveryMode
  /// Opens without the write lock and never changes the file: writes throw
  /// `.readOnly`. Any number of read-only stores may open a log while one writer appends;
  /// each sees the log as it was when it opened.
  public var readOnly: Bool
  /// Compacts by itself after a write once dead bytes (replaced and deleted records)
  /// exceed this fraction of the file; nil turns automatic compaction off. 0.5 by default.
  /// A value outside `0...1` (or NaN) makes ``LogStore/init(path:options:)`` throw
  /// `.invalidOptions`.
  public var autoCompactDeadRatio: Double?
  /// Files smaller than this are never compacted automatically. 1 MiB by default. A
  /// negative value makes ``LogStore/init(path:options:)`` throw `.invalidOptions`.
  public var autoCompactMinimumBytes: Int
  /// How many past commits compaction keeps readable by as-of reads; ``LogHistoryRetention/none``
  /// by default. With any other choice, automatic compaction counts only the dead space
  /// written since the store opened or last compacted, so the history it keeps does not make
  /// it run again on every write.
  public var keepHistory: LogHistoryRetention
  /// Logs smaller than this get no checkpoint (`<path>.checkpoint`, which lets the next
  /// open skip replaying the log): they replay in about a millisecond anyway. 1 MiB by
  /// default; 0 checkpoints every log. A negative value makes
  /// ``LogStore/init(path:options:)`` throw `.invalidOptions`.
  public var checkpointMinimumBytes: Int
  /// The app's schema migrations (see ``Migrator``); none by default. A writable store
  /// runs the ones the log has not run when it opens (unless ``migratesOnOpen`` is off);
  /// a read-only store with migrations pending fails to open with `.migrationPending`.
  ///
  /// ```swift
  /// var options = LogStoreOptions()
  /// options.migrations.register("v2: legs", .add("legs", default: .int(4)))
  /// let store = try LogStore<AnimalV2>(path: "animals.rslog", options: options)
  /// ```
  public var migrations: Migrator
  /// Whether a writable store runs pending ``migrations`` as it opens; true by default.
  /// Off, the store opens with them pending: reads see the records as stored, writes
  /// throw `.migrationPending` until ``LogStore/migrate()`` runs them.
  public var migratesOnOpen: Bool

  /// Options with the given values; every argument has the default described on its
  /// property.
  ///
  /// Values are checked when a store opens with them, not here, so options built step by
  /// step (setting properties) are checked the same way.
  public init(
    durability: LogDurability = .flush, recovery: LogRecoveryMode = .truncateTornTail, readOnly: Bool = false,
    autoCompactDeadRatio: Double? = 0.5, autoCompactMinimumBytes: Int = 1 << 20,
    keepHistory: LogHistoryRetention = .none, checkpointMinimumBytes: Int = 1 << 20,
    migrations: Migrator = Migrator(), migratesOnOpen: Bool = true
  ) {
    self.migrations = migrations
    self.migratesOnOpen = migratesOnOpen
    self.durability = durability
    self.recovery = recovery
    self.readOnly = readOnly
    self.autoCompactDeadRatio = autoCompactDeadRatio
    self.autoCompactMinimumBytes = autoCompactMinimumBytes
    self.keepHistory = keepHistory
    self.checkpointMinimumBytes = checkpointMinimumBytes
  }
}

extension LogStoreOptions {
  /// Throws `.invalidOptions` for a value no store can work with.
  func validate(path: String) throws {
    if let ratio = autoCompactDeadRatio, !(0...1).contains(ratio) {
      throw RequestSetError(
        .invalidOptions,
        "LogStoreOptions.autoCompactDeadRatio is \(ratio) for the log \(path); it must lie in 0...1 (the fraction of "
          + "the file that is dead space before the store compacts), or be nil to turn automatic compaction off.")
    }
    if autoCompactMinimumBytes < 0 {
      throw RequestSetError(
        .invalidOptions,
        "LogStoreOptions.autoCompactMinimumBytes is \(autoCompactMinimumBytes) for the log \(path); it must be 0 or "
          + "more (files smaller than this are never compacted automatically).")
    }
    if case .versions(let n) = keepHistory, n < 1 {
      throw RequestSetError(
        .invalidOptions,
        "LogStoreOptions.keepHistory is .versions(\(n)) for the log \(path); it must keep at least 1 version (the "
          + "current one). Use .none to keep only the current state, or .all to keep every commit.")
    }
    if checkpointMinimumBytes < 0 {
      throw RequestSetError(
        .invalidOptions,
        "LogStoreOptions.checkpointMinimumBytes is \(checkpointMinimumBytes) for the log \(path); it must be 0 or "
          + "more (logs smaller than this get no checkpoint).")
    }
  }
}

/// What opening a ``LogStore`` found and did: read it from ``LogStore/recoveryReport``.
///
/// ```swift
/// let store = try LogStore<Animal>(path: "animals.rslog")
/// if let tail = store.recoveryReport.tornTail {
///   print("cut \(tail.byteCount) bytes of an interrupted write at offset \(tail.offset)")
/// }
/// ```
public struct LogRecoveryReport: Sendable, Equatable, CustomStringConvertible {
  /// An interrupted last write that opening cut off (or, read-only, ignored).
  public struct TornTail: Sendable, Equatable {
    /// Where the incomplete write starts: the new end of the file.
    public var offset: Int
    /// How many bytes were cut.
    public var byteCount: Int
  }

  /// A damaged stretch of the file.
  public struct Damage: Sendable, Equatable {
    /// Where the damage starts.
    public var offset: Int
    /// How many bytes up to the next intact frame (or the end of the file).
    public var byteCount: Int
    /// What was wrong, as in "checksum mismatch".
    public var reason: String
  }

  /// A side file that holds bytes recovery cut off or left out.
  public struct Preserved: Sendable, Equatable {
    /// The side file: `<log>.damaged-<offset>` (with `.1`, `.2`, … when a file of that
    /// name holds other bytes already).
    public var path: String
    /// Where the kept bytes started in the log: the cut for a torn tail or
    /// ``LogRecoveryMode/stopAtFirstDamage``; 0 for ``LogRecoveryMode/skipDamagedFrames``,
    /// which keeps the whole file as it was before the rewrite.
    public var offset: Int
    /// How many bytes the side file holds.
    public var byteCount: Int
  }

  /// The mode the store was opened with.
  public var mode: LogRecoveryMode
  /// The size of the file before recovery.
  public var fileSize: Int
  /// The number of intact frames read.
  public var frameCount = 0
  /// The number of live records after opening.
  public var recordCount = 0
  /// The interrupted last write that was cut off, if any.
  public var tornTail: TornTail?
  /// Damage found away from the tail (only ``LogRecoveryMode/stopAtFirstDamage`` and
  /// ``LogRecoveryMode/skipDamagedFrames`` open such a log).
  public var damage: [Damage] = []
  /// ``LogRecoveryMode/stopAtFirstDamage``: everything from this offset on was dropped.
  public var discardedFrom: Int?
  /// Intact record frames that were not applied because their batch lost a frame.
  public var droppedRecords = 0
  /// Whether opening rewrote the file (``LogRecoveryMode/skipDamagedFrames`` after damage).
  public var rewritten = false
  /// Where the bytes that opening cut off or left out were kept, if it cut or rewrote
  /// anything: recovery never destroys bytes without keeping them first. Nil when nothing
  /// was cut, and for a read-only store (which changes nothing).
  public var preserved: Preserved?
  /// Whether opening read the log's checkpoint (`<path>.checkpoint`) instead of replaying
  /// every frame: only a checkpoint that describes exactly the file's bytes is read, so
  /// the store holds the same records either way.
  public var openedFromCheckpoint = false

  /// True when the file was intact: nothing cut, skipped or dropped.
  public var isClean: Bool { tornTail == nil && damage.isEmpty && discardedFrom == nil && droppedRecords == 0 }

  /// A readable summary, as logs and test failures print it.
  public var description: String {
    var parts = ["\(recordCount) records from \(frameCount) frames (\(fileSize) bytes, mode \(mode))"]
    if let t = tornTail { parts.append("torn tail of \(t.byteCount) bytes cut at offset \(t.offset)") }
    for d in damage { parts.append("damage at offset \(d.offset) (\(d.byteCount) bytes): \(d.reason)") }
    if let d = discardedFrom { parts.append("everything from offset \(d) dropped") }
    if droppedRecords > 0 { parts.append("\(droppedRecords) records of incomplete batches dropped") }
    if rewritten { parts.append("file rewritten") }
    if let p = preserved { parts.append("\(p.byteCount) bytes from offset \(p.offset) kept in \(p.path)") }
    if openedFromCheckpoint { parts.append("read from its checkpoint") }
    return parts.joined(separator: "; ")
  }
}
