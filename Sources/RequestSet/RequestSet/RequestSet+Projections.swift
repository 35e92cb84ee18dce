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
  /// One row per record, keyed by field name in the order of `keys`: the DAO layer's
  /// dictionaries, read from the store's fields without decoding records.
  ///
  /// ```swift
  /// let rows = try animals.sortBy("id").values("name", "owner.city")
  /// // [["name": "Micky", "owner.city": "Burbank"], ["name": "Daisy", "owner.city": "Oslo"], …]
  /// rows[0]["owner.city"]   // Optional(.string("Burbank"))
  /// ```
  /// Each ``RequestRow`` keeps the keys in the order asked, on every store, and reads like
  /// a `[String: FieldValue]` (``RequestRow/dictionary`` is one). A key asked for twice
  /// appears once, in its first place. With no keys, every top-level key is included, in
  /// alphabetical order.
  /// - Parameter keys: Field names, dotted for nested fields (`owner.city`); in a
  ///   ``RecordGraph``'s set, also keys through relations (`visits.@count`).
  /// - Returns: One row per record of the set, in the set's order.
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key the records do not have.
  public func values(_ keys: String...) throws -> [RequestRow] {
    try values(keys)
  }

  /// One row per record, keyed by field name in the order of `keys`; see
  /// ``values(_:)-(String...)``.
  ///
  /// ```swift
  /// try animals.sortBy("id").values(["name", "age"])   // [["name": "Micky", "age": 3], …]
  /// ```
  /// - Parameter keys: Field names, dotted for nested fields.
  /// - Returns: One row per record of the set, in the set's order.
  /// - Throws: ``RequestSetError`` `.unknownKey` for a key the records do not have.
  public func values(_ keys: [String]) throws -> [RequestRow] {
    // In a graph's set a key may walk a relation (`owner.city`, `visits.@count`): each
    // such key is one query on the related store.
    if let graph = _query.graph, !keys.isEmpty {
      let resolver = _RelationResolver<Element>(graph: graph, relations: graph.relations(of: Element.self))
      if keys.contains(where: { resolver.split($0) != nil }) {
        let columns = try keys.map { try _column($0) }
        return _RowLayout.rows(keys, (0..<(columns.first?.count ?? 0)).map { i in columns.map { $0[i] } })
      }
    }
    let e = try _cache.evaluation(_source, _query)
    let fields = try e.snapshot._fields()
    let names = keys.isEmpty ? fields.knownKeys.filter { !$0.contains(".") } : keys
    // One layout for every row; a repeated key is read once, into its first place.
    let (layout, slots) = _RowLayout.slots(for: names)
    var readers = [((Int) throws -> FieldValue)?](repeating: nil, count: layout.keys.count)
    for (key, slot) in zip(names, slots) {
      try _FilterCompiler<Element>.validate(key, value: nil, in: fields)
      readers[slot] = try fields.readerWithDateParts(for: key)
    }
    return try e.slots.map { slot in
      try _CancelToken.throwIfCancelled()
      var values: [FieldValue] = []
      values.reserveCapacity(readers.count)
      for read in readers { values.append(try read?(slot) ?? .null) }
      return RequestRow(_layout: layout, _values: values)
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
