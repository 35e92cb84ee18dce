import RequestSet

/// One record read from an input file, with the line it starts on.
struct InputRecord {
  var line: Int
  /// The top-level `id` key's value, kept out of ``fields``: `DynamicRecord` stores the id
  /// apart, and a dictionary without it need not be copied to drop it.
  var id: FieldValue?
  /// The other top-level keys.
  var fields: [String: FieldValue]
}

/// A bad line of an input file, and why it is bad.
struct InputProblem: Error {
  var line: Int
  var reason: String
}

/// Keys in the order an input first gives them, each once.
struct KeyOrderBuilder {
  private(set) var keys: [String] = []
  private var seen: Set<String> = []

  /// Adds the keys not seen yet, in order.
  mutating func add(_ more: some Sequence<String>) {
    for key in more where seen.insert(key).inserted { keys.append(key) }
  }

  func contains(_ key: String) -> Bool { seen.contains(key) }
}
