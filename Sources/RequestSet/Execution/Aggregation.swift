/// An aggregate function over one key's values: what `sum("weight")`, `max("age")` and the
/// columns of a group-by row compute.
///
/// ```swift
/// animals.groupBy("species").aggregate(.count, .max("age"), .average("weight"))
/// // rows: ["species": "Cow", "count": 2, "max:age": 7, "avg:weight": 525.0], …
/// ```
public struct RequestAggregate: Sendable, Hashable, CustomStringConvertible {
  enum Function: String, Sendable, Hashable {
    case count, sum, min, max, avg
  }
  let function: Function
  /// The key aggregated; nil for `count`.
  let key: String?

  /// The number of records in the group.
  public static let count = RequestAggregate(function: .count, key: nil)
  /// The sum of a numeric key's non-nil values (0 for none): an integer when every value
  /// is one, and the group's ``RequestSetError`` `.overflow` when that integer does not
  /// fit in `Int`; a Double as soon as one value is a Double.
  public static func sum(_ key: String) -> RequestAggregate { RequestAggregate(function: .sum, key: key) }
  /// The smallest non-nil value of a key, skipping NaN (nil for none).
  public static func min(_ key: String) -> RequestAggregate { RequestAggregate(function: .min, key: key) }
  /// The largest non-nil value of a key, skipping NaN (nil for none).
  public static func max(_ key: String) -> RequestAggregate { RequestAggregate(function: .max, key: key) }
  /// The mean of a numeric key's non-nil values, as a Double (nil for none).
  public static func average(_ key: String) -> RequestAggregate { RequestAggregate(function: .avg, key: key) }

  /// The row key the aggregate's value appears under: `count`, `sum:weight`,
  /// `min:age`, `max:age`, `avg:weight` (KEYShadow's and the DAO layer's
  /// "function:property").
  public var name: String { key.map { "\(function.rawValue):\($0)" } ?? function.rawValue }

  /// The same as ``name``.
  public var description: String { name }
}

/// Folds one key's values into an aggregate, the way SQL does: nil values are skipped.
struct _Accumulator {
  let function: RequestAggregate.Function
  private var count = 0
  /// Exact for any 2⁶⁴ `Int`s: a sum that leaves `Int`'s range and comes back is right.
  private var intSum: Int128 = 0
  private var doubleSum = 0.0
  private var sawDouble = false
  private var best: FieldValue?

  init(_ function: RequestAggregate.Function) { self.function = function }

  mutating func add(_ value: FieldValue) {
    if function == .count {
      count += 1
      return
    }
    switch value {
    case .null: return
    case .int(let i):
      count += 1
      intSum += Int128(i)
      doubleSum += Double(i)
    case .double(let d):
      count += 1
      sawDouble = true
      doubleSum += d
    case .uint, .decimal:
      // Past Int or fractional: summed as Doubles, like `double`.
      count += 1
      sawDouble = true
      doubleSum += value._doubleValue
    default:
      count += 1
    }
    // NaN orders with nothing: as a minimum or maximum it would win or lose by where it
    // stands, so min and max skip it, as they skip nil.
    if function == .min || function == .max, case .double(let d) = value, d.isNaN { return }
    if function == .min || function == .max, let current = best {
      let order = FieldValue._order(value, current, .binary)
      if (function == .min && order < 0) || (function == .max && order > 0) { best = value }
    } else if best == nil {
      best = value
    }
  }

  /// The aggregate's value.
  /// - Throws: `.overflow` for an integer sum that does not fit in `Int`.
  func result(type: Any.Type, key: String? = nil) throws -> FieldValue {
    switch function {
    case .count: return .int(count)
    case .sum:
      if sawDouble { return .double(doubleSum) }
      guard let exact = Int(exactly: intSum) else {
        throw RequestSetError.sumOverflow("\(type)'s \"\(key ?? "?")\" values", Int.self)
      }
      return .int(exact)
    // Integers average from their exact sum: Int.min and Int.max must not round to 0.
    case .avg: return count == 0 ? .null : .double((sawDouble ? doubleSum : Double(intSum)) / Double(count))
    case .min, .max: return best ?? .null
    }
  }

  /// Which kinds of value the function accepts.
  static func check(_ function: RequestAggregate.Function, key: String, kinds: _KindSet, type: Any.Type) throws {
    let held = kinds.nonNull
    switch function {
    case .count: return
    case .sum, .avg:
      if held.contains(where: { $0 != .number }) {
        throw RequestSetError(
          .typeMismatch,
          "\(function == .sum ? "sum" : "average") needs numbers, but key \"\(key)\" of \(type) holds "
            + "\(held.map(\.description).joined(separator: " or ")) values. Aggregate a numeric key.")
      }
    case .min, .max:
      if held.contains(where: { $0 == .array || $0 == .object }) || Set(held).count > 1 {
        throw RequestSetError(
          .typeMismatch,
          "\(function.rawValue) needs values that compare, but key \"\(key)\" of \(type) holds "
            + "\(held.map(\.description).joined(separator: " or ")) values. Use a key holding numbers, strings or Bools.")
      }
    }
  }
}
