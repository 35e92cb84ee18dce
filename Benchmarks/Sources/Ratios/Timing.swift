import Foundation

/// The median wall-clock time of `runs` calls of `body`, after one warm-up call.
func median(runs: Int = 9, _ body: () throws -> Void) rethrows -> Double {
  try body()
  var times: [Double] = []
  for _ in 0..<runs {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
  }
  times.sort()
  return times[times.count / 2]
}

/// One line of the ratio table.
struct Row {
  var scenario: String
  var ours: Double
  var baseline: Double
  var baselineName: String
  var target: String

  var ratio: Double { ours / baseline }

  var text: String {
    let r = ratio >= 1 ? String(format: "%.2fx slower", ratio) : String(format: "%.1fx faster", 1 / ratio)
    return "| \(scenario) | \(String(format: "%.2f", ours)) ms | \(baselineName) | \(String(format: "%.2f", baseline)) ms | **\(r)** | \(target) |"
  }

  static let header = """
    | scenario | RequestSet | baseline | baseline time | ratio | target |
    |---|---:|---|---:|---:|---|
    """
}
