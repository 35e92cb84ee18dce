import RequestSet

/// What the SQL stores share: how a `StoreQuery` becomes SQL text with bound values, and
/// how a record becomes the JSON document a row keeps. `SQLiteStore` and `PostgresStore`
/// differ only in their ``SQLDialect``.
public protocol SQLDialect: Sendable {
  /// The placeholder for the `n`th bound value (1-based): `?` or `$n`.
  func placeholder(_ n: Int) -> String
}
