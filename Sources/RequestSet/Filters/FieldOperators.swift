import Foundation

// The operators a string-key condition can apply, beyond the core's six comparisons:
// BETWEEN, IN, the text operators with their [c]/[d] options, quantifiers over array
// fields and `@count`. Format strings and triplet queries build them; the core's
// `filter(key, comparison, value)` uses `.compare` alone.
//
// Everything that depends only on the condition (a folded operand, a LIKE pattern split
// into tokens, a compiled regular expression, a hashed IN list) is prepared once, when the
// condition is built; the per-record test does no parsing and no allocation on ASCII text.

/// What a string-key condition tests.
enum _FieldOperator: Sendable, Hashable {
  /// `==`, `!=`, `<`, `<=`, `>`, `>=`.
  case compare(RequestComparison)
  /// `BETWEEN {lower, upper}`, inclusive; the value is a two-element array.
  case between
  /// `IN {…}`: the field equals one of the array's elements. With a String value, the field
  /// is a substring of it (NSPredicate's `name IN 'Micky Mouse'`).
  case `in`
  /// `CONTAINS`, `BEGINSWITH`, `ENDSWITH`, `LIKE`, `MATCHES`. `CONTAINS` on an array field
  /// tests membership.
  case text(_TextOperator)
}

/// The text operators of the NSPredicate format grammar.
enum _TextOperator: String, Sendable, Hashable, CaseIterable {
  case contains = "CONTAINS"
  case beginsWith = "BEGINSWITH"
  case endsWith = "ENDSWITH"
  /// `*` matches any run of characters, `?` one character, `\*` and `\?` themselves.
  case like = "LIKE"
  /// An ICU regular expression that must match the whole string; `.` matches line breaks
  /// and `^`/`$` match at every line's ends, as in NSPredicate.
  case matches = "MATCHES"
}

/// `[c]`, `[d]`, `[cd]`: case- and diacritic-insensitive string operators.
struct _TextOptions: OptionSet, Sendable, Hashable {
  let rawValue: UInt8
  static let caseInsensitive = _TextOptions(rawValue: 1)
  static let diacriticInsensitive = _TextOptions(rawValue: 2)
  /// `[fts]` after `MATCHES`: full-text search (see TextSearch.swift); the parser turns it
  /// into a text-search condition, so no field condition carries it.
  static let fullText = _TextOptions(rawValue: 4)

  /// `[c]`, `[d]`, `[cd]` or nothing.
  var suffix: String {
    if isEmpty { return "" }
    return "[" + (contains(.caseInsensitive) ? "c" : "") + (contains(.diacriticInsensitive) ? "d" : "") + "]"
  }

  /// The Foundation folding options.
  var folding: String.CompareOptions {
    var o: String.CompareOptions = []
    if contains(.caseInsensitive) { o.insert(.caseInsensitive) }
    if contains(.diacriticInsensitive) { o.insert(.diacriticInsensitive) }
    return o
  }
}

/// `ANY`, `ALL`, `NONE` over the elements of an array field.
enum _Quantifier: String, Sendable, Hashable {
  /// Some element matches (`SOME` is the same).
  case any = "ANY"
  /// Every element matches; true for an empty array.
  case all = "ALL"
  /// No element matches; true for an empty array.
  case noElement = "NONE"
}

/// A prepared test of one field value.
typealias _ValueTest = @Sendable (FieldValue) -> Bool

