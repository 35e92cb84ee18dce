import Foundation
import RequestSet

/// The order of a log's keys as the tool's inputs first gave them, kept beside the log in
/// `FILE.keys`, so `query`, `dump` and `follow` show columns in the order of the data
/// (`requestset import` writes it; a log has no key order of its own, since a record's
/// fields are stored by name).
///
/// The file is a JSON object: `{"logSize":N,"keys":["id","name","owner.city",…]}`. Keys are
/// dotted paths (a nested key follows its object). `logSize` is the log's size when the
/// list was written: while the log still has that size, the list holds every key the log
/// holds, so `dump --format csv` can write its header without a first pass over the
/// records. Keys the list lacks (a program wrote them) come after the listed ones, sorted.
struct KeyOrder {
  /// Dotted keys, in order.
  var keys: [String]
  /// The log's size when ``keys`` was known to hold every key, or nil.
  var logSize: Int?
  private var rank: [String: Int]

  init(keys: [String] = [], logSize: Int? = nil) {
    self.keys = keys
    self.logSize = logSize
    // A nested key ranks its objects too (a CSV header lists `owner.city`, not `owner`).
    var rank: [String: Int] = [:]
    for (i, key) in keys.enumerated() {
      let names = FieldValue.fieldNames(inKey: key)
      for n in 1...max(1, names.count)
      where rank[FieldValue.key(forFieldNames: Array(names.prefix(n)))] == nil {
        rank[FieldValue.key(forFieldNames: Array(names.prefix(n)))] = i
      }
    }
    self.rank = rank
  }

  /// The top-level field names the order lists, in order.
  var topLevelKeys: [String] {
    var seen = Set<String>()
    return keys.compactMap { FieldValue.fieldNames(inKey: $0).first }.filter { seen.insert($0).inserted }
  }

  /// The side file's path for a log.
  static func path(for log: String) -> String { log + ".keys" }

  /// The order kept beside `log`, or an empty order when there is none (or it is unreadable).
  static func load(for log: String) -> KeyOrder {
    guard let data = FileManager.default.contents(atPath: path(for: log)) else { return KeyOrder() }
    var parser = JSONReader()
    guard case .object(let fields)? = data.withUnsafeBytes({ try? parser.parse($0) }),
      case .array(let items)? = fields["keys"]
    else { return KeyOrder() }
    let keys = items.compactMap { item -> String? in
      if case .string(let s) = item { return s }
      return nil
    }
    var size: Int? = nil
    if case .int(let n)? = fields["logSize"] { size = n }
    return KeyOrder(keys: keys, logSize: size)
  }

  /// Writes the order beside `log` (through a temporary file and a rename).
  func save(for log: String) throws {
    var out: [UInt8] = []
    var fields: [String: FieldValue] = ["keys": .array(keys.map { .string($0) })]
    if let logSize { fields["logSize"] = .int(logSize) }
    JSONText.append(.object(fields), to: &out)
    out.append(0x0A)
    let target = KeyOrder.path(for: log)
    do {
      try Data(out).write(to: URL(fileURLWithPath: target), options: .atomic)
    } catch {
      throw ToolError("Cannot write \(target) (the key order beside the log): \(error.localizedDescription).")
    }
  }

  /// Whether ``keys`` lists every key of a log of this size.
  func isComplete(forLogSize size: Int) -> Bool { logSize == size }

  /// `names` (the field names of an object at the dotted `prefix`, or top-level names when
  /// nil) in this order: listed names first as listed, then the others sorted.
  func ordered(_ names: some Sequence<String>, under prefix: String? = nil) -> [String] {
    names.map { name -> (Int, String) in
      let key =
        prefix.map { $0 + "." + FieldValue.key(forFieldNames: [name]) }
        ?? FieldValue.key(forFieldNames: [name])
      return (rank[key] ?? Int.max, name)
    }
    .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
    .map(\.1)
  }

  /// Dotted keys (as `info` lists them) in this order: each object's keys as listed, the
  /// others after them sorted, and an object's own key just before its nested ones
  /// (`owner`, `owner.name`, `owner.city`, then the next top-level key).
  func orderedDotted(_ dotted: [String]) -> [String] {
    let paths = dotted.map { (key: $0, names: FieldValue.fieldNames(inKey: $0)) }
    return paths.sorted { a, b in
      for depth in 0..<min(a.names.count, b.names.count) where a.names[depth] != b.names[depth] {
        let prefix = Array(a.names.prefix(depth))
        let ra = rank[FieldValue.key(forFieldNames: prefix + [a.names[depth]])] ?? Int.max
        let rb = rank[FieldValue.key(forFieldNames: prefix + [b.names[depth]])] ?? Int.max
        return ra != rb ? ra < rb : a.names[depth] < b.names[depth]
      }
      return a.names.count < b.names.count
    }.map(\.key)
  }

  /// Whether `a` comes before `b` among top-level names.
  func precedes(_ a: String, _ b: String) -> Bool {
    let ra = rank[FieldValue.key(forFieldNames: [a])] ?? Int.max
    let rb = rank[FieldValue.key(forFieldNames: [b])] ?? Int.max
    return ra != rb ? ra < rb : a < b
  }

  /// This order with `more` keys appended (those not listed yet).
  func merged(with more: [String]) -> KeyOrder {
    var builder = KeyOrderBuilder()
    builder.add(keys)
    builder.add(more)
    return KeyOrder(keys: builder.keys, logSize: logSize)
  }
}

extension KeyOrder {
  /// Keeps `FILE.keys` true after a write: `newKeys` are appended, and a list that held
  /// every key before the write still does after it (at the log's new size).
  static func noteWrite(to log: String, sizeBefore: Int, sizeAfter: Int, newKeys: [String]) throws {
    let order = KeyOrder.load(for: log)
    guard !order.keys.isEmpty || order.logSize != nil else { return }
    var updated = order.merged(with: newKeys)
    updated.logSize = order.isComplete(forLogSize: sizeBefore) ? sizeAfter : nil
    try updated.save(for: log)
  }
}

extension KeyOrder {
  /// Keeps `FILE.keys` true after `migrate`: renamed and moved keys (and the keys nested
  /// in them) take their new names in place, removed keys leave, added keys come last. The
  /// list is no longer known to hold every key (an added object brings keys it does not
  /// name), so the next `dump` reads the records for its header.
  static func noteMigration(of log: String, by steps: [PlanStep]) throws {
    let order = KeyOrder.load(for: log)
    guard !order.keys.isEmpty || order.logSize != nil else { return }
    func under(_ key: String, _ prefix: String) -> Bool { key == prefix || key.hasPrefix(prefix + ".") }
    var keys = order.keys
    for step in steps {
      switch step {
      case .rename(let from, let to), .move(let from, let to):
        keys = keys.map { under($0, from) ? to + $0.dropFirst(from.count) : $0 }
      case .remove(let key):
        keys.removeAll { under($0, key) }
      case .add(let key, _):
        if !keys.contains(where: { under($0, key) }) { keys.append(key) }
      case .convert:
        break
      }
    }
    var builder = KeyOrderBuilder()
    builder.add(keys)
    try KeyOrder(keys: builder.keys, logSize: nil).save(for: log)
  }
}
