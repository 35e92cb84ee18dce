/// "Did you mean" for a misspelt command: `requestset qurey` names `query`.
enum Suggestion {
  /// The message for a first argument that names no command, or nil when it names one
  /// (or is an option, or is missing: argument-parser answers those).
  static func unknownCommand(_ arguments: [String]) -> String? {
    guard let first = arguments.first, !first.hasPrefix("-"), first != "help" else { return nil }
    let names = RequestSetTool.configuration.subcommands.map { $0._commandName }
    guard !names.contains(first) else { return nil }
    var message = "Error: \"\(first)\" is not a requestset command."
    if let near = closest(to: first, among: names) {
      message += " Did you mean \"\(near)\"?"
    }
    message += "\nUsage: requestset <subcommand>\n  Commands: \(names.joined(separator: ", ")).\n"
      + "  See 'requestset --help' for more information."
    return message
  }

  /// The name nearest to `word` (by edit distance, up to a third of its length, at least
  /// 2), or one that `word` starts; nil when none is near.
  static func closest(to word: String, among names: [String]) -> String? {
    let lowered = word.lowercased()
    let scored = names.map { (name: $0, distance: distance(lowered, $0)) }
    let limit = max(2, lowered.count / 3)
    if let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= limit { return best.name }
    return names.first { $0.hasPrefix(lowered) && lowered.count >= 2 }
  }

  /// Damerau–Levenshtein distance (optimal string alignment): a swap of two neighbours is one edit.
  static func distance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in 1...a.count {
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
      }
    }
    return d[a.count][b.count]
  }
}