extension _FieldCondition {
  /// The test for `op` and `value`, with everything that does not depend on the record
  /// prepared here.
  ///
  /// - Throws: the regular-expression error for an invalid `MATCHES` pattern.
  static func _makeTest(
    _ op: _FieldOperator, _ value: FieldValue, collation: RequestCollation, options: _TextOptions
  ) throws -> _ValueTest {
    switch op {
    case .compare(let comparison):
      return _compareTest(comparison, value, collation: collation, options: options)
    case .between:
      guard case .array(let bounds) = value, bounds.count == 2 else { return { _ in false } }
      let low = _compareTest(.greaterThanOrEqual, bounds[0], collation: collation, options: options)
      let high = _compareTest(.lessThanOrEqual, bounds[1], collation: collation, options: options)
      return { low($0) && high($0) }
    case .in:
      switch value {
      case .array(let items):
        if options.isEmpty && collation == .binary {
          // FieldValue's hash agrees with its `==` (3 and 3.0 hash alike), so a set lookup
          // gives the same answer as comparing with every element.
          if items.count <= 4 { return { items.contains($0) } }
          let set = Set(items)
          return { set.contains($0) }
        }
        let tests = items.map { _compareTest(.equal, $0, collation: collation, options: options) }
        return { field in tests.contains { $0(field) } }
      case .string(let container):
        let folded = _fold(container, options)
        return { field in
          guard case .string(let s) = field else { return false }
          let needle = _TextPattern(.contains, _fold(s, options), options: [])
          return needle.matches(folded)
        }
      default:
        return { _ in false }
      }
    case .text(let textOp):
      guard case .string(let pattern) = value else {
        // Only CONTAINS takes a non-string value: membership in an array field.
        let member = _compareTest(.equal, value, collation: collation, options: options)
        return { field in
          if case .array(let elements) = field { return elements.contains(where: member) }
          return false
        }
      }
      let prepared = try _TextPattern.make(textOp, pattern, options: options)
      if textOp == .contains {
        let member = _compareTest(.equal, value, collation: collation, options: options)
        return { field in
          switch field {
          case .string(let s): return prepared.matches(s)
          case .array(let elements): return elements.contains(where: member)
          default: return false
          }
        }
      }
      return { field in
        guard case .string(let s) = field else { return false }
        return prepared.matches(s)
      }
    }
  }

  /// A comparison test. Without options it is the core's semantics exactly: equality is
  /// exact (`nil` equals only `nil`, numbers compare across Int and Double) and an ordering
  /// with `nil` or between different kinds is false.
  static func _compareTest(
    _ comparison: RequestComparison, _ value: FieldValue, collation: RequestCollation, options: _TextOptions
  ) -> _ValueTest {
    if !options.isEmpty, case .string(let text) = value {
      switch comparison {
      case .equal, .notEqual:
        let exact = _TextPattern(.exact, _fold(text, options), options: options)
        let wanted = comparison == .equal
        return { field in
          if case .string(let s) = field { return exact.matches(s) == wanted }
          return (field == value) == wanted
        }
      default:
        switch options {
        case .caseInsensitive:
          return _compareTest(comparison, value, collation: .caseInsensitive, options: [])
        case [.caseInsensitive, .diacriticInsensitive]:
          return _compareTest(comparison, value, collation: .caseDiacriticInsensitive, options: [])
        default:
          let folded = _fold(text, options)
          return { field in
            guard case .string(let s) = field else { return false }
            return comparison._holds(order: RequestCollation.binary._compare(_fold(s, options), folded))
          }
        }
      }
    }
    // The hot cases, specialized: an Int compared with an Int field, a String with a String
    // field (binary). Everything else goes through the general rule.
    if case .int(let v) = value {
      let general = _generalTest(comparison, value, collation)
      switch comparison {
      case .equal: return { if case .int(let a) = $0 { return a == v }; return general($0) }
      case .notEqual: return { if case .int(let a) = $0 { return a != v }; return general($0) }
      case .lessThan: return { if case .int(let a) = $0 { return a < v }; return general($0) }
      case .lessThanOrEqual: return { if case .int(let a) = $0 { return a <= v }; return general($0) }
      case .greaterThan: return { if case .int(let a) = $0 { return a > v }; return general($0) }
      case .greaterThanOrEqual: return { if case .int(let a) = $0 { return a >= v }; return general($0) }
      }
    }
    if case .string(let v) = value, collation == .binary {
      let general = _generalTest(comparison, value, collation)
      switch comparison {
      case .equal: return { if case .string(let a) = $0 { return a == v }; return general($0) }
      case .notEqual: return { if case .string(let a) = $0 { return a != v }; return general($0) }
      default: return general
      }
    }
    return _generalTest(comparison, value, collation)
  }

  private static func _generalTest(
    _ comparison: RequestComparison, _ value: FieldValue, _ collation: RequestCollation
  ) -> _ValueTest {
    { field in
      switch comparison {
      case .equal, .notEqual:
        let equal: Bool
        if collation != .binary, case .string(let a) = field, case .string(let b) = value {
          equal = collation._compare(a, b) == 0
        } else {
          equal = field == value
        }
        return (comparison == .equal) == equal
      default:
        if case .null = field { return false }
        if case .null = value { return false }
        // NaN is unordered: every ordering comparison with it is false, as in Swift.
        if _Numbers.isNaN(field) || _Numbers.isNaN(value) { return false }
        guard field._kind == value._kind else { return false }
        return comparison._holds(order: FieldValue._order(field, value, collation))
      }
    }
  }
}

