#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import Synchronization
import RequestSet
import _RequestSetSQL

/// SQLite's "copy the bytes now" destructor, which the C header spells as a cast macro that
/// Swift does not import.
let _sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection with RequestSet's functions and collations registered.
///
/// @unchecked Sendable: a connection is used by one thread at a time and only under a lock:
/// the writer inside `SQLiteStore`'s `Mutex`, a reader's inside its reader's `Mutex`, idle
/// ones inside the pool's `Mutex`. It is handed from one lock to another, never shared.
final class _SQLiteConnection: @unchecked Sendable {
  let handle: OpaquePointer
  let path: String
  private var cache: [String: OpaquePointer] = [:]
  /// What readers last found of each table (see `_SQLiteTableChecks`), by table name.
  var tableChecks: [String: _SQLiteTableChecks] = [:]

  /// Opens (creating when `create`) the file at `path` in WAL mode with a busy timeout.
  init(path: String, create: Bool, busyTimeout: Int32 = 5000) throws {
    var db: OpaquePointer?
    let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      if let db { sqlite3_close_v2(db) }
      throw _sqliteError(rc, message, path: path, doing: "open")
    }
    handle = db
    self.path = path
    sqlite3_extended_result_codes(db, 1)
    sqlite3_busy_timeout(db, busyTimeout)
    // A cancelled async call stops whatever statement of it runs next, too. The stop
    // handler's `sqlite3_interrupt` (see `StoreThreads.whenCancelled`) reaches only the
    // statements running when it is called: one that comes between two statements of a
    // write (after BEGIN IMMEDIATE, before the UPDATE steps) is a no-op, and the UPDATE
    // then ran to its end. SQLite calls this every 1,000 instructions of a statement, on
    // the statement's thread, where the call's token is bound; `isCancelled` costs one
    // relaxed atomic load while no call is cancelled.
    sqlite3_progress_handler(db, 1_000, { _ in StoreThreads.isCancelled ? 1 : 0 }, nil)
    _registerFunctions(db)
  }

  deinit {
    for statement in cache.values { sqlite3_finalize(statement) }
    sqlite3_close_v2(handle)
  }

  /// Runs SQL that returns no rows (several statements are allowed).
  func execute(_ sql: String, doing: String) throws {
    var message: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(handle, sql, nil, nil, &message)
    if rc != SQLITE_OK {
      let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
      sqlite3_free(message)
      throw _sqliteError(rc, text, path: path, doing: doing)
    }
  }

  /// The main database's data version (`SQLITE_FCNTL_DATA_VERSION`): it changes with every
  /// change to the file, whether this connection made it or another (in any process) did;
  /// inside a read transaction it is the version of the snapshot read. Nil when the file
  /// control fails.
  var dataVersion: UInt32? {
    var version: UInt32 = 0
    return sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK ? version : nil
  }

  /// A prepared statement kept for the connection's life (for the fixed write statements).
  func cached(_ sql: String) throws -> _SQLiteStatement {
    if let statement = cache[sql] {
      sqlite3_reset(statement)
      sqlite3_clear_bindings(statement)
      return _SQLiteStatement(statement, self, owned: false)
    }
    let statement = try _prepare(sql)
    cache[sql] = statement
    return _SQLiteStatement(statement, self, owned: false)
  }

  /// A statement finalized when the returned value is released.
  func prepare(_ sql: String) throws -> _SQLiteStatement {
    _SQLiteStatement(try _prepare(sql), self, owned: true)
  }

  /// Called with each statement's SQL before it is prepared: tests count the statements a
  /// query runs (a relation through stores in one file runs one). Empty outside tests.
  ///
  /// A list, each test adding its own hook and removing it (``_watchStatements(_:during:)``),
  /// so that two suites watching at once never replace or clear each other's hook (as
  /// PostgreSQL's one-slot hook once did, see `_PGConnection._beforeSend`).
  static let _willPrepare = Mutex<[_SQLiteHook]>([])

  private static func _noteStatement(_ sql: String) {
    for hook in _willPrepare.withLock({ $0 }) { hook.body(sql) }
  }

  /// Runs `body` with `hook` called with each statement any connection prepares meanwhile
  /// (beside other tests' hooks), and removes it after.
  ///
  /// ```swift
  /// try _SQLiteConnection._watchStatements({ sql in seen.add(sql) }) { try set.fetch() }
  /// ```
  static func _watchStatements<T>(_ hook: @escaping @Sendable (String) -> Void, during body: () throws -> T) rethrows -> T {
    let added = _SQLiteHook(hook)
    _willPrepare.withLock { $0.append(added) }
    defer { _willPrepare.withLock { $0.removeAll { $0 === added } } }
    return try body()
  }

  private func _prepare(_ sql: String) throws -> OpaquePointer {
    Self._noteStatement(sql)
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else {
      throw _sqliteError(rc, String(cString: sqlite3_errmsg(handle)), path: path, doing: "prepare a statement")
    }
    return statement
  }

  /// How a statement is built: as translated (`opaque` false), or with its filter as one
  /// `rs_filter` call (see `_SQLiteTranslation.whereClause(_:nonPlain:opaque:)`).
  typealias Build = (_ opaque: Bool) throws -> _SQLiteTranslation

  /// Prepares the statement `build(false)` makes; when SQLite refuses it for one of its
  /// limits (an expression deeper than 1000, more nested parentheses and calls than its
  /// parser's stack holds, more variables or a longer statement than it allows), prepares
  /// `build(true)` instead, whose filter is one `rs_filter` call with one variable, and
  /// which answers the same rows. Any other failure throws.
  ///
  /// ```swift
  /// let (statement, t) = try c.prepare { try reader.statement(query, counting: true, opaque: $0) }
  /// try statement.bind(t.bindings)
  /// ```
  /// - Returns: The prepared statement and the translation it was prepared from (bind its
  ///   bindings).
  /// - Throws: `RequestSetError` for a statement SQLite refuses either way.
  func prepare(_ build: Build) throws -> (statement: _SQLiteStatement, translation: _SQLiteTranslation) {
    let translated = try build(false)
    Self._noteStatement(translated.sql)
    var pointer: OpaquePointer?
    let rc = sqlite3_prepare_v2(handle, translated.sql, -1, &pointer, nil)
    if rc == SQLITE_OK, let pointer { return (_SQLiteStatement(pointer, self, owned: true), translated) }
    let refusal = error(rc, doing: "prepare a statement")
    let primary = rc & 0xff
    guard primary == SQLITE_ERROR || primary == SQLITE_TOOBIG || primary == SQLITE_RANGE else { throw refusal }
    let opaque = try build(true)
    guard opaque.sql != translated.sql else { throw refusal }
    return (try prepare(opaque.sql), opaque)
  }

  /// The last error of this connection as a `RequestSetError`.
  func error(_ rc: Int32, doing: String) -> RequestSetError {
    _sqliteError(rc, String(cString: sqlite3_errmsg(handle)), path: path, doing: doing)
  }

  /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws.
  func writeTransaction<T>(_ body: () throws -> T) throws -> T {
    try execute("BEGIN IMMEDIATE", doing: "start a write transaction")
    do {
      // An async call cancelled meanwhile stops the statement running (an UPDATE through
      // a query over many rows), and is checked once more before COMMIT, the last moment
      // its changes can still be undone: a cancelled write writes nothing.
      nonisolated(unsafe) let interruptible = handle  // sqlite3_interrupt is safe from any thread
      let result = try StoreThreads.whenCancelled({ sqlite3_interrupt(interruptible) }) { try body() }
      if StoreThreads.isCancelled { throw CancellationError() }
      try execute("COMMIT", doing: "commit")
      return result
    } catch {
      _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
      throw error
    }
  }
}

