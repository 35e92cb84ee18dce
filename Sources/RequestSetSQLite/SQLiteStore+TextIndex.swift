import RequestSet
import _RequestSetSQL

#if canImport(SQLite3)
  import SQLite3
#else
  import CSQLite
#endif

// Full-text search on SQLite: an FTS5 table fed the engine's own words.
//
// FTS5's tokenizers split and fold text by rules of their own (unicode61 keeps CJK runs
// whole, folds diacritics by another table), so a table fed the raw text would disagree
// with the engine on some records. Instead each key's words, as `StoreTextSearch` finds
// them, are hex-encoded (UTF-8) and handed to FTS5's `ascii` tokenizer, which can only
// split them at the spaces put between them: FTS5 then indexes exactly the engine's words,
// a word's hex prefix is its prefix by Unicode scalars, and a query of hex words matches
// exactly the records the engine matches. Elements of an array of strings are separated
// by the word `x`, which no hex word equals, so a phrase never runs from one into the next.
//
// Triggers keep the table current on every write to the store's table (inserts, saves,
// upserts, deletes, writes through a query, raw SQL on a connection of the store), calling
// `rs_words`, which every connection the store opens registers.

/// A store table's FTS5 table: its name and the keys its columns index.
struct _SQLiteTextTable: Sendable {
  let quotedName: String
  let keys: [String]

  /// `<table>_requestset_text`.
  static func name(for table: String) -> String { table + "_requestset_text" }

  /// The column of a key: `k_` and the key's UTF-8 in hex (FTS5 reserves `rank` and
  /// `rowid`, and a key may hold any character).
  static func column(_ key: String) -> String { "k_" + hex(key) }

