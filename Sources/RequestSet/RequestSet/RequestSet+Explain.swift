extension RequestSet {
  /// A readable, stable description of how the set will be evaluated; runs nothing.
  ///
  /// ```swift
  /// print(animals.filter(\.age > 3).sortBy("name").limit(3).explain())
  /// // RequestSet<Animal> over MemoryStore<Animal>
  /// // stage 1: scan all records
  /// //   filter: \Animal.age > 3
  /// //   sort: name ASC (top-k heap, k = 3)
  /// //   window: limit 3
  /// ```
  public func explain() -> String {
    var lines = ["RequestSet<\(Element.self)> over \(_source.name)"]
    for (i, stage) in _query.stages.enumerated() {
      lines.append("stage \(i + 1): " + (i == 0 ? "scan all records" : "the records of stage \(i)"))
      if let filter = stage.filter { lines.append("  filter: \(filter.description)") }
      if !stage.sort.isEmpty {
        let keys = stage.sort.map(\.description).joined(separator: ", ")
        let strategy =
          stage.distinct == nil ? stage.window.limit.map { "top-k heap, k = \(stage.window.offset + $0)" } ?? "stable sort" : "stable sort"
        lines.append("  sort: \(keys) (\(strategy))")
      }
      if stage.reversed {
        lines.append("  reverse: " + (stage.sort.isEmpty ? "the order before" : "the sort above"))
      }
      if let distinct = stage.distinct {
        lines.append("  distinct: first record for each \(distinct.description)")
      }
      if stage.window.isSet {
        var parts: [String] = []
        if stage.window.offset > 0 { parts.append("offset \(stage.window.offset)") }
        if let limit = stage.window.limit { parts.append("limit \(limit)") }
        lines.append("  window: " + parts.joined(separator: ", "))
      }
    }
    return lines.joined(separator: "\n")
  }
}
