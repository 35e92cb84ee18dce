import Foundation

// Full-text search: the tokenizer, the query grammar and the test of one record, shared by
// every store. A store's text index (MemoryStore and LogStore keep an inverted index; the
// SQL stores feed their engine the tokens computed here) only narrows which records are
// tested: the set of records a query matches is decided by these rules, in Swift, on every
// store, so every store returns the same records.

/// One thread's memo of split texts (``_TextTokenizer/memoizedTokens(_:)``), kept in a
/// POSIX thread-specific slot and released when the thread ends.
private final class _TokenMemo {
  var table: [String: [String]] = [:]

  /// This thread's memo, made on first use.
  static var current: _TokenMemo {
    if let pointer = pthread_getspecific(key) {
      return Unmanaged<_TokenMemo>.fromOpaque(pointer).takeUnretainedValue()
    }
    let memo = _TokenMemo()
    pthread_setspecific(key, Unmanaged.passRetained(memo).toOpaque())
    return memo
  }

  /// The slot; its destructor releases a thread's memo when the thread ends.
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { pointer in
      // The parameter is optional on Linux and not on Apple platforms.
      guard let pointer = pointer as UnsafeMutableRawPointer? else { return }
      Unmanaged<_TokenMemo>.fromOpaque(pointer).release()
    }
    return key
  }()
}

/// Splits text into the words full-text search compares.
///
/// The rules, which ``RequestSet/filter(matching:in:mode:)`` documents
/// for users:
/// 1. The text is folded as `[cd]` folds it: case and diacritics ("Café" reads "cafe",
///    "Ёлка" reads "елка").
/// 2. A word is a maximal run of letters, digits and combining marks (Unicode general
///    categories L, N and M); every other character separates words.
/// 3. Each Han, Hiragana, Katakana or Hangul character is a word of its own (CJK text has
///    no spaces, so each character is searched as a unigram).
enum _TextTokenizer {
  /// The words of `text`, in order.
  ///
  /// ```swift
  /// _TextTokenizer.tokens("Café au lait, 東京!")   // ["cafe", "au", "lait", "東", "京"]
  /// ```
  static func tokens(_ text: String) -> [String] {
    var out: [String] = []
    tokenize(text) { out.append($0) }
    return out
  }

  /// The words of a stored text, from a memo of the texts this thread split lately: a
  /// search without a text index reads every record's text again for each query, and
  /// folding it costs far more than finding it in the memo. Each thread keeps its own
  /// memo, so searches on many threads never wait on one another (one memo behind a lock
  /// for the whole process made them queue on it: 13% of a test run's time went to that
  /// lock's slow path). A memo holds at most ``memoLimit`` texts and forgets them all at
  /// once when full; it ends with its thread.
  static func memoizedTokens(_ text: String) -> [String] {
    let memo = _TokenMemo.current
    if let known = memo.table[text] { return known }
    let words = tokens(text)
    if memo.table.count >= memoLimit { memo.table.removeAll(keepingCapacity: true) }
    memo.table[text] = words
    return words
  }

  /// The most texts one thread's ``memoizedTokens(_:)`` memo keeps.
  static var memoLimit: Int { 16_384 }

  /// Calls `body` with each word of `text`, in order.
  static func tokenize(_ text: String, _ body: (String) -> Void) {
    let folded = _fold(text, [.caseInsensitive, .diacriticInsensitive])
    var word = String.UnicodeScalarView()
    for scalar in folded.unicodeScalars {
      if isCJK(scalar) {
        if !word.isEmpty {
          body(String(word))
          word = String.UnicodeScalarView()
        }
        body(String(scalar))
      } else if isWordScalar(scalar) {
        word.append(scalar)
      } else if !word.isEmpty {
        body(String(word))
        word = String.UnicodeScalarView()
      }
    }
    if !word.isEmpty { body(String(word)) }
  }

