// swift-tools-version: 6.0
import PackageDescription

// The `requestset` command-line tool: its own package, so that it may use
// swift-argument-parser while the library keeps no dependencies.
// Build it in release (`swift build --package-path Tools -c release`) and run
// `Tools/.build/release/requestset --help`; `swift run` builds a debug tool, several times slower.
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
        .product(name: "RequestSetSQLite", package: "RequestSet"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .target(name: "CSQLiteTool", condition: .when(platforms: [.linux, .windows, .android, .openbsd, .wasi])),
      ]),
    // The system's SQLite, read-only, for what the library does not say: which RequestSet
    // tables a database holds, before a store is opened on one (opening creates a missing
    // table). Apple platforms have it as the SDK's SQLite3 module. Its own name: the root
    // package's CSQLite is not a product.
    .systemLibrary(
      name: "CSQLiteTool", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
    // Runs the built tool as a child process on real files; depending on the executable
    // makes `swift test` build it next to the test binary.
    .testTarget(
      name: "RequestSetToolTests",
      dependencies: [
        "requestset", .product(name: "RequestSet", package: "RequestSet"),
        .product(name: "RequestSetSQLite", package: "RequestSet"),
      ]),
  ],
  swiftLanguageModes: [.v6]
)
