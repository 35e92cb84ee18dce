import Foundation
import Testing

/// The README's quick start is the QuickStart playground, which CI builds and runs.
@Suite struct DocumentationTests {
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

  @Test func theReadmeRecipesAreTheRecipesPlayground() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let playground = try String(
      contentsOf: Self.root.appendingPathComponent("Playgrounds/Recipes/main.swift"), encoding: .utf8)
    let heading = "## Reading more, and writing through a query\n\n```swift\n"
    let start = try #require(readme.range(of: heading))
    let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
    let block = String(readme[start.upperBound..<end.lowerBound])
    #expect(playground.contains("// BEGIN README\n" + block + "// END README"))
  }

  /// Every Swift example in the README stands verbatim in a playground that CI runs.
  @Test func everyReadmeExampleIsInAPlayground() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let playgrounds = try ["QuickStart", "Recipes", "Examples"].map {
      try String(contentsOf: Self.root.appendingPathComponent("Playgrounds/\($0)/main.swift"), encoding: .utf8)
    }
    let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
    #expect(blocks.count >= 5)
    for block in blocks {
      #expect(playgrounds.contains { $0.contains(block) }, "README block not in a playground:\n\(block)")
    }
  }

  /// The README promises that every example runs when pasted after the quick start: the
  /// playgrounds holding them begin with it, verbatim, and CI builds and runs them.
  @Test func everyExamplePlaygroundStartsWithTheQuickStart() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let start = try #require(readme.range(of: "## Quick start\n\n```swift\n"))
    let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
    let quickStart = String(readme[start.upperBound..<end.lowerBound])
    for name in ["Recipes", "Examples"] {
      let playground = try String(
        contentsOf: Self.root.appendingPathComponent("Playgrounds/\(name)/main.swift"), encoding: .utf8)
      let quick = try #require(playground.range(of: quickStart), "\(name) does not hold the quick start")
      let firstExample = try #require(playground.range(of: "// BEGIN README"))
      #expect(quick.upperBound <= firstExample.lowerBound, "\(name) runs an example before the quick start")
      // Nothing of its own between the two but blank lines and comments.
      let between = playground[quick.upperBound..<firstExample.lowerBound].split(separator: "\n")
      #expect(between.allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }, "\(name)")
    }
  }

  /// The README's blocks also run pasted one after another: no two declare the same name.
  @Test func theReadmeBlocksDeclareEachNameOnce() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
    let declared = Self.declaredNames(blocks)
    #expect(declared["animals"] == 1)
    #expect(declared.filter { $0.value > 1 }.isEmpty, "declared more than once: \(declared.filter { $0.value > 1 })")
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
    let text = try String(
      contentsOf: root.appendingPathComponent("Sources/RequestSet/RequestSet.docc/\(name)"), encoding: .utf8)
    return text.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
  }

  /// Every Swift example of every DocC article stands verbatim in `Playgrounds/Articles`,
  /// in the articles' order, so running that playground runs them all.
  @Test func everyArticleExampleIsInTheArticlesPlayground() throws {
    let playground = try String(
      contentsOf: Self.root.appendingPathComponent("Playgrounds/Articles/main.swift"), encoding: .utf8)
    let articles = try FileManager.default.contentsOfDirectory(
      atPath: Self.root.appendingPathComponent("Sources/RequestSet/RequestSet.docc").path
    ).filter { $0.hasSuffix(".md") }
    var total = 0
    for article in articles {
      var after = playground.startIndex
      for block in try Self.articleBlocks(article) {
        total += 1
        let found = playground.range(of: block, range: after..<playground.endIndex)
        #expect(found != nil, "\(article)'s block is not in Playgrounds/Articles (or is out of order):\n\(block)")
        if let found { after = found.upperBound }
      }
    }
    #expect(total >= 9)
  }

  /// The articles' blocks also run pasted one after another after GettingStarted's: no two
  /// declare the same name.
  @Test func theArticlesBlocksDeclareEachNameOnce() throws {
    let articles = ["GettingStarted.md", "ChoosingAStore.md", "RequestSet.md", "SQLEngines.md", "WritingABackend.md"]
    let blocks = try articles.flatMap { try Self.articleBlocks($0) }
    let declared = Self.declaredNames(blocks)
    #expect(declared["store"] == 1 && declared["ArchiveStore"] == 1)
    #expect(declared.filter { $0.value > 1 }.isEmpty, "declared more than once: \(declared.filter { $0.value > 1 })")
  }

  /// Each playground (the README's examples and the articles') runs as a reader runs it:
  /// twice in a row in the same folder, which it leaves as it found it. Files an example
  /// writes go to a temporary directory (here a folder of the test's own, through
  /// `TMPDIR`) that it removes again.
  @Test(arguments: ["QuickStart", "Recipes", "Examples", "Articles", "Tour"])
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
