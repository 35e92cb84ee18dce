/// A full-text condition of a ``StoreFilter``: string keys whose words must hold every
/// term of a query, with the engine's tokenizer and test attached, so a store can index
/// exactly the engine's words and run exactly its test.
///
/// The rules (see ``RequestSet/filter(matching:in:mode:)``): text is
/// folded as `[cd]` folds it and split into words of letters, digits and combining marks,
/// each Han, Hiragana, Katakana or Hangul character a word of its own. A record matches
/// when every term appears in one of ``keys``: a term's words one after the other within
/// one field (a String, or one element of an array of strings), a word marked as a prefix
/// matching any word that starts with it (by Unicode scalars).
///
/// A store that indexes ``words(in:)`` for each key and looks the terms up answers the
/// condition exactly: SQLiteStore feeds SQLite FTS5 these words, hex-encoded, so FTS5's
/// own tokenizer changes nothing; PostgresStore writes them as a `tsvector` literal, which no
/// PostgreSQL parser or dictionary reads.
///
/// ```swift
/// // posts.filter(matching: "quick \"brown fox\" jump*", in: ["title", "body"]) reaches a
/// // store as StoreFilter.search with keys ["title", "body"] and terms
/// // [quick], [brown, fox], [jump (prefix)]
/// ```
public struct StoreTextSearch: Sendable, CustomStringConvertible {
  let _condition: _TextSearchCondition

  init(_ condition: _TextSearchCondition) { _condition = condition }

  /// One term of the query: words that must appear one after the other in one field.
  public struct Term: Sendable, Hashable {
    /// The folded words.
    public let words: [String]
    /// For each word, whether it matches every word that starts with it.
    public let prefix: [Bool]
  }

  /// The string keys searched.
  public var keys: [String] { _condition.keys }

  /// The terms, all of which must appear.
  public var terms: [Term] { _condition.query.terms.map { Term(words: $0.words, prefix: $0.prefix) } }

  /// The query as written.
  public var query: String { _condition.query.text }

  /// Whether a record whose values at ``keys`` (in order; nil for an absent key) are
  /// `values` matches, exactly as the in-memory engine decides.
  ///
  /// ```swift
  /// search.matches([.string("The quick brown fox"), .null])
  /// ```
  public func matches(_ values: [FieldValue]) -> Bool { _condition.matches(values) }

  /// The words of a stored value, field by field: one list for a String, one per String
  /// element of an array, none for any other value.
  ///
  /// ```swift
  /// StoreTextSearch.words(in: .string("Café, 東京"))   // [["cafe", "東", "京"]]
  /// ```
  public static func words(in value: FieldValue) -> [[String]] {
    var fields: [[String]] = []
    _textFields(value, into: &fields)
    return fields
  }

  /// `(title, body) MATCHES[fts] "quick fox"`.
  public var description: String { _condition.description }
}

extension StoreQueryReader {
  /// Runs no full-text search: the engine tests each record it reads.
  public func support(for search: StoreTextSearch) -> PushdownSupport {
    .none(reason: "\(Self.self) does not run full-text search")
  }
}
