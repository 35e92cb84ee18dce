import Foundation

/// How string values compare when RequestSet sorts them or tests them with `<`, `>`, `==`.
///
/// The default, ``binary``, is Swift's own `String` comparison (Unicode canonical
/// equivalence, no locale). The others serve the Query seed library's options:
///
/// ```swift
/// animals.sortBy("name", collation: .caseInsensitive)     // "alice" < "Bob" < "carol"
/// animals.sortBy("name", collation: .localizedStandard)  // "file2" < "file10", like Finder
/// ```
public enum RequestCollation: Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// Swift's `String` comparison: what `<` and `==` on `String` do.
  case binary
  /// Foundation's `compare(_:options: .caseInsensitive)`: ignores case and compares
  /// canonically decomposed text, so "Émile" sorts between "Daisy" and "Max" (where
  /// ``binary`` puts it after "Zed").
  case caseInsensitive
  /// Ignores case and diacritics ("é" equals "e").
  case caseDiacriticInsensitive
  /// Foundation's `localizedCompare` in the current locale.
  case localized
  /// Foundation's `localizedCaseInsensitiveCompare` in the current locale.
  case localizedCaseInsensitive
  /// Foundation's `localizedStandardCompare`: case-insensitive, numbers by value.
  case localizedStandard

  /// The collation's name as ``RequestSet/explain()`` shows it.
  public var description: String {
    switch self {
    case .binary: return "binary"
    case .caseInsensitive: return "caseInsensitive"
    case .caseDiacriticInsensitive: return "caseDiacriticInsensitive"
    case .localized: return "localized"
    case .localizedCaseInsensitive: return "localizedCaseInsensitive"
    case .localizedStandard: return "localizedStandard"
    }
  }

  /// -1, 0 or 1 as `lhs` orders before, with or after `rhs`.
  func _compare(_ lhs: String, _ rhs: String) -> Int {
    let r: ComparisonResult
    switch self {
    case .binary:
      return lhs < rhs ? -1 : (lhs == rhs ? 0 : 1)
    case .caseInsensitive:
      r = lhs.compare(rhs, options: [.caseInsensitive])
    case .caseDiacriticInsensitive:
      r = lhs.compare(rhs, options: [.caseInsensitive, .diacriticInsensitive])
    case .localized:
      r = lhs.localizedCompare(rhs)
    case .localizedCaseInsensitive:
      r = lhs.localizedCaseInsensitiveCompare(rhs)
    case .localizedStandard:
      r = lhs.localizedStandardCompare(rhs)
    }
    switch r {
    case .orderedAscending: return -1
    case .orderedSame: return 0
    case .orderedDescending: return 1
    }
  }
}
