// swift-tools-version: 6.0
import PackageDescription

// The `requestset` command-line tool: its own package, so that it may use
// swift-argument-parser while the library keeps no dependencies.
// Run it with `swift run --package-path Tools requestset --help`.
let package = Package(
  name: "RequestSetTools",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "requestset", targets: ["requestset"]),
  ],
  dependencies: [
    .package(name: "RequestSet", path: ".."),
    .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
  ],
  targets: [
    .executableTarget(
      name: "requestset",
      dependencies: [
        .product(name: "RequestSet", package: "RequestSet"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]),
    // Runs the built tool as a child process on real files; depending on the executable
    // makes `swift test` build it next to the test binary.
    .testTarget(
      name: "RequestSetToolTests",
      dependencies: ["requestset", .product(name: "RequestSet", package: "RequestSet")]),
  ],
  swiftLanguageModes: [.v6]
)
