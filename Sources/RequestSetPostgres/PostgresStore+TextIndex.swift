import RequestSet
import _RequestSetSQL

// Full-text search on PostgreSQL: a `tsvector` column fed the engine's own words.
//
// PostgreSQL's parsers and dictionaries split and fold text by rules of their own, so a
// column filled by `to_tsvector` would disagree with the engine on some records. Instead
// the store computes each record's words as `StoreTextSearch` finds them and writes them
// as a `tsvector` literal (no parser, no dictionary runs), and a search is a `tsquery`
// literal of the engine's query words, bound as one parameter: `words @@ $1::tsquery`,
// with a phrase's words joined by `<->` and a prefix word marked `:*`. A GIN index serves
// it.
//
// Keeping the column current: the store's inserts and saves write a row's words with it;
// a trigger sets `words` to NULL whenever a row's body changes and its words do not, and
// every write transaction of the store fills the NULL words before it commits
// (``PostgresStore/_fillTextWords(_:keys:)``): upserts on a key, writes through a query,
// saves that leave the text as it was, and migrations alike. A row another program inserted or updated keeps
// NULL words until the store's next write; a search reads such rows too and the engine
// rechecks them, so its records stay exact.

/// How a PostgreSQL table's `words` column holds the engine's words, and how a search
/// becomes a `tsquery`.
enum _PGTextWords {
  /// The longest word (in UTF-8 bytes) kept whole: PostgreSQL refuses lexemes of more
  /// than 2,046 bytes. A longer stored word is kept as its first bytes up to this many
  /// (whole scalars) followed by ``truncationMark``, so no query word equals it and a
  /// prefix of up to this many bytes matches it exactly when it starts the word.
  static var longestWord: Int { 2000 }

  /// Follows a truncated word: punctuation, so never part of a query word.
  static var truncationMark: String { "\u{2026}" }

  /// The lexeme of a row whose words have no positions (more than 16,383 positions, or a
  /// word more than 256 times): punctuation, so no query word or prefix matches it. A
  /// phrase, which needs positions, is looked for in such rows by its words alone.
  static var unpositioned: String { "#unpositioned" }

  /// The most terms a search pushed to PostgreSQL may have: its `tsquery` is a tree, and
  /// PostgreSQL's stack depth (2 MB by default) runs out near ten thousand operands.
  static var mostTerms: Int { 256 }

  /// A `tsvector` literal of the words of `values` (a record's values at the index's keys,
  /// in order), or nil when they do not fit in a `tsvector` (more than about 1 MB of
  /// distinct words; the row then keeps NULL words and is rechecked).
  ///
  /// Each field's words take consecutive positions, and one position is skipped between
  /// fields, so a phrase (`<->`) never runs from one field into the next.
  ///
  /// ```swift
  /// _PGTextWords.vector([.string("Quick fox"), .string("fox")])   // "'fox':2,4 'quick':1"
  /// ```
  static func vector(_ values: [FieldValue]) -> String? {
    var positions: [String: [Int]] = [:]
    var order: [String] = []
    var position = 0
    for value in values {
      for field in StoreTextSearch.words(in: value) {
        for word in field {
          position += 1
          let lexeme = stored(word)
          if positions[lexeme] == nil { order.append(lexeme) }
          positions[lexeme, default: []].append(position)
        }
        position += 1
      }
    }
    // PostgreSQL keeps positions up to 16,383 and 256 of them per word, and drops or
    // clamps the rest, which would hide phrases: such a row keeps its words only.
    let positioned = position <= 16_383 && positions.values.allSatisfy { $0.count <= 256 }
    if !positioned { order.append(unpositioned) }
    var text = ""
    var bytes = 0
    for lexeme in order {
      bytes += lexeme.utf8.count
      if !text.isEmpty { text += " " }
      text += quoted(lexeme)
      if positioned, let at = positions[lexeme] {
        text += ":" + at.map(String.init).joined(separator: ",")
      }
    }
    return bytes < 1_000_000 ? text : nil
  }

  /// The lexeme of a stored word: the word, or its truncation (see ``longestWord``).
  static func stored(_ word: String) -> String {
    guard word.utf8.count > longestWord else { return word }
    var kept = String.UnicodeScalarView()
    var bytes = 0
    for scalar in word.unicodeScalars {
      let n = String(scalar).utf8.count
      if bytes + n > longestWord { break }
      kept.append(scalar)
      bytes += n
    }
    return String(kept) + truncationMark
  }