/// A value bound to a statement parameter.
enum _SQLiteBinding: CustomStringConvertible {
  case null
  case int(Int64)
  case double(Double)
  case text(String)
  /// The condition `rs_cond` runs; `wholeBody` when its argument is the whole body (the
  /// key could not be spelled as a SQLite JSON path, so Swift reads it).
  case condition(StoreCondition, wholeBody: Bool)
  /// The string key `rs_field` reads in a row's body, bound as a pointer so that no key
  /// (a quote, a backslash, U+0000) ever needs spelling in SQL.
  case key(String)
  /// The whole filter `rs_filter` runs on a row's decoded body.
  case filter(StoreFilter)

  var description: String {
    switch self {
    case .null: return "NULL"
    case .int(let i): return String(i)
    case .double(let d): return String(d)
    case .text(let s): return s
    case .condition(let c, _): return "rs_cond(\(c))"
    case .key(let key): return "rs_field(\(key.debugDescription))"
    case .filter(let f): return "rs_filter(\(f))"
    }
  }
}

/// A prepared statement; `owned` ones are finalized when released.
final class _SQLiteStatement {
  let pointer: OpaquePointer
  let connection: _SQLiteConnection
  let owned: Bool

  init(_ pointer: OpaquePointer, _ connection: _SQLiteConnection, owned: Bool) {
    self.pointer = pointer
    self.connection = connection
    self.owned = owned
  }

