// swift-tools-version: 6.0
import Foundation
import PackageDescription

// The library is compiled optimized (-O) in a debug build when this repository is what is
// being built: `swift test` (the test process then spends about half the CPU time, and the
// heaviest suites a quarter: tens of thousands of queries, crash loops, fuzz corpora),
// `swift run Tour`, and the Tools, Benchmarks and Fuzz packages beside it. The tests
// themselves stay unoptimized. A package that depends on RequestSet builds it as its own
// configuration says: SwiftPM refuses a versioned dependency's unsafe flags, so these
// settings are empty when the manifest is read from a repository (SwiftPM reads it there at
// "/" while resolving versions, without a checkout) or from a checkout (`.build/checkouts`,
// Xcode's `SourcePackages`, a registry download).
// PackageManifestTests checks both sides. To step through the library in a debugger here,
// build it unoptimized: `REQUESTSET_ONONE=1 swift build`.
let builtHere: Bool = {
  let directory = Context.packageDirectory
  let dependencyPlaces = ["/.build/", "/checkouts/", "/SourcePackages/", "/registry/"]
  return directory != "/" && !dependencyPlaces.contains { directory.contains($0) }
    && FileManager.default.fileExists(atPath: directory + "/Package.swift")
}()
let optimizesHere = builtHere && Context.environment["REQUESTSET_ONONE"] == nil
let optimizedHere: [SwiftSetting] = optimizesHere ? [.unsafeFlags(["-O"], .when(configuration: .debug))] : []
let optimizedHereC: [CSetting] = optimizesHere ? [.unsafeFlags(["-O2"], .when(configuration: .debug))] : []

let package = Package(
  name: "RequestSet",
  // Foundation's `Predicate` and `Synchronization.Mutex` set the floor on Apple platforms.
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "RequestSet", targets: ["RequestSet"]),
    // The SQL engines: each needs its system library (libsqlite3-dev, libpq-dev); the
    // RequestSet product needs neither.
    .library(name: "RequestSetSQLite", targets: ["RequestSetSQLite"]),
    .library(name: "RequestSetPostgres", targets: ["RequestSetPostgres"]),
  ],
  targets: [
    .target(name: "RequestSet", dependencies: ["_RequestSetCRC32C"], swiftSettings: optimizedHere),
    // The CPU's CRC-32C instruction for the log's checksums (a software table is the
    // fallback). C, because Swift has no portable spelling of the intrinsic.
    .target(name: "_RequestSetCRC32C", cSettings: optimizedHereC),
    // The system's SQLite (Apple platforms have it as the SDK's SQLite3 module).
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
    // libpq, PostgreSQL's client library.
    .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
    // What the SQL stores share: the translation of a query to SQL, the JSON rows.
    .target(name: "_RequestSetSQL", dependencies: ["RequestSet"], swiftSettings: optimizedHere),
    .target(
      name: "RequestSetSQLite",
      dependencies: [
        "RequestSet", "_RequestSetSQL",
        .target(name: "CSQLite", condition: .when(platforms: [.linux, .windows, .android, .openbsd, .wasi])),
      ], swiftSettings: optimizedHere),
    .target(name: "RequestSetPostgres", dependencies: ["RequestSet", "_RequestSetSQL", "CLibPQ"], swiftSettings: optimizedHere),
    // Runnable examples: `swift run Tour`; QuickStart is the README's quick start, verbatim
    // (DocumentationTests checks it).
    .executableTarget(name: "Tour", dependencies: ["RequestSet"], path: "Playgrounds/Tour"),
    .executableTarget(name: "QuickStart", dependencies: ["RequestSet"], path: "Playgrounds/QuickStart"),
    // The documentation test (Scripts/check-docs.sh): it writes each document's Swift blocks
    // into Playgrounds/Docs and runs them.
    .executableTarget(name: "DocCheck", path: "Playgrounds/DocCheck"),
    // The child process that LogStore's crash and lock tests start and kill; depending on it
    // makes `swift test` build it next to the test binary.
    .executableTarget(name: "LogCrashWorker", dependencies: ["RequestSet"], path: "Tests/LogCrashWorker"),
    // The child process of the adversary tests: input that would crash kills it, not the run.
    .executableTarget(name: "AdversaryWorker", dependencies: ["RequestSet", "RequestSetSQLite"], path: "Tests/AdversaryWorker"),
    // The child process of the SQL stores' two-process tests and of the reliability tests
    // (open/close cycles, a long live soak); libpq to count its own server connections.
    .executableTarget(
      name: "SQLWorker", dependencies: ["RequestSet", "RequestSetSQLite", "RequestSetPostgres", "CLibPQ"],
      path: "Tests/SQLWorker"),
    .testTarget(
      name: "RequestSetTests",
      dependencies: [
        "RequestSet", "RequestSetSQLite", "RequestSetPostgres", "_RequestSetSQL", "LogCrashWorker", "AdversaryWorker", "SQLWorker",
        // The playgrounds, so that DocumentationTests can run them as a reader would.
        "QuickStart", "Tour",
      ]),
  ],
  swiftLanguageModes: [.v6]
)

// The documentation's examples: one executable per document that has Swift blocks,
// `Playgrounds/Docs/<name>/main.swift`, which is that document's blocks in order and nothing
// else (the README's begin with its quick start, an article's with its first block).
// Scripts/check-docs.sh writes them from the documents, runs each twice and checks what they
// print against the documents' `// →` comments.
let documentedExamples = [
  "README", "GettingStarted", "Overview", "RecordsAndValues", "ChoosingAStore", "SQLEngines", "WritingABackend",
  "SchemaMigrations", "Relationships", "InAppsAndServers", "MigratingFromTheSeedLibraries",
]
for name in documentedExamples {
  package.targets.append(
    .executableTarget(name: "Doc\(name)", dependencies: ["RequestSet", "RequestSetSQLite"], path: "Playgrounds/Docs/\(name)"))
}

// `swift package generate-documentation` (every library product's DocC archive) needs
// swift-docc-plugin. The package declares it only when REQUESTSET_DOCC is set, so that by
// default it resolves and builds with no dependencies at all:
//
//     REQUESTSET_DOCC=1 swift package generate-documentation
if Context.environment["REQUESTSET_DOCC"] != nil {
  package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"))
}
