import RequestSet

// The record types of issue 23's benchmarks (RelationRatios.swift): owners, their animals
// and the animals' visits, related by id. In a file of their own because GRDB, which
// RelationRatios.swift imports, also names a type `Record`.

struct BOwner: Record {
  var id: Int
  var name: String
  var city: String
}

struct BAnimal: Record {
  var id: Int
  var name: String
  var age: Int
  var ownerID: Int?
}

struct BVisit: Record {
  var id: Int
  var animalID: Int
  var cost: Double
  var day: Int
}

extension BAnimal: RelatedRecord {
  static let owner = ToOne<BAnimal, BOwner>("owner", \.ownerID)
  static let visits = ToMany<BAnimal, BVisit>("visits", inverse: \.animalID)
  static let relations: [any Relation<BAnimal>] = [owner, visits]
}
