import Foundation

/// The stores of a graph of record types, given once, so that queries can walk the
/// relations the types declare (see ``RelatedRecord``).
///
/// ```swift
/// let graph = try RecordGraph(animals, owners, visits, vets)   // one store per type
///
/// let inOslo = graph.records(Animal.self).filter("owner.city", value: "Oslo")
/// let busy = graph.records(Animal.self).filter("visits.@count > 2")
/// let rows = try graph.records(Animal.self).fetch(including: Animal.owner, Animal.visits)
/// try graph.delete(Owner.self, id: 7)   // applies each relation's delete rule
/// ```
///
/// Stores of different kinds mix freely (a `MemoryStore` of owners beside a `LogStore` of
/// animals): a relation runs as one query on the related type's store, whose answer
/// (a list of ids) the query then runs on its own store. The graph checks every relation
/// when it is made: a relation to a type no store holds, two relations of one name, a
/// relation named like a key of its own type (a stored property, the first component of a
/// nested key such as `address` of `address.city`, or a `Codable` key of the type's records
/// the process has seen), a foreign key reflection cannot name, `.nullify` on a required key
/// or a cycle of `.cascade` rules throw `.invalidRelation`, naming the relation, what it
/// collides with, and the fix:
///
/// ```swift
/// struct Pet: Record { var id: Int; var name: String; var ownerID: Int? }
/// extension Pet: RelatedRecord {
///   static let relations: [any Relation<Pet>] = [ToOne<Pet, Owner>("name", \.ownerID)]
/// }
/// try RecordGraph(pets, owners)
/// // invalidRelation: The relation Pet.name has the name of Pet's stored key "name": string
/// // keys and format strings that name "name" would read the relation instead of the field. …
/// ```
///
/// Writes through a graph check foreign keys and apply delete rules while holding one lock
/// of the process (see ``insert(contentsOf:)`` and ``delete(_:id:)``): graph writes racing on
/// several threads leave no dangling reference. Writes from several processes are not
/// covered (the Relationships article says what is).
public final class RecordGraph: Sendable {
  let entries: [ObjectIdentifier: any _GraphEntry]
  /// Each type's relations, by name.
  let relationsByType: [ObjectIdentifier: [String: _RelationInfo]]
  /// Every to-one relation, by the type it points at: whom a delete reaches.
  let referrers: [ObjectIdentifier: [_RelationInfo]]
  /// The moment every set of the graph reads, for a graph made by ``asOf(_:)``.
  let asOfTime: Date?

  /// A graph of `stores`, one per record type.
  ///
  /// ```swift
  /// let graph = try RecordGraph([animals, owners])
  /// ```
  /// - Throws: `.invalidRelation` for two stores of one type, a relation named like a key
  ///   of its type or like another of its relations, or a relation the stores cannot serve
  ///   (see the type's discussion).
  public init(_ stores: [any RecordStore]) throws {
    var entries: [ObjectIdentifier: any _GraphEntry] = [:]
    for store in stores {
      let entry = _makeEntry(store)
      let id = ObjectIdentifier(entry.type)
      guard entries[id] == nil else {
        throw RequestSetError(
          .invalidRelation, "The graph holds two stores of \(entry.type). Give it one store per record type.")
      }
      entries[id] = entry
    }
    var relationsByType: [ObjectIdentifier: [String: _RelationInfo]] = [:]
    var referrers: [ObjectIdentifier: [_RelationInfo]] = [:]
    for (id, entry) in entries {
      var named: [String: _RelationInfo] = [:]
      for relation in entry.declaredRelations {
        if let other = named[relation.name] {
          throw RequestSetError(
            .invalidRelation,
            "\(entry.type) declares two relations named \"\(relation.name)\": \(Self._describe(other)) and "
              + "\(Self._describe(relation)). Give each relation its own name.")
        }
        named[relation.name] = relation
        if case .toOne = relation.kind { referrers[ObjectIdentifier(relation.target), default: []].append(relation) }
      }
      relationsByType[id] = named
    }
    self.entries = entries
    self.relationsByType = relationsByType
    self.referrers = referrers
    self.asOfTime = nil
    try _validate()
  }

