/// String keys as paths of field names: `owner.city` is the field `city` of `owner`.
///
/// A field name that itself holds a dot (a dictionary key such as `"b.c"`) is written with
/// the dot escaped by a backslash, and a backslash by another: `counts.b\.c` reaches
/// `counts["b.c"]`, `paths.a\\b` reaches `paths["a\b"]`. Every place that joins names into
/// a key or splits a key into names goes through here, so the field table, the log's key
/// ids, projections and updates agree.
///
/// ```swift
/// animals.filter("counts.b\\.c", value: 2)     // counts["b.c"] == 2
/// _DottedKey.join("counts", "b.c")            // "counts.b\\.c"
/// _DottedKey.split("counts.b\\.c")            // ["counts", "b.c"]
/// ```
enum _DottedKey {
  /// A field name as it appears in a key: dots and backslashes escaped.
  @inline(__always)
  static func escape(_ name: String) -> String {
    guard name.utf8.contains(where: { $0 == 0x2E || $0 == 0x5C }) else { return name }
    var out = ""
    out.reserveCapacity(name.utf8.count + 2)
    for c in name {
      if c == "." || c == "\\" { out.append("\\") }
      out.append(c)
    }
    return out
  }

  /// The key of field `name` under the key `prefix` (nil at the top level).
  @inline(__always)
  static func join(_ prefix: String?, _ name: String) -> String {
    let escaped = escape(name)
    return prefix.map { $0 + "." + escaped } ?? escaped
  }

  /// The field names of a key, unescaped.
  static func split(_ key: String) -> [String] {
    // Most keys name one field: no dot, nothing to split or unescape.
    guard key.utf8.contains(where: { $0 == 0x2E || $0 == 0x5C }) else { return [key] }
    guard key.utf8.contains(0x5C) else { return key.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
    var parts: [String] = []
    var current = ""
    var escaped = false
    for c in key {
      if escaped {
        current.append(c)
        escaped = false
      } else if c == "\\" {
        escaped = true
      } else if c == "." {
        parts.append(current)
        current = ""
      } else {
        current.append(c)
      }
    }
    if escaped { current.append("\\") }
    parts.append(current)
    return parts
  }
}
