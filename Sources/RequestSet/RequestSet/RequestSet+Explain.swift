extension RequestSet {
  /// A readable, stable description of how the set will be evaluated: which index the
  /// first stage reads through (or a scan), which filters the index answers and which run
  /// on each record, the sort strategy, the window, and the estimated records read. On a
  /// store that keeps its records encoded (a ``LogStore``), it also names the conditions
  /// that decode each record they test, because they have no field of their own to read: a
  /// closure, an untranslated predicate, a key path whose type's encoded form does not
  /// compare as the Swift value does (an enum with a payload, a `URL`), or one the stored
  /// records have not confirmed as a Codable key yet; a `read through Codable:` line says,
  /// for each key path with no field of its own, why. On records in memory, when a string
  /// key is one the type's `Codable` conformance writes differently from its stored
  /// property (a renamed key, a custom `encode(to:)`, a class), a `fields:` line says
  /// which keys are read straight from the records and which through `Codable`.
  ///
  /// A set made by a ``RecordGraph`` whose keys walk relations says first, on a
  /// `relation` line for each, how the relation runs: a semi-join (one query on the
  /// related store, whose ids become `key IN {…}` here), an anti-join, a count, or
  /// materialized related records for a condition computed on each record. Every step
  /// has its line: a many-to-many's join records, and a relation that a related query
  /// walks in turn (the visits' vet, for `ANY visits.vet.name`), indented below the step
  /// that ran it. To know those ids, explaining such a set runs the related queries.
  ///
  /// It runs no query of its own store. A set is prepared once, on its first read, and every read (`count`,
  /// iteration, subscripts, `first`, `last`) uses that one plan: after a read, `explain()`
  /// prints that plan. Before any read it prints the plan a read would make now, looking
  /// at the store's indexes in a fresh snapshot that it does not keep (explaining fixes
  /// nothing), and counts index entries for the estimate. The plan depends on the query and
  /// the store's data only, never on what the process read before the set was built.
  ///
  /// ```swift
  /// try store.createIndex(\.species)
  /// print(animals.filter("species", value: "Cow").sortBy("age").limit(5).explain())
  /// // RequestSet<Animal> over MemoryStore<Animal>
  /// // stage 1: index lookup on species (~2 of 6 records)
  /// //   index answers: species == "Cow"
  /// //   sort: age ASC (top-k heap, k = 5)
  /// //   window: limit 5
  /// ```
  /// - Complexity: No record is read. Before a read: one plan over a fresh snapshot
  ///   (taking a snapshot, and for an index lookup counting its entries, O(log *n*)); after
  ///   one, O(size of the query). On a `QueryPushdownStore`, one call to the store's own
  ///   `explain`.
  public func explain() -> String {
    var lines = ["RequestSet<\(Element.self)> over \(_source.name)"]
    if let invalid = _query.invalid { lines.append("invalid: \(invalid.message)") }
    if let runner = _source.pushdown { return (lines + _pushdownExplain(runner)).joined(separator: "\n") }
    var firstSnapshot: StoreSnapshot<Element>? = nil
    // The preparation a read made (its plan is what ran), else the one a read would make
    // now, not kept: explaining fixes no snapshot.
    var prepared = _cache.peekPrepared()
    var unreadable: (any Error)? = nil
    if prepared == nil {
      do {
        prepared = _PreparedQuery(_query, snapshot: try _cache.peekSnapshot() ?? _source.snapshot())
      } catch {
        unreadable = error
      }
    }
    lines += Self._relationLines((prepared?.query ?? _query).relationNotes)
    if let prepared { lines += Self._relationLines(prepared.query.relatedSortNotes(pushed: false)) }
    for (i, stage) in (prepared?.query ?? _query).stages.enumerated() {
      var filter = stage.filter
      var sortStrategy: String? = nil
      if i == 0 {
        if let prepared, let snapshot = prepared.snapshot {
          firstSnapshot = snapshot
          let plan = prepared.access()
          let total = snapshot.count
          filter = plan.filter
          switch plan.path {
          case .scan:
            lines.append("stage 1: scan all records (~\(total) records)")
            if let note = plan.note { lines.append("  index not used: \(note)") }
          case .lookup(let name, let answers, let exact):
            lines.append("stage 1: \(name) (~\(plan.estimatedRows) of \(total) records)")
            lines.append(
              exact
                ? "  index answers: \(answers.description)"
                : "  index narrows to: \(answers.description) (rechecked on each record)")
          case .walk(let walk):
            let within =
              walk.prefixKeys.isEmpty
              ? "" : " within equal \(walk.prefixKeys.joined(separator: ", ")) of a composite index"
            lines.append(
              "stage 1: index order on \(walk.key) \(walk.descending ? "DESC" : "ASC")\(within), stopping once the "
                + "window is full (~\(plan.estimatedRows) of \(total) records)")
            if let note = plan.note { lines.append("  \(note)") }
            sortStrategy = "index order"
          }
        } else {
          lines.append("stage 1: scan all records (the store cannot be read now: \(unreadable.map { "\($0)" } ?? ""))")
        }
      } else {
        lines.append("stage \(i + 1): the records of stage \(i)")
      }
      if let filter {
        lines.append("  filter: \(filter.description)")
        if i == 0, let firstSnapshot, let decoded = _decodedConditions(filter, in: firstSnapshot), !decoded.isEmpty {
          lines.append("  decodes each record for: " + decoded.joined(separator: ", "))
          let unresolved = _keyPathsWithoutField(filter)
          if !unresolved.isEmpty { lines.append("  read through Codable: " + unresolved.joined(separator: "; ")) }
        }
      }
      if i == 0, let firstSnapshot, let routes = _fieldRoutes(stage, in: firstSnapshot) {
        lines.append(routes)
      }
      if !stage.sort.isEmpty {
        let keys = stage.sort.map(\.description).joined(separator: ", ")
        let strategy =
          sortStrategy
          ?? (stage.distinct == nil
            ? stage.window.needed.map { "top-k heap, k = \($0)" } ?? "stable sort" : "stable sort")
        lines.append("  sort: \(keys) (\(strategy))")
      }
      lines.append(contentsOf: stage.explainedTail)
    }
    return lines.joined(separator: "\n")
  }

  /// For records in memory, how the string keys of a stage's filter and sort are read,
  /// when some key goes through `Codable`: which are read straight from the records
  /// (reflected stored properties) and which from encoded fields the store keeps for them
  /// (see `_FieldModel`). Nil when every key is read from the records, or none is named.
  private func _fieldRoutes(_ stage: _Stage<Element>, in snapshot: StoreSnapshot<Element>) -> String? {
    guard case .contiguous(_, let source) = snapshot._storage else { return nil }
    let plan: _FieldPlan
    switch source {
    case .stored(let stored): plan = stored.plan
    case .lazy(let box): plan = box.built?.plan ?? _FieldModel.of(Element.self).plan
    case .unavailable: return nil
    }
    var keys: [String] = []
    for case .field(let c) in stage.filter.map(Self._leaves) ?? [] where !keys.contains(c.key) { keys.append(c.key) }
    for case .field(let key, _, _) in stage.sort where !keys.contains(key) { keys.append(key) }
    var reflected: [String] = []
    var encoded: [String] = []
    for key in keys {
      if case .reflected = _ResolvedField.named(key, in: plan, root: Element.self).reading {
        reflected.append(key)
      } else if plan.encodesEverything || plan.encodedOnly.contains(_DottedKey.split(key)[0]) {
        encoded.append(key)
      }  // else a key no record holds: the filter line says enough
    }
    guard !encoded.isEmpty else { return nil }
    var line = "  fields: "
    if !reflected.isEmpty { line += reflected.joined(separator: ", ") + " read from the records; " }
    return line + encoded.joined(separator: ", ") + " through Codable (encoded per record)"
  }

  /// The key paths of `filter`'s typed conditions that name no field the store could read
  /// (see `_ResolvedField.whyNoField`), each with the reason: a store that keeps records
  /// encoded decodes each record to test them, through the type's `Codable` conformance.
  private func _keyPathsWithoutField(_ filter: _FilterNode<Element>) -> [String] {
    var found: [String] = []
    for case .typed(let c) in Self._leaves(filter) {
      guard let keyPath = c.keyPath?.keyPath, let why = _ResolvedField.whyNoField(keyPath, root: Element.self)
      else { continue }
      let entry = "\(keyPath) (\(why))"
      if !found.contains(entry) { found.append(entry) }
    }
    return found
  }

  /// The conditions of a filter that are not ANDs, ORs or NOTs, in the order they are
  /// written; walked with an explicit stack, as a chained filter can nest deeply.
  private static func _leaves(_ filter: _FilterNode<Element>) -> [_FilterNode<Element>] {
    var leaves: [_FilterNode<Element>] = []
    var stack = [filter]
    while let node = stack.popLast() {
      switch node {
      case .and(let parts), .or(let parts): stack.append(contentsOf: parts.terms.reversed())
      case .not(let inner): stack.append(inner)
      default: leaves.append(node)
      }
    }
    return leaves
  }

  /// The conditions of `filter` that decode each record they test on a store that keeps
  /// records encoded; nil for a store that holds them in memory.
  private func _decodedConditions(_ filter: _FilterNode<Element>, in snapshot: StoreSnapshot<Element>) -> [String]? {
    guard case .external = snapshot._storage else { return nil }
    let fields = snapshot._fieldsAtHand()
    var found: [String] = []
    for node in Self._leaves(filter) {
      switch node {
      case .and, .or, .not: continue  // not a leaf
      case .typed(let c):
        if let twin = c.field, !twin.idOnly, let fields,
          _FilterCompiler<Element>.holdsKinds(of: .field(twin), in: fields)
        {
          continue
        }
        found.append(c.description)
      case .closure(let c): found.append(c.description)
      case .predicate(let p):
        if let translated = p.translated, let fields, _FilterCompiler<Element>.holdsKinds(of: translated, in: fields) {
          continue
        }
        found.append(p.description)
      case .expression(let e): found.append(e.description)
      case .constant, .field, .invalid, .ids, .search, .related: continue
      }
    }
    return found
  }
}

extension RequestSet {
  /// The `relation` lines of `explain()`, one per step: a step another step ran (the
  /// visits' vet, for `ANY visits.vet.name`) is indented below it.
  static func _relationLines(_ notes: [String]) -> [String] {
    notes.map { note in
      let indent = note.prefix { $0 == " " }
      return indent + "relation " + note.dropFirst(indent.count)
    }
  }
}
