/// A store that runs part of a query itself: a SQL engine, a remote service, a store with
/// its own indexes.
///
/// When a ``RequestSet`` over such a store is evaluated, counted or explained, the engine
/// opens a reader (``queryReader()``), one consistent state of the store for the whole
/// evaluation, asks it which conditions and sort keys it runs exactly
/// (``PushdownSupport``), hands it a ``StoreQuery`` of those, and runs the rest in process
/// over the records it returns, stopping early when the window is full. A set that must
/// not run anything in process says so with ``RequestSet/requiringPushdown()``.
///
/// A store that adopts only ``RecordStore`` keeps working: the engine evaluates its
/// snapshot in process. See "Writing a backend" in the documentation for a whole example.
///
/// ```swift
/// final class ArchiveStore: QueryPushdownStore {
///   func queryReader() throws -> any StoreQueryReader<Animal> { try ArchiveReader(self) }
///   // RecordStore's insert, save, delete, apply, snapshot ...
/// }
/// ```
public protocol QueryPushdownStore<Element>: RecordStore {
  /// A reader of one consistent state of the store (a read transaction), held for one
  /// evaluation: a count and the iteration of one evaluated set see the same records.
  ///
  /// - Throws: the store's error when it cannot read (closed, server gone).
  func queryReader() throws -> any StoreQueryReader<Element>

  /// Sets `assignments` on every record `query` matches, as one atomic write, and returns
  /// how many records changed; nil when the store cannot run it exactly (the engine then
  /// updates through ``RecordStore/apply(_:ifVersion:)``). The default returns nil.
  ///
  /// The engine calls it only for a query the store's reader said it runs exactly, with no
  /// window. When the reader returns ``StoreQueryReader/fieldKinds()``, the engine has
  /// checked each assignment's key and value against them first; otherwise the store
  /// checks them, throwing what ``RequestSet/update(_:value:)`` throws. Either way the
  /// store must write nothing when an updated record would not decode.
  ///
  /// ```swift
  /// try animals.filter("species", value: "dog").update("age", value: 4)   // one UPDATE statement
  /// ```
  func update(matching query: StoreQuery, set assignments: [(key: String, value: FieldValue)]) throws -> Int?

  /// Deletes every record `query` matches, as one atomic write, and returns how many; nil
  /// when the store cannot run it exactly. The default returns nil.
  ///
  /// ```swift
  /// try animals.filter("age", .greaterThan, 12).delete()   // one DELETE statement
  /// ```
  func delete(matching query: StoreQuery) throws -> Int?

  /// Inserts each record, or replaces the stored record with the same values at `keys`
  /// (keeping its id), as one atomic write; nil when the store cannot run it itself (the
  /// engine then reads the matches and writes through ``RecordStore/apply(_:ifVersion:)``).
  /// The default returns nil.
  ///
  /// The engine has checked the batch first: every record has a non-nil value at every
  /// key, no two share their values, and the keys are ones the store's reader knows.
  /// A SQL store runs `INSERT … ON CONFLICT (…) DO UPDATE` when a unique index on exactly
  /// `keys` exists, and returns nil otherwise.
  ///
  /// ```swift
  /// try store.upsert(people, on: "email")   // one INSERT … ON CONFLICT statement
  /// ```
  /// - Parameters:
  ///   - records: The batch, in order.
  ///   - fields: Each record's encoded fields (`FieldValue(encoding:)`), in the same order.
  ///   - keys: The string keys a record matches on.
  /// - Returns: What was written, or nil.
  func upsert(_ records: [Element], fields: [FieldValue], on keys: [String]) throws -> UpsertResult?

  /// The database and table the store keeps its records in, when other stores may share
  /// the database: a condition through a relation between two stores with the same
  /// database reaches the record's store as one ``StoreSubquery`` (see
  /// ``StoreQueryReader/support(for:)-(StoreSubquery)``) instead of a list of ids read
  /// first. The default is nil.
  ///
  /// ```swift
  /// var location: StoreLocation? { StoreLocation(database: "sqlite:" + canonicalPath, table: table) }
  /// ```
  var location: StoreLocation? { get }
}

extension QueryPushdownStore {
  /// Runs nothing: the engine updates through ``RecordStore/apply(_:ifVersion:)``.
  public func update(matching query: StoreQuery, set assignments: [(key: String, value: FieldValue)]) throws -> Int? {
    nil
  }