// MARK: - Text

/// Folds case and/or diacritics. ASCII text never needs Foundation: lowercasing is all a
/// case fold does to it, and it has no diacritics.
@inline(__always)
func _fold(_ s: String, _ options: _TextOptions) -> String {
  if options.isEmpty { return s }
  if _isASCII(s) { return options.contains(.caseInsensitive) ? s.lowercased() : s }
  return s.folding(options: options.folding, locale: nil)
}

@inline(__always)
func _isASCII(_ s: String) -> Bool {
  if let r = s.utf8.withContiguousStorageIfAvailable({ _isASCII($0) }) { return r }
  return s.utf8.allSatisfy { $0 < 0x80 }
}

@inline(__always)
func _isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
  var all: UInt8 = 0
  for b in bytes { all |= b }
  return all < 0x80
}

@inline(__always)
private func _lower(_ b: UInt8) -> UInt8 { b &- 65 < 26 ? b | 0x20 : b }

/// One element of a LIKE pattern.
enum _GlobToken<Unit: Equatable & Sendable>: Sendable, Equatable {
  case star
  case one
  case literal(Unit)
}

/// A text operator with its pattern prepared: folded once, split into LIKE tokens once,
/// compiled once as a regular expression.
struct _TextPattern: Sendable {
  enum Kind: Sendable {
    case exact, prefix, suffix, contains
    /// LIKE with `?` or inner `*`: tokens over bytes (ASCII) and over characters.
    case glob([_GlobToken<UInt8>]?, [_GlobToken<Character>])
    /// MATCHES: anchored at both ends.
    case regex(NSRegularExpression)
  }

  let kind: Kind
  /// The folded pattern for exact/prefix/suffix/contains.
  let text: String
  /// The folded pattern's bytes when it is ASCII: the fast path.
  let asciiBytes: [UInt8]?
  let options: _TextOptions

  /// A pattern whose text is already folded.
  init(_ kind: Kind, _ folded: String, options: _TextOptions) {
    self.kind = kind
    self.text = folded
    self.asciiBytes = _isASCII(folded) ? Array(folded.utf8) : nil
    self.options = options
  }

