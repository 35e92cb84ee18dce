import Foundation
import RequestSet

struct PetV1: Record { var id: Int; var name: String; var weight: Int; var city: String }
struct PetV2: Record {
  struct Address: Codable, Hashable, Sendable { var city: String }
  var id: Int; var name: String; var weightKg: Double; var legs: Int; var address: Address
}

var migrator = Migrator()
migrator.register(
  "2: kg, legs, address",
  .rename("weight", to: "weightKg"), .convert("weightKg", .toDouble),
  .add("legs", default: .int(4)), .move("city", to: "address.city"))

let petFolder = FileManager.default.temporaryDirectory.appendingPathComponent("pets-\(UUID())")
try FileManager.default.createDirectory(at: petFolder, withIntermediateDirectories: true)
let petPath = petFolder.appendingPathComponent("pets.rslog").path
let oldPets = try LogStore<PetV1>(path: petPath)            // version 1 of the app wrote this
try oldPets.insert(PetV1(id: 1, name: "Rex", weight: 30, city: "Oslo"))
oldPets.close()

let pets = try LogStore<PetV2>(path: petPath, options: .init(migrations: migrator))
print(pets.appliedMigrations)                               // → ["2: kg, legs, address"]
print(try pets.fetch(id: 1)!.weightKg)                      // → 30.0
print(try pets.fetch(id: 1)!.address.city)                 // → Oslo
pets.close()
try FileManager.default.removeItem(at: petFolder)           // the log and its lock file
