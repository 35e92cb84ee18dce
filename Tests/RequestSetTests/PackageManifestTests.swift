import Foundation
import Testing

/// `Package.swift` compiles the library with `-O` in a debug build when this repository is
/// the package being built, and adds no such flag when another package depends on
/// RequestSet: SwiftPM refuses a versioned dependency whose targets carry unsafe flags
/// ("the target 'RequestSet' in product 'RequestSet' contains unsafe build flags").
///
/// The test copies the package into a git repository tagged `1.0.0`, asks SwiftPM for that
/// copy's own manifest (the flag is there), then makes a package that depends on the tag by
/// its `file://` URL and has SwiftPM load the graph (`show-dependencies` validates the flags
/// without compiling anything). Both read manifests with no cache (`--manifest-cache none`):
/// SwiftPM's shared cache was seen to hand the dependency the copy's own reading of the
/// same manifest, which a user who never built RequestSet as the root package has not got.
@Suite(.ownThreads) struct PackageManifestTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  @Test func theLibraryIsOptimizedHereAndAVersionedDependencyStillLoads() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("requestset-manifest-\(UUID())")
    defer { try? FileManager.default.removeItem(at: dir) }
    let repository = dir.appendingPathComponent("RequestSet")
    try FileManager.default.createDirectory(at: repository, withIntermediateDirectories: true)
    for item in ["Package.swift", "Sources", "Tests", "Playgrounds"] {
      try FileManager.default.copyItem(
        at: Self.root.appendingPathComponent(item), to: repository.appendingPathComponent(item))
    }
    for arguments in [["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy"], ["tag", "1.0.0"]] {
      let git = try Self.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com"] + arguments, in: repository, dir)
      try #require(git.status == 0, "git \(arguments): \(git.output)")
    }

    // The repository itself: its library targets carry -O for the debug configuration.
    let own = try Self.run(["swift", "package", "--manifest-cache", "none", "dump-package"], in: repository, dir)
    try #require(own.status == 0, "\(own.output.suffix(3_000))")
    let manifest = try #require(
      try JSONSerialization.jsonObject(with: Data(own.output.utf8.drop { $0 != UInt8(ascii: "{") })) as? [String: Any])
    let targets = try #require(manifest["targets"] as? [[String: Any]])
    let library = try #require(targets.first { $0["name"] as? String == "RequestSet" })
    let settings = String(decoding: try JSONSerialization.data(withJSONObject: library["settings"] ?? []), as: UTF8.self)
    #expect(settings.contains("unsafeFlags") && settings.contains("\"-O\""), "\(settings)")

    // A package that depends on the tagged version: SwiftPM loads the graph.
    let app = dir.appendingPathComponent("App")
    try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/App"), withIntermediateDirectories: true)
    try """
    // swift-tools-version: 6.0
    import PackageDescription
    let package = Package(
      name: "App", platforms: [.macOS(.v15)],
      dependencies: [.package(url: "\(repository.absoluteString)", from: "1.0.0")],
      targets: [.executableTarget(name: "App", dependencies: [.product(name: "RequestSet", package: "RequestSet")])])
    """.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
    try "import RequestSet\n".write(to: app.appendingPathComponent("Sources/App/main.swift"), atomically: true, encoding: .utf8)
    let graph = try Self.run(["swift", "package", "--manifest-cache", "none", "show-dependencies"], in: app, dir)
    #expect(graph.status == 0, "\(graph.output.suffix(3_000))")
    #expect(!graph.output.contains("unsafe build flags"), "\(graph.output.suffix(3_000))")
    #expect(graph.output.contains("RequestSet"), "\(graph.output.suffix(3_000))")
  }

  /// Runs a command in `directory`, its output (both streams) into a file under `scratch`,
  /// without `REQUESTSET_ONONE` (which would make the manifest add no flag anywhere).
  static func run(_ command: [String], in directory: URL, _ scratch: URL) throws -> (status: Int32, output: String) {
    let log = scratch.appendingPathComponent("command-\(UUID()).log")
    try Data().write(to: log)
    let handle = try FileHandle(forWritingTo: log)
    defer { try? handle.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    process.currentDirectoryURL = directory
    var environment = ProcessInfo.processInfo.environment
    environment["REQUESTSET_ONONE"] = nil
    process.environment = environment
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    let end = process.waitForEnd()
    let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    return (end.exitStatus ?? -1, output)
  }
}
