import FuzzDriver
import RequestSet

/// Records each parsed plan runs on: nested objects, arrays, nulls and every kind of number,
/// so that a plan's steps reach the library's migration code.
let records: [DynamicRecord] = [
  DynamicRecord(
    id: .int(1),
    fields: [
      "name": .string("Rex"), "weight": .double(12.5), "legs": .int(4),
      "tags": .array([.string("a"), .string("b")]),
      "note": .null, "address": .object(["city": .string("Oslo"), "zip": .string("0150")]),
      "a.b": .string("dotted"),
    ]),
  DynamicRecord(
    id: .int(2),
    fields: ["name": .string(""), "weight": .string("7"), "legs": .uint(UInt64.max), "tags": .null]),
  DynamicRecord(
    id: .int(3), fields: ["weight": .double(.nan), "legs": .int(Int.min), "address": .string("Oslo")]),
]

/// Parses the input as a migration plan (the `requestset migrate --plan` file, through the
/// tool's own parser) and, when it parses, renders its error or runs its migrations on a
/// few records. Any trap, hang or sanitizer report is a finding; thrown errors are the
/// expected answer to bad input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  do {
    let plan = try MigrationPlan.parse(text)
    let migrator = plan.migrator
    _ = try? migrator.validate()
    _ = try? migrator.migrate(records)
    for migration in plan.migrations { _ = migration.description }
    if let first = plan.entries.first { _ = try? migrator.migrate(records, after: [first.name]) }
  } catch {
    _ = error.message(path: "plan.txt")
  }
  return 0
}

/// SwiftPM links an executable target's entry point under this name; it hands the
/// command line to libFuzzer.
@_cdecl("PlanFuzzer_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
  runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
}
