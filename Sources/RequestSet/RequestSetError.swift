/// The one error type RequestSet throws.
///
/// Every error has a ``code`` to switch on, a ``message`` that says what went wrong and how
/// to fix it, and, where another error caused it, the ``underlying`` error.
///
/// ```swift
/// do {
///   _ = try animals.filter("nmae", value: "Micky").fetch()
/// } catch let error as RequestSetError where error.code == .unknownKey {
///   print(error.message)
///   // Unknown key "nmae" for Animal. Known keys: age, id, name, nickname, owner,
///   // owner.city, species, tags, weight. Use one of them, or a dotted path into a nested value.
/// }
/// ```
public struct RequestSetError: Error, Sendable, CustomStringConvertible {
  /// What kind of failure this is.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    let _name: String
    private init(_ name: String) { _name = name }

    /// A string key names no field of the record type.
    public static let unknownKey = Code("unknownKey")
    /// A value's type cannot match the field it is compared with.
    public static let typeMismatch = Code("typeMismatch")
    /// An insert used an id that the store already holds.
    public static let duplicateID = Code("duplicateID")
    /// `get()` found no record, or an operation named an id the store does not hold.
    public static let notFound = Code("notFound")
    /// `get()` found more than one record.
    public static let multipleResults = Code("multipleResults")
    /// A record or a value could not be encoded.
    public static let encodingFailed = Code("encodingFailed")
    /// A Foundation `Predicate` threw while it was evaluated.
    public static let predicateFailed = Code("predicateFailed")
    /// A store cannot serve the request (it is closed, or in a failed state).
    public static let storeUnavailable = Code("storeUnavailable")
    /// A format string, a triplet query or a sort-key string is malformed: the message
    /// says what was expected, at which character offset, and shows the text around it.
    public static let invalidFormat = Code("invalidFormat")
    /// A format string's substitutions (`%@`, `%K`, `%d`, …) and its arguments differ in
    /// number.
    public static let argumentCount = Code("argumentCount")
    /// A write expected a store version that has moved on (optimistic concurrency).
    public static let conflict = Code("conflict")
    /// A write was attempted where nothing can be written: a request set over a plain
    /// array, or a store opened read-only.
    public static let readOnly = Code("readOnly")
    /// The query's conditions do not determine a new record's fields (`firstOrInsert`).
    public static let tooComplex = Code("tooComplex")
    /// A record could not be built from field values, or a stored record could not be
    /// decoded as the element type (its type changed in a way old records cannot follow,
    /// such as a new non-optional field).
    public static let decodingFailed = Code("decodingFailed")
    /// An update changed a record's id.
    public static let invalidUpdate = Code("invalidUpdate")
    /// A log file is damaged or is not a RequestSet log; the message names the offset.
    public static let corruptLog = Code("corruptLog")
    /// Another writer holds the log's write lock; or a write through a ``RecordGraph`` was
    /// started on a thread already inside one (from a closure the first write runs).
    public static let locked = Code("locked")
    /// The operating system refused a file operation (the message names it and the path).
    public static let ioFailure = Code("ioFailure")
    /// A write would give two records the same value of a unique index, or a unique index
    /// cannot be created over records that share a value.
    public static let uniqueViolation = Code("uniqueViolation")
    /// An index cannot be created: the key path names no stored field, or the store holds
    /// an index on that key already with another `unique` setting.
    public static let invalidIndex = Code("invalidIndex")
    /// An earlier failure left the store unusable (a failed fsync); reopen it.
    public static let storeFailed = Code("storeFailed")
    /// A filter read uses a format-string variable (`$name`) that was given no value: bind
    /// it with ``RequestFilter/substituting(_:)`` or the `variables:` argument of
    /// `filter(_:_:variables:mode:)`. The message names the variable.
    public static let unboundVariable = Code("unboundVariable")
    /// The store was closed with `close()`: it reads and writes nothing any more. Request
    /// sets evaluated before it closed keep their records; open the store again to go on.
    public static let closed = Code("closed")
    /// A log's records were written with another record type: a frame is intact (its
    /// checksum holds) but its value does not decode as the store's `Element`. The message
    /// names the field and both types; no recovery mode applies, because nothing is damaged.
    public static let schemaMismatch = Code("schemaMismatch")
    /// A file a store reads was changed underneath it by someone else (another process
    /// truncated or replaced it): the bytes a snapshot refers to are gone. Reopen the store.
    public static let fileChanged = Code("fileChanged")
    /// A store's options are out of range (a ratio outside 0...1, a negative size); the
    /// message names the option, its value and the allowed range.
    public static let invalidOptions = Code("invalidOptions")
    /// A path is not usable for a store: empty, holding a NUL byte, or naming something that
    /// is not a regular file (a directory, a device, a FIFO, a socket).
    public static let invalidPath = Code("invalidPath")
    /// A window's count is out of range: a negative `limit`, `offset`, `first(_:)` or
    /// `last(_:)`, or a `stream(batchSize:)` below 1. The set is built, and evaluating it
    /// (or ``RequestSet/validated()``) throws this; the message names the call and value.
    public static let invalidWindow = Code("invalidWindow")
    /// An integer aggregate does not fit its type: `sum(\.count)` or `sum("count")` past
    /// `Int.max` (or below `Int.min`). Sum a `Double` key path, or narrow the set.
    public static let overflow = Code("overflow")

