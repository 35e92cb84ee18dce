// Prefetching: records with their related records, in one query per relation.
//
//     let rows = try graph.records(Animal.self)
//       .filter("species", value: "Cow")
//       .fetch(including: Animal.owner, Animal.visits.sortBy(\.date, order: .descending).limit(3).including(Visit.vet))
//
// reads the cows (one query), their owners (one query: `id IN {the cows' owner ids}`), their
// visits (one query: `animalID IN {the cows' ids}`, sorted) and the visits' vets (one
// query), whatever the number of cows: never a query per record. A per-parent limit keeps
// the first `n` of each parent's sorted records in process, from that one query.

/// A record with the related records a prefetch read for it.
///
/// ```swift
/// for row in try graph.records(Animal.self).fetch(including: Animal.owner, Animal.visits) {
///   print(row.name, row[Animal.owner]?.city ?? "-", row[Animal.visits].count)
/// }
/// ```
/// Members of the record read through the row (`row.name`); a relation reads with a
/// subscript. A relation the prefetch did not include reads as nil (to-one) or empty
/// (to-many).
@dynamicMemberLookup
public struct Related<Base: Record>: Sendable {
  /// The record.
  public let record: Base
  let _links: [String: any Sendable]

  /// A member of the record.
  public subscript<Value>(dynamicMember keyPath: KeyPath<Base, Value>) -> Value { record[keyPath: keyPath] }

  /// The record a to-one relation points at, with what was prefetched below it; nil when
  /// the key is nil, names no record, or the relation was not included.
  public subscript<Target>(_ relation: ToOne<Base, Target>) -> Related<Target>? {
    _links[relation.relationName] as? Related<Target>
  }

  /// The records of a to-many relation, in the order (and up to the limit) the prefetch
  /// asked for; empty when there is none or the relation was not included.
  public subscript<Target>(_ relation: ToMany<Base, Target>) -> [Related<Target>] {
    _links[relation.relationName] as? [Related<Target>] ?? []
  }

  /// The records of a many-to-many relation, one per join record that points at one.
  public subscript<Through, Target>(_ relation: ToManyThrough<Base, Through, Target>) -> [Related<Target>] {
    _links[relation.relationName] as? [Related<Target>] ?? []
  }
}

/// How a relation prefetches: what it reads below its records, and for a to-many how each
/// parent's records are filtered, ordered and limited.
struct _PrefetchShape<Target: Record>: Sendable {
  var nested: [any Relation<Target>] = []
  var refine: [@Sendable (RequestSet<Target>) -> RequestSet<Target>] = []
  var limit: Int?
}

/// What a relation does to prefetch (each declaration adopts it).
protocol _Prefetching<Source>: Relation {
  /// For each parent, in order, what the relation links it to: a `Related<Target>?` or a
  /// `[Related<Target>]`. One query for the relation, plus one per nested relation.
  func _links(for parents: [Source], graph: RecordGraph) throws -> [any Sendable]
}

/// Wraps records with the relations `relations` read for them.
func _related<R: Record>(_ records: [R], _ relations: [any Relation<R>], graph: RecordGraph) throws -> [Related<R>] {
  var links = Array(repeating: [String: any Sendable](), count: records.count)
  for relation in relations {
    guard let prefetching = relation as? any _Prefetching<R> else {
      throw RequestSetError(.invalidRelation, "\(relation.relationName) cannot be prefetched.")
    }
    guard graph.entry(relation._relation.target) != nil else {
      throw RecordGraph.missingStore(relation._relation.target, for: relation._relation)
    }
    let values = try prefetching._links(for: records, graph: graph)
    for i in records.indices { links[i][relation.relationName] = values[i] }
  }
  return records.indices.map { Related(record: records[$0], _links: links[$0]) }
}

extension RequestSet where Element: Record {
  /// The set's records with their related records, in one query per relation (and per
  /// nested relation), never one per record.
  ///
  /// ```swift
  /// let rows = try graph.records(Animal.self).fetch(
  ///   including: Animal.owner, Animal.visits.sortBy(\.date, order: .descending).limit(3).including(Visit.vet))
  /// rows[0][Animal.owner]?.name
  /// rows[0][Animal.visits].first?[Visit.vet]?.name
  /// ```
  /// - Throws: `.invalidRelation` for a set not made by a ``RecordGraph``; any error of
  ///   the queries.
  /// - Complexity: 1 + *r* queries for *r* relations (nested ones included).
  public func fetch(including relations: any Relation<Element>...) throws -> [Related<Element>] {
    try fetch(including: relations)
  }

