import Foundation
import Testing

@testable import RequestSet

/// A log written by a known sequence of writes, with what the store must hold after each.
struct ScriptedLog {
  enum Write {
    case insert(Beast)
    case batch([Beast])
    case save(Beast)
    case delete(Int)
  }

  let bytes: [UInt8]
  let writes: [Write]
  /// File size after each write; `ends[0]` is the bare header.
  let ends: [Int]
  /// Contents (store order) after each write; `states[0]` is empty.
  let states: [[Beast]]
  /// Every frame's start offset, and the file size as the last element.
  let frameStarts: [Int]

  /// Writes `count` random writes to a log in `dir`.
  /// Whether the script holds an insert, a batch, a save and a delete, so that cutting or
  /// damaging it reaches every kind of frame a write makes.
  var hasEveryKindOfWrite: Bool {
    var kinds = Set<String>()
    for write in writes {
      switch write {
      case .insert: kinds.insert("insert")
      case .batch: kinds.insert("batch")
      case .save: kinds.insert("save")
      case .delete: kinds.insert("delete")
      }
    }
    return kinds.count == 4
  }

  static func make(in dir: LogTempDir, count: Int, seed: UInt64) throws -> ScriptedLog {
    var rng = SeededRandom(seed: seed)
    let path = dir.file("script.rslog")
    let store = try LogStore<Beast>(path: path, options: .init(autoCompactDeadRatio: nil))
    let model = MemoryStore<Beast>()
    var writes: [Write] = []
    var ends = [store.fileSize]
    var states: [[Beast]] = [[]]
    var nextID = 1
    let species = ["Mouse", "Dog", "Cow"]
    func beast(_ id: Int) -> Beast {
      Beast(
        id: id, name: "n\(rng.next() % 100)", species: species[Int(rng.next() % 3)], age: Int(rng.next() % 20),
        owner: rng.next() % 2 == 0 ? .init(city: "c\(rng.next() % 5)") : nil)
    }
    for _ in 0..<count {
      let stored = try RequestSet(model).fetch().map(\.id)
      let write: Write
      switch rng.next() % 6 {
      case 0, 1:
        write = .insert(beast(nextID))
        nextID += 1
      case 2:
        let k = 1 + Int(rng.next() % 4)
        write = .batch((0..<k).map { beast(nextID + $0) })
        nextID += k
      case 3 where !stored.isEmpty:
        write = .save(beast(stored[Int(rng.next() % UInt64(stored.count))]))
      case 4 where !stored.isEmpty:
        write = .delete(stored[Int(rng.next() % UInt64(stored.count))])
      default:
        write = .insert(beast(nextID))
        nextID += 1
      }
      try apply(write, to: store)
      try apply(write, to: model)
      writes.append(write)
      ends.append(store.fileSize)
      states.append(try RequestSet(model).fetch())
    }
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    var frameStarts: [Int] = []
    let salt = bytes.withUnsafeBytes { raw -> UInt32 in
      guard case .success(let h) = _LogFormat.Header.parse(raw) else { return 0 }
      return _LogFormat.saltState(h.salt)
    }
    var at = _LogFormat.headerSize
    while at < bytes.count {
      frameStarts.append(at)
      let parsed = bytes.withUnsafeBytes { _LogFormat.parseFrame($0, at: at, saltState: salt) }
      guard case .frame(let f) = parsed else { break }
      at = f.end
    }
    frameStarts.append(bytes.count)
    return ScriptedLog(bytes: bytes, writes: writes, ends: ends, states: states, frameStarts: frameStarts)
  }

  static func apply(_ write: Write, to store: any RecordStore<Beast>) throws {
    switch write {
    case .insert(let b): try store.insert(b)
    case .batch(let bs): try store.insert(contentsOf: bs)
    case .save(let b): try store.save(b)
    case .delete(let id): try store.delete(id: id)
    }
  }

  /// The contents after every write but `skipped`.
  func state(skipping skipped: Int) throws -> [Beast] {
    let model = MemoryStore<Beast>()
    for (i, w) in writes.enumerated() where i != skipped { try Self.apply(w, to: model) }
    return try RequestSet(model).fetch()
  }

  /// The index of the write that wrote the byte at `offset` (≥ the header).
  func write(containing offset: Int) -> Int {
    ends.firstIndex { $0 > offset }! - 1
  }

  /// The start of the frame holding the byte at `offset`.
  func frameStart(containing offset: Int) -> Int {
    frameStarts.last { $0 <= offset }!
  }

  /// The number of writes that end at or before `offset`.
  func completeWrites(upTo offset: Int) -> Int {
    ends.lastIndex { $0 <= offset }!
  }
}

/// Opens the log at `path` and reads everything in it.
func readLog(_ path: String, _ options: LogStoreOptions = .init()) throws -> ([Beast], LogRecoveryReport) {
  let store = try LogStore<Beast>(path: path, options: options)
  return (try RequestSet(store).fetch(), store.recoveryReport)
}

func writeFile(_ bytes: some Collection<UInt8>, to path: String) throws {
  try Data(bytes).write(to: URL(fileURLWithPath: path))
}
