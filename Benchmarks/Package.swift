// swift-tools-version: 6.1
// The benchmarks live in their own package so the library itself keeps no dependencies.
//
//   swift run -c release --package-path Benchmarks Ratios          # the ratio table, one run
//   swift run -c release --package-path Benchmarks Ratios 1000000 issue13   # the SQL stores' table
//   swift package --package-path Benchmarks benchmark              # ordo-one's harness
import PackageDescription

let package = Package(
  name: "RequestSetBenchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "RequestSet", path: ".."),
    .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    // SQLite, the peer the LogStore is measured against.
    .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
  ],
  targets: [
    // Fixtures and scenarios shared by both runners.
    .target(
      name: "BenchmarkSupport",
      dependencies: [.product(name: "RequestSet", package: "RequestSet")],
      path: "Sources/BenchmarkSupport"),
    // libpq, for the plain-libpq baseline of PostgresStore (the library's CLibPQ is no product).
    .systemLibrary(
      name: "CLibPQBench", path: "Sources/CLibPQBench", pkgConfig: "libpq",
      providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
    // Times every scenario against its baseline in one process and prints the ratios.
    .executableTarget(
      name: "Ratios",
      dependencies: [
        "BenchmarkSupport", "CLibPQBench", .product(name: "RequestSet", package: "RequestSet"),
        .product(name: "RequestSetSQLite", package: "RequestSet"),
        .product(name: "RequestSetPostgres", package: "RequestSet"),
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      path: "Sources/Ratios"),
    .executableTarget(
      name: "RequestSetBenchmarks",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "RequestSet", package: "RequestSet"),
        .product(name: "Benchmark", package: "benchmark"),
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      path: "Benchmarks/RequestSetBenchmarks",
      plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
  ],
  swiftLanguageModes: [.v6]
)
