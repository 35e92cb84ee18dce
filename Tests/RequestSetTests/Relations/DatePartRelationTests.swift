import Foundation
import RequestSet
import Testing

/// A crew member, hired on a date.
struct Crew: Record, Equatable {
  var id: Int
  var name: String
  var hired: Date
}

/// A shift, worked by one crew member.
struct Shift: Record, Equatable {
  var id: Int
  var crewID: Int
  var start: Date
}

extension Crew: RelatedRecord {
  static let shifts = ToMany<Crew, Shift>("shifts", inverse: \.crewID)
  static let relations: [any Relation<Crew>] = [shifts]
}

extension Shift: RelatedRecord {
  static let crew = ToOne<Shift, Crew>("crew", \.crewID, onDelete: .cascade)
  static let relations: [any Relation<Shift>] = [crew]
}

/// Date parts read through a relation (`crew.hired.@year`), in a filter, a format string, a
/// sort and a projection, on every writable store, against Foundation's Gregorian calendar
/// in UTC.
@Suite(.ownThreads) struct DatePartRelationTests {
  static func date(_ g: inout SeededRandom) -> Date {
    Date(timeIntervalSinceReferenceDate: Double.random(in: -1.5e9...1.5e9, using: &g).rounded())
  }

  static func part(_ component: Calendar.Component, _ date: Date) -> Int {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar.component(component, from: date)
  }

  @Test(arguments: StoreKind.writableWithSQL.filter { $0 != .pushdownMemory })
  func datePartsThroughAToOneMatchTheCalendar(kind: StoreKind) throws {
    var g = SeededRandom(seed: 0xDA7E)
    let crew = (1...12).map { Crew(id: $0, name: "c\($0)", hired: Self.date(&g)) }
    let shifts = (1...120).map {
      Shift(id: $0, crewID: Int.random(in: 1...12, using: &g), start: Self.date(&g))
    }
    let graph = try RecordGraph(try kind.makeStore(of: Crew.self), try kind.makeStore(of: Shift.self))
    try graph.insert(contentsOf: crew)
    try graph.insert(contentsOf: shifts)
    let hired = Dictionary(uniqueKeysWithValues: crew.map { ($0.id, $0.hired) })
    let set = graph.records(Shift.self)
    for member in crew.prefix(6) {
      let year = Self.part(.year, member.hired)
      let month = Self.part(.month, member.hired)
      let byYear = shifts.filter { Self.part(.year, hired[$0.crewID]!) == year }.map(\.id)
      #expect(
        try set.filter("crew.hired.@year", value: year).sortBy("id").fetch().map(\.id) == byYear, "\(kind)")
      let byMonth = shifts.filter { Self.part(.month, hired[$0.crewID]!) == month }.map(\.id)
      #expect(
        try set.filter("crew.hired.@month == %@", month).sortBy("id").fetch().map(\.id) == byMonth, "\(kind)")
    }
    // Sorted by the related record's weekday, ties by id.
    let byWeekday = shifts.sorted {
      let (a, b) = (Self.part(.weekday, hired[$0.crewID]!), Self.part(.weekday, hired[$1.crewID]!))
      return a != b ? a < b : $0.id < $1.id
    }.map(\.id)
    #expect(try set.sortBy("crew.hired.@weekday", "id").fetch().map(\.id) == byWeekday, "\(kind)")
    // A projection through the relation.
    let months = try set.sortBy("id").values("crew.hired.@month").map { $0["crew.hired.@month"] }
    #expect(months == shifts.map { FieldValue?.some(.int(Self.part(.month, hired[$0.crewID]!))) }, "\(kind)")
    // Through the to-many: ANY of a crew member's shifts in a year.
    let members = graph.records(Crew.self)
    for year in Set(shifts.prefix(5).map { Self.part(.year, $0.start) }) {
      let expected = crew.filter { c in
        shifts.contains { $0.crewID == c.id && Self.part(.year, $0.start) == year }
      }.map(\.id)
      #expect(
        try members.filter("ANY shifts.start.@year == %@", year).sortBy("id").fetch().map(\.id) == expected,
        "\(kind) \(year)")
    }
  }
}
