extension RequestSet {
  /// Keeps the records whose text at `keys` matches a full-text query.
  ///
  /// The query's words are compared as words, not as substrings, by these rules, the same
  /// on every store:
  /// - Text is split into words at every character that is not a letter, a digit or a
  ///   combining mark (Unicode general categories L, N, M), and folded as `[cd]` folds it:
  ///   "Café" matches "cafe", "ЁЛКА" matches "елка".
  /// - Each Han, Hiragana, Katakana or Hangul character is a word of its own, so a CJK
  ///   query word (`東京`) matches those characters one after the other.
  /// - Every query term must match (AND), in any of the keys. Terms are separated by white
  ///   space; `"quoted words"` is one term matching the words one after the other, within
  ///   one key; `prefix*` matches words that start with the prefix; a term that splits into
  ///   several words (`e-mail`) matches them one after the other.
  /// - An unclosed quote runs to the end of the query. A query with no word at all (empty,
  ///   or only punctuation) makes evaluation throw `.invalidFormat`.
  /// - A String field is searched; an array of strings is searched element by element (a
  ///   phrase does not run from one element into the next); other values hold no words.
  ///
  /// ```swift
  /// let posts = RequestSet(store)
  /// try posts.filter(matching: "quick \"brown fox\" jump*", in: ["title", "body"]).fetch()
  /// // explain(): stage 1: text index lookup on title, body (…)
  /// ```
  /// On a store with a text index on the keys (``MemoryStore/createTextIndex(_:)-([String])``
  /// and the other stores' `createTextIndex`) the index finds the matches; without one,
  /// each record's text is read and split. Either way the records are the same.
  ///
  /// - Parameters:
  ///   - query: The words to search for.
  ///   - keys: The string keys to search; a phrase must lie within one of them.
  ///   - mode: How the new filter joins the filters before it.
  /// - Returns: A new set; the receiver is unchanged.
  /// - Complexity: O(1) to build. Without a text index, evaluation reads and splits the
  ///   text of every record the other filters keep.
  public func filter(matching query: String, in keys: [String], mode: RequestFilterMode = .and) -> RequestSet
  {
    filter(.matching(query, in: keys), mode: mode)
  }

  /// Keeps the records whose text at `keys` matches a full-text query: the variadic form
  /// of ``filter(matching:in:mode:)``.
  ///
  /// ```swift
  /// posts.filter(matching: "café", in: "title", "body")
  /// ```
  /// - Parameters:
  ///   - query: The words to search for.
  ///   - first: The first key to search.
  ///   - more: More keys.
  /// - Returns: A new set; the receiver is unchanged.
  public func filter(matching query: String, in first: String, _ more: String...) -> RequestSet {
    filter(matching: query, in: [first] + more)
  }

  /// Keeps the records whose text at the fields `keyPaths` name matches a full-text query
  /// (see ``filter(matching:in:mode:)`` for the rules).
  ///
  /// ```swift
  /// posts.filter(matching: "quick fox", in: \.title, \.body)
  /// ```
  /// - Parameters:
  ///   - query: The words to search for.
  ///   - keyPaths: Stored properties holding text.
  /// - Returns: A new set; evaluating it throws `.invalidIndex` when a key path is not a
  ///   chain of stored properties.
  public func filter(matching query: String, in keyPaths: PartialKeyPath<Element>...) -> RequestSet {
    filter(.matching(query, in: keyPaths))
  }

  /// Keeps the records whose text matches a full-text query in the keys of the store's
  /// text index (see ``filter(matching:in:mode:)`` for the rules).
  ///
  /// ```swift
  /// try store.createTextIndex("title", "body")
  /// try RequestSet(store).filter(matching: "quick fox").fetch()
  /// ```
  /// The keys are those of the store's text index when the filter is written. Over a
  /// store with no text index, or an array, evaluating the set throws `.invalidIndex`:
  /// create a text index, or name the keys with `filter(matching:in:)`.
  ///
  /// - Parameters:
  ///   - query: The words to search for.
  ///   - mode: How the new filter joins the filters before it.
  /// - Returns: A new set; the receiver is unchanged.
  public func filter(matching query: String, mode: RequestFilterMode = .and) -> RequestSet {
    let keys = (_source.store as? any _TextIndexedStore)?._textIndexKeys ?? []
    return filter(RequestFilter(_node: _TextSearchCondition.node(query, keys: keys)), mode: mode)
  }
}

extension RequestFilter {
  /// A full-text condition, to combine with other filters (see
  /// ``RequestSet/filter(matching:in:mode:)`` for the rules).
  ///
  /// ```swift
  /// posts.filter(.matching("swift", in: ["title"]) || \.pinned == true)
  /// ```
  /// - Parameters:
  ///   - query: The words to search for.
  ///   - keys: The string keys to search.
  /// - Returns: The condition; evaluating it throws `.invalidFormat` when the query has no
  ///   word.
  public static func matching(_ query: String, in keys: [String]) -> RequestFilter {
    RequestFilter(_node: _TextSearchCondition.node(query, keys: keys))
  }

  /// A full-text condition on the fields key paths name.
  ///
  /// ```swift
  /// posts.filter(.matching("swift", in: [\.title, \.body]) || \.pinned == true)
  /// ```
  /// - Parameters:
  ///   - query: The words to search for.
  ///   - keyPaths: Stored properties holding text.
  /// - Returns: The condition; evaluating it throws `.invalidIndex` when a key path is not
  ///   a chain of stored properties.
  public static func matching(_ query: String, in keyPaths: [PartialKeyPath<Element>]) -> RequestFilter {
    do {
      return .matching(query, in: try keyPaths.map { try _textKey($0, root: Element.self) })
    } catch let error as RequestSetError {
      return RequestFilter(_node: .invalid(error))
    } catch {
      return RequestFilter(_node: .invalid(RequestSetError(.invalidIndex, "\(error)")))
    }
  }
}

/// The stored field a key path names, for text search and text indexes (as `_indexKey`
/// finds it for a typed key path).
func _textKey(_ keyPath: AnyKeyPath, root: Any.Type) throws -> String {
  let named = _storedFieldKey(keyPath, root: root)
  let undecided = named.map { _SchemaProbe.confirms(keyPath, key: $0, root: root) == nil } ?? false
  guard let key = undecided ? named : _fieldKey(keyPath, root: root) else {
    throw RequestSetError(
      .invalidIndex,
      "\(keyPath) is not a chain of stored properties, so it names no stored text field. "
        + "Name the field's Codable key instead: filter(matching:in: \"key\") or createTextIndex(\"key\").")
  }
  return key
}
