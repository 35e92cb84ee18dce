extension RequestSet {
  /// Runs `body` over the records of the evaluated set, in place, without copying them out.
  func _forEachRecord(_ body: (UnsafePointer<Element>) throws -> Void) throws {
    let e = try _cache.evaluation(_source, _query)
    try _RecordCursor.with(e.snapshot) { cursor in
      for slot in e.slots {
        try _CancelToken.throwIfCancelled()  // a log decodes each record here
        try body(try cursor.pointer(slot))
      }
    }
  }

  /// The sum of a numeric key path over the set (0 for an empty set).
  ///
  /// ```swift
  /// let total = try animals.filter("species", value: "Cow").sum(\.weight)
  /// ```
  /// Floating-point sums follow IEEE 754 (a sum past the largest value is infinity);
  /// integer key paths sum as the `FixedWidthInteger` overload does, exactly, throwing
  /// instead of overflowing, even when this overload is the one a generic caller (or
  /// `set.async.sum(_:)`) reaches.
  /// - Throws: ``RequestSetError`` `.overflow` when an integer total does not fit.
  /// - Complexity: O(*m*) over the *m* records of the set, which are never materialized.
  public func sum<Value: AdditiveArithmetic>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Value {
    // One sum per kind of value, whichever overload the caller's context picked.
    if let integer = Value.self as? any FixedWidthInteger.Type {
      func exact<I: FixedWidthInteger>(_: I.Type) throws -> Value {
        try sum(keyPath as! KeyPath<Element, I> & Sendable) as! Value
      }
      return try exact(integer)
    }
    var total = Value.zero
    try _forEachRecord { total += $0.pointee[keyPath: keyPath] }
    return total
  }

  /// The exact sum of an integer key path over the set (0 for an empty set), or an error
  /// when it does not fit in `Value`.
  ///
  /// ```swift
  /// let totalAge = try animals.sum(\.age)      // Int
  /// try RequestSet([Int.max, 1]).sum(\.self)   // throws .overflow
  /// ```
  /// Only the total must fit: values of up to 64 bits add up exactly whatever their order
  /// (`[Int.max, 1, -1]` sums to `Int.max`). `sum("key")` on the same field returns the
  /// same total, or throws the same error.
  /// - Throws: ``RequestSetError`` `.overflow` when the total passes `Value.max` or
  ///   `Value.min` (for wider types than 64 bits, when a running total does).
  /// - Complexity: O(*m*) over the *m* records of the set, which are never materialized.
  public func sum<Value: FixedWidthInteger>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Value {
    let overflow = { RequestSetError.sumOverflow("\(keyPath)", Value.self) }
    if Value.bitWidth <= 64 {
      var total: Int128 = 0
      try _forEachRecord { total += Int128($0.pointee[keyPath: keyPath]) }
      guard let exact = Value(exactly: total) else { throw overflow() }
      return exact
    }
    var total = Value.zero
    try _forEachRecord {
      let (s, o) = total.addingReportingOverflow($0.pointee[keyPath: keyPath])
      if o { throw overflow() }
      total = s
    }
    return total
  }

  /// The smallest value of a key path over the set, or nil for an empty set.
  ///
  /// ```swift
  /// let youngest = try animals.min(\.age)
  /// ```
  /// A floating-point key path skips NaN, as the `BinaryFloatingPoint` overload does, even
  /// when this overload is the one a generic caller (or `set.async.min(_:)`) reaches.
  public func min<Value: Comparable>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Value? {
    if let floating = Value.self as? any BinaryFloatingPoint.Type {
      func skippingNaN<F: BinaryFloatingPoint>(_: F.Type) throws -> Value? {
        try min(keyPath as! KeyPath<Element, F> & Sendable).map { $0 as! Value }
      }
      return try skippingNaN(floating)
    }
    var best: Value?
    try _forEachRecord { p in
      let v = p.pointee[keyPath: keyPath]
      if best.map({ v < $0 }) ?? true { best = v }
    }
    return best
  }

  /// The largest value of a key path over the set, or nil for an empty set.
  ///
  /// ```swift
  /// let oldest = try animals.max(\.age)
  /// ```
  /// A floating-point key path skips NaN, as the `BinaryFloatingPoint` overload does, even
  /// when this overload is the one a generic caller (or `set.async.max(_:)`) reaches.
  public func max<Value: Comparable>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Value? {
    if let floating = Value.self as? any BinaryFloatingPoint.Type {
      func skippingNaN<F: BinaryFloatingPoint>(_: F.Type) throws -> Value? {
        try max(keyPath as! KeyPath<Element, F> & Sendable).map { $0 as! Value }
      }
      return try skippingNaN(floating)
    }
    var best: Value?
    try _forEachRecord { p in
      let v = p.pointee[keyPath: keyPath]
      if best.map({ v > $0 }) ?? true { best = v }
    }
    return best
  }

  /// The smallest value of a floating-point key path over the set, skipping NaN; nil
  /// when the set is empty or holds only NaN.
  ///
  /// ```swift
  /// let lightest = try animals.min(\.weight)
  /// ```
  /// NaN compares with nothing, so a minimum that kept it would depend on where it stands;
  /// `min("weight")` skips it too.
  public func min<Value: BinaryFloatingPoint>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Value? {
    var best: Value?
    try _forEachRecord { p in
      let v = p.pointee[keyPath: keyPath]
      if !v.isNaN, best.map({ v < $0 }) ?? true { best = v }
    }
    return best
  }

  /// The largest value of a floating-point key path over the set, skipping NaN; nil when
  /// the set is empty or holds only NaN.
  ///
  /// ```swift
  /// let heaviest = try animals.max(\.weight)
  /// ```
  /// Like the floating-point `min`, it skips NaN, as `max("weight")` does.
  public func max<Value: BinaryFloatingPoint>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Value? {
    var best: Value?
    try _forEachRecord { p in
      let v = p.pointee[keyPath: keyPath]
      if !v.isNaN, best.map({ v > $0 }) ?? true { best = v }
    }
    return best
  }

  /// The mean of an integer key path over the set, or nil for an empty set.
  ///
  /// ```swift
  /// let meanAge = try animals.average(\.age)   // Double?
  /// ```
  ///
  /// The mean is taken from the exact sum of values of up to 64 bits (`Int.min` and
  /// `Int.max` average to -0.5, not to a rounding error), then divided as a Double.
  public func average<Value: BinaryInteger>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Double? {
    var exact: Int128 = 0
    var total = 0.0, n = 0
    var isExact = true
    try _forEachRecord {
      let v = $0.pointee[keyPath: keyPath]
      if isExact, let wide = Int128(exactly: v) {
        let (sum, overflow) = exact.addingReportingOverflow(wide)
        if overflow { isExact = false } else { exact = sum }
      } else {
        isExact = false
      }
      total += Double(v)
      n += 1
    }
    return n == 0 ? nil : (isExact ? Double(exact) : total) / Double(n)
  }

  /// The mean of a floating-point key path over the set, or nil for an empty set.
  ///
  /// ```swift
  /// let meanWeight = try animals.average(\.weight)
  /// ```
  public func average<Value: BinaryFloatingPoint>(_ keyPath: KeyPath<Element, Value> & Sendable) throws -> Double? {
    var total = 0.0, n = 0
    try _forEachRecord {
      total += Double($0.pointee[keyPath: keyPath])
      n += 1
    }
    return n == 0 ? nil : total / Double(n)
  }
}

