// swift-tools-version: 6.0
// libFuzzer targets for the format-string parser and for opening log files, in its own package so `swift test`
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
    .executableTarget(
      name: "LogFuzzer",
      dependencies: [.product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/LogFuzzer",
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]),
  ],
  swiftLanguageModes: [.v6]
)
