// Typed keys through relations: `Animal.owner.city == "Oslo"`, `Animal.visits.count > 2`,
// `Animal.visits.any.vet == "Ann"`, `Animal.visits.sum(\.cost) > 100`, and through a
// many-to-many `Animal.vets.any.name == "Ann"`.
//
// The compiler checks the relation, the key path and the value's type. Each builds the
// same condition as the string key would (`owner.city`, `visits.@count`, `ANY visits.vet`,
// `visits.@sum.cost`), so it resolves, pushes down and explains exactly as that key does.

/// A key of `Source` records through a relation, typed by the value it reads.
///
/// ```swift
/// graph.records(Animal.self).filter(Animal.owner.city == "Oslo")
/// graph.records(Animal.self).sortBy(Animal.owner.name)
/// graph.records(Animal.self).filter(Animal.visits.count >= 2)
/// graph.records(Animal.self).filter(Animal.vets.any.name == "Ann")
/// ```
/// A typed key walks one relation (two for a many-to-many), well within the 16 relations
/// a string key may walk (`owner.pets.owner…`); a longer string key throws
/// `.invalidRelation`.
public struct RelatedKey<Source: Sendable, Value>: Sendable {
  /// The string key the typed key stands for: `owner.city`, `visits.@count`.
  public let key: String
  let path: String
  let quantifier: _Quantifier?
  let countsElements: Bool
  let aggregate: _Function?
  /// Why the key cannot be built (a key path to a computed property), if it cannot.
  let problem: String?

  init(
    path: String, quantifier: _Quantifier? = nil, countsElements: Bool = false, aggregate: _Function? = nil,
    problem: String? = nil
  ) {
    self.path = path
    self.quantifier = quantifier
    self.countsElements = countsElements
    self.aggregate = aggregate
    self.problem = problem
    if countsElements {
      key = path + ".@count"
    } else if let aggregate {
      let parts = path.split(separator: ".", maxSplits: 1)
      key = parts[0] + "." + aggregate.rawValue + (parts.count > 1 ? "." + parts[1] : "")
    } else {
      key = path
    }
  }

  /// `key <comparison> value` as the filter the string key would build.
  func _filter(_ comparison: RequestComparison, _ value: some Encodable) -> RequestFilter<Source> {
    if let problem { return RequestFilter(_node: .invalid(RequestSetError(.invalidRelation, problem))) }
    guard let encoded = try? _FieldEncoder.encode(value) else {
      return RequestFilter(
        _node: .invalid(RequestSetError(.encodingFailed, "The value compared with \(key) could not be encoded.")))
    }
    if let aggregate {
      let condition = _ExpressionCondition(
        lhs: .function(aggregate, [.key(path)]), op: .compare(comparison), options: [], quantifier: nil,
        rhs: .constant(encoded))
      return RequestFilter(_node: .expression(condition))
    }
    guard
      let condition = try? _FieldCondition(
        key: path, op: .compare(comparison), value: encoded, quantifier: quantifier, countsElements: countsElements)
    else { return RequestFilter(_node: .constant(false)) }
    return RequestFilter(_node: .field(condition))
  }
}

/// The key of `keyPath` on `Root`, or a message saying why it has none.
func _relationKeyName<Root>(_ keyPath: AnyKeyPath, _ root: Root.Type) -> (String?, String?) {
  if let key = _storedFieldKey(keyPath, root: Root.self) { return (key, nil) }
  return (nil, "\(keyPath) names no stored property of \(Root.self); a key through a relation reads stored fields. "
    + "Use a stored property, or a string key.")
}

extension ToOne {
  /// The key `name.key` of the related record: `Animal.owner.city`.
  ///
  /// ```swift
  /// graph.records(Animal.self).filter(Animal.owner.city == "Oslo")
  /// ```
  public subscript<Value>(dynamicMember keyPath: KeyPath<Target, Value> & Sendable) -> RelatedKey<Source, Value> {
    let (key, problem) = _relationKeyName(keyPath, Target.self)
    return RelatedKey(path: relationName + "." + (key ?? ""), problem: problem)
  }
}

