// The key-path comparison operators: `\.age > 3` builds a `RequestFilter`.
//
// A stored property of a non-optional type also gets a `fill`: the same test over a whole
// array of records at once, one bit per record (see `_fillWords`), which a count of an
// unindexed scan runs with no call per record.
//
// Each operator reads the field straight from the record's storage, borrowed in place,
// when the key path is a stored property (`MemoryLayout.offset(of:)`), and through the key
// path otherwise. The
// operators are inlinable so the test is specialized for the field's type where it is
// written: a typed filter scans about as fast as a hand-written loop.

/// A literal-like description of a filter value: strings quoted, `nil` for nil.
@usableFromInline
func _literal(_ value: Any) -> String {
  let mirror = Mirror(reflecting: value)
  if mirror.displayStyle == .optional {
    guard let wrapped = mirror.children.first?.value else { return "nil" }
    return _literal(wrapped)
  }
  if let s = value as? String { return FieldValue.string(s).description }
  return String(describing: value)
}

/// The field of type `Value` at `offset` in the record at `record`, borrowed where it lies:
/// a `load` would copy it, a retain and a release per record tested for a `String`.
/// (Memory bound to a struct is bound to its stored properties' types at their offsets.)
@inlinable @inline(__always)
func _borrowedField<Root, Value>(
  _ record: UnsafePointer<Root>, _ offset: Int, _: Value.Type
) -> UnsafePointer<Value> {
  UnsafeRawPointer(record).advanced(by: offset).assumingMemoryBound(to: Value.self)
}

/// Sets one bit per record of `records[0 ..< count]` in `out` (64 records a word): the bit
/// of each record `test` accepts, testing only records set in `mask` when there is one
/// (see `_fillRawWords`, whose loop this is).
///
/// Inlined into each key-path operator's `fill`, so the loop is specialized for the
/// record and value types and calls no closure per record.
@inlinable @inline(__always)
func _fillWords<Root>(
  _ records: UnsafePointer<Root>, _ count: Int, _ out: UnsafeMutablePointer<UInt64>, _ mask: UnsafePointer<UInt64>?,
  _ test: (UnsafePointer<Root>) -> Bool
) {
  _fillRawWords(UnsafeRawPointer(records), MemoryLayout<Root>.stride, 0, count, out, mask) {
    test($0.assumingMemoryBound(to: Root.self))
  }
}

/// A filter keeping records whose field at `lhs` is equal to `rhs`.
///
/// ```swift
/// animals.filter(\.age == 3)
/// ```
@inlinable
public func == <Root: Sendable, Value: Equatable & Sendable>(
  lhs: KeyPath<Root, Value> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) == " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .equal, rhs)
  var assign: (@Sendable (inout Root) -> Void)? = nil
  if lhs is WritableKeyPath<Root, Value> {
    assign = { record in
      if let writable = lhs as? WritableKeyPath<Root, Value> { record[keyPath: writable] = rhs }
    }
  }
  let equality = _TypedEquality.make(lhs, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(
          describe: text, twin: field, keyPath: lhs, assign: assign, equality: equality,
          fill: { _fillWords($0, $1, $2, $3) { _borrowedField($0, offset, Value.self).pointee == rhs } }
        ) {
          _borrowedField($0, offset, Value.self).pointee == rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs, assign: assign, equality: equality) {
        $0.pointee[keyPath: lhs] == rhs
      }))
}

/// A filter keeping records whose field at `lhs` is not equal to `rhs`.
///
/// ```swift
/// animals.filter(\.age != 3)
/// ```
@inlinable
public func != <Root: Sendable, Value: Equatable & Sendable>(
  lhs: KeyPath<Root, Value> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) != " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .notEqual, rhs)
  let equality = _TypedEquality.make(lhs, rhs, isEqual: false)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(
          describe: text, twin: field, keyPath: lhs, equality: equality,
          fill: { _fillWords($0, $1, $2, $3) { _borrowedField($0, offset, Value.self).pointee != rhs } }
        ) {
          _borrowedField($0, offset, Value.self).pointee != rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs, equality: equality) {
        $0.pointee[keyPath: lhs] != rhs
      }))
}

/// A filter keeping records whose field at `lhs` is less than `rhs`.
///
/// ```swift
/// animals.filter(\.age < 3)
/// ```
@inlinable
public func < <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) < " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .lessThan, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(
          describe: text, twin: field, keyPath: lhs,
          fill: { _fillWords($0, $1, $2, $3) { _borrowedField($0, offset, Value.self).pointee < rhs } }
        ) {
          _borrowedField($0, offset, Value.self).pointee < rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) { $0.pointee[keyPath: lhs] < rhs }))
}

/// A filter keeping records whose optional field at `lhs` holds a value less than `rhs`;
/// a `nil` field never matches, as in SQL.
///
/// ```swift
/// animals.filter(\.nickname < "M")
/// ```
@inlinable
public func < <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value?> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) < " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .lessThan, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(describe: text, twin: field, keyPath: lhs) {
          guard let value = _borrowedField($0, offset, Value?.self).pointee else { return false }
          return value < rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) {
        guard let value = $0.pointee[keyPath: lhs] else { return false }
        return value < rhs
      }))
}

