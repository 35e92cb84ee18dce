import Foundation
import RequestSet

// An independent model of RequestSet's semantics over a plain array, for differential
// tests: hand-written field access, comparisons and staging, sharing no code with the
// engine. A random `RefQuery` builds both a RequestSet chain (choosing a random form for
// every filter: key/value, comparison, typed key path, #Predicate, closure, tuple list)
// and the reference's answer.

/// A field as the reference reads it.
enum RefValue: Equatable, CustomStringConvertible {
  case null
  case int(Int)
  case double(Double)
  case string(String)
  /// A nested object that is present (only compared with nil).
  case present

  var description: String {
    switch self {
    case .null: return "nil"
    case .int(let i): return "\(i)"
    case .double(let d): return "\(d)"
    case .string(let s): return "\"\(s)\""
    case .present: return "<object>"
    }
  }

  /// The value to hand a string-key filter.
  var encodable: (any Encodable & Sendable)? {
    switch self {
    case .null: return nil
    case .int(let i): return i
    case .double(let d): return d
    case .string(let s): return s
    case .present: return nil
    }
  }

  var number: Double? {
    switch self {
    case .int(let i): return Double(i)
    case .double(let d): return d
    default: return nil
    }
  }
}

extension Animal {
  /// The reference's own field access by Codable key.
  func ref(_ key: String) -> RefValue {
    switch key {
    case "id": return .int(id)
    case "name": return .string(name)
    case "species": return .string(species)
    case "age": return .int(age)
    case "weight": return .double(weight)
    case "nickname": return nickname.map(RefValue.string) ?? .null
    case "owner": return owner == nil ? .null : .present
    case "owner.city": return owner.map { .string($0.city) } ?? .null
    case "owner.name": return owner.map { .string($0.name) } ?? .null
    default: fatalError("The reference does not know key \(key)")
    }
  }
}

/// -1, 0, 1, or nil when the two cannot be ordered (nil or different kinds).
func refOrder(_ a: RefValue, _ b: RefValue, caseInsensitive: Bool) -> Int? {
  if let x = a.number, let y = b.number { return x < y ? -1 : (x == y ? 0 : 1) }
  if case .string(let x) = a, case .string(let y) = b {
    // Case-insensitive order is defined as Foundation's (canonically decomposed, so "Émile"
    // sorts beside "Emile"); binary order is Swift's own `<`.
    if caseInsensitive {
      switch x.compare(y, options: .caseInsensitive) {
      case .orderedAscending: return -1
      case .orderedSame: return 0
      case .orderedDescending: return 1
      }
    }
    return x < y ? -1 : (x == y ? 0 : 1)
  }
  return nil
}

/// The sort order the reference uses: nil before everything.
func refSortOrder(_ a: RefValue, _ b: RefValue, caseInsensitive: Bool) -> Int {
  switch (a, b) {
  case (.null, .null): return 0
  case (.null, _): return -1
  case (_, .null): return 1
  default: return refOrder(a, b, caseInsensitive: caseInsensitive) ?? 0
  }
}

struct RefCondition: CustomStringConvertible {
  var key: String
  var op: RequestComparison
  var value: RefValue
  var caseInsensitive = false

  var description: String { "\(key) \(op.rawValue) \(value)\(caseInsensitive ? "[c]" : "")" }

  func matches(_ a: Animal) -> Bool {
    let field = a.ref(key)
    switch op {
    case .equal, .notEqual:
      let equal: Bool
      if field == .null || value == .null {
        equal = field == value
      } else if field == .present {
        equal = false
      } else {
        equal = refOrder(field, value, caseInsensitive: caseInsensitive) == 0
      }
      return (op == .equal) == equal
    default:
      guard let o = refOrder(field, value, caseInsensitive: caseInsensitive) else { return false }
      switch op {
      case .lessThan: return o < 0
      case .lessThanOrEqual: return o <= 0
      case .greaterThan: return o > 0
      default: return o >= 0
      }
    }
  }
}

