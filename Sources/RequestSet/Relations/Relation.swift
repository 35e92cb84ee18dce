// Declaring relations between record types.
//
// A relation is a static value on the record type that owns it, declared once, in Swift:
//
//     extension Animal: RelatedRecord {
//       static let owner = ToOne<Animal, Owner>("owner", \.ownerID)
//       static let visits = ToMany<Animal, Visit>("visits", inverse: \.animalID)
//       static let vets = ToManyThrough<Animal, Visit, Vet>("vets", through: visits, then: Visit.vet)
//       static let relations: [any Relation<Animal>] = [owner, visits, vets]
//     }
//
// Why it looks this way:
// - Records stay plain `Codable` structs that hold ids, as rows of a table do: a relation is
//   a foreign key (a property holding the other record's id), never an object reference,
//   so a record is still a value that any store can encode, and renaming an owner rewrites
//   one owner.
// - The foreign key is a key path, so the compiler checks that it holds the target's id
//   type; the name is the one string keys and format strings use (`"owner.city"`), as a
//   Core Data relationship's name is.
// - The values are static lets, as GRDB's associations are: typed paths read
//   `Animal.owner.city == "Oslo"`, and prefetching names the same values.
// - The delete rule sits on the foreign key (`ToOne`), as SQL's `ON DELETE` does: it says
//   what happens to this record when the record it points at is deleted.

/// What deleting a record does to the records whose to-one relation points at it.
///
/// ```swift
/// static let owner = ToOne<Animal, Owner>("owner", \.ownerID, onDelete: .nullify)
/// ```
public enum RelationDeleteRule: String, Sendable, Hashable {
  /// Sets the pointing records' foreign key to nil (an optional to-one only).
  case nullify
  /// Deletes the pointing records too, and what points at them, by their own rules.
  case cascade
  /// Refuses the delete with `.deleteDenied` while any record points at it.
  case deny
}

/// A relation from records of `Source` to records of another type, declared with
/// ``ToOne``, ``ToMany`` or ``ToManyThrough``.
///
/// ```swift
/// static let relations: [any Relation<Animal>] = [owner, visits]
/// ```
public protocol Relation<Source>: Sendable {
  /// The record type that declares the relation.
  associatedtype Source: Record
  /// The name string keys and format strings use: `"owner.city"`.
  ///
  /// Not `name`: a typed key through a relation reads the related type's members
  /// (`Pet.owner.name`), so the relation's own members keep names records rarely use.
  var relationName: String { get }
  /// The engine's description of the relation. Not for use outside RequestSet.
  var _relation: _RelationInfo { get }
}

/// A record type that declares relations to other record types.
///
/// ```swift
/// extension Animal: RelatedRecord {
///   static let owner = ToOne<Animal, Owner>("owner", \.ownerID)
///   static let relations: [any Relation<Animal>] = [owner]
/// }
/// ```
/// The relations take effect in sets made by a ``RecordGraph``, which holds the stores of
/// every type a relation reaches.
public protocol RelatedRecord: Record {
  /// Every relation the type declares; names must be distinct.
  static var relations: [any Relation<Self>] { get }
}

/// A to-one relation: `Source` holds the id of one `Target` record (a foreign key).
///
/// ```swift
/// struct Animal: Record { var id: Int; var name: String; var ownerID: Int? }
/// struct Owner: Record { var id: Int; var name: String; var city: String }
///
/// extension Animal: RelatedRecord {
///   static let owner = ToOne<Animal, Owner>("owner", \.ownerID, onDelete: .nullify)
///   static let relations: [any Relation<Animal>] = [owner]
/// }
///
/// let oslo = graph.records(Animal.self).filter("owner.city", value: "Oslo")
/// let typed = graph.records(Animal.self).filter(Animal.owner.city == "Oslo")
/// ```
/// A record whose foreign key is nil, or names no record (when `allowsDangling`), has no
/// related record: every key through the relation reads nil, as in Core Data.
@dynamicMemberLookup
public struct ToOne<Source: Record, Target: Record>: Relation {
  /// The name string keys and format strings use (`"owner.city"`).
  public let relationName: String
  /// What deleting the target does to the records that point at it.
  public let deleteRule: RelationDeleteRule
  /// Whether a foreign key may name no stored record; when false, ``RecordGraph``'s writes
  /// refuse one with `.danglingReference`.
  public let allowsDanglingKey: Bool
  /// The engine's description of the relation. Not for use outside RequestSet.
  public let _relation: _RelationInfo
  /// The foreign key's value of a record, as the target's id (nil when it has none).
  let _foreignKey: @Sendable (Source) -> Target.ID?
  /// What prefetching reads below the related record.
  var _prefetch = _PrefetchShape<Target>()

