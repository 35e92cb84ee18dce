/// The encoded fields of a store's records, one column per dotted key, aligned with the
/// store's slots.
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

  init(probedKinds: [String: _KindSet]) {
    kinds = probedKinds
  }

  /// Every key a string filter may name, sorted.
  var knownKeys: [String] { kinds.keys.sorted() }

  func column(_ key: String) -> ContiguousArray<FieldValue>? {
    columnIndex[key].map { columns[$0] }
  }

  /// Appends a row for a newly written record.
  mutating func append(_ record: FieldValue) {
    let row = rowCount
    rowCount += 1
    _write(record, prefix: nil, row: row, appending: true)
    for c in columns.indices where lastWritten[c] != row {
      columns[c].append(.null)
    }
  }

  /// Replaces the fields of an existing row.
  mutating func replace(row: Int, with record: FieldValue) {
    _write(record, prefix: nil, row: row, appending: false)
    for c in columns.indices where lastWritten[c] != row {
      columns[c][row] = .null
      lastWritten[c] = row
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
      let key = prefix.map { $0 + "." + name } ?? name
      let c = _columnFor(key, appending: appending)
      if appending { columns[c].append(fieldValue) } else { columns[c][row] = fieldValue }
      lastWritten[c] = row
      kinds[key, default: _KindSet()].insert(fieldValue._kind)
      if case .object = fieldValue { _write(fieldValue, prefix: key, row: row, appending: appending) }
    }
  }

  private mutating func _columnFor(_ key: String, appending: Bool) -> Int {
    if let c = columnIndex[key] { return c }
    let c = columns.count
    // An appended row is not in the column yet (the caller appends it); a replaced one is.
    columns.append(ContiguousArray(repeating: .null, count: appending ? rowCount - 1 : rowCount))
    lastWritten.append(-1)
    columnIndex[key] = c
    return c
  }
}