  static func make(_ op: _TextOperator, _ pattern: String, options: _TextOptions) throws -> _TextPattern {
    switch op {
    case .contains: return _TextPattern(.contains, _fold(pattern, options), options: options)
    case .beginsWith: return _TextPattern(.prefix, _fold(pattern, options), options: options)
    case .endsWith: return _TextPattern(.suffix, _fold(pattern, options), options: options)
    case .matches:
      // Check the pattern on its own first: wrapping it could hide an unbalanced ")".
      _ = try NSRegularExpression(pattern: pattern, options: [])
      // NSPredicate runs MATCHES with "dot matches line breaks" and "anchors match lines",
      // then requires the match to cover the whole string.
      var flags: NSRegularExpression.Options = [.dotMatchesLineSeparators, .anchorsMatchLines]
      if options.contains(.caseInsensitive) { flags.insert(.caseInsensitive) }
      let regex = try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: flags)
      return _TextPattern(.regex(regex), "", options: options)
    case .like:
      return _like(_fold(pattern, options), options: options)
    }
  }

  /// Splits a LIKE pattern; the common shapes (`abc`, `abc*`, `*abc`, `*abc*`) become plain
  /// string operations.
  private static func _like(_ pattern: String, options: _TextOptions) -> _TextPattern {
    var tokens: [_GlobToken<Character>] = []
    var escaped = false
    for c in pattern {
      if escaped {
        tokens.append(.literal(c))
        escaped = false
      } else if c == "\\" {
        escaped = true
      } else if c == "*" {
        if tokens.last != .star { tokens.append(.star) }
      } else if c == "?" {
        tokens.append(.one)
      } else {
        tokens.append(.literal(c))
      }
    }
    if escaped { tokens.append(.literal("\\")) }
    let literals = tokens.compactMap { t -> Character? in if case .literal(let c) = t { return c } else { return nil } }
    let stars = tokens.indices.filter { tokens[$0] == .star }
    if !tokens.contains(.one) {
      let text = String(literals)
      let lastIndex = tokens.count - 1
      switch stars {
      case []: return _TextPattern(.exact, text, options: options)
      case [lastIndex] where lastIndex >= 0: return _TextPattern(.prefix, text, options: options)
      case [0] where lastIndex > 0: return _TextPattern(.suffix, text, options: options)
      case [0, lastIndex] where lastIndex > 0: return _TextPattern(.contains, text, options: options)
      default: break
      }
    }
    var bytes: [_GlobToken<UInt8>]? = []
    for t in tokens {
      switch t {
      case .star: bytes?.append(.star)
      case .one: bytes?.append(.one)
      case .literal(let c):
        if c.isASCII, let b = c.asciiValue { bytes?.append(.literal(b)) } else { bytes = nil }
      }
    }
    return _TextPattern(.glob(bytes, tokens), "", options: options)
  }

  /// Whether `s` (not folded) matches.
  func matches(_ s: String) -> Bool {
    if case .regex(let regex) = kind {
      let subject = options.contains(.diacriticInsensitive) ? _fold(s, [.diacriticInsensitive]) : s
      return regex.firstMatch(in: subject, options: [], range: NSRange(location: 0, length: subject.utf16.count)) != nil
    }
    if let fast = _matchASCII(s) { return fast }
    let folded = _fold(s, options)
    switch kind {
    case .exact: return folded == text
    case .prefix: return folded.hasPrefix(text)
    case .suffix: return folded.hasSuffix(text)
    case .contains: return text.isEmpty || folded.contains(text)
    case .glob(_, let tokens): return _glob(Array(folded), tokens, ==)
    case .regex: return false
    }
  }

  /// The byte-level answer when both the pattern and `s` are ASCII, else nil.
  @inline(__always)
  private func _matchASCII(_ s: String) -> Bool? {
    let patternBytes: [UInt8]
    switch kind {
    case .glob(let tokens?, _):
      let r = s.utf8.withContiguousStorageIfAvailable { buf -> Bool? in
        guard _isASCII(buf) else { return nil }
        if options.contains(.caseInsensitive) { return _glob(buf, tokens) { _lower($0) == $1 } }
        return _glob(buf, tokens, ==)
      }
      return r ?? nil
    case .glob, .regex: return nil
    default:
      guard let p = asciiBytes else { return nil }
      patternBytes = p
    }
    let caseless = options.contains(.caseInsensitive)
    let r = s.utf8.withContiguousStorageIfAvailable { buf -> Bool? in
      guard _isASCII(buf) else { return nil }
      return patternBytes.withUnsafeBufferPointer { p -> Bool in
        let n = buf.count, m = p.count
        @inline(__always) func at(_ start: Int) -> Bool {
          if caseless {
            for j in 0..<m where _lower(buf[start + j]) != p[j] { return false }
          } else {
            for j in 0..<m where buf[start + j] != p[j] { return false }
          }
          return true
        }
        switch kind {
        case .exact: return n == m && at(0)
        case .prefix: return n >= m && at(0)
        case .suffix: return n >= m && at(n - m)
        case .contains:
          if m > n { return false }
          for start in 0...(n - m) where at(start) { return true }
          return false
        default: return false
        }
      }
    }
    return r ?? nil
  }
}

/// LIKE matching with `*` and `?`: linear backtracking to the last star, O(n·m) at worst,
/// never recursive.
func _glob<C: RandomAccessCollection, Unit>(
  _ s: C, _ p: [_GlobToken<Unit>], _ equal: (C.Element, Unit) -> Bool
) -> Bool where C.Index == Int {
  var si = s.startIndex, pi = 0
  var starP = -1, starS = s.startIndex
  while si < s.endIndex {
    if pi < p.count {
      switch p[pi] {
      case .one:
        si += 1
        pi += 1
        continue
      case .literal(let u) where equal(s[si], u):
        si += 1
        pi += 1
        continue
      case .star:
        starP = pi
        starS = si
        pi += 1
        continue
      default: break
      }
    }
    guard starP >= 0 else { return false }
    pi = starP + 1
    starS += 1
    si = starS
  }
  while pi < p.count, case .star = p[pi] { pi += 1 }
  return pi == p.count
}