  /// The set's records with their related records; see `fetch(including:)`.
  ///
  /// ```swift
  /// let rows = try graph.records(Animal.self).fetch(including: [Animal.owner])
  /// ```
  public func fetch(including relations: [any Relation<Element>]) throws -> [Related<Element>] {
    guard let graph = _query.graph else {
      throw RequestSetError(
        .invalidRelation,
        "This set was not made by a RecordGraph, so it cannot read relations. Make it with graph.records(\(Element.self).self).")
    }
    return try _related(try fetch(), relations, graph: graph)
  }
}

extension ToOne: _Prefetching {
  func _links(for parents: [Source], graph: RecordGraph) throws -> [any Sendable] {
    let keys = Set(parents.compactMap(_foreignKey))
    let targets = keys.isEmpty ? [] : try graph.records(Target.self).filter(\Target.id, in: keys).fetch()
    let related = try _related(targets, _prefetch.nested, graph: graph)
    var byID: [Target.ID: Related<Target>] = [:]
    for r in related { byID[r.record.id] = r }
    return parents.map { parent -> any Sendable in _foreignKey(parent).flatMap { byID[$0] } as Related<Target>? }
  }

  /// The relation, prefetching `relations` below each related record.
  ///
  /// ```swift
  /// try graph.records(Visit.self).fetch(including: Visit.animal.including(Animal.owner))
  /// ```
  public func including(_ relations: any Relation<Target>...) -> ToOne {
    var copy = self
    copy._prefetch.nested += relations
    return copy
  }
}

extension ToMany: _Prefetching {
  func _links(for parents: [Source], graph: RecordGraph) throws -> [any Sendable] {
    let ids = Array(Set(parents.map(\.id)))
    var set = graph.records(Target.self).filter(inverseIn(ids))
    for refine in _prefetch.refine { set = refine(set) }
    let children = ids.isEmpty ? [] : try set.fetch()
    let related = try _related(children, _prefetch.nested, graph: graph)
    var byParent: [Source.ID: [Related<Target>]] = [:]
    for r in related {
      guard let parent = inverse(r.record) else { continue }
      if let limit = _prefetch.limit, byParent[parent, default: []].count >= limit { continue }
      byParent[parent, default: []].append(r)
    }
    return parents.map { byParent[$0.id] ?? [] }
  }

  /// The relation, prefetching `relations` below each related record.
  ///
  /// ```swift
  /// try graph.records(Animal.self).fetch(including: Animal.visits.including(Visit.vet))
  /// ```
  public func including(_ relations: any Relation<Target>...) -> ToMany {
    var copy = self
    copy._prefetch.nested += relations
    return copy
  }

  /// The relation, prefetching each record's related records sorted by `keyPath`.
  ///
  /// ```swift
  /// Animal.visits.sortBy(\.date, order: .descending).limit(3)   // the newest 3 of each
  /// ```
  public func sortBy<Value: Comparable & Sendable>(
    _ keyPath: KeyPath<Target, Value> & Sendable, order: RequestSortOrder = .ascending
  ) -> ToMany {
    var copy = self
    copy._prefetch.refine.append { $0.sortBy(keyPath, order: order) }
    return copy
  }

  /// The relation, prefetching only the related records that match `filter`.
  ///
  /// ```swift
  /// Animal.visits.filter(\.cost > 100)
  /// ```
  public func filter(_ filter: RequestFilter<Target>) -> ToMany {
    var copy = self
    copy._prefetch.refine.append { $0.filter(filter) }
    return copy
  }

  /// The relation, prefetching at most `n` related records of each record (the first `n`
  /// in the order ``sortBy(_:order:)`` gives); a negative `n` keeps none.
  ///
  /// ```swift
  /// Animal.visits.sortBy(\.date, order: .descending).limit(3)
  /// ```
  /// The one query reads every related record of the parents; the limit applies to each
  /// parent in process.
  public func limit(_ n: Int) -> ToMany {
    var copy = self
    copy._prefetch.limit = Swift.max(0, Swift.min(copy._prefetch.limit ?? n, n))
    return copy
  }
}

extension ToManyThrough: _Prefetching {
  func _links(for parents: [Source], graph: RecordGraph) throws -> [any Sendable] {
    let through = try first._links(for: parents, graph: graph)
    let joins = through.flatMap { ($0 as? [Related<Through>]) ?? [] }.map(\.record)
    let targets = try second._links(for: joins, graph: graph)
    var index = 0
    return through.map { item -> any Sendable in
      let count = (item as? [Related<Through>])?.count ?? 0
      defer { index += count }
      return (index..<index + count).compactMap { targets[$0] as? Related<Target> }
    }
  }
}
