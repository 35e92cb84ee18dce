import BenchmarkSupport
import Foundation
import RequestSet
import RequestSetPostgres

// Issue 36's judge on PostgreSQL: the nycflights13 relation queries of RelationRealRatios.swift
// on a RecordGraph of PostgresStores in one database, beside `psql` running the same SQL on
// plain tables of the same data in a second database of the same private server (or of
// REQUESTSET_POSTGRES_URL's).
//
//   swift run -c release --package-path Benchmarks Ratios 336776 relations-real-pg
//
// N loads the first N flights, as in `relations-real`. The plain tables are made by psql
// from the CSVs (`\copy … WITH (FORMAT csv, NULL 'NA')`, a flight's id its line number), with
// a primary key on each table's key and an index on each foreign key of flights, then
// ANALYZE. psql runs each query's SQL in one process with `\timing on` and its rows written
// to /dev/null; "Time: … ms" is parsed: a warm-up, then the median of 5 (psql's timing is
// in microseconds, so no statement is repeated). The SQL is relations-real's, with SQLite's
// dialect turned into PostgreSQL's (`GLOB 'Delta*'` is `LIKE 'Delta%'`, and a descending
// sort puts NULLs last, as SQLite and RequestSet do, and `IS NOT 'x'` is `IS DISTINCT FROM 'x'`); the server's locale is C, so text
// sorts by bytes in both. Every answer is checked against psql's. The stores are opened with a
// statement timeout of 60 s, so a statement the server plans badly becomes an error in its
// row rather than 300 s for each run.

/// How long a PostgresStore statement may run (s) before the server cancels it.
private let realStatementTimeout = 60

/// `sql` in PostgreSQL's dialect.
private func postgresDialect(_ sql: String) -> String {
  sql.replacingOccurrences(of: "GLOB 'Delta*'", with: "LIKE 'Delta%'")
    .replacingOccurrences(of: "p.year DESC", with: "p.year DESC NULLS LAST")
    .replacingOccurrences(of: " IS NOT '", with: " IS DISTINCT FROM '")
}

/// Runs `psql` on `url` with `script` as its input file, and returns what it printed.
/// posix_spawn, as runCommand (PlainLibPQ.swift) does, since Foundation's Process can hang
/// once a server started by pg_ctl runs.
private func psql(_ url: String, _ script: String) throws -> String {
  let input = scratch + "/relations-real-pg-input.sql"
  let output = scratch + "/relations-real-pg-output.txt"
  defer { remove(input, [""]) }
  defer { remove(output, [""]) }
  try script.write(toFile: input, atomically: true, encoding: .utf8)
  let command = ["/usr/bin/env", "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", input]
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
  posix_spawn_file_actions_adddup2(&actions, 1, 2)
  let argv = command.map { strdup($0) } + [nil]
  defer { for case let p? in argv { free(p) } }
  var pid: pid_t = 0
  guard posix_spawn(&pid, command[0], &actions, nil, argv, environ) == 0 else {
    throw RelationBenchFailure("cannot start psql: errno \(errno)")
  }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
  let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
  guard status == 0 else {
    throw RelationBenchFailure("psql failed (wait status \(status)): \(text.prefix(500))")
  }
  return text
}

/// psql's "Time: … ms" figures, and the other lines it printed.
private func psqlTimes(_ output: String) -> (times: [Double], lines: [String]) {
  var times: [Double] = []
  var lines: [String] = []
  for line in output.split(separator: "\n") {
    if line.hasPrefix("Time: ") {
      times.append(Double(line.dropFirst("Time: ".count).prefix { $0 != " " }) ?? .nan)
    } else {
      lines.append(String(line))
    }
  }
  return (times, lines)
}