/// How a leaf condition is written when building the RequestSet.
enum RefForm: CaseIterable {
  case keyValue, comparison, typed, predicate, closure, format
}

indirect enum RefFilter: CustomStringConvertible {
  case leaf(RefCondition, RefForm)
  /// A comparison of computed values (the format grammar's expression forms).
  case computed(RefComputed)
  case and([RefFilter])
  case or([RefFilter])
  case not(RefFilter)

  var description: String {
    switch self {
    case .leaf(let c, let f): return "\(c){\(f)}"
    case .computed(let c): return c.description
    case .and(let p): return "(" + p.map(\.description).joined(separator: " AND ") + ")"
    case .or(let p): return "(" + p.map(\.description).joined(separator: " OR ") + ")"
    case .not(let f): return "NOT \(f)"
    }
  }

  func matches(_ a: Animal) -> Bool {
    switch self {
    case .leaf(let c, _): return c.matches(a)
    case .computed(let c): return c.test(a)
    case .and(let p): return p.allSatisfy { $0.matches(a) }
    case .or(let p): return p.contains { $0.matches(a) }
    case .not(let f): return !f.matches(a)
    }
  }

  /// The filter written in the leaf's chosen form.
  var requestFilter: RequestFilter<Animal> {
    switch self {
    case .leaf(let c, let form): return buildLeaf(c, form)
    case .computed(let c): return c.requestFilter
    case .and(let p): return p.dropFirst().reduce(p[0].requestFilter) { $0 && $1.requestFilter }
    case .or(let p): return p.dropFirst().reduce(p[0].requestFilter) { $0 || $1.requestFilter }
    case .not(let f): return !f.requestFilter
    }
  }
}

struct RefSortKey: CustomStringConvertible {
  var key: String
  var order: RequestSortOrder
  var caseInsensitive = false
  var typed = false

  var description: String { "\(key) \(order)\(caseInsensitive ? "[c]" : "")\(typed ? "{typed}" : "")" }
}

enum RefStep: CustomStringConvertible {
  case filter(RefFilter, RequestFilterMode)
  case exclude(RefFilter)
  /// A tuple list of equalities, combined by the mode, joined with AND.
  case pairs([(String, RefValue)], RequestFilterMode)
  case sort([RefSortKey])
  case limit(Int)
  case offset(Int)

  var description: String {
    switch self {
    case .filter(let f, let m): return ".filter(\(f), \(m))"
    case .exclude(let f): return ".exclude(\(f))"
    case .pairs(let p, let m): return ".filter(\(p.map { "(\($0.0), \($0.1))" }), \(m))"
    case .sort(let k): return ".sortBy(\(k))"
    case .limit(let n): return ".limit(\(n))"
    case .offset(let n): return ".offset(\(n))"
    }
  }
}

/// A random query: a chain of steps, run on a RequestSet and on the reference.
struct RefQuery: CustomStringConvertible {
  var steps: [RefStep]

  var description: String { steps.map(\.description).joined() }

  func apply(to set: RequestSet<Animal>) -> RequestSet<Animal> {
    var s = set
    for step in steps {
      switch step {
      case .filter(let f, let mode): s = s.filter(f.requestFilter, mode: mode)
      case .exclude(let f):
        if case .leaf(let c, .keyValue) = f, c.op == .equal, !c.caseInsensitive {
          s = s.exclude(c.key, value: c.value.encodable)
        } else {
          s = s.exclude(f.requestFilter)
        }
      case .pairs(let pairs, let mode): s = s.filter(pairs.map { ($0.0, $0.1.encodable) }, mode: mode)
      case .sort(let keys): s = applySort(keys, to: s)
      case .limit(let n): s = s.limit(n)
      case .offset(let n): s = s.offset(n)
      }
    }
    return s
  }