  /// Runs nothing: the engine deletes through ``RecordStore/apply(_:ifVersion:)``.
  public func delete(matching query: StoreQuery) throws -> Int? { nil }

  /// Runs nothing: the engine upserts through ``RecordStore/apply(_:ifVersion:)``.
  public func upsert(_ records: [Element], fields: [FieldValue], on keys: [String]) throws -> UpsertResult? { nil }

  /// Shares no database: relations reach the store as lists of ids.
  public var location: StoreLocation? { nil }
}

/// Whether a store runs a condition or a sort key exactly as the in-memory engine does.
///
/// ```swift
/// func support(for condition: StoreCondition) -> PushdownSupport {
///   condition.collation == .binary ? .exact : .none(reason: "the collation is Swift's")
/// }
/// ```
public enum PushdownSupport: Sendable, Hashable {
  /// The store's answer is the engine's answer.
  case exact
  /// The store matches every record the engine would, and maybe more: the engine checks
  /// each record the store returns (a condition the store can narrow but not decide).
  case superset
  /// The store cannot run it; the engine runs it in process, and `explain()` gives the
  /// reason.
  case none(reason: String)
}

/// One consistent state of a ``QueryPushdownStore``, open for one evaluation: the store's
/// side of the pushdown seam.
///
/// The engine asks ``support(for:)-(StoreCondition)`` about every condition and sort key
/// first, ``support(for:)-(StoreQuery)`` about the query it would hand the store, then calls ``count(_:)`` (only for a query it found exact throughout) or
/// ``records(_:_:)``, and ``explain(_:)`` for `explain()`. A reader releases what it holds
/// (a read transaction, a pooled connection) when it is deinitialized.
///
/// ```swift
/// final class ArchiveReader: StoreQueryReader {
///   func support(for condition: StoreCondition) -> PushdownSupport { .exact }
///   func support(for sort: StoreSortKey) -> PushdownSupport { .none(reason: "unsorted archive") }
///   func count(_ query: StoreQuery) throws -> Int { try records(matching: query).count }
///   func records(_ query: StoreQuery, _ body: (Animal) throws -> Bool) throws { ... }
///   func explain(_ query: StoreQuery) throws -> StoreExplanation { StoreExplanation(statement: "\(query)") }
/// }
/// ```
public protocol StoreQueryReader<Element>: AnyObject, Sendable {
  /// The records the store holds.
  associatedtype Element: Record

  /// The store's write counter for this state (see ``StoreSnapshot/version``).
  var version: UInt64 { get }

  /// Whether the store runs this condition exactly, as a superset, or not at all.
  func support(for condition: StoreCondition) -> PushdownSupport

  /// Whether the store orders by this key exactly as the in-memory engine does, ties
  /// broken by store order. Only `.exact` or `.none` are meaningful for a sort.
  func support(for sort: StoreSortKey) -> PushdownSupport

  /// Whether the store keeps the first record per value of `key` exactly as the engine
  /// does. The default answers `.none`.
  func support(forDistinct key: String) -> PushdownSupport

  /// Whether the store computes a date part (``StoreCondition/datePart``,
  /// ``StoreSortKey/datePart``, a ``StoreGroupQuery`` key such as `born.@month`) exactly as
  /// ``RequestDatePart/value(of:)`` does. The engine asks before it hands the store a
  /// condition, sort key or group key with a date part; the default answers `.none`, so a
  /// store written before date parts existed never receives one.
  ///
  /// ```swift
  /// func support(forDatePart part: RequestDatePart) -> PushdownSupport { .exact }
  /// ```
  func support(forDatePart part: RequestDatePart) -> PushdownSupport

  /// Whether the store runs a full-text condition (``StoreFilter/search(_:)``) exactly as
  /// ``StoreTextSearch/matches(_:)`` decides, as a superset, or not at all. The default
  /// answers `.none`, so a store written before full-text search never receives one.
  ///
  /// ```swift
  /// func support(for search: StoreTextSearch) -> PushdownSupport { .exact }
  /// ```
  func support(for search: StoreTextSearch) -> PushdownSupport

  /// Whether the store runs a condition through a relation as a subquery on a related
  /// store in its own database (``StoreFilter/subquery(_:)``), exactly as the engine's
  /// `IN` over the related ids decides, or not at all. The engine asks only a store whose
  /// ``QueryPushdownStore/location`` names the subquery's database. The default answers
  /// `.none`, so a store written before subqueries existed never receives one.
  ///
  /// ```swift
  /// func support(for subquery: StoreSubquery) -> PushdownSupport {
  ///   subquery.location.database == database ? .exact : .none(reason: "another database")
  /// }
  /// ```
  func support(for subquery: StoreSubquery) -> PushdownSupport