  /// The key of a column, or nil for a column of another kind.
  static func key(ofColumn column: String) -> String? {
    guard column.hasPrefix("k_") else { return nil }
    var bytes: [UInt8] = []
    var digits = column.utf8.dropFirst(2).makeIterator()
    while let high = digits.next() {
      guard let low = digits.next(), let h = _nibble(high), let l = _nibble(low) else { return nil }
      bytes.append(h << 4 | l)
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The lower-case hex of a string's UTF-8.
  static func hex(_ s: String) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(s.utf8.count * 2)
    for b in s.utf8 {
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The text FTS5 indexes for a stored value: its words in hex, fields apart by `x`.
  static func indexedText(_ value: FieldValue) -> String {
    StoreTextSearch.words(in: value).map { $0.map(hex).joined(separator: " ") }.joined(separator: " x ")
  }

  /// The FTS5 query for a search, or nil when the table lacks one of its keys: terms
  /// joined with AND, each its hex words joined with `+` (one after the other), a prefix
  /// word starred, limited to the search's columns.
  ///
  /// A search on every column of the table has no column filter: FTS5 matches a query in
  /// any column, and a phrase within one column, either way, but a filter makes it read
  /// the column of each position of every candidate row (a quarter of the statement's
  /// work for a two-word search over 100,000 rows).
  ///
  /// ```swift
  /// text.match(search)   // (("717569636b") AND ("666f78")), or {k_7469746c65} : (…) on title alone
  /// ```
  func match(_ search: StoreTextSearch) -> String? {
    guard Set(search.keys).isSubset(of: keys) else { return nil }
    let terms = search.terms.map { term in
      "("
        + zip(term.words, term.prefix).map { "\"\(Self.hex($0))\"" + ($1 ? " *" : "") }.joined(
          separator: " + ") + ")"
    }
    let query = "(" + terms.joined(separator: " AND ") + ")"
    if Set(search.keys) == Set(keys) { return query }
    let columns = search.keys.map(Self.column).joined(separator: " ")
    return "{\(columns)} : " + query
  }

  /// The store table's text table, or nil without one.
  static func find(_ c: _SQLiteConnection, table: String) throws -> _SQLiteTextTable? {
    let name = Self.name(for: table)
    let s = try c.cached("SELECT name FROM pragma_table_info(?)")
    defer { sqlite3_reset(s.pointer) }
    try s.bind([.text(name)])
    var keys: [String] = []
    while try s.step(doing: "read the text index's columns") {
      if let key = key(ofColumn: s.text(0)) { keys.append(key) }
    }
    return keys.isEmpty ? nil : _SQLiteTextTable(quotedName: try SQLJSON.quoteIdentifier(name), keys: keys)
  }
}

private func _nibble(_ c: UInt8) -> UInt8? {
  switch c {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
  default: return nil
  }
}

extension SQLiteStore: _TextIndexedStore {
  /// Creates the store's full-text index on string keys: an FTS5 table holding each
  /// record's words as the engine finds them, kept current by triggers. Text searches
  /// (`filter(matching:in:)`) on those
  /// keys then run as an FTS5 `MATCH` (see `explain()`); without the index SQLite tests
  /// each row with the engine's matcher. Either way the records are the same.
  ///
  /// ```swift
  /// try store.createTextIndex(["title", "body"])
  /// // CREATE VIRTUAL TABLE "Post_requestset_text" USING fts5(k_7469746c65, k_626f6479, tokenize='ascii')
  /// ```
  /// A store has at most one text index; creating the one it has does nothing. Its
  /// triggers call `rs_words`, a function the store registers on its connections: a
  /// program that writes to the table through another SQLite connection fails with
  /// "no such function: rs_words" unless it drops the index first.
  /// - Parameter keys: String keys (dotted for nested fields) of String or `[String]` fields.
  /// - Throws: `RequestSetError` `.invalidIndex` when no key is given, or a text index on
  ///   other keys exists (drop it first with ``dropTextIndex()``); `.closed`.
  /// - Complexity: O(*n*) in the records' text.
  public func createTextIndex(_ keys: [String]) throws {
    guard !keys.isEmpty else {
      throw RequestSetError(
        .invalidIndex, "A text index needs at least one key: createTextIndex(\"title\", \"body\").")
    }
    try _write { c in
      if let existing = try _SQLiteTextTable.find(c, table: table) {
        if existing.keys == keys { return }
        throw RequestSetError(
          .invalidIndex,
          "The store already has a text index on \(existing.keys.joined(separator: ", ")), and a store keeps one "
            + "text index. Drop it with dropTextIndex() first, or index all the keys in one.")
      }
      try Self._createTextTable(c, table: table, quotedTable: _quotedTable, keys: keys)
    }
  }

  /// Creates `table`'s FTS5 table on `keys`, filled from the rows, and the triggers that keep
  /// it current: ``createTextIndex(_:)-([String])`` and a migration that moves its keys.
  static func _createTextTable(_ c: _SQLiteConnection, table: String, quotedTable: String, keys: [String])
    throws
  {
    let name = _SQLiteTextTable.name(for: table)
    let quoted = try SQLJSON.quoteIdentifier(name)
    let columns = keys.map(_SQLiteTextTable.column)
    let words = try keys.map { "rs_words(\(try SQLJSON.quoteLiteral($0)), new.body)" }
    let trigger = { (suffix: String) in try SQLJSON.quoteIdentifier(name + suffix) }
    try c.execute(
      """
      CREATE VIRTUAL TABLE \(quoted) USING fts5(\(columns.joined(separator: ", ")), tokenize='ascii');
      INSERT INTO \(quoted)(rowid, \(columns.joined(separator: ", "))) SELECT seq, \
      \(words.map { $0.replacingOccurrences(of: "new.body", with: "body") }.joined(separator: ", ")) FROM \(quotedTable);
      CREATE TRIGGER \(try trigger("_insert")) AFTER INSERT ON \(quotedTable) BEGIN
        INSERT INTO \(quoted)(rowid, \(columns.joined(separator: ", "))) VALUES (new.seq, \(words.joined(separator: ", ")));
      END;
      CREATE TRIGGER \(try trigger("_delete")) AFTER DELETE ON \(quotedTable) BEGIN
        DELETE FROM \(quoted) WHERE rowid = old.seq;
      END;
      CREATE TRIGGER \(try trigger("_update")) AFTER UPDATE ON \(quotedTable) BEGIN
        DELETE FROM \(quoted) WHERE rowid = old.seq;
        INSERT INTO \(quoted)(rowid, \(columns.joined(separator: ", "))) VALUES (new.seq, \(words.joined(separator: ", ")));
      END;
      """, doing: "create the text index on \(keys.joined(separator: ", "))")
  }

  /// Creates the store's full-text index: the variadic form of
  /// ``createTextIndex(_:)-([String])``.
  ///
  /// ```swift
  /// try store.createTextIndex("title", "body")
  /// ```
  /// - Throws: What ``createTextIndex(_:)-([String])`` throws.
  public func createTextIndex(_ first: String, _ more: String...) throws {
    try createTextIndex([first] + more)
  }

  /// Drops the store's full-text index (its FTS5 table and triggers).
  ///
  /// ```swift
  /// try store.dropTextIndex()   // true
  /// ```
  /// - Returns: Whether there was one.
  /// - Throws: `RequestSetError` `.closed`.
  @discardableResult
  public func dropTextIndex() throws -> Bool {
    try _write { c in
      guard try _SQLiteTextTable.find(c, table: table) != nil else { return false }
      try Self._dropTextTable(c, table: table)
      return true
    }
  }

  /// Drops `table`'s FTS5 table and its triggers: ``dropTextIndex()`` and a migration that
  /// moves or removes its keys.
  static func _dropTextTable(_ c: _SQLiteConnection, table: String) throws {
    let name = _SQLiteTextTable.name(for: table)
    try c.execute(
      """
      DROP TRIGGER IF EXISTS \(try SQLJSON.quoteIdentifier(name + "_insert"));
      DROP TRIGGER IF EXISTS \(try SQLJSON.quoteIdentifier(name + "_delete"));
      DROP TRIGGER IF EXISTS \(try SQLJSON.quoteIdentifier(name + "_update"));
      DROP TABLE \(try SQLJSON.quoteIdentifier(name));
      """, doing: "drop the text index")
  }

  /// The keys of the store's full-text index, or nil without one.
  ///
  /// ```swift
  /// try store.textIndexKeys()   // ["title", "body"]
  /// ```
  /// - Throws: `RequestSetError` `.closed`.
  public func textIndexKeys() throws -> [String]? {
    if _writer.withLock({ $0 == nil }) { throw _closed() }
    // A pooled reader's connection: no write transaction, so no wait for a writer.
    let c = try _pool.take()
    defer { _pool.give(c) }
    return try _SQLiteTextTable.find(c, table: table)?.keys
  }

  /// The keys `filter(matching:)` searches: those of the store's text index.
  public var _textIndexKeys: [String]? { try? textIndexKeys() }
}
