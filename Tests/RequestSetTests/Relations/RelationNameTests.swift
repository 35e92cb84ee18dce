import Foundation
import Testing

@testable import RequestSet

/// A relation named like a key of its own type would take string keys over (`"name"`
/// would walk the relation, `\.name` read the field): the graph refuses it when made.
@Suite(.ownThreads) struct RelationNameTests {
  @Test func aRelationNamedLikeAStoredKeyIsRefused() throws {
    let error = #expect(throws: RequestSetError.self) {
      try RecordGraph(MemoryStore<NameClashPet>(), MemoryStore<NameClashOwner>())
    }
    #expect(error?.code == .invalidRelation)
    #expect(
      error?.message
        == "The relation NameClashPet.name has the name of NameClashPet's stored key \"name\": string keys and format "
        + "strings that name \"name\" would read the relation instead of the field. Give the relation a name no key "
        + "of NameClashPet uses (such as the related type's), or rename the field.")
  }

  @Test func aRelationNamedLikeItsOwnForeignKeyIsRefused() throws {
    let error = #expect(throws: RequestSetError.self) {
      try RecordGraph(MemoryStore<ForeignKeyClashPet>(), MemoryStore<NameClashOwner>())
    }
    #expect(error?.code == .invalidRelation)
    let message = error?.message ?? ""
    #expect(
      message.contains("ForeignKeyClashPet.ownerID") && message.contains("stored key \"ownerID\""),
      "\(message)")
  }

  @Test func aRelationNamedLikeANestedKeysFirstComponentIsRefused() throws {
    let error = #expect(throws: RequestSetError.self) {
      try RecordGraph(MemoryStore<NestedClashPet>(), MemoryStore<NameClashOwner>())
    }
    #expect(error?.code == .invalidRelation)
    #expect(
      error?.message
        == "The relation NestedClashPet.home has the name of NestedClashPet's stored key \"home\", the first component "
        + "of its nested keys (\"home.city\"): string keys and format strings that start with \"home.\" would walk "
        + "the relation instead of reading the field. Give the relation a name no key of NestedClashPet uses (such as "
        + "the related type's), or rename the field.")
  }

  /// A key that `CodingKeys` renames is not a property's name: it is known from a record.
  @Test func aRelationNamedLikeARenamedCodableKeyIsRefusedOnceARecordIsSeen() throws {
    let pets = MemoryStore<RenamedClashPet>()
    try pets.insert(RenamedClashPet(id: 1, title: "Rex", ownerID: nil))
    let error = #expect(throws: RequestSetError.self) { try RecordGraph(pets, MemoryStore<NameClashOwner>()) }
    #expect(error?.code == .invalidRelation)
    let message = error?.message ?? ""
    #expect(
      message.contains("RenamedClashPet.label") && message.contains("stored key \"label\""), "\(message)")
  }

  @Test func twoRelationsOfOneNameAreRefusedNamingBoth() throws {
    let error = #expect(throws: RequestSetError.self) {
      try RecordGraph(MemoryStore<Twin>(), MemoryStore<Ward>(), MemoryStore<Hospital>())
    }
    #expect(error?.code == .invalidRelation)
    #expect(
      error?.message
        == "Twin declares two relations named \"ward\": Twin.ward (to-one → Ward) and Twin.ward (to-one → Hospital). "
        + "Give each relation its own name.")
  }

  /// The same records, with the relation named after what it points at: accepted, and
  /// the string key reads the field again.
  @Test func aRelationWithAFreeNameIsAcceptedAndStringKeysReadTheField() throws {
    let graph = try RecordGraph(MemoryStore<NameFreePet>(), MemoryStore<NameClashOwner>())
    try graph.insert(contentsOf: [NameClashOwner(id: 7, name: "Ann")])
    try graph.insert(contentsOf: [
      NameFreePet(id: 1, name: "Rex", ownerID: 7), NameFreePet(id: 2, name: "Tom", ownerID: nil),
    ])
    let pets = graph.records(NameFreePet.self)
    #expect(try pets.filter("name", value: "Rex").fetch().map(\.id) == [1])
    #expect(try pets.filter(\.name == "Rex").fetch().map(\.id) == [1])
    #expect(try pets.sortBy("id").values("name").map { $0["name"] } == [.string("Rex"), .string("Tom")])
    #expect(try pets.filter("owner.name", value: "Ann").fetch().map(\.id) == [1])
  }
}

struct NameClashOwner: Record, Equatable {
  var id: Int
  var name: String
}

/// `name` is a stored key and a relation: the graph refuses it.
struct NameClashPet: Record, Equatable {
  var id: Int
  var name: String
  var ownerID: Int?
}

extension NameClashPet: RelatedRecord {
  static let relations: [any Relation<NameClashPet>] = [
    ToOne<NameClashPet, NameClashOwner>("name", \.ownerID)
  ]
}

struct ForeignKeyClashPet: Record, Equatable {
  var id: Int
  var ownerID: Int?
}

extension ForeignKeyClashPet: RelatedRecord {
  static let relations: [any Relation<ForeignKeyClashPet>] = [
    ToOne<ForeignKeyClashPet, NameClashOwner>("ownerID", \.ownerID)
  ]
}

struct NestedClashHome: Codable, Sendable, Equatable {
  var city: String
  var street: String
}

/// `home.city` and `home.street` are nested keys; a relation named `home` would take them.
struct NestedClashPet: Record, Equatable {
  var id: Int
  var home: NestedClashHome?
  var ownerID: Int?
}

extension NestedClashPet: RelatedRecord {
  static let relations: [any Relation<NestedClashPet>] = [
    ToOne<NestedClashPet, NameClashOwner>("home", \.ownerID)
  ]
}

/// `title` is stored under the key `label`.
struct RenamedClashPet: Record, Equatable {
  var id: Int
  var title: String
  var ownerID: Int?

  enum CodingKeys: String, CodingKey {
    case id
    case title = "label"
    case ownerID
  }
}

extension RenamedClashPet: RelatedRecord {
  static let relations: [any Relation<RenamedClashPet>] = [
    ToOne<RenamedClashPet, NameClashOwner>("label", \.ownerID)
  ]
}

struct NameFreePet: Record, Equatable {
  var id: Int
  var name: String
  var ownerID: Int?
}

extension NameFreePet: RelatedRecord {
  static let relations: [any Relation<NameFreePet>] = [ToOne<NameFreePet, NameClashOwner>("owner", \.ownerID)]
}
