import Foundation

// Typed dictionaries (the Query seed's typed attributes): `[\Animal.name: "Alice",
// \Animal.age: 3]`, with ranges and inequality wrappers as values.
//
// The form Swift allows: a dictionary literal has one key type and one value type, so the
// keys are `PartialKeyPath<Root> & Sendable` (the compiler checks each is a key path of the
// record type: no misspelt keys) and the values are `any Sendable`, so that a plain enum
// (`Status.paid`) is a value with no conformance to add. A value is a `RequestValueMatch`
// (a String, a number, a Bool, a Date, a UUID, a range or an `lt`/`lte`/`gt`/`gte`
// wrapper) or any other `Equatable` type, matched by equality. Whether a value's type fits
// its key path's type cannot be expressed in one dictionary literal, so it is checked when
// the filter is built: the value opens the key path as `KeyPath<Root, Value>` (or
// `Value?`), and a mismatch becomes a `.typeMismatch` error that `fetch()` throws. Integer
// literals also match `Double` fields, as `weight: 600` and `weight: 1...3` read.

/// A value a typed-dictionary filter compares a key path's field with.
///
/// ```swift
/// animals.filter([\Animal.name: "Alice", \Animal.age: 3])        // equality
/// animals.filter([\Animal.age: 1...3, \Animal.weight: lt(100)])  // range, inequality
/// ```
/// `String`, the integer and floating-point types, `Bool`, `Date`, `UUID`, ranges of
/// `Comparable` values and the ``lt(_:)``, ``lte(_:)``, ``gt(_:)``, ``gte(_:)`` wrappers
/// conform. A field of type `Value?` matches too; `nil` fields never match a value.
///
/// Any other `Equatable` value, such as an enum, is matched by equality without
/// conforming: `[\Order.status: Status.paid]`. Conform a type of your own to change how
/// it matches.
public protocol RequestValueMatch: Sendable {
  /// The test of a record for the field at `keyPath`, or nil when this value's type cannot
  /// match the field's. Implementation detail of typed dictionaries.
  func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)?
  /// The condition as text for `explain()`, with `key` on the left.
  func _describe(_ key: String) -> String
}

/// A key path that crossed into a `@Sendable` closure.
///
/// `@unchecked Sendable` is sound: a key path is an immutable value, and every key path
/// here was passed in as `PartialKeyPath<Root> & Sendable`, so it captured nothing
/// non-Sendable; the cast to `KeyPath<Root, Value>` is the same object.
struct _SendableKeyPath<Root, Value>: @unchecked Sendable {
  let keyPath: KeyPath<Root, Value>
}

extension RequestValueMatch where Self: Equatable {
  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    _equalityTest(self, keyPath)
  }

  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String { "\(key) == " + _literal(self) }
}

/// A test closure that is `Sendable` though its type cannot say so.
///
/// `@unchecked Sendable` is sound: the closure captures only a key path (immutable; see
/// ``_SendableKeyPath``) and a value of a `Sendable` type: a ``RequestValueMatch`` (which
/// refines `Sendable`) or a value that arrived as `any Sendable`. Opening such a value as
/// `any Equatable` loses the constraint, since a cast cannot name `Sendable`.
private struct _SendableTest<Root>: @unchecked Sendable {
  let test: (Root) -> Bool
}

/// A test of `Value` or `Value?` fields for equality with `value`; nil fields never match.
/// `value` must be of a `Sendable` type (see ``_SendableTest``).
private func _equalityTest<Root, Value: Equatable>(
  _ value: Value, _ keyPath: PartialKeyPath<Root>
) -> (@Sendable (Root) -> Bool)? {
  let box: _SendableTest<Root>
  if let kp = keyPath as? KeyPath<Root, Value> {
    box = _SendableTest { $0[keyPath: kp] == value }
  } else if let kp = keyPath as? KeyPath<Root, Value?> {
    box = _SendableTest { $0[keyPath: kp] == value }
  } else {
    return nil
  }
  return { box.test($0) }
}

