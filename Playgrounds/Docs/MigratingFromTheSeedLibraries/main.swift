import RequestSet

struct Species: Record { var id: Int; var simpleName: String }
struct Specimen: Record { var id: Int; var name: String; var speciesID: Int }
struct Department: Record { var id: Int; var name: String }
struct Employee: Record { var id: Int; var name: String; var salary: Int; var departmentID: Int? }

extension Specimen: RelatedRecord {
  static let species = ToOne<Specimen, Species>("species", \.speciesID)
  static let relations: [any Relation<Specimen>] = [species]
}
extension Department: RelatedRecord {
  static let employees = ToMany<Department, Employee>("employees", inverse: \.departmentID)
  static let relations: [any Relation<Department>] = [employees]
}
extension Employee: RelatedRecord {
  static let department = ToOne<Employee, Department>("department", \.departmentID, onDelete: .cascade)
  static let relations: [any Relation<Employee>] = [department]
}

let company = try RecordGraph(MemoryStore<Species>(), MemoryStore<Specimen>(), MemoryStore<Department>(), MemoryStore<Employee>())
try company.insert(contentsOf: [Species(id: 1, simpleName: "Cow"), Species(id: 2, simpleName: "Dog")])
try company.insert(contentsOf: [Specimen(id: 1, name: "Daisy", speciesID: 1), Specimen(id: 2, name: "Rex", speciesID: 2)])
try company.insert(contentsOf: [Department(id: 1, name: "Sales"), Department(id: 2, name: "Lab"), Department(id: 3, name: "Attic")])
try company.insert(contentsOf: [
  Employee(id: 1, name: "Ann", salary: 6000, departmentID: 1), Employee(id: 2, name: "Bo", salary: 4000, departmentID: 1),
  Employee(id: 3, name: "Cy", salary: 3000, departmentID: 2), Employee(id: 4, name: "Di", salary: 5500, departmentID: nil),
])
let departments = company.records(Department.self)
let staff = company.records(Employee.self)

let animalTypes = ["Cow", "Sheep"]
let farmAnimals = company.records(Specimen.self).filter(where: ["species.simpleName", "IN", animalTypes])   // Daisy
let wellPaid = departments.filter("ANY employees.salary > 5000")                                 // Sales
let richSubquery = departments.filter("SUBQUERY(employees, $e, $e.salary > 5000).@count > 0")    // Sales
let inSales = staff.filter("department.name", value: "Sales")                                   // Ann, Bo
let placed = try staff.filter("department.id != nil").fetch(including: Employee.department)     // Ann, Bo, Cy
let topTwo = try departments.fetch(including: Department.employees.sortBy(\.salary, order: .descending).limit(2))
let crowded = departments.filter(Department.employees.count > 1).sortBy(Department.employees.count, order: .descending)
let empty = departments.filter(Department.employees.isEmpty)                                   // Attic
print(farmAnimals.map(\.name), wellPaid.map(\.name), richSubquery.map(\.name), inSales.map(\.name))
print(placed.map { "\($0.name) in \($0[Employee.department]?.name ?? "-")" }, topTwo.map { $0[Department.employees].map(\.name) })
print(crowded.map(\.name), empty.map(\.name))   // → ["Sales"] ["Attic"]
try company.delete(Department.self, id: 1)      // .cascade: Ann and Bo go too
print(try staff.refreshed().fetch().map(\.name))   // → ["Cy", "Di"]

try company.insert(contentsOf: [
  Employee(id: 5, name: "Eve", salary: 5000, departmentID: 2), Employee(id: 6, name: "Fa", salary: 3000, departmentID: 2),
  Employee(id: 7, name: "Gus", salary: 7000, departmentID: nil),
])
let bySalary = staff.sortBy(\.salary, order: .descending)
let page1 = try bySalary.page(size: 2).fetch()
try company.insert(Employee(id: 8, name: "Hal", salary: 9000, departmentID: 2))   // before the cursor: no effect
let page2 = try bySalary.page(after: page1.last!, size: 2).fetch()
print(page1.map(\.name), page2.map(\.name))   // → ["Gus", "Di"] ["Eve", "Cy"]

let lab = staff.filter("department.name", value: "Lab")
let topThree = staff.sortBy(\.salary, order: .descending).limit(3)   // Hal, Gus, Di
print(lab.union(topThree).sortBy("name").map(\.name))   // → ["Cy", "Di", "Eve", "Fa", "Gus", "Hal"]
print(lab.intersection(topThree).map(\.name), lab.subtracting(topThree).sortBy("name").map(\.name))
// → ["Hal"] ["Cy", "Eve", "Fa"]