  /// The reference answer: stages evaluated eagerly, one after another.
  func reference(_ records: [Animal]) -> [Animal] {
    var input = records
    var filter: ((Animal) -> Bool)? = nil
    var sorts: [RefSortKey] = []
    var offset = 0
    var limit: Int? = nil
    var windowed: Bool { offset > 0 || limit != nil }

    func finish() -> [Animal] {
      var rows = input.filter { filter?($0) ?? true }
      if !sorts.isEmpty {
        rows = rows.enumerated().sorted { a, b in
          for k in sorts {
            var c = refSortOrder(a.element.ref(k.key), b.element.ref(k.key), caseInsensitive: k.caseInsensitive)
            if k.order == .descending { c = -c }
            if c != 0 { return c < 0 }
          }
          return a.offset < b.offset
        }.map(\.element)
      }
      let start = min(offset, rows.count)
      let end = limit.map { min(rows.count, start + $0) } ?? rows.count
      return Array(rows[start..<end])
    }
    func newStageIfWindowed() {
      guard windowed else { return }
      input = finish()
      filter = nil
      sorts = []
      offset = 0
      limit = nil
    }
    func add(_ f: @escaping (Animal) -> Bool, _ mode: RequestFilterMode) {
      newStageIfWindowed()
      if let old = filter {
        filter = mode == .and ? { old($0) && f($0) } : { old($0) || f($0) }
      } else {
        filter = f
      }
    }

    for step in steps {
      switch step {
      case .filter(let f, let mode): add(f.matches, mode)
      case .exclude(let f): add({ !f.matches($0) }, .and)
      case .pairs(let pairs, let mode):
        let conds = pairs.map { RefCondition(key: $0.0, op: .equal, value: $0.1) }
        if conds.isEmpty {
          add({ _ in mode == .and }, .and)
        } else {
          add(mode == .and ? { a in conds.allSatisfy { $0.matches(a) } } : { a in conds.contains { $0.matches(a) } }, .and)
        }
      case .sort(let keys):
        newStageIfWindowed()
        sorts += keys
      case .limit(let n): limit = min(limit ?? n, n)
      case .offset(let n):
        offset += n
        if let l = limit { limit = max(0, l - n) }
      }
    }
    return finish()
  }

  // MARK: Generation

  static let stringKeys = ["name", "species", "nickname", "owner.city"]
  static let numberKeys = ["id", "age", "weight"]

  static func random(using rng: inout SeededRandom, data: [Animal]) -> RefQuery {
    var steps: [RefStep] = []
    for _ in 0..<Int.random(in: 1...5, using: &rng) {
      switch Int.random(in: 0..<100, using: &rng) {
      case 0..<45: steps.append(.filter(randomFilter(depth: 0, &rng, data), Bool.random(using: &rng) ? .and : .or))
      case 45..<55: steps.append(.exclude(randomFilter(depth: 1, &rng, data)))
      case 55..<62:
        let pairs = (0..<Int.random(in: 0...3, using: &rng)).map { _ -> (String, RefValue) in
          let key = (stringKeys + numberKeys).randomElement(using: &rng)!
          return (key, data.randomElement(using: &rng)!.ref(key))
        }
        steps.append(.pairs(pairs, Bool.random(using: &rng) ? .and : .or))
      case 62..<82: steps.append(.sort(randomSort(&rng)))
      case 82..<93: steps.append(.limit(Int.random(in: 0...40, using: &rng)))
      default: steps.append(.offset(Int.random(in: 0...30, using: &rng)))
      }
    }
    return RefQuery(steps: steps)
  }

  static func randomFilter(depth: Int, _ rng: inout SeededRandom, _ data: [Animal]) -> RefFilter {
    let roll = Int.random(in: 0..<100, using: &rng)
    if depth < 2 && roll < 20 {
      let parts = (0..<Int.random(in: 2...3, using: &rng)).map { _ in randomFilter(depth: depth + 1, &rng, data) }
      return Bool.random(using: &rng) ? .and(parts) : .or(parts)
    }
    if depth < 2 && roll < 28 { return .not(randomFilter(depth: depth + 1, &rng, data)) }
    if roll >= 78 { return .computed(RefComputed.random(&rng, data)) }
    return .leaf(randomCondition(&rng, data), RefForm.allCases.randomElement(using: &rng)!)
  }

