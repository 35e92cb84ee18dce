import RequestSet

/// Quoting for text that must appear in SQL itself rather than as a bound value: a JSON
/// path inside an index expression, which the query must repeat word for word for the
/// engine to use the index.
public enum SQLLiteral {
  /// `text` as a single-quoted SQL string literal: quotes doubled, nothing else changed,
  /// so the literal reads back as exactly `text` in SQLite and in PostgreSQL (with
  /// `standard_conforming_strings`, its default since 9.1).
  ///
  /// ```swift
  /// try SQLLiteral.string(#"$."o'k""#)   // '$."o''k"'
  /// ```
  /// - Parameter text: The text to quote.
  /// - Returns: The literal, quotes included.
  /// - Throws: ``RequestSetError`` `.invalidFormat` when `text` holds U+0000, which a SQL
  ///   statement cannot carry (the engine would read the statement as ending there).
  public static func string(_ text: String) throws -> String {
    if text.utf8.contains(0) {
      throw RequestSetError(
        .invalidFormat,
        "A key or name holds the character U+0000, which SQL text cannot carry. Remove it from the key.")
    }
    var out = "'"
    out.reserveCapacity(text.utf8.count + 2)
    for ch in text.unicodeScalars {
      if ch == "'" { out += "''" } else { out.unicodeScalars.append(ch) }
    }
    return out + "'"
  }
}
