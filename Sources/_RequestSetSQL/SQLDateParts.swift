import RequestSet

/// Date parts (`born.@year`) as SQL, spelled the way `RequestDatePart` computes them in
/// Swift: integer arithmetic on the stored seconds since 2001, with no date function of
/// the engine's. SQLite's `strftime` stops at year 9999 and PostgreSQL's `timestamp` at
/// 294276, and each rounds fractional seconds its own way; the arithmetic is exact for
/// every second within 10^14 of 2001 (beyond, the part is NULL, as it is nil in Swift), and
/// the same text runs on both engines.
///
/// ```swift
/// SQLDateParts.expression(.year, seconds: "json_extract(body, '$.born')", dialect: .sqlite)
/// // (SELECT rs_y + … FROM (SELECT … AS rs_t) …): an integer, or NULL
/// ```
public enum SQLDateParts {
  /// The SQL engine an expression is written for.
  public enum Dialect: Sendable {
    /// SQLite: no `floor()` is assumed (it needs SQLite's math functions).
    case sqlite
    /// PostgreSQL: `floor(float8)::bigint`.
    case postgres
  }

  /// The part of the date `seconds` holds, as an integer SQL expression: NULL when
  /// `seconds` is NULL or further than 10^14 from 0.
  ///
  /// - Parameters:
  ///   - part: The part.
  ///   - seconds: A numeric SQL expression (seconds since 2001), NULL when the field holds
  ///     no number.
  ///   - dialect: The engine.
  /// - Returns: A parenthesized scalar subquery.
  public static func expression(_ part: RequestDatePart, seconds: String, dialect: Dialect) -> String {
    // Whole seconds, rounded down: SQLite has no floor() unless built with its math
    // functions, so the truncation is corrected by one below zero.
    let floor: String
    // Both engines pull a derived table up into the query around it, writing its
    // columns' expressions in where they are named: each step names the one before two
    // to four times, so a month read the stored value 702 times per row (PostgreSQL: 300
    // rows took 180 ms a query; SQLite: 35 µs a row, 2.4 µs fenced). An `OFFSET` keeps
    // each step a table of its own, computed once. SQLite fences only the year, month and
    // day: for 100 rows an hour takes 3,010 steps of its virtual machine pulled up and
    // 6,310 fenced, a month 275,364 and 16,664. PostgreSQL fences every part: over 20,000
    // rows (median of 7) an hour takes 31 ms fenced and 42 ms pulled up, a minute 31 and
    // 50, a weekday 34 and 78.
    let fence: String
    switch dialect {
    case .sqlite:
      floor = "CAST(rs_s AS INTEGER) - (rs_s < CAST(rs_s AS INTEGER))"
      fence = [.year, .month, .day].contains(part) ? " LIMIT -1 OFFSET 0" : ""
    case .postgres:
      floor = "floor(rs_s)::bigint"
      fence = " OFFSET 0"
    }
    // Each step is a derived table, so no subexpression is written twice. Below zero, `/`
    // and `%` truncate in both engines: the floor division adds the divisor first.
    let seconds =
      "(SELECT CASE WHEN rs_s BETWEEN -1e14 AND 1e14 THEN \(floor) END AS rs_t FROM (SELECT \(seconds) AS rs_s\(fence)) AS rs_ds\(fence))"
    let days =
      "(SELECT rs_t, (rs_t - ((rs_t % 86400) + 86400) % 86400) / 86400 AS rs_days, ((rs_t % 86400) + 86400) % 86400 AS rs_sec FROM \(seconds) AS rs_dt\(fence))"
    switch part {
    case .hour: return "(SELECT rs_sec / 3600 FROM \(days) AS rs_dd)"
    case .minute: return "(SELECT rs_sec % 3600 / 60 FROM \(days) AS rs_dd)"
    case .second: return "(SELECT rs_sec % 60 FROM \(days) AS rs_dd)"
    // 2001-01-01 was a Monday.
    case .isoWeekday: return "(SELECT ((rs_days % 7) + 7) % 7 + 1 FROM \(days) AS rs_dd)"
    case .weekday: return "(SELECT (((rs_days % 7) + 7) % 7 + 1) % 7 + 1 FROM \(days) AS rs_dd)"
    case .year, .month, .day:
      // Howard Hinnant's civil_from_days, as `RequestDatePart._civil` writes it.
      let era =
        "(SELECT rs_z, (rs_z - ((rs_z % 146097) + 146097) % 146097) / 146097 AS rs_era FROM (SELECT rs_days + 730791 AS rs_z FROM \(days) AS rs_dd\(fence)) AS rs_dz\(fence))"
      let doe = "(SELECT rs_era, rs_z - rs_era * 146097 AS rs_doe FROM \(era) AS rs_de\(fence))"
      let yoe =
        "(SELECT rs_era, rs_doe, (rs_doe - rs_doe / 1460 + rs_doe / 36524 - rs_doe / 146096) / 365 AS rs_yoe FROM \(doe) AS rs_dq\(fence))"
      let doy =
        "(SELECT rs_era, rs_yoe, rs_doe - (365 * rs_yoe + rs_yoe / 4 - rs_yoe / 100) AS rs_doy FROM \(yoe) AS rs_dy\(fence))"
      let mp = "(SELECT rs_era, rs_yoe, rs_doy, (5 * rs_doy + 2) / 153 AS rs_mp FROM \(doy) AS rs_dm\(fence))"
      let value: String
      switch part {
      case .year: value = "rs_yoe + rs_era * 400 + CASE WHEN rs_mp >= 10 THEN 1 ELSE 0 END"
      case .month: value = "CASE WHEN rs_mp < 10 THEN rs_mp + 3 ELSE rs_mp - 9 END"
      default: value = "rs_doy - (153 * rs_mp + 2) / 5 + 1"
      }
      return "(SELECT \(value) FROM \(mp) AS rs_dp)"
    }
  }
}
