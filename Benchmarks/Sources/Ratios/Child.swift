import Foundation

// Measurements that need a process of their own (resident memory, a store opened without
// the records' array beside it) run in a child: this same executable, started as
// `Ratios --child KIND ARGUMENTS…`. The child writes its figures to standard output as
// `name=value` lines; the parent reads them back.

/// Runs `Ratios --child kind arguments…` and returns the figures it reported.
func runChild(_ kind: String, _ arguments: [String]) throws -> [String: Double] {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  process.arguments = ["--child", kind] + arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  try process.run()
  let output = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  guard process.terminationStatus == 0 else {
    throw ChildFailure(description: "Ratios --child \(kind) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
  }
  var figures: [String: Double] = [:]
  for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
    let pair = line.split(separator: "=", maxSplits: 1)
    if pair.count == 2, let value = Double(pair[1]) { figures[String(pair[0])] = value }
  }
  return figures
}

struct ChildFailure: Error, CustomStringConvertible {
  var description: String
}

/// Writes one figure for the parent (see ``runChild(_:_:)``).
func report(_ name: String, _ value: Double) {
  print("\(name)=\(value)")
}

/// Writes one figure for the parent.
func report(_ name: String, _ value: Int) {
  print("\(name)=\(value)")
}

/// Runs the child named by `arguments` (after `--child`).
func childMain(_ arguments: [String]) throws {
  guard let kind = arguments.first else { throw ChildFailure(description: "--child needs a kind") }
  let rest = Array(arguments.dropFirst())
  switch kind {
  case "scale": try scaleChild(rest)
  default: throw ChildFailure(description: "unknown child \(kind)")
  }
}