/// The test of a record for one typed-dictionary entry, and its text for `explain()`; nil
/// when the value cannot match the field (its type is neither the field's nor, for an
/// `Int` or `Int` bounds, a `Double` field's).
private func _typedEntry<Root>(_ value: any Sendable, _ keyPath: PartialKeyPath<Root>, key: String)
  -> (test: @Sendable (Root) -> Bool, description: String)?
{
  if let match = value as? any RequestValueMatch {
    return match._test(keyPath).map { ($0, match._describe(key)) }
  }
  if let equatable = value as? any Equatable {
    return _equalityTest(equatable, keyPath).map { ($0, "\(key) == " + _literal(value)) }
  }
  return nil
}

extension String: RequestValueMatch {}
extension Bool: RequestValueMatch {}
extension Double: RequestValueMatch {}
extension Float: RequestValueMatch {}
extension Int8: RequestValueMatch {}
extension Int16: RequestValueMatch {}
extension Int32: RequestValueMatch {}
extension Int64: RequestValueMatch {}
extension UInt: RequestValueMatch {}
extension UInt8: RequestValueMatch {}
extension UInt16: RequestValueMatch {}
extension UInt32: RequestValueMatch {}
extension UInt64: RequestValueMatch {}
extension Date: RequestValueMatch {}
extension UUID: RequestValueMatch {}

extension Int: RequestValueMatch {
  /// An `Int` (what an integer literal is) matches `Int` fields, and `Double` fields by value.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    let value = self
    if let kp = keyPath as? KeyPath<Root, Int> {
      let box = _SendableKeyPath(keyPath: kp)
      return { $0[keyPath: box.keyPath] == value }
    }
    if let kp = keyPath as? KeyPath<Root, Int?> {
      let box = _SendableKeyPath(keyPath: kp)
      return { $0[keyPath: box.keyPath] == value }
    }
    return Double(value)._test(keyPath)
  }
}

/// A range of a field's values: `1...3` is BETWEEN, `1..<3` excludes the upper bound. The
/// bounds are themselves matchable values (Int, Double, String, Date, …); `Int` bounds
/// (integer literals) also match `Double` fields, by value.
extension ClosedRange: RequestValueMatch where Bound: RequestValueMatch {
  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    if let test = _rangeTest(keyPath, { self.contains($0) }) { return test }
    guard let ints = self as? ClosedRange<Int> else { return nil }
    // Int bounds (integer literals) on a Double field.
    return (Double(ints.lowerBound)...Double(ints.upperBound))._test(keyPath)
  }
  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String {
    "\(key) BETWEEN {\(_literal(lowerBound)), \(_literal(upperBound))}"
  }
}

extension Range: RequestValueMatch where Bound: RequestValueMatch {
  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    if let test = _rangeTest(keyPath, { self.contains($0) }) { return test }
    guard let ints = self as? Range<Int> else { return nil }
    // Int bounds (integer literals) on a Double field.
    return (Double(ints.lowerBound)..<Double(ints.upperBound))._test(keyPath)
  }
  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String {
    "\(key) >= \(_literal(lowerBound)) AND \(key) < \(_literal(upperBound))"
  }
}

extension PartialRangeFrom: RequestValueMatch where Bound: RequestValueMatch {
  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    if let test = _rangeTest(keyPath, { self.contains($0) }) { return test }
    guard let ints = self as? PartialRangeFrom<Int> else { return nil }
    // Int bounds (integer literals) on a Double field.
    return (Double(ints.lowerBound)...)._test(keyPath)
  }
  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String { "\(key) >= \(_literal(lowerBound))" }
}

