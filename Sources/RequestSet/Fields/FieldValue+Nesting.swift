extension FieldValue {
  /// How deep a record's values may nest, on every store: the record is level 1, the
  /// values of its fields level 2, the elements of an array held in a field level 3, and
  /// so on. A record with any value (scalar, array or object, empty or not) deeper than
  /// level 256 is refused with `.encodingFailed` before anything is written.
  ///
  /// One limit for every store, so that what one store accepts every other accepts and
  /// reads back: it is the depth a ``LogStore`` frame holds, and well inside what SQLite's
  /// and PostgreSQL's JSON functions and a thread's stack allow.
  ///
  /// ```swift
  /// struct Doc: Record { var id: Int; var body: FieldValue }
  /// var deep = FieldValue.int(0)
  /// for _ in 0..<300 { deep = .array([deep]) }
  /// try store.insert(Doc(id: 1, body: deep))
  /// // throws .encodingFailed: "A value of the record nests 302 levels deep, under "body"; …"
  /// ```
  public static let maxNestingDepth = 256

  /// The level of this value's deepest part, counting this value as `level`, or nil when
  /// that is within ``maxNestingDepth``. A walk with its own stack: the value may come from
  /// a program's input, nested far deeper than a thread's stack could follow.
  func _levelPastNestingLimit(startingAt level: Int) -> Int? {
    switch self {
    case .array, .object: break
    default: return level > Self.maxNestingDepth ? level : nil
    }
    var deepest = 0
    var pending: [(FieldValue, Int)] = [(self, level)]
    while let (value, at) = pending.popLast() {
      if at > Self.maxNestingDepth {
        deepest = Swift.max(deepest, at)
        // Go on only to say how deep it goes, with a bound on the work.
        if deepest > Self.maxNestingDepth * 64 { return deepest }
      }
      switch value {
      case .array(let items): for item in items { pending.append((item, at + 1)) }
      case .object(let fields): for field in fields.values { pending.append((field, at + 1)) }
      default: break
      }
    }
    return deepest > 0 ? deepest : nil
  }

  /// The error for a value nested past ``maxNestingDepth``.
  static func _nestingError(level: Int, key: String?) -> RequestSetError {
    let deep = level > maxNestingDepth * 64 ? "more than \(maxNestingDepth * 64)" : "\(level)"
    let under = key.map { " under \"\($0)\"" } ?? ""
    return RequestSetError(
      .encodingFailed,
      "A value of the record nests \(deep) levels deep\(under); every store accepts at most "
        + "\(maxNestingDepth) (FieldValue.maxNestingDepth; the record is level 1). Nothing was written. "
        + "Flatten the value, or keep its deep part as text (JSON, say).")
  }
}