  deinit {
    if owned { sqlite3_finalize(pointer) } else { sqlite3_reset(pointer) }
  }

  func bind(_ values: [_SQLiteBinding]) throws {
    for (i, value) in values.enumerated() { try bind(value, at: Int32(i + 1)) }
  }

  func bind(_ value: _SQLiteBinding, at index: Int32) throws {
    let rc: Int32
    switch value {
    case .null: rc = sqlite3_bind_null(pointer, index)
    case .int(let i): rc = sqlite3_bind_int64(pointer, index, i)
    case .double(let d): rc = sqlite3_bind_double(pointer, index, d)
    case .text(let s): rc = sqlite3_bind_text(pointer, index, s, -1, _sqliteTransient)
    case .condition(let c, let whole):
      let box = Unmanaged.passRetained(_ConditionBox(c, wholeBody: whole)).toOpaque()
      rc = sqlite3_bind_pointer(pointer, index, box, _conditionPointerType) { raw in
        if let raw { Unmanaged<_ConditionBox>.fromOpaque(raw).release() }
      }
    case .key(let key):
      let box = Unmanaged.passRetained(_KeyBox(key)).toOpaque()
      rc = sqlite3_bind_pointer(pointer, index, box, _keyPointerType) { raw in
        if let raw { Unmanaged<_KeyBox>.fromOpaque(raw).release() }
      }
    case .filter(let filter):
      let box = Unmanaged.passRetained(_FilterBox(filter)).toOpaque()
      rc = sqlite3_bind_pointer(pointer, index, box, _filterPointerType) { raw in
        if let raw { Unmanaged<_FilterBox>.fromOpaque(raw).release() }
      }
    }
    if rc != SQLITE_OK { throw connection.error(rc, doing: "bind a value") }
  }

  /// Steps once: true when a row is ready.
  func step(doing: String) throws -> Bool {
    let rc = sqlite3_step(pointer)
    if rc == SQLITE_ROW { return true }
    if rc == SQLITE_DONE { return false }
    throw connection.error(rc, doing: doing)
  }

  /// Steps to the end, for statements that return no rows.
  func run(doing: String) throws {
    while try step(doing: doing) {}
  }

  func int(_ column: Int32) -> Int64 { sqlite3_column_int64(pointer, column) }

  func double(_ column: Int32) -> Double { sqlite3_column_double(pointer, column) }

  func isNull(_ column: Int32) -> Bool { sqlite3_column_type(pointer, column) == SQLITE_NULL }

  /// Calls `body` with a column's text as UTF-8 bytes where SQLite keeps them, without
  /// copying them into a `String`; the bytes are valid only during the call (until the
  /// next step). NULL reads as no bytes, as ``text(_:)`` reads it as "".
  func withText<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
    guard let bytes = sqlite3_column_text(pointer, column) else {
      return try body(UnsafeRawBufferPointer(start: nil, count: 0))
    }
    let count = Int(sqlite3_column_bytes(pointer, column))
    return try body(UnsafeRawBufferPointer(start: bytes, count: count))
  }

  func text(_ column: Int32) -> String {
    guard let bytes = sqlite3_column_text(pointer, column) else { return "" }
    let count = Int(sqlite3_column_bytes(pointer, column))
    return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  }
}

/// The condition behind a bound `rs_cond` pointer.
final class _ConditionBox {
  let condition: StoreCondition
  let wholeBody: Bool
  init(_ condition: StoreCondition, wholeBody: Bool) {
    self.condition = condition
    self.wholeBody = wholeBody
  }
}

/// The key behind a bound `rs_field` pointer.
final class _KeyBox {
  let key: String
  init(_ key: String) { self.key = key }
}

/// The filter behind a bound `rs_filter` pointer, with each key numbered so that a row's
/// value at a key is read once however many conditions test it.
final class _FilterBox {
  private indirect enum _Node {
    case constant(Bool)
    case condition(StoreCondition, key: Int)
    case search(StoreTextSearch, keys: [Int])
    case and([_Node])
    case or([_Node])
    case not(_Node)
  }