/// The related records of a to-many or many-to-many relation under a quantifier:
/// `Animal.visits.any.vet`, `Animal.vets.any.name`.
///
/// ```swift
/// graph.records(Animal.self).filter(Animal.visits.any.vet == "Ann")
/// graph.records(Animal.self).filter(Animal.visits.all.cost < 100)
/// graph.records(Animal.self).filter(Animal.vets.none.name == "Max")
/// ```
@dynamicMemberLookup
public struct RelatedElements<Source: Record, Target: Record>: Sendable {
  let _name: String
  let _quantifier: _Quantifier

  /// The key of every related record, under the quantifier.
  public subscript<Value>(dynamicMember keyPath: KeyPath<Target, Value> & Sendable) -> RelatedKey<Source, Value> {
    let (key, problem) = _relationKeyName(keyPath, Target.self)
    return RelatedKey(path: _name + "." + (key ?? ""), quantifier: _quantifier, problem: problem)
  }
}

/// A relation that reaches many records of `Target`: a ``ToMany``, or a many-to-many
/// ``ToManyThrough``. Both take the same typed keys, which build the conditions their
/// string keys build (`ANY vets.name`, `vets.@count`, `vets.@sum.fee`).
///
/// ```swift
/// graph.records(Animal.self).filter(Animal.visits.any.vet == "Ann")
/// graph.records(Animal.self).filter(Animal.vets.any.name == "Ann")      // through the visits
/// graph.records(Animal.self).sortBy(Animal.vets.count, order: .descending)
/// ```
/// Through a ``ToManyThrough``, the related records are those the join records reach: a
/// join record whose to-one names no record adds none, and a record reached twice counts
/// twice.
public protocol ToManyRelation<Source, Target>: Relation {
  /// The record type the relation reaches.
  associatedtype Target: Record
}

extension ToMany: ToManyRelation {}
extension ToManyThrough: ToManyRelation {}

extension ToManyRelation {
  /// A condition that holds when any related record meets it: `ANY visits.vet == 'Ann'`.
  public var any: RelatedElements<Source, Target> { RelatedElements(_name: relationName, _quantifier: .any) }
  /// A condition that holds when every related record meets it (and when there is none):
  /// `ALL visits.cost < 100`.
  public var all: RelatedElements<Source, Target> { RelatedElements(_name: relationName, _quantifier: .all) }
  /// A condition that holds when no related record meets it: `NONE visits.vet == 'Ann'`.
  public var none: RelatedElements<Source, Target> { RelatedElements(_name: relationName, _quantifier: .noElement) }

  /// The number of related records: `visits.@count`.
  ///
  /// ```swift
  /// graph.records(Animal.self).filter(Animal.visits.count > 2).sortBy(Animal.visits.count)
  /// ```
  public var count: RelatedKey<Source, Int> { RelatedKey(path: relationName, countsElements: true) }

  /// Holds for records with no related record: `visits.@count == 0`.
  public var isEmpty: RequestFilter<Source> { count == 0 }

  /// Holds for records with at least one related record: `visits.@count > 0`.
  public var exists: RequestFilter<Source> { count > 0 }

  /// The sum of a key over the related records (0 when there is none): `visits.@sum.cost`.
  public func sum<Value: Numeric>(_ keyPath: KeyPath<Target, Value> & Sendable) -> RelatedKey<Source, Value> {
    _aggregate(.sumOperator, keyPath)
  }

  /// The average of a key over the related records (0 when there is none, as KVC's `@avg`
  /// answers): `visits.@avg.cost`.
  public func average<Value: Numeric>(_ keyPath: KeyPath<Target, Value> & Sendable) -> RelatedKey<Source, Double> {
    _aggregate(.avgOperator, keyPath)
  }