  /// An optional to-one relation through `foreignKey`.
  ///
  /// ```swift
  /// static let owner = ToOne<Animal, Owner>("owner", \.ownerID, onDelete: .nullify)
  /// ```
  /// - Parameters:
  ///   - name: The name keys use (`"owner.city"`).
  ///   - foreignKey: The stored property that holds the target's id.
  ///   - onDelete: What deleting the target does to this record; `.nullify` by default.
  ///   - allowsDangling: Whether the id may name no stored record.
  public init(
    _ name: String, _ foreignKey: WritableKeyPath<Source, Target.ID?> & Sendable,
    onDelete: RelationDeleteRule = .nullify, allowsDangling: Bool = false
  ) {
    self.relationName = name
    self.deleteRule = onDelete
    self.allowsDanglingKey = allowsDangling
    self._foreignKey = { $0[keyPath: foreignKey] }
    self._relation = _RelationInfo(
      toOne: name, Source.self, Target.self, keyPath: foreignKey, required: false, onDelete: onDelete,
      allowsDangling: allowsDangling,
      read: { (record: Source) in record[keyPath: foreignKey].map(_encodedID) ?? .null },
      nullify: { (record: Source) in
        var copy = record
        copy[keyPath: foreignKey] = nil
        return copy
      })
  }

  /// A required to-one relation: every record points at one target.
  ///
  /// ```swift
  /// static let animal = ToOne<Visit, Animal>("animal", \.animalID, onDelete: .cascade)
  /// ```
  /// - Parameters:
  ///   - name: The name keys use (`"animal.name"`).
  ///   - foreignKey: The stored property that holds the target's id.
  ///   - onDelete: `.cascade` or `.deny` (the default); a required key cannot be nullified.
  ///   - allowsDangling: Whether the id may name no stored record.
  public init(
    _ name: String, _ foreignKey: KeyPath<Source, Target.ID> & Sendable,
    onDelete: RelationDeleteRule = .deny, allowsDangling: Bool = false
  ) {
    self.relationName = name
    self.deleteRule = onDelete
    self.allowsDanglingKey = allowsDangling
    self._foreignKey = { $0[keyPath: foreignKey] }
    self._relation = _RelationInfo(
      toOne: name, Source.self, Target.self, keyPath: foreignKey, required: true, onDelete: onDelete,
      allowsDangling: allowsDangling, read: { (record: Source) in _encodedID(record[keyPath: foreignKey]) },
      nullify: nil)
  }
}

/// A to-many relation: the `Target` records whose to-one foreign key holds a `Source`
/// record's id (the inverse of a ``ToOne``).
///
/// ```swift
/// struct Visit: Record { var id: Int; var animalID: Int; var vet: String; var cost: Double }
///
/// extension Animal: RelatedRecord {
///   static let visits = ToMany<Animal, Visit>("visits", inverse: \.animalID)
///   static let relations: [any Relation<Animal>] = [visits]
/// }
///
/// graph.records(Animal.self).filter("ANY visits.vet == 'Ann'")
/// graph.records(Animal.self).filter(Animal.visits.count > 2)
/// ```
/// A key through a to-many names many values: filter it with `ANY`, `ALL` or `NONE`, or
/// reduce it with `@count`, `@sum`, `@avg`, `@min` or `@max`. Prefetching it can keep the
/// first few of each record with ``sortBy(_:order:)`` and ``limit(_:)``.
public struct ToMany<Source: Record, Target: Record>: Relation {
  /// The name string keys and format strings use (`"owner.city"`).
  public let relationName: String
  /// The engine's description of the relation. Not for use outside RequestSet.
  public let _relation: _RelationInfo
  /// How prefetching orders and limits each record's related records, and what it
  /// prefetches below them.
  var _prefetch = _PrefetchShape<Target>()
  /// The source id a related record holds.
  let inverse: @Sendable (Target) -> Source.ID?
  /// The filter of the related records of some sources.
  let inverseIn: @Sendable ([Source.ID]) -> RequestFilter<Target>

