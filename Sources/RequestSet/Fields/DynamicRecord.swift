/// A record without its Swift type: an id and named fields, each a ``FieldValue``.
///
/// A ``LogStore`` file is self-describing (see `docs/LOG-FORMAT.md`), so any log opens as
/// a store of dynamic records, whatever type wrote it, and every query that names fields
/// by string key works on it: format strings, key/value and tuple filters, sorts, windows,
/// aggregates, `groupBy`, `values` and indexes. This is how the `requestset` command-line
/// tool reads logs.
///
/// ```swift
/// let store = try LogStore<DynamicRecord>(path: "animals.rslog")   // read-only
/// let old = try RequestSet(store).filter("age > %d", 3).sortBy("-age").fetch()
/// old.first?["owner.city"]                                        // .string("Oslo")
/// ```
///
/// ``id`` is the record's `id` field (``FieldValue/null`` when the record has none) and
/// ``fields`` holds its other top-level fields; a nested struct is an ``FieldValue/object(_:)``.
/// A field whose optional was `nil` is absent from ``fields`` (or ``FieldValue/null`` when
/// the type encoded the `nil` explicitly).
///
/// Written through a writable store, a dynamic record is stored exactly as the typed
/// record with the same field values, so the type that wrote a log still reads it: an
/// `Int` is ``FieldValue/int(_:)``, a `Double` (and a `Date`, as seconds since 2001-01-01)
/// ``FieldValue/double(_:)``, a `UUID` or `URL` ``FieldValue/string(_:)``, a `Decimal`
/// ``FieldValue/decimal(_:)``, a `UInt64` above `Int.max` ``FieldValue/uint(_:)``.
public struct DynamicRecord: Record, Hashable, CustomStringConvertible {
  /// The record's id: its `id` field, as the typed record encoded it.
  public var id: FieldValue
  /// The record's top-level fields other than `id`, by name.
  public var fields: [String: FieldValue]

  /// A record with this id and these fields.
  ///
  /// ```swift
  /// let calf = DynamicRecord(id: .int(4), fields: ["name": .string("Calf"), "age": .int(0)])
  /// ```
  /// - Parameters:
  ///   - id: The id, stored as the record's `id` field.
  ///   - fields: The other top-level fields; an `"id"` entry here is ignored in favour of `id`.
  public init(id: FieldValue, fields: [String: FieldValue] = [:]) {
    self.id = id
    var fields = fields
    fields["id"] = nil
    self.fields = fields
  }

  /// A record from a decoded id and fields that hold no `"id"` entry.
  init(_id id: FieldValue, fields: [String: FieldValue]) {
    self.id = id
    self.fields = fields
  }

  /// A record made from an object value: its `"id"` field becomes ``id``, the rest
  /// ``fields``.
  ///
  /// ```swift
  /// let rex = try DynamicRecord(FieldValue(encoding: Animal(id: 3, name: "Rex", species: "Dog", age: 4)))
  /// rex.id   // .int(3)
  /// ```
  /// - Parameter value: An ``FieldValue/object(_:)``.
  /// - Throws: ``RequestSetError`` `.typeMismatch` when `value` is not an object.
  public init(_ value: FieldValue) throws {
    guard case .object(var fields) = value else {
      throw RequestSetError(
        .typeMismatch,
        "A DynamicRecord is made from an object value (a record's fields by name), not \(value). Pass "
          + ".object([...]) with an \"id\" field.")
    }
    id = fields.removeValue(forKey: "id") ?? .null
    self.fields = fields
  }

  /// The whole record as one object value, `id` included: what is stored.
  ///
  /// ```swift
  /// calf.value   // .object(["id": .int(4), "name": .string("Calf"), "age": .int(0)])
  /// ```
  public var value: FieldValue {
    var all = fields
    all["id"] = id
    return .object(all)
  }

  /// The value at a string key, or nil when the record holds nothing there.
  ///
  /// A key is a field name or a dotted path into nested objects, as in every string-key
  /// query (`"owner.city"`; a dot inside a name is escaped, `"counts.b\\.c"`). A path
  /// through a value that is not an object is nil; an explicit `nil` is
  /// ``FieldValue/null``.
  ///
  /// ```swift
  /// rex["name"]         // .string("Rex")
  /// rex["owner.city"]   // .string("Oslo")
  /// rex["nope"]         // nil
  /// ```
  /// - Parameter key: A field name or dotted path; `"id"` reads ``id``.
  /// - Complexity: O(*d*) for a path of *d* names.
  public subscript(key: String) -> FieldValue? { value[path: key] }

  /// The record as ``value`` prints it.
  public var description: String { value.description }

  /// Encodes the record as one object: `id` and ``fields``.
  ///
  /// - Parameter encoder: The encoder to write to.
  /// - Throws: What the encoder throws.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    try c.encode(value)
  }

  /// Decodes a record from any object: its `id` field becomes ``id``, the rest ``fields``.
  ///
  /// - Parameter decoder: The decoder to read from.
  /// - Throws: `DecodingError.typeMismatch` when the value is not an object.
  public init(from decoder: any Decoder) throws {
    let value = try decoder.singleValueContainer().decode(FieldValue.self)
    guard case .object(var fields) = value else {
      throw DecodingError.typeMismatch(
        DynamicRecord.self,
        .init(codingPath: decoder.codingPath, debugDescription: "A DynamicRecord is an object; found \(value)."))
    }
    id = fields.removeValue(forKey: "id") ?? .null
    self.fields = fields
  }
}
