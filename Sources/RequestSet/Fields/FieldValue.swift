import Foundation

/// A record's field as RequestSet sees it when a query names the field by string key.
///
/// String-key filters and sorts (`filter("age", value: 3)`, `sortBy("name")`) never decode
/// records: each store reads its records' fields as `FieldValue`s (from the record in
/// memory exactly as it would encode, or from its encoded bytes), and values you pass to a
/// string-key filter are encoded the same way, so both sides always agree.
///
/// ```swift
/// FieldValue(encoding: 3)        // .int(3)
/// FieldValue(encoding: "Micky")  // .string("Micky")
/// FieldValue(encoding: [1, 2])   // .array([.int(1), .int(2)])
/// ```
///
/// Numbers compare by value across `int`, `uint`, `double` and `decimal`, exactly (see
/// ``FieldValue/==(_:_:)``): `.int(3) == .double(3.0)`, but `.int(9_007_199_254_740_993)`
/// (2^53 + 1) is not `.double(9_007_199_254_740_992)`.
public enum FieldValue: Sendable, CustomStringConvertible {
  /// An absent optional, or an explicit `nil`.
  case null
  /// A Boolean.
  case bool(Bool)
  /// Any integer type that fits in `Int`, including every `UInt64` up to `Int.max`.
  case int(Int)
  /// An unsigned integer above `Int.max` (`UInt64` and `UInt`): exact, never rounded.
  case uint(UInt64)
  /// `Double` and `Float`.
  case double(Double)
  /// A `Decimal`: a number, compared exactly with the other numbers.
  case decimal(Decimal)
  /// A string (also how `UUID`, `URL` (its `absoluteString`, as `JSONEncoder` writes it)
  /// and string-backed enums encode).
  case string(String)
  /// An unkeyed container: arrays and sets.
  case array([FieldValue])
  /// A keyed container: a nested struct or a dictionary.
  case object([String: FieldValue])

  /// A textual form close to Swift literal syntax: `"Micky"`, `3`, `nil`, `["a", "b"]`.
  public var description: String {
    switch self {
    case .null: return "nil"
    case .bool(let b): return b ? "true" : "false"
    case .int(let i): return String(i)
    case .uint(let u): return String(u)
    case .double(let d): return String(d)
    case .decimal(let d): return d.description
    case .string(let s): return "\"" + s.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    case .array(let a): return "[" + a.map(\.description).joined(separator: ", ") + "]"
    case .object(let o):
      if o.isEmpty { return "[:]" }
      return "[" + o.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
    }
  }

  /// The kind of value, used in error messages and type checks.
  var _kind: _FieldKind {
    switch self {
    case .null: return .null
    case .bool: return .bool
    case .int, .uint, .double, .decimal: return .number
    case .string: return .string
    case .array: return .array
    case .object: return .object
    }
  }
}

extension FieldValue: Equatable {
  /// Equality as filters see it: numbers compare by value across `int`, `uint`, `double`
  /// and `decimal`.
  ///
  /// Integers and doubles compare exactly, never through a rounded `Double`:
  /// `.int(9_007_199_254_740_993) != .double(9_007_199_254_740_992)`. A `decimal` compares
  /// exactly with integers; with a `double` it compares with the decimal number the double
  /// prints as (its shortest round-trip form, so `Decimal(string: "5.35")` equals `5.35`),
  /// or, for an integral double below 2^64 in magnitude, with its exact integer value.
  /// NaN equals nothing, itself included.
  ///
  /// ```swift
  /// FieldValue.int(3) == .double(3.0)                         // true
  /// FieldValue.uint(UInt64.max) == .uint(UInt64.max - 1)      // false
  /// FieldValue.decimal(Decimal(string: "5.35")!) == .double(5.35)  // true
  /// ```
  public static func == (lhs: FieldValue, rhs: FieldValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): return true
    case (.bool(let a), .bool(let b)): return a == b
    case (.int(let a), .int(let b)): return a == b
    case (.double(let a), .double(let b)): return a == b
    case (.int, .uint), (.int, .double), (.int, .decimal), (.uint, _), (.double, _), (.decimal, _):
      return _Numbers.compare(lhs, rhs) == 0
    case (.string(let a), .string(let b)): return a == b
    case (.array(let a), .array(let b)): return a == b
    case (.object(let a), .object(let b)): return a == b
    default: return false
    }
  }
}

