// The documentation test: every Swift block of the README and of the DocC articles, pasted
// exactly as shown, compiles, runs twice in one folder, leaves the temporary directory as it
// was, and prints what its comments say. Run it with `Scripts/check-docs.sh`.
//
// One executable per document, `Playgrounds/Docs/<Document>/main.swift`: the document's
// Swift blocks in order, nothing added (the README's start with the quick start, an
// article's with its own first block). A block must also stand alone after that first block:
// no later block may use a name another later block declares (checked here, by name), and
// `DocCheck alone DIR` writes each pair for the script to type-check; names that hide the
// standard library's (`all`, `min`, …) are refused too.
//
// The convention the documents keep: `// → TEXT` after code, or on a line of its own, is a
// line the program prints. A run of `// →` lines is a run of printed lines; a TEXT ending in
// `…` matches the lines that begin with the rest. The printed lines must contain every run,
// in the document's order (lines printed without a comment are let through).
//
//     DocCheck write   regenerate Playgrounds/Docs/*/main.swift from the documents
//     DocCheck check   fail when a generated file differs from its document (CI)
//     DocCheck run     run each document's executable (built by `swift build`) twice
//     DocCheck alone DIR   write each later block after its first block alone, to type-check
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent()
let catalog = "Sources/RequestSet/RequestSet.docc"

/// A document with Swift blocks, and the executable target that holds them.
struct Document {
  var path: String
  var target: String
  var blocks: [String]

  var generated: String { "Playgrounds/Docs/\(target.dropFirst(3))/main.swift" }
  var source: String { blocks.joined(separator: "\n") }
}

func read(_ path: String) throws -> String {
  try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
}

/// The text between each "```swift" line and the next "```" line.
func swiftBlocks(_ text: String) -> [String] {
  var blocks: [String] = []
  var current: [Substring]?
  for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
    if current == nil {
      if line == "```swift" { current = [] }
    } else if line == "```" {
      blocks.append(current!.joined(separator: "\n") + "\n")
      current = nil
    } else {
      current!.append(line)
    }
  }
  return blocks
}

func documents() throws -> [Document] {
  var paths = ["README.md"]
  paths += try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path)
    .filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
  return try paths.compactMap { path in
    let blocks = swiftBlocks(try read(path))
    guard !blocks.isEmpty else { return nil }
    let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
    return Document(path: path, target: "Doc" + (name == "RequestSet" ? "Overview" : name), blocks: blocks)
  }
}

// The check runs on one thread, top to bottom: nothing reads or writes this concurrently.
nonisolated(unsafe) var failures: [String] = []
func fail(_ message: String) { failures.append(message) }

// MARK: Blocks that stand alone