extension PartialRangeThrough: RequestValueMatch where Bound: RequestValueMatch {
  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    if let test = _rangeTest(keyPath, { self.contains($0) }) { return test }
    guard let ints = self as? PartialRangeThrough<Int> else { return nil }
    // Int bounds (integer literals) on a Double field.
    return (...Double(ints.upperBound))._test(keyPath)
  }
  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String { "\(key) <= \(_literal(upperBound))" }
}

extension PartialRangeUpTo: RequestValueMatch where Bound: RequestValueMatch {
  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    if let test = _rangeTest(keyPath, { self.contains($0) }) { return test }
    guard let ints = self as? PartialRangeUpTo<Int> else { return nil }
    // Int bounds (integer literals) on a Double field.
    return (..<Double(ints.upperBound))._test(keyPath)
  }
  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String { "\(key) < \(_literal(upperBound))" }
}

/// A test of `Bound` or `Bound?` fields with `contains`; nil fields never match.
private func _rangeTest<Root, Bound: Comparable & Sendable>(
  _ keyPath: PartialKeyPath<Root>, _ contains: @escaping @Sendable (Bound) -> Bool
) -> (@Sendable (Root) -> Bool)? {
  if let kp = keyPath as? KeyPath<Root, Bound> {
    let box = _SendableKeyPath(keyPath: kp)
    return { contains($0[keyPath: box.keyPath]) }
  }
  if let kp = keyPath as? KeyPath<Root, Bound?> {
    let box = _SendableKeyPath(keyPath: kp)
    return { $0[keyPath: box.keyPath].map(contains) ?? false }
  }
  return nil
}

/// An inequality as a typed-dictionary value: see ``lt(_:)``, ``lte(_:)``, ``gt(_:)``,
/// ``gte(_:)``.
///
/// ```swift
/// animals.filter([\Animal.age: gt(3)])   // \Animal.age > 3
/// ```
public struct RequestInequality<Value: Comparable & Sendable>: RequestValueMatch {
  /// `<`, `<=`, `>` or `>=`.
  public let comparison: RequestComparison
  /// The value the field is compared with.
  public let value: Value

  /// The test of a record for ``RequestValueMatch``; not for direct use.
  public func _test<Root>(_ keyPath: PartialKeyPath<Root>) -> (@Sendable (Root) -> Bool)? {
    let comparison = comparison, value = value
    let test = _rangeTest(keyPath) { (field: Value) in
      comparison._holds(order: field < value ? -1 : (field == value ? 0 : 1))
    }
    if test != nil { return test }
    guard let int = value as? Int else { return nil }
    // An Int (an integer literal) against a Double field.
    return RequestInequality<Double>(comparison: comparison, value: Double(int))._test(keyPath)
  }

  /// The condition as `explain()` prints it, for ``RequestValueMatch``; not for direct use.
  public func _describe(_ key: String) -> String { "\(key) \(comparison.rawValue) " + _literal(value) }
}

/// A typed-dictionary value matching fields less than `value`.
///
/// ```swift
/// animals.filter([\Animal.age: lt(3)])
/// ```
public func lt<Value: Comparable & Sendable>(_ value: Value) -> RequestInequality<Value> {
  RequestInequality(comparison: .lessThan, value: value)
}

/// A typed-dictionary value matching fields less than or equal to `value`.
///
/// ```swift
/// animals.filter([\Animal.weight: lte(30.0)])
/// ```
public func lte<Value: Comparable & Sendable>(_ value: Value) -> RequestInequality<Value> {
  RequestInequality(comparison: .lessThanOrEqual, value: value)
}

/// A typed-dictionary value matching fields greater than `value`.
///
/// ```swift
/// animals.filter([\Animal.age: gt(3)])
/// ```
public func gt<Value: Comparable & Sendable>(_ value: Value) -> RequestInequality<Value> {
  RequestInequality(comparison: .greaterThan, value: value)
}

/// A typed-dictionary value matching fields greater than or equal to `value`.
///
/// ```swift
/// animals.filter([\Animal.name: gte("M")])
/// ```
public func gte<Value: Comparable & Sendable>(_ value: Value) -> RequestInequality<Value> {
  RequestInequality(comparison: .greaterThanOrEqual, value: value)
}

