// swift-tools-version: 6.0
// libFuzzer targets for the format-string parser (alone and over a RecordGraph), for opening log files
// and for the tool's migration plans and CSV / JSON Lines input, in its own package so `swift test`
// and CI never build it. See README.md beside this file for the commands.
import PackageDescription

let package = Package(
  name: "RequestSetFuzz",
  platforms: [.macOS(.v15)],
  dependencies: [.package(name: "RequestSet", path: "..")],
  targets: [
    // libFuzzer's entry point, shared by every target.
    .target(name: "FuzzDriver", path: "Sources/FuzzDriver"),
    .executableTarget(
      name: "FormatFuzzer",
      dependencies: ["FuzzDriver", .product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/FormatFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    .executableTarget(
      name: "LogFuzzer",
      dependencies: ["FuzzDriver", .product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/LogFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    .executableTarget(
      name: "GraphFormatFuzzer",
      dependencies: ["FuzzDriver", .product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/GraphFormatFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    // The tool's plan parser and input readers are compiled into these two targets from
    // symbolic links (Sources/*/Tool/) to Tools/Sources/requestset, so the tool stays one
    // executable target and the fuzzers build without swift-argument-parser.
    .executableTarget(
      name: "PlanFuzzer",
      dependencies: ["FuzzDriver", .product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/PlanFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
    .executableTarget(
      name: "ImportFuzzer",
      dependencies: ["FuzzDriver", .product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/ImportFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
  ],
  swiftLanguageModes: [.v6]
)
