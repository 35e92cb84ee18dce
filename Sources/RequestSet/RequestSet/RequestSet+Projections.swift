extension RequestSet {
  /// The value of a key path for each record of the set, in order.
  ///
  /// ```swift
  /// let names: [String] = try animals.sortBy(\.name).values(\.name)
  /// ```
  public func values<Value>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> [Value] {
    var out: [Value] = []
    try _forEachRecord { out.append($0.pointee[keyPath: keyPath]) }
    return out
  }
}

extension RequestSet where Element: Encodable {
  /// One row per record, keyed by field name: the DAO layer's dictionaries, read from
  /// the store's fields without decoding records.
  ///
  /// ```swift
  /// try animals.sortBy("id").values("name", "owner.city")
  /// // [["name": "Micky", "owner.city": "Burbank"], ["name": "Daisy", "owner.city": "Oslo"], …]
  /// ```
  /// With no keys, every top-level key is included.
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key the records do not have.
  public func values(_ keys: String...) throws -> [[String: FieldValue]] {
    try values(keys)
  }

  /// One row per record, keyed by field name; see ``values(_:)-(String...)``.
  ///
  /// ```swift
  /// try animals.values(["name", "age"])
  /// ```
  public func values(_ keys: [String]) throws -> [[String: FieldValue]] {
    // In a graph's set a key may walk a relation (`owner.city`, `visits.@count`): each
    // such key is one query on the related store.
    if let graph = _query.graph, !keys.isEmpty {
      let resolver = _RelationResolver<Element>(graph: graph, relations: graph.relations(of: Element.self))
      if keys.contains(where: { resolver.split($0) != nil }) {
        let columns = try keys.map { try _column($0) }
        return (0..<(columns.first?.count ?? 0)).map { i in
          var row: [String: FieldValue] = [:]
          for (k, key) in keys.enumerated() { row[key] = columns[k][i] }
          return row
        }
      }
    }
    let e = try _cache.evaluation(_source, _query)
    let fields = try e.snapshot._fields()
    let names = keys.isEmpty ? fields.knownKeys.filter { !$0.contains(".") } : keys
    var readers: [(String, ((Int) throws -> FieldValue)?)] = []
    for key in names {
      try _FilterCompiler<Element>.validate(key, value: nil, in: fields)
      readers.append((key, fields.reader(for: key)))
    }
    return try e.slots.map { slot in
      try _CancelToken.throwIfCancelled()
      var row: [String: FieldValue] = [:]
      for (key, read) in readers { row[key] = try read?(slot) ?? .null }
      return row
    }
  }
}

extension RequestSet where Element: Record {
  /// The ids of the records of the set, in order.
  ///
  /// ```swift
  /// let ids = try animals.filter("species", value: "Cow").ids()   // [2, 4]
  /// ```
  /// In-memory records are read in place; other stores read the id from each record's
  /// fields without decoding the record.
  public func ids() throws -> [Element.ID] {
    let e = try _cache.evaluation(_source, _query)
    if case .contiguous(let records, _) = e.snapshot._storage {
      return e.slots.map { records[$0].id }
    }
    let fields = try e.snapshot._fields()
    guard let read = fields.reader(for: "id") else { return try values(\.id) }
    return try e.slots.map { slot in
      try _CancelToken.throwIfCancelled()
      return try _FieldDecoder.decode(Element.ID.self, from: try read(slot))
    }
  }
}
