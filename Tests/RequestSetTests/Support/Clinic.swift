import Foundation
import RequestSet

// A graph of record types that point at each other by id, for the relationship suites:
// pets belong to people, visits belong to pets and (optionally) to vets.

struct Person: Record, Equatable {
  var id: Int
  var name: String
  var city: String
  var age: Int?
}

struct Vet: Record, Equatable {
  var id: Int
  var name: String
  var clinic: String?
}

struct Pet: Record, Equatable {
  var id: Int
  var name: String
  var species: String
  var age: Int
  var ownerID: Int?
}

struct Visit: Record, Equatable {
  var id: Int
  var petID: Int
  var vetID: Int?
  var cost: Double
  var day: Int
}

extension Pet: RelatedRecord {
  static let owner = ToOne<Pet, Person>("owner", \.ownerID, onDelete: .nullify, allowsDangling: true)
  static let visits = ToMany<Pet, Visit>("visits", inverse: \.petID)
  static let vets = ToManyThrough("vets", through: visits, then: Visit.vet)
  static let relations: [any Relation<Pet>] = [owner, visits, vets]
}

extension Person: RelatedRecord {
  static let pets = ToMany<Person, Pet>("pets", inverse: \.ownerID)
  static let relations: [any Relation<Person>] = [pets]
}

extension Visit: RelatedRecord {
  static let pet = ToOne<Visit, Pet>("pet", \.petID, onDelete: .cascade)
  static let vet = ToOne<Visit, Vet>("vet", \.vetID, onDelete: .nullify)
  static let relations: [any Relation<Visit>] = [pet, vet]
}

extension Vet: RelatedRecord {
  static let visits = ToMany<Vet, Visit>("visits", inverse: \.vetID)
  static let relations: [any Relation<Vet>] = [visits]
}