  /// Whether the store orders by a value read through a relation from a store in its own
  /// database (a ``StoreSortKey`` whose ``StoreSortKey/related`` is set), as a subquery in
  /// its statement, exactly as the engine orders the values it reads from the related
  /// store (a record with no related record by ``StoreRelatedValue/fallback``; ties by
  /// store order), or not at all. The engine asks only a store whose
  /// ``QueryPushdownStore/location`` names the related store's database, and never asks
  /// ``support(for:)-(StoreSortKey)`` about such a key. The default answers `.none`, so a
  /// store written before related sorts existed never receives one.
  ///
  /// ```swift
  /// func support(forRelatedSort sort: StoreSortKey) -> PushdownSupport {
  ///   guard let related = sort.related, related.location.database == database else {
  ///     return .none(reason: "another database")
  ///   }
  ///   return .exact
  /// }
  /// ```
  func support(forRelatedSort sort: StoreSortKey) -> PushdownSupport

  /// Whether the store runs `query` as a whole, each of its conditions, sort keys and its
  /// distinct key being supported: a store whose statements have a limit of size declines
  /// a query past it, and the engine runs the largest terms of the filter in process until
  /// the store takes the rest (then, if it must, the sort and `distinct` too). Only
  /// `.exact` and `.none` are meaningful. The default answers `.exact`.
  ///
  /// ```swift
  /// // PostgreSQL binds at most 65,535 values to one statement:
  /// func support(for query: StoreQuery) -> PushdownSupport {
  ///   let n = parameters(query).count
  ///   return n <= 65_535 ? .exact : .none(reason: "the statement would bind \(n) values")
  /// }
  /// ```
  func support(for query: StoreQuery) -> PushdownSupport

  /// The number of records `query` selects (after its window).
  func count(_ query: StoreQuery) throws -> Int

  /// Hands `body` the records `query` selects, in its order (store order without a sort),
  /// until `body` returns false.
  func records(_ query: StoreQuery, _ body: (Element) throws -> Bool) throws

  /// What the store runs for `query`: its statement, bindings and plan.
  func explain(_ query: StoreQuery) throws -> StoreExplanation

  /// The keys the store's records have held and the kinds of value under each, as of
  /// this reader's state, or nil when the store does not keep them. The engine checks
  /// every query against them before the store runs it: a key no record holds throws
  /// `.unknownKey` and a value of a kind the key never holds throws `.typeMismatch`, as
  /// over a ``MemoryStore``. With nil, such a query matches nothing. The default returns
  /// nil.
  ///
  /// ```swift
  /// func fieldKinds() throws -> StoreFieldKinds? {
  ///   try StoreFieldKinds(encodedText: readSummaryRow())
  /// }
  /// ```
  func fieldKinds() throws -> StoreFieldKinds?

  /// One row per group of the records `query.query` selects: the group's values of
  /// `query.keys`, then its `query.columns`, in that order; rows in any order. Nil when the
  /// store cannot compute every row exactly as the in-memory engine does (the engine then
  /// groups in process). The default returns nil.
  ///
  /// The engine's rules, which an exact answer keeps: records whose key values are equal
  /// (`1` and `1.0` are, `1` and `"1"` and `true` are not; nil and an absent key are) make
  /// one group, whose key value is that of its first record in store order; `count`
  /// counts records, the other columns skip nil and follow ``StoreAggregate``'s rules.
  ///
  /// ```swift
  /// func groups(_ query: StoreGroupQuery) throws -> [[FieldValue]]? {
  ///   query.columns == [.count] ? try countPerValue(of: query.keys, query.query) : nil
  /// }
  /// ```
  func groups(_ query: StoreGroupQuery) throws -> [[FieldValue]]?

  /// `function` of `key` over the records `query` selects, or nil when the store cannot
  /// compute it exactly as the in-memory engine does (the engine then computes it). The
  /// default returns nil.
  func aggregate(_ function: StoreAggregate, of key: String, _ query: StoreQuery) throws -> FieldValue?

