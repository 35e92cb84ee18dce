/// The pending migrations of one store, ready to apply record by record: the one place a
/// step's meaning on a record is written. Every store runs its record-by-record path
/// through ``apply(to:)``; the SQL stores' one-statement forms (`json_set`) must give what
/// it gives, which their tests check against it.
struct _MigrationRun: Sendable {
  let migrations: [Migration]

  /// - Throws: `.migrationFailed` when the migrator is malformed.
  init(_ migrations: [Migration], in migrator: Migrator) throws {
    try migrator.validate()
    self.migrations = migrations
  }

  var isEmpty: Bool { migrations.isEmpty }
  var names: [String] { migrations.map(\.name) }

  /// Applies every step of every migration to one record, given as its whole object
  /// (`id` included).
  ///
  /// - Throws: `.migrationFailed` naming the migration, the record's id and the key.
  func apply(to object: inout [String: FieldValue]) throws {
    for m in migrations {
      for step in m.steps {
        do {
          try Self.apply(step, to: &object)
        } catch let error as _StepFailure {
          throw Self.failed(m, step, id: object["id"] ?? .null, error)
        } catch {
          throw Self.failed(m, step, id: object["id"] ?? .null, _StepFailure(reason: "\(error)", underlying: error))
        }
      }
    }
  }

  /// The error of a step that failed on the record with `id`.
  static func failed(_ m: Migration, _ step: Migration.Step, id: FieldValue, _ failure: _StepFailure) -> RequestSetError {
    RequestSetError(
      .migrationFailed,
      "The migration \(m.name.debugDescription) failed on the record with id \(id) at its step \(step): "
        + "\(failure.reason). Fix the migration (or the record) and open the store again; the store is as it was "
        + "before the migration.", underlying: failure.underlying)
  }

  /// What `conversion` makes of `value`, or the step's failure.
  static func convert(_ value: FieldValue, key: String, _ conversion: Migration.Conversion) throws -> FieldValue {
    do {
      return try conversion._body(value)
    } catch let error as RequestSetError {
      throw _StepFailure(reason: "\(key) holds \(value): \(error.message)", underlying: error)
    } catch {
      throw _StepFailure(reason: "\(key) holds \(value), which \(conversion.name) refused: \(error)", underlying: error)
    }
  }

  struct _StepFailure: Error {
    var reason: String
    var underlying: (any Error)?
  }

  static func apply(_ step: Migration.Step, to object: inout [String: FieldValue]) throws {
    switch step._kind {
    case .add(let key, let value):
      let names = FieldValue.fieldNames(inKey: key)
      if let current = get(names, in: object), current != .null { return }
      try set(names, value, in: &object, key: key)
    case .rename(let from, let to):
      let source = FieldValue.fieldNames(inKey: from)
      guard let value = get(source, in: object) else { return }
      let target = FieldValue.fieldNames(inKey: to)
      if let held = get(target, in: object), held != .null, from != to {
        throw _StepFailure(reason: "the record holds both \(from) and \(to) (\(held)); remove one first")
      }
      remove(source, from: &object)
      try set(target, value, in: &object, key: to)
    case .remove(let key):
      remove(FieldValue.fieldNames(inKey: key), from: &object)
    case .convert(let key, let conversion):
      let names = FieldValue.fieldNames(inKey: key)
      guard let value = get(names, in: object), value != .null else { return }
      let converted = try convert(value, key: key, conversion)
      try set(names, converted, in: &object, key: key)
    case .transform(let body):
      let id = object["id"] ?? .null
      var record = DynamicRecord(_id: id, fields: object.filter { $0.key != "id" })
      try body(&record)
      guard record.id == id, record.id.description == id.description else {
        throw _StepFailure(reason: "the transform changed the id to \(record.id); migrations keep ids")
      }
      var fields = record.fields
      fields["id"] = id
      object = fields
    }
  }

  /// The value at a path of names; nil when a name on the way is absent or not an object.
  static func get(_ names: [String], in object: [String: FieldValue]) -> FieldValue? {
    guard let first = names.first, let value = object[first] else { return nil }
    if names.count == 1 { return value }
    guard case .object(let inner) = value else { return nil }
    return get(Array(names.dropFirst()), in: inner)
  }

  /// Sets the value at a path, making objects where the way holds nothing (or nil).
  static func set(_ names: [String], _ value: FieldValue, in object: inout [String: FieldValue], key: String) throws {
    let first = names[0]
    if names.count == 1 {
      object[first] = value
      return
    }
    var inner: [String: FieldValue]
    switch object[first] {
    case nil, .null?: inner = [:]
    case .object(let o)?: inner = o
    case let other?:
      throw _StepFailure(reason: "\(key) lies inside \(first), which holds \(other), not a nested object")
    }
    try set(Array(names.dropFirst()), value, in: &inner, key: key)
    object[first] = .object(inner)
  }

  /// Removes the value at a path, when there is one.
  static func remove(_ names: [String], from object: inout [String: FieldValue]) {
    let first = names[0]
    if names.count == 1 {
      object[first] = nil
      return
    }
    guard case .object(var inner)? = object[first] else { return }
    remove(Array(names.dropFirst()), from: &inner)
    object[first] = .object(inner)
  }

  /// The key an index on `key` moves to when the migrations leave its values as they are
  /// (the key is only renamed or moved), or nil when a step may change them: an add,
  /// conversion or removal on the key, its parents or its fields, a rename onto it from
  /// another key, or a transform.
  func keyKeepingValues(_ key: String) -> String? {
    func related(_ a: String, _ b: String) -> Bool { a == b || a.hasPrefix(b + ".") || b.hasPrefix(a + ".") }
    var key = key
    for m in migrations {
      for step in m.steps {
        switch step._kind {
        case .transform: return nil
        case .add(let k, _), .convert(let k, _), .remove(let k):
          if related(k, key) { return nil }
        case .rename(let from, let to):
          if key == from || key.hasPrefix(from + ".") {
            key = to + key.dropFirst(from.count)
          } else if related(to, key) || related(from, key) {
            return nil
          }
        }
      }
    }
    return key
  }

  /// Where an index on `key` goes after the migrations: its new key, or nil when the key
  /// was removed (``Migration/indexKey(after:)``, migration by migration).
  func indexKey(after key: String) -> String? {
    var key: String? = key
    for m in migrations { key = key.flatMap(m.indexKey(after:)) }
    return key
  }
}

/// How a `LogStore` records a migration it has run: a name in the log's key table that no
/// record uses, so every reader of the log format reads a migrated log (see
/// `docs/LOG-FORMAT.md`, "Migrations").
enum _MigrationMarker {
  static let prefix = "\u{1}requestset.migration:"

  /// The migrations a key table records, in the order they ran.
  static func applied(in names: [String?]) -> [String] {
    names.compactMap { name in
      guard let name, name.hasPrefix(prefix) else { return nil }
      return String(name.dropFirst(prefix.count))
    }
  }
}