  private let root: _Node
  private let keys: [String]

  /// Recursion follows the filter's depth, which the engine bounds.
  init(_ filter: StoreFilter) {
    var numbers: [String: Int] = [:]
    var keys: [String] = []
    func node(_ filter: StoreFilter) -> _Node {
      switch filter {
      case .constant(let b): return .constant(b)
      case .condition(let c):
        let number = numbers[c.key] ?? keys.count
        if number == keys.count {
          numbers[c.key] = number
          keys.append(c.key)
        }
        return .condition(c, key: number)
      case .search(let s):
        return .search(
          s,
          keys: s.keys.map { key in
            let number = numbers[key] ?? keys.count
            if number == keys.count {
              numbers[key] = number
              keys.append(key)
            }
            return number
          })
      case .and(let terms): return .and(terms.map(node))
      case .or(let terms): return .or(terms.map(node))
      case .not(let inner): return .not(node(inner))
      // Never reached: a filter holding a subquery is always translated, never handed to
      // `rs_filter` (see `_SQLiteTranslation.whereClause`).
      case .subquery: return .constant(false)
      }
    }
    root = node(filter)
    self.keys = keys
  }

  /// Whether a row's decoded body matches the filter, as the engine decides: each
  /// condition reads its key as `rs_cond` does.
  func matches(_ body: FieldValue) -> Bool {
    let values = keys.map { body[path: $0] ?? .null }
    return Self._matches(root, values)
  }

  private static func _matches(_ node: _Node, _ values: [FieldValue]) -> Bool {
    switch node {
    case .constant(let b): return b
    case .condition(let c, let key): return c.matches(values[key])
    case .search(let s, let keys): return s.matches(keys.map { values[$0] })
    case .and(let terms): return terms.allSatisfy { _matches($0, values) }
    case .or(let terms): return terms.contains { _matches($0, values) }
    case .not(let inner): return !_matches(inner, values)
    }
  }
}

/// One group's values for `rs_agg`, kept in SQLite's aggregate context as a retained
/// pointer from the first step until the final call releases it.
final class _AggregateValues {
  var aggregate: StoreSubquery.Aggregate?
  var values: [(seq: Int64, value: FieldValue)] = []

  static let functions: [String: StoreAggregate] = [
    "@sum": .sum, "@avg": .average, "@min": .min, "@max": .max,
  ]

  /// The group's state, made on the first step when `create`; nil when SQLite has no
  /// memory for the slot (or, without `create`, when no step ran).
  static func state(_ context: OpaquePointer, create: Bool) -> _AggregateValues? {
    let size = Int32(MemoryLayout<UnsafeMutableRawPointer?>.size)
    guard let slot = sqlite3_aggregate_context(context, create ? size : 0) else { return nil }
    let pointer = slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    if let raw = pointer.pointee { return Unmanaged<_AggregateValues>.fromOpaque(raw).takeUnretainedValue() }
    guard create else { return nil }
    let made = _AggregateValues()
    pointer.pointee = Unmanaged.passRetained(made).toOpaque()
    return made
  }

  /// The group's state, released from its slot (the final call's).
  static func take(_ context: OpaquePointer) -> _AggregateValues? {
    guard let slot = sqlite3_aggregate_context(context, 0) else { return nil }
    let pointer = slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    guard let raw = pointer.pointee else { return nil }
    pointer.pointee = nil
    return Unmanaged<_AggregateValues>.fromOpaque(raw).takeRetainedValue()
  }
}

/// The type tag of `rs_filter`'s pointer argument (see `_conditionPointerType`).
/// nonisolated(unsafe): written once at load, only ever read.
nonisolated(unsafe) let _filterPointerType: UnsafeMutablePointer<CChar> = strdup("requestset_filter")!

/// The type tag of `rs_field`'s pointer argument (see `_conditionPointerType`).
/// nonisolated(unsafe): written once at load, only ever read.
nonisolated(unsafe) let _keyPointerType: UnsafeMutablePointer<CChar> = strdup("requestset_key")!

/// The type tag of `rs_cond`'s pointer argument. SQLite keeps the pointer and compares
/// with it for the connection's life, so it must never move or be freed.
/// nonisolated(unsafe): written once at load, only ever read.
nonisolated(unsafe) let _conditionPointerType: UnsafeMutablePointer<CChar> = strdup("requestset_condition")!

