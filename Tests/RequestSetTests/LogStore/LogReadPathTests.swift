import Foundation
import Testing

@testable import RequestSet

/// The read path of string-key scans over a log: record ids and integer fields are
/// skipped inline when they are integers, any other id through the general reader, and
/// every way gives the answers the records give.
@Suite(.ownThreads) struct LogReadPathTests {
  /// `skipInteger` moves past exactly one integer value, and leaves anything else.
  @Test func skipIntegerMovesPastIntegersOnly() throws {
    let cases: [(FieldValue, Bool)] = [
      (.int(0), true), (.int(127), true), (.int(128), true), (.int(-1), true), (.int(.min), true),
      (.int(.max), true), (.string("7"), false), (.double(1), false), (.null, false),
    ]
    for (value, isInteger) in cases {
      let out = _ByteBuffer(capacity: 32)
      try _BinaryEncoder(out: out).write(value, depth: 0)
      out.append(0xAB)  // a byte after the value, which must stay unread
      let encoded = out.array
      try encoded.withUnsafeBytes { bytes in
        var r = _ByteReader(bytes)
        #expect(_BinaryValue.skipInteger(&r) == isInteger, "\(value)")
        if isInteger {
          var general = _ByteReader(bytes)
          try _BinaryValue.skip(&general)
          #expect(r.position == general.position, "\(value)")
        } else {
          #expect(r.position == 0, "\(value)")
        }
      }
    }
    // A varint cut short is no integer to skip: the general reader reports the damage.
    let cut: [UInt8] = [_Tag.int, 0x80, 0x80]
    cut.withUnsafeBytes { bytes in
      var r = _ByteReader(bytes)
      #expect(!_BinaryValue.skipInteger(&r))
      #expect(r.position == 0)
    }
  }

  /// A stream and an inspection that walk more records than they keep resident (the log's
  /// mapped pages are let go every 16,384 records in a stream, every 65,536 in an
  /// inspection, and read again as needed) still read every record as stored, in store
  /// order and in a sorted order.
  @Test func walksThatLetMappedPagesGoReadEveryRecord() async throws {
    let dir = try LogTempDir()
    let beasts = (1...70_000).map { Beast(id: $0, name: "b\($0 % 977)", species: ["Cow", "Dog"][$0 % 2], age: $0 % 300) }
    let path = dir.file()
    let writer = try LogStore<Beast>(path: path)
    try writer.insert(contentsOf: beasts)
    writer.close()
    let store = try LogStore<DynamicRecord>(path: path)
    var ids: [Int] = []
    for try await record in RequestSet(store).stream(batchSize: 1_000) {
      if case .int(let id) = record.id, case .int(let age)? = record.fields["age"], age == id % 300 { ids.append(id) }
    }
    #expect(ids == Array(1...70_000))
    var sorted: [FieldValue] = []
    for try await record in RequestSet(store).sortBy("name").sortBy("id", order: .descending).stream(batchSize: 4_096) {
      sorted.append(record.fields["name"] ?? .null)
    }
    #expect(sorted == beasts.map { FieldValue.string($0.name) }.sorted { FieldValue._order($0, $1, .binary) < 0 })
    let report = try LogStore<DynamicRecord>.inspect(path: path)
    #expect(report.recordCount == 70_000 && report.isClean)
    #expect(report.keys.first { $0.key == "age" }?.recordCount == 70_000)
    store.close()
  }

  /// Ids of every width (one byte to ten) and string ids, ages in and out of the one-byte
  /// integers: each string-key filter and sort answers as on the array.
  @Test func stringKeyScansAgreeWhateverTheIDs() throws {
    let dir = try LogTempDir()
    let ids = [0, 1, 127, 128, 300, 1 << 20, 1 << 40, Int.max, -1, -200, Int.min]
    let beasts = ids.enumerated().map { i, id in
      // Ages on both sides of the one-byte integers (0...127), which sorts read inline.
      Beast(id: id, name: "b\(i)", species: ["Cow", "Dog", "Cat"][i % 3], age: [127, 0, 128, -1, 5, 127, 300][i % 7])
    }
    let store = try LogStore<Beast>(path: dir.file())
    try store.insert(contentsOf: beasts)
    let cows = try RequestSet(store).filter("species", value: "Cow").sortBy("age").fetch()
    // By age, ties in store order.
    let expected = beasts.enumerated().filter { $0.element.species == "Cow" }
      .sorted { ($0.element.age, $0.offset) < ($1.element.age, $1.offset) }.map(\.element)
    #expect(cows == expected)
    #expect(RequestSet(store).filter(\.species == "Dog").count == beasts.filter { $0.species == "Dog" }.count)

    let named = (0..<20).map { NamedBeast(id: "id-\($0)", name: $0 % 4 == 0 ? "Cow" : "n\($0)") }
    let other = try LogStore<NamedBeast>(path: dir.file("named.rslog"))
    try other.insert(contentsOf: named)
    #expect(try RequestSet(other).filter("name", value: "Cow").fetch() == named.filter { $0.name == "Cow" })
  }
}