  /// Says the engine has stopped using the reader for now: it may keep it for a later
  /// read of the same evaluation (a count now, the records when the set is iterated), or
  /// release it. Until ``resume()`` no call reaches the reader, so a store may lend what
  /// the reader holds (a pooled connection) to other calls, provided the reader, resumed,
  /// either reads the state it began with or throws (`.conflict`). Each use of a reader,
  /// from its creation or from ``resume()``, ends with one `pause()`. The default does
  /// nothing.
  ///
  /// ```swift
  /// func pause() { lease.lend() }     // a PostgreSQL reader: its connection may serve others
  /// func resume() { lease.keep() }
  /// ```
  func pause()

  /// Says the engine uses the reader again after ``pause()``. The default does nothing.
  func resume()
}

extension StoreQueryReader {
  /// Keeps nothing distinct in the store: the engine does it.
  public func support(forDistinct key: String) -> PushdownSupport {
    .none(reason: "\(Self.self) does not run DISTINCT")
  }

  /// Computes no date part: conditions, sorts and groups on one run in process.
  public func support(forDatePart part: RequestDatePart) -> PushdownSupport {
    .none(reason: "the store does not compute date parts (\(part))")
  }

  /// Keeps no summary of keys and kinds: a key the records lack matches nothing.
  public func fieldKinds() throws -> StoreFieldKinds? { nil }

  /// Runs no subquery: relations reach the store as lists of ids.
  public func support(for subquery: StoreSubquery) -> PushdownSupport {
    .none(reason: "the store runs no subquery on another store")
  }

  /// Runs no related sort: the engine reads the related values and sorts in process.
  public func support(forRelatedSort sort: StoreSortKey) -> PushdownSupport {
    .none(reason: "the store sorts by no value of another store")
  }

  /// Takes every query whose parts it supports.
  public func support(for query: StoreQuery) -> PushdownSupport { .exact }

  /// Forms no groups in the store: the engine does it.
  public func groups(_ query: StoreGroupQuery) throws -> [[FieldValue]]? { nil }

  /// Computes nothing in the store: the engine does it.
  public func aggregate(_ function: StoreAggregate, of key: String, _ query: StoreQuery) throws -> FieldValue? { nil }

  /// Lends nothing: the reader holds what it holds until it is released.
  public func pause() {}

  /// Lends nothing: the reader holds what it holds until it is released.
  public func resume() {}
}

/// An aggregate a store may compute for ``StoreQueryReader/aggregate(_:of:_:)``: the
/// string-key aggregates of ``RequestSet`` (`sum("age")`, `min`, `max`, `average`).
///
/// ```swift
/// try reader.aggregate(.max, of: "age", StoreQuery())
/// ```
public enum StoreAggregate: String, Sendable, Hashable {
  /// The sum of the numbers; `.int(0)` for none. Integers that overflow throw `.overflow` in
  /// memory, so a store that cannot tell returns nil.
  case sum
  /// The smallest value (``StoreSortKey`` order, nil ignored); `.null` for none.
  case min
  /// The largest value; `.null` for none.
  case max
  /// The mean of the numbers as `.double`; `.null` for none.
  case average
}

/// What a store runs for one ``StoreQuery``, for `explain()`.
///
/// ```swift
/// StoreExplanation(statement: "SELECT body FROM animals WHERE …", bindings: ["3"], plan: ["SCAN animals"])
/// ```
public struct StoreExplanation: Sendable, CustomStringConvertible {
  /// The statement the store runs (SQL text, with placeholders).
  public var statement: String
  /// The bound values, in order, as text (never a password or a connection string).
  public var bindings: [String]
  /// The engine's own plan, one line per step (`EXPLAIN QUERY PLAN`, `EXPLAIN`).
  public var plan: [String]

  /// An explanation.
  ///
  /// ```swift
  /// StoreExplanation(statement: "SELECT …")
  /// ```
  public init(statement: String, bindings: [String] = [], plan: [String] = []) {
    self.statement = statement
    self.bindings = bindings
    self.plan = plan
  }

  /// The statement, its bindings and its plan, on separate lines; a binding longer than
  /// 240 characters shows its first 240 and its length.
  public var description: String {
    var lines = ["statement: " + statement]
    if !bindings.isEmpty {
      // A bound list (a relation's ids) may be thousands of values long: show its start.
      let shown = bindings.map { $0.count > 240 ? String($0.prefix(240)) + "… (\($0.count) characters)" : $0 }
      lines.append("bindings: [" + shown.joined(separator: ", ") + "]")
    }
    for step in plan { lines.append("plan: " + step) }
    return lines.joined(separator: "\n")
  }
}
