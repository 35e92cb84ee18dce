// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "RequestSet",
  // Foundation's `Predicate` and `Synchronization.Mutex` set the floor on Apple platforms.
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "RequestSet", targets: ["RequestSet"]),
  ],
  targets: [
    .target(name: "RequestSet", dependencies: ["_RequestSetCRC32C"]),
    // The CPU's CRC-32C instruction for the log's checksums (a software table is the
    // fallback). C, because Swift has no portable spelling of the intrinsic.
    .target(name: "_RequestSetCRC32C"),
    // Runnable examples: `swift run Tour`; QuickStart, Recipes and Examples hold the README's
    // examples verbatim (DocumentationTests checks it).
    .executableTarget(name: "Tour", dependencies: ["RequestSet"], path: "Playgrounds/Tour"),
    .executableTarget(name: "QuickStart", dependencies: ["RequestSet"], path: "Playgrounds/QuickStart"),
    .executableTarget(name: "Recipes", dependencies: ["RequestSet"], path: "Playgrounds/Recipes"),
    .executableTarget(name: "Examples", dependencies: ["RequestSet"], path: "Playgrounds/Examples"),
    // The child process that LogStore's crash and lock tests start and kill; depending on it
    // makes `swift test` build it next to the test binary.
    .executableTarget(name: "LogCrashWorker", dependencies: ["RequestSet"], path: "Tests/LogCrashWorker"),
    // The child process of the adversary tests: input that would crash kills it, not the run.
    .executableTarget(name: "AdversaryWorker", dependencies: ["RequestSet"], path: "Tests/AdversaryWorker"),
    .testTarget(name: "RequestSetTests", dependencies: ["RequestSet", "LogCrashWorker", "AdversaryWorker"]),
  ],
  swiftLanguageModes: [.v6]
)
