// One notion of "the same key" for everything that puts records or values in buckets:
// `groupBy`, `distinct`, `sectioned(by:)` and its diff, unique indexes and `@mode`.
//
// `FieldValue`'s `==` is the filters' equality, in which NaN equals nothing, not even
// itself. A dictionary keyed by such a value can never find a NaN key again (a section
// lookup that force-unwrapped one trapped), and a set keeps every NaN apart. Sorting ties
// NaN with NaN (`FieldValue._order`), so buckets do the same: two keys share a bucket when
// they sort level under the binary collation. That is `==` everywhere except that NaN ties
// with NaN, at any depth inside arrays and objects; numbers still match across
// `int`/`uint`/`double`/`decimal` (`1 == 1.0`), and `-0.0` with `0`.

/// A `FieldValue` as grouping compares it: equal when the two sort level (NaN ties with
/// NaN), hashed to agree.
struct _GroupingKey: Hashable, Sendable {
  let value: FieldValue

  init(_ value: FieldValue) { self.value = value }

  static func == (lhs: _GroupingKey, rhs: _GroupingKey) -> Bool {
    FieldValue._order(lhs.value, rhs.value, .binary) == 0
  }

  func hash(into hasher: inout Hasher) { Self._hash(value, into: &hasher) }

  /// Numbers hash as the `Double` nearest their value (as `FieldValue` does) and every
  /// NaN as one marker; objects hash their members in key order, as `_order` compares them.
  private static func _hash(_ value: FieldValue, into hasher: inout Hasher) {
    switch value {
    case .array(let a):
      hasher.combine(4)
      hasher.combine(a.count)
      for v in a { _hash(v, into: &hasher) }
    case .object(let o):
      hasher.combine(5)
      hasher.combine(o.count)
      for k in o.keys.sorted() {
        hasher.combine(k)
        _hash(o[k]!, into: &hasher)
      }
    default:
      if _Numbers.isNaN(value) {
        hasher.combine(2)
        hasher.combine(Double.nan.bitPattern)
      } else {
        hasher.combine(value)
      }
    }
  }

  /// Whether the plain value is already its own grouping key: no NaN anywhere in it, so
  /// its `==` and hash agree with grouping's. Callers on a hot path keep such values as
  /// they are and wrap only the others.
  static func isPlain(_ value: FieldValue) -> Bool {
    switch value {
    case .double(let d): return !d.isNaN
    case .decimal(let d): return !d.isNaN
    case .array, .object: break
    default: return true
    }
    var stack = [value]
    while let v = stack.popLast() {
      switch v {
      case .array(let a): stack += a
      case .object(let o): stack += o.values
      default: if _Numbers.isNaN(v) { return false }
      }
    }
    return true
  }
}

/// Any hashable key (a section key from a key path: a `String`, a `Double`, an optional,
/// a struct) as grouping compares it: `FieldValue`s as ``_GroupingKey`` does, floating
/// point NaN tied with NaN, and any other value unequal to itself (a struct holding a
/// NaN) tied with another such value that prints alike.
struct _AnyGroupingKey<Key: Hashable>: Hashable {
  let key: Key

  init(_ key: Key) { self.key = key }

  static func == (lhs: _AnyGroupingKey, rhs: _AnyGroupingKey) -> Bool {
    if let a = lhs.key as? FieldValue, let b = rhs.key as? FieldValue { return _GroupingKey(a) == _GroupingKey(b) }
    if lhs.key == rhs.key { return true }
    guard lhs.key != lhs.key, rhs.key != rhs.key else { return false }
    if let a = _floatingNaN(lhs.key), let b = _floatingNaN(rhs.key) { return a && b }
    return String(describing: lhs.key) == String(describing: rhs.key)
  }

  func hash(into hasher: inout Hasher) {
    if let v = key as? FieldValue {
      _GroupingKey(v).hash(into: &hasher)
    } else if key != key {
      if Self._floatingNaN(key) == true {
        hasher.combine(Double.nan.bitPattern)
      } else {
        hasher.combine(String(describing: key))
      }
    } else {
      hasher.combine(key)
    }
  }

  /// Whether a floating-point key (or an optional one) is NaN; nil for other types.
  private static func _floatingNaN(_ key: Key) -> Bool? {
    switch key {
    case let d as Double: return d.isNaN
    case let f as Float: return f.isNaN
    default: return nil
    }
  }
}