  /// Letters, digits and combining marks.
  static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
    if scalar.value < 0x80 {
      let v = scalar.value
      return (v >= 0x30 && v <= 0x39) || (v >= 0x61 && v <= 0x7A) || (v >= 0x41 && v <= 0x5A)
    }
    switch scalar.properties.generalCategory {
    case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
      .decimalNumber, .letterNumber, .otherNumber,
      .nonspacingMark, .spacingMark, .enclosingMark:
      return true
    default:
      return false
    }
  }

  /// Han (CJK unified and compatibility ideographs), Hiragana, Katakana and Hangul.
  static func isCJK(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x1100...0x11FF,  // Hangul Jamo
      0x3040...0x309F,  // Hiragana
      0x30A0...0x30FF,  // Katakana
      0x3130...0x318F,  // Hangul Compatibility Jamo
      0x31F0...0x31FF,  // Katakana Phonetic Extensions
      0x3400...0x4DBF,  // CJK Extension A
      0x4E00...0x9FFF,  // CJK Unified Ideographs
      0xA960...0xA97F,  // Hangul Jamo Extended-A
      0xAC00...0xD7AF,  // Hangul Syllables
      0xD7B0...0xD7FF,  // Hangul Jamo Extended-B
      0xF900...0xFAFF,  // CJK Compatibility Ideographs
      0xFF66...0xFF9F,  // Halfwidth Katakana
      0x20000...0x3FFFF:  // CJK Extensions B…
      return true
    default:
      return false
    }
  }
}

/// One term of a text query: words that must appear one after the other in one field.
/// A single word is a term of one word.
struct _TextTerm: Sendable, Hashable, CustomStringConvertible {
  /// The folded words.
  var words: [String]
  /// For each word, whether it matches any word that starts with it (`prefix*`).
  var prefix: [Bool]

  var description: String {
    let parts = zip(words, prefix).map { $1 ? $0 + "*" : $0 }
    return parts.count == 1 ? parts[0] : "\"" + parts.joined(separator: " ") + "\""
  }

  /// Whether word `k` of the term matches `token`. A prefix compares Unicode scalars, as a
  /// byte prefix of the UTF-8 text does.
  @inline(__always)
  func word(_ k: Int, matches token: String) -> Bool {
    prefix[k] ? token.unicodeScalars.starts(with: words[k].unicodeScalars) : token == words[k]
  }

  /// Whether the term appears in `tokens`: its words at consecutive positions.
  func occurs(in tokens: [String]) -> Bool { occurrences(in: tokens, stopAtFirst: true) > 0 }

  /// How many times the term appears in `tokens`.
  func occurrences(in tokens: [String], stopAtFirst: Bool = false) -> Int {
    let n = words.count
    guard tokens.count >= n else { return 0 }
    var found = 0
    for start in 0...(tokens.count - n) {
      var k = 0
      while k < n && word(k, matches: tokens[start + k]) { k += 1 }
      if k == n {
        found += 1
        if stopAtFirst { return found }
      }
    }
    return found
  }
}

/// A parsed text query: terms that must all appear (AND).
///
/// The grammar, documented on ``RequestSet/filter(matching:in:mode:)``:
/// words are separated by white space; `"…"` makes a phrase of the words inside (an
/// unclosed quote runs to the end of the query); a word followed directly by `*` matches
/// words starting with it; a word that splits into several words (`e-mail`, `東京`) is a
/// phrase of them. Every other punctuation separates words.
struct _TextQuery: Sendable, Hashable, CustomStringConvertible {
  /// The query as written.
  let text: String
  /// The terms, all of which must appear.
  let terms: [_TextTerm]

  var description: String { terms.map(\.description).joined(separator: " ") }

