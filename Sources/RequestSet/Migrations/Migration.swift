import Foundation

/// One named change to the shape of a store's records, run at most once per store.
///
/// A record type is a Swift struct, and structs change between versions of an app: a
/// field is added that is not optional, renamed, widened from `Int` to `Double`, moved into
/// a nested struct. Records written by the old struct do not decode as the new one. A
/// migration rewrites them, by key, without the old Swift type: its steps work on the
/// stored fields, as a ``DynamicRecord`` sees them.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register("add legs", .add("legs", default: .int(4)))
/// migrator.register("weight in kg", .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble))
/// migrator.register("owner's city") { record in          // anything else: a closure
///   record.fields["city"] = record["owner.city"] ?? .string("unknown")
/// }
/// let store = try LogStore<AnimalV2>(path: "animals.rslog", options: .init(migrations: migrator))
/// ```
///
/// Steps run in order on every record. Keys are string keys, dotted for nested fields
/// (`"owner.city"`); `id` is never changed by a step (use a ``Step/transform(_:)`` that
/// keeps it, or make a new store).
public struct Migration: Sendable, CustomStringConvertible {
  /// The migration's name: what a store records once the migration has run, so it must
  /// never change once shipped, and be unique within its ``Migrator``.
  public let name: String
  /// The steps, run in order on every record.
  public let steps: [Step]

  /// Where an index on `key` goes after this migration's steps, in order: the key a rename
  /// or move gives it (a rename of a parent moves the keys under it: `owner` → `keeper`
  /// takes `owner.city` to `keeper.city`), the same key when no step renames it, or nil
  /// when a step removes it or a parent of it. LogStore, SQLiteStore and PostgresStore move
  /// their indexes by this rule, each key of a composite index alike (a composite index goes
  /// when any of its keys goes, or when two of its keys become one).
  ///
  /// ```swift
  /// let m = Migration("v2", .rename("owner", to: "keeper"), .remove("nickname"))
  /// m.indexKey(after: "owner.city")   // "keeper.city"
  /// m.indexKey(after: "nickname")     // nil
  /// m.indexKey(after: "age")          // "age"
  /// ```
  /// - Parameter key: The key an index is on before the migration.
  /// - Returns: The key it is on after, or nil when the index goes.
  public func indexKey(after key: String) -> String? {
    var key = key
    for step in steps {
      switch step.form {
      case .rename(let from, let to):
        if key == from {
          key = to
        } else if key.hasPrefix(from + ".") {
          key = to + key.dropFirst(from.count)
        }
      case .remove(let removed):
        if key == removed || key.hasPrefix(removed + ".") { return nil }
      case .add, .convert, .transform:
        break
      }
    }
    return key
  }

  /// A migration of these steps.
  ///
  /// ```swift
  /// let m = Migration("v2", .add("legs", default: .int(4)), .remove("nickname"))
  /// ```
  /// - Parameters:
  ///   - name: Unique within its migrator, and never changed once a store has run it.
  ///   - steps: Run in order on every record.
  public init(_ name: String, _ steps: Step...) {
    self.init(name, steps: steps)
  }

  /// A migration of these steps.
  ///
  /// ```swift
  /// let m = Migration("v2", steps: [.rename("weight", to: "weightKg")])
  /// ```
  /// - Parameters:
  ///   - name: Unique within its migrator, and never changed once a store has run it.
  ///   - steps: Run in order on every record.
  public init(_ name: String, steps: [Step]) {
    self.name = name
    self.steps = steps
  }

  /// The name and the steps, as in `v2: add legs = 4; remove nickname`.
  public var description: String {
    "\(name): " + steps.map(\.description).joined(separator: "; ")
  }

  /// One change to every record.
  ///
  /// ```swift
  /// .add("legs", default: .int(4))             // records without legs get 4
  /// .rename("weight", to: "weightKg")          // same value, new key
  /// .move("city", to: "address.city")          // into a nested object (and back out)
  /// .remove("nickname")
  /// .convert("age", .toDouble)                 // Int to Double
  /// .transform { record in record.fields["name"] = record["name"].map { .string("\($0)") } }
  /// ```
  public struct Step: Sendable, CustomStringConvertible {
    enum _Kind: Sendable {
      case add(key: String, value: FieldValue)
      case rename(from: String, to: String)
      case remove(key: String)
      case convert(key: String, conversion: Conversion)
      case transform(@Sendable (inout DynamicRecord) throws -> Void)
    }
    let _kind: _Kind