  private init(_ graph: RecordGraph, asOf time: Date) {
    entries = graph.entries
    relationsByType = graph.relationsByType
    referrers = graph.referrers
    asOfTime = time
  }

  /// The graph as it was at `time`: every set it makes, and every query its relations
  /// run, reads each store as of that moment (see `RequestSet(_:asOf:)`).
  ///
  /// ```swift
  /// let yesterday = graph.asOf(Date(timeIntervalSinceNow: -86_400))
  /// try yesterday.records(Animal.self).filter("owner.city", value: "Oslo").fetch()
  /// ```
  /// Only a ``LogStore`` keeps history: a set of a type kept in another store throws
  /// `.versionUnavailable` when read, and so does a relation that reaches one. The graph
  /// is read-only: its writes throw `.readOnly`. Each store is read as of its last commit
  /// at or before `time`; stores commit separately, so two commits made at nearly the same
  /// moment in two stores may fall on either side of `time`.
  public func asOf(_ time: Date) -> RecordGraph {
    RecordGraph(self, asOf: time)
  }

  /// A graph of `stores`, one per record type.
  ///
  /// ```swift
  /// let graph = try RecordGraph(animals, owners, visits, vets)
  /// ```
  /// - Throws: `.invalidRelation`, as `init(_:)` with an array does.
  public convenience init(_ stores: any RecordStore...) throws {
    try self.init(stores)
  }

  /// Every record of `type`, as a request set whose keys may walk the type's relations.
  ///
  /// ```swift
  /// let cows = graph.records(Animal.self).filter("species.simpleName", value: "Cow")
  /// ```
  /// A key walks at most 16 relations (`owner.pets.owner…`, a many-to-many counting two),
  /// since each is a query: a longer one, in any filter form, a sort, `values` or a key
  /// inside a computed condition or SUBQUERY, makes the set's reads throw `.invalidRelation`.
  /// A type the graph holds no store of gives a set whose reads throw `.invalidRelation`.
  /// - Complexity: O(1); nothing is read until the set is evaluated.
  public func records<T: Record>(_ type: T.Type = T.self) -> RequestSet<T> {
    guard let entry = entries[ObjectIdentifier(T.self)] as? _Entry<T> else {
      var set = RequestSet<T>([T]())
      set._query.invalidate(Self.missingStore(T.self, for: nil))
      return set
    }
    return entry.records(in: self)
  }

  /// The store the graph holds for `type`, or nil.
  ///
  /// ```swift
  /// let owners = graph.store(for: Owner.self)
  /// ```
  public func store<T: Record>(for type: T.Type) -> (any RecordStore<T>)? {
    (entries[ObjectIdentifier(T.self)] as? _Entry<T>)?.store
  }

  // MARK: Internal lookups

  func entry(_ type: Any.Type) -> (any _GraphEntry)? { entries[ObjectIdentifier(type)] }

  func relations(of type: Any.Type) -> [String: _RelationInfo] { relationsByType[ObjectIdentifier(type)] ?? [:] }

  func relation(_ name: String, of type: Any.Type) -> _RelationInfo? { relationsByType[ObjectIdentifier(type)]?[name] }

  /// Whether `key`, read on `type`, walks a to-many (or through) relation.
  func walksToMany(_ key: String, from type: Any.Type) -> Bool {
    var type = type
    for component in key.split(separator: ".") {
      guard let relation = relation(String(component), of: type) else { return false }
      if !relation.isToOne { return true }
      type = relation.target
    }
    return false
  }

  /// The entry of a relation's target, which validation guarantees.
  func targetEntry(_ relation: _RelationInfo) throws -> any _GraphEntry {
    guard let entry = entry(relation.target) else { throw Self.missingStore(relation.target, for: relation) }
    return entry
  }

  static func missingStore(_ type: Any.Type, for relation: _RelationInfo?) -> RequestSetError {
    if let relation {
      return RequestSetError(
        .invalidRelation,
        "The relation \(relation.sourceName).\(relation.name) points at \(type), but the graph holds no store of "
          + "\(type). Pass a store of \(type) to RecordGraph, or remove the relation.")
    }
    return RequestSetError(
      .invalidRelation, "The graph holds no store of \(type). Pass a store of \(type) to RecordGraph(…).")
  }