extension RequestSet where Element: Encodable {
  /// Computes an aggregate of a string key over the set from the store's fields, without
  /// decoding records.
  func _aggregate(_ function: RequestAggregate.Function, _ key: String) throws -> FieldValue {
    if _source.pushdown != nil, let pushed = try _pushdownAggregate(function, key) { return pushed }
    let e = try _cache.evaluation(_source, _query)
    let fields = try e.snapshot._fields()
    try _FilterCompiler<Element>.validate(key, value: nil, in: fields)
    try _Accumulator.check(function, key: key, kinds: fields.kinds[key] ?? _KindSet(), type: Element.self)
    var acc = _Accumulator(function)
    if let read = try fields.readerWithDateParts(for: key) {
      for slot in e.slots { acc.add(try read(slot)) }
    }
    return try acc.result(type: Element.self, key: key)
  }

  /// The sum of a numeric key's non-nil values: `.int` when every value is an integer,
  /// `.double` as soon as one is a Double.
  ///
  /// ```swift
  /// try animals.sum("weight")     // .double(1109.6)
  /// try animals.sum("age")        // .int(34)
  /// ```
  /// An integer total is exact and must fit in `Int`, as with the typed
  /// `sum(\.key)`: both return the same value or throw
  /// the same `.overflow`, never a wrapped or rounded number.
  /// - Throws: ``RequestSetError`` `.unknownKey`, `.typeMismatch` for a key that does
  ///   not hold numbers, or `.overflow` when an integer total passes `Int.max` or `Int.min`.
  public func sum(_ key: String) throws -> FieldValue { try _aggregate(.sum, key) }

  /// The smallest non-nil value of a key (NaN is skipped), or `.null` when there is none.
  ///
  /// ```swift
  /// try animals.min("age")        // .int(2)
  /// ```
  /// - Throws: ``RequestSetError`` `.typeMismatch` for a key holding arrays, objects or
  ///   values of several kinds.
  public func min(_ key: String) throws -> FieldValue { try _aggregate(.min, key) }

  /// The largest non-nil value of a key (NaN is skipped), or `.null` when there is none.
  ///
  /// ```swift
  /// try animals.max("name")       // .string("alice")
  /// ```
  public func max(_ key: String) throws -> FieldValue { try _aggregate(.max, key) }

  /// The mean of a numeric key's non-nil values, or nil when there is none.
  ///
  /// ```swift
  /// try animals.average("age")    // 5.67
  /// ```
  public func average(_ key: String) throws -> Double? {
    if case .double(let d) = try _aggregate(.avg, key) { return d }
    return nil
  }
}