/// Names a top-level line of `block` declares (`let`, `var`, `func`, `struct`, `enum`,
/// `class`, `actor`, `typealias`, `protocol`).
func declaredNames(_ block: String) -> Set<String> {
  var names: Set<String> = []
  for line in block.split(separator: "\n") where line.first != " " && line.first != "}" {
    var words = line.split(separator: " ").map(String.init)
    while let first = words.first, ["final", "private", "public", "fileprivate", "@MainActor"].contains(first) {
      words.removeFirst()
    }
    guard words.count >= 2,
      ["let", "var", "func", "struct", "enum", "class", "actor", "typealias", "protocol"].contains(words[0])
    else { continue }
    let name = String(words[1].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
    if !name.isEmpty { names.insert(name) }
  }
  return names
}

/// The identifiers a block's code mentions, outside comments and string literals (their
/// interpolations included: a false alarm is cheap).
func words(_ block: String) -> Set<String> {
  var code = ""
  for line in block.split(separator: "\n") {
    var inString = false
    var previous: Character = " "
    for character in line {
      if !inString && character == "/" && previous == "/" {
        code.removeLast()
        break
      }
      if character == "\"" && previous != "\\" { inString.toggle() }
      if !inString || character == "(" || character == ")" { code.append(character) }
      previous = character
    }
    code.append("\n")
  }
  // A name after a dot is a member (`.filter`), not the block's own.
  var names: Set<String> = []
  var word = ""
  var afterDot = false
  for character in code + " " {
    if character.isLetter || character.isNumber || character == "_" {
      word.append(character)
      continue
    }
    if !word.isEmpty && !afterDot { names.insert(word) }
    afterDot = character == "." || (word.isEmpty && afterDot && character == " ")
    word = ""
  }
  return names
}

/// Names the standard library or Foundation declare at the top level, which a reader's
/// code must not hide (`let all = …` makes `all` a set, and another paste fails).
let reserved: Set<String> = [
  "all", "any", "min", "max", "abs", "zip", "print", "stride", "sequence", "swap", "type", "assert",
  "precondition", "fatalError", "debugPrint", "dump", "readLine", "exit", "repeatElement", "numericCast",
  "isKnownUniquelyReferenced", "withExtendedLifetime", "withUnsafePointer", "unsafeBitCast",
]

func checkIndependence(_ document: Document) {
  let first = declaredNames(document.blocks[0])
  let later = document.blocks.dropFirst().map(declaredNames)
  for (i, names) in ([first] + later).enumerated() {
    for name in names.intersection(reserved) {
      fail("\(document.path), block \(i + 1): `\(name)` hides the standard library's; choose another name")
    }
  }
  for (i, block) in document.blocks.enumerated().dropFirst() {
    let used = words(block)
    let own = later[i - 1]
    for (j, names) in later.enumerated() where j + 1 != i {
      for name in names.intersection(used).subtracting(first).subtracting(own) {
        fail(
          "\(document.path), block \(i + 1) uses `\(name)` from block \(j + 2): pasted after the first block alone, it would not compile"
        )
      }
    }
  }
}

// MARK: Printed values

/// Runs of expected lines, in the document's order.
func expectations(_ document: Document) -> [[String]] {
  var runs: [[String]] = []
  var open = false
  for line in document.source.split(separator: "\n", omittingEmptySubsequences: false) {
    guard let arrow = line.range(of: "// →") else {
      open = false
      continue
    }
    var text = line[arrow.upperBound...]
    if text.first == " " { text = text.dropFirst() }
    let alone = line[..<arrow.lowerBound].allSatisfy { $0 == " " }
    if alone && open {
      runs[runs.count - 1].append(String(text))
    } else {
      runs.append([String(text)])
    }
    open = true
  }
  return runs
}

func matches(_ printed: Substring, _ expected: String) -> Bool {
  if expected.hasSuffix("…") { return printed.hasPrefix(expected.dropLast()) }
  return printed == expected
}

func checkOutput(_ document: Document, _ output: String, run: Int) {
  let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
  var at = 0
  for expected in expectations(document) {
    var found: Int?
    var i = at
    while i + expected.count <= lines.count {
      if zip(lines[i..<(i + expected.count)], expected).allSatisfy(matches) {
        found = i
        break
      }
      i += 1
    }
    guard let found else {
      fail(
        "\(document.path), run \(run): expected the printed line(s)\n    \(expected.joined(separator: "\n    "))\n"
          + "  after line \(at) of the output:\n    "
          + lines.dropFirst(at).prefix(30).joined(separator: "\n    "))
      return
    }
    at = found + expected.count
  }
}

// MARK: Running

func contents(_ url: URL) -> [String] {
  ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
}

func run(_ document: Document, executable: URL) throws {
  let base = FileManager.default.temporaryDirectory.appendingPathComponent("doccheck-\(document.target)-\(UUID())")
  let folder = base.appendingPathComponent("work")
  let temporary = base.appendingPathComponent("tmp")
  for directory in [folder, temporary] {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  }
  defer { try? FileManager.default.removeItem(at: base) }
  for round in 1...2 {
    let process = Process()
    process.executableURL = executable
    process.currentDirectoryURL = folder
    var environment = ProcessInfo.processInfo.environment
    environment["TMPDIR"] = temporary.path
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
      fail("\(document.path), run \(round): exit status \(process.terminationStatus); it printed:\n\(text)")
      return
    }
    checkOutput(document, text, run: round)
    if !contents(folder).isEmpty { fail("\(document.path), run \(round): left \(contents(folder)) in its folder") }
    if !contents(temporary).isEmpty {
      fail("\(document.path), run \(round): left \(contents(temporary)) in the temporary directory")
    }
  }
}

let command = CommandLine.arguments.dropFirst().first ?? "run"
let docs = try documents()
switch command {
case "write", "check":
  let expected = Set(docs.map(\.generated))
  for document in docs {
    checkIndependence(document)
    let existing = try? read(document.generated)
    guard existing != document.source else { continue }
    if command == "write" {
      let url = root.appendingPathComponent(document.generated)
      try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try document.source.write(to: url, atomically: true, encoding: .utf8)
      print("wrote \(document.generated)")
    } else {
      fail("\(document.generated) differs from \(document.path)'s Swift blocks: run Scripts/check-docs.sh and commit it")
    }
  }
  for folder in contents(root.appendingPathComponent("Playgrounds/Docs"))
  where !expected.contains("Playgrounds/Docs/\(folder)/main.swift") {
    fail("Playgrounds/Docs/\(folder) belongs to no document with Swift blocks: remove it and its target")
  }
  let manifest = try read("Package.swift")
  for document in docs where !manifest.contains("\"\(document.target.dropFirst(3))\"") {
    fail("Package.swift does not list \"\(document.target.dropFirst(3))\" among the documented examples")
  }
case "alone":
  // Each later block after its document's first block alone, one folder each, for
  // Scripts/check-docs.sh to type-check: a block must not lean on another later block.
  let folder = URL(fileURLWithPath: CommandLine.arguments[2])
  for document in docs {
    for (i, block) in document.blocks.enumerated().dropFirst() {
      let url = folder.appendingPathComponent("\(document.target)-block\(i + 1)/main.swift")
      try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try (document.blocks[0] + "\n" + block).write(to: url, atomically: true, encoding: .utf8)
    }
  }
case "run":
  let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  for document in docs {
    let started = Date()
    try run(document, executable: products.appendingPathComponent(document.target))
    let blocks = document.blocks.count
    let lines = expectations(document).joined().count
    print(
      "\(document.path): \(blocks) block\(blocks == 1 ? "" : "s"), \(lines) printed line\(lines == 1 ? "" : "s") checked, "
        + String(format: "%.1f s", Date().timeIntervalSince(started)))
  }
default:
  print("usage: DocCheck write|check|run|alone DIR")
  exit(2)
}
if !failures.isEmpty {
  FileHandle.standardError.write(Data((failures.joined(separator: "\n\n") + "\n").utf8))
  FileHandle.standardError.write(Data("\(failures.count) documentation check(s) failed.\n".utf8))
  exit(1)
}