  private func _validate() throws {
    for (_, named) in relationsByType {
      for relation in named.values.sorted(by: { $0.name < $1.name }) {
        let path = "\(relation.sourceName).\(relation.name)"
        guard !relation.name.isEmpty, !relation.name.contains("."), !relation.name.hasPrefix("@") else {
          throw RequestSetError(
            .invalidRelation,
            "The relation \(path) has an invalid name. Name it with a plain key, with no dot and no @.")
        }
        try _checkNameIsFree(relation)
        guard entry(relation.target) != nil else { throw Self.missingStore(relation.target, for: relation) }
        guard relation.keyFound else {
          throw RequestSetError(
            .invalidRelation,
            "The key path of \(path) names no stored property. Point the relation at a stored property that holds "
              + "the id, not at a computed one.")
        }
        switch relation.kind {
        case .toOne(_, let required, let rule, _):
          if required, rule == .nullify {
            throw RequestSetError(
              .invalidRelation,
              "\(path) is required (its key is not optional), so it cannot be nullified. Use onDelete: .cascade "
                + "or .deny, or make the key optional.")
          }
        case .toMany:
          break
        case .through(let first, let second):
          guard let via = self.relation(first, of: relation.source), case .toMany = via.kind,
            let then = self.relation(second, of: via.target), then.isToOne, then.target == relation.target
          else {
            throw RequestSetError(
              .invalidRelation,
              "\(path) goes through \(first).\(second), which is not a declared to-many followed by a to-one of "
                + "\(relation.targetName). Declare both relations in the types' `relations`.")
          }
        }
      }
    }
    try _checkCascadeCycles()
  }

  /// A string key whose first component names a relation walks the relation (see
  /// `_RelationResolver.split`), so a relation named like one of the source's own keys
  /// would take that key over: `filter("name", value: "Rex")` would compare the related
  /// record, while `filter(\.name == "Rex")` reads the field. Such a relation is refused.
  ///
  /// The source's keys are its stored properties (reflection lists them, for any record
  /// type) and the `Codable` keys of its records the process has seen (stored, opened or
  /// queried): a key that `CodingKeys` renames is known only from a record.
  private func _checkNameIsFree(_ relation: _RelationInfo) throws {
    var keys = _StoredPaths.of(relation.source).properties
    for (key, below) in _SchemaProbe.seenKeys(of: relation.source) where keys[key] == nil || below != nil {
      keys[key] = .some(below)
    }
    guard let below = keys[relation.name] else { return }
    let path = "\(relation.sourceName).\(relation.name)"
    let key = relation.name
    let clash: String
    if let below {
      clash =
        "the name of \(relation.sourceName)'s stored key \"\(key)\", the first component of its nested keys "
        + "(\"\(_DottedKey.join(key, below))\"): string keys and format strings that start with \"\(key).\" would "
        + "walk the relation instead of reading the field"
    } else {
      clash =
        "the name of \(relation.sourceName)'s stored key \"\(key)\": string keys and format strings that name "
        + "\"\(key)\" would read the relation instead of the field"
    }
    throw RequestSetError(
      .invalidRelation,
      "The relation \(path) has \(clash). Give the relation a name no key of \(relation.sourceName) uses (such as "
        + "the related type's), or rename the field.")
  }

  /// A relation as messages name it: `Pet.owner (to-one → Person)`.
  private static func _describe(_ relation: _RelationInfo) -> String {
    "\(relation.sourceName).\(relation.name) (\(relation.kindName) → \(relation.targetName))"
  }

  /// A cycle of `.cascade` rules (A's delete cascades to B, B's to A) would delete
  /// without end, or on an unlucky graph delete everything: it is refused.
  private func _checkCascadeCycles() throws {
    // Edges: target type -> source type, for every cascading to-one.
    var edges: [ObjectIdentifier: [(ObjectIdentifier, _RelationInfo)]] = [:]
    for (_, named) in relationsByType {
      for relation in named.values {
        guard case .toOne(_, _, .cascade, _) = relation.kind else { continue }
        edges[ObjectIdentifier(relation.target), default: []].append((ObjectIdentifier(relation.source), relation))
      }
    }
    var state: [ObjectIdentifier: Int] = [:]  // 1: on the path, 2: done
    func visit(_ node: ObjectIdentifier, _ path: [_RelationInfo]) throws {
      state[node] = 1
      for (next, relation) in edges[node] ?? [] {
        if state[next] == 1 {
          let cycle = (path + [relation]).map { "\($0.sourceName).\($0.name)" }.joined(separator: ", ")
          throw RequestSetError(
            .invalidRelation,
            "The delete rules cascade in a cycle (\(cycle)): deleting one record would delete its own referrers "
              + "again. Make one of these relations .nullify or .deny.")
        }
        if state[next] == nil { try visit(next, path + [relation]) }
      }
      state[node] = 2
    }
    for node in edges.keys.sorted(by: { "\($0)" < "\($1)" }) where state[node] == nil { try visit(node, []) }
  }
}

