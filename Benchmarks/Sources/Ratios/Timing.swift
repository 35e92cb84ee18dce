import Foundation

/// The median wall-clock time, in milliseconds, of `runs` calls of `body` after a warm-up.
func median(runs: Int = 9, warmUp: Bool = true, _ body: () throws -> Void) rethrows -> Double {
  if warmUp { try body() }
  var times: [Double] = []
  for _ in 0..<runs {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
  }
  times.sort()
  return times[times.count / 2]
}

/// The wall-clock time, in milliseconds, of one call of `body`, and its result.
func timed<T>(_ body: () throws -> T) rethrows -> (ms: Double, value: T) {
  let start = DispatchTime.now().uptimeNanoseconds
  let value = try body()
  return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6, value)
}

/// The median time of one operation, in milliseconds, given the time one call took
/// (`estimate`, ms): `body(reps)` runs the operation `reps` times, where `reps` is chosen so
/// that one timed body takes about 30 ms (at most `maxReps`), and the median of 5 bodies
/// (3 when a body takes over 300 ms) is divided by `reps`.
func perOperation(estimate: Double, maxReps: Int, _ body: (Int) throws -> Void) rethrows -> Double {
  let reps = max(1, min(maxReps, Int(30 / max(estimate, 1e-6))))
  let runs = estimate * Double(reps) > 300 ? 3 : 5
  return try median(runs: runs, warmUp: false) { try body(reps) } / Double(reps)
}

/// The median time of one call of `operation(i)`, in milliseconds, over the keys
/// `0..<keys`: the first three calls warm up and give the estimate, then ``perOperation(estimate:maxReps:_:)``
/// times `operation(0)`, `operation(1)`, … in a loop.
func perOperation(keys: Int, _ operation: (Int) throws -> Void) rethrows -> Double {
  let (ms, _) = try timed { for i in 0..<3 { try operation(i % keys) } }
  return try perOperation(estimate: ms / 3, maxReps: keys) { reps in for i in 0..<reps { try operation(i % keys) } }
}

/// `n` with a comma between groups of three digits: 1,000,000.
func grouped(_ n: Int) -> String {
  let digits = String(n.magnitude)
  var out = ""
  for (i, c) in digits.enumerated() {
    if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
    out.append(c)
  }
  return (n < 0 ? "-" : "") + out
}

/// One line of a ratio table: RequestSet's time beside its baseline's.
struct Row {
  var scenario: String
  var ours: Double
  var baselineName: String
  var baseline: Double
  var target: String
  /// The unit of the two measures.
  var unit = "ms"
  /// Print the ratio as `ours ÷ baseline` ("0.85×") rather than "N× faster / slower".
  var plainRatio = false
  /// Whether the target is met ("met", "**missed**"), for tables that judge their rows.
  var verdict: String?

  init(_ scenario: String, _ ours: Double, _ baselineName: String, _ baseline: Double, target: String) {
    self.scenario = scenario
    self.ours = ours
    self.baselineName = baselineName
    self.baseline = baseline
    self.target = target
  }

  var ratio: Double { ours / baseline }

  var text: String {
    let r =
      plainRatio ? String(format: ratio >= 10 ? "%.0f×" : "%.2f×", ratio)
      : unit != "ms" ? String(format: "%.2fx the size", ratio)
      : ratio >= 1 ? String(format: "%.2fx slower", ratio) : String(format: "%.2fx faster", 1 / ratio)
    func f(_ x: Double) -> String {
      if unit != "ms" { return String(format: "%.0f %@", x, unit) }
      if x < 0.1 { return perOpText(x) }
      return x < 1 ? String(format: "%.3f ms", x) : String(format: "%.1f ms", x)
    }
    let cells = [scenario, f(ours), baselineName, f(baseline), "**\(r)**", target] + (verdict.map { [$0] } ?? [])
    return "| " + cells.joined(separator: " | ") + " |"
  }
}

func printTable(_ title: String, _ rows: [Row]) {
  let judged = rows.contains { $0.verdict != nil }
  print("\n### \(title)\n")
  print("| scenario | RequestSet | baseline | baseline time | ratio | target |" + (judged ? " met? |" : ""))
  print("|---|---:|---|---:|---:|---|" + (judged ? "---|" : ""))
  for var row in rows {
    if judged && row.verdict == nil { row.verdict = "—" }
    print(row.text)
  }
}
