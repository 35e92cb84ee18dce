import Foundation
import Testing

/// The README's quick start is the QuickStart playground, which CI builds and runs; every
/// document's Swift blocks are its program under Playgrounds/Docs (Scripts/check-docs.sh).
@Suite(.ownThreads) struct DocumentationTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  @Test func theReadmeQuickStartIsTheQuickStartPlayground() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let playground = try String(
      contentsOf: Self.root.appendingPathComponent("Playgrounds/QuickStart/main.swift"), encoding: .utf8)
    let start = try #require(readme.range(of: "## Quick start\n\n```swift\n"))
    let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
    #expect(String(readme[start.upperBound..<end.lowerBound]) == playground)
  }

  /// Every document's Swift blocks stand, in order and with nothing added, in its program
  /// under `Playgrounds/Docs`, which `Scripts/check-docs.sh` builds and runs (CI runs it).
  @Test func everyDocumentsBlocksAreItsDocsPlayground() throws {
    let docc = "Sources/RequestSet/RequestSet.docc"
    let articles = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent(docc).path)
      .filter { $0.hasSuffix(".md") }.map { "\(docc)/\($0)" }
    var programs = 0
    for document in ["README.md"] + articles {
      let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
      let blocks = Self.swiftBlocks(text)
      guard !blocks.isEmpty else { continue }
      let name = URL(fileURLWithPath: document).deletingPathExtension().lastPathComponent
      let program = try String(
        contentsOf: Self.root.appendingPathComponent("Playgrounds/Docs/\(name == "RequestSet" ? "Overview" : name)/main.swift"),
        encoding: .utf8)
      #expect(program == blocks.joined(separator: "\n"), "\(document): run Scripts/check-docs.sh and commit Playgrounds/Docs")
      programs += 1
    }
    #expect(programs >= 10)
  }

  /// The README's blocks also run pasted one after another: no two declare the same name.
  @Test func theReadmeBlocksDeclareEachNameOnce() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let declared = Self.declaredNames(Self.swiftBlocks(readme))
    #expect(declared["animals"] == 1)
    #expect(declared.filter { $0.value > 1 }.isEmpty, "declared more than once: \(declared.filter { $0.value > 1 })")
  }

  /// The text between each "```swift" line and the next "```" line, as DocCheck reads it.
  static func swiftBlocks(_ text: String) -> [String] {
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

  /// The README points to no file outside the repository (nothing in `../`).
  @Test func theReadmePointsOnlyInsideTheRepository() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    #expect(!readme.contains("../"))
  }

  /// The README and the DocC articles stand alone: every file they point to is in the
  /// repository.
  @Test func theDocsPointOnlyToFilesInTheRepository() throws {
    let docc = "Sources/RequestSet/RequestSet.docc"
    let articles = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent(docc).path)
      .filter { $0.hasSuffix(".md") }.map { "\(docc)/\($0)" }
    for document in ["README.md"] + articles {
      let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
      // Markdown links, and paths in backticks that name a file (`docs/LOG-FORMAT.md`).
      let links = text.components(separatedBy: "](").dropFirst().map { $0.prefix { $0 != ")" } }
        // and reference definitions: `[rv]: Sources/RequestSet/RequestSet.docc/RecordsAndValues.md`
        + text.split(separator: "\n").filter { $0.hasPrefix("[") && $0.contains("]: ") }
        .map { $0.components(separatedBy: "]: ")[1].prefix { $0 != " " } }
      let ticked = text.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        .filter { $0.contains("/") && !$0.contains(" ") && ($0.hasSuffix(".md") || $0.hasSuffix(".swift")) }
      for link in links.map(String.init) + ticked where !link.hasPrefix("http") && !link.hasPrefix("#") {
        // A link into a section of a file (`docs/BENCHMARKS.md#tool-vs-sqlite3`) names the file.
        let path = String(link.prefix { $0 != "#" })
        #expect(
          FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path),
          "\(document) points to \(path), which is not in the repository")
      }
    }
  }

  /// How often each name is declared at the top level of `blocks` pasted one after another
  /// (`let`, `var`, `func`, `struct`, `enum`, `class`, `final class`).
  static func declaredNames(_ blocks: [String]) -> [String: Int] {
    var declared: [String: Int] = [:]
    for line in blocks.joined(separator: "\n").split(separator: "\n") where line.first != " " {
      let words = line.split(separator: " ", maxSplits: 3)
      let start = words.first == "final" ? 1 : 0
      guard words.count >= start + 2, ["let", "var", "func", "struct", "enum", "class"].contains(words[start]) else {
        continue
      }
      declared[String(words[start + 1].prefix { $0.isLetter || $0.isNumber || $0 == "_" }), default: 0] += 1
    }
    return declared
  }

  /// The Swift blocks of a DocC article, in order.
  static func articleBlocks(_ name: String) throws -> [String] {
    swiftBlocks(
      try String(contentsOf: root.appendingPathComponent("Sources/RequestSet/RequestSet.docc/\(name)"), encoding: .utf8))
  }

  /// Within each article, the blocks pasted one after another declare each name once.
  @Test func eachArticlesBlocksDeclareEachNameOnce() throws {
    let articles = try FileManager.default.contentsOfDirectory(
      atPath: Self.root.appendingPathComponent("Sources/RequestSet/RequestSet.docc").path
    ).filter { $0.hasSuffix(".md") }
    for article in articles {
      let declared = Self.declaredNames(try Self.articleBlocks(article))
      #expect(declared.filter { $0.value > 1 }.isEmpty, "\(article) declares more than once: \(declared.filter { $0.value > 1 })")
      #expect(declared["all"] == nil, "\(article) hides the standard library's all")
    }
  }

  /// Each playground runs as a reader runs it (the documents' programs run in
  /// Scripts/check-docs.sh):
  /// twice in a row in the same folder, which it leaves as it found it. Files an example
  /// writes go to a temporary directory (here a folder of the test's own, through
  /// `TMPDIR`) that it removes again.
  @Test(arguments: ["QuickStart", "Tour"])
  func everyPlaygroundRunsTwiceInOneFolderAndCleansUp(name: String) throws {
    let executable = try AdversaryChild.siblingExecutable(name, override: "REQUESTSET_PLAYGROUND_\(name.uppercased())")
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("playground-\(name)-\(UUID())")
    let folder = base.appendingPathComponent("work")
    let temporary = base.appendingPathComponent("tmp")
    for directory in [folder, temporary] {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    defer { try? FileManager.default.removeItem(at: base) }
    for run in 1...2 {
      let result = try AdversaryChild.run(
        executable: executable, arguments: [], in: folder, environment: ["TMPDIR": temporary.path])
      #expect(result.exitStatus == 0, "\(name), run \(run): \(result)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "\(name) left files behind")
      #expect(
        try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty,
        "\(name) left temporary files behind")
    }
  }

  @Test func theReadmeStartsWithTheTwoCommands() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let firstBlock = readme.components(separatedBy: "```sh\n").dropFirst().first ?? ""
    #expect(firstBlock.hasPrefix("swift run Tour"))
    #expect(firstBlock.contains("\nswift test"))
  }
}