/// What the graph needs of one type's store, without knowing the type.
protocol _GraphEntry: Sendable {
  var type: Any.Type { get }
  var storeName: String { get }
  var declaredRelations: [_RelationInfo] { get }
  /// `@Sendable (UnsafePointer<T>) -> FieldValue`: a record's id, encoded.
  var readID: any Sendable { get }
  /// The values of `key` (which may walk relations) of the records matching `filter`,
  /// in store order; one query. `notes` gains what resolving the relations of the key and
  /// the filter did, for `explain()`.
  func column(_ key: String, where filter: _FieldPredicate?, graph: RecordGraph, notes: inout [String]) throws
    -> [FieldValue]
  /// The values of several keys of the matching records, one array per key, in store
  /// order; one query.
  func columns(_ keys: [String], where filter: _FieldPredicate?, graph: RecordGraph, notes: inout [String]) throws
    -> [[FieldValue]]
  /// The number of matching records per value of `key` (a stored key), as a group query
  /// counts them (`groupBy(key).aggregate(.count)`: a SQL store groups in its statement
  /// and reads no record); one query.
  func counts(by key: String, where filter: _FieldPredicate?, graph: RecordGraph) throws -> [FieldValue: Int]
  /// Where the store keeps its records, when it may share its database with other stores
  /// (``QueryPushdownStore/location``); nil for a graph read as of a past time.
  var location: StoreLocation? { get }
  /// The store's own query for the records matching `filter` (which may walk relations),
  /// as the store runs it exactly, to be a subquery in another store's statement, with
  /// the `relation` lines of resolving its relations; nil when part of it, or a condition
  /// on `column`, would run in process. Opens a reader; reads no record.
  func subquery(_ column: String, where filter: _FieldPredicate?, graph: RecordGraph) throws
    -> (query: StoreQuery, notes: [String])?
  /// Every record of the store encoded as an object, in store order; one query.
  func encodedObjects(graph: RecordGraph) throws -> [[String: FieldValue]]
  /// The records matching `filter`, type-erased, with their encoded ids.
  func records(where filter: _FieldPredicate?, graph: RecordGraph) throws -> [(id: FieldValue, record: any Sendable)]
  /// Applies changes (`[RecordChange<T>]`) atomically to the store.
  func apply(_ changes: any Sendable) throws
  /// Watches the store's commits, calling `poke` after each, until the result is released.
  func watch(_ poke: @escaping @Sendable () -> Void) -> any Sendable
  /// The record (a `T`) with a to-one key set to nil by `nullify` (`(T) -> T`).
  func _nullified(_ record: any Sendable, _ nullify: any Sendable) -> any Sendable
  /// The changes that save `saving` and delete `deleting` (records of `T`), and the
  /// changes that undo them (`restoring` are the saved records as they were).
  func changes(saving: [any Sendable], deleting: [any Sendable], restoring: [any Sendable]) -> (any Sendable, any Sendable)
}

private func _makeEntry<S: RecordStore>(_ store: S) -> any _GraphEntry {
  _Entry<S.Element>(store: store)
}

struct _Entry<T: Record>: _GraphEntry {
  let store: any RecordStore<T>

  var type: Any.Type { T.self }
  var storeName: String { "\(Swift.type(of: store))" }

  var declaredRelations: [_RelationInfo] {
    guard let related = T.self as? any RelatedRecord.Type else { return [] }
    return _declared(related)
  }

  var readID: any Sendable {
    let read: @Sendable (UnsafePointer<T>) -> FieldValue = { _encodedID($0.pointee.id) }
    return read
  }