/// Makes the plain tables in the database at `url` from the CSVs, keeping the first `limit` flights.
private func writePlainPostgresTables(_ url: String, limit: Int) throws {
  let dir = try nycFlightsFolder()
  let csv = "WITH (FORMAT csv, HEADER true, NULL 'NA')"
  let script = """
    CREATE TABLE airlines(carrier text PRIMARY KEY, name text NOT NULL);
    CREATE TABLE airports(faa text PRIMARY KEY, name text NOT NULL, lat double precision NOT NULL,
      lon double precision NOT NULL, alt integer NOT NULL, tz integer NOT NULL, dst text NOT NULL, tzone text);
    CREATE TABLE planes(tailnum text PRIMARY KEY, year integer, type text NOT NULL, manufacturer text NOT NULL,
      model text NOT NULL, engines integer NOT NULL, seats integer NOT NULL, speed integer, engine text NOT NULL);
    CREATE TABLE flights(id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, year integer NOT NULL,
      month integer NOT NULL, day integer NOT NULL, dep_time integer, sched_dep_time integer NOT NULL,
      dep_delay integer, arr_time integer, sched_arr_time integer NOT NULL, arr_delay integer,
      carrier text NOT NULL REFERENCES airlines(carrier), flight integer NOT NULL, tailnum text,
      origin text NOT NULL REFERENCES airports(faa), dest text NOT NULL, air_time integer, distance integer NOT NULL,
      hour integer NOT NULL, minute integer NOT NULL, time_hour text NOT NULL);
    \\copy airlines FROM '\(dir)/airlines.csv' \(csv)
    \\copy airports FROM '\(dir)/airports.csv' \(csv)
    \\copy planes FROM '\(dir)/planes.csv' \(csv)
    \\copy flights(year, month, day, dep_time, sched_dep_time, dep_delay, arr_time, sched_arr_time, arr_delay, carrier, flight, tailnum, origin, dest, air_time, distance, hour, minute, time_hour) FROM '\(dir)/flights.csv' \(csv)
    DELETE FROM flights WHERE id > \(min(limit, Int(Int32.max)));
    CREATE INDEX flights_tailnum ON flights(tailnum);
    CREATE INDEX flights_carrier ON flights(carrier);
    CREATE INDEX flights_origin ON flights(origin);
    CREATE INDEX flights_dest ON flights(dest);
    VACUUM ANALYZE;

    """
  _ = try psql(url, script)
}

