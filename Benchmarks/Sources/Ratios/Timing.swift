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

/// One line of a ratio table: RequestSet's time beside its baseline's.
struct Row {
  var scenario: String
  var ours: Double
  var baselineName: String
  var baseline: Double
  var target: String
  /// The unit of the two measures.
  var unit = "ms"

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
      unit != "ms" ? String(format: "%.2fx the size", ratio)
      : ratio >= 1 ? String(format: "%.2fx slower", ratio) : String(format: "%.2fx faster", 1 / ratio)
    func f(_ x: Double) -> String {
      if unit != "ms" { return String(format: "%.0f %@", x, unit) }
      return x < 1 ? String(format: "%.3f ms", x) : String(format: "%.1f ms", x)
    }
    return "| \(scenario) | \(f(ours)) | \(baselineName) | \(f(baseline)) | **\(r)** | \(target) |"
  }
}

func printTable(_ title: String, _ rows: [Row]) {
  print("\n### \(title)\n")
  print("| scenario | RequestSet | baseline | baseline time | ratio | target |")
  print("|---|---:|---|---:|---:|---|")
  for row in rows { print(row.text) }
}