/// The collations `rs_binary`, `rs_caseInsensitive`, …: they order the JSON text of two
/// values as `StoreSortKey/compare(_:_:)` does, so an ORDER BY through them is the
/// engine's order by construction.
let _collations: [RequestCollation] = RequestCollation.allCases

func _collationName(_ collation: RequestCollation) -> String { "rs_\(collation)" }

/// A SQL function's JSON argument decoded (SQL NULL is `.null`), or nil after reporting to
/// `context` that it does not decode.
private func _decodedArgument(_ value: OpaquePointer?, _ context: OpaquePointer, function: String) -> FieldValue? {
  guard sqlite3_value_type(value) != SQLITE_NULL, let bytes = sqlite3_value_text(value) else { return .null }
  let text = UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value)))
  guard let decoded = try? SQLJSON.decode(utf8: text) else {
    sqlite3_result_error(context, "\(function): a row's JSON does not decode", -1)
    return nil
  }
  return decoded
}

private func _registerFunctions(_ db: OpaquePointer) {
  // rs_words(key, body): the words FTS5 indexes for the value at `key` in the row (see
  // SQLiteStore+TextIndex.swift); the text index's triggers call it.
  sqlite3_create_function_v2(
    db, "rs_words", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
    { context, count, args in
      guard let context, let args, count == 2, let key = sqlite3_value_text(args[0]) else {
        sqlite3_result_error(context, "rs_words needs a key and a row's body", -1)
        return
      }
      guard let body = _decodedArgument(args[1], context, function: "rs_words") else { return }
      let value = body[path: String(cString: key)] ?? .null
      sqlite3_result_text(context, _SQLiteTextTable.indexedText(value), -1, _sqliteTransient)
    }, nil, nil, nil)
  sqlite3_create_function_v2(
    db, "rs_cond", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
    { context, count, args in
      guard let context, let args, count == 2,
        let raw = sqlite3_value_pointer(args[0], _conditionPointerType)
      else {
        sqlite3_result_error(context, "rs_cond needs a condition bound by RequestSet", -1)
        return
      }
      let box = Unmanaged<_ConditionBox>.fromOpaque(raw).takeUnretainedValue()
      guard let decoded = _decodedArgument(args[1], context, function: "rs_cond") else { return }
      let value = box.wholeBody ? (decoded[path: box.condition.key] ?? .null) : decoded
      sqlite3_result_int(context, box.condition.matches(value) ? 1 : 0)
    }, nil, nil, nil)
  // rs_agg(operator, seq, json): the engine's `@sum`, `@avg`, `@min` or `@max`
  // (`StoreSubquery.Aggregate`) over a group's values, each a row's JSON at the key, taken
  // in `seq` (store) order as the engine reads them; the result as JSON text, for `rs_cond`.
  sqlite3_create_function_v2(
    db, "rs_agg", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, nil,
    { context, count, args in
      guard let context, let args, count == 3 else { return }
      guard let state = _AggregateValues.state(context, create: true) else {
        sqlite3_result_error_nomem(context)
        return
      }
      if state.aggregate == nil {
        let name = sqlite3_value_text(args[0]).map { String(cString: $0) } ?? ""
        guard let function = _AggregateValues.functions[name] else {
          sqlite3_result_error(context, "rs_agg needs @sum, @avg, @min or @max", -1)
          return
        }
        state.aggregate = StoreSubquery.Aggregate(function: function, key: "")
      }
      guard let value = _decodedArgument(args[2], context, function: "rs_agg") else { return }
      state.values.append((sqlite3_value_int64(args[1]), value))
    },
    { context in
      guard let context else { return }
      // Final runs once per group, on an error too: the state is released here.
      guard let state = _AggregateValues.take(context), let aggregate = state.aggregate else {
        sqlite3_result_null(context)
        return
      }
      state.values.sort { $0.seq < $1.seq }
      let json = SQLJSON.encode(aggregate.reduce(state.values.map(\.value))).text
      sqlite3_result_text(context, json, Int32(json.utf8.count), _sqliteTransient)
    }, nil)
  // rs_filter(filter, body): the engine's test of a whole filter on the row's decoded body,
  // for a filter SQLite refuses to run as translated (one of its limits).
  sqlite3_create_function_v2(
    db, "rs_filter", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
    { context, count, args in
      guard let context, let args, count == 2, let raw = sqlite3_value_pointer(args[0], _filterPointerType) else {
        sqlite3_result_error(context, "rs_filter needs a filter bound by RequestSet", -1)
        return
      }
      let box = Unmanaged<_FilterBox>.fromOpaque(raw).takeUnretainedValue()
      guard let body = _decodedArgument(args[1], context, function: "rs_filter") else { return }
      sqlite3_result_int(context, box.matches(body) ? 1 : 0)
    }, nil, nil, nil)
  // rs_field(key, body): the JSON text of the value the engine reads at `key` in the row
  // (a tagged object's fields included), or NULL when the key is absent. Sorts read keys
  // through it where a JSON path cannot: a row that is not plain, a key SQLite cannot spell.
  sqlite3_create_function_v2(
    db, "rs_field", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
    { context, count, args in
      guard let context, let args, count == 2, let raw = sqlite3_value_pointer(args[0], _keyPointerType) else {
        sqlite3_result_error(context, "rs_field needs a key bound by RequestSet", -1)
        return
      }
      let key = Unmanaged<_KeyBox>.fromOpaque(raw).takeUnretainedValue().key
      guard sqlite3_value_type(args[1]) != SQLITE_NULL, let bytes = sqlite3_value_text(args[1]) else {
        sqlite3_result_null(context)
        return
      }
      let text = UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(args[1])))
      guard let body = try? SQLJSON.decode(utf8: text) else {
        sqlite3_result_error(context, "rs_field: a row's JSON does not decode", -1)
        return
      }
      guard let value = body[path: key] else {
        sqlite3_result_null(context)
        return
      }
      let json = SQLJSON.encode(value).text
      sqlite3_result_text(context, json, Int32(json.utf8.count), _sqliteTransient)
    }, nil, nil, nil)
  for (i, collation) in _collations.enumerated() {
    sqlite3_create_collation_v2(
      db, _collationName(collation), SQLITE_UTF8, UnsafeMutableRawPointer(bitPattern: i + 1),
      { info, leftCount, left, rightCount, right in
        let index = Int(bitPattern: info) - 1
        let collation = _collations[index]
        func value(_ count: Int32, _ bytes: UnsafeRawPointer?) -> FieldValue {
          guard let bytes else { return .null }
          return (try? SQLJSON.decode(utf8: UnsafeRawBufferPointer(start: bytes, count: Int(count)))) ?? .null
        }
        return Int32(StoreSortKey("", collation: collation).compare(value(leftCount, left), value(rightCount, right)))
      }, nil)
  }
}