  static func randomCondition(_ rng: inout SeededRandom, _ data: [Animal]) -> RefCondition {
    let ops: [RequestComparison] = [.equal, .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
    let op = ops.randomElement(using: &rng)!
    if Int.random(in: 0..<12, using: &rng) == 0 {
      return RefCondition(key: "owner", op: Bool.random(using: &rng) ? .equal : .notEqual, value: .null)
    }
    let key = (stringKeys + numberKeys).randomElement(using: &rng)!
    var value = data.randomElement(using: &rng)!.ref(key)
    if Int.random(in: 0..<8, using: &rng) == 0 { value = .null }
    // Cross Int/Double comparisons.
    if case .int(let i) = value, Bool.random(using: &rng) { value = .double(Double(i) + (Bool.random(using: &rng) ? 0 : 0.5)) }
    if case .double(let d) = value, d == d.rounded(), Bool.random(using: &rng) { value = .int(Int(d)) }
    let ci = stringKeys.contains(key) && Int.random(in: 0..<4, using: &rng) == 0
    return RefCondition(key: key, op: op, value: value, caseInsensitive: ci)
  }

  static func randomSort(_ rng: inout SeededRandom) -> [RefSortKey] {
    (0..<Int.random(in: 1...2, using: &rng)).map { _ in
      let key = (stringKeys + numberKeys).randomElement(using: &rng)!
      return RefSortKey(
        key: key, order: Bool.random(using: &rng) ? .ascending : .descending,
        caseInsensitive: stringKeys.contains(key) && Int.random(in: 0..<4, using: &rng) == 0,
        typed: Bool.random(using: &rng))
    }
  }
}

// MARK: Building leaves in each form

/// A typed key-path filter for the condition, or nil when no key path expresses it.
private func typedLeaf(_ c: RefCondition) -> RequestFilter<Animal>? {
  guard !c.caseInsensitive else { return nil }
  func cmp<V: Comparable & Sendable>(_ kp: KeyPath<Animal, V> & Sendable, _ v: V) -> RequestFilter<Animal> {
    switch c.op {
    case .equal: return kp == v
    case .notEqual: return kp != v
    case .lessThan: return kp < v
    case .lessThanOrEqual: return kp <= v
    case .greaterThan: return kp > v
    case .greaterThanOrEqual: return kp >= v
    }
  }
  func opt<V: Comparable & Sendable>(_ kp: KeyPath<Animal, V?> & Sendable, _ v: V?) -> RequestFilter<Animal>? {
    switch c.op {
    case .equal: return kp == v
    case .notEqual: return kp != v
    default:
      guard let v else { return nil }
      switch c.op {
      case .lessThan: return kp < v
      case .lessThanOrEqual: return kp <= v
      case .greaterThan: return kp > v
      default: return kp >= v
      }
    }
  }
  func string(_ v: RefValue) -> String? { if case .string(let s) = v { return s } else { return nil } }
  switch (c.key, c.value) {
  case ("id", .int(let i)): return cmp(\.id, i)
  case ("age", .int(let i)): return cmp(\.age, i)
  case ("weight", let v) where v.number != nil: return cmp(\.weight, v.number!)
  case ("name", .string(let s)): return cmp(\.name, s)
  case ("species", .string(let s)): return cmp(\.species, s)
  case ("nickname", let v) where v == .null || string(v) != nil: return opt(\.nickname, string(v))
  case ("owner.city", let v) where v == .null || string(v) != nil: return opt(\Animal.owner?.city, string(v))
  default: return nil
  }
}

/// A Foundation predicate for the condition, where one is written out below.
private func predicateLeaf(_ c: RefCondition) -> Predicate<Animal>? {
  guard !c.caseInsensitive else { return nil }
  switch (c.key, c.value) {
  case ("age", .int(let v)):
    switch c.op {
    case .equal: return #Predicate<Animal> { $0.age == v }
    case .notEqual: return #Predicate<Animal> { $0.age != v }
    case .lessThan: return #Predicate<Animal> { $0.age < v }
    case .lessThanOrEqual: return #Predicate<Animal> { $0.age <= v }
    case .greaterThan: return #Predicate<Animal> { $0.age > v }
    case .greaterThanOrEqual: return #Predicate<Animal> { $0.age >= v }
    }
  case ("weight", .double(let v)):
    switch c.op {
    case .equal: return #Predicate<Animal> { $0.weight == v }
    case .notEqual: return #Predicate<Animal> { $0.weight != v }
    case .lessThan: return #Predicate<Animal> { $0.weight < v }
    case .lessThanOrEqual: return #Predicate<Animal> { $0.weight <= v }
    case .greaterThan: return #Predicate<Animal> { $0.weight > v }
    case .greaterThanOrEqual: return #Predicate<Animal> { $0.weight >= v }
    }
  case ("name", .string(let v)):
    switch c.op {
    case .equal: return #Predicate<Animal> { $0.name == v }
    case .notEqual: return #Predicate<Animal> { $0.name != v }
    default: return nil
    }
  case ("nickname", .null):
    switch c.op {
    case .equal: return #Predicate<Animal> { $0.nickname == nil }
    case .notEqual: return #Predicate<Animal> { $0.nickname != nil }
    default: return nil
    }
  default: return nil
  }
}

private func buildLeaf(_ c: RefCondition, _ form: RefForm) -> RequestFilter<Animal> {
  let collation: RequestCollation = c.caseInsensitive ? .caseInsensitive : .binary
  switch form {
  case .keyValue where c.op == .equal && !c.caseInsensitive && c.value != .present:
    return RequestFilter(c.key, value: c.value.encodable)
  case .typed:
    if let f = typedLeaf(c) { return f }
  case .predicate:
    if let p = predicateLeaf(c) { return RequestFilter(p) }
  case .closure:
    return RequestFilter { c.matches($0) }
  case .format:
    return formatLeaf(c)
  default:
    break
  }
  return RequestFilter(c.key, c.op, value: c.value.encodable, collation: collation)
}

func applySort(_ keys: [RefSortKey], to set: RequestSet<Animal>) -> RequestSet<Animal> {
  if keys.allSatisfy({ !$0.typed && !$0.caseInsensitive }) && keys.count > 1 {
    return set.sortBy(keys.map { ($0.key, $0.order) })
  }
  var s = set
  for k in keys {
    if k.typed {
      switch (k.key, k.caseInsensitive) {
      case ("id", _): s = s.sortBy(\.id, order: k.order); continue
      case ("age", _): s = s.sortBy(\.age, order: k.order); continue
      case ("weight", _): s = s.sortBy(\.weight, order: k.order); continue
      case ("name", false): s = s.sortBy(\.name, order: k.order); continue
      case ("name", true): s = s.sortBy(\.name, order: k.order, collation: .caseInsensitive); continue
      case ("species", false): s = s.sortBy(\.species, order: k.order); continue
      case ("nickname", false): s = s.sortBy(\.nickname, order: k.order); continue
      case ("nickname", true): s = s.sortBy(\.nickname, order: k.order, collation: .caseInsensitive); continue
      case ("owner.city", false): s = s.sortBy(\Animal.owner?.city, order: k.order); continue
      default: break
      }
    }
    s = s.sortBy(k.key, order: k.order, collation: k.caseInsensitive ? .caseInsensitive : .binary)
  }
  return s
}

/// The condition as a predicate format string, in one of several spellings chosen by the
/// condition itself (so the random stream stays the same): a key or `%K`, the value as a
/// literal or a substitution, the key on the left or mirrored onto the right.
private func formatLeaf(_ c: RefCondition) -> RequestFilter<Animal> {
  let spellings: [RequestComparison: [String]] = [
    .equal: ["==", "="], .notEqual: ["!=", "<>"], .lessThan: ["<"], .lessThanOrEqual: ["<=", "=<"],
    .greaterThan: [">"], .greaterThanOrEqual: [">=", "=>"],
  ]
  let mirror: [RequestComparison: RequestComparison] = [
    .equal: .equal, .notEqual: .notEqual, .lessThan: .greaterThan, .lessThanOrEqual: .greaterThanOrEqual,
    .greaterThan: .lessThan, .greaterThanOrEqual: .lessThanOrEqual,
  ]
  let seed = c.key.utf8.reduce(0) { $0 &+ Int($1) } &+ c.description.utf8.count
  let options = c.caseInsensitive ? "[c]" : ""
  var arguments: [(any Sendable)?] = []
  let key: String
  if seed % 3 == 0 {
    key = "%K"
    arguments.append(c.key)
  } else {
    key = c.key
  }
  let value: String
  switch c.value {
  case .null: value = seed % 2 == 0 ? "nil" : "NULL"
  case .int(let i) where seed % 2 == 0: value = "\(i)"
  case .int(let i):
    value = "%d"
    arguments.append(i)
  case .double(let d):
    value = "%f"
    arguments.append(d)
  case .string(let s) where seed % 2 == 0 && !s.contains("'") && !s.contains("\\"):
    value = "'\(s)'"
  default:
    value = "%@"
    arguments.append(c.value.encodable)
  }
  let format: String
  if seed % 5 == 1 && key != "%K" {
    let op = mirror[c.op]!
    format = "\(value) \(spellings[op]![seed % spellings[op]!.count])\(options) \(key)"
    if value == "%d" || value == "%f" || value == "%@" { arguments = [arguments.last!] }
  } else {
    format = "\(key) \(spellings[c.op]![seed % spellings[c.op]!.count])\(options) \(value)"
  }
  do {
    return try RequestFilter(format: format, arguments: arguments)
  } catch {
    fatalError("The reference wrote a format string that does not parse: \(format) \(arguments): \(error)")
  }
}

// MARK: Computed comparisons

/// A comparison of computed values: key against key, arithmetic, functions, collection
/// operators, subscripts, SELF, SUBQUERY and variables. The format string goes to
/// RequestSet; the closure is the reference's own evaluation, in plain Swift.
struct RefComputed: CustomStringConvertible {
  var format: String
  var arguments: [(any Sendable)?] = []
  var variables: [String: (any Sendable)?] = [:]
  var test: (Animal) -> Bool

