/// The differences between two sectioned states, as a batch update takes them (see
/// ``SectionedSnapshot``).
struct _SectionDiff {
  var deletedSections: [Int] = []
  var insertedSections: [Int] = []
  var movedSections: [(from: Int, to: Int)] = []
  var deletedRows: [SectionedRow] = []
  var insertedRows: [SectionedRow] = []
  var movedRows: [(from: SectionedRow, to: SectionedRow)] = []
  var updatedRows: [SectionedRow] = []

  var isEmpty: Bool {
    deletedSections.isEmpty && insertedSections.isEmpty && movedSections.isEmpty && deletedRows.isEmpty
      && insertedRows.isEmpty && movedRows.isEmpty && updatedRows.isEmpty
  }

  /// Groups records into sections by their keys, in order of each key's first record.
  ///
  /// Keys match as `groupBy`'s do (``_AnyGroupingKey``): every NaN is one section, `1`
  /// and `1.0` are one section. A section's key is the first record's.
  static func sections<Element: Record, Key: Hashable & Sendable>(_ records: [Element], keys: [Key])
    -> [RequestSetSection<Element, Key>]
  {
    var sectionKeys: [Key] = []
    var sectionRecords: [[Element]] = []
    var position: [_AnyGroupingKey<Key>: Int] = [:]
    for (record, key) in zip(records, keys) {
      if let i = position[_AnyGroupingKey(key)] {
        sectionRecords[i].append(record)
      } else {
        position[_AnyGroupingKey(key)] = sectionKeys.count
        sectionKeys.append(key)
        sectionRecords.append([record])
      }
    }
    return zip(sectionKeys, sectionRecords).map { RequestSetSection(key: $0, records: $1) }
  }

  init() {}

  /// The changes from `old` to `new`; `updated` holds the ids of records that changed.
  init<Element: Record, Key: Hashable & Sendable>(
    from old: [RequestSetSection<Element, Key>], to new: [RequestSetSection<Element, Key>], updated: Set<Element.ID>
  ) {
    var oldSection: [_AnyGroupingKey<Key>: Int] = [:]
    for (i, s) in old.enumerated() { oldSection[_AnyGroupingKey(s.key)] = i }
    var newSection: [_AnyGroupingKey<Key>: Int] = [:]
    for (i, s) in new.enumerated() { newSection[_AnyGroupingKey(s.key)] = i }

    deletedSections = old.indices.filter { newSection[_AnyGroupingKey(old[$0].key)] == nil }
    insertedSections = new.indices.filter { oldSection[_AnyGroupingKey(new[$0].key)] == nil }
    // Sections in both: those off the longest run kept in order have moved.
    let kept = new.indices.compactMap { n in oldSection[_AnyGroupingKey(new[n].key)].map { (from: $0, to: n) } }
    let steady = Self._longestIncreasing(kept.map(\.from))
    movedSections = kept.enumerated().filter { !steady.contains($0.offset) }.map(\.element)

    // Where each record sits, among the sections both states hold.
    var oldPlace: [Element.ID: SectionedRow] = [:]
    for (i, s) in old.enumerated() where newSection[_AnyGroupingKey(s.key)] != nil {
      for (r, record) in s.records.enumerated() { oldPlace[record.id] = SectionedRow(section: i, row: r) }
    }
    var newPlace: [Element.ID: SectionedRow] = [:]
    for (i, s) in new.enumerated() where oldSection[_AnyGroupingKey(s.key)] != nil {
      for (r, record) in s.records.enumerated() { newPlace[record.id] = SectionedRow(section: i, row: r) }
    }
    for (i, s) in old.enumerated() where newSection[_AnyGroupingKey(s.key)] != nil {
      for (r, record) in s.records.enumerated() where newPlace[record.id] == nil {
        deletedRows.append(SectionedRow(section: i, row: r))
      }
    }
    for (n, s) in new.enumerated() {
      guard let o = oldSection[_AnyGroupingKey(s.key)] else { continue }
      // Rows that stay in this section: those off the longest run kept in order move;
      // rows from another section move too.
      var staying: [(row: Int, from: Int)] = []
      for (r, record) in s.records.enumerated() {
        let to = SectionedRow(section: n, row: r)
        guard let from = oldPlace[record.id] else {
          insertedRows.append(to)
          continue
        }
        if from.section == o {
          staying.append((r, from.row))
        } else {
          movedRows.append((from, to))
        }
      }
      let steadyRows = Self._longestIncreasing(staying.map(\.from))
      for (k, row) in staying.enumerated() where !steadyRows.contains(k) {
        movedRows.append((SectionedRow(section: o, row: row.from), SectionedRow(section: n, row: row.row)))
      }
    }
    movedRows.sort { $0.to < $1.to }
    for (n, s) in new.enumerated() where oldSection[_AnyGroupingKey(s.key)] != nil {
      for (r, record) in s.records.enumerated() where updated.contains(record.id) && oldPlace[record.id] != nil {
        updatedRows.append(SectionedRow(section: n, row: r))
      }
    }
  }

  /// The positions in `values` of one longest strictly increasing subsequence.
  static func _longestIncreasing(_ values: [Int]) -> Set<Int> {
    guard !values.isEmpty else { return [] }
    var tails: [Int] = []  // positions: tails[k] ends an increasing run of length k + 1
    var previous = [Int](repeating: -1, count: values.count)
    for (i, v) in values.enumerated() {
      var low = 0
      var high = tails.count
      while low < high {
        let mid = (low + high) / 2
        if values[tails[mid]] < v { low = mid + 1 } else { high = mid }
      }
      if low > 0 { previous[i] = tails[low - 1] }
      if low == tails.count { tails.append(i) } else { tails[low] = i }
    }
    var result = Set<Int>()
    var k = tails.last!
    while k >= 0 {
      result.insert(k)
      k = previous[k]
    }
    return result
  }
}