extension FieldValue: Hashable {
  /// Hashes consistently with `==`: every number hashes as the `Double` nearest its value,
  /// so equal numbers of different cases hash alike.
  public func hash(into hasher: inout Hasher) {
    switch self {
    case .null: hasher.combine(0)
    case .bool(let b): hasher.combine(1); hasher.combine(b)
    case .int(let i): hasher.combine(2); hasher.combine(Double(i))
    case .uint(let u): hasher.combine(2); hasher.combine(Double(u))
    case .double(let d): hasher.combine(2); hasher.combine(d)
    case .decimal(let d): hasher.combine(2); hasher.combine(_Numbers.nearestDouble(d))
    case .string(let s): hasher.combine(3); hasher.combine(s)
    case .array(let a): hasher.combine(4); hasher.combine(a)
    case .object(let o): hasher.combine(5); hasher.combine(o)
    }
  }
}

extension FieldValue {
  /// Encodes any `Encodable` value the way stores encode record fields.
  ///
  /// ```swift
  /// try FieldValue(encoding: Date(timeIntervalSinceReferenceDate: 0))  // .double(0.0)
  /// ```
  /// - Throws: ``RequestSetError`` with code `.encodingFailed` when the value's
  ///   `encode(to:)` throws.
  public init(encoding value: some Encodable) throws {
    self = try _FieldEncoder.encode(value)
  }

  /// Ordering used by sorts and range filters.
  ///
  /// Values of one kind compare naturally (numbers exactly across `int`, `uint`, `double`
  /// and `decimal`, strings with `collation`); different kinds order as
  /// null < bool < number < string < array < object, so `nil` sorts before any value.
  /// NaN (a `double` or a `decimal`) is a number that sorts after every other number and
  /// ties with NaN: one total order for every sort, whether it sorts fully, keeps the top
  /// *k*, or walks an index.
  static func _order(_ lhs: FieldValue, _ rhs: FieldValue, _ collation: RequestCollation) -> Int {
    switch (lhs, rhs) {
    case (.int(let a), .int(let b)): return a < b ? -1 : (a == b ? 0 : 1)
    case (.int, .uint), (.int, .double), (.int, .decimal), (.uint, .int), (.uint, .uint), (.uint, .double),
      (.uint, .decimal), (.double, .int), (.double, .uint), (.double, .double), (.double, .decimal),
      (.decimal, .int), (.decimal, .uint), (.decimal, .double), (.decimal, .decimal):
      if let c = _Numbers.compare(lhs, rhs) { return c }
      // NaN last, tied with NaN.
      let l = _Numbers.isNaN(lhs), r = _Numbers.isNaN(rhs)
      return l == r ? 0 : (l ? 1 : -1)
    case (.string(let a), .string(let b)): return collation._compare(a, b)
    case (.bool(let a), .bool(let b)): return a == b ? 0 : (!a ? -1 : 1)
    case (.null, .null): return 0
    case (.array(let a), .array(let b)):
      for (x, y) in zip(a, b) {
        let c = _order(x, y, collation)
        if c != 0 { return c }
      }
      return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
    case (.object(let a), .object(let b)):
      let ka = a.keys.sorted(), kb = b.keys.sorted()
      if ka != kb { return ka.lexicographicallyPrecedes(kb) ? -1 : 1 }
      for k in ka {
        let c = _order(a[k]!, b[k]!, collation)
        if c != 0 { return c }
      }
      return 0
    default:
      let l = lhs._kind.rawValue, r = rhs._kind.rawValue
      return l < r ? -1 : (l == r ? 0 : 1)
    }
  }
}

/// The broad kind of a field, as named in type-mismatch errors.
enum _FieldKind: Int, Sendable, Comparable, CustomStringConvertible {
  case null = 0, bool, number, string, array, object

  static func < (lhs: _FieldKind, rhs: _FieldKind) -> Bool { lhs.rawValue < rhs.rawValue }

  var description: String {
    switch self {
    case .null: return "nil"
    case .bool: return "Bool"
    case .number: return "number"
    case .string: return "String"
    case .array: return "array"
    case .object: return "nested object"
    }
  }
}

/// A small set of ``_FieldKind``s: which kinds of value a key has been seen to hold.
struct _KindSet: Sendable, Equatable {
  var bits: UInt8 = 0
  /// True when the kinds are not known (the type could not be probed and no record holds
  /// the key); such a key accepts values of any kind.
  var isUnknown: Bool { bits == 0 }

  mutating func insert(_ kind: _FieldKind) { bits |= 1 << UInt8(kind.rawValue) }
  mutating func formUnion(_ other: _KindSet) { bits |= other.bits }
  func contains(_ kind: _FieldKind) -> Bool { bits & (1 << UInt8(kind.rawValue)) != 0 }

  /// The non-nil kinds, for messages.
  var nonNull: [_FieldKind] {
    [_FieldKind.bool, .number, .string, .array, .object].filter(contains)
  }
}
