/// The ordered list of an app's ``Migration``s, given to a store when it opens.
///
/// A store records the name of every migration it has run (a `LogStore` in its file, a SQL
/// store in its `requestset_migrations` table). When a store opens with a migrator, it runs
/// the migrations it has not run yet, in the order they were registered, all in one
/// all-or-nothing rewrite: a migration that throws, or a process killed in the middle,
/// leaves the store as it was before, with the migrations still pending.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register("v2: legs", .add("legs", default: .int(4)))
/// migrator.register("v3: kg", .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble))
///
/// let store = try LogStore<AnimalV3>(path: "animals.rslog", options: .init(migrations: migrator))
/// store.appliedMigrations   // ["v2: legs", "v3: kg"]
/// ```
///
/// Register migrations once, append new ones at the end, and never rename or reorder one a
/// shipped app has run: the names are what stores remember. Names a store has run that the
/// migrator does not list (a newer version of the app ran them) are kept and ignored.
public struct Migrator: Sendable, Equatable {
  /// The migrations, in the order they run.
  public private(set) var migrations: [Migration]

  /// A migrator of these migrations, run in this order.
  ///
  /// ```swift
  /// let migrator = Migrator([Migration("v2", .add("legs", default: .int(4)))])
  /// ```
  /// - Parameter migrations: Names must be unique (checked when a store uses the
  ///   migrator, which throws `.migrationFailed` otherwise).
  public init(_ migrations: [Migration] = []) {
    self.migrations = migrations
  }

  /// Appends a migration.
  ///
  /// ```swift
  /// migrator.register(Migration("v2", .add("legs", default: .int(4))))
  /// ```
  /// - Parameter migration: Runs after every migration registered before it.
  public mutating func register(_ migration: Migration) {
    migrations.append(migration)
  }

  /// Appends a migration of these steps.
  ///
  /// ```swift
  /// migrator.register("v2", .add("legs", default: .int(4)), .remove("nickname"))
  /// ```
  /// - Parameters:
  ///   - name: Unique within the migrator; never changed once a store has run it.
  ///   - steps: Run in order on every record.
  public mutating func register(_ name: String, _ steps: Migration.Step...) {
    migrations.append(Migration(name, steps: steps))
  }

  /// Appends a migration that runs `body` on every record.
  ///
  /// ```swift
  /// migrator.register("names capitalized") { record in
  ///   if case .string(let s)? = record.fields["name"] { record.fields["name"] = .string(s.capitalized) }
  /// }
  /// ```
  /// - Parameters:
  ///   - name: Unique within the migrator; never changed once a store has run it.
  ///   - body: Changes one record in place; its ``DynamicRecord/id`` must stay.
  public mutating func register(_ name: String, transform body: @escaping @Sendable (inout DynamicRecord) throws -> Void) {
    migrations.append(Migration(name, .transform(body)))
  }

  /// The names of the migrations not in `applied`, in the order they run.
  ///
  /// ```swift
  /// migrator.pending(after: store.appliedMigrations)   // ["v3: kg"]
  /// ```
  /// - Parameter applied: The names a store has run.
  /// - Returns: The migrations still to run.
  /// - Complexity: O(*m* + *a*) for *m* migrations and *a* applied names.
  public func pending(after applied: [String]) -> [Migration] {
    let done = Set(applied)
    return migrations.filter { !done.contains($0.name) }
  }

  /// Runs every migration on `records`, as a store would: for records kept outside a
  /// store (an export, a `MemoryStore` rebuilt from old data).
  ///
  /// ```swift
  /// let v2 = try migrator.migrate(oldRecords)
  /// let store = MemoryStore(try v2.map { try $0.value.decode(AnimalV2.self) })
  /// ```
  /// - Parameters:
  ///   - records: Records as the oldest version wrote them.
  ///   - applied: Names already run on them; those are skipped.
  /// - Returns: The records after every pending migration.
  /// - Throws: ``RequestSetError`` `.migrationFailed` naming the migration, the record and
  ///   the key.
  public func migrate(_ records: [DynamicRecord], after applied: [String] = []) throws -> [DynamicRecord] {
    let run = try _MigrationRun(pending(after: applied), in: self)
    return try records.map { record in
      var object = record.fields
      object["id"] = record.id
      try run.apply(to: &object)
      let id = object.removeValue(forKey: "id") ?? .null
      return DynamicRecord(_id: id, fields: object)
    }
  }

  /// Two migrators are equal when they list the same migrations, by name and steps'
  /// descriptions, in the same order (closures cannot be compared).
  ///
  /// ```swift
  /// Migrator([Migration("v2", .remove("a"))]) == Migrator([Migration("v2", .remove("a"))])   // true
  /// ```
  public static func == (lhs: Migrator, rhs: Migrator) -> Bool {
    lhs.migrations.map(\.description) == rhs.migrations.map(\.description)
  }

  /// Checks the migrator as every store does before it runs one: each migration has a
  /// name no other has, and no step names `id` or an empty key.
  ///
  /// ```swift
  /// try migrator.validate()   // in a unit test of the app's migrations
  /// ```
  /// - Throws: ``RequestSetError`` `.migrationFailed` naming the migration and the step.
  public func validate() throws {
    var seen = Set<String>()
    for m in migrations {
      guard !m.name.isEmpty else {
        throw RequestSetError(.migrationFailed, "A migration has an empty name. Give every migration a unique name.")
      }
      guard seen.insert(m.name).inserted else {
        throw RequestSetError(
          .migrationFailed,
          "Two migrations are named \(m.name.debugDescription). Stores remember migrations by name; give each a "
            + "unique name. Nothing was changed.")
      }
      for step in m.steps {
        for key in step._keys {
          let names = FieldValue.fieldNames(inKey: key)
          guard !names.isEmpty, !names.contains(where: \.isEmpty) else {
            throw RequestSetError(
              .migrationFailed,
              "The migration \(m.name.debugDescription) has the step \(step) on the key \(key.debugDescription), "
                + "which names no field. Nothing was changed.")
          }
          guard names[0] != "id" else {
            throw RequestSetError(
              .migrationFailed,
              "The migration \(m.name.debugDescription) has the step \(step) on `id`, which migrations never "
                + "change: a store finds records by it. Copy the records into a new store instead. Nothing was changed.")
          }
        }
      }
    }
  }
}

extension Migration.Step {
  /// The keys the step names.
  var _keys: [String] {
    switch _kind {
    case .add(let key, _), .remove(let key), .convert(let key, _): return [key]
    case .rename(let from, let to): return [from, to]
    case .transform: return []
    }
  }
}
