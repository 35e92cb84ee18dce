/// The tool's error type, as `Tools/Sources/requestset/RequestSetTool.swift` declares it:
/// the tool's input code in `Tool/` (symbolic links into `Tools/Sources/requestset`) throws
/// it, and the rest of the command-line code stays out of the fuzzer. `PlanFuzzer` links to
/// this file too.
struct ToolError: Error {
  var message: String
  init(_ message: String) { self.message = message }
}