extension RequestFilter {
  /// A filter requiring every entry of a typed dictionary: each key path's field equals
  /// the value, lies in the range, or satisfies the inequality.
  ///
  /// ```swift
  /// RequestFilter<Animal>([\Animal.species: "Cow", \Animal.age: 1...3, \Animal.weight: gt(100.0)])
  /// // \Animal.age BETWEEN {1, 3} AND \Animal.species == "Cow" AND \Animal.weight > 100.0
  /// ```
  /// The compiler checks that every key is a key path of `Element`. A value is a
  /// ``RequestValueMatch`` (a string, a number, a `Bool`, a `Date`, a `UUID`, a range, an
  /// inequality) or any other `Equatable` value, such as an enum, matched by equality:
  ///
  /// ```swift
  /// enum Status: String, Codable { case open, paid }
  /// RequestFilter<Order>([\Order.status: Status.paid, \Order.amount: 1...3])  // amount is a Double
  /// ```
  /// That a value's type fits its field's is checked here, and a value that cannot fit
  /// makes ``RequestSet/fetch()`` throw `.typeMismatch`; `Int` values and bounds (integer
  /// literals) fit `Double` fields too. An empty dictionary matches everything.
  public init(_ values: [PartialKeyPath<Element> & Sendable: any Sendable]) {
    var nodes: [_FilterNode<Element>] = []
    // Dictionaries have no order; sort by text so explain() is stable.
    for (keyPath, value) in values.sorted(by: { "\($0.key)" < "\($1.key)" }) {
      let key = "\(keyPath)"
      guard let entry = _typedEntry(value, keyPath as PartialKeyPath<Element>, key: key) else {
        let fieldType = type(of: keyPath as AnyKeyPath).valueType
        nodes = [
          .invalid(
            RequestSetError(
              .typeMismatch,
              "\(key) holds \(fieldType) values, so it can never match \(_literal(value)), which is "
                + "\(_withArticle(type(of: value))). Pass \(_withArticle(fieldType)), a range of \(fieldType), "
                + "or lt/lte/gt/gte with \(_withArticle(fieldType))."))
        ]
        break
      }
      let test = entry.test
      nodes.append(.typed(_TypedCondition(description: entry.description) { test($0.pointee) }))
    }
    switch nodes.count {
    case 0: self.init(_node: .constant(true))
    case 1: self.init(_node: nodes[0])
    default: self.init(_node: .and(nodes))
    }
  }
}

extension RequestSet {
  /// Keeps the records matching every entry of a typed dictionary (the Query seed's typed
  /// attributes), joined with the filters before by `mode`.
  ///
  /// ```swift
  /// animals.filter([\Animal.name: "Alice", \Animal.age: 3])
  /// animals.filter([\Animal.age: 1...3, \Animal.weight: lt(100.0)])
  /// animals.filter([\Animal.nickname: "Rexy"])     // an optional field: nil never matches
  /// orders.filter([\Order.status: Status.paid])      // an enum: no conformance needed
  /// ```
  /// See ``RequestFilter/init(_:)-([PartialKeyPath<Element>SendableSendable])`` for what is checked where.
  /// - Complexity: O(*k* log *k*) in the number of entries to build.
  public func filter(
    _ values: [PartialKeyPath<Element> & Sendable: any Sendable], mode: RequestFilterMode = .and
  ) -> RequestSet {
    filter(RequestFilter(values), mode: mode)
  }

  /// Drops the records matching every entry of a typed dictionary.
  ///
  /// ```swift
  /// animals.exclude([\Animal.species: "Cow", \Animal.age: lt(3)])
  /// ```
  public func exclude(_ values: [PartialKeyPath<Element> & Sendable: any Sendable]) -> RequestSet {
    exclude(RequestFilter(values))
  }
}
