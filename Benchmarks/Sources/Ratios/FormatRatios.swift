import BenchmarkSupport
import RequestSet

func formatRows(_ animals: [Animal]) throws -> [Row] {
  let store = try MemoryStore(animals)
  let set = RequestSet(store)
  var rows: [Row] = []
  let pairs: [(String, RequestFilter<Animal>, RequestFilter<Animal>)] = [
    ("age > 10", try RequestFilter(format: "age > 10", arguments: []), \.age > 10),
    ("species == 'Cow'", try RequestFilter(format: "species == 'Cow'", arguments: []), \.species == "Cow"),
    ("age > 10 AND species == 'Cow'", try RequestFilter(format: "age > %d AND species == %@", arguments: [10, "Cow"]),
     \.age > 10 && \.species == "Cow"),
  ]
  for (text, format, typed) in pairs {
    let f = median { keep(set.filter(format).count) }
    let t = median { keep(set.filter(typed).count) }
    rows.append(Row("format \"\(text)\" count", f, "typed key paths", t, target: "within 1.1x"))
  }
  let parse = median(runs: 9) {
    for _ in 0..<10_000 { keep(try! RequestFilter<Animal>(format: "age > %d AND name BEGINSWITH[c] %@", arguments: [3, "mi"])) }
  }
  rows.append(Row("parse a format string x10,000", parse, "(no baseline)", parse, target: "-"))
  return rows
}