/// Maps a SQLite result code to RequestSet's error, with what to do about it.
func _sqliteError(_ rc: Int32, _ message: String, path: String, doing: String) -> RequestSetError {
  let primary = rc & 0xff
  let what = "SQLite could not \(doing) on \(path): \(message) (code \(rc))."
  switch primary {
  case SQLITE_BUSY, SQLITE_LOCKED:
    return RequestSetError(
      .locked,
      what + " Another connection held the database past the busy timeout. Retry, or shorten the other "
        + "process's write transactions.")
  case SQLITE_READONLY:
    return RequestSetError(
      .readOnly, what + " The file or its folder is read-only. Make them writable, or copy the database elsewhere.")
  case SQLITE_NOTADB:
    return RequestSetError(
      .schemaMismatch,
      what + " The file is not a SQLite database. Open a SQLite database, or a path where no file exists yet.")
  case SQLITE_CORRUPT:
    return RequestSetError(
      .storeFailed, what + " The database is damaged. Restore it from a backup, or recover it with sqlite3's .recover.")
  case SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_FULL, SQLITE_PERM:
    return RequestSetError(
      .ioFailure, what + " Check that the folder exists, is writable and that the disk has room.")
  case SQLITE_CONSTRAINT:
    return RequestSetError(.uniqueViolation, what + " Change the value so the index stays unique.")
  default:
    return RequestSetError(.storeFailed, what + " Report it with the statement that failed.")
  }
}

/// A test's statement hook (see `_SQLiteConnection._willPrepare`).
final class _SQLiteHook: Sendable {
  let body: @Sendable (String) -> Void
  init(_ body: @escaping @Sendable (String) -> Void) { self.body = body }
}
