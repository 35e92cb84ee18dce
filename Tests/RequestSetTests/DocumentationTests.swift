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

  @Test func theReadmeStartsWithTheTwoCommands() throws {
    let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
    let firstBlock = readme.components(separatedBy: "```sh\n").dropFirst().first ?? ""
    #expect(firstBlock.hasPrefix("swift run Tour"))
    #expect(firstBlock.contains("\nswift test"))
  }
}