  var description: String { "«\(format)» \(arguments.map { String(describing: $0) }) \(variables.keys.sorted())" }

  var requestFilter: RequestFilter<Animal> {
    do {
      return try RequestFilter(format: format, arguments: arguments).substituting(variables)
    } catch {
      fatalError("The reference wrote a format string that does not parse: \(format): \(error)")
    }
  }

  static func random(_ rng: inout SeededRandom, _ data: [Animal]) -> RefComputed {
    let ops: [(String, (Double, Double) -> Bool)] = [
      ("==", { $0 == $1 }), ("!=", { $0 != $1 }), ("<", { $0 < $1 }), ("<=", { $0 <= $1 }), (">", { $0 > $1 }),
      (">=", { $0 >= $1 }),
    ]
    let (op, holds) = ops.randomElement(using: &rng)!
    let k = Int.random(in: 0...12, using: &rng)
    let m = Int.random(in: 1...5, using: &rng)
    let tag = ["farm", "small", "big", "old"].randomElement(using: &rng)!
    func count(_ a: Animal) -> Double { Double(a.tags.count) }
    switch Int.random(in: 0..<26, using: &rng) {
    case 0: return RefComputed(format: "age \(op) weight") { holds(Double($0.age), $0.weight) }
    case 1:
      return RefComputed(format: "age * \(m) \(op) weight - id") { holds(Double($0.age * m), $0.weight - Double($0.id)) }
    case 2: return RefComputed(format: "weight / (age + 1) \(op) \(k)") { holds($0.weight / Double($0.age + 1), Double(k)) }
    case 3: return RefComputed(format: "-age \(op) -\(k)") { holds(Double(-$0.age), Double(-k)) }
    case 4: return RefComputed(format: "age ** 2 \(op) \(k * 10)") { holds(Double($0.age * $0.age), Double(k * 10)) }
    case 5:
      let r = Int.random(in: 0...m, using: &rng)
      return RefComputed(format: "modulus:by:(id, \(m + 1)) == \(r)") { $0.id % (m + 1) == r }
    case 6: return RefComputed(format: "abs:(age - \(k)) \(op) \(m)") { holds(Double(abs($0.age - k)), Double(m)) }
    case 7: return RefComputed(format: "floor:(weight / 4) \(op) \(k)") { holds(($0.weight / 4).rounded(.down), Double(k)) }
    case 8: return RefComputed(format: "ceiling:(weight / 3) \(op) \(k)") { holds(($0.weight / 3).rounded(.up), Double(k)) }
    case 9: return RefComputed(format: "sqrt:(weight) \(op) \(k)") { holds($0.weight.squareRoot(), Double(k)) }
    case 10:
      return RefComputed(format: "name ==[c] nickname") { a in
        a.nickname.map { a.name.lowercased() == $0.lowercased() } ?? false
      }
    case 11:
      let species = Animal.speciesPool.randomElement(using: &rng)!
      return RefComputed(format: "uppercase:(species) == '\(species.uppercased())'") { $0.species == species }
    case 12: return RefComputed(format: "lowercase:(name) == nickname") { $0.nickname == $0.name.lowercased() }
    case 13:
      let form = ["tags.@count", "tags[SIZE]", "count:(tags)"].randomElement(using: &rng)!
      return RefComputed(format: "\(form) \(op) \(m % 3)") { holds(count($0), Double(m % 3)) }
    case 14: return RefComputed(format: "tags[FIRST] == '\(tag)'") { $0.tags.first == tag }
    case 15: return RefComputed(format: "tags[LAST] != '\(tag)'") { $0.tags.last != tag }
    case 16: return RefComputed(format: "tags[1] == %@", arguments: [tag]) { $0.tags.count > 1 && $0.tags[1] == tag }
    case 17:
      // Inside a SUBQUERY `$t` is the tag, while a bare key and SELF name the animal.
      if k % 2 == 0 {
        return RefComputed(format: "SUBQUERY(tags, $t, $t BEGINSWITH 'b' OR $t == '\(tag)').@count \(op) \(m % 3)") { a in
          holds(Double(a.tags.filter { $0.hasPrefix("b") || $0 == tag }.count), Double(m % 3))
        }
      }
      return RefComputed(format: "SUBQUERY(tags, $t, $t == '\(tag)' OR age > \(k) AND SELF.id > \(m)).@count \(op) \(m % 3)") { a in
        holds(Double(a.tags.filter { $0 == tag || (a.age > k && a.id > m) }.count), Double(m % 3))
      }
    case 18: return RefComputed(format: "SELF.age \(op) \(k)") { holds(Double($0.age), Double(k)) }
    case 19: return RefComputed(format: "%@ IN SELF.tags", arguments: [tag]) { $0.tags.contains(tag) }
    case 20: return RefComputed(format: "name == owner.name") { $0.owner?.name == $0.name }
    case 21: return RefComputed(format: "age \(op) $v", variables: ["v": k]) { holds(Double($0.age), Double(k)) }
    case 22: return RefComputed(format: "max:({age, id}) \(op) \(k * 5)") { holds(Double(max($0.age, $0.id)), Double(k * 5)) }
    case 23:
      return RefComputed(format: "average:({age, weight}) \(op) \(k * 3)") { holds((Double($0.age) + $0.weight) / 2, Double(k * 3)) }
    case 24: return RefComputed(format: "id IN {age, age + 1}") { $0.id == $0.age || $0.id == $0.age + 1 }
    default: return RefComputed(format: "age BETWEEN {\(k), id}") { $0.age >= k && $0.age <= $0.id }
    }
  }
}
