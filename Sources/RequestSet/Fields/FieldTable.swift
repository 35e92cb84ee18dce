/// The encoded fields of a store's records, one column per dotted key, aligned with the
/// store's slots: for the fields a record type's field model reads through `Codable`
/// (see `_FieldModel`), and the kinds of value seen under every key.
///
/// A record's fields are flattened on write: `owner` holds the whole nested value and
/// `owner.city` the leaf, so both `filter("owner", value: nil)` and
/// `filter("owner.city", value: "Oslo")` read one column entry per record. A key first seen
/// in a later record gets a column back-filled with `.null`.
struct _FieldTable: Sendable {
  private(set) var columns: [ContiguousArray<FieldValue>] = []
  private(set) var columnIndex: [String: Int] = [:]
  /// Kinds seen per key, merged with what the type probe says.
  private(set) var kinds: [String: _KindSet]
  private(set) var rowCount = 0
  /// Per column, the last row written: tells which columns a row left out. Kept here so
  /// writing a row allocates nothing.
  private var lastWritten: [Int] = []
  /// Per column, the kinds written so far: `kinds` is touched only when one is new.
  private var columnKinds: [_KindSet] = []
  /// The top-level keys of the last row written, in order, and their columns: records of
  /// one type write their keys in the same order, so a row finds its columns by comparing
  /// keys with the last row's instead of hashing them.
  private var lastKeys: [String] = []
  private var lastColumns: [Int] = []

  init(probedKinds: [String: _KindSet]) {
    kinds = probedKinds
  }

  /// Adds what decoding a record revealed (see `_SchemaProbe.learn`): keys no record
  /// encodes, such as optionals that are nil in every record so far.
  mutating func addProbed(_ probed: [String: _KindSet]) {
    for (key, set) in probed { kinds[key, default: _KindSet()].formUnion(set) }
  }

  /// Notes that a record holds a value of `kind` under `key` (a field read straight from
  /// the record, which has no column here).
  mutating func noteKind(_ key: String, _ kind: _FieldKind) {
    kinds[key, default: _KindSet()].insert(kind)
  }

  /// Appends `n` rows that hold no encoded field (records whose fields are all read
  /// straight from the record).
  mutating func appendEmptyRows(_ n: Int) {
    rowCount += n
    for c in columns.indices { columns[c].append(contentsOf: repeatElement(.null, count: n)) }
  }

  /// Every key a string filter may name, sorted.
  var knownKeys: [String] { kinds.keys.sorted() }

  func column(_ key: String) -> ContiguousArray<FieldValue>? {
    columnIndex[key].map { columns[$0] }
  }

  /// One row's value of a key (`.null` when the key has no column).
  @inline(__always)
  func value(_ key: String, row: Int) -> FieldValue {
    guard let c = columnIndex[key] else { return .null }
    return columns[c][row]
  }

  /// Appends a row for a newly written record.
  mutating func append(_ record: FieldValue) {
    append(_EncodedRow(record))
  }

  /// Appends a row for a newly written record, from its fields in written order.
  mutating func append(_ record: _EncodedRow) {
    let row = rowCount
    rowCount += 1
    _writeRow(record, row: row, appending: true)
    for c in columns.indices where lastWritten[c] != row {
      columns[c].append(.null)
    }
  }

  /// Replaces the fields of an existing row.
  mutating func replace(row: Int, with record: FieldValue) {
    replace(row: row, with: _EncodedRow(record))
  }

  /// Replaces the fields of an existing row, from its fields in written order.
  mutating func replace(row: Int, with record: _EncodedRow) {
    _writeRow(record, row: row, appending: false)
    for c in columns.indices where lastWritten[c] != row {
      columns[c][row] = .null
      lastWritten[c] = row
    }
  }

  /// Writes a row's top-level fields, finding columns through the last row's key order.
  private mutating func _writeRow(_ record: _EncodedRow, row: Int, appending: Bool) {
    for (i, (name, value)) in record.fields.enumerated() {
      let c: Int
      if i < lastKeys.count && lastKeys[i] == name {
        c = lastColumns[i]
      } else {
        c = _columnFor(_DottedKey.escape(name), appending: appending)
        if i < lastKeys.count {
          lastKeys[i] = name
          lastColumns[i] = c
        } else {
          lastKeys.append(name)
          lastColumns.append(c)
        }
      }
      _set(c, key: name, escaping: true, value, row: row, appending: appending)
      if case .object = value { _write(value, prefix: _DottedKey.escape(name), row: row, appending: appending) }
    }
  }

  @inline(__always)
  private mutating func _set(
    _ c: Int, key: String, escaping: Bool = false, _ value: FieldValue, row: Int, appending: Bool
  ) {
    if appending { columns[c].append(value) } else { columns[c][row] = value }
    lastWritten[c] = row
    let kind = value._kind
    if !columnKinds[c].contains(kind) {
      columnKinds[c].insert(kind)
      kinds[escaping ? _DottedKey.escape(key) : key, default: _KindSet()].insert(kind)
    }
  }

  /// Keeps only the given rows, in the given order (store compaction).
  mutating func retain(rows: [Int]) {
    for c in columns.indices {
      let old = columns[c]
      var new = ContiguousArray<FieldValue>()
      new.reserveCapacity(rows.count)
      for r in rows { new.append(old[r]) }
      columns[c] = new
      lastWritten[c] = -1
    }
    rowCount = rows.count
  }

  private mutating func _write(_ value: FieldValue, prefix: String?, row: Int, appending: Bool) {
    guard case .object(let fields) = value else { return }
    for (name, fieldValue) in fields {
      let key = _DottedKey.join(prefix, name)
      let c = _columnFor(key, appending: appending)
      _set(c, key: key, fieldValue, row: row, appending: appending)
      if case .object = fieldValue { _write(fieldValue, prefix: key, row: row, appending: appending) }
    }
  }

  private mutating func _columnFor(_ key: String, appending: Bool) -> Int {
    if let c = columnIndex[key] { return c }
    let c = columns.count
    // An appended row is not in the column yet (the caller appends it); a replaced one is.
    columns.append(ContiguousArray(repeating: .null, count: appending ? rowCount - 1 : rowCount))
    lastWritten.append(-1)
    columnKinds.append(_KindSet())
    columnIndex[key] = c
    return c
  }
}

/// A record's top-level fields in the order its `encode(to:)` wrote them.
struct _EncodedRow: Sendable {
  var fields: [(String, FieldValue)]

  init(fields: [(String, FieldValue)]) { self.fields = fields }

  /// The fields of an encoded record (`.object`); none for any other value.
  init(_ record: FieldValue) {
    if case .object(let object) = record { fields = object.map { ($0.key, $0.value) } } else { fields = [] }
  }

  /// The value at a dotted key, as the field table would hold it (`.null` when absent).
  func value(at key: String) -> FieldValue {
    var parts = _DottedKey.split(key)[...]
    guard let first = parts.popFirst(), var value = fields.first(where: { $0.0 == first })?.1 else { return .null }
    for part in parts {
      guard case .object(let object) = value, let next = object[part] else { return .null }
      value = next
    }
    return value
  }
}