  /// A lexeme quoted for `tsvector` and `tsquery` input: in single quotes, a quote
  /// doubled and a backslash escaped. The engine's words hold neither (they are letters,
  /// digits and marks), but the quoting does not rely on it.
  static func quoted(_ lexeme: String) -> String {
    var out = "'"
    for scalar in lexeme.unicodeScalars {
      if scalar == "'" {
        out += "''"
      } else if scalar == "\\" {
        out += "\\\\"
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return out + "'"
  }

  /// Why a search cannot run in PostgreSQL, or nil: too many terms, or a word longer than
  /// ``longestWord`` bytes. The engine then runs it in process.
  static func problem(_ search: StoreTextSearch) -> String? {
    if search.terms.count > mostTerms {
      return
        "the text query has \(search.terms.count) terms, more than the \(mostTerms) a PostgreSQL tsquery takes here"
    }
    for term in search.terms {
      for word in term.words where word.utf8.count > longestWord {
        return "the text query has a word of more than \(longestWord) bytes, longer than PostgreSQL keeps"
      }
    }
    return nil
  }

  /// Whether the search has a phrase (a term of several words).
  static func hasPhrase(_ search: StoreTextSearch) -> Bool { search.terms.contains { $0.words.count > 1 } }

  /// The `tsquery` literal of a search (see ``problem(_:)`` first): terms joined by `&`; a
  /// phrase's words joined by `<->`, or, in a row without positions, all present; a prefix
  /// word marked `:*`.
  ///
  /// ```swift
  /// // quick "brown fox" jump*
  /// // ('quick') & (('brown' <-> 'fox') | ('brown' & 'fox' & '#unpositioned')) & ('jump':*)
  /// ```
  static func query(_ search: StoreTextSearch) -> String {
    search.terms.map { term in
      let words = zip(term.words, term.prefix).map { quoted($0) + ($1 ? ":*" : "") }
      guard words.count > 1 else { return "(" + words[0] + ")" }
      return "((" + words.joined(separator: " <-> ") + ") | (" + words.joined(separator: " & ") + " & "
        + quoted(unpositioned) + "))"
    }.joined(separator: " & ")
  }
}

extension PostgresStore: _TextIndexedStore {
  /// Creates the store's full-text index on string keys: a `tsvector` column holding each
  /// record's words as the engine finds them, and a GIN index on it. Text searches
  /// (`filter(matching:in:)`) on those keys then run in PostgreSQL as
  /// `words @@ $1::tsquery` (see `explain()`); without the index the engine tests each
  /// record in process. Either way the records are the same.
  ///
  /// ```swift
  /// try store.createTextIndex(["title", "body"])
  /// try RequestSet(store).filter(matching: "quick fox").fetch()
  /// // SELECT body FROM "Post" WHERE (words IS NULL OR words @@ $1::tsquery) … ('quick') & ('fox')
  /// ```
  /// A store has at most one text index; creating the one it has does nothing. The store
  /// writes the words itself on every write it makes (a trigger clears them when a row's
  /// body changes and its words do not); the index definition lives in the database, so
  /// every store opened on the table uses it. A row another program inserts or updates
  /// (leaving the `words` column alone) has no words until this store's next write:
  /// searches read it anyway and check it in process.
  /// - Parameter keys: String keys (dotted for nested fields) of String or `[String]` fields.
  /// - Throws: `RequestSetError` `.invalidIndex` when no key is given, or a text index on
  ///   other keys exists (drop it first with ``dropTextIndex()``); `.closed`,
  ///   `.connectionFailed`.
  /// - Complexity: O(*n*) in the records' text.
  public func createTextIndex(_ keys: [String]) throws {
    guard !keys.isEmpty else {
      throw RequestSetError(
        .invalidIndex, "A text index needs at least one key: createTextIndex(\"title\", \"body\").")
    }
    let gin = try SQLJSON.quoteIdentifier(_indexName("text"))
    let unfilled = try SQLJSON.quoteIdentifier(_indexName("text unfilled"))
    let trigger = try SQLJSON.quoteIdentifier(_indexName("text trigger"))
    try _pool.with { c in
      try _transaction(c) {
        // Serializes with other stores creating the shared trigger function or opening a
        // table (the advisory lock, taken first as opening takes it), then with writers
        // (their metadata row lock).
        try c.execute("SELECT pg_advisory_xact_lock(7256102)")
        try c.execute("SELECT version FROM requestset_tables WHERE name = $1 FOR UPDATE", [_table])
        if let existing = try _textKeys(c) {
          if existing == keys { return }
          throw RequestSetError(
            .invalidIndex,
            "The store already has a text index on \(existing.joined(separator: ", ")), and a store keeps one "
              + "text index. Drop it with dropTextIndex() first, or index all the keys in one.")
        }
        try c.execute(
          """
          CREATE OR REPLACE FUNCTION requestset_clear_words() RETURNS trigger LANGUAGE plpgsql AS \
          $$ BEGIN NEW.words := NULL; RETURN NEW; END $$
          """)
        try c.execute("ALTER TABLE \(_quoted) ADD COLUMN words tsvector")
        try c.execute("CREATE INDEX \(gin) ON \(_quoted) USING gin (words)")
        try c.execute("CREATE INDEX \(unfilled) ON \(_quoted) (seq) WHERE words IS NULL")
        try c.execute(
          """
          CREATE TRIGGER \(trigger) BEFORE UPDATE OF body ON \(_quoted) FOR EACH ROW \
          WHEN (OLD.body IS DISTINCT FROM NEW.body AND OLD.words IS NOT DISTINCT FROM NEW.words) \
          EXECUTE FUNCTION requestset_clear_words()
          """)
        try c.execute(
          "INSERT INTO requestset_text_indexes (name, keys) VALUES ($1, $2)",
          [_table, SQLJSON.encode(.array(keys.map(FieldValue.string))).text])
        try _fillTextWords(c, keys: keys)
      }
      _noteCommit(c)
    }
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

  /// Drops the store's full-text index: its column, GIN index and trigger.
  ///
  /// ```swift
  /// try store.dropTextIndex()   // true
  /// ```
  /// - Returns: Whether there was one.
  /// - Throws: `RequestSetError` `.closed`, `.connectionFailed`.
  @discardableResult
  public func dropTextIndex() throws -> Bool {
    try _pool.with { c in
      let dropped = try _transaction(c) {
        try c.execute("SELECT version FROM requestset_tables WHERE name = $1 FOR UPDATE", [_table])
        guard try _textKeys(c) != nil else { return false }
        try _dropTextIndex(c)
        return true
      }
      _noteCommit(c)
      return dropped
    }
  }

  /// Drops the text index's trigger, column (and with it its indexes) and row, inside a
  /// write transaction on `c`: ``dropTextIndex()`` and a migration that removes a key.
  func _dropTextIndex(_ c: _PGConnection) throws {
    try c.execute(
      "DROP TRIGGER IF EXISTS \(try SQLJSON.quoteIdentifier(_indexName("text trigger"))) ON \(_quoted)")
    try c.execute("ALTER TABLE \(_quoted) DROP COLUMN IF EXISTS words")
    try c.execute("DELETE FROM requestset_text_indexes WHERE name = $1", [_table])
  }

  /// The keys of the store's full-text index, or nil without one.
  ///
  /// ```swift
  /// try store.textIndexKeys()   // ["title", "body"]
  /// ```
  /// - Throws: `RequestSetError` `.closed`, `.connectionFailed`.
  public func textIndexKeys() throws -> [String]? {
    try _pool.with { try _textKeys($0) }
  }

  /// The `words` column's parts of a row's INSERT (and of its `ON CONFLICT` update) inside
  /// a write transaction that found a text index (see `_writingTextKeys`): the record's
  /// words as the 4th parameter; empty parts without a text index.
  func _words(_ record: Element) throws -> (
    column: String, value: String, update: String, parameters: [String?]
  ) {
    guard let keys = _writingTextKeys.withLock({ $0 }) else { return ("", "", "", []) }
    let body = try FieldValue(encoding: record)
    return (
      ", words", ", $4::tsvector", ", words = EXCLUDED.words",
      [_PGTextWords.vector(keys.map { body[path: $0] ?? .null })]
    )
  }

  /// The keys `filter(matching:)` searches: those of the store's text index.
  public var _textIndexKeys: [String]? { try? textIndexKeys() }

  /// The keys of the table's text index as `c` sees them, or nil without one.
  func _textKeys(_ c: _PGConnection) throws -> [String]? {
    let row = try c.execute("SELECT keys FROM requestset_text_indexes WHERE name = $1", [_table])
    guard row.count == 1, let text = row.string(0, 0) else { return nil }
    return try Self._textKeys(fromText: text)
  }

  /// The keys of a `requestset_text_indexes` row's JSON text.
  static func _textKeys(fromText text: String) throws -> [String] {
    guard case .array(let items) = try SQLJSON.decode(text) else { return [] }
    return items.compactMap { if case .string(let s) = $0 { return s } else { return nil } }
  }

  /// Fills the words of every row that has none (new rows, rows whose body changed, rows
  /// another program wrote), inside the write transaction on `c`: read their bodies,
  /// compute the words in Swift, write them back in batches. A row whose words do not fit
  /// in a `tsvector` keeps none, and searches recheck it.
  ///
  /// - Complexity: O(*k*) in the text of the *k* rows without words; a partial index
  ///   finds them.
  func _fillTextWords(_ c: _PGConnection, keys: [String]) throws {
    let rows = try c.execute("SELECT seq, body FROM \(_quoted) WHERE words IS NULL ORDER BY seq")
    guard rows.count > 0 else { return }
    var seqs: [String] = []
    var vectors: [String] = []
    func flush() throws {
      guard !seqs.isEmpty else { return }
      try c.execute(
        """
        UPDATE \(_quoted) AS t SET words = v.words::tsvector FROM unnest($1::bigint[], $2::text[]) AS v(seq, words) \
        WHERE t.seq = v.seq
        """, [_arrayLiteral(seqs), _arrayLiteral(vectors)])
      seqs.removeAll(keepingCapacity: true)
      vectors.removeAll(keepingCapacity: true)
    }
    for row in 0..<rows.count {
      let body = try rows.withBytes(row, 1) { try SQLJSON.decode(utf8: $0) } ?? .null
      guard let vector = _PGTextWords.vector(keys.map { body[path: $0] ?? .null }) else { continue }
      seqs.append(rows.string(row, 0) ?? "0")
      vectors.append(vector)
      if seqs.count == 2000 { try flush() }
    }
    try flush()
  }
}