    /// Gives `key` the value `value` in every record that does not hold it (or holds nil);
    /// records that hold a value keep it. Objects on a dotted key's way are made as needed.
    ///
    /// ```swift
    /// .add("legs", default: .int(4))
    /// .add("address.country", default: .string("NO"))
    /// ```
    /// - Parameters:
    ///   - key: A string key, dotted for a nested field.
    ///   - value: The value records without the key get.
    public static func add(_ key: String, default value: FieldValue) -> Step {
      Step(_kind: .add(key: key, value: value))
    }

    /// Moves each record's value of `key` to `newKey`. Dotted keys move a value into or
    /// out of a nested object; records without `key` are left alone. A record that holds
    /// both keys (with a value that is not nil) fails the migration, which then changes
    /// nothing. Indexes on `key` follow it to `newKey`.
    ///
    /// ```swift
    /// .rename("weight", to: "weightKg")
    /// .rename("owner.city", to: "city")    // out of the nested owner
    /// ```
    /// - Parameters:
    ///   - key: The key records hold now.
    ///   - newKey: The key they hold after.
    public static func rename(_ key: String, to newKey: String) -> Step {
      Step(_kind: .rename(from: key, to: newKey))
    }

    /// Moves each record's value of `key` into or out of a nested object: the same step as
    /// ``rename(_:to:)``, named for what it does with dotted keys.
    ///
    /// ```swift
    /// .move("city", to: "address.city")
    /// ```
    /// - Parameters:
    ///   - key: The key records hold now.
    ///   - newKey: The key they hold after.
    public static func move(_ key: String, to newKey: String) -> Step {
      rename(key, to: newKey)
    }

    /// Removes `key` from every record that holds it. Indexes on the key are dropped.
    ///
    /// ```swift
    /// .remove("nickname")
    /// ```
    /// - Parameter key: A string key, dotted for a nested field.
    public static func remove(_ key: String) -> Step {
      Step(_kind: .remove(key: key))
    }

    /// Replaces each record's value of `key` by what `conversion` makes of it. Records
    /// without the key, or holding nil there, are left alone; a value the conversion
    /// refuses fails the migration, which then changes nothing.
    ///
    /// ```swift
    /// .convert("age", .toDouble)
    /// .convert("tags", .custom("split") { v in
    ///   guard case .string(let s) = v else { return v }
    ///   return .array(s.split(separator: ",").map { .string(String($0)) })
    /// })
    /// ```
    /// - Parameters:
    ///   - key: A string key, dotted for a nested field.
    ///   - conversion: What to make of each value.
    public static func convert(_ key: String, _ conversion: Conversion) -> Step {
      Step(_kind: .convert(key: key, conversion: conversion))
    }

    /// Runs `body` on every record: anything the other steps do not cover. The record's
    /// ``DynamicRecord/id`` must come out as it went in.
    ///
    /// ```swift
    /// .transform { record in
    ///   if case .string(let name)? = record.fields["name"] { record.fields["name"] = .string(name.capitalized) }
    /// }
    /// ```
    /// - Parameter body: Changes one record in place; an error it throws fails the
    ///   migration, which then changes nothing.
    public static func transform(_ body: @escaping @Sendable (inout DynamicRecord) throws -> Void) -> Step {
      Step(_kind: .transform(body))
    }

    /// What a step does, for a backend that runs steps as statements of its own engine
    /// (`json_set`) where they are exact, and record by record (``Migrator/migrate(_:after:)``)
    /// where they are not.
    ///
    /// ```swift
    /// if case .rename(let from, let to) = step.form { /* UPDATE … json_set(…) */ }
    /// ```
    public enum Form: Sendable {
      /// ``Migration/Step/add(_:default:)``.
      case add(key: String, value: FieldValue)
      /// ``Migration/Step/rename(_:to:)`` and ``Migration/Step/move(_:to:)``.
      case rename(from: String, to: String)
      /// ``Migration/Step/remove(_:)``.
      case remove(key: String)
      /// ``Migration/Step/convert(_:_:)``.
      case convert(key: String, conversion: Conversion)
      /// ``Migration/Step/transform(_:)``: only the record-by-record path runs it.
      case transform
    }

    /// What the step does.
    ///
    /// ```swift
    /// Migration.Step.remove("nickname").form   // .remove(key: "nickname")
    /// ```
    public var form: Form {
      switch _kind {
      case .add(let key, let value): return .add(key: key, value: value)
      case .rename(let from, let to): return .rename(from: from, to: to)
      case .remove(let key): return .remove(key: key)
      case .convert(let key, let conversion): return .convert(key: key, conversion: conversion)
      case .transform: return .transform
      }
    }

