/// How string keys read the fields of one record type: each top-level field either
/// straight from the record's memory (reflected, see `_FieldShape`) or from the record's
/// encoded fields (the `Codable` fallback), decided once per type.
///
/// Reflection lists a struct's stored properties, but a type's `Codable` conformance may
/// say otherwise: `CodingKeys` that rename or leave out a property, a custom
/// `encode(to:)`, a property wrapper, a class. So the first records of each type that any
/// store or array set holds are encoded too, and each reflected field is compared with the
/// value its encoding holds under the same key (exactly: the same case, NaN equal to NaN).
/// A field that differs even once is read through `Codable` from then on; every encoded
/// key no reflected field matches (a renamed key, one a custom `encode(to:)` adds) is read
/// through `Codable` as well. A field that is nil in every record checked so far reads as
/// nil either way, so it is kept reflected while more records are checked: at least
/// ``minimumChecks`` records, and past them while some field has not been seen with a
/// value, up to ``maximumChecks``; a field still unseen then is read through `Codable`.
///
/// Records stored past the checks are read by reflection without being encoded: that is
/// what makes an insert cost what appending to an array costs. A type whose
/// `encode(to:)` writes a field differently only for values the checked records never
/// held is the limit of this scheme.
final class _FieldModel: Sendable {
  /// The type's shape, or nil when reflection cannot read it (a class, an enum): then
  /// every field goes through `Codable`.
  let shape: _FieldShape?
  private let _state: _Lock<_FieldPlan>

  /// Records checked against their encoding before reflection is trusted alone.
  static let minimumChecks = 8
  /// Records checked at most while some field has not been seen with a value.
  static let maximumChecks = 64

  private init(_ type: Any.Type) {
    shape = _FieldShape.ofRecord(type)
    var plan = _FieldPlan(shape: shape)
    if shape != nil {
      for field in shape!.fields { plan.status[field.name] = .unseen }
    }
    _state = _Lock(plan)
  }

  private static let _models = _Lock<[ObjectIdentifier: _FieldModel]>([:])

  /// The model of `type`, made on first use.
  static func of(_ type: Any.Type) -> _FieldModel {
    let id = ObjectIdentifier(type)
    if let known = _models.withLock({ $0[id] }) { return known }
    let made = _FieldModel(type)
    return _models.withLock { models in
      if let known = models[id] { return known }
      models[id] = made
      return made
    }
  }

  /// What the model says now.
  var plan: _FieldPlan { _state.withLock { $0 } }

  /// Compares one record's reflected fields with its encoded fields (see the type's
  /// discussion), while the model still checks records.
  ///
  /// - Parameters:
  ///   - record: The record's address.
  ///   - row: The record's encoded fields.
  /// - Returns: The plan after the check.
  @discardableResult
  func check(_ record: UnsafeRawPointer, row: _EncodedRow) -> _FieldPlan {
    _state.withLock { plan in
      guard plan.checking, let shape else { return plan }
      var changed = false
      var encoded: [String: FieldValue] = Dictionary(minimumCapacity: row.fields.count)
      for (key, value) in row.fields { encoded[key] = value }
      for field in shape.fields {
        guard let status = plan.status[field.name], status != .differs else { continue }
        let nilOptional = field.shape.payload.map { $0(record + field.offset) == nil } ?? false
        let value = nilOptional ? nil : field.shape.read(record + field.offset)
        let same = value.map { v in encoded[field.name].map { _identical($0, v) } ?? false } ?? (encoded[field.name] == nil)
        if !same {
          plan.status[field.name] = .differs
          changed = true
        } else if value != nil && status == .unseen {
          plan.status[field.name] = .confirmed
        }
      }
      let reflected = plan.reflectedNames
      for key in encoded.keys where !reflected.contains(key) && !plan.encodedOnly.contains(key) {
        plan.encodedOnly.insert(key)
        changed = true
      }
      plan.checked += 1
      if plan.checked >= Self.minimumChecks {
        let unseen = plan.status.filter { $0.value == .unseen }.map(\.key)
        if unseen.isEmpty {
          plan.checking = false
        } else if plan.checked >= Self.maximumChecks {
          for name in unseen {
            plan.status[name] = .differs
            plan.encodedOnly.insert(name)
          }
          plan.checking = false
          changed = true
        }
      }
      if changed { plan.generation += 1 }
      return plan
    }
  }
}

/// Two field values that are the same value of the same case (a NaN is the same as a
/// NaN), as the field model's check needs: `==` would take `.int(3)` for `.double(3)`.
func _identical(_ a: FieldValue, _ b: FieldValue) -> Bool {
  switch (a, b) {
  case (.null, .null): return true
  case (.bool(let x), .bool(let y)): return x == y
  case (.int(let x), .int(let y)): return x == y
  case (.uint(let x), .uint(let y)): return x == y
  case (.double(let x), .double(let y)): return x == y || (x.isNaN && y.isNaN)
  case (.decimal(let x), .decimal(let y)): return x == y || (x.isNaN && y.isNaN)
  case (.string(let x), .string(let y)): return x == y
  case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(_identical)
  case (.object(let x), .object(let y)):
    return x.count == y.count && x.allSatisfy { key, value in y[key].map { _identical(value, $0) } ?? false }
  default: return false
  }
}