  func records(in graph: RecordGraph) -> RequestSet<T> {
    var set: RequestSet<T>
    if let time = graph.asOfTime {
      do {
        set = try RequestSet(store, asOf: time)
      } catch {
        set = RequestSet([T]())
        set._query.invalidate(
          error as? RequestSetError ?? RequestSetError(.versionUnavailable, "\(error)", underlying: error))
      }
    } else {
      set = RequestSet(store)
    }
    set._query.graph = graph
    return set
  }

  private func _set(_ filter: _FieldPredicate?, _ graph: RecordGraph) -> RequestSet<T> {
    _PlanCounter.noteRelationQuery()
    var set = records(in: graph)
    if let filter { set._query.addFilter(_FilterNode(filter), mode: .and) }
    return set
  }

  func column(_ key: String, where filter: _FieldPredicate?, graph: RecordGraph, notes: inout [String]) throws
    -> [FieldValue]
  {
    try _set(filter, graph)._column(key, notes: &notes)
  }

  func columns(_ keys: [String], where filter: _FieldPredicate?, graph: RecordGraph, notes: inout [String]) throws
    -> [[FieldValue]]
  {
    let set = _set(filter, graph)
    var columns: [[FieldValue]] = []
    for key in keys { columns.append(try set._column(key, notes: &notes)) }
    return columns
  }

  func counts(by key: String, where filter: _FieldPredicate?, graph: RecordGraph) throws -> [FieldValue: Int] {
    let rows = try _set(filter, graph).groupBy(key).aggregate(.count).fetch()
    var counts: [FieldValue: Int] = [:]
    counts.reserveCapacity(rows.count)
    for row in rows {
      guard case .int(let n) = row["count"] ?? .null else {
        throw RequestSetError(.invalidRelation, "A group query on \(storeName) gave no count for \(key).")
      }
      counts[row[key] ?? .null, default: 0] += n
    }
    return counts
  }

  var location: StoreLocation? { (store as? any QueryPushdownStore<T>)?.location }

  func subquery(_ column: String, where filter: _FieldPredicate?, graph: RecordGraph) throws
    -> (query: StoreQuery, notes: [String])?
  {
    guard graph.asOfTime == nil else { return nil }
    var set = records(in: graph)
    if let filter { set._query.addFilter(_FilterNode(filter), mode: .and) }
    guard let runner = set._source.pushdown else { return nil }
    let reader = try runner.open()
    defer { reader.pause() }
    let prepared = try _PreparedQuery(set._query, reader: reader, storeName: runner.storeName)
    _PlanCounter.noteSubquery()
    let selected = StoreCondition(_FieldCondition(key: column, comparison: .equal, value: .null, collation: .binary))
    guard let plan = prepared.pushdown, plan.isExact, case .exact = reader.supportCondition(selected) else {
      return nil
    }
    var notes = prepared.query.relationNotes
    for related in prepared.query.stages[0].filter?.relatedSubqueries ?? [] { notes += related.notes }
    return (plan.query, notes)
  }

  func encodedObjects(graph: RecordGraph) throws -> [[String: FieldValue]] {
    let records = try _set(nil, graph).fetch()
    var objects: [[String: FieldValue]] = []
    objects.reserveCapacity(records.count)
    for record in records {
      guard case .object(let fields) = try _FieldEncoder.encode(record) else { continue }
      objects.append(fields)
    }
    return objects
  }

  func records(where filter: _FieldPredicate?, graph: RecordGraph) throws -> [(id: FieldValue, record: any Sendable)] {
    try _set(filter, graph).fetch().map { (_encodedID($0.id), $0) }
  }

  func watch(_ poke: @escaping @Sendable () -> Void) -> any Sendable {
    _CommitWatch(store, poke: poke)
  }

  func apply(_ changes: any Sendable) throws {
    guard let changes = changes as? [RecordChange<T>], !changes.isEmpty else { return }
    try store.apply(changes, ifVersion: nil)
  }
}

private func _declared<R: RelatedRecord>(_ type: R.Type) -> [_RelationInfo] {
  R.relations.map(\._relation)
}