    /// The step as in `add legs = 4`, `rename weight → weightKg`, `convert age to Double`.
    public var description: String {
      switch _kind {
      case .add(let key, let value): return "add \(key) = \(value)"
      case .rename(let from, let to): return "rename \(from) → \(to)"
      case .remove(let key): return "remove \(key)"
      case .convert(let key, let conversion): return "convert \(key) to \(conversion.name)"
      case .transform: return "transform"
      }
    }
  }

  /// What ``Step/convert(_:_:)`` makes of a value.
  ///
  /// ```swift
  /// .convert("age", .toDouble)
  /// .convert("price", .custom("cents") { v in
  ///   guard case .double(let d) = v else { throw RequestSetError(.typeMismatch, "price holds \(v)") }
  ///   return .int(Int((d * 100).rounded()))
  /// })
  /// ```
  public struct Conversion: Sendable {
    /// The conversion's name, shown in errors and descriptions.
    public let name: String
    let _body: @Sendable (FieldValue) throws -> FieldValue
    /// The kind every value it makes has, for the built-in conversions; nil for a custom one.
    let _result: StoreFieldKinds.Kind?

    init(
      name: String, result: StoreFieldKinds.Kind? = nil, _body: @escaping @Sendable (FieldValue) throws -> FieldValue
    ) {
      self.name = name
      _result = result
      self._body = _body
    }

    /// A conversion named `name` that `body` performs; an error it throws fails the
    /// migration with the record and key named.
    ///
    /// ```swift
    /// let upper = Migration.Conversion.custom("uppercase") { v in
    ///   if case .string(let s) = v { return .string(s.uppercased()) }
    ///   return v
    /// }
    /// ```
    /// - Parameters:
    ///   - name: Shown in errors and descriptions.
    ///   - body: Makes the new value from the stored one (never nil).
    public static func custom(_ name: String, _ body: @escaping @Sendable (FieldValue) throws -> FieldValue) -> Conversion {
      Conversion(name: name, _body: body)
    }

    /// Any number to a `Double` (an `Int` field widened to `Double`); anything else fails.
    ///
    /// ```swift
    /// .convert("age", .toDouble)   // .int(3) → .double(3)
    /// ```
    public static let toDouble = Conversion(name: "Double", result: .number) { value in
      switch value {
      case .double: return value
      case .int(let i): return .double(Double(i))
      case .uint(let u): return .double(Double(u))
      case .decimal(let d): return .double(_Numbers.nearestDouble(d))
      default: throw _conversionRefused(value, "Double")
      }
    }

    /// A number with no fractional part, in `Int`'s range, to an `Int`; anything else
    /// (3.5, a string) fails.
    ///
    /// ```swift
    /// .convert("legs", .toInt)   // .double(4) → .int(4)
    /// ```
    public static let toInt = Conversion(name: "Int", result: .number) { value in
      switch value {
      case .int: return value
      case .uint(let u) where u <= UInt64(Int.max): return .int(Int(u))
      case .double(let d) where d.rounded() == d && d >= -9.223372036854775808e18 && d < 9.223372036854775808e18:
        return .int(Int(d))
      case .decimal(let d):
        let double = _Numbers.nearestDouble(d)
        if double.rounded() == double, double >= -9.007199254740992e15, double <= 9.007199254740992e15,
          Decimal(Int(double)) == d
        {
          return .int(Int(double))
        }
        throw _conversionRefused(value, "Int")
      default: throw _conversionRefused(value, "Int")
      }
    }

    /// A number or a Bool to its text (`3` → `"3"`, `true` → `"true"`); a string stays.
    ///
    /// ```swift
    /// .convert("zip", .toString)   // .int(1234) → .string("1234")
    /// ```
    public static let toString = Conversion(name: "String", result: .string) { value in
      switch value {
      case .string: return value
      case .int(let i): return .string(String(i))
      case .uint(let u): return .string(String(u))
      case .double(let d): return .string(String(d))
      case .decimal(let d): return .string(d.description)
      case .bool(let b): return .string(b ? "true" : "false")
      default: throw _conversionRefused(value, "String")
      }
    }

    /// A value inside an array of one element (`"a"` → `["a"]`): a single value widened to
    /// a list. An array stays as it is.
    ///
    /// ```swift
    /// .convert("tag", .toArray)
    /// ```
    public static let toArray = Conversion(name: "array", result: .array) { value in
      if case .array = value { return value }
      return .array([value])
    }
  }
}

private func _conversionRefused(_ value: FieldValue, _ target: String) -> RequestSetError {
  RequestSetError(.typeMismatch, "\(value) cannot become a \(target) without losing what it holds")
}
