/// `id IN (the ids of another set)`: the operand of a set operation that has a window of
/// its own (see `RequestSet+SetOperations.swift`).
///
/// The operand is read when the query that holds the condition is prepared, in a read of
/// its own, and the condition becomes `id IN {…}`: an ordinary field condition that every
/// store runs (SQL stores as `IN` over a bound list), as a relation's semi-join does.
@usableFromInline
struct _IDSubquery<Element: Sendable>: Sendable {
  /// How `explain()` names the operand before it is read.
  let description: String
  /// Reads the operand's ids, encoded as the store encodes the `id` field.
  let ids: @Sendable () throws -> [FieldValue]

  /// The condition `id IN {ids}`, or an invalid node carrying the error reading the
  /// operand threw: evaluating the query throws it.
  func resolved() -> _FilterNode<Element> {
    do {
      return .field(try _FieldCondition(key: _Keyset.idKey, op: .in, value: .array(ids())))
    } catch let error as RequestSetError {
      return .invalid(error)
    } catch {
      return .invalid(
        RequestSetError(.storeFailed, "Reading a set operation's operand failed: \(error)", underlying: error)
      )
    }
  }
}
