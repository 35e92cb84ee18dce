// The list of scenario tables. An area adds `Scenarios.<area>` in its own
// `Scenarios+<Area>.swift` and names it here.

extension Scenarios {
  static var areas: [[String: Scenario]] { [live, files, input, values, nesting, relations, traps] }
}