/// Materializing related records inside encoded records, for the conditions that read
/// relations as nested values (expressions, `SUBQUERY`, `@sum`).
///
/// Each type's records are read once per query, and each level of nesting is built once
/// per type from the level below it: a record's related records at depth *d* are the
/// objects of depth *d* − 1, shared (copy on write), not built again for every parent.
/// So the cost is types × depth × records. Built afresh for every parent, a key through
/// two self-relations nested 2^depth times: an expression over 13 keys on 60 records made
/// 2^13 queries and took a minute and a gigabyte.
final class _RelationMaterializer {
  let graph: RecordGraph
  /// The relation names to attach wherever a type declares them.
  let include: Set<String>
  private var plain: [ObjectIdentifier: [[String: FieldValue]]] = [:]
  private var levels: [ObjectIdentifier: [Int: [FieldValue]]] = [:]
  private var groups: [String: [FieldValue: [FieldValue]]] = [:]
  private var building: Set<String> = []

  /// - Parameter include: The relation names an expression's keys hold; a many-to-many's
  ///   second relation is added, since its join records reach the targets through it.
  init(graph: RecordGraph, include: Set<String>) {
    self.graph = graph
    var names = include
    for type in graph.entries.values {
      for relation in type.declaredRelations where include.contains(relation.name) {
        if case .through(let first, let second) = relation.kind {
          names.insert(first)
          names.insert(second)
        }
      }
    }
    self.include = names
  }

  /// The records of `entry`'s type with their relations nested `depth` levels deep, in
  /// store order.
  func objects(_ entry: any _GraphEntry, depth: Int) throws -> [FieldValue] {
    let type = ObjectIdentifier(entry.type)
    if let done = levels[type]?[depth] { return done }
    var objects: [[String: FieldValue]]
    if let read = plain[type] {
      objects = read
    } else {
      objects = try entry.encodedObjects(graph: graph)
      plain[type] = objects
    }
    // A many-to-many whose join type reaches back through another many-to-many would
    // nest without end: the level being built is left bare inside itself.
    let mark = "\(type)|\(depth)"
    if depth > 0, building.insert(mark).inserted {
      defer { building.remove(mark) }
      for name in include.sorted() {
        guard let relation = graph.relation(name, of: entry.type) else { continue }
        try attach(relation, to: &objects, depth: depth - 1)
      }
    }
    let done = objects.map { FieldValue.object($0) }
    levels[type, default: [:]][depth] = done
    return done
  }

  /// The objects of `entry`'s type at `depth`, grouped by the value of `key` (in store
  /// order within a group).
  func grouped(_ entry: any _GraphEntry, depth: Int, by key: String) throws -> [FieldValue: [FieldValue]] {
    let name = "\(ObjectIdentifier(entry.type))|\(depth)|\(key)"
    if let done = groups[name] { return done }
    var grouped: [FieldValue: [FieldValue]] = [:]
    for object in try objects(entry, depth: depth) {
      grouped[_ExpressionValues.member(object, key), default: []].append(object)
    }
    groups[name] = grouped
    return grouped
  }

  /// Adds `relation`'s records to each object under the relation's name: an object for a
  /// to-one (nil when none), an array for a to-many.
  private func attach(_ relation: _RelationInfo, to objects: inout [[String: FieldValue]], depth: Int) throws {
    let target = try graph.targetEntry(relation)
    switch relation.kind {
    case .toOne(let key, _, _, _):
      let byID = try grouped(target, depth: depth, by: "id")
      for i in objects.indices {
        objects[i][relation.name] = byID[_ExpressionValues.member(.object(objects[i]), key)]?.first ?? .null
      }
    case .toMany(let key):
      let byParent = try grouped(target, depth: depth, by: key)
      for i in objects.indices {
        objects[i][relation.name] = .array(byParent[objects[i]["id"] ?? .null] ?? [])
      }
    case .through(let first, let second):
      guard let via = graph.relation(first, of: relation.source) else { return }
      // The join records one level deeper: the second relation is a hop of its own.
      try attach(via, to: &objects, depth: depth + 1)
      for i in objects.indices {
        guard case .array(let items) = objects[i][first] ?? .null else { continue }
        objects[i][relation.name] = .array(items.map { _ExpressionValues.member($0, second) }.filter { $0 != .null })
      }
    }
  }
}