  /// The to-many relation whose targets hold the source's id in `inverse`.
  ///
  /// ```swift
  /// static let visits = ToMany<Animal, Visit>("visits", inverse: \.animalID)
  /// ```
  public init(_ name: String, inverse: KeyPath<Target, Source.ID> & Sendable) {
    self.relationName = name
    self.inverse = { $0[keyPath: inverse] }
    self.inverseIn = { RequestFilter(inverse, in: $0) }
    self._relation = _RelationInfo(
      toMany: name, Source.self, Target.self, inverseKeyPath: inverse,
      readInverse: { (record: Target) in _encodedID(record[keyPath: inverse]) })
  }

  /// The to-many relation whose targets hold the source's id in the optional `inverse`.
  ///
  /// ```swift
  /// static let animals = ToMany<Owner, Animal>("animals", inverse: \.ownerID)
  /// ```
  public init(_ name: String, inverse: KeyPath<Target, Source.ID?> & Sendable) {
    self.relationName = name
    self.inverse = { $0[keyPath: inverse] }
    self.inverseIn = { ids in RequestFilter(inverse, in: ids.map { Optional($0) }) }
    self._relation = _RelationInfo(
      toMany: name, Source.self, Target.self, inverseKeyPath: inverse,
      readInverse: { (record: Target) in record[keyPath: inverse].map(_encodedID) ?? .null })
  }
}

/// A many-to-many relation through a join record type: the `Target` records that the
/// `Through` records of a `Source` record point at.
///
/// ```swift
/// struct Vet: Record { var id: Int; var name: String }
/// struct Visit: Record { var id: Int; var animalID: Int; var vetID: Int?; var cost: Double }
///
/// extension Visit: RelatedRecord {
///   static let vet = ToOne<Visit, Vet>("vet", \.vetID)
///   static let relations: [any Relation<Visit>] = [vet]
/// }
/// extension Animal: RelatedRecord {
///   static let visits = ToMany<Animal, Visit>("visits", inverse: \.animalID)
///   static let vets = ToManyThrough("vets", through: visits, then: Visit.vet)
///   static let relations: [any Relation<Animal>] = [visits, vets]
/// }
///
/// graph.records(Animal.self).filter("ANY vets.name == 'Ann'")
/// graph.records(Animal.self).filter(Animal.vets.any.name == "Ann")   // the same, typed
/// graph.records(Animal.self).sortBy(Animal.vets.count)
/// ```
/// `vets.name` reads as `visits.vet.name`, over the visits that reach a vet: a visit with
/// no vet adds none (`vets.@count` skips it), and a vet seen twice counts twice. The typed
/// keys are those of every ``ToManyRelation``.
public struct ToManyThrough<Source: Record, Through: Record, Target: Record>: Relation {
  /// The name string keys and format strings use (`"owner.city"`).
  public let relationName: String
  /// The engine's description of the relation. Not for use outside RequestSet.
  public let _relation: _RelationInfo
  let first: ToMany<Source, Through>
  let second: ToOne<Through, Target>

  /// The relation from `Source` through `through`'s records to what `then` points at.
  public init(_ name: String, through: ToMany<Source, Through>, then: ToOne<Through, Target>) {
    self.relationName = name
    self.first = through
    self.second = then
    self._relation = _RelationInfo(
      through: name, Source.self, Target.self, first: through.relationName, second: then.relationName)
  }
}