    /// A read as of a past version or time asked for one the store does not keep: older
    /// than the oldest commit compaction left (see ``LogStoreOptions/keepHistory``), newer
    /// than the store, or on a store that keeps no history (only ``LogStore`` does). The
    /// message names the readable range; pick a version from ``LogStore/history()``.
    public static let versionUnavailable = Code("versionUnavailable")

    /// A set made with ``RequestSet/requiringPushdown()`` has a condition, sort key or
    /// stage its store cannot run itself. The message names it and why; rewrite it with
    /// string keys the store runs, or drop `requiringPushdown()` to run it in process.
    public static let notPushedDown = Code("notPushedDown")

    /// A database server refused the connection, went away mid-query, did not answer
    /// within the store's timeouts (a PostgreSQL statement past `statementTimeout`, a
    /// server that froze), or a database file could not be opened. Nothing was
    /// half-written; check the connection settings (the message never shows a password,
    /// and names the timeout to raise) and retry.
    public static let connectionFailed = Code("connectionFailed")

    /// A relation is declared wrongly or used where it cannot be: a relation to a type the
    /// ``RecordGraph`` holds no store of, two relations of one name, a relation named like
    /// a key of its type, a foreign key that is not a stored property, `.nullify` on a
    /// required key, a cycle of `.cascade` rules, a key through a to-many used where one
    /// value is needed (a filter without a quantifier, a sort), or a key that walks more
    /// than 16 relations. The message names the relation or key and the fix.
    public static let invalidRelation = Code("invalidRelation")
    /// A write through a ``RecordGraph`` would store a to-one foreign key that names no
    /// record of the related type (and the relation does not allow it). The message names
    /// the relation, the record and the missing id; nothing was written.
    public static let danglingReference = Code("danglingReference")
    /// A delete through a ``RecordGraph`` was refused by a `.deny` rule: records still point
    /// at the record. The message names the relation and how many; nothing was deleted.
    public static let deleteDenied = Code("deleteDenied")

    /// A schema migration could not run: one of its steps threw, met a record it cannot
    /// change (a rename onto a key the record already holds, a value a conversion refuses),
    /// or the ``Migrator`` is malformed (two migrations with one name, a step on `id`).
    /// The message names the migration and, where one caused it, the record and the key;
    /// the store is exactly as it was before the migration started.
    public static let migrationFailed = Code("migrationFailed")

    /// A store holds data that registered migrations have not brought up to date yet, and
    /// this open or call cannot run them (the store is read-only, or its migrations run
    /// only when asked). The message names the first pending migration and how to run it:
    /// open the store for writing, call `migrate()`, or run `requestset migrate`.
    public static let migrationPending = Code("migrationPending")

    /// A raw SQL statement (`SQLiteStore.records(sql:arguments:)`, `rows(sql:arguments:)`
    /// and their PostgreSQL counterparts) is not one read-only query the database accepts:
    /// a syntax error, an unknown table or column, two statements, a statement that is not
    /// a `SELECT`, `WITH` or `VALUES` query, result columns that do not fit (no `body`
    /// column for records, two columns of one name, a value of a type records cannot hold).
    /// The message quotes the database's own words and says what to change; nothing ran.
    public static let invalidSQL = Code("invalidSQL")

    /// An upsert cannot run as asked: a record's key value is nil, two records of the batch
    /// share a key value, or more than one stored record has a record's key value (the key
    /// has no unique index). The message names the record, the key and the fix; nothing
    /// was written.
    public static let invalidUpsert = Code("invalidUpsert")

    /// A keyset page cannot be built as asked: ``RequestSet/page(after:size:)`` was called
    /// after a window, `reversed()` or `distinct`, or on a set sorted by a key that walks a
    /// relation. The message says what to write instead.
    public static let invalidPage = Code("invalidPage")

