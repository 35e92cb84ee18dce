import Foundation

/// Exact comparison of the four kinds of number a ``FieldValue`` holds.
///
/// Every filter, sort, index and `==` on numbers goes through ``compare(_:_:)``, so they all
/// agree, on every store:
/// - `int` and `uint` compare as integers, over the whole signed and unsigned 64-bit range;
/// - an integer and a `double` compare exactly: `2^53 + 1` is above `Double(2^53)`, not equal
///   to it (rounding the integer to a `Double` would say equal);
/// - a `decimal` and an integer compare exactly (a `Decimal` holds every 64-bit integer);
/// - a `decimal` and a `double` compare through the decimal number the double prints as,
///   its shortest round-trip form (`5.35`, not `5.3499999999999996447…`), which is what a
///   program wrote; an integral double below 2^64 in magnitude is taken at its exact
///   integer value, so the order stays one total order with the integers. Doubles outside
///   `Decimal`'s range (above about 10^165, or non-zero below 10^-128 in magnitude) compare
///   as the nearest `Double` of the decimal.
enum _Numbers {
  /// -1, 0 or 1 as `a` is below, equal to or above `b`; nil when either is NaN or is not
  /// a number.
  static func compare(_ a: FieldValue, _ b: FieldValue) -> Int? {
    switch (a, b) {
    case (.int(let x), .int(let y)): return _sign(x, y)
    case (.uint(let x), .uint(let y)): return _sign(x, y)
    case (.double(let x), .double(let y)): return x.isNaN || y.isNaN ? nil : _sign(x, y)
    case (.decimal(let x), .decimal(let y)): return x.isNaN || y.isNaN ? nil : _sign(x, y)
    case (.int(let x), .uint(let y)): return x < 0 ? -1 : _sign(UInt64(x), y)
    case (.uint(let x), .int(let y)): return y < 0 ? 1 : _sign(x, UInt64(y))
    case (.int(let x), .double(let y)): return y.isNaN ? nil : _compare(x, y)
    case (.double(let x), .int(let y)): return x.isNaN ? nil : -_compare(y, x)
    case (.uint(let x), .double(let y)): return y.isNaN ? nil : _compare(x, y)
    case (.double(let x), .uint(let y)): return x.isNaN ? nil : -_compare(y, x)
    case (.int(let x), .decimal(let y)): return y.isNaN ? nil : _sign(Decimal(x), y)
    case (.decimal(let x), .int(let y)): return x.isNaN ? nil : _sign(x, Decimal(y))
    case (.uint(let x), .decimal(let y)): return y.isNaN ? nil : _sign(Decimal(x), y)
    case (.decimal(let x), .uint(let y)): return x.isNaN ? nil : _sign(x, Decimal(y))
    case (.double(let x), .decimal(let y)): return x.isNaN || y.isNaN ? nil : _compare(x, y)
    case (.decimal(let x), .double(let y)): return x.isNaN || y.isNaN ? nil : -_compare(y, x)
    default: return nil
    }
  }

  /// Whether the value is a NaN `double` or `decimal`.
  @inline(__always)
  static func isNaN(_ value: FieldValue) -> Bool {
    switch value {
    case .double(let d): return d.isNaN
    case .decimal(let d): return d.isNaN
    default: return false
    }
  }

  /// The `Double` nearest a decimal's value (correctly rounded, through its text, since
  /// `Decimal`'s own conversion is not): equal numbers hash alike through it.
  static func nearestDouble(_ d: Decimal) -> Double {
    if d.isNaN { return .nan }
    return Double(d.description) ?? (d < 0 ? -.infinity : .infinity)
  }

  /// The decimal a double stands for (see the type's discussion), or nil when it is
  /// outside `Decimal`'s range or not finite.
  static func decimal(_ x: Double) -> Decimal? {
    guard x.isFinite else { return nil }
    if x == x.rounded(.towardZero) {
      if let i = Int64(exactly: x) { return Decimal(i) }
      if let u = UInt64(exactly: x) { return Decimal(u) }
    }
    guard let d = Decimal(string: x.description), !(d.isZero && x != 0) else { return nil }
    return d
  }

  @inline(__always)
  private static func _sign<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : (x == y ? 0 : 1) }

  /// An integer against a non-NaN `Double`, exactly.
  private static func _compare<I: BinaryInteger>(_ x: I, _ y: Double) -> Int {
    let dx = Double(x)
    if dx != y { return dx < y ? -1 : 1 }
    // Equal after rounding: y is integral and within a rounding step of x; compare it as
    // an integer of x's type (2^63 or 2^64 itself is past every value of that type).
    guard let iy = I(exactly: y) else { return -1 }
    return _sign(x, iy)
  }

  /// A non-NaN `Double` against a non-NaN decimal.
  private static func _compare(_ x: Double, _ y: Decimal) -> Int {
    if x.isInfinite { return x < 0 ? -1 : 1 }
    if let dx = decimal(x) { return _sign(dx, y) }
    return _sign(x, nearestDouble(y))
  }
}

extension FieldValue {
  /// A number's value as the nearest `Double` (0 for anything else): what sums and
  /// averages add.
  var _doubleValue: Double {
    switch self {
    case .int(let i): return Double(i)
    case .uint(let u): return Double(u)
    case .double(let d): return d
    case .decimal(let d): return _Numbers.nearestDouble(d)
    default: return 0
    }
  }
}