/// A filter keeping records whose field at `lhs` is less than or equal to `rhs`.
///
/// ```swift
/// animals.filter(\.age <= 3)
/// ```
@inlinable
public func <= <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) <= " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .lessThanOrEqual, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(
          describe: text, twin: field, keyPath: lhs,
          fill: { _fillWords($0, $1, $2, $3) { _borrowedField($0, offset, Value.self).pointee <= rhs } }
        ) {
          _borrowedField($0, offset, Value.self).pointee <= rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) { $0.pointee[keyPath: lhs] <= rhs }))
}

/// A filter keeping records whose optional field at `lhs` holds a value less than or equal to `rhs`;
/// a `nil` field never matches, as in SQL.
///
/// ```swift
/// animals.filter(\.nickname <= "M")
/// ```
@inlinable
public func <= <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value?> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) <= " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .lessThanOrEqual, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(describe: text, twin: field, keyPath: lhs) {
          guard let value = _borrowedField($0, offset, Value?.self).pointee else { return false }
          return value <= rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) {
        guard let value = $0.pointee[keyPath: lhs] else { return false }
        return value <= rhs
      }))
}

/// A filter keeping records whose field at `lhs` is greater than `rhs`.
///
/// ```swift
/// animals.filter(\.age > 3)
/// ```
@inlinable
public func > <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) > " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .greaterThan, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(
          describe: text, twin: field, keyPath: lhs,
          fill: { _fillWords($0, $1, $2, $3) { _borrowedField($0, offset, Value.self).pointee > rhs } }
        ) {
          _borrowedField($0, offset, Value.self).pointee > rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) { $0.pointee[keyPath: lhs] > rhs }))
}

/// A filter keeping records whose optional field at `lhs` holds a value greater than `rhs`;
/// a `nil` field never matches, as in SQL.
///
/// ```swift
/// animals.filter(\.nickname > "M")
/// ```
@inlinable
public func > <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value?> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) > " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .greaterThan, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(describe: text, twin: field, keyPath: lhs) {
          guard let value = _borrowedField($0, offset, Value?.self).pointee else { return false }
          return value > rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) {
        guard let value = $0.pointee[keyPath: lhs] else { return false }
        return value > rhs
      }))
}

/// A filter keeping records whose field at `lhs` is greater than or equal to `rhs`.
///
/// ```swift
/// animals.filter(\.age >= 3)
/// ```
@inlinable
public func >= <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) >= " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .greaterThanOrEqual, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(
          describe: text, twin: field, keyPath: lhs,
          fill: { _fillWords($0, $1, $2, $3) { _borrowedField($0, offset, Value.self).pointee >= rhs } }
        ) {
          _borrowedField($0, offset, Value.self).pointee >= rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) { $0.pointee[keyPath: lhs] >= rhs }))
}

/// A filter keeping records whose optional field at `lhs` holds a value greater than or equal to `rhs`;
/// a `nil` field never matches, as in SQL.
///
/// ```swift
/// animals.filter(\.nickname >= "M")
/// ```
@inlinable
public func >= <Root: Sendable, Value: Comparable & Sendable>(
  lhs: KeyPath<Root, Value?> & Sendable, rhs: Value
) -> RequestFilter<Root> {
  let text: @Sendable () -> String = { "\(lhs) >= " + _literal(rhs) }
  let field = _fieldTwin(lhs, Root.self, .greaterThanOrEqual, rhs)
  if let offset = MemoryLayout<Root>.offset(of: lhs) {
    return RequestFilter(
      _node: .typed(
        _TypedCondition(describe: text, twin: field, keyPath: lhs) {
          guard let value = _borrowedField($0, offset, Value?.self).pointee else { return false }
          return value >= rhs
        }))
  }
  return RequestFilter(
    _node: .typed(
      _TypedCondition(describe: text, twin: field, keyPath: lhs) {
        guard let value = $0.pointee[keyPath: lhs] else { return false }
        return value >= rhs
      }))
}

extension RequestFilter {
  /// A filter keeping records whose field at `keyPath` equals one of `values`: SQL's `IN`.
  ///
  /// It is the typed form of `key IN {…}` and the way to ask for many values of one
  /// field: one set lookup per record, or one index (or id) lookup per value, where an OR
  /// of as many equalities would test each. An empty list matches no record.
  ///
  /// ```swift
  /// let picked = RequestFilter<Animal>(\.id, in: [1, 3, 7])
  /// // description: \Animal.id IN {1, 3, 7}
  /// animals.filter(picked).count   // 2 when the store holds no record 7
  /// ```
  /// - Parameters:
  ///   - keyPath: The field to test.
  ///   - values: The values to keep; duplicates do not matter.
  /// - Complexity: O(*v*) to build for *v* values; O(1) per record tested.
  public init<Value: Hashable & Sendable>(_ keyPath: KeyPath<Element, Value> & Sendable, in values: some Sequence<Value>) {
    let list = Array(values)
    let set = Set(list)
    let field = _fieldTwin(keyPath, Element.self, in: list)
    let describe: @Sendable () -> String = {
      "\(keyPath) IN {" + list.map { _literal($0) }.joined(separator: ", ") + "}"
    }
    self.init(
      _node: .typed(
        _TypedCondition(describe: describe, twin: field, keyPath: keyPath) {
          set.contains($0.pointee[keyPath: keyPath])
        }))
  }
}