func relationsRealPostgresTables(_ n: Int) throws {
  let limit = n >= 336_776 ? Int.max : max(1, n)
  progress("relations-real-pg: reading nycflights13…")
  let data = try loadNYCFlights13(limit: limit)
  let size =
    "\(grouped(data.flights.count)) flights, \(grouped(data.planes.count)) planes, "
    + "\(grouped(data.airports.count)) airports, \(grouped(data.airlines.count)) airlines"
  progress("  \(size); load average \(loadAverage())")

  progress("  relations-real-pg: a private server…")
  let server = try PrivatePostgres()
  defer { server.stop() }
  let pq = try PlainLibPQ(url: server.url)
  try pq.exec("CREATE DATABASE nycflights13_plain")
  // The same server, the last path component (the database) replaced.
  guard let slash = server.url.range(of: "/", options: .backwards) else {
    throw RelationBenchFailure("the server's URL \(server.url) names no database")
  }
  let plainURL = String(server.url[..<slash.upperBound]) + "nycflights13_plain"

  progress("  relations-real-pg: PostgresStores in one database…")
  // A statement the server plans badly ends its row (an error in the table) after
  // `realStatementTimeout` s, instead of the default 300 s for each of its runs.
  let options = PostgresConnectionOptions(statementTimeout: .seconds(realStatementTimeout))
  let flights = try PostgresStore<Flight>(url: server.url, table: "flights", options: options)
  let planes = try PostgresStore<Plane>(url: server.url, table: "planes", options: options)
  let airports = try PostgresStore<Airport>(url: server.url, table: "airports", options: options)
  let airlines = try PostgresStore<Airline>(url: server.url, table: "airlines", options: options)
  defer {
    flights.close()
    planes.close()
    airports.close()
    airlines.close()
  }
  try flights.insert(contentsOf: data.flights)
  try planes.insert(contentsOf: data.planes)
  try airports.insert(contentsOf: data.airports)
  try airlines.insert(contentsOf: data.airlines)
  for key in ["tailnum", "carrier", "origin", "dest"] { try flights.createIndex(key) }
  try pq.exec("VACUUM ANALYZE")
  let graph = try RecordGraph(flights, planes, airports, airlines)

  progress("  relations-real-pg: the plain tables, by psql…")
  try writePlainPostgresTables(plainURL, limit: limit)

  var lines: [String] = []
  var ratios: [(Double, String)] = []
  var findings: [String] = []
  for (i, original) in realQueries().enumerated() {
    var query = original
    progress("  [\(i + 1)] \(query.label)…")
    query.sql = postgresDialect(query.sql)
    query.answerSQL = query.answerSQL.map(postgresDialect)
    let answerScript = "\\pset format unaligned\n\\pset tuples_only on\n\\pset fieldsep '|'\n\\pset null NA\n"
    var answerLines = psqlTimes(try psql(plainURL, answerScript + (query.answerSQL ?? query.sql) + ";\n"))
      .lines
    if !query.ordered { answerLines.sort() }
    let expected: RealAnswer =
      query.measure == "count" && answerLines.count == 1 && Int(answerLines[0]) != nil
      ? .count(Int(answerLines[0])!) : .rows(answerLines)
    let timing = "\\timing on\n\\o /dev/null\n" + String(repeating: query.sql + ";\n", count: realRuns + 1)
    let times = psqlTimes(try psql(plainURL, timing)).times
    guard times.count == realRuns + 1 else {
      throw RelationBenchFailure("psql printed \(times.count) times, not \(realRuns + 1), for \(query.sql)")
    }
    let sorted = times.dropFirst().sorted()
    let peer = sorted[sorted.count / 2]
    var cell = "error"
    do {
      var (first, got) = try timed { try query.answer(graph) }
      if case .rows(let rows) = got, !query.ordered { got = .rows(rows.sorted()) }
      let ms = try realMedian(first) { try query.run(graph) }
      ratios.append((ms / peer, "[\(i + 1)]"))
      cell = "\(msText(ms))\(first > realSlow ? "†" : "") (\(ratioText(ms / peer)))"
      if got != expected {
        let finding =
          "MISMATCH [\(i + 1)] PostgresStore: \(query.label): psql answers \(expected), RequestSet \(got)"
        print("!!! " + finding)
        findings.append(finding)
        cell += " **≠ psql**"
      }
    } catch {
      let finding = "ERROR [\(i + 1)] PostgresStore: \(query.label): \(error)"
      print("!!! " + finding)
      findings.append(finding)
    }
    lines.append(
      "| \(i + 1) | \(query.label) | \(query.measure) | \(realAnswerText(query, expected)) | \(msText(peer)) | \(cell) |"
    )
  }

  print("\n### Issue 36: nycflights13 relation queries beside psql (\(size))\n")
  print("| # | query | timed | answer (psql) | psql ms | PostgresStore ms (ratio) |")
  print("|---:|---|---|---|---:|---:|")
  for line in lines { print(line) }
  let (middle, worst) = ratioSummary(ratios)
  print("\n| store | median ratio | worst ratio | issue 36's target | met? |")
  print("|---|---:|---:|---|---|")
  print(
    "| PostgresStore, one database | \(ratioText(middle)) | \(ratioText(worst.0)) (\(worst.1)) | median ≤ 1.5× | "
      + "\(mark(middle <= 1.5)) |")
  print(
    "\nEach time is the median of \(realRuns) runs after a warm-up (†: one run, the first took over "
      + "\(Int(realSlow / 1000)) s); the ratio is RequestSet ÷ psql. The stores' statement timeout is "
      + "\(realStatementTimeout) s. Load average at the end: \(loadAverage()).")
  if findings.isEmpty {
    print("Every RequestSet answer equals psql's.")
  } else {
    print("\n!!! \(findings.count) ANSWER MISMATCHES OR ERRORS:")
    for finding in findings { print("!!! " + finding) }
  }
}
