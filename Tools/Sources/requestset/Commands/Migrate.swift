import ArgumentParser
import Foundation
import RequestSet
import RequestSetSQLite

/// `requestset migrate FILE --plan PLAN [--table NAME] [--list]`: runs a plan's pending
/// migrations on a log or on a table of a SQLite database, all or nothing.
struct Migrate: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Run the pending migrations of a plan file on a log or a SQLite table, all or nothing.",
    discussion: """
      A log, and each RequestSet table of a SQLite database, records the name of every \
      migration it has run. migrate runs the plan's migrations the file has not run, in the \
      plan's order, all or nothing: a log in one rewrite that replaces it only when every \
      record was migrated, a SQLite table in one transaction. When a step cannot change a \
      record (convert name Int on a name that is text), the error names the migration, the \
      record and the key, and the file is left exactly as it was. It prints the migrations \
      it will run and the record count, then the time taken and the migrations the file has \
      run. Running it again finds nothing pending and changes nothing. --list prints the \
      migrations the file has run and the plan's pending ones, and changes nothing. The \
      migration rewrites a log as compaction does, so its history (query --as-of) starts \
      anew.

      FILE is told to be a SQLite database by its first bytes. --table names the table to \
      migrate; it may be left out when the database holds one RequestSet table only.

      \(MigrationPlan.grammar)

      An example plan:

        # comments and blank lines are ignored
        migration "2: kg, legs"
          rename weight weightKg
          convert weightKg Double
          add legs 4
          move city address.city
          remove nickname
        migration "3: tags"
          add tags []
      """)

  @Argument(help: "The log file, or the SQLite database file.") var file: String
  @Option(help: ArgumentHelp("The plan file: the migrations, in order (see below).", valueName: "plan"))
  var plan: String?
  @Option(
    help: ArgumentHelp(
      "The table to migrate, in a SQLite database (needed when it holds more than one RequestSet table).",
      valueName: "name"))
  var table: String?
  @Flag(help: "Print the migrations the file has run and the plan's pending ones; change nothing.") var list =
    false

  /// The first bytes of a log (docs/LOG-FORMAT.md).
  static let logMagic = Array("RSLOG\r\n\u{1A}".utf8)

  func validate() throws {
    if plan == nil && !list {
      throw ValidationError(
        "Give the migrations to run with --plan PLAN (or --list to see what the file has run).")
    }
    guard FileManager.default.fileExists(atPath: file) else { return }
    if SQLiteCatalog.isSQLite(path: file) {
      // A missing --table is a usage error only when the database holds several tables;
      // one that cannot be read is reported by run().
      if table == nil, let catalog = try? SQLiteCatalog.read(path: file),
        let message = catalog.tableNeededMessage(in: file)
      {
        throw ValidationError(message)
      }
    } else if table != nil {
      let isLog = fileStarts(file, with: Self.logMagic)
      throw ValidationError(
        "--table names a table of a SQLite database, and \(file) is "
          + (isLog ? "a log, which has no tables." : "not a SQLite database."))
    }
  }

  func run() throws {
    try reportingErrors {
      // A bad plan is reported before the file is opened, so it changes nothing and takes no lock.
      let plan = try self.plan.map { try MigrationPlan.read(path: $0) }
      if table != nil && !FileManager.default.fileExists(atPath: file) {
        throw ToolError("There is no SQLite database at \(file).")
      }
      if SQLiteCatalog.isSQLite(path: file) {
        try runSQLite(plan: plan)
        return
      }
      // Read-only first: a file that is no log is refused before a writer takes its lock.
      let reader = try openReader(file)
      let applied = reader.appliedMigrations
      reader.close()
      guard let plan, !list else {
        print(Migrate.listing(applied: applied, plan: plan), terminator: "")
        return
      }
      try migrateLog(with: plan)
    }
  }

  /// Runs the plan's pending migrations on the log, printing what it runs, then what it did.
  private func migrateLog(with plan: MigrationPlan) throws {
    let store = try LogStore<DynamicRecord>(
      path: file,
      options: .init(autoCompactDeadRatio: nil, migrations: plan.migrator, migratesOnOpen: false))
    defer { store.close() }
    // The rewrite goes to FILE.compacting (docs/LOG-FORMAT.md) until it replaces the log;
    // Ctrl-C removes it, so an interrupted run leaves nothing but the log as it was.
    let scratch = file + ".compacting"
    let ran = try Migrate.run(
      plan, on: file, count: store.count, pending: store.pendingMigrations,
      applied: { store.appliedMigrations },
      migrate: {
        Interrupt.removeOnInterrupt(scratch)
        defer { Interrupt.keepOnInterrupt(scratch) }
        return try store.migrate()
      })
    try KeyOrder.noteMigration(of: file, by: plan.entries.filter { ran.contains($0.name) }.flatMap(\.steps))
  }

  /// `migrate` on a SQLite database: the table is found (and the applied migrations listed)
  /// through a read-only connection, so a wrong `--table` or `--list` writes nothing; the
  /// migrations run in the store's one transaction (Ctrl-C, or a failure, rolls it back).
  private func runSQLite(plan: MigrationPlan?) throws {
    let catalog = try SQLiteCatalog.read(path: file)
    let table = try catalog.table(named: self.table, in: file)
    guard let plan, !list else {
      print(Migrate.listing(applied: catalog.applied[table.name] ?? [], plan: plan), terminator: "")
      return
    }
    let store = try SQLiteStore<DynamicRecord>(
      path: file, table: table.name, migrations: plan.migrator, migratesOnOpen: false)
    defer { store.close() }
    _ = try Migrate.run(
      plan, on: "the table \(table.name) in \(file)", count: try RequestSet(store).fetchCount(),
      pending: store.pendingMigrations, applied: { store.appliedMigrations },
      migrate: { try store.migrate() })
  }

  /// Runs `migrate` when migrations are pending, printing them and the record count first,
  /// then the time taken and the migrations `subject` has run; returns the names run.
  private static func run(
    _ plan: MigrationPlan, on subject: String, count: Int, pending: [String], applied: () -> [String],
    migrate: () throws -> [String]
  ) throws -> [String] {
    guard !pending.isEmpty else {
      let total = plan.entries.count
      print(
        "nothing to migrate: \(subject) has run "
          + (total == 1 ? "the plan's migration" : "all \(total) of the plan's migrations"))
      print(Migrate.section("applied", applied(), plan: plan), terminator: "")
      return []
    }
    print(
      "migrating \(subject) (\(count) record\(count == 1 ? "" : "s")): "
        + Migrate.counted(pending.count, "pending migration"))
    for name in pending { print("  " + MigrationPlan.quoted(name)) }
    let progress = Progress()
    progress.update("migrating \(count) records…", force: true)
    let clock = ContinuousClock()
    let start = clock.now
    let ran: [String]
    do {
      ran = try migrate()
    } catch {
      progress.finish()
      throw error
    }
    let elapsed = clock.now - start
    progress.finish()
    print(
      "ran \(Migrate.counted(ran.count, "migration")) on \(count) record\(count == 1 ? "" : "s") in "
        + Migrate.seconds(elapsed))
    print(Migrate.section("applied", applied(), plan: plan), terminator: "")
    return ran
  }

  /// `--list`: the applied migrations (marking those the plan lacks), then the pending ones.
  static func listing(applied: [String], plan: MigrationPlan?) -> String {
    var out = section("applied", applied, plan: plan)
    if let plan { out += section("pending", plan.migrator.pending(after: applied).map(\.name), plan: nil) }
    return out
  }

  /// `title (n):` and the names, one a line in plan quoting; `title: none` when there are none.
  /// With a plan, a name it does not list is marked.
  static func section(_ title: String, _ names: [String], plan: MigrationPlan?) -> String {
    guard !names.isEmpty else { return "\(title): none\n" }
    let known = Set(plan?.entries.map(\.name) ?? [])
    var out = "\(title) (\(names.count)):\n"
    for name in names {
      out += "  " + MigrationPlan.quoted(name)
      if plan != nil, !known.contains(name) { out += "  (not in the plan)" }
      out += "\n"
    }
    return out
  }

  static func counted(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

  /// A duration as `0.042 s`.
  static func seconds(_ d: Duration) -> String {
    let (s, attoseconds) = d.components
    let value = Double(s) + Double(attoseconds) / 1e18
    return String(format: "%.3f s", value)
  }
}
