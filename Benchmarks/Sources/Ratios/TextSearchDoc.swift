import RequestSet

// Apart from TextSearchRatios.swift, whose GRDB import has a `Record` of its own.

/// A document of the full-text search benchmark.
struct Doc: Record {
  var id: Int
  var title: String
  var body: String
}