    /// A set operation (``RequestSet/union(_:)``, ``RequestSet/intersection(_:)``,
    /// ``RequestSet/subtracting(_:)``) combines sets that do not read the same store (or
    /// reads an array, or a store's past). Combine sets made from one store.
    public static let mismatchedSets = Code("mismatchedSets")

    /// A sort cannot run as asked: ``RequestSet/sortBy(_:)-(RequestRanking)`` sorts by
    /// relevance, but the set has no full-text search joined with AND to score. Add
    /// `filter(matching:)` before it, or sort by a key.
    public static let invalidSort = Code("invalidSort")

    /// The code's name, as in `unknownKey`.
    public var description: String { _name }
  }

  /// What kind of failure this is.
  public var code: Code
  /// What went wrong and how to fix it.
  public var message: String
  /// The error that caused this one, if any.
  public var underlying: (any Error)?

  /// Creates an error. Stores written outside the package use this to report their own
  /// failures in the same shape.
  ///
  /// ```swift
  /// throw RequestSetError(.storeUnavailable, "The store is closed. Open a new one.")
  /// ```
  public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
    self.code = code
    self.message = message
    self.underlying = underlying
  }

  /// `code: message`, followed by the underlying error when there is one.
  public var description: String {
    var text = "RequestSetError.\(code): \(message)"
    if let underlying { text += " (underlying error: \(underlying))" }
    return text
  }
}

extension RequestSetError {
  static func unknownKey(_ key: String, type: Any.Type, known: [String]) -> RequestSetError {
    let list = known.isEmpty ? "none (there are no records to learn keys from)" : known.joined(separator: ", ")
    // A key through a relation, on a set that was not made by a graph.
    if let related = type as? any RelatedRecord.Type, let relation = _relationNamed(key, related) {
      return RequestSetError(
        .unknownKey,
        "\"\(key)\" walks the relation \(type).\(relation), which only a set made by a RecordGraph can follow. "
          + "Make the set with graph.records(\(type).self), where graph holds a store of each related type.")
    }
    if let dot = key.lastIndex(of: "."), key[key.index(after: dot)...].hasPrefix("@") {
      // `born.@yeer`: a modifier that is no date part.
      return RequestSetError(
        .unknownKey,
        "Unknown date part \"\(key[key.index(after: dot)...])\" in \"\(key)\" for \(type). "
          + "Use one of \(RequestDatePart._names) after a Date field's key, as in \"\(key[..<dot]).@year\".")
    }
    return RequestSetError(
      .unknownKey,
      "Unknown key \"\(key)\" for \(type). Known keys: \(list). "
        + "Use one of them, or a dotted path into a nested value.")
  }

  static func typeMismatch(
    key: String, holds kinds: _KindSet, value: FieldValue, type: Any.Type
  ) -> RequestSetError {
    let held = kinds.nonNull.map(\.description).joined(separator: " or ")
    return RequestSetError(
      .typeMismatch,
      "Key \"\(key)\" of \(type) holds \(held) values, so it can never match \(value), "
        + "which is \(_withArticle(value._kind.description)). "
        + "Pass \(_withArticle(kinds.nonNull.first?.description ?? "value")) or nil.")
  }

  /// A window count a caller passed that is out of range; `written` is the call as
  /// written, `limit(-1)`.
  static func invalidWindow(_ written: String, _ value: Int, allowed: String) -> RequestSetError {
    RequestSetError(
      .invalidWindow,
      "\(written) needs \(allowed), but \(value) was given. A count from a request or a user must be "
        + "checked first: reject it, or clamp it (max(0, n)) before building the set.")
  }

  /// An integer sum that passed the bounds of its type.
  static func sumOverflow(_ what: String, _ type: Any.Type) -> RequestSetError {
    RequestSetError(
      .overflow,
      "The sum of \(what) does not fit in \(type) (it passes \(type)'s largest or smallest value). "
        + "Sum a Double key path or convert to Double first, or narrow the set.")
  }

  /// An operator that cannot apply to what a key holds: a text operator on a number, `ANY`
  /// on a value that is not an array.
  static func operatorMismatch(
    key: String, holds kinds: _KindSet, type: Any.Type, reason: String, fix: String
  ) -> RequestSetError {
    let held = kinds.nonNull.map(\.description).joined(separator: " or ")
    return RequestSetError(
      .typeMismatch,
      "Key \"\(key)\" of \(type) holds \(held) values, but \(reason), so it can never match. \(fix).")
  }
}

/// The relation of `type` that `key` starts with, if any.
private func _relationNamed<R: RelatedRecord>(_ key: String, _ type: R.Type) -> String? {
  let first = String(key.prefix { $0 != "." })
  return R.relations.contains { $0.relationName == first } ? first : nil
}