/// A record type's field model at one moment (see `_FieldModel`).
struct _FieldPlan: Sendable {
  enum Status: Sendable { case unseen, confirmed, differs }

  let shape: _FieldShape?
  /// Per reflected top-level field: whether its encoding confirmed it.
  var status: [String: Status] = [:]
  /// Top-level encoded keys read through `Codable`.
  var encodedOnly: Set<String> = []
  /// Records checked so far.
  var checked = 0
  /// Whether the model still checks records against their encoding.
  var checking = true
  /// Grows whenever a field moves to `Codable`: a store then re-reads its encoded fields.
  var generation = 0

  init(shape: _FieldShape?) {
    self.shape = shape
  }

  /// Whether every field goes through `Codable` (the type has no shape).
  var encodesEverything: Bool { shape == nil }

  /// The top-level fields read from the record.
  var reflectedNames: Set<String> { Set(status.filter { $0.value != .differs }.keys) }

  /// Whether a record written now must be encoded for its fields: while the model checks
  /// records, and for as long as some field is read through `Codable`.
  var needsRows: Bool { shape == nil || checking || !encodedOnly.isEmpty }

  /// Whether a store keeps encoded fields per record: some field goes through `Codable`.
  var needsEncodedRows: Bool { shape == nil || !encodedOnly.isEmpty }

  /// The encoded fields a store keeps of a row: all of them when the type has no shape,
  /// else those read through `Codable`.
  func kept(_ row: _EncodedRow) -> _EncodedRow {
    if shape == nil { return row }
    if encodedOnly.isEmpty { return _EncodedRow(fields: []) }
    return _EncodedRow(fields: row.fields.filter { encodedOnly.contains($0.0) })
  }

  /// Where a string key's value comes from.
  ///
  /// `@unchecked Sendable`: a reader closure captures only field offsets and
  /// `_FieldShape`s, which are immutable once made (see `_FieldShape`), so sharing one
  /// between threads cannot race.
  enum Route: @unchecked Sendable {
    /// Straight from the record, at the record's address; with the value's shape, and its
    /// offset in the record when it is a top-level field.
    case reflected(_FieldRead, _FieldShape, offset: Int?)
    /// From the encoded fields.
    case encoded
  }

  /// The route of a dotted key; `.encoded` for keys the reflected fields do not hold.
  func route(_ key: String) -> Route {
    guard let shape, !key.isEmpty else { return .encoded }
    let parts = _DottedKey.split(key)[...]
    guard let first = parts.first, let status = status[first], status != .differs,
      let field = shape.fields.first(where: { $0.name == first })
    else { return .encoded }
    let rest = parts.dropFirst()
    guard let read = field.shape.resolve(rest), let leaf = field.shape.shape(at: rest) else { return .encoded }
    let offset = field.offset
    return .reflected({ p in read(p + offset) }, leaf, offset: rest.isEmpty ? offset : nil)
  }

  /// The kind of value each reflected key holds in a record, for the kinds a store has
  /// seen: `body` gets the key's place in ``reflectedKeys`` and the kind, for each key the
  /// record holds (a nil optional and the keys below it are left out, as its encoding
  /// leaves them out).
  func forEachKind(_ record: UnsafeRawPointer, _ body: (Int, _FieldKind) -> Void) {
    guard let shape else { return }
    var index = 0
    for field in shape.fields where status[field.name] != .differs {
      _forEachKind(field.shape, record + field.offset, &index, body)
    }
  }

  private func _forEachKind(
    _ shape: _FieldShape, _ p: UnsafeRawPointer, _ index: inout Int, _ body: (Int, _FieldKind) -> Void
  ) {
    var s = shape
    var at = p
    if let payload = shape.payload, let wrapped = shape.wrapped {
      guard let inner = payload(p) else {
        index += shape.keyCount
        return
      }
      s = wrapped
      at = inner
    }
    body(index, s.kind)
    index += 1
    for field in s.fields { _forEachKind(field.shape, at + field.offset, &index, body) }
  }

  /// Every reflected dotted key, for `explain()` and the kinds a store tracks.
  var reflectedKeys: [String] {
    guard let shape else { return [] }
    var keys: [String] = []
    func walk(_ s: _FieldShape, _ key: String) {
      keys.append(key)
      let inner = s.wrapped ?? s
      for f in inner.fields { walk(f.shape, _DottedKey.join(key, f.name)) }
    }
    for f in shape.fields where status[f.name] != .differs { walk(f.shape, f.name) }
    return keys
  }
}
