// SUBQUERY through a to-many relation, resolved as a count of the children it selects.
//
// `SUBQUERY(visits, $v, $v.cost > 50 AND $v.day < 3).@count > 2` counts, for each pet, the
// visits whose own keys pass a condition. When that condition reads only the member
// (`$v.key`, `$v.vet.clinic` through the child's to-one relations, constants), it is a
// condition on the children's store, and the whole comparison is `visits.@count > 2`
// over the children that match it: one query on the children's store (or, when the two
// stores share a database, one grouped subquery inside the record's statement, as
// `visits.@count` is; see RelationResolution.swift), never the children materialized
// under each record.
//
// A condition that reads anything else stays on the general road (the related records
// materialized as nested values, the expression computed on each record): a bare key
// (the outer record's: `SUBQUERY(friends, $f, $f.age > age)` compares each friend with
// the record), `SELF`, another variable, a to-many further on (`$v.vet.visits`), or a
// nested SUBQUERY.

extension _RelationResolver {
  /// `c` as a count of the children its SUBQUERY selects (see the top of this file), or
  /// nil when it is not `SUBQUERY(toMany, $v, condition on $v).@count <op> constant` (or
  /// `[SIZE]`, or with the constant on the left).
  func countedSubquery(_ c: _ExpressionCondition, notes: inout [String]) throws -> _FilterNode<Element>? {
    guard c.quantifier == nil else { return nil }
    var (lhs, op, rhs) = (c.lhs, c.op, c.rhs)
    if let value = lhs.constantValue, rhs.constantValue == nil {
      guard let mirrored = _FieldOperator._mirror(op, value) else { return nil }
      (lhs, op, rhs) = (rhs, mirrored, lhs)
    }
    guard let constant = rhs.constantValue, let counted = lhs._countedSubquery,
      case .key(let name) = counted.collection, let relation = relations[name],
      case .toMany(let key) = relation.kind
    else { return nil }
    let graph = self.graph
    let target = relation.target
    // A key of the child that walks only to-one relations and ends in a stored key: a
    // field of its store, or a condition its own relations resolve. (`$v.vet` alone is
    // the related record, which compares unlike its id.)
    let accepts: (String) -> Bool = { key in
      var type: Any.Type = target
      for component in key.split(separator: ".") {
        if component.hasPrefix("@") { return false }
        guard let relation = graph.relation(String(component), of: type) else { return true }
        guard relation.isToOne else { return false }
        type = relation.target
      }
      return false
    }
    guard let filter = try counted.predicate._overMember(counted.variable, accepts: accepts) else {
      return nil
    }
    let test = try _FieldCondition(key: "", op: op, value: constant, options: c.options)
    return try _count(test, relation, try graph.targetEntry(relation), key, where: filter, notes: &notes)
  }
}

extension _Expression {
  /// `SUBQUERY(collection, $variable, predicate).@count` (or `[SIZE]`): its parts.
  var _countedSubquery: (collection: _Expression, variable: String, predicate: _FieldPredicate)? {
    let inner: _Expression
    switch self {
    case .function(.countOperator, let args) where args.count == 1: inner = args[0]
    case .index(let base, .size): inner = base
    default: return nil
    }
    guard case .subquery(let collection, let variable, let predicate) = inner else { return nil }
    return (collection, variable, predicate)
  }

  /// The expression over the member's own keys (`$v.cost` is `cost`), or nil when it
  /// reads anything but the member's keys and constants, or a key `accepts` refuses.
  func _overMember(_ variable: String, accepts: (String) -> Bool) -> _Expression? {
    switch self {
    case .constant:
      return self
    case .member:
      guard let key = _memberKey(of: variable), accepts(key) else { return nil }
      return .key(key)
    case .function(let f, let args):
      var mapped: [_Expression] = []
      for a in args {
        guard let m = a._overMember(variable, accepts: accepts) else { return nil }
        mapped.append(m)
      }
      return .function(f, mapped)
    case .list(let items):
      var mapped: [_Expression] = []
      for item in items {
        guard let m = item._overMember(variable, accepts: accepts) else { return nil }
        mapped.append(m)
      }
      return .list(mapped)
    case .index(let base, let s):
      guard let b = base._overMember(variable, accepts: accepts) else { return nil }
      guard case .at(let position) = s else { return .index(b, s) }
      guard let p = position._overMember(variable, accepts: accepts) else { return nil }
      return .index(b, .at(p))
    case .key, .evaluatedObject, .variable, .subquery:
      // The outer record's key, the record, the member itself or another variable, or a
      // nested SUBQUERY: not a condition on the member's keys alone.
      return nil
    }
  }

  /// `$v.vet.clinic` as `vet.clinic`; nil for a member of anything but `$variable`.
  private func _memberKey(of variable: String) -> String? {
    guard case .member(let base, let key) = self else { return nil }
    if case .variable(let name) = base { return name == variable ? key : nil }
    return base._memberKey(of: variable).map { $0 + "." + key }
  }
}

extension _FieldPredicate {
  /// A SUBQUERY's predicate as a condition on its member's keys (see
  /// `_Expression._overMember`), comparisons of a key and a constant lowered to field
  /// conditions; nil when any part reads more than the member.
  func _overMember(_ variable: String, accepts: (String) -> Bool) throws -> _FieldPredicate? {
    switch self {
    case .constant:
      return self
    case .and(let parts), .or(let parts):
      var mapped: [_FieldPredicate] = []
      for part in parts {
        guard let m = try part._overMember(variable, accepts: accepts) else { return nil }
        mapped.append(m)
      }
      if case .and = self { return .and(mapped) }
      return .or(mapped)
    case .not(let inner):
      return try inner._overMember(variable, accepts: accepts).map { .not($0) }
    case .field, .search:
      // A bare key inside a SUBQUERY is the outer record's (docs/FORMAT-STRINGS.md).
      return nil
    case .expression(let c):
      guard let lhs = c.lhs._overMember(variable, accepts: accepts),
        let rhs = c.rhs._overMember(variable, accepts: accepts)
      else { return nil }
      return try _ExpressionCondition(
        lhs: lhs, op: c.op, options: c.options, quantifier: c.quantifier, rhs: rhs
      )
      .lowered()
    }
  }
}
