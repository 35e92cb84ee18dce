import RequestSet

/// The rules the SQL stores share when they compute a string-key aggregate themselves.
///
/// ```swift
/// SQLAggregates.acceptsKinds(.sum, held: ["n"])        // true: numbers only
/// SQLAggregates.acceptsKinds(.min, held: ["n", "s"])   // false: the engine throws .typeMismatch
/// ```
public enum SQLAggregates {
  /// Whether the engine computes `function` over a key whose values, across the whole
  /// table, are of the kinds in `held` (`"n"` numbers, `"b"` Bools, `"s"` strings, `"c"`
  /// arrays and objects; nil ignored), rather than throwing `.typeMismatch`: numbers only
  /// for a sum or an average, one kind of scalar for a minimum or a maximum.
  ///
  /// - Parameters:
  ///   - function: The aggregate.
  ///   - held: The kinds of the key's values in the table.
  /// - Returns: True when the store may compute it; false leaves it to the engine.
  public static func acceptsKinds(_ function: StoreAggregate, held: Set<Substring>) -> Bool {
    switch function {
    case .sum, .average: return held.isSubset(of: ["n"])
    case .min, .max: return held.count <= 1 && !held.contains("c")
    }
  }
}
