// swift-tools-version: 6.0
// A libFuzzer target for the format-string parser, in its own package so `swift test`
// and CI never build it. See README.md beside this file for the commands.
import PackageDescription

let package = Package(
  name: "RequestSetFuzz",
  platforms: [.macOS(.v15)],
  dependencies: [.package(name: "RequestSet", path: "..")],
  targets: [
    .executableTarget(
      name: "FormatFuzzer",
      dependencies: [.product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/FormatFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
  ],
  swiftLanguageModes: [.v6]
)
