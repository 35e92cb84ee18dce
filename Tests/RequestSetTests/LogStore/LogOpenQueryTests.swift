import Foundation
import Testing

@testable import RequestSet

/// The first query on a just-opened log, in a process that never stored a record of the
/// store's type: the open shows the schema probe the first records, so typed filters
/// built after it read one field per record instead of decoding every record.
@Suite(.ownThreads) struct LogOpenQueryTests {
  /// Writes the log: the same Codable shape as `OpenedHerd`, another Swift type.
  struct WrittenHerd: Record {
    var id: Int
    var name: String
    var species: String
    var age: Int
  }

  /// Only ever opened, never stored, in this process: no witness of it exists but those
  /// the open makes.
  struct OpenedHerd: Record, Equatable {
    var id: Int
    var name: String
    var species: String
    var age: Int
  }

  @Test func typedFiltersOnAJustOpenedLogReadFieldsNotRecords() throws {
    let dir = try LogTempDir()
    let path = dir.file()
    let herd = (0..<50).map {
      WrittenHerd(id: $0, name: "n\($0)", species: ["Cow", "Dog"][$0 % 2], age: $0 % 7)
    }
    do {
      let writer = try LogStore<WrittenHerd>(path: path)
      try writer.insert(contentsOf: herd)
    }
    let store = try LogStore<OpenedHerd>(path: path)
    let cows = RequestSet(store).filter(\.species == "Cow").sortBy(\.age).limit(3)
    #expect(
      cows.explain() == """
        RequestSet<OpenedHerd> over LogStore<OpenedHerd>
        stage 1: scan all records (~50 records)
          filter: \\OpenedHerd.species == "Cow"
          sort: \\OpenedHerd.age ASC (top-k heap, k = 3)
          window: limit 3
        """)
    let expected = herd.filter { $0.species == "Cow" }.sorted { $0.age < $1.age }.prefix(3)
    #expect(try cows.fetch().map(\.id) == expected.map(\.id))
  }
}