/// The engine's description of one relation, shared by the typed declarations above.
///
/// Public only because ``Relation`` names it; nothing outside RequestSet uses its members.
public final class _RelationInfo: Sendable {
  enum Kind: Sendable {
    /// `Source` holds the target's id in `key`.
    case toOne(key: String, required: Bool, onDelete: RelationDeleteRule, allowsDangling: Bool)
    /// `Target` holds the source's id in `key`.
    case toMany(key: String)
    /// `first` (a to-many of the source), then `second` (a to-one of its targets).
    case through(first: String, second: String)
  }

  let name: String
  let kind: Kind
  let source: Any.Type
  let target: Any.Type
  /// The store key of the foreign key, when reflection found it; nil leaves the graph to
  /// refuse the relation with a message that names it.
  let keyFound: Bool
  /// For a to-one: `@Sendable (Source) -> FieldValue`, the foreign key, encoded.
  /// For a to-many: `@Sendable (Target) -> FieldValue`, the inverse key, encoded.
  let read: any Sendable
  /// For an optional to-one: `@Sendable (Source) -> Source`, the record with its key nil.
  let nullify: (any Sendable)?

  var sourceName: String { "\(source)" }
  var targetName: String { "\(target)" }
  /// How `explain()` names the relation: `Pet.owner (to-one → Person)`.
  var described: String { "\(sourceName).\(name) (\(kindName) → \(targetName))" }

  /// The key that holds the id: the source's foreign key, or the target's inverse key.
  var key: String {
    switch kind {
    case .toOne(let key, _, _, _), .toMany(let key): return key
    case .through: return ""
    }
  }

  var isToOne: Bool {
    if case .toOne = kind { return true }
    return false
  }

  /// "to-one", "to-many" or "to-many through".
  var kindName: String {
    switch kind {
    case .toOne(_, let required, _, _): return required ? "required to-one" : "to-one"
    case .toMany: return "to-many"
    case .through(let first, let second): return "to-many through \(first).\(second)"
    }
  }

  init<S: Record, T: Record>(
    toOne name: String, _ source: S.Type, _ target: T.Type, keyPath: AnyKeyPath, required: Bool,
    onDelete: RelationDeleteRule, allowsDangling: Bool, read: @escaping @Sendable (S) -> FieldValue,
    nullify: (@Sendable (S) -> S)?
  ) {
    let key = _storedFieldKey(keyPath, root: S.self)
    self.name = name
    self.kind = .toOne(key: key ?? "", required: required, onDelete: onDelete, allowsDangling: allowsDangling)
    self.source = S.self
    self.target = T.self
    self.keyFound = key != nil
    self.read = read
    self.nullify = nullify
  }

  init<S: Record, T: Record>(
    toMany name: String, _ source: S.Type, _ target: T.Type, inverseKeyPath: AnyKeyPath,
    readInverse: @escaping @Sendable (T) -> FieldValue
  ) {
    let key = _storedFieldKey(inverseKeyPath, root: T.self)
    self.name = name
    self.kind = .toMany(key: key ?? "")
    self.source = S.self
    self.target = T.self
    self.keyFound = key != nil
    self.read = readInverse
    self.nullify = nil
  }

  init<S: Record, T: Record>(through name: String, _ source: S.Type, _ target: T.Type, first: String, second: String) {
    self.name = name
    self.kind = .through(first: first, second: second)
    self.source = S.self
    self.target = T.self
    self.keyFound = true
    self.read = 0
    self.nullify = nil
  }
}

/// An id as string keys hold it: `Int` and `String` directly, any other `Codable` id as
/// it encodes (a `UUID` as its string).
@usableFromInline
func _encodedID<ID: Encodable>(_ id: ID) -> FieldValue {
  if ID.self == Int.self { return .int(unsafeBitCast(id, to: Int.self)) }
  if ID.self == String.self { return .string(unsafeBitCast(id, to: String.self)) }
  return (try? _FieldEncoder.encode(id)) ?? .null
}
