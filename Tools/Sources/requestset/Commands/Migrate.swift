import ArgumentParser
import Foundation
import RequestSet

/// `requestset migrate FILE --plan PLAN [--list]`: runs a plan's pending migrations, all or nothing.
struct Migrate: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Run the pending migrations of a plan file on a log, all or nothing.",
    discussion: """
      A log records the name of every migration it has run. migrate runs the plan's \
      migrations the log has not run, in the plan's order, in one rewrite of the log that \
      replaces it only when every record was migrated: when a step cannot change a record \
      (convert name Int on a name that is text), the error names the migration, the record \
      and the key, and the log is left exactly as it was. It prints the migrations it will \
      run and the record count, then the time taken and the migrations the log has run. \
      Running it again finds nothing pending and changes nothing. --list prints the \
      migrations the log has run and the plan's pending ones, and changes nothing. The \
      migration rewrites the log as compaction does, so its history (query --as-of) \
      starts anew.

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

  @Argument(help: "The log file.") var file: String
  @Option(help: ArgumentHelp("The plan file: the migrations, in order (see below).", valueName: "plan"))
  var plan: String?
  @Flag(help: "Print the migrations the log has run and the plan's pending ones; change nothing.") var list =
    false

  func validate() throws {
    if plan == nil && !list {
      throw ValidationError("Give the migrations to run with --plan PLAN (or --list to see what the log has run).")
    }
  }

  func run() throws {
    try reportingErrors {
      // A bad plan is reported before the log is opened, so it changes nothing and takes no lock.
      let plan = try self.plan.map { try MigrationPlan.read(path: $0) }
      // Read-only first: a file that is no log is refused before a writer takes its lock.
      let reader = try openReader(file)
      let applied = reader.appliedMigrations
      reader.close()
      guard let plan else {
        print(Migrate.listing(applied: applied, plan: nil), terminator: "")
        return
      }
      if list {
        print(Migrate.listing(applied: applied, plan: plan), terminator: "")
        return
      }
      try migrate(with: plan)
    }
  }

  /// Runs the plan's pending migrations, printing what it runs, then what it did.
  private func migrate(with plan: MigrationPlan) throws {
    let store = try LogStore<DynamicRecord>(
      path: file,
      options: .init(autoCompactDeadRatio: nil, migrations: plan.migrator, migratesOnOpen: false))
    defer { store.close() }
    let pending = store.pendingMigrations
    let count = store.count
    guard !pending.isEmpty else {
      let total = plan.entries.count
      print(
        "nothing to migrate: \(file) has run \(total == 1 ? "the plan's migration" : "all \(total) of the plan's migrations")"
      )
      print(Migrate.section("applied", store.appliedMigrations, plan: plan), terminator: "")
      return
    }
    print("migrating \(file) (\(count) record\(count == 1 ? "" : "s")): \(Migrate.counted(pending.count, "pending migration"))")
    for name in pending { print("  " + MigrationPlan.quoted(name)) }
    let progress = Progress()
    progress.update("migrating \(count) records…", force: true)
    // The rewrite goes to FILE.compacting (docs/LOG-FORMAT.md) until it replaces the log;
    // Ctrl-C removes it, so an interrupted run leaves nothing but the log as it was.
    let scratch = file + ".compacting"
    Interrupt.removeOnInterrupt(scratch)
    defer { Interrupt.keepOnInterrupt(scratch) }
    let clock = ContinuousClock()
    let start = clock.now
    let ran: [String]
    do {
      ran = try store.migrate()
    } catch {
      progress.finish()
      throw error
    }
    let elapsed = clock.now - start
    progress.finish()
    try KeyOrder.noteMigration(of: file, by: plan.entries.filter { ran.contains($0.name) }.flatMap(\.steps))
    print(
      "ran \(Migrate.counted(ran.count, "migration")) on \(count) record\(count == 1 ? "" : "s") in "
        + Migrate.seconds(elapsed))
    print(Migrate.section("applied", store.appliedMigrations, plan: plan), terminator: "")
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