  /// Parses a query.
  ///
  /// - Throws: ``RequestSetError`` `.invalidFormat` when the query holds no word.
  init(_ text: String) throws {
    self.text = text
    var terms: [_TextTerm] = []
    var inQuote = false
    var chunk = ""
    var phrase = _TextTerm(words: [], prefix: [])

    // A chunk is text between white space (or quotes): its words, `*` marking prefixes.
    func flush() {
      guard !chunk.isEmpty else { return }
      var term = _TextTerm(words: [], prefix: [])
      // Split at `*`: the word right before each `*` is a prefix.
      let pieces = chunk.split(separator: "*", omittingEmptySubsequences: false)
      for (i, piece) in pieces.enumerated() {
        let words = _TextTokenizer.tokens(String(piece))
        term.words += words
        term.prefix += words.map { _ in false }
        let starred = i < pieces.count - 1
        if starred, !words.isEmpty, let last = piece.unicodeScalars.last, _TextTokenizer.isWordScalar(last) {
          term.prefix[term.prefix.count - 1] = true
        }
      }
      chunk = ""
      if inQuote {
        phrase.words += term.words
        phrase.prefix += term.prefix
      } else if !term.words.isEmpty {
        terms.append(term)
      }
    }

    for ch in text {
      if ch == "\"" {
        flush()
        if inQuote, !phrase.words.isEmpty { terms.append(phrase) }
        phrase = _TextTerm(words: [], prefix: [])
        inQuote.toggle()
      } else if ch.isWhitespace {
        flush()
      } else {
        chunk.append(ch)
      }
    }
    flush()
    // An unclosed quote runs to the end of the query.
    if inQuote, !phrase.words.isEmpty { terms.append(phrase) }
    guard !terms.isEmpty else {
      throw RequestSetError(
        .invalidFormat,
        "The text query \"\(text)\" has no word to search for (words are letters and digits; "
          + "punctuation separates them). Search for at least one word, or leave the filter out.")
    }
    self.terms = terms
  }

  /// Whether every term appears in one of `fields` (each field's words, in order): a
  /// phrase must lie within one field.
  func matches(_ fields: [[String]]) -> Bool {
    terms.allSatisfy { term in fields.contains { term.occurs(in: $0) } }
  }
}

/// The words of a stored field value: a string's words; an array's strings, each a field
/// of its own (a phrase does not run from one element into the next). Other values hold
/// no words.
func _textFields(_ value: FieldValue, into fields: inout [[String]]) {
  switch value {
  case .string(let s): fields.append(_TextTokenizer.memoizedTokens(s))
  case .array(let items):
    for item in items { if case .string(let s) = item { fields.append(_TextTokenizer.memoizedTokens(s)) } }
  default: break
  }
}

/// A full-text condition: `keys` (a record's fields) match a text query.
@usableFromInline
struct _TextSearchCondition: Sendable, CustomStringConvertible {
  /// The fields searched; each phrase must lie within one of them.
  let keys: [String]
  let query: _TextQuery

  @usableFromInline var description: String {
    "(" + keys.joined(separator: ", ") + ") MATCHES[fts] " + FieldValue.string(query.text).description
  }

  /// Whether a record whose fields `keys` hold `values` matches.
  func matches(_ values: [FieldValue]) -> Bool {
    var fields: [[String]] = []
    for v in values { _textFields(v, into: &fields) }
    return query.matches(fields)
  }

  /// The node for a query over keys, invalid when the query has no word or no key is named.
  static func node<Element>(_ text: String, keys: [String]) -> _FilterNode<Element> {
    guard !keys.isEmpty else {
      return .invalid(
        RequestSetError(
          .invalidIndex,
          "A text search needs keys to search: name them with filter(matching:in:), or create a text index "
            + "with createTextIndex(...) on the store and use filter(matching:)."))
    }
    do {
      return .search(_TextSearchCondition(keys: keys, query: try _TextQuery(text)))
    } catch let error as RequestSetError {
      return .invalid(error)
    } catch {
      return .invalid(RequestSetError(.invalidFormat, "\(error)"))
    }
  }
}

/// A store that keeps a text index: `filter(matching:)` without keys searches its keys.
/// Public only so that the stores of other modules adopt it.
public protocol _TextIndexedStore: Sendable {
  /// The keys of the store's text index, or nil without one.
  var _textIndexKeys: [String]? { get }
}