  /// The least value of a key over the related records (nil when there is none).
  public func min<Value: Comparable>(_ keyPath: KeyPath<Target, Value> & Sendable) -> RelatedKey<Source, Value> {
    _aggregate(.minOperator, keyPath)
  }

  /// The greatest value of a key over the related records (nil when there is none).
  public func max<Value: Comparable>(_ keyPath: KeyPath<Target, Value> & Sendable) -> RelatedKey<Source, Value> {
    _aggregate(.maxOperator, keyPath)
  }

  private func _aggregate<V, R>(_ f: _Function, _ keyPath: KeyPath<Target, V> & Sendable) -> RelatedKey<Source, R> {
    let (key, problem) = _relationKeyName(keyPath, Target.self)
    return RelatedKey(path: relationName + "." + (key ?? ""), aggregate: f, problem: problem)
  }
}

// MARK: Comparisons

/// `Animal.owner.city == "Oslo"`.
public func == <S, V: Encodable & Sendable>(lhs: RelatedKey<S, V>, rhs: V) -> RequestFilter<S> { lhs._filter(.equal, rhs) }
/// `Animal.owner.city != "Oslo"`.
public func != <S, V: Encodable & Sendable>(lhs: RelatedKey<S, V>, rhs: V) -> RequestFilter<S> { lhs._filter(.notEqual, rhs) }
/// `Animal.owner.age < 40`.
public func < <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.lessThan, rhs)
}
/// `Animal.owner.age <= 40`.
public func <= <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.lessThanOrEqual, rhs)
}
/// `Animal.owner.age > 40`.
public func > <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.greaterThan, rhs)
}
/// `Animal.owner.age >= 40`.
public func >= <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.greaterThanOrEqual, rhs)
}
/// `Animal.owner.nickname == "Bo"` for an optional key (nil when there is no owner).
public func == <S, V: Encodable & Sendable>(lhs: RelatedKey<S, V?>, rhs: V?) -> RequestFilter<S> { lhs._filter(.equal, rhs) }
/// `Animal.owner.nickname != "Bo"` for an optional key.
public func != <S, V: Encodable & Sendable>(lhs: RelatedKey<S, V?>, rhs: V?) -> RequestFilter<S> {
  lhs._filter(.notEqual, rhs)
}
/// `Animal.owner.born < date` for an optional key: false where the key is nil.
public func < <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V?>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.lessThan, rhs)
}
/// `Animal.owner.born <= date` for an optional key: false where the key is nil.
public func <= <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V?>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.lessThanOrEqual, rhs)
}
/// `Animal.owner.born > date` for an optional key: false where the key is nil.
public func > <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V?>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.greaterThan, rhs)
}
/// `Animal.owner.born >= date` for an optional key: false where the key is nil.
public func >= <S, V: Encodable & Comparable & Sendable>(lhs: RelatedKey<S, V?>, rhs: V) -> RequestFilter<S> {
  lhs._filter(.greaterThanOrEqual, rhs)
}

extension RequestSet {
  /// Sorts by a key through a relation: a to-one's key, or a to-many's count or aggregate.
  ///
  /// ```swift
  /// graph.records(Animal.self).sortBy(Animal.owner.name)
  /// graph.records(Animal.self).sortBy(Animal.visits.count, order: .descending)
  /// ```
  /// A key sorts as a filter reads it. Through a to-one, a record with no related record
  /// sorts as nil (first in ascending order, last in descending); a collection operator
  /// sorts as what it gives for no related record: 0 for `count`, `sum` and `average`
  /// (`visits.@sum.cost == 0` matches a pet with no visits, and it sorts after a pet whose
  /// visits sum below 0), nil for `min` and `max`.
  public func sortBy<Value>(_ key: RelatedKey<Element, Value>, order: RequestSortOrder = .ascending) -> RequestSet {
    if let problem = key.problem {
      return _with { $0.invalidate(RequestSetError(.invalidRelation, problem)) }
    }
    return _with { $0.addSort([.field(key: key.key, order: order, collation: .binary)]) }
  }
}
